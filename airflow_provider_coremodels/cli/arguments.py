"""Every command and argument, declared once.

Both front doors are built from these specs: ``definition.py`` turns them into Airflow's
``Arg``/``ActionCommand`` objects for ``airflow coremodels``, and ``main.py`` into a plain
argparse parser for ``python -m airflow_provider_coremodels``. Same flags, same output.
This module imports nothing heavy: Airflow reads it whenever its CLI starts.
"""

from __future__ import annotations

import argparse
import datetime
import math
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.estate.rules import FAIL_ON

FORMATS = ("table", "json", "sarif", "markdown", "openlineage")
LINEAGE_FORMATS = ("mermaid", "dot", "svg")
HISTORY_FORMATS = ("table", "json")
COMPARE_FORMATS = ("table", "json", "markdown")
#: How many history entries ``history`` lists unless told otherwise.
DEFAULT_HISTORY_LIMIT = 30


@dataclass(frozen=True)
class ArgSpec:
    flags: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CommandSpec:
    name: str
    help: str
    func: str  # "module:function", imported only when the command runs
    args: tuple[ArgSpec, ...]
    description: str | None = None


def _positive_int(value: str) -> int:
    number = int(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of bytes, got {value}")
    return number


FORMAT = ArgSpec(
    ("--format",),
    {
        "choices": FORMATS,
        "default": "table",
        "help": "output format: table, json (the snapshot document), sarif (code scanning), "
        "markdown (a pull-request comment) or openlineage (one OpenLineage event per DAG, one per line; "
        "needs the openlineage extra); default: table",
    },
)
#: The views ``--output`` writes to files beside what ``--format`` prints.
OUTPUT_FORMATS = ("json", "sarif", "markdown", "table")


def _output(value: str) -> tuple[str, str]:
    view, sep, path = value.partition("=")
    if not sep or view not in OUTPUT_FORMATS or not path:
        raise argparse.ArgumentTypeError(
            f"expected FORMAT=PATH with FORMAT one of {', '.join(OUTPUT_FORMATS)}, got {value!r}"
        )
    return view, path


OUTPUT = ArgSpec(
    ("--output",),
    {
        "type": _output,
        "action": "append",
        "metavar": "FORMAT=PATH",
        "help": "also write this view of the run to PATH (FORMAT: json, sarif, markdown or table), "
        "replacing the file whole; repeatable, so one run (one parse of a --dag-folder) gives every "
        "view; stdout keeps --format",
    },
)
WAIVERS = ArgSpec(
    ("--waivers",),
    {
        "metavar": "FILE",
        "help": "a YAML or JSON waiver file: the findings it covers are reported as waived, never failing",
    },
)
RULES = ArgSpec(
    ("--rules",),
    {
        "metavar": "FILE",
        "help": "a YAML or JSON rules file: the team's own rules, each a policy-... finding where it "
        "does not hold (read before anything is captured)",
    },
)
TEAM = ArgSpec(
    ("--team",),
    {
        "metavar": "NAME",
        "help": "show one team's findings only (a team of the rules file's teams:, or unowned); "
        "--fail-on counts those alone, and the sinks still get every finding",
    },
)
TEAM_HISTORY = ArgSpec(
    ("--team",),
    {
        "metavar": "NAME",
        "help": "one team's open findings and the drift of its DAGs since the entry before (a team the "
        "snapshots were audited with, or of --rules)",
    },
)
TEAM_COMPARE = ArgSpec(
    ("--team",),
    {
        "metavar": "NAME",
        "help": "one team's findings and the drift of its DAGs and their edges only (a team the "
        "snapshots were audited with, or of --rules)",
    },
)
RULES_TEAMS = ArgSpec(
    ("--rules",),
    {
        "metavar": "FILE",
        "help": "with --team: the rules file whose teams: decide each DAG's team (default: the teams "
        "each snapshot was audited with)",
    },
)
SOURCE_ROOT = ArgSpec(
    ("--source-root",),
    {
        "metavar": "[BUNDLE=]DIR",
        "action": "append",
        "help": "with --format sarif: the DAG folder's path inside the repository, prefixed to each "
        "location; BUNDLE=DIR for one bundle's files (repeatable)",
    },
)
FAIL_ON_ARG = ArgSpec(
    ("--fail-on",),
    {
        "choices": tuple(FAIL_ON),
        "default": defaults.FAIL_ON,
        "help": "exit 1 when a finding at or above this severity remains (default: never)",
    },
)
MAX_SNAPSHOT_BYTES = ArgSpec(
    ("--max-snapshot-bytes",),
    {
        "type": _positive_int,
        "default": defaults.MAX_SNAPSHOT_BYTES,
        "metavar": "N",
        "help": "snapshot cap: a larger document is stored without datasets and lineage "
        f"(default: {defaults.MAX_SNAPSHOT_BYTES})",
    },
)
ASSET_EXTRA = ArgSpec(
    ("--include-asset-extra",),
    {
        "action": "store_true",
        "help": "carry each asset's extra into the snapshot (off by default: extras may hold credentials)",
    },
)


def _instant(value: str) -> datetime.datetime:
    """An ISO 8601 time, in UTC (without a zone it is UTC, as every time the API gives); its year
    has four digits, and its UTC lies within years 1 to 9999, so a document can store it."""
    try:
        when = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time such as 2026-12-01T06:00:00Z (a year of four digits), got {value}"
        ) from None
    if when.tzinfo is None:
        return when.replace(tzinfo=datetime.timezone.utc)
    try:
        return when.astimezone(datetime.timezone.utc)
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{value} is outside the years 1 to 9999 in UTC") from None


def _tolerance(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of cadences, got {value}")
    return number


SINK_CONN_ID = ArgSpec(
    ("--sink-conn-id",), {"metavar": "ID", "help": "the connection object-storage sinks use"}
)

#: Where export and merge push the snapshot.
SINKS = (
    ArgSpec(
        ("--sink",),
        {
            "action": "append",
            "default": [],
            "metavar": "URI",
            "help": "a directory or file:// URI, an object-storage URI (s3://bucket/prefix), an "
            "http(s):// endpoint, or openlineage:// (the OpenLineage client as configured); repeatable",
        },
    ),
    SINK_CONN_ID,
    ArgSpec(
        ("--coremodels-conn-id",),
        {"metavar": "ID", "help": "the coremodels connection whose password is the endpoint's token"},
    ),
)


def _whole(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more, got {value}")
    return number


def _days(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of days, got {value}")
    return number


#: How much of its history/ a file or object-storage sink keeps (docs/export.md#retention).
RETENTION = (
    ArgSpec(
        ("--history-keep",),
        {
            "type": _whole,
            "default": 0,
            "metavar": "N",
            "help": "file and object-storage sinks keep the newest N entries of history/ and remove the "
            "older ones after each push (default: 0, keep all); latest.json's twin is always kept",
        },
    ),
    ArgSpec(
        ("--history-max-age",),
        {
            "type": _days,
            "metavar": "DAYS",
            "help": "and remove the history/ entries captured more than DAYS before this capture "
            "(default: no age limit)",
        },
    ),
)

#: export: the deployment's DAG folder, from which lineage nobody declared is inferred (docs/lineage.md).
INFER_FROM = ArgSpec(
    ("--dag-folder",),
    {
        "metavar": "DIR",
        "help": "the deployment's DAG folder: infer the tables its SQL and transfer operators read and write "
        "(parsed in a sandbox, no task run; docs/lineage.md); without it the snapshot says that inferred "
        "lineage needs the DAG folder",
    },
)

DEPLOYMENT = ArgSpec(
    ("--deployment",),
    {
        "metavar": "NAME",
        "help": "the deployment's name in the snapshot (state.deployment; default: the connection id, "
        "none with --base-url)",
    },
)


def _namespace(value: str) -> str:
    if not value.strip() or value.strip().endswith("="):
        raise argparse.ArgumentTypeError(f"expected NAMESPACE or DEPLOYMENT=NAMESPACE, got {value!r}")
    return value.strip()


#: How --format openlineage and openlineage:// sinks shape their events (docs/openlineage.md).
OPENLINEAGE = (
    ArgSpec(
        ("--openlineage-namespace",),
        {
            "type": _namespace,
            "action": "append",
            "default": [],
            "metavar": "[DEPLOYMENT=]NAMESPACE",
            "help": "the OpenLineage namespace of the DAGs' jobs (default: the OpenLineage provider's, "
            "[openlineage] namespace; in a merged snapshot, each deployment's name); DEPLOYMENT=NAMESPACE "
            "sets one deployment's; repeatable",
        },
    ),
    ArgSpec(
        ("--openlineage-events",),
        {
            "choices": ("run", "job"),
            "metavar": "run|job",
            "help": "OpenLineage event kind: run (RunEvent COMPLETE, taken by every consumer; the default) "
            "or job (the static JobEvent)",
        },
    ),
)

#: When and how strictly the freshness rules judge (asset-stale, producer-failing).
FRESHNESS = (
    ArgSpec(
        ("--now",),
        {
            "type": _instant,
            "metavar": "TIME",
            "help": "judge freshness at this ISO 8601 time (default: the capture time, or when a stored "
            "--snapshot was judged, so a re-audit gives the same answer)",
        },
    ),
    ArgSpec(
        ("--stale-tolerance",),
        {
            "type": _tolerance,
            "metavar": "N",
            "help": "how many of its producers' cadences old an asset may grow before it is stale "
            f"(default: {defaults.STALE_TOLERANCE:g}, or as a stored --snapshot was judged; a producer's "
            "coremodels:stale-tolerance=N tag wins)",
        },
    ),
)


MAX_ARTIFACT_BYTES = ArgSpec(
    ("--max-artifact-bytes",),
    {
        "type": _positive_int,
        "default": defaults.MAX_ARTIFACT_BYTES,
        "metavar": "N",
        "help": "refuse an artifact file larger than this before reading it "
        f"(default: {defaults.MAX_ARTIFACT_BYTES >> 30} GiB)",
    },
)
BASELINE = ArgSpec(
    ("--baseline",),
    {"metavar": "S", "help": "a previous snapshot document to report coverage and drift against"},
)


def _depth(value: str) -> int:
    number = int(value)
    if not 0 <= number <= 50:
        raise argparse.ArgumentTypeError(f"expected a depth from 0 to 50, got {value}")
    return number


#: What audit and lineage read: artifacts or a stored snapshot, a baseline, waivers.
AUDIT_INPUTS = (
    ArgSpec(("--dags",), {"metavar": "F", "help": "the dags artifact (required unless --snapshot)"}),
    ArgSpec(("--tasks",), {"metavar": "F", "help": "the tasks artifact"}),
    ArgSpec(("--datasets",), {"metavar": "F", "help": "the datasets (assets) artifact"}),
    ArgSpec(("--snapshot",), {"metavar": "S", "help": "re-audit this stored snapshot document"}),
    ArgSpec(
        ("--example",),
        {
            "action": "store_true",
            "help": "the example estate shipped with the package (six DAGs as a real Airflow 3 "
            "served them), instead of --dags or --snapshot",
        },
    ),
    BASELINE,
    WAIVERS,
    RULES,
)


def _concurrency(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 64:
        raise argparse.ArgumentTypeError(f"expected 1 to 64 concurrent requests, got {value}")
    return number


def _share(value: str) -> float:
    number = float(value)
    if not 0 < number <= 1:
        raise argparse.ArgumentTypeError(f"expected a share over 0 and at most 1, got {value}")
    return number


def _seconds(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value}")
    return number


SOURCE = (
    ArgSpec(
        ("--conn-id",),
        {
            "metavar": "ID",
            "help": "the Airflow connection (type airflow_api) of the REST API "
            f"(default: {defaults.AIRFLOW_API_CONN_ID}, unless --base-url is given)",
        },
    ),
    ArgSpec(("--base-url",), {"metavar": "URL", "help": "the API server's URL, instead of a connection"}),
    ArgSpec(("--username",), {"metavar": "USER", "help": "with --base-url: the user to authenticate as"}),
    ArgSpec(
        ("--password-env",),
        {"metavar": "VAR", "help": "with --base-url: the environment variable holding the password"},
    ),
    ArgSpec(
        ("--token-env",),
        {"metavar": "VAR", "help": "with --base-url: the environment variable holding a bearer token"},
    ),
    ArgSpec(("--ca-bundle",), {"metavar": "PATH", "help": "verify TLS against this CA bundle"}),
    ArgSpec(
        ("--concurrency",),
        {
            "type": _concurrency,
            "metavar": "N",
            "help": f"concurrent requests (default: the connection's, else {defaults.CONCURRENCY})",
        },
    ),
    ArgSpec(
        ("--pacing",),
        {
            "choices": ("adaptive", "fixed"),
            "help": "adaptive: fewer requests in flight while the server's answers slow down, up to "
            "--concurrency, each slot resting after its answer (--pacing-share), so the server "
            "keeps room for its workers; fixed: always --concurrency, no rest (default: the "
            f"connection's, else {defaults.PACING})",
        },
    ),
    ArgSpec(
        ("--pacing-share",),
        {
            "type": _share,
            "metavar": "S",
            "help": "adaptive pacing: how much of each slot's time its requests may take at the "
            "server; after an answer the slot rests for the rest; 1: no rest (default: the "
            f"connection's pacing_share, else {defaults.PACING_SHARE})",
        },
    ),
    ArgSpec(
        ("--timeout",),
        {
            "type": _seconds,
            "metavar": "S",
            "help": f"read timeout per request (default: the connection's, else {defaults.READ_TIMEOUT:g})",
        },
    ),
    ArgSpec(
        ("--no-deadline-alerts",),
        {
            "action": "store_true",
            "help": "Airflow 3.3+: do not read each DAG's deadline alerts (one request per DAG); they "
            "are then unknown, and the rules' deadline check is not judged (default: the "
            "connection's deadline_alerts, else read)",
        },
    ),
    ArgSpec(
        ("--retry-budget",),
        {
            "type": _seconds,
            "default": defaults.RETRY_BUDGET,
            "metavar": "S",
            "help": "seconds a capture (and each push) may take in all, retries included "
            f"(default: {defaults.RETRY_BUDGET:g})",
        },
    ),
)


def _parse_workers(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 256:
        raise argparse.ArgumentTypeError(f"expected from 1 to 256 parsing processes, got {value}")
    return number


#: The pre-merge check: a DAG folder parsed and judged in the estate of --baseline.
DAG_FOLDER = (
    ArgSpec(
        ("--dag-folder",),
        {
            "metavar": "DIR",
            "help": "parse this DAG folder with Airflow's own parser (each file isolated; no database, "
            "no deployment) and audit it, in the estate of --baseline when given, instead of --dags "
            "or --snapshot; the document gains a change part",
        },
    ),
    ArgSpec(
        ("--bundle",),
        {
            "metavar": "NAME",
            "help": "with --dag-folder: the DAG bundle the folder is, whose DAGs it replaces in the "
            "baseline (default: dags-folder)",
        },
    ),
    ArgSpec(
        ("--deployment",),
        {
            "metavar": "NAME",
            "help": "with --dag-folder and a merged --baseline: the deployment the folder lands in",
        },
    ),
    ArgSpec(
        ("--fail-on-new",),
        {
            "choices": tuple(FAIL_ON),
            "help": "with --dag-folder: exit 1 when the change opens a finding at or above this "
            "severity (the estate's existing findings do not count)",
        },
    ),
    ArgSpec(
        ("--fail-on-break",),
        {
            "action": "store_true",
            "help": "with --dag-folder: exit 1 when the change cuts a dependency of another DAG (the "
            "change's breaks: an asset left with no producer, a DAG removed that one links to, a file "
            "others depend on that stops importing, a link to a DAG that does not exist); a waived "
            "finding breaks nothing",
        },
    ),
    ArgSpec(
        ("--parse-timeout",),
        {
            "type": _seconds,
            "metavar": "S",
            "help": "with --dag-folder: seconds one file may take to parse (default: [core] "
            "dagbag_import_timeout)",
        },
    ),
    ArgSpec(
        ("--parse-workers",),
        {
            "type": _parse_workers,
            "metavar": "N",
            "help": "with --dag-folder: files parsed at once (default: the machine's cores)",
        },
    ),
    ArgSpec(
        ("--base",),
        {
            "metavar": "REF",
            "help": "with --dag-folder and --baseline: judge what the work tree changes relative to the "
            "merge base of REF and HEAD (e.g. origin/main), applied to the deployed estate; files the "
            "change does not touch stay as deployed",
        },
    ),
    ArgSpec(
        ("--base-folder",),
        {
            "metavar": "DIR",
            "help": "as --base, with the merge base given as a folder instead of a git ref",
        },
    ),
    ArgSpec(
        ("--full",),
        {
            "action": "store_true",
            "help": "with --base: parse every file of both versions, not only those the change can alter "
            "(the same change, slower: a check of the scoped parse)",
        },
    ),
    ArgSpec(
        ("--sandbox",),
        {
            "choices": ("auto", "require", "off"),
            "default": "auto",
            "help": "with --dag-folder: where the DAG code runs. auto (default): in a bubblewrap "
            "sandbox where the machine allows one, else a process only (the views say which); "
            "require: exit 2 where there is no sandbox; off: a process only",
        },
    ),
    ArgSpec(
        ("--parse-deadline",),
        {
            "type": _seconds,
            "metavar": "S",
            "help": "with --dag-folder: seconds the whole parse may take, listing the folder included "
            "(default 600)",
        },
    ),
    ArgSpec(
        ("--parse-env",),
        {
            "action": "append",
            "metavar": "VAR",
            "help": "with --dag-folder: an environment variable the DAG files' parse is given; it gets "
            "only the locale and the Airflow settings a parse reads otherwise (repeatable)",
        },
    ),
    ArgSpec(
        ("--withhold-env",),
        {
            "action": "append",
            "metavar": "VAR",
            "help": "with --dag-folder: an environment variable the DAG files' parse must not see, even "
            "named by --parse-env (it sees none it is not given; repeatable)",
        },
    ),
    ArgSpec(
        ("--sink-conn-id",),
        {
            "metavar": "ID",
            "help": "the connection to read an object-storage --baseline (s3://bucket/prefix) with",
        },
    ),
)


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name="audit",
        help="Audit an estate offline, from artifact files or a stored snapshot",
        description=(
            "Parse the dags, tasks and datasets artifacts (or re-read a stored snapshot document, or "
            "parse a DAG folder and judge it in the estate of --baseline), run the audit rules and "
            "print the findings and the snapshot document."
        ),
        func="airflow_provider_coremodels.cli.commands:audit",
        args=(
            *AUDIT_INPUTS,
            *DAG_FOLDER,
            *FRESHNESS,
            FORMAT,
            OUTPUT,
            *OPENLINEAGE,
            FAIL_ON_ARG,
            TEAM,
            SOURCE_ROOT,
            MAX_SNAPSHOT_BYTES,
            ASSET_EXTRA,
            MAX_ARTIFACT_BYTES,
        ),
    ),
    CommandSpec(
        name="lineage",
        help="Draw the DAG -> asset -> DAG lineage as Mermaid, Graphviz DOT or SVG",
        description=(
            "Draw the lineage of an estate (from artifact files or a stored snapshot, as audit takes "
            "them): producing DAG -> asset -> consuming DAG, with paused DAGs, external DAGs and nodes "
            "with open findings marked. --around limits the picture to one DAG's or asset's neighbourhood."
        ),
        func="airflow_provider_coremodels.cli.commands:lineage",
        args=(
            *AUDIT_INPUTS,
            ArgSpec(
                ("--format",),
                {
                    "choices": LINEAGE_FORMATS,
                    "default": "mermaid",
                    "help": "mermaid, dot, or svg (the UI page's picture, byte for byte; at most "
                    "300 nodes, an estate larger than that drawn around one node) (default: mermaid)",
                },
            ),
            ArgSpec(
                ("--around",),
                {"metavar": "ID", "help": "draw only the neighbourhood of this dag_id or asset URI"},
            ),
            ArgSpec(
                ("--depth",),
                {
                    "type": _depth,
                    "default": 2,
                    "metavar": "N",
                    "help": "with --around: how many edges out to draw (default: 2, a DAG's assets and "
                    "the DAGs on their other side); a neighbourhood of over 300 nodes is cut to its "
                    "nearest 300, and a note on stderr says so",
                },
            ),
            MAX_ARTIFACT_BYTES,
        ),
    ),
    CommandSpec(
        name="impact",
        help="What lies downstream (or upstream) of a DAG or asset, from a snapshot",
        description=(
            "Walk the lineage from one DAG or asset, with the data (downstream: what it feeds, who "
            "consumes that, on) or against it (--upstream), and list every DAG and asset reached with "
            "its distance, state and open findings: the answer the MCP tool downstream_impact gives. "
            "--snapshot reads a document, a file sink's directory, an object-storage sink or SINK@REF."
        ),
        func="airflow_provider_coremodels.cli.commands:impact",
        args=(
            ArgSpec(("id",), {"metavar": "ID", "help": "the dag_id or asset URI to start from"}),
            *(arg for arg in AUDIT_INPUTS if arg.flags[0] not in ("--snapshot", "--baseline")),
            ArgSpec(
                ("--snapshot",),
                {
                    "metavar": "S",
                    "help": "a stored snapshot: a document, a file sink's directory, an object-storage "
                    "sink (s3://bucket/prefix, with --sink-conn-id) or SINK@REF (one history entry)",
                },
            ),
            SINK_CONN_ID,
            ArgSpec(
                ("--upstream",),
                {"action": "store_true", "help": "walk against the data: what ID depends on"},
            ),
            ArgSpec(
                ("--depth",),
                {
                    "type": _depth,
                    "metavar": "N",
                    "help": "stop N edges away, 1 to 50 (default: no limit, the whole reach)",
                },
            ),
            ArgSpec(
                ("--kind",),
                {
                    "choices": ("dag", "asset"),
                    "help": "dag or asset: needed only where a DAG and an asset share the name (@asset)",
                },
            ),
            ArgSpec(
                ("--format",),
                {
                    "choices": COMPARE_FORMATS,
                    "default": "table",
                    "help": "table, json (the MCP tool's answer, every node on one page) or markdown "
                    "(default: table)",
                },
            ),
            MAX_ARTIFACT_BYTES,
        ),
    ),
    CommandSpec(
        name="merge",
        help="Merge the snapshots of several deployments into one estate and audit it",
        description=(
            "Combine stored snapshot documents of several deployments into one estate joined on asset "
            "URIs (a DAG becomes <deployment>/<dag_id>), run every rule on it, and print the findings "
            "and the merged document. Each SNAPSHOT is a document, a file sink's directory (its "
            "latest.json), or NAME=PATH to name its deployment."
        ),
        func="airflow_provider_coremodels.cli.commands:merge",
        args=(
            ArgSpec(
                ("snapshots",), {"nargs": "+", "metavar": "SNAPSHOT", "help": "the deployments' snapshots"}
            ),
            ArgSpec(
                ("--stale-before",),
                {
                    "type": _instant,
                    "metavar": "TIME",
                    "help": "a snapshot captured before this ISO 8601 time is an old one (its deployment was "
                    "not captured this time): merged all the same, and named in a lossiness record",
                },
            ),
            *SINKS,
            *RETENTION,
            BASELINE,
            WAIVERS,
            RULES,
            *FRESHNESS,
            FORMAT,
            *OPENLINEAGE,
            FAIL_ON_ARG,
            TEAM,
            SOURCE_ROOT,
            MAX_SNAPSHOT_BYTES,
        ),
    ),
    CommandSpec(
        name="capture",
        help="Capture the estate from a deployment's REST API into dags.json, tasks.json and datasets.json",
        description=(
            "Read DAGs, each DAG's tasks and the assets (datasets) from the REST API of an Airflow "
            "deployment and save them in the shapes the offline audit accepts."
        ),
        func="airflow_provider_coremodels.cli.commands:capture",
        args=(
            *SOURCE,
            ArgSpec(
                ("--out",),
                {"metavar": "DIR", "required": True, "help": "the directory to write the files to"},
            ),
        ),
    ),
    CommandSpec(
        name="export",
        help="Capture, audit and push the snapshot to each sink: the job the operator runs",
        description=(
            "Capture the estate from the REST API, audit it against the sinks' stored baseline, print the "
            "findings, and push the fingerprinted snapshot document to every --sink."
        ),
        func="airflow_provider_coremodels.cli.commands:export",
        args=(
            *SOURCE,
            *SINKS,
            *RETENTION,
            WAIVERS,
            RULES,
            *FRESHNESS,
            DEPLOYMENT,
            INFER_FROM,
            FORMAT,
            *OPENLINEAGE,
            FAIL_ON_ARG,
            TEAM,
            SOURCE_ROOT,
            MAX_SNAPSHOT_BYTES,
            ASSET_EXTRA,
        ),
    ),
    CommandSpec(
        name="history",
        help="List the snapshots a file or object-storage sink stored, newest first",
        description=(
            "List the history/ of a file or object-storage sink, newest first: when each snapshot was "
            "captured, its fingerprint, its open findings by severity, whether it was stored for its "
            "findings alone or over the snapshot cap, and which entry latest.json holds. A damaged entry "
            "is a row that says so."
        ),
        func="airflow_provider_coremodels.cli.commands:history",
        args=(
            ArgSpec(
                ("--sink",),
                {
                    "metavar": "URI",
                    "required": True,
                    "help": "the sink: a directory or file:// URI, or an object-storage URI (s3://bucket/prefix)",
                },
            ),
            SINK_CONN_ID,
            ArgSpec(
                ("--format",),
                {"choices": HISTORY_FORMATS, "default": "table", "help": "table or json (default: table)"},
            ),
            ArgSpec(
                ("--limit",),
                {
                    "type": _whole,
                    "default": DEFAULT_HISTORY_LIMIT,
                    "metavar": "N",
                    "help": f"list the newest N entries (default: {DEFAULT_HISTORY_LIMIT}; 0 lists all)",
                },
            ),
            TEAM_HISTORY,
            RULES_TEAMS,
        ),
    ),
    CommandSpec(
        name="compare",
        help="Compare two stored snapshots: findings opened and closed, datasets, tasks and edges",
        description=(
            "Compare two stored snapshot documents: the findings opened and closed (by code and subject), "
            "the DAGs and assets added and removed, the tasks added, removed or changed, and the lineage "
            "edges added and removed. OLD and NEW are each a document, a sink (its latest.json), or "
            "SINK@REF for one entry of its history/: REF is latest, ~N (N entries before the newest), a "
            "fingerprint prefix, or a date or time (the newest entry captured by then)."
        ),
        func="airflow_provider_coremodels.cli.commands:compare",
        args=(
            ArgSpec(("old",), {"metavar": "OLD", "help": "the earlier snapshot"}),
            ArgSpec(("new",), {"metavar": "NEW", "help": "the later snapshot"}),
            SINK_CONN_ID,
            ArgSpec(
                ("--format",),
                {
                    "choices": COMPARE_FORMATS,
                    "default": "table",
                    "help": "table, json or markdown (a pull-request comment); default: table",
                },
            ),
            ArgSpec(
                ("--fail-on",),
                {
                    "choices": tuple(FAIL_ON),
                    "default": defaults.FAIL_ON,
                    "help": "exit 1 when a finding at or above this severity opened (default: never)",
                },
            ),
            TEAM_COMPARE,
            RULES_TEAMS,
        ),
    ),
    CommandSpec(
        name="teams",
        help="Report who owns what: each team's DAGs and open findings, and the unowned DAGs",
        description=(
            "Audit an estate as audit does (artifact files, a stored snapshot or --example) with a "
            "rules file naming teams, and print each team (in the file's order) with its DAGs, its open "
            "findings by severity and its waived ones, then the DAGs no team owns. A stored snapshot "
            "given alone (no --baseline, --waivers or --now) keeps the findings its export stored, "
            "drift and waivers included, so the counts are those history --team gives."
        ),
        func="airflow_provider_coremodels.cli.commands:teams",
        args=(
            *AUDIT_INPUTS,
            ArgSpec(
                ("--format",),
                {"choices": ("table", "json"), "default": "table", "help": "table or json (default: table)"},
            ),
            MAX_ARTIFACT_BYTES,
        ),
    ),
    CommandSpec(
        name="mcp",
        help="Serve a stored snapshot to assistants over MCP (stdio), read-only",
        description=(
            "Read one stored snapshot (a document, a file sink's directory or an object-storage sink) "
            "and serve it over the Model Context Protocol on stdin/stdout: its facts, findings, "
            "datasets, lineage, downstream impact and drift, as read-only tools for an assistant. "
            "Needs the mcp extra."
        ),
        func="airflow_provider_coremodels.cli.commands:mcp",
        args=(
            ArgSpec(
                ("--snapshot",),
                {
                    "metavar": "S",
                    "required": True,
                    "help": "the snapshot to serve: a document, a file sink's directory (its latest.json), "
                    "an object-storage sink (s3://bucket/prefix, with --sink-conn-id) or SINK@REF",
                },
            ),
            ArgSpec(
                ("--baseline",),
                {
                    "metavar": "S",
                    "help": "a previous snapshot for the drift tool, read as --snapshot is (a tool call "
                    "may name another, a local file only)",
                },
            ),
            SINK_CONN_ID,
            WAIVERS,
            ArgSpec(
                ("--rules",),
                {
                    "metavar": "FILE",
                    "help": "re-audit the snapshot against this rules file (with --waivers too, if given) "
                    "instead of serving its stored findings",
                },
            ),
        ),
    ),
    CommandSpec(
        name="generate",
        help="Refused: the airflow connector does not generate code",
        description="Generation is not a capability of the airflow connector; this command always exits 2.",
        func="airflow_provider_coremodels.cli.commands:generate",
        args=(ArgSpec(("request",), {"nargs": argparse.REMAINDER, "help": "ignored"}),),
    ),
)
