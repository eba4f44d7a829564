"""Orders domain: the shop's orders land in the lake, revenue is computed from them."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, task

ORDERS = Asset("s3://lake/orders.parquet")
FX_RATES = Asset("s3://vendor/fx_rates.csv")
REVENUE = Asset("s3://lake/revenue.parquet")

# Rule paused-producer: the only producer of orders.parquet is paused while daily_revenue consumes it.
# Also a task-level owner (orders-oncall) that differs from the DAG's default owner.
with DAG(
    dag_id="load_orders",
    description="Loads orders from the shop database into the lake",
    default_args={"owner": "data-eng"},
    schedule="0 5 * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["orders", "lake"],
    is_paused_upon_creation=True,
):
    extract = BashOperator(task_id="extract", bash_command="echo extracting orders")
    publish = BashOperator(
        task_id="publish",
        bash_command="echo publishing orders",
        owner="orders-oncall",
        outlets=[ORDERS],
    )
    extract >> publish


# Rule asset-unproduced: compute reads fx_rates.csv, which no DAG produces.
with DAG(
    dag_id="daily_revenue",
    description="Daily revenue by market",
    default_args={"owner": "finance"},
    schedule=[ORDERS],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["finance"],
):

    @task(inlets=[ORDERS, FX_RATES], outlets=[REVENUE])
    def compute():
        return "revenue computed"

    compute() >> EmptyOperator(task_id="notify")
