"""Capture: read an estate from the deployment's own REST API (Airflow 3 /api/v2 or Airflow 2 /api/v1),
or parse a DAG folder into the same artifacts (``dag_folder``)."""

from __future__ import annotations

from airflow_provider_coremodels.capture.client import AirflowApiClient, ApiInfo, ApiSource, open_client
from airflow_provider_coremodels.capture.crawl import Capture, CaptureSummary, capture
from airflow_provider_coremodels.io.transport import RetryPolicy

__all__ = [
    "AirflowApiClient",
    "ApiInfo",
    "ApiSource",
    "Capture",
    "CaptureSummary",
    "RetryPolicy",
    "capture",
    "open_client",
]
