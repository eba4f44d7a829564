"""Golden tests: the recorded real Airflow 3.3 responses and the Airflow 2 (v1) fixtures."""

from __future__ import annotations

import json

import pytest
from support.asset_estate import EXPECTED_ASSET_LINEAGE, LAKE
from support.helpers import artifact_paths, fixture_dir

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts


def document(generation: str, tasks_file: str = "tasks.json") -> dict:
    paths = artifact_paths(generation)
    estate = parse_artifacts(
        paths["dags"].read_bytes(),
        (fixture_dir(generation) / tasks_file).read_bytes(),
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
    if generation == "airflow3":  # captured: the asset-scheduled DAGs' conditions ride along
        assert doc["lossiness"] == []
    else:  # written by hand as GET /api/v1/dags answers: the list does not say what a DAG waits for
        about = [(r["artifact"], r.get("subject"), r["message"].split(":")[0]) for r in doc["lossiness"]]
        assert about == [
            ("dags", None, "import errors unknown"),  # GET /importErrors was not written down
            (
                "dags",
                "daily_revenue",
                "DAG 'daily_revenue' is scheduled on assets, but the dags artifact lacks its condition "
                "(asset_expression from GET /dags/daily_revenue/details)",
            ),
            ("datasets", None, "task inlets unknown"),  # Airflow 2's API lists none
        ]
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
        "airflow.maxActiveRuns": "16",  # Airflow's default, read by the team's rules
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
        {"airflow.owner": "orders-oncall", "airflow.retries": "0"},  # Airflow 3 sends retries as 0.0
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


# -- the asset estate: Airflow 3's asset constructs, recorded from a real server ---------------


def test_recorded_asset_estate_lineage_is_what_the_dag_files_declare() -> None:
    doc = document("airflow3_assets")
    lineage = {
        (f"{e['dependentKind']}:{e['dependent']}", f"{e['dependsOnKind']}:{e['dependsOn']}", e.get("via", ""))
        for e in doc["lineage"]
    }
    assert lineage == EXPECTED_ASSET_LINEAGE
    assert len(doc["lineage"]) == len(EXPECTED_ASSET_LINEAGE) and doc["lineageEdgesSkipped"] == 0


def test_the_table_says_what_the_asset_model_added() -> None:
    from airflow_provider_coremodels.core.views.render import render_table

    assert render_table(document("airflow3_assets")).splitlines()[1] == (
        "asset model: 3 edges through Asset.ref, 2 edges through aliases, 1 edge from a task inlet, "
        "1 watched asset, 2 asset conflicts"
    )
    assert "asset model" not in render_table(document("airflow2"))  # nothing of it: no line


def test_recorded_asset_estate_findings_tell_the_truth() -> None:
    doc = document("airflow3_assets")
    assert [(f["code"], f["subject"]) for f in doc["findings"]] == [
        ("asset-conflict", f"{LAKE}/inventory/v2"),
        ("asset-conflict", f"{LAKE}/sales"),
        ("asset-unproduced", f"{LAKE}/manual_prices"),  # an alternative input, nothing produces it
        ("dag-no-owner", "clean_orders"),  # @asset takes no owner
        ("dag-no-owner", "raw_orders"),
        ("paused-producer", f"{LAKE}/raw_orders"),  # the @asset chain's paused upstream
    ]
    details = {f["subject"]: f["detail"] for f in doc["findings"]}
    assert details[f"{LAKE}/manual_prices"] == "consumers: valuation; only an alternative input of: valuation"
    assert details[f"{LAKE}/raw_orders"] == "producers: raw_orders; active consumers: clean_orders"
    # no false alarm: the watched file and the alias-written export are not unproduced
    assert [r.get("subject") for r in doc["lossiness"]] == [None, "orders_by_slash_ref"]
    # what no endpoint shows, said: the inputs an @asset function reads by parameter name
    assert doc["lossiness"][0]["message"].startswith("the inputs of @asset functions")
    assert "'clean_orders', 'raw_orders'" in doc["lossiness"][0]["message"]
    assets = {d["identity"]: d["metadata"] for d in doc["datasets"] if d["materialization"] == "asset"}
    assert assets["file:///tmp/coremodels-inbox/orders.csv"] == {
        "airflow.name": "inbox_orders_csv",
        "airflow.watched": "true",
    }
    assert assets[f"{LAKE}/exports/2026-01-01"] == {
        "airflow.name": "export_2026_01_01",
        "airflow.aliases": "daily_exports",
    }
