"""Every file in example_dags/ imports into a DagBag with no errors; the estate has the expected DAGs."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import REPO


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "example_dags"))


def test_example_dags_import_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}


def test_example_estate_dags(dagbag) -> None:
    estate = {dag_id for dag_id, dag in dagbag.dags.items() if Path(dag.fileloc).parent.name == "estate"}
    assert estate == {
        "load_orders",
        "daily_revenue",
        "sync_crm",
        "backfill_customers",
        "customer_report",
        "legacy_cleanup",
    }


def test_example_asset_estate_dags(dagbag) -> None:
    """A DAG file per Airflow 3 asset construct (the expected lineage: tests/support/asset_estate.py)."""
    assets = {dag_id for dag_id, dag in dagbag.dags.items() if Path(dag.fileloc).parent.name == "assets"}
    assert assets == {
        "raw_orders",
        "clean_orders",
        "orders_sync",
        "orders_sync_consumer",
        "orders_by_name_ref",
        "orders_by_uri_ref",
        "orders_by_slash_ref",
        "orders_audit",
        "orders_incremental",
        "exports_producer",
        "exports_consumer",
        "export_by_name_ref",
        "inbox_orders_loader",
        "market_data",
        "valuation",
        "price_snapshot",
        "sales_ledger",
        "sales_feed",
        "inventory_v1",
        "inventory_v2",
    }


def test_example_freshness_dags(dagbag) -> None:
    """Producers and consumers for the freshness rules (tests/operators/test_live_freshness.py)."""
    fresh = {dag_id for dag_id, dag in dagbag.dags.items() if Path(dag.fileloc).parent.name == "freshness"}
    assert fresh == {"orders_loader", "broken_feed", "orders_report", "feed_report", "drops_loader"}
