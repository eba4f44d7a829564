"""Export this Airflow estate to CoreModels every day.

Connections (UI, or AIRFLOW_CONN_* environment variables):
- ``airflow_api``: type ``airflow_api``, the deployment's own REST API (host, login, password).
- ``coremodels``: type ``coremodels``, only for an http(s) sink: host = the endpoint, password = the token.

The sinks come from the Airflow Variable ``coremodels_sinks`` (comma-separated: directories,
``s3://bucket/prefix``, ``https://`` endpoints), defaulting to /tmp/coremodels-out. The Variable
``coremodels_waivers``, if set, is the path of a waiver file (YAML or JSON) of accepted findings.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_coremodels.operators.export import CoreModelsExportOperator

with DAG(
    dag_id="coremodels_export",
    description="Capture, audit and export this Airflow estate to CoreModels",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={"owner": "platform"},
    tags=["coremodels", "governance"],
) as dag:
    CoreModelsExportOperator(
        task_id="export_estate",
        airflow_api_conn_id="airflow_api",
        sinks="{{ var.value.get('coremodels_sinks', '/tmp/coremodels-out') }}",
        fail_on="never",
        waivers="{{ var.value.get('coremodels_waivers', '') }}",
    )
