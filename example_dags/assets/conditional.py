"""Conditional asset scheduling with & (all) and | (any)."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, AssetOrTimeSchedule, CronTriggerTimetable

PRICES = Asset(name="prices", uri="s3://lake/prices")
FX_RATES = Asset(name="fx_rates", uri="s3://lake/fx_rates")
MANUAL_PRICES = Asset(name="manual_prices", uri="s3://lake/manual_prices")

# Construct: producers of two of the three; manual price overrides are dropped by analysts, and no DAG
# produces them (asset-unproduced, where the detail says the asset is only an alternative input).
with DAG(
    dag_id="market_data",
    description="Loads prices and FX rates",
    default_args={"owner": "markets"},
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="load_prices", outlets=[PRICES])
    EmptyOperator(task_id="load_fx", outlets=[FX_RATES])

# Construct: schedule=(A & B) | C - run when prices AND fx_rates are both updated, OR manual_prices is.
with DAG(
    dag_id="valuation",
    description="Revalues the book when prices and FX rates are both fresh, or on a manual override",
    default_args={"owner": "markets"},
    schedule=(PRICES & FX_RATES) | MANUAL_PRICES,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="revalue")

# Construct: AssetOrTimeSchedule - run on every prices update and also every day at 06:00 UTC.
with DAG(
    dag_id="price_snapshot",
    description="Snapshots prices on every update and daily at 06:00 UTC",
    default_args={"owner": "markets"},
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("0 6 * * *", timezone="UTC"),
        assets=PRICES,
    ),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="snapshot")
