"""An @asset chain: each @asset is a one-task DAG that materialises the asset of the same name."""

from __future__ import annotations

from airflow.sdk import asset


# Construct: @asset upstream, paused at creation. An @asset takes no owner: its one task has the
# deployment's default owner ([operators] default_owner), so dag-no-owner reports it unless that is set.
@asset(
    uri="s3://lake/raw_orders",
    schedule="@daily",
    is_paused_upon_creation=True,
    description="Pulls the day's orders into the lake",
    tags=["assets"],
)
def raw_orders():
    """Pull the day's orders into the lake."""
    return {"rows": 42}


# Construct: @asset downstream, scheduled on the upstream @asset; its `raw_orders` argument is an inlet.
@asset(
    uri="s3://lake/clean_orders",
    schedule=raw_orders,
    description="Deduplicates raw_orders",
    tags=["assets"],
)
def clean_orders(raw_orders):
    """Deduplicate raw_orders (the argument resolves to the upstream asset at run time)."""
    print(f"cleaning {raw_orders.uri}")
