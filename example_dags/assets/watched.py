"""A watched asset: a trigger (not a task) emits the asset's events."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.triggers.file import FileDeleteTrigger
from airflow.sdk import DAG, Asset, AssetWatcher

# Construct: an asset with an AssetWatcher; FileDeleteTrigger fires (and deletes the file) when it appears.
INBOX_FILE = Asset(
    name="inbox_orders_csv",
    uri="file:///tmp/coremodels-inbox/orders.csv",
    watchers=[
        AssetWatcher(
            name="inbox_orders_watcher",
            trigger=FileDeleteTrigger(filepath="/tmp/coremodels-inbox/orders.csv", poke_interval=30),
        )
    ],
)

# Construct: a consumer scheduled on the watched asset (the watcher's trigger is registered only while an
# unpaused DAG is scheduled directly on the asset).
with DAG(
    dag_id="inbox_orders_loader",
    description="Loads orders files dropped into the inbox by the shop",
    default_args={"owner": "data-eng"},
    schedule=[INBOX_FILE],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="load_inbox")
