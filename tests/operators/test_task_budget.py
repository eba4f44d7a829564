"""The export operator's capture budget fits inside the task's ``execution_timeout``.

A capture that cannot finish must fail the task saying why before Airflow's timeout ends it with
no reason. The operator runs in this process against a real TCP server that accepts and never
answers (``SilentServer``): its capture gives up at the budget the task's timeout allows, and the
error names that budget. Airflow's own timeout is not armed here (``execute`` is called directly),
so what is checked is the budget the capture was given, and that it was spent and said.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.listeners import SilentServer

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.compat import AirflowException
from airflow_provider_coremodels.operators.export import CoreModelsExportOperator, task_budget


@pytest.mark.parametrize(
    ("timeout", "budget"),
    [
        (None, defaults.RETRY_BUDGET),  # no timeout: the whole 30 minutes
        (timedelta(minutes=45), 1800.0),  # the example DAG's: the budget fits whole
        (timedelta(minutes=30), 1350.0),  # the federation DAG's: three quarters of it
        (timedelta(seconds=4), 3.0),
    ],
)
def test_the_budget_is_below_the_task_s_timeout(timeout: timedelta | None, budget: float) -> None:
    assert task_budget(timeout) == budget
    if timeout is not None:
        assert task_budget(timeout) < timeout.total_seconds()


def test_the_example_dag_s_capture_gives_up_before_its_task_times_out() -> None:
    """What example_dags/coremodels_export.py sets, read from the DAG itself."""
    import runpy

    from support.helpers import REPO

    dag = runpy.run_path(str(REPO / "example_dags" / "coremodels_export.py"))["dag"]
    task = dag.get_task("export_estate")
    assert (
        task_budget(task.execution_timeout) == defaults.RETRY_BUDGET < task.execution_timeout.total_seconds()
    )
    assert task.retries >= 1


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    with SilentServer() as server:
        connection = {"conn_type": "airflow_api", "host": f"http://{server.address}", "login": "u",
                      "password": "p"}  # fmt: skip
        os.environ["AIRFLOW_CONN_SILENT_API"] = json.dumps(connection)
        yield server
        del os.environ["AIRFLOW_CONN_SILENT_API"]


def test_a_capture_that_cannot_finish_fails_the_task_at_the_budget_its_timeout_allows(
    silent: SilentServer, tmp_path: Path
) -> None:
    operator = CoreModelsExportOperator(
        task_id="export_estate",
        airflow_api_conn_id="silent_api",
        sinks=[str(tmp_path / "sink")],
        metrics=False,
        execution_timeout=timedelta(seconds=4),
    )
    with pytest.raises(AirflowException, match=r"budget of 3 s"):
        operator.execute({})  # type: ignore[arg-type]
    assert silent.accepted >= 1 and not (tmp_path / "sink").exists()
