"""Freshness: the active consumers of the producers' assets, and a watched asset (never judged)."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.triggers.file import FileDeleteTrigger
from airflow.sdk import DAG, Asset, AssetWatcher

DROPS = Asset(
    "file:///tmp/coremodels-fresh/drops.csv",
    watchers=[
        AssetWatcher(
            name="drops_watcher", trigger=FileDeleteTrigger(filepath="/tmp/coremodels-fresh/drops.csv")
        )
    ],
)

for dag_id, description, asset in (
    ("orders_report", "Reports on the day's orders", Asset("s3://lake/fresh/orders")),
    ("feed_report", "Reports on the vendor feed", Asset("s3://lake/fresh/feed")),
    ("drops_loader", "Loads files dropped by the shop", DROPS),
):
    with DAG(
        dag_id=dag_id,
        description=description,
        default_args={"owner": "data-eng"},
        schedule=[asset],
        start_date=datetime(2026, 1, 1),
        catchup=False,
        tags=["freshness"],
    ):
        EmptyOperator(task_id="run")
