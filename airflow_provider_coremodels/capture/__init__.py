"""Capture: read an estate from the deployment's own REST API (Airflow 3 /api/v2 or Airflow 2 /api/v1),
or parse a DAG folder into the same artifacts (``dag_folder``)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_coremodels.capture.client import AirflowApiClient, ApiInfo, ApiSource, open_client
    from airflow_provider_coremodels.capture.crawl import Capture, CaptureSummary, capture
    from airflow_provider_coremodels.io.transport import RetryPolicy

#: Imported when first asked for: a DAG folder's parse (``capture.dag_folder``) starts its parse
#: server before it needs the HTTP client and ``requests`` (a twentieth of a second).
_WHERE = {
    "AirflowApiClient": "airflow_provider_coremodels.capture.client",
    "ApiInfo": "airflow_provider_coremodels.capture.client",
    "ApiSource": "airflow_provider_coremodels.capture.client",
    "open_client": "airflow_provider_coremodels.capture.client",
    "Capture": "airflow_provider_coremodels.capture.crawl",
    "CaptureSummary": "airflow_provider_coremodels.capture.crawl",
    "capture": "airflow_provider_coremodels.capture.crawl",
    "RetryPolicy": "airflow_provider_coremodels.io.transport",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


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
