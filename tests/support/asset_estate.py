"""The asset estate (example_dags/assets) as its DAG files declare it: what a capture must find."""

from __future__ import annotations

LAKE = "s3://lake"
#: Written by hand from the DAG files in example_dags/assets: (dependent, dependsOn, via), where a
#: "dag:" or "asset:" prefix names each end's kind.
EXPECTED_ASSET_LINEAGE = {
    # @asset chain: the DAG raw_orders produces the asset raw_orders (by name; the URI is its identity)
    ("asset:s3://lake/raw_orders", "dag:raw_orders", ""),
    ("dag:clean_orders", "asset:s3://lake/raw_orders", ""),
    ("asset:s3://lake/clean_orders", "dag:clean_orders", ""),
    # a plain DAG named like its asset, a direct consumer, two Asset.ref consumers, an inlet reader
    ("asset:s3://lake/orders_sync", "dag:orders_sync", ""),
    ("dag:orders_sync_consumer", "asset:s3://lake/orders_sync", ""),
    ("dag:orders_by_name_ref", "asset:s3://lake/orders_sync", "ref"),
    ("dag:orders_by_uri_ref", "asset:s3://lake/orders_sync", "ref"),
    ("dag:orders_audit", "asset:s3://lake/orders_sync", "inlet"),
    # the alias: its writer (from the asset event), its consumer, and a ref to what it wrote
    ("asset:s3://lake/exports/2026-01-01", "dag:exports_producer", "alias:daily_exports"),
    ("dag:exports_consumer", "asset:s3://lake/exports/2026-01-01", "alias:daily_exports"),
    ("dag:export_by_name_ref", "asset:s3://lake/exports/2026-01-01", "ref"),
    # the watched file
    ("dag:inbox_orders_loader", "asset:file:///tmp/coremodels-inbox/orders.csv", ""),
    # (prices & fx_rates) | manual_prices, and an asset-or-time schedule
    ("asset:s3://lake/prices", "dag:market_data", ""),
    ("asset:s3://lake/fx_rates", "dag:market_data", ""),
    ("dag:valuation", "asset:s3://lake/prices", ""),
    ("dag:valuation", "asset:s3://lake/fx_rates", ""),
    ("dag:valuation", "asset:s3://lake/manual_prices", ""),
    ("dag:price_snapshot", "asset:s3://lake/prices", ""),
    # the conflicts' winners (sales_feed and inventory_v2 declare refused assets: no edge)
    ("asset:s3://lake/sales", "dag:sales_ledger", ""),
    ("asset:s3://lake/inventory/v1", "dag:inventory_v1", ""),
    # the state store: produced, and read by the same task, without a loop
    ("asset:s3://lake/state/orders_watermark.json", "dag:orders_incremental", ""),
}
