"""Record real Airflow 3 REST API responses for the example estate as test fixtures.

Run from the repository root::

    python dev/record_fixtures.py

Starts a real API server (see tests/support/airflow_server.py) on example_dags/estate and writes
tests/fixtures/airflow3/{version,dags,tasks,datasets}.json. Response bodies are saved byte for
byte; tasks.json splices each DAG's raw /tasks body into one JSON object keyed by dag_id.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the harness: tests/support/

from support.airflow_server import AirflowApiServer

REPO = Path(__file__).resolve().parents[1]
DAGS_FOLDER = REPO / "example_dags" / "estate"
OUT = REPO / "tests" / "fixtures" / "airflow3"


def fetch(server: AirflowApiServer, path: str, **params: object) -> bytes:
    response = server.get(path, **params)
    if response.status_code != 200:
        raise SystemExit(f"GET {path} -> HTTP {response.status_code}: {response.text}")
    return response.content


def check_estate(dags: bytes, assets: bytes) -> None:
    """Fail if the recorded estate is not the one the example DAGs describe."""
    paused = {dag["dag_id"]: dag["is_paused"] for dag in json.loads(dags)["dags"]}
    expected_paused = {
        "backfill_customers": True,
        "customer_report": False,
        "daily_revenue": False,
        "legacy_cleanup": False,
        "load_orders": True,
        "sync_crm": False,
    }
    if paused != expected_paused:
        raise SystemExit(f"unexpected DAGs / paused state: {paused}")
    by_uri = {asset["uri"]: asset for asset in json.loads(assets)["assets"]}

    def refs(uri: str, field: str) -> set[str]:
        return {".".join(filter(None, (r["dag_id"], r.get("task_id")))) for r in by_uri[uri][field]}

    expected = {
        ("s3://lake/orders.parquet", "producing_tasks"): {"load_orders.publish"},
        ("s3://lake/orders.parquet", "scheduled_dags"): {"daily_revenue"},
        ("s3://vendor/fx_rates.csv", "producing_tasks"): set(),
        ("s3://vendor/fx_rates.csv", "consuming_tasks"): {"daily_revenue.compute"},
        ("s3://lake/revenue.parquet", "producing_tasks"): {"daily_revenue.compute"},
        ("s3://lake/customers.parquet", "producing_tasks"): {
            "sync_crm.publish_customers",
            "backfill_customers.backfill",
        },
        ("s3://lake/customers.parquet", "scheduled_dags"): {"customer_report"},
    }
    for (uri, field), want in expected.items():
        if refs(uri, field) != want:
            raise SystemExit(f"{uri} {field}: got {refs(uri, field)}, expected {want}")


def fetch_artifacts(server: AirflowApiServer) -> dict[str, bytes]:
    """Fetch the version, dags, tasks and assets bodies from a running server, byte for byte."""
    version = fetch(server, "/api/v2/version")
    dags = fetch(server, "/api/v2/dags", limit=100, order_by="dag_id")
    dags_doc = json.loads(dags)
    if dags_doc["total_entries"] != len(dags_doc["dags"]):
        raise SystemExit("more DAGs than one page: raise the limit")
    dag_ids = sorted(dag["dag_id"] for dag in dags_doc["dags"])
    tasks = {dag_id: fetch(server, f"/api/v2/dags/{quote(dag_id, safe='')}/tasks") for dag_id in dag_ids}
    assets = fetch(server, "/api/v2/assets", limit=100, order_by="id")
    # Keep every DAG's tasks body byte for byte: splice the raw bodies into one JSON object.
    tasks_json = (
        b"{" + b", ".join(json.dumps(dag_id).encode() + b": " + body for dag_id, body in tasks.items()) + b"}"
    )
    json.loads(tasks_json)  # must still be valid JSON
    return {"version.json": version, "dags.json": dags, "tasks.json": tasks_json, "datasets.json": assets}


def record() -> None:
    with AirflowApiServer(DAGS_FOLDER) as server:
        artifacts = fetch_artifacts(server)
        timings = server.timings
    check_estate(artifacts["dags.json"], artifacts["datasets.json"])

    OUT.mkdir(parents=True, exist_ok=True)
    for name, body in artifacts.items():
        (OUT / name).write_bytes(body)
        print(f"wrote {(OUT / name).relative_to(REPO)} ({len(body)} bytes)")
    print("server start-up (s):", {key: round(value, 2) for key, value in timings.items()})


if __name__ == "__main__":
    record()
