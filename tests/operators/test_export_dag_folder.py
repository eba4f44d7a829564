"""The export operator's ``dag_folder`` (contract 10.3): ``True`` is the worker's own DAG folder,
a path is kept, and none asks for nothing (the snapshot then says inferred lineage needs it)."""

from __future__ import annotations

import pytest

from airflow_provider_coremodels.operators.export import CoreModelsExportOperator


@pytest.mark.parametrize(
    ("given", "expected"),
    [(None, None), ("", None), ("/opt/airflow/dags", "/opt/airflow/dags"), (True, "/from/the/config")],
)
def test_the_dag_folder_to_infer_from(monkeypatch, given, expected) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", "/from/the/config")
    task = CoreModelsExportOperator(task_id="export", sinks=[], dag_folder=given)
    assert task._dag_folder() == expected
    assert "dag_folder" in task.template_fields
