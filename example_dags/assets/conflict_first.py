"""Asset conflicts, first side: these assets are declared first and stay active."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

# Construct: URI conflict, side 1 - name "sales_ledger" at s3://lake/sales (conflict_second.py reuses it).
with DAG(
    dag_id="sales_ledger",
    description="Writes the sales ledger to s3://lake/sales",
    default_args={"owner": "sales"},
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets", "conflict"],
):
    EmptyOperator(task_id="write", outlets=[Asset(name="sales_ledger", uri="s3://lake/sales")])

# Construct: name conflict, side 1 - name "inventory" at .../v1 (conflict_second.py reuses the name).
with DAG(
    dag_id="inventory_v1",
    description="Writes version 1 of the inventory",
    default_args={"owner": "supply"},
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets", "conflict"],
):
    EmptyOperator(task_id="write", outlets=[Asset(name="inventory", uri="s3://lake/inventory/v1")])
