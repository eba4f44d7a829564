"""Inlet-only readers and a read-and-write state store."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

ORDERS_SYNC = Asset(name="orders_sync", uri="s3://lake/orders_sync")
WATERMARK = Asset(name="orders_watermark", uri="s3://lake/state/orders_watermark.json")

# Construct: an inlet-only reader - reads orders_sync but is time-scheduled, not asset-scheduled.
with DAG(
    dag_id="orders_audit",
    description="Audits synced orders daily; reads them without being scheduled on them",
    default_args={"owner": "audit"},
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="audit_orders", inlets=[ORDERS_SYNC])

# Construct: a state store - one task both reads (inlet) and writes (outlet) the same asset.
with DAG(
    dag_id="orders_incremental",
    description="Loads orders incrementally from a watermark it reads and advances",
    default_args={"owner": "data-eng"},
    schedule="@hourly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="advance_watermark", inlets=[WATERMARK], outlets=[WATERMARK])
