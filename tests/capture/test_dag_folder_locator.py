"""Where a DAG file declares what SARIF points at: the parse server's AST locator (``declarations``)
and the line of an import error in the DAG file itself (``error_line``). Pure functions of the
file's text: no Airflow, no parse."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

import pytest

from airflow_provider_coremodels.capture.dag_folder_worker import declarations, error_line


def declared(source: str, dag_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
    return declarations(ast.parse(textwrap.dedent(source).lstrip()), dag_ids)


PRODUCER = """
    from airflow.sdk import DAG, Asset
    from airflow.providers.standard.operators.empty import EmptyOperator

    with DAG("load_orders", schedule="@daily"):
        EmptyOperator(
            task_id="publish",
            outlets=[Asset("s3://lake/orders"), Asset(name="orders_v2", uri="s3://lake/orders_v2")],
        )
        EmptyOperator(task_id="check", inlets=[Asset("s3://lake/raw")])
"""
CONSUMER = """
    from airflow.sdk import DAG, Asset

    ORDERS = "s3://lake/orders"
    FX = Asset("s3://vendor/fx")

    with DAG(
        dag_id="daily_revenue",
        schedule=(Asset(ORDERS)
                  | FX),
    ):
        pass
"""
LINKS = """
    from airflow.sdk import DAG
    from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
    from airflow.providers.standard.sensors.external_task import ExternalTaskSensor

    with DAG("orchestrate", schedule=None):
        ExternalTaskSensor(task_id="wait", external_dag_id="load_orders")
        TriggerDagRunOperator(
            task_id="kick",
            trigger_dag_id="daily_revenue",
        )
"""
DECORATED = """
    from airflow.sdk import Asset, asset, dag, task

    @dag(schedule=[Asset.ref(name="orders")])
    def flow():
        @task(outlets=[Asset("s3://lake/flow")])
        def make():
            pass

        make()

    flow()

    @asset(schedule="@daily", uri="s3://lake/fx")
    def fx_rates():
        pass
"""


@pytest.mark.parametrize(
    ("source", "dag_id", "kind", "name", "line"),
    [
        (PRODUCER, "load_orders", "outlets", "s3://lake/orders", 7),
        (PRODUCER, "load_orders", "outlets", "orders_v2", 7),  # by name
        (PRODUCER, "load_orders", "outlets", "s3://lake/orders_v2", 7),  # and by URI
        (PRODUCER, "load_orders", "inlets", "s3://lake/raw", 9),
        (PRODUCER, "load_orders", "tasks", "publish", 5),
        (PRODUCER, "load_orders", "tasks", "check", 9),
        (CONSUMER, "daily_revenue", "schedule", "s3://lake/orders", 8),  # a name bound to a literal
        (CONSUMER, "daily_revenue", "schedule", "s3://vendor/fx", 9),  # a name bound to an Asset
        (LINKS, "orchestrate", "sensors", "load_orders", 6),
        (LINKS, "orchestrate", "triggers", "daily_revenue", 9),  # the line naming the target
        (DECORATED, "flow", "schedule", "orders", 3),  # Asset.ref(name=...)
        (DECORATED, "flow", "outlets", "s3://lake/flow", 5),  # @task(outlets=...)
        (DECORATED, "flow", "tasks", "make", 5),
        (DECORATED, "fx_rates", "outlets", "fx_rates", 13),  # @asset: the function is its asset
        (DECORATED, "fx_rates", "outlets", "s3://lake/fx", 13),
    ],
)  # fmt: skip
def test_literal_declarations_are_found_at_their_line(
    source: str, dag_id: str, kind: str, name: str, line: int
) -> None:
    assert declared(source)[dag_id][kind][name] == line


def test_each_dag_of_a_file_has_its_own_declarations_and_its_own_line() -> None:
    found = declared(PRODUCER + CONSUMER.replace("from airflow.sdk import DAG, Asset", ""))
    assert (found["load_orders"]["line"], found["daily_revenue"]["line"]) == (4, 16)
    assert "s3://lake/orders" not in found["daily_revenue"].get("outlets", {})
    assert "schedule" not in found["load_orders"]  # "@daily" names no asset


def test_tasks_given_a_dags_variable_are_that_dags() -> None:
    found = declared(
        """
        from airflow.sdk import DAG, Asset
        from airflow.providers.standard.operators.empty import EmptyOperator

        first = DAG("first", schedule=None)
        second = DAG("second", schedule=None)
        EmptyOperator(task_id="a", dag=first, outlets=[Asset("s3://a")])
        EmptyOperator(task_id="b", dag=second, outlets=[Asset("s3://b")])
        with second:
            EmptyOperator(task_id="c", inlets=[Asset("s3://a")])
        """
    )
    assert found["first"] == {"line": 4, "outlets": {"s3://a": 6}, "tasks": {"a": 6}}
    assert found["second"]["outlets"] == {"s3://b": 7}
    assert found["second"]["inlets"] == {"s3://a": 9}


@pytest.mark.parametrize(
    ("source", "dag_ids", "expected"),
    [
        (  # one computed outlet: its line stands for every asset it may name
            """
            from airflow.sdk import DAG, Asset
            from airflow.providers.standard.operators.empty import EmptyOperator
            from include.lake import bucket

            with DAG("load", schedule=None):
                EmptyOperator(task_id="a", outlets=[Asset(f"s3://{bucket()}/orders")])
            """,
            ["load"],
            {"line": 5, "tasks": {"a": 6}, "computed": {"outlets": 6}},
        ),
        (  # two computed outlets: which names what is unknown, so the DAG's line stands for them
            """
            from airflow.sdk import DAG, Asset
            from airflow.providers.standard.operators.empty import EmptyOperator
            from include.lake import BUCKET, outlets_for

            with DAG("load", schedule=None):
                EmptyOperator(task_id="a", outlets=[Asset(BUCKET + "/a")])
                EmptyOperator(task_id="b", outlets=outlets_for("b"))
            """,
            ["load"],
            {"line": 5, "tasks": {"a": 6, "b": 7}},
        ),
        (  # a schedule on an imported asset, a trigger to a computed DAG id
            """
            from airflow.sdk import DAG
            from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
            from include.assets import ORDERS

            with DAG("report", schedule=[ORDERS]):
                TriggerDagRunOperator(task_id="next", trigger_dag_id=f"{'pub'}lish")
            """,
            ["report"],
            {"line": 5, "tasks": {"next": 6}, "computed": {"schedule": 5, "triggers": 6}},
        ),
        (  # a factory: the DAGs the parse found, whose ids no literal gives, are its
            """
            from airflow.sdk import DAG, Asset
            from airflow.providers.standard.operators.empty import EmptyOperator

            for team in ("a", "b"):
                with DAG(f"export_{team}", schedule=None):
                    EmptyOperator(task_id="out", outlets=[Asset("s3://exports/" + team)])
            """,
            ["export_a", "export_b"],
            {
                "line": 5,
                "tasks": {"out": 6},
                "computed": {"outlets": 6},
            },
        ),
    ],
)  # fmt: skip
def test_computed_declarations(source: str, dag_ids: list[str], expected: dict[str, Any]) -> None:
    found = declared(source, dag_ids)
    assert all(found[dag_id] == expected for dag_id in dag_ids), found


def test_a_dag_no_syntax_shows_has_no_line() -> None:
    """A DAG made by a helper in another module: its file holds no DAG(...) to point at."""
    found = declared("from include.factory import make\nmake('built')\n", ["built"])
    assert found == {"built": {}}


TRACE = """Traceback (most recent call last):
  File "/dags/report.py", line 5, in <module>
    from include.helpers import REVENUE
  File "/dags/include/helpers.py", line 2, in <module>
    raise RuntimeError("helper broke")
RuntimeError: helper broke"""
SYNTAX = """Traceback (most recent call last):
  File "<frozen importlib._bootstrap>", line 241, in _call_with_frames_removed
  File "/dags/report.py", line 3
    def (:
        ^
SyntaxError: invalid syntax"""
IN_HELPER = """Traceback (most recent call last):
  File "/dags/report.py", line 5, in <module>
    from include.helpers import REVENUE
  File "/dags/include/helpers.py", line 2
    def (:
        ^
SyntaxError: invalid syntax"""
NESTED = """Traceback (most recent call last):
  File "/dags/report.py", line 9, in <module>
    build()
  File "/dags/report.py", line 7, in build
    helper()
  File "/dags/include/helpers.py", line 2, in helper
    raise RuntimeError("x")
RuntimeError: x"""


@pytest.mark.parametrize(
    ("trace", "line"),
    [
        (TRACE, 5),  # raised in a helper the file imports: the file's import line
        (SYNTAX, 3),  # the file's own SyntaxError: its line
        (IN_HELPER, 5),  # a SyntaxError in the helper: the file's import of it
        (NESTED, 7),  # the innermost frame in the file
        ("RuntimeError: no traceback", None),
        (TRACE.replace("/dags/report.py", "/dags/other.py"), None),
    ],
)  # fmt: skip
def test_an_import_errors_line_is_its_innermost_frame_in_the_file(trace: str, line: int | None) -> None:
    assert error_line(trace, "/dags/report.py") == line
