"""Record real Airflow 3 REST API responses for the example estates as test fixtures.

Run from the repository root::

    python dev/record_fixtures.py

Starts a real API server (see tests/support/airflow_server.py) for each estate and captures it
with the provider's own capture, keeping every object as the server sent it: the files are what
``airflow coremodels capture --out`` writes, the offline interface (the server's list responses,
with what the asset model adds riding inside them).

- example_dags/estate -> airflow_provider_coremodels/example_estate/ (one DAG per audit rule;
  it ships with the package for ``audit --example``)
- example_dags/assets -> tests/fixtures/airflow3_assets/ (Airflow 3's asset constructs; the alias
  producer runs once and the scheduler's asset pass runs, so the alias resolves and Airflow
  writes its asset-conflict warnings)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the harness: tests/support/

from support.airflow_server import AirflowApiServer

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, Capture, capture

REPO = Path(__file__).resolve().parents[1]
ESTATES = {
    "airflow3": (REPO / "example_dags" / "estate", {}),
    "airflow3_assets": (
        REPO / "example_dags" / "assets",
        {"run_dags": ("exports_producer",), "scheduler_pass": True},
    ),
}
OUT = {
    "airflow3": REPO / "airflow_provider_coremodels" / "example_estate",
    "airflow3_assets": REPO / "tests" / "fixtures" / "airflow3_assets",
}


def check_estate(dags: dict, assets: dict) -> None:
    """Fail if the recorded estate is not the one the example DAGs describe."""
    paused = {dag["dag_id"]: dag["is_paused"] for dag in dags["dags"]}
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
    by_uri = {asset["uri"]: asset for asset in assets["assets"]}

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


def check_assets_estate(dags: dict, assets: dict) -> None:
    """Fail unless the alias resolved and Airflow wrote its two asset-conflict warnings."""
    by_uri = {asset["uri"]: asset for asset in assets["assets"]}
    export = by_uri.get("s3://lake/exports/2026-01-01", {})
    if [alias["name"] for alias in export.get("aliases", [])] != ["daily_exports"]:
        raise SystemExit("the alias daily_exports did not resolve: did exports_producer run?")
    if sorted(w["dag_id"] for w in dags["dag_warnings"]) != ["inventory_v2", "sales_feed"]:
        raise SystemExit(f"unexpected asset conflict warnings: {dags['dag_warnings']}")


def record_estate(name: str) -> None:
    folder, options = ESTATES[name]
    with AirflowApiServer(folder, **options) as server:
        source = ApiSource(server.base_url, username=server.username, password=server.password)
        with AirflowApiClient(source) as client:
            captured: Capture = capture(client, keep_raw=True)
        version = server.get("/api/v2/version").content
        timings = server.timings
    if captured.lossiness:
        raise SystemExit(f"{name}: the capture was lossy: {captured.lossiness}")
    (check_estate if name == "airflow3" else check_assets_estate)(captured.dags, captured.datasets)
    out = OUT[name]
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "version.json": version,
        "dags.json": json.dumps(captured.dags, ensure_ascii=False, indent=1).encode(),
        "tasks.json": json.dumps(captured.tasks, ensure_ascii=False, indent=1).encode(),
        "datasets.json": json.dumps(captured.datasets, ensure_ascii=False, indent=1).encode(),
    }
    for file, body in files.items():
        (out / file).write_bytes(body)
        print(f"wrote {(out / file).relative_to(REPO)} ({len(body)} bytes)")
    print(captured.summary.line())
    print("server start-up (s):", {key: round(value, 2) for key, value in timings.items()})


if __name__ == "__main__":
    for estate in sys.argv[1:] or ESTATES:
        record_estate(estate)
