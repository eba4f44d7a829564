"""The operators take ``openlineage://`` among their sinks, as they take any sink URI.

Each operator's ``execute`` runs in this process against real parts: the export reads a real
local (replayed Airflow 2) REST API through a connection given as ``AIRFLOW_CONN_*``, and the
client's HTTP transport posts to a real local receiver. The summary they return (the XCom)
says per sink how many events went out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli.test_merge_command import dag, snapshot
from support.helpers import FIXTURES
from support.openlineage_kit import API_KEY, Receiver, http_transport
from support.replay_server import AirflowV1ReplayServer

from airflow_provider_coremodels.compat import AirflowException
from airflow_provider_coremodels.operators.export import CoreModelsExportOperator
from airflow_provider_coremodels.operators.merge import CoreModelsMergeOperator


def test_the_export_operator_sends_the_events(receiver: Receiver) -> None:
    os.environ.update(http_transport(receiver.base_url))
    with AirflowV1ReplayServer(FIXTURES / "airflow2") as airflow:
        os.environ["AIRFLOW_CONN_REPLAY"] = json.dumps(
            {"conn_type": "airflow_api", "host": airflow.base_url, "login": airflow.username,
             "password": airflow.password}
        )  # fmt: skip
        operator = CoreModelsExportOperator(
            task_id="export_estate", airflow_api_conn_id="replay", sinks="openlineage://?events=job"
        )
        summary = operator.execute({})  # type: ignore[arg-type]
    assert summary["sinks"] == [
        {"sink": "openlineage://?events=job", "unchanged": False, "findingsChanged": False,
         "written": ["openlineage://?events=job"], "baselineReplaced": False, "sent": 5}
    ]  # fmt: skip
    assert summary["unchanged"] is False  # as with an HTTP endpoint: nothing to compare with
    events = receiver.events
    assert [e["job"]["name"] for e in events] == [
        "backfill_customers", "daily_revenue", "legacy_cleanup", "load_orders", "sync_crm",
    ]  # fmt: skip
    assert all(e["schemaURL"].endswith("#/$defs/JobEvent") for e in events)


def test_the_merge_operator_names_each_deployment(receiver: Receiver, tmp_path: Path) -> None:
    os.environ.update(http_transport(receiver.base_url))
    etl = snapshot(tmp_path / "etl.json", "etl", [dag("load_orders")],
                   [{"uri": "s3://lake/orders", "producing_tasks": [{"dag_id": "load_orders"}]}])  # fmt: skip
    bi = snapshot(tmp_path / "bi.json", "bi", [dag("daily_revenue", schedule="Asset")],
                  [{"uri": "s3://lake/orders", "scheduled_dags": [{"dag_id": "daily_revenue"}]}])  # fmt: skip
    operator = CoreModelsMergeOperator(
        task_id="merge",
        sources=[str(etl), str(bi)],
        sinks=[str(tmp_path / "merged"), "openlineage://?namespace=etl=airflow-etl&namespace=bi=airflow-bi"],
    )
    summary = operator.execute({})  # type: ignore[arg-type]
    assert [(s["sink"], s.get("sent")) for s in summary["sinks"]] == [
        (str(tmp_path / "merged"), None),
        ("openlineage://?namespace=etl=airflow-etl&namespace=bi=airflow-bi", 2),
    ]
    sent = [(e["job"]["namespace"], e["job"]["name"], e["inputs"], e["outputs"]) for e in receiver.events]
    assert sent == [
        ("airflow-bi", "daily_revenue", [{"namespace": "s3://lake", "name": "orders", "facets": {},
                                          "inputFacets": {}}], []),
        ("airflow-etl", "load_orders", [], [{"namespace": "s3://lake", "name": "orders", "facets": {},
                                             "outputFacets": {}}]),
    ]  # fmt: skip


def test_a_failed_send_fails_the_task_without_the_key(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The task fails naming the sink, after every other sink; the error line says why."""
    etl = snapshot(tmp_path / "etl.json", "etl", [dag("load_orders")], [])
    with Receiver(status=500) as refusing:
        os.environ.update(http_transport(refusing.base_url))
        operator = CoreModelsMergeOperator(task_id="merge", sources=[str(etl)], sinks="openlineage://")
        with pytest.raises(AirflowException) as failure:
            operator.execute({})  # type: ignore[arg-type]
    message = str(failure.value)
    said = "sink openlineage://: the OpenLineage http transport failed after 0 of 1 events"
    assert message.startswith(said)
    logged = "".join(capfd.readouterr())  # the task log: Airflow's logging writes it to stderr here
    assert said in logged
    assert API_KEY not in message + logged
