"""An AssetAlias: the producer decides at run time which concrete asset it wrote."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, AssetAlias, task

EXPORTS_ALIAS = AssetAlias("daily_exports")

# Construct: a producer writing through an alias; the concrete asset is attached via outlet_events.
with DAG(
    dag_id="exports_producer",
    description="Exports the day's orders; the file it writes is named at run time",
    default_args={"owner": "exports"},
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):

    @task(outlets=[EXPORTS_ALIAS])
    def export_day(*, outlet_events):
        outlet_events[EXPORTS_ALIAS].add(
            Asset(name="export_2026_01_01", uri="s3://lake/exports/2026-01-01"),
            extra={"rows": 42},
        )

    export_day()

# Construct: a consumer scheduled on the alias (resolved to concrete assets once events arrive).
with DAG(
    dag_id="exports_consumer",
    description="Publishes each export as soon as one is written",
    default_args={"owner": "exports"},
    schedule=EXPORTS_ALIAS,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="publish_exports")
