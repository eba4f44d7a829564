"""A plain DAG and the asset it produces share a name (orders_sync)."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

# Airflow normalises the URI: the trailing "/" is dropped, so the stored URI is s3://lake/orders_sync.
ORDERS_SYNC = Asset(name="orders_sync", uri="s3://lake/orders_sync/")

# Construct: a plain (non-@asset) DAG named like the asset it writes.
with DAG(
    dag_id="orders_sync",
    description="Syncs orders from the shop into the lake hourly",
    default_args={"owner": "data-eng"},
    schedule="@hourly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="sync", outlets=[ORDERS_SYNC])

# Construct: a consumer scheduled directly on the Asset object.
with DAG(
    dag_id="orders_sync_consumer",
    description="Loads each orders sync into the warehouse",
    default_args={"owner": "warehouse"},
    schedule=[ORDERS_SYNC],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="load_orders")
