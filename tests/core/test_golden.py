"""Golden tests: the recorded real Airflow 3.3 responses and the Airflow 2 (v1) fixtures."""

from __future__ import annotations

import json

import pytest
from support.helpers import FIXTURES, artifact_paths

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts


def document(generation: str, tasks_file: str = "tasks.json") -> dict:
    paths = artifact_paths(generation)
    estate = parse_artifacts(
        paths["dags"].read_bytes(),
        (FIXTURES / generation / tasks_file).read_bytes(),
        paths["datasets"].read_bytes(),
    )
    return build_document(estate, audit(estate))


def by_identity(doc: dict) -> dict[str, dict]:
    return {d["identity"]: d for d in doc["datasets"]}


EXPECTED_FINDINGS = [
    ("Conformance", "Warning", "asset-unproduced", "s3://vendor/fx_rates.csv", "consumers: daily_revenue"),
    ("Conformance", "Info", "dag-no-description", "legacy_cleanup", None),
    ("Conformance", "Warning", "dag-no-owner", "legacy_cleanup", "owners: airflow"),
    (
        "Conformance",
        "Warning",
        "paused-producer",
        "s3://lake/orders.parquet",
        "producers: load_orders; active consumers: daily_revenue",
    ),
]


@pytest.mark.parametrize("generation", ["airflow3", "airflow2"])
def test_recorded_estate_findings(generation: str) -> None:
    doc = document(generation)
    assert [(f["section"], f["severity"], f["code"], f["subject"], f["detail"]) for f in doc["findings"]] == (
        EXPECTED_FINDINGS
    )
    assert doc["lossiness"] == []
    assert doc["lineageEdgesSkipped"] == 0


def test_airflow3_recorded_estate() -> None:
    doc = document("airflow3")
    assert doc["state"]["apiVersion"] == "v2"
    assert doc["state"]["facts"] == {"dags": 6, "pausedDags": 2, "assets": 4, "tasks": 11}
    datasets = by_identity(doc)
    assert datasets["load_orders"]["metadata"] == {
        "airflow.paused": "true",
        "airflow.owners": "data-eng,orders-oncall",
        "airflow.schedule": "0 5 * * *",
        "airflow.bundle": "dags-folder",
        "airflow.relativeFileloc": "orders.py",
    }
    assert datasets["load_orders"]["tags"] == ["lake", "orders"]
    assert datasets["load_orders"]["physicalName"].endswith("example_dags/estate/orders.py")
    assert datasets["sync_crm"]["metadata"]["airflow.schedule"] == "6:00:00"
    assert datasets["daily_revenue"]["metadata"]["airflow.schedule"] == "Asset"
    assert datasets["legacy_cleanup"]["metadata"]["airflow.schedule"] == "0 0 * * *"
    assert "airflow.schedule" not in datasets["backfill_customers"]["metadata"]  # schedule=None
    publish = next(f for f in datasets["load_orders"]["fields"] if f["name"] == "publish")
    assert (publish["nativeType"], publish["metadata"]) == (
        "BashOperator",
        {"airflow.owner": "orders-oncall"},
    )
    mapped = next(f for f in datasets["sync_crm"]["fields"] if f["name"] == "sync_account")
    assert mapped["nativeType"] == "_PythonDecoratedOperator"
    assert [(e["dependent"], e["dependsOn"]) for e in doc["lineage"]] == [
        ("customer_report", "s3://lake/customers.parquet"),
        ("daily_revenue", "s3://lake/orders.parquet"),
        ("daily_revenue", "s3://vendor/fx_rates.csv"),
        ("s3://lake/customers.parquet", "backfill_customers"),
        ("s3://lake/customers.parquet", "sync_crm"),
        ("s3://lake/orders.parquet", "load_orders"),
        ("s3://lake/revenue.parquet", "daily_revenue"),
    ]


def test_airflow2_fixtures_parse_the_v1_shapes() -> None:
    doc = document("airflow2")
    assert doc["state"]["apiVersion"] == "v1"
    datasets = by_identity(doc)
    assert datasets["load_orders"]["metadata"]["airflow.schedule"] == "0 5 * * *"  # CronExpression value
    assert datasets["sync_crm"]["metadata"]["airflow.schedule"] == "TimeDelta"  # typed object without a value
    assert datasets["daily_revenue"]["metadata"]["airflow.owners"] == "finance"  # " finance " stripped
    assert datasets["load_orders"]["metadata"]["airflow.owners"] == "data-eng,orders-oncall"
    assert datasets["load_orders"]["tags"] == ["lake", "orders"]  # {"name": ...} objects
    assert "airflow.schedule" not in datasets["backfill_customers"]["metadata"]


def test_both_tasks_shapes_give_the_same_snapshot() -> None:
    assert document("airflow2", "tasks_list_shape.json") == document("airflow2")


def test_recorded_bytes_are_what_the_server_sent() -> None:
    """tasks.json splices each DAG's raw response: every entry is a tasks response object."""
    tasks = json.loads(artifact_paths("airflow3")["tasks"].read_bytes())
    assert all(set(response) >= {"tasks", "total_entries"} for response in tasks.values())
