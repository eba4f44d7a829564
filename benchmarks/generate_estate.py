"""A deterministic synthetic Airflow estate, shaped like the real REST API's responses.

Sizes: S = 100 DAGs, M = 1,000, L = 10,000 (or any number), 20 tasks per DAG, one asset per
two DAGs, each asset with one or two producing DAGs and zero to three consuming DAGs, about
one DAG in ten paused. The same seed gives the same bytes, run after run.

Every object carries the full key set (and key order) of the recorded real responses in
``airflow_provider_coremodels/example_estate/`` (Airflow 3, ``/api/v2``; the default) or
``tests/fixtures/airflow2/`` (Airflow 2, ``/api/v1``, with ``--api v1``), with plausible values:
timestamps, file paths,
signed ``file_token``s, ``class_ref``s, ``template_fields``, ``retry_delay`` objects and so on,
so that the artifacts are as large as real ones. ``--check`` verifies the key sets against the
fixtures.

Artifacts, as ``capture --out`` names them and as the server sends the bodies (compact JSON):

* ``dags.json``: ``{"dags": [...], "total_entries": n, "captured_at": ..., "dag_warnings": [],
  "failed_latest_run": [...]}``, sorted by dag_id,
  each asset-scheduled DAG with its ``asset_expression`` (``dataset_expression`` in v1);
* ``tasks.json``: ``{"<dag_id>": {"tasks": [...], "total_entries": n}}``;
* ``datasets.json``: ``{"assets": [...], "total_entries": n, "asset_aliases": [], "asset_events": []}``
  (v2) or ``{"datasets": [...]}`` (v1).

As a module::

    from generate_estate import generate, write_estate
    docs = generate("M", seed=0)          # {"dags": ..., "tasks": ..., "datasets": ...}
    paths = write_estate("/tmp/m", "M")   # {"dags": Path, "tasks": Path, "datasets": Path}

As a command::

    python benchmarks/generate_estate.py --size M --out /tmp/estate-m [--seed 0] [--api v1] [--shape bare]

Shapes (``--shape``; Airflow 3 only, except ``default`` and ``bare``): the estates users really
feed the offline audit, each the default estate reworked with a random stream of its own (so the
default's bytes never change):

* ``default``: as above, every asset-scheduled DAG with its condition;
* ``bare``: artifacts made by hand from ``curl`` as docs/capture.md shows: the API's list
  responses as they are, none of what the capture adds (no ``asset_expression``, no warnings,
  aliases, events, capture time or failed runs);
* ``lossy``: what the parse must report rather than represent: half the asset-scheduled DAGs
  without their condition, conditions naming ``Asset.ref``s and assets nothing matches,
  references to DAGs the dags artifact lacks, DAGs missing from the tasks artifact and tasks of
  DAGs it does not list, stale DAGs and files that do not import, references the dependency
  graph no longer shows;
* ``aliases``: assets written through asset aliases (a few aliases resolving to many assets),
  DAGs scheduled on aliases, aliases nothing was written through, and the events naming writers;
* ``conflicts``: refused twins sharing a URI or a name with an active asset, the DAG warnings of
  asset-conflict type on every DAG that names one (some named by many DAGs), twins the scheduler
  has not yet warned of, and other DAG warnings;
* ``waivers``: the default estate and a waiver file (``waivers.yaml``) of about one waiver per
  two DAGs: exact subjects, globs over DAG ids and asset URIs (their number growing with the
  estate), expired waivers and waivers matching nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

SIZES = {"S": 100, "M": 1_000, "L": 10_000}
TASKS_PER_DAG = 20
PAUSED_SHARE = 0.1
NO_DESCRIPTION_SHARE = 0.15
DEFAULT_OWNER_SHARE = 0.05

# -- vocabularies -------------------------------------------------------------------------

TEAMS = (
    "finance", "marketing", "growth", "risk", "payments", "logistics", "crm", "search",
    "ads", "billing", "fraud", "supply", "hr", "ml-platform", "data-eng", "analytics",
)  # fmt: skip
DOMAINS = (
    "orders",
    "customers",
    "invoices",
    "sessions",
    "clicks",
    "shipments",
    "payments",
    "inventory",
    "campaigns",
    "accounts",
    "events",
    "subscriptions",
    "refunds",
    "leads",
)
VERBS = (
    "ingest",
    "sync",
    "load",
    "build",
    "refresh",
    "export",
    "score",
    "aggregate",
    "reconcile",
    "backfill",
    "publish",
    "compact",
)
TASK_VERBS = (
    "extract",
    "validate",
    "transform",
    "load",
    "check",
    "publish",
    "notify",
    "stage",
    "dedupe",
    "enrich",
    "aggregate",
    "archive",
    "sensor",
    "merge",
    "snapshot",
    "train",
    "score",
    "compact",
    "export",
    "cleanup",
)
TAGS = (
    "daily",
    "hourly",
    "pii",
    "gold",
    "silver",
    "bronze",
    "sla",
    "tier-1",
    "tier-2",
    "legacy",
    "experimental",
    "reporting",
    "ml",
    "dbt",
    "spark",
)
BUCKETS = ("lake", "warehouse", "raw", "curated", "exports", "vendor")
DESCRIPTIONS = (
    "Loads {domain} from the operational database into the lake",
    "Builds the {domain} mart for the {team} team",
    "Reconciles {domain} against the ledger and flags mismatches",
    "Exports {domain} to the partner SFTP drop",
    "Refreshes {domain} features for scoring models",
    "Daily {domain} snapshot with quality checks",
)

# Schedules as (v2 timetable_summary, timetable_description, v1 schedule_interval, v1 description).
CRON_SCHEDULES = (
    ("0 5 * * *", "At 05:00", {"__type": "CronExpression", "value": "0 5 * * *"}, "At 05:00"),
    ("30 2 * * *", "At 02:30", {"__type": "CronExpression", "value": "30 2 * * *"}, "At 02:30"),
    ("0 0 * * *", "At 00:00", {"__type": "CronExpression", "value": "@daily"}, "At 00:00"),
    (
        "0 * * * *",
        "At 0 minutes past the hour",
        {"__type": "CronExpression", "value": "@hourly"},
        "At 0 minutes past the hour",
    ),
    (
        "*/15 * * * *",
        "Every 15 minutes",
        {"__type": "CronExpression", "value": "*/15 * * * *"},
        "Every 15 minutes",
    ),
    (
        "0 6 * * 1",
        "At 06:00, only on Monday",
        {"__type": "CronExpression", "value": "0 6 * * 1"},
        "At 06:00, only on Monday",
    ),
)
TIMEDELTA_SCHEDULE = (
    "6:00:00",
    "",
    {"__type": "TimeDelta", "days": 0, "seconds": 21600, "microseconds": 0},
    "",
)
NO_SCHEDULE = (None, "Never, external triggers only", None, "Never, external triggers only")
ASSET_SCHEDULE = (
    "Asset",
    "Triggered by assets",
    {"__type": "CronExpression", "value": "Dataset"},
    "Triggered by datasets",
)

# Operators: (operator_name, class_name, v2 module, v1 module, template_fields, ui_color, ui_fgcolor)
OPERATORS = (
    ("BashOperator", "BashOperator", "airflow.providers.standard.operators.bash", "airflow.operators.bash",
     ["bash_command", "env", "cwd"], "#f0ede4", "#000"),
    ("@task", "_PythonDecoratedOperator", "airflow.providers.standard.decorators.python",
     "airflow.decorators.python", ["templates_dict", "op_args", "op_kwargs"], "#ffefeb", "#000"),
    ("PythonOperator", "PythonOperator", "airflow.providers.standard.operators.python",
     "airflow.operators.python", ["templates_dict", "op_args", "op_kwargs"], "#ffefeb", "#000"),
    ("EmptyOperator", "EmptyOperator", "airflow.providers.standard.operators.empty",
     "airflow.operators.empty", [], "#e8f7e4", "#000"),
    ("SQLExecuteQueryOperator", "SQLExecuteQueryOperator", "airflow.providers.common.sql.operators.sql",
     "airflow.providers.common.sql.operators.sql",
     ["sql", "parameters", "conn_id", "database", "hook_params"], "#cdaaed", "#000"),
    ("S3KeySensor", "S3KeySensor", "airflow.providers.amazon.aws.sensors.s3",
     "airflow.providers.amazon.aws.sensors.s3", ["aws_conn_id", "bucket_key", "bucket_name"], "#ffffff",
     "#000"),
    ("KubernetesPodOperator", "KubernetesPodOperator", "airflow.providers.cncf.kubernetes.operators.pod",
     "airflow.providers.cncf.kubernetes.operators.pod",
     ["image", "cmds", "annotations", "arguments", "env_vars", "labels", "config_file", "pod_template_file",
      "pod_template_dict", "namespace", "container_resources", "volumes", "volume_mounts", "cluster_context",
      "env_from", "node_selector", "kubernetes_conn_id"], "#ffffff", "#000"),
    ("TriggerDagRunOperator", "TriggerDagRunOperator", "airflow.providers.standard.operators.trigger_dagrun",
     "airflow.operators.trigger_dagrun",
     ["trigger_dag_id", "trigger_run_id", "logical_date", "conf", "wait_for_completion",
      "skip_when_already_exists"], "#ffefeb", "#000"),
    ("EmailOperator", "EmailOperator", "airflow.providers.smtp.operators.smtp", "airflow.operators.email",
     ["to", "from_email", "subject", "html_content", "files", "cc", "bcc", "mime_subtype", "mime_charset",
      "conn_id", "custom_headers"], "#e6faf9", "#000"),
)  # fmt: skip
OPERATOR_WEIGHTS = (18, 30, 8, 10, 14, 6, 8, 3, 3)

BASE_TIME = datetime(2026, 5, 4, 6, 0, 0, tzinfo=timezone.utc)
FAILED_EVERY = 40  # one DAG in 40 failed its latest run


# -- generation ---------------------------------------------------------------------------


def dag_count(size: str | int) -> int:
    if isinstance(size, int):
        return size
    if size.upper() in SIZES:
        return SIZES[size.upper()]
    return int(size)


def generate(
    size: str | int = "S", *, seed: int = 0, api: str = "v2", shape: str = "default"
) -> dict[str, Any]:
    """The artifacts of an estate, decoded: ``{"dags": ..., "tasks": ..., "datasets": ...}``, and
    for the ``waivers`` shape ``"waivers"``, the waiver file's list."""
    if api not in ("v1", "v2"):
        raise ValueError(f"api must be v1 or v2, got {api!r}")
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, got {shape!r}")
    if api == "v1" and shape not in ("default", "bare"):
        raise ValueError(f"the {shape} shape is of Airflow 3 (api v2)")
    docs = _Generator(dag_count(size), seed, api).run()
    SHAPES[shape](docs, random.Random(f"{shape}-{seed}"))
    return docs


def write_estate(
    out: str | Path, size: str | int = "S", *, seed: int = 0, api: str = "v2", shape: str = "default"
) -> dict[str, Path]:
    """Generate an estate and write dags.json, tasks.json and datasets.json under ``out`` (and
    waivers.yaml for the ``waivers`` shape)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    docs = generate(size, seed=seed, api=api, shape=shape)
    paths = {}
    for name, doc in docs.items():
        if name == "waivers":
            path = out / "waivers.yaml"
            path.write_text(waivers_yaml(doc), encoding="utf-8")
        else:
            path = out / f"{name}.json"
            path.write_bytes(encode(doc))
        paths[name] = path
    return paths


def encode(doc: Any) -> bytes:
    """Compact UTF-8 JSON, as FastAPI sends a response body."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class _Generator:
    def __init__(self, n_dags: int, seed: int, api: str) -> None:
        if n_dags < 2:
            raise ValueError("an estate needs at least 2 DAGs")
        self.n = n_dags
        self.rng = random.Random(seed)
        self.v2 = api == "v2"
        self.key = hashlib.sha256(f"coremodels-benchmark-{seed}".encode()).digest()

    # timestamps: v2 writes "Z" with microseconds, v1 "+00:00"
    def ts(self, seconds: float) -> str:
        when = BASE_TIME + timedelta(seconds=seconds)
        text = when.strftime("%Y-%m-%dT%H:%M:%S.%f")
        return text + ("Z" if self.v2 else "+00:00")

    def ts_whole(self, when: datetime) -> str:
        return when.strftime("%Y-%m-%dT%H:%M:%S") + ("Z" if self.v2 else "+00:00")

    def file_token(self, bundle: str, relative: str, absolute: str) -> str:
        """Signed like itsdangerous' URLSafeSerializer: base64url(payload) "." base64url(HMAC-SHA1)."""
        if self.v2:
            payload = json.dumps({"bundle_name": bundle, "relative_fileloc": relative}, separators=(",", ":"))
        else:
            payload = json.dumps(absolute)
        body = base64.urlsafe_b64encode(payload.encode()).rstrip(b"=")
        signature = hmac.new(self.key, body, hashlib.sha1).digest()
        return (body + b"." + base64.urlsafe_b64encode(signature).rstrip(b"=")).decode()

    def run(self) -> dict[str, Any]:
        specs = [self._dag_spec(i) for i in range(self.n)]
        by_id = {spec["dag_id"]: spec for spec in specs}
        assets = self._assets(specs)
        for asset in assets:  # consumers are scheduled on their assets
            for dag_id in asset["consumers"]:
                by_id[dag_id]["schedule"] = ASSET_SCHEDULE
        ordered = sorted(specs, key=lambda s: s["dag_id"])
        dags = [self._dag(spec) for spec in ordered]
        tasks = {
            spec["dag_id"]: {"tasks": spec["tasks"], "total_entries": len(spec["tasks"])} for spec in ordered
        }
        asset_docs = [self._asset(index + 1, asset, by_id) for index, asset in enumerate(assets)]
        self._conditions(dags, asset_docs)
        if self.v2:
            return {
                "dags": {
                    "dags": dags,
                    "total_entries": len(dags),
                    # what the capture adds for the freshness rules: its time (two days after the
                    # assets' events, so some are stale) and the DAGs whose latest run failed
                    "captured_at": self.ts_whole(BASE_TIME + timedelta(days=2)),
                    "dag_warnings": [],
                    "failed_latest_run": [dag["dag_id"] for dag in dags[::FAILED_EVERY]],
                },
                "tasks": tasks,
                "datasets": {
                    "assets": asset_docs,
                    "total_entries": len(asset_docs),
                    "asset_aliases": [],
                    "asset_events": [],
                },
            }
        return {
            "dags": {"dags": dags, "total_entries": len(dags)},
            "tasks": tasks,
            "datasets": {"datasets": asset_docs, "total_entries": len(asset_docs)},
        }

    def _conditions(self, dags: list[dict[str, Any]], asset_docs: list[dict[str, Any]]) -> None:
        """What ``capture --out`` adds to each asset-scheduled DAG: its details' condition, a list
        schedule on the assets that name it (``{"all": [...]}``, as Airflow reports one)."""
        consumers_key = "scheduled_dags" if self.v2 else "consuming_dags"
        leaves: dict[str, list[Any]] = {}
        for doc in asset_docs:
            leaf = {"asset": {"uri": doc["uri"], "name": doc["uri"], "group": "asset", "id": doc["id"]}}
            for ref in doc[consumers_key]:
                leaves.setdefault(ref["dag_id"], []).append(leaf if self.v2 else doc["uri"])
        key = "asset_expression" if self.v2 else "dataset_expression"
        for dag in dags:
            if dag["dag_id"] in leaves:
                dag[key] = {"all": leaves[dag["dag_id"]]}

    # -- DAGs -------------------------------------------------------------------------------

    def _dag_spec(self, index: int) -> dict[str, Any]:
        rng = self.rng
        team = rng.choice(TEAMS)
        domain = rng.choice(DOMAINS)
        dag_id = f"{team.replace('-', '_')}_{rng.choice(VERBS)}_{domain}_{index:05d}"
        owners = (
            ["airflow"]
            if rng.random() < DEFAULT_OWNER_SHARE
            else sorted({f"{team}-team", *(["data-eng"] if rng.random() < 0.3 else [])})
        )
        schedule = rng.choices((*CRON_SCHEDULES, TIMEDELTA_SCHEDULE, NO_SCHEDULE), (5, 3, 4, 2, 2, 1, 2, 2))[
            0
        ]
        relative = f"{team}/{domain}/{dag_id}.py"
        spec = {
            "index": index,
            "dag_id": dag_id,
            "team": team,
            "domain": domain,
            "owners": owners,
            "paused": rng.random() < PAUSED_SHARE,
            "description": None
            if rng.random() < NO_DESCRIPTION_SHARE
            else rng.choice(DESCRIPTIONS).format(domain=domain, team=team),
            "tags": sorted(rng.sample(TAGS, rng.randint(0, 3))),
            "schedule": schedule,
            "relative": relative,
            "parsed": 3600.0 * 24 * 30 + rng.uniform(0, 3600),
        }
        spec["tasks"] = self._tasks(spec)
        return spec

    def _dag(self, spec: dict[str, Any]) -> dict[str, Any]:
        rng = self.rng
        dag_id = spec["dag_id"]
        summary, description, v1_schedule, v1_description = spec["schedule"]
        periodic = summary not in (None, "Asset")
        next_run = BASE_TIME.replace(hour=0, minute=0) + timedelta(days=31)
        next_ts = self.ts_whole(next_run) if periodic else None
        bundle = "dags-folder"
        absolute = f"/opt/airflow/dags/{spec['relative']}"
        token = self.file_token(bundle, spec["relative"], absolute)
        max_active_tasks = rng.choice((16, 16, 16, 8, 32))
        max_active_runs = rng.choice((16, 16, 1, 3))
        if self.v2:
            return {
                "dag_id": dag_id,
                "dag_display_name": dag_id,
                "is_paused": spec["paused"],
                "is_stale": False,
                "last_parsed_time": self.ts(spec["parsed"]),
                "last_parse_duration": round(rng.uniform(0.05, 2.5), 6),
                "last_expired": None,
                "bundle_name": bundle,
                "bundle_version": None,
                "relative_fileloc": spec["relative"],
                "fileloc": absolute,
                "description": spec["description"],
                "timetable_summary": summary,
                "timetable_description": description,
                "timetable_partitioned": False,
                "timetable_periodic": periodic,
                "tags": [{"name": t, "dag_id": dag_id, "dag_display_name": dag_id} for t in spec["tags"]],
                "max_active_tasks": max_active_tasks,
                "max_active_runs": max_active_runs,
                "max_consecutive_failed_dag_runs": 0,
                "has_task_concurrency_limits": False,
                "has_import_errors": False,
                "next_dagrun_logical_date": next_ts,
                "next_dagrun_data_interval_start": next_ts,
                "next_dagrun_data_interval_end": next_ts,
                "next_dagrun_run_after": next_ts,
                "allowed_run_types": None,
                "owners": spec["owners"],
                "is_backfillable": periodic,
                "file_token": token,
            }
        return {
            "dag_id": dag_id,
            "dag_display_name": dag_id,
            "root_dag_id": None,
            "is_paused": spec["paused"],
            "is_active": True,
            "is_subdag": False,
            "last_parsed_time": self.ts(spec["parsed"]),
            "last_pickled": None,
            "last_expired": None,
            "scheduler_lock": None,
            "pickle_id": None,
            "default_view": "grid",
            "fileloc": absolute,
            "file_token": token,
            "owners": spec["owners"],
            "description": spec["description"],
            "schedule_interval": v1_schedule,
            "timetable_description": v1_description,
            "tags": [{"name": t} for t in spec["tags"]],
            "max_active_tasks": max_active_tasks,
            "max_active_runs": max_active_runs,
            "max_consecutive_failed_dag_runs": 0,
            "has_task_concurrency_limits": False,
            "has_import_errors": False,
            "next_dagrun": next_ts,
            "next_dagrun_data_interval_start": next_ts,
            "next_dagrun_data_interval_end": next_ts,
            "next_dagrun_create_after": next_ts,
        }

    # -- tasks ------------------------------------------------------------------------------

    def _tasks(self, spec: dict[str, Any]) -> list[dict[str, Any]]:
        rng = self.rng
        names: list[str] = []
        seen: set[str] = set()
        for position in range(TASKS_PER_DAG):
            name = f"{rng.choice(TASK_VERBS)}_{rng.choice(DOMAINS)}"
            if name in seen:
                name = f"{name}_{position:02d}"
            seen.add(name)
            names.append(name)
        downstream: dict[str, list[str]] = {name: [] for name in names}
        for position, name in enumerate(names[:-1]):  # a layered graph: each task feeds one or two later ones
            later = names[position + 1 :]
            downstream[name] = sorted(rng.sample(later, min(len(later), rng.choice((1, 1, 2)))))
        spec["first_task"], spec["last_task"] = names[0], names[-1]
        owner = spec["owners"][0]
        tasks = [self._task(name, owner, downstream[name]) for name in names]
        tasks.sort(key=lambda t: t["task_id"])  # the API answers in task_id order
        return tasks

    def _task(self, task_id: str, owner: str, downstream: list[str]) -> dict[str, Any]:
        rng = self.rng
        name, class_name, module_v2, module_v1, template_fields, ui_color, ui_fgcolor = rng.choices(
            OPERATORS, OPERATOR_WEIGHTS
        )[0]
        retries = float(rng.choice((0, 1, 2, 3)))
        retry_delay = {
            "__type": "TimeDelta",
            "days": 0,
            "seconds": rng.choice((60, 300, 600)),
            "microseconds": 0,
        }
        timeout = (
            {"__type": "TimeDelta", "days": 0, "seconds": rng.choice((1800, 3600, 7200)), "microseconds": 0}
            if rng.random() < 0.3
            else None
        )
        doc_md = (
            f"### {task_id}\nOwned by {owner}. Runbook: https://wiki.example.com/data/{task_id}"
            if rng.random() < 0.2
            else None
        )
        params = (
            {
                "run_date": {
                    "__class": "airflow.sdk.definitions.param.Param"
                    if self.v2
                    else "airflow.models.param.Param",
                    "value": None,
                    "description": "Override the logical date",
                    "schema": {"type": ["null", "string"], "format": "date"},
                }
            }
            if rng.random() < 0.1
            else {}
        )
        start = "2026-01-01T00:00:00Z" if self.v2 else "2026-01-01T00:00:00+00:00"
        pool = rng.choice(("default_pool", "default_pool", "default_pool", "etl_pool", "warehouse_pool"))
        class_ref = {"module_path": module_v2 if self.v2 else module_v1, "class_name": class_name}
        if self.v2:
            return {
                "task_id": task_id,
                "task_display_name": task_id,
                "owner": owner,
                "start_date": start,
                "end_date": None,
                "trigger_rule": "all_success" if rng.random() < 0.9 else "all_done",
                "depends_on_past": False,
                "wait_for_downstream": False,
                "retries": retries,
                "queue": "default",
                "pool": pool,
                "pool_slots": 1.0,
                "execution_timeout": timeout,
                "retry_delay": retry_delay,
                "retry_exponential_backoff": 0.0,
                "priority_weight": 1.0,
                "weight_rule": "downstream",
                "ui_color": ui_color,
                "ui_fgcolor": ui_fgcolor,
                "template_fields": list(template_fields),
                "downstream_task_ids": downstream,
                "doc_md": doc_md,
                "operator_name": name,
                "params": params,
                "class_ref": class_ref,
                "is_mapped": False,
                "extra_links": [],
            }
        return {
            "class_ref": class_ref,
            "operator_name": name,
            "task_id": task_id,
            "task_display_name": task_id,
            "owner": owner,
            "start_date": start,
            "end_date": None,
            "trigger_rule": "all_success" if rng.random() < 0.9 else "all_done",
            "extra_links": [],
            "depends_on_past": False,
            "is_mapped": False,
            "wait_for_downstream": False,
            "retries": retries,
            "queue": "default",
            "executor": None,
            "pool": pool,
            "pool_slots": 1.0,
            "execution_timeout": timeout,
            "retry_delay": retry_delay,
            "retry_exponential_backoff": False,
            "priority_weight": 1.0,
            "weight_rule": "downstream",
            "ui_color": ui_color,
            "ui_fgcolor": ui_fgcolor,
            "template_fields": list(template_fields),
            "downstream_task_ids": downstream,
            "params": params,
            "doc_md": doc_md,
        }

    # -- assets -----------------------------------------------------------------------------

    def _assets(self, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rng = self.rng
        assets = []
        for index in range(self.n // 2):
            producers = rng.sample(specs, rng.randint(1, 2))
            taken = {p["dag_id"] for p in producers}
            pool = rng.sample(specs, 3 + len(taken))
            consumers = [c["dag_id"] for c in pool if c["dag_id"] not in taken][: rng.randint(0, 3)]
            domain = producers[0]["domain"]
            scheme = rng.choices(("s3", "gs", "postgres", "file"), (6, 2, 2, 1))[0]
            if scheme == "postgres":
                schema = producers[0]["team"].replace("-", "_")
                uri = f"postgres://warehouse:5432/analytics/{schema}/{domain}_{index:05d}"
            elif scheme == "file":
                uri = f"file:///data/exports/{domain}/{domain}_{index:05d}.csv"
            else:
                uri = f"{scheme}://{rng.choice(BUCKETS)}/{domain}/{domain}_{index:05d}.parquet"
            assets.append(
                {
                    "uri": uri,
                    "producers": [p["dag_id"] for p in producers],
                    "consumers": consumers,
                    "created": 3600.0 * 24 * rng.uniform(0, 25),
                    "owner": producers[0]["owners"][0],
                }
            )
        return assets

    def _ref(self, dag_id: str, task_id: str | None, created: float) -> dict[str, Any]:
        when = created + self.rng.uniform(0, 5)
        ref: dict[str, Any] = {"dag_id": dag_id}
        if task_id is not None:
            ref["task_id"] = task_id
        ref["created_at"] = self.ts(when)
        ref["updated_at"] = self.ts(when + self.rng.uniform(0, 0.01))
        return ref

    def _asset(
        self, asset_id: int, asset: dict[str, Any], by_id: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        rng = self.rng
        created = asset["created"]
        producing = [self._ref(d, by_id[d]["last_task"], created) for d in asset["producers"]]
        extra = {"owner": asset["owner"]} if rng.random() < 0.3 else {}
        if not self.v2:
            return {
                "id": asset_id,
                "uri": asset["uri"],
                "extra": extra,
                "created_at": self.ts(created),
                "updated_at": self.ts(created),
                "consuming_dags": [self._ref(d, None, created) for d in asset["consumers"]],
                "producing_tasks": producing,
            }
        event = (
            {"id": rng.randint(1, 10 * self.n), "timestamp": self.ts(created + rng.uniform(3600, 86400))}
            if rng.random() < 0.7
            else {"id": None, "timestamp": None}
        )
        return {
            "id": asset_id,
            "name": asset["uri"],
            "uri": asset["uri"],
            "group": "asset",
            "extra": extra,
            "created_at": self.ts(created),
            "updated_at": self.ts(created + rng.uniform(0, 0.01)),
            "scheduled_dags": [self._ref(d, None, created) for d in asset["consumers"]],
            "producing_tasks": producing,
            "consuming_tasks": [self._ref(d, by_id[d]["first_task"], created) for d in asset["consumers"]],
            "aliases": [],
            "watchers": [],
            "last_asset_event": event,
        }


# -- shapes: the default estate reworked as users' estates are -------------------------------


def _asset_scheduled(dags: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dag for dag in dags if "asset_expression" in dag]


def _leaf(asset: dict[str, Any]) -> dict[str, Any]:
    return {"asset": {"uri": asset["uri"], "name": asset["name"], "group": asset["group"], "id": asset["id"]}}


def _shape_bare(docs: dict[str, Any], rng: random.Random) -> None:
    """As ``curl`` saves the list responses: nothing the capture adds, in either artifact."""
    for dag in docs["dags"]["dags"]:
        dag.pop("asset_expression", None)
        dag.pop("dataset_expression", None)
    docs["dags"] = {"dags": docs["dags"]["dags"], "total_entries": docs["dags"]["total_entries"]}
    key = "assets" if "assets" in docs["datasets"] else "datasets"
    docs["datasets"] = {key: docs["datasets"][key], "total_entries": docs["datasets"]["total_entries"]}


def _shape_lossy(docs: dict[str, Any], rng: random.Random) -> None:
    """Every kind of record the parse writes, many times over: see the module's docstring."""
    dags, tasks, assets = docs["dags"]["dags"], docs["tasks"], docs["datasets"]["assets"]
    for index, dag in enumerate(_asset_scheduled(dags)):
        if index % 2 == 0:
            del dag["asset_expression"]  # details not fetched: its references and aliases are unknown
        elif rng.random() < 0.6:  # a condition naming what nothing matches
            items = dag["asset_expression"]["all"]
            items.append({"asset_ref": {"name": f"renamed_{index:05d}"}})
            items.append(
                {"asset": {"uri": f"s3://gone/{index:05d}.parquet", "name": "gone", "group": "asset"}}
            )
    for dag in dags[3::10]:  # missing from the tasks artifact: fields unknown
        tasks.pop(dag["dag_id"], None)
    for index in range(len(dags) // 20):  # tasks of DAGs the dags artifact does not list
        tasks[f"deleted_dag_{index:05d}"] = {"tasks": [], "total_entries": 0}
    for index, asset in enumerate(assets):
        if index % 10 == 0:  # produced by a DAG of another deployment, or a deleted one
            asset["producing_tasks"].append({"dag_id": f"external_dag_{index:05d}", "task_id": "publish"})
        if index % 25 == 0:
            asset["scheduled_dags"].append({"created_at": asset["created_at"]})  # no dag_id
    stale, broken = dags[7::33], dags[11::97]
    for dag in stale:
        dag["is_stale"] = True
    for dag in broken:
        dag["is_stale"] = dag["has_import_errors"] = True
    docs["dags"]["includes_stale"] = True
    docs["dags"]["import_errors"] = [
        {"id": i, "timestamp": dag["last_parsed_time"], "filename": dag["relative_fileloc"],
         "bundle_name": dag["bundle_name"],
         "stack_trace": f"Traceback (most recent call last):\n  File \"{dag['fileloc']}\", line 12\n"
                        f"NameError: name 'helpers_{i}' is not defined"}
        for i, dag in enumerate(broken)
    ]  # fmt: skip
    # The dependency graph as the UI draws it, less one producing edge in eight: references the
    # code dropped, which Airflow keeps.
    edges = []
    for index, asset in enumerate(assets):
        node = f"asset:{asset['id']}"
        for ref in asset["producing_tasks"][: 1 if index % 8 == 0 else None]:
            edges.append({"source_id": f"dag:{ref['dag_id']}", "target_id": node})
        for ref in asset["scheduled_dags"]:
            if "dag_id" in ref:
                edges.append({"source_id": node, "target_id": f"dag:{ref['dag_id']}"})
    docs["datasets"]["dependencies"] = {"edges": edges}


def _shape_aliases(docs: dict[str, Any], rng: random.Random) -> None:
    """Assets written through aliases, DAGs scheduled on them, and the events that name writers."""
    dags, assets = docs["dags"]["dags"], docs["datasets"]["assets"]
    dag_ids = [dag["dag_id"] for dag in dags]
    n_aliases = max(2, len(assets) // 4)
    hubs = max(1, n_aliases // 100)  # a few aliases a dynamic writer fans out through, to many assets
    names = [f"alias_{'hub' if i < hubs else 'feed'}_{i:05d}" for i in range(n_aliases)]
    ids = {name: i for i, name in enumerate(names)}
    events = []
    for index, asset in enumerate(assets):
        if rng.random() >= 0.6:
            continue
        chosen = {names[rng.randrange(hubs)]} if rng.random() < 0.2 else set()
        chosen.add(names[hubs + rng.randrange(n_aliases - hubs)])
        asset["aliases"] = [{"id": 1 + ids[n], "name": n, "group": "asset"} for n in sorted(chosen)]
        if rng.random() < 0.5:
            asset["producing_tasks"] = []  # written only through its aliases
        if rng.random() < 0.7:  # an event names the writer; the others' writers are unknown
            writer = rng.choice(dag_ids)
            events.append({"id": len(events) + 1, "asset_id": asset["id"], "uri": asset["uri"],
                           "source_dag_id": writer, "source_task_id": "publish",
                           "source_run_id": f"scheduled__2026-05-0{1 + index % 5}T05:00:00+00:00",
                           "timestamp": asset["created_at"]})  # fmt: skip
    unwritten = [f"alias_unwritten_{i:05d}" for i in range(max(1, n_aliases // 10))]
    docs["datasets"]["asset_aliases"] = [
        {"id": i + 1, "name": name, "group": "asset"} for i, name in enumerate([*names, *unwritten])
    ]
    docs["datasets"]["asset_events"] = events
    for index, dag in enumerate(_asset_scheduled(dags)):
        if index % 3 == 0:  # scheduled on an alias, written or not
            pool = unwritten if index % 15 == 0 else names
            dag["asset_expression"] = {
                "any": [dag["asset_expression"], {"alias": {"name": rng.choice(pool), "group": "asset"}}]
            }


def _shape_conflicts(docs: dict[str, Any], rng: random.Random) -> None:
    """Refused twins, the asset-conflict warnings on the DAGs that name them, other DAG warnings."""
    dags, assets = docs["dags"]["dags"], docs["datasets"]["assets"]
    dag_ids = [dag["dag_id"] for dag in dags]
    popular = dag_ids[:: max(1, len(dag_ids) // 5)][:5]
    inactive, warned_lines = [], {}
    next_id = len(assets) + 1
    for index, asset in enumerate(assets):
        if index % 2:  # Airflow 3 names: half the assets carry a name of their own
            asset["name"] = f"{asset['uri'].rsplit('/', 1)[-1].split('.')[0]}"
        if rng.random() >= 0.25:
            continue
        same_uri = rng.random() < 0.5
        twin_name = f"{asset['name']}_v2" if same_uri else asset["name"]
        twin_uri = asset["uri"] if same_uri else asset["uri"] + ".v2"
        referencing = rng.sample(dag_ids, rng.randint(1, 3))
        if rng.random() < 0.05:
            referencing = sorted({*referencing, *popular})  # a twin many DAGs name
        refs = [{"dag_id": d, "created_at": asset["created_at"], "updated_at": asset["created_at"]}
                for d in referencing]  # fmt: skip
        inactive.append({**asset, "id": next_id, "name": twin_name, "uri": twin_uri,
                         "scheduled_dags": refs, "producing_tasks": [], "consuming_tasks": []})  # fmt: skip
        next_id += 1
        if rng.random() < 0.6:  # the scheduler has warned; the others only show as inactive twins
            clash, holder = ("uri", asset["name"]) if same_uri else ("name", asset["uri"])
            line = (
                f'Cannot activate asset Asset(name="{twin_name}", uri="{twin_uri}", group="asset"); '
                f"{clash} is already associated to {holder!r}"
            )
            for dag_id in referencing:
                warned_lines.setdefault(dag_id, []).append(line)
    warnings = [
        {"dag_id": dag_id, "warning_type": "asset conflict", "message": "\n".join(lines),
         "timestamp": "2026-05-04T06:00:00Z"}
        for dag_id, lines in sorted(warned_lines.items())
    ]  # fmt: skip
    for dag_id in dag_ids[5::40]:
        warnings.append({"dag_id": dag_id, "warning_type": "non-existent pool",
                         "message": f"Dag '{dag_id}' references non-existent pools: ['spark_pool']",
                         "timestamp": "2026-05-04T06:00:00Z"})  # fmt: skip
    for index in range(max(1, len(dag_ids) // 200)):  # warnings of DAGs no longer listed
        warnings.append({"dag_id": f"removed_dag_{index:05d}", "warning_type": "asset conflict",
                         "message": warnings[0]["message"].splitlines()[0] if warnings else "x",
                         "timestamp": "2026-05-04T06:00:00Z"})  # fmt: skip
    docs["dags"]["dag_warnings"] = warnings
    docs["datasets"]["inactive_assets"] = inactive


def _shape_waivers(docs: dict[str, Any], rng: random.Random) -> None:
    """A waiver file of about one waiver per two DAGs, against the default estate's findings."""
    dags, assets = docs["dags"]["dags"], docs["datasets"]["assets"]
    waivers: list[dict[str, str]] = []

    def waive(code: str, subject: str, reason: str, expires: str | None = "2099-12-31") -> None:
        waivers.append({"code": code, "subject": subject, "reason": reason,
                        **({"expires": expires} if expires else {})})  # fmt: skip

    for index, dag in enumerate(dags):
        dag_id = dag["dag_id"]
        if dag["description"] is None and rng.random() < 0.7:
            waive("dag-no-description", dag_id, "documented in the team wiki")
        if index % 20 == 0:  # by prefix, as a team waives a family of DAGs: these grow with the estate
            waive("dag-no-description", dag_id[:-2] + "*", "legacy family, rewrite planned")
            waive("dag-no-owner", dag_id[:-2] + "?" * 2, "owned by the platform team", None)
        if index % 7 == 0:
            waive("dag-no-description", f"decommissioned_{dag_id}", "gone next quarter")  # matches nothing
    for index, asset in enumerate(assets):
        if index % 10 == 0:
            waive("asset-unproduced", asset["uri"], "written by a vendor's job outside Airflow")
        if index % 30 == 0:
            waive("asset-stale", asset["uri"].rsplit("/", 1)[0] + "/*", "late on purpose")
    for team in TEAMS:
        waive("dag-no-owner", f"{team.replace('-', '_')}_*", "the team owns it", "2099-12-31")
    for index in range(max(1, len(dags) // 100)):
        waive("paused-producer", f"s3://lake/retired_{index:04d}*", "retired", "2020-01-31")  # expired
    rng.shuffle(waivers)
    docs["waivers"] = waivers


def waivers_yaml(waivers: list[dict[str, str]]) -> str:
    """A waiver file as a team writes one: YAML, one mapping per waiver, plain scalars quoted."""
    lines = []
    for waiver in waivers:
        first = True
        for key, value in waiver.items():
            lines.append(f"{'- ' if first else '  '}{key}: {json.dumps(value)}")
            first = False
    return "\n".join(lines) + "\n"


def _shape_default(docs: dict[str, Any], rng: random.Random) -> None:
    """The estate as generated."""


SHAPES = {
    "default": _shape_default,
    "bare": _shape_bare,
    "lossy": _shape_lossy,
    "aliases": _shape_aliases,
    "conflicts": _shape_conflicts,
    "waivers": _shape_waivers,
}


# -- checking against the recorded real responses ---------------------------------------


def check_against_fixtures(fixtures: Path | None = None) -> list[str]:
    """Differences between the generated key sets and those of the recorded real responses."""
    repo = Path(__file__).resolve().parents[1]
    root = fixtures or repo / "tests" / "fixtures"
    problems = []
    recordings = (
        ("v2", repo / "airflow_provider_coremodels" / "example_estate", "assets"),
        ("v1", root / "airflow2", "datasets"),
    )
    for api, folder, list_key in recordings:
        real = {
            name: json.loads((folder / f"{name}.json").read_bytes()) for name in ("dags", "tasks", "datasets")
        }
        details = folder / "dag_details.json"  # Airflow 2's: what capture adds from the details
        if details.exists():
            conditions = json.loads(details.read_bytes())
            real["dags"]["dags"] = [{**d, **conditions.get(d["dag_id"], {})} for d in real["dags"]["dags"]]
        ours = generate(20, seed=1, api=api)
        pairs = {
            "dag": (real["dags"]["dags"], ours["dags"]["dags"]),
            "task": ([t for r in real["tasks"].values() for t in r["tasks"]],
                     [t for r in ours["tasks"].values() for t in r["tasks"]]),
            "asset": (real["datasets"][list_key], ours["datasets"][list_key]),
        }  # fmt: skip
        for kind, (real_items, our_items) in pairs.items():
            real_keys = {tuple(item) for item in real_items}
            our_keys = {tuple(item) for item in our_items}
            if real_keys != our_keys:
                problems.append(f"{api} {kind} keys differ: real {sorted(real_keys)} ours {sorted(our_keys)}")
        for ref_key in ("scheduled_dags", "consuming_dags", "producing_tasks", "consuming_tasks"):
            real_refs = {tuple(r) for item in real["datasets"][list_key] for r in item.get(ref_key, [])}
            our_refs = {tuple(r) for item in ours["datasets"][list_key] for r in item.get(ref_key, [])}
            if real_refs and our_refs and real_refs != our_refs:
                problems.append(f"{api} {ref_key} keys differ: real {real_refs} ours {our_refs}")
        for wrapper in ("dags", "datasets"):
            if set(real[wrapper]) != set(ours[wrapper]):
                problems.append(
                    f"{api} {wrapper} wrapper keys differ: {set(real[wrapper])} vs {set(ours[wrapper])}"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="S", help="S (100 DAGs), M (1,000), L (10,000) or a number of DAGs")
    parser.add_argument("--out", help="directory to write dags.json, tasks.json and datasets.json into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--api", choices=("v2", "v1"), default="v2", help="v2: Airflow 3 (default); v1: Airflow 2"
    )
    parser.add_argument(
        "--shape", choices=tuple(SHAPES), default="default", help="see the module's docstring"
    )
    parser.add_argument("--check", action="store_true", help="compare key sets with tests/fixtures and exit")
    args = parser.parse_args(argv)
    if args.check:
        problems = check_against_fixtures()
        for problem in problems:
            print(problem, file=sys.stderr)
        print("key sets match the recorded responses" if not problems else f"{len(problems)} differences")
        return 1 if problems else 0
    if not args.out:
        parser.error("--out is required (or --check)")
    paths = write_estate(args.out, args.size, seed=args.seed, api=args.api, shape=args.shape)
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 1e6:.1f} MB" for p in paths.values())
    print(f"{dag_count(args.size)} DAGs ({args.api}, {args.shape}) -> {args.out}: {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
