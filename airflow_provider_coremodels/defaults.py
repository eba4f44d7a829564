"""The defaults every front door shares: the CLI's argument table, the hooks, the client, the document.

Import-light on purpose (nothing but constants): Airflow's CLI reads the argument table at every
start-up, and the provider's registration must stay cheap.
"""

from __future__ import annotations

#: The connection ids the hooks, the operator and the CLI use when none is named: one per type.
AIRFLOW_API_CONN_ID = "airflow_api_default"
COREMODELS_CONN_ID = "coremodels_default"
#: The least severity that fails a run (``--fail-on``, ``fail_on``): by default none does.
FAIL_ON = "never"
#: How many cadences old an asset may grow before asset-stale calls it stale (--stale-tolerance).
STALE_TOLERANCE = 2.0
#: The snapshot cap: a larger encoded document is stored without datasets and lineage.
MAX_SNAPSHOT_BYTES = 1_500_000
#: An artifact file larger than this is refused before it is read (decoded JSON is several times larger).
MAX_ARTIFACT_BYTES = 1 << 30
#: A stored snapshot document larger than this is refused before it is read, wherever it is (a file,
#: a file sink's latest.json, object storage): fifty deployments' merged estate is under half of it.
MAX_DOCUMENT_BYTES = 1 << 30
#: Requests in flight during a capture. Against a one-worker Airflow 3.2-3.3 API server keep it at
#: 14 or below: above its 15 pooled database connections the server can stall (apache/airflow#66493).
CONCURRENCY = 8
#: How the requests in flight follow the server (--pacing, the connection's ``pacing`` extra):
#: ``adaptive`` grows the window while answers stay as fast as the fastest seen and shrinks it when
#: they slow, up to the concurrency; ``fixed`` keeps the concurrency whatever the server does.
PACING = "adaptive"
#: How much slower than its baseline an adaptive capture lets the server's answers grow before it
#: backs off: 0.25 = a quarter as slow again (the goal is that the other clients' answers slow no
#: more than half again: benchmark 6 measured 1.3x at 0.25 and 1.6x at 0.5, with the rest below).
PACING_TOLERANCE = 0.25
#: How much of each slot's time an adaptive capture's requests may take at the server: after an
#: answer its slot rests as long again (0.5), so that the server has room for its other clients
#: between the capture's requests. 1 = no rest (the window alone paces the capture).
PACING_SHARE = 0.5
#: Seconds to wait for a response to start (read) and for a connection to open.
READ_TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0
#: Seconds a capture, or a push, may take in all, retries included (--retry-budget): the bound on
#: a run against a server that trickles, repeats or never ends. Half an hour is four times what a
#: healthy capture of 10,000 DAGs takes against a busy one-worker API server at the default pacing
#: (7 to 8 minutes: docs/capture.md), where ten minutes, the budget before that pacing, left a
#: margin of two.
RETRY_BUDGET = 1800.0
#: The most of a task's ``execution_timeout`` the export operator gives its capture (and each push)
#: as their budget, when that is less than ``RETRY_BUDGET``: a capture that gives up must say why
#: (and the task log say it) before Airflow's timeout kills the task, which says only that it timed
#: out. A quarter is left for the audit, the push and the log; the example DAG's 45 minutes give
#: the whole 30-minute budget, a 30-minute timeout 22.5 minutes.
TASK_BUDGET_SHARE = 0.75
#: A waiver file larger than this is refused: waiver files are short lists written by people.
MAX_WAIVER_FILE_BYTES = 16 << 20
#: A rules file larger than this is refused, for the same reason.
MAX_RULES_FILE_BYTES = 16 << 20
#: A DAG file larger than this is neither run by the parse nor read to find its imports or lines.
MAX_DAG_FILE_BYTES = 16 << 20
#: The most one HTTP response body may hold once decompressed: a DAG page or one DAG's tasks is
#: far less; a larger body (a gzip bomb, a runaway server) is refused, not inflated.
MAX_RESPONSE_BYTES = 64 << 20
#: Seconds each notifier of ``on_new_findings`` may take before it is abandoned (``notifier_timeout``).
#: A notification is one webhook call or one SMTP exchange, a second or two at most when its
#: service is up: 10 s leaves a wide margin, and five notifiers that all hang (each has its own
#: deadline, one after the other) still hold a task under a minute. Airflow's SMTP connection,
#: by contrast, waits 30 s for an answer and tries 6 times: three minutes for a relay that is down.
NOTIFIER_TIMEOUT = 10.0
