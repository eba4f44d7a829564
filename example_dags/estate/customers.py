"""Customers domain: CRM sync, a one-off backfill and a weekly report."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, task

CUSTOMERS = Asset("s3://lake/customers.parquet")

# Rule multiple-producers (active side): customers.parquet is produced here and by backfill_customers.
# Also a mapped task (sync_account) expanded over list_accounts' output.
with DAG(
    dag_id="sync_crm",
    description="Syncs CRM accounts",
    default_args={"owner": "crm-team"},
    schedule=timedelta(hours=6),
    start_date=datetime(2026, 1, 1),
    catchup=False,
):

    @task
    def list_accounts():
        return ["acme", "globex", "initech"]

    @task
    def sync_account(account):
        return f"synced {account}"

    synced = sync_account.expand(account=list_accounts())
    synced >> EmptyOperator(task_id="publish_customers", outlets=[CUSTOMERS])


# Rule multiple-producers (paused side): a paused second producer of customers.parquet.
with DAG(
    dag_id="backfill_customers",
    description="One-off customer backfill",
    default_args={"owner": "crm-team"},
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    is_paused_upon_creation=True,
):
    EmptyOperator(task_id="backfill", outlets=[CUSTOMERS])


# Rule multiple-owners: Airflow derives DAG owners from task owners (analytics + crm-team);
# also an asset-scheduled consumer of customers.parquet.
with DAG(
    dag_id="customer_report",
    description="Weekly customer report",
    schedule=[CUSTOMERS],
    start_date=datetime(2026, 1, 1),
    catchup=False,
):
    build = EmptyOperator(task_id="build", owner="analytics")
    send = EmptyOperator(task_id="send", owner="crm-team")
    build >> send
