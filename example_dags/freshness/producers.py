"""Freshness: producers whose consumers may be reading stale data (asset-stale, producer-failing).

``orders_loader`` updates its asset daily; when its last update is more than two days old the
asset is stale. ``broken_feed``'s task fails, so its consumer waits on an asset nobody refreshes.
The tests run both once with ``airflow dags test`` and age the loader's event.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Asset

ORDERS = Asset("s3://lake/fresh/orders")
FEED = Asset("s3://lake/fresh/feed")


def _fail() -> None:
    raise RuntimeError("the vendor's feed is unreachable")


with DAG(
    dag_id="orders_loader",
    description="Loads the day's orders",
    default_args={"owner": "data-eng"},
    schedule="0 5 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["freshness"],
):
    EmptyOperator(task_id="load", outlets=[ORDERS])

with DAG(
    dag_id="broken_feed",
    description="Fetches the vendor feed (failing)",
    default_args={"owner": "data-eng"},
    schedule="0 * * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["freshness"],
):
    PythonOperator(task_id="fetch", python_callable=_fail, outlets=[FEED])
