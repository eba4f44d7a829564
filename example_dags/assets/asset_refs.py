"""Consumers scheduled on asset references (Asset.ref), resolved by name or URI."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

# Construct: schedule on Asset.ref(name=...) - refers to an asset declared in another file.
with DAG(
    dag_id="orders_by_name_ref",
    description="Reports on orders_sync, found by the asset's name",
    default_args={"owner": "analytics"},
    schedule=Asset.ref(name="orders_sync"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="report")

# Construct: schedule on Asset.ref(uri=...) - same asset, referenced by URI. Reference URIs are matched
# verbatim against the stored (normalised) URI, so write it without the trailing "/".
with DAG(
    dag_id="orders_by_uri_ref",
    description="Reports on orders_sync, found by the asset's URI",
    default_args={"owner": "analytics"},
    schedule=Asset.ref(uri="s3://lake/orders_sync"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="report")

# Construct: schedule on Asset.ref(name=...) of an asset that is only created by an alias event at run time.
with DAG(
    dag_id="export_by_name_ref",
    description="Archives the 2026-01-01 export, once the alias has written it",
    default_args={"owner": "exports"},
    schedule=Asset.ref(name="export_2026_01_01"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="archive")

# Construct: a reference that never resolves - Airflow stores the asset as "s3://lake/orders_sync" and
# matches a reference's URI as written, so this DAG never runs; the audit's lossiness says so.
with DAG(
    dag_id="orders_by_slash_ref",
    description="Reports on orders_sync, but names it with a trailing slash",
    default_args={"owner": "analytics"},
    schedule=Asset.ref(uri="s3://lake/orders_sync/"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["assets"],
):
    EmptyOperator(task_id="report")
