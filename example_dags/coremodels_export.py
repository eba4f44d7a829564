"""Export this Airflow estate to CoreModels every day.

Connections (UI, or AIRFLOW_CONN_* environment variables):
- ``airflow_api_default``: type ``airflow_api``, the deployment's own REST API (host, login,
  password), read by a user with read-only access (the Viewer role is enough).
- ``coremodels_default``: type ``coremodels``, only for an http(s) sink: host = the endpoint,
  password = the token; pass ``coremodels_conn_id="coremodels_default"`` to the operator.

The sinks come from the Airflow Variable ``coremodels_sinks`` (comma-separated: directories,
``s3://bucket/prefix``, ``https://`` endpoints). For the CoreModels page of the Airflow UI, make
one of them the directory the API server reads (``[coremodels] ui_snapshot_dir``) on a volume
the workers share. Unset, the export audits and logs, but stores nothing, and says so. The
Variable ``coremodels_waivers``, if set, is the path of a waiver file (YAML or JSON), and
``coremodels_rules`` the path of the team's rules file (docs/findings.md, "The team's own rules").

Safe to copy as it is: one run at a time, stopped after 45 minutes. The capture retries transient
failures itself and gives up by itself, saying why, within its 30-minute budget (the operator
gives it at most three quarters of the task's ``execution_timeout``), so a deployment that cannot
be captured fails the task with a reason before the timeout; the task is then tried once more,
30 seconds later (a deployment or a sink back from a restart). It follows the conventions
docs/findings.md recommends (an owner, a description, a ``team:`` tag, a retry, a schedule, one
run at a time), so the rules files there pass it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_coremodels.operators.export import CoreModelsExportOperator

with DAG(
    dag_id="coremodels_export",
    description="Capture, audit and export this Airflow estate to CoreModels",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={
        "owner": "platform",
        "retries": 1,
        "retry_delay": timedelta(seconds=30),
        "execution_timeout": timedelta(minutes=45),
    },
    tags=["coremodels", "governance", "team:platform"],
) as dag:
    CoreModelsExportOperator(
        task_id="export_estate",
        airflow_api_conn_id="airflow_api_default",
        sinks="{{ var.value.get('coremodels_sinks', '') }}",
        fail_on="never",
        waivers="{{ var.value.get('coremodels_waivers', '') }}",
        rules="{{ var.value.get('coremodels_rules', '') }}",
    )
