"""A leftover DAG nobody claims."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

# Rules dag-no-owner + dag-no-description: no owner set (defaults to "airflow") and no description.
with DAG(
    dag_id="legacy_cleanup",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
):
    EmptyOperator(task_id="cleanup")
