"""Asset conflicts, second side: same URI / same name as conflict_first.py, other name / URI."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

# Construct: URI conflict, side 2 - another name ("sales_feed") for the URI s3://lake/sales.
with DAG(
    dag_id="sales_feed",
    description="Writes the sales feed, to the URI the sales ledger already uses",
    default_args={"owner": "sales"},
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets", "conflict"],
):
    EmptyOperator(task_id="write", outlets=[Asset(name="sales_feed", uri="s3://lake/sales")])

# Construct: name conflict, side 2 - the name "inventory" for another URI (.../v2).
with DAG(
    dag_id="inventory_v2",
    description="Writes version 2 of the inventory, under the name version 1 already uses",
    default_args={"owner": "supply"},
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets", "conflict"],
):
    EmptyOperator(task_id="write", outlets=[Asset(name="inventory", uri="s3://lake/inventory/v2")])
