"""Inferred tables made into URIs outside the sandbox (contract 10.3): each system's URI scheme,
the ``<conn_id>`` placeholder where the connection is unknown, connections read from
``AIRFLOW_CONN_*`` (URI and JSON) with nothing of their secrets kept, and the records each task's
unknowns give."""

from __future__ import annotations

import json

import pytest

from airflow_provider_coremodels.capture.lineage_resolve import (
    Known,
    attach,
    chained,
    environment_lookup,
    table_uri,
)


def table(system: str | None, conn: str, database: str | None, schema: str | None, name: str) -> dict:
    return {"system": system, "conn": conn, "database": database, "schema": schema, "table": name}


@pytest.mark.parametrize(
    ("item", "known", "uri"),
    [
        (table("postgres", "pg", None, "Public", "Orders"), Known("postgres", "db", None, "shop"),
         "postgres://db:5432/shop/public/orders"),
        (table("postgres", "pg", None, "public", "orders"), None, "postgres://<pg>/public/orders"),
        (table("mysql", "my", None, "sales", "orders"), Known("mysql", "h", 3307, "ignored"),
         "mysql://h:3307/sales/orders"),
        (table("snowflake", "sf", None, "RAW", "EVENTS"), Known("snowflake", "acme-eu", None, "ANALYTICS"),
         "snowflake://acme-eu/ANALYTICS/RAW/EVENTS"),
        (table("bigquery", "gcp", "proj", "ds", "t"), Known("bigquery", "proj", None, None),
         "bigquery://proj/ds/t"),
        (table("bigquery", "gcp", None, "ds", "t"), None, "bigquery://<gcp>/ds/t"),
        (table(None, "warehouse", None, None, "t"), None, "sql://<warehouse>/t"),
        # a connection whose type names no system here keeps the operator's word for it
        (table("postgres", "pg", None, "public", "t"), Known(None, "h", 5, "d"), "postgres://h:5/d/public/t"),
    ],
)  # fmt: skip
def test_table_uris(item: dict, known: Known | None, uri: str) -> None:
    assert table_uri(item, known)[0] == uri


def test_connections_from_the_environment_keep_no_secret() -> None:
    lookup = environment_lookup(
        {
            "AIRFLOW_CONN_PG": "postgresql://user:pw@db.internal:6432/shop?sslmode=require",
            "AIRFLOW_CONN_SF": json.dumps(
                {
                    "conn_type": "snowflake",
                    "login": "u",
                    "password": "pw",
                    "extra": {"account": "acme", "database": "DB", "private_key_content": "pw"},
                }
            ),
            "AIRFLOW_CONN_BAD": "::not a uri::",
        }
    )
    assert lookup("pg") == Known("postgres", "db.internal", 6432, "shop")
    assert lookup("sf") == Known("snowflake", "acme", None, "DB")
    assert lookup("missing") is None
    assert "pw" not in repr([lookup("pg"), lookup("sf"), lookup("bad")])


def test_attach_gives_entries_and_one_record_per_task() -> None:
    inferred = {
        "d": {
            "t": {
                "reads": [{"uri": "s3://b/k"}, table("postgres", "pg", None, "public", "a")],
                "writes": [table("postgres", "other", None, "public", "b")],
                "notes": ["its statement cannot be rendered at parse time: 'var' is undefined"],
            }
        }
    }
    known = chained(lambda conn: Known("postgres", "h", None, "db") if conn == "pg" else None)
    rows, records = attach(inferred, "on", known)
    assert rows == [
        {"dag_id": "d", "task_id": "t", "role": "reads", "uri": "postgres://h:5432/db/public/a"},
        {"dag_id": "d", "task_id": "t", "role": "reads", "uri": "s3://b/k"},
        {"dag_id": "d", "task_id": "t", "role": "writes", "uri": "postgres://<other>/public/b"},
    ]
    assert [(r.subject, r.message) for r in records] == [
        ("d.t", "task d.t: its statement cannot be rendered at parse time: 'var' is undefined"),
        ("d.t", "task d.t: connection other is not known to this run, so its inferred tables name <other> "
                "in place of host, port and database"),
    ]  # fmt: skip


def test_statements_no_parser_read_are_one_record() -> None:
    """Without the [lineage] extra a transfer's tables are still read; the statements are not, and
    one record names their tasks. A folder with no such task says nothing."""
    inferred = {
        "d": {"sql": {"unparsed": True}, "more": {"unparsed": True}},
        "e": {"copy": {"reads": [{"uri": "s3://a/b"}], "unparsed": False}},
    }
    rows, records = attach(inferred, "openlineage-sql is not installed (the [lineage] extra)")
    assert rows == [{"dag_id": "e", "task_id": "copy", "role": "reads", "uri": "s3://a/b"}]
    assert [r.message for r in records] == [
        "lineage inference read no SQL: openlineage-sql is not installed (the [lineage] extra); the "
        "statements of 2 tasks were not read, so the tables they read and write are no lineage: d.more, d.sql"
    ]
    assert attach({}, "openlineage-sql is not installed (the [lineage] extra)") == ([], [])
