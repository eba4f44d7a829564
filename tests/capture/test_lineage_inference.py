"""Lineage read off operators (contract 10.3), the parts that need no parse: rendering in Jinja's
sandbox, template files held to the DAG folder, object keys cut to what no run's date changes, the
SQL parser's tables, and each operator family on real operator objects of the installed providers
(built, never executed). The GCS-to-BigQuery family uses a stand-in: the google provider is not
installed here, so only its arguments' shape is checked."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

import pytest

from airflow_provider_coremodels.capture import lineage_inference as li

pytest.importorskip("openlineage_sql", reason="the [lineage] extra is not installed")
pytest.importorskip("airflow.providers.amazon", reason="the amazon provider is not installed")


def _read(task: object, folder: str = "/nowhere", dag_file: str | None = None) -> dict:
    found = li._Task()
    li.Reader(folder, dag_file).task(task, found)
    return found.as_json()


def _tables(items: list[dict]) -> list[tuple]:
    return sorted(
        (i.get("uri"),) if "uri" in i else (i["system"], i["conn"], i["database"], i["schema"], i["table"])
        for i in items
    )


@pytest.mark.parametrize(
    ("classes", "conn", "system"),
    [
        (["SQLExecuteQueryOperator"], "postgres_default", "postgres"),
        (["SQLExecuteQueryOperator"], "snowflake_prod", "snowflake"),
        (["SQLExecuteQueryOperator"], "warehouse", None),
        (["RedshiftDataOperator"], "aws_default", "redshift"),
        (["SQLExecuteQueryOperator"], "my-pg-conn", "postgres"),
        (["SQLExecuteQueryOperator"], "pgbouncer", None),  # a word, not a hint
    ],
)
def test_the_system_comes_from_the_class_then_the_connection_id(classes, conn, system) -> None:
    assert li.system_of(classes, conn) == system


def test_rendering_knows_params_and_dates_and_nothing_of_a_run() -> None:
    values = li.context({"schema": "analytics"})
    assert li.render("SELECT * FROM {{ params.schema }}.t WHERE d = '{{ ds }}'", values) == (
        "SELECT * FROM analytics.t WHERE d = '2000-01-01'"
    )
    assert li.render("{{ macros.ds_add(ds, 1) }}", values) == "2000-01-02"
    for dynamic in ("{{ var.value.table }}", "{{ ti.xcom_pull('t') }}", "{{ params.missing }}"):
        with pytest.raises(li.Unrenderable):
            li.render(dynamic, values)
    with pytest.raises(li.Unrenderable):  # the sandbox refuses what reaches Python's internals
        li.render("{{ ''.__class__.__mro__[1].__subclasses__() }}", values)
    with pytest.raises(li.Unrenderable, match="over"):  # bounded, templated or not
        li.render("SELECT 1 " * li.MAX_SQL, values)


def test_a_template_file_is_read_inside_the_dag_folder_only(tmp_path: Path) -> None:
    from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "load.sql").write_text("INSERT INTO b SELECT * FROM a")
    outside = tmp_path.parent / "secret.sql"
    outside.write_text("SELECT * FROM nope")
    task = SQLExecuteQueryOperator(task_id="t", conn_id="postgres_default", sql="sql/load.sql")
    dag_file = str(tmp_path / "dag.py")
    assert li.template_file("sql/load.sql", task, str(tmp_path), dag_file) == "INSERT INTO b SELECT * FROM a"
    with pytest.raises(li.Unrenderable, match="not found in the DAG folder"):
        li.template_file("../secret.sql", task, str(tmp_path), dag_file)
    assert li.template_file("SELECT 1", task, str(tmp_path), dag_file) is None  # a statement, not a file
    with pytest.raises(li.Unrenderable, match="over 10 bytes"):
        li.template_file("sql/load.sql", task, str(tmp_path), dag_file, max_bytes=10)


def test_sql_tables_read_and_written() -> None:
    read, written, errors = li.parse_sql(
        ["CREATE TEMP TABLE tmp AS SELECT * FROM raw.orders; INSERT INTO mart.daily SELECT * FROM tmp"],
        "postgres",
        "public",
    )
    assert sorted(read) == [(None, "raw", "orders")]  # tmp is written here, so it is not read
    assert sorted(written) == [(None, "mart", "daily"), (None, "public", "tmp")]
    assert errors == []
    _, _, errors = li.parse_sql(["SELEC nonsense FROM"], "postgres", None)
    assert errors


def test_sql_execute_query_operator() -> None:
    from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

    task = SQLExecuteQueryOperator(
        task_id="t",
        conn_id="postgres_dw",
        params={"target": "mart"},
        sql=[
            "DELETE FROM {{ params.target }}.daily",
            "INSERT INTO {{ params.target }}.daily SELECT * FROM src",
        ],
    )
    found = _read(task)
    assert found["operator"] == "BaseSQLOperator"
    assert _tables(found["reads"]) == [("postgres", "postgres_dw", None, "public", "src")]
    assert _tables(found["writes"]) == [("postgres", "postgres_dw", None, "mart", "daily")]
    assert found["notes"] == []


def test_an_unrenderable_statement_is_a_note() -> None:
    from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

    task = SQLExecuteQueryOperator(task_id="t", conn_id="x", sql="DELETE FROM {{ var.value.t }}")
    found = li.Reader("/nowhere", None).dag(type("D", (), {"tasks": [task]})())
    assert found["t"]["reads"] == found["t"]["writes"] == []
    assert found["t"]["notes"] == ["its statement cannot be rendered at parse time: 'var' is undefined"]


def test_transfer_operators_of_the_amazon_provider() -> None:
    from airflow.providers.amazon.aws.transfers.redshift_to_s3 import RedshiftToS3Operator
    from airflow.providers.amazon.aws.transfers.s3_to_redshift import S3ToRedshiftOperator
    from airflow.providers.amazon.aws.transfers.s3_to_sql import S3ToSqlOperator
    from airflow.providers.amazon.aws.transfers.sql_to_s3 import SqlToS3Operator

    copy = S3ToRedshiftOperator(
        task_id="c", s3_bucket="lake", s3_key="raw/{{ ds }}/orders.csv", schema="staging", table="Orders",
        redshift_conn_id="rs",
    )  # fmt: skip
    found = _read(copy)
    assert _tables(found["reads"]) == [("s3://lake/raw/",)]  # the key's date is no object's name
    assert _tables(found["writes"]) == [("redshift", "rs", None, "staging", "Orders")]

    unload = RedshiftToS3Operator(
        task_id="u", s3_bucket="out", s3_key="orders", redshift_conn_id="rs",
        select_query="SELECT * FROM staging.orders o JOIN d ON 1=1",
    )  # fmt: skip
    found = _read(unload)
    assert _tables(found["reads"]) == [
        ("redshift", "rs", None, "public", "d"),
        ("redshift", "rs", None, "staging", "orders"),
    ]
    assert _tables(found["writes"]) == [("s3://out/orders",)]

    to_s3 = SqlToS3Operator(
        task_id="q", query="SELECT * FROM sales", s3_bucket="b", s3_key="k.csv", sql_conn_id="mysql_src",
    )  # fmt: skip
    found = _read(to_s3)
    assert _tables(found["reads"]) == [("mysql", "mysql_src", None, None, "sales")]
    assert _tables(found["writes"]) == [("s3://b/k.csv",)]

    from_s3 = S3ToSqlOperator(
        task_id="l", s3_bucket="b", s3_key="k.csv", table="target", sql_conn_id="postgres_x", parser=print,
    )  # fmt: skip
    found = _read(from_s3)
    assert _tables(found["reads"]) == [("s3://b/k.csv",)]
    assert _tables(found["writes"]) == [("postgres", "postgres_x", None, "public", "target")]


def test_a_gcs_to_bigquery_load_by_its_arguments() -> None:
    """A stand-in with the operator's argument names: the google provider is not installed here."""

    class GCSToBigQueryOperator:
        task_id = "load"
        params: ClassVar[dict] = {}
        bucket = "landing"
        source_objects: ClassVar[list[str]] = ["events/{{ ds_nodash }}/*.json"]
        destination_project_dataset_table = "proj.analytics.events"
        gcp_conn_id = "google_cloud_default"

    found = _read(GCSToBigQueryOperator())
    assert _tables(found["reads"]) == [("gs://landing/events/",)]
    assert _tables(found["writes"]) == [("bigquery", "google_cloud_default", "proj", "analytics", "events")]


def test_an_operator_that_is_no_sql_or_transfer_says_nothing() -> None:
    from airflow.providers.standard.operators.python import PythonOperator

    task = PythonOperator(task_id="p", python_callable=lambda: "INSERT INTO hidden SELECT 1")
    assert li.Reader("/nowhere", None).dag(type("D", (), {"tasks": [task]})()) == {}


def test_the_server_keeps_only_what_is_well_formed() -> None:
    answer = {
        "t": {
            "operator": "X",
            "reads": [{"uri": "s3://a/b"}, {"uri": 3}, "junk", {"table": "x" * 2000, "conn": None}],
            "writes": "not a list",
            "notes": ["fine", 5],
        },
        7: {"reads": []},
        "u": "junk",
    }
    kept = li.checked(answer)
    assert list(kept) == ["t"]
    assert kept["t"]["reads"][0] == {"uri": "s3://a/b"}
    assert len(kept["t"]["reads"][1]["table"]) == li.MAX_NAME
    assert kept["t"]["writes"] == [] and kept["t"]["notes"] == ["fine"]
    assert li.checked("junk") == {}


def test_without_the_sql_parser_a_statement_is_unread_and_a_transfer_still_read(monkeypatch) -> None:
    """``sys.modules[name] = None`` makes the import fail as an absent package does."""
    from airflow.providers.amazon.aws.transfers.s3_to_redshift import S3ToRedshiftOperator
    from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator

    monkeypatch.setitem(sys.modules, "openlineage_sql", None)
    assert li.available() == "openlineage-sql is not installed (the [lineage] extra)"
    tasks = [
        SQLExecuteQueryOperator(task_id="sql", conn_id="pg", sql="INSERT INTO a SELECT * FROM b"),
        S3ToRedshiftOperator(task_id="copy", s3_bucket="b", s3_key="k", schema="s", table="t"),
    ]
    found = li.Reader("/nowhere", None).dag(type("D", (), {"tasks": tasks})())
    assert found["sql"]["unparsed"] is True and found["sql"]["reads"] == found["sql"]["writes"] == []
    assert found["copy"]["unparsed"] is False
    assert _tables(found["copy"]["reads"]) == [("s3://b/k",)]
