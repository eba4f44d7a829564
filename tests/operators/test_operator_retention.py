"""The operators' history retention arguments: checked before anything is opened or captured, and
handed to the sinks. (What the sinks then remove is tests/sinks/test_retention.py; an export with
retention end to end, tests/cli/test_export_command.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_provider_coremodels.compat import AirflowException
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.operators.export import CoreModelsExportOperator
from airflow_provider_coremodels.operators.merge import CoreModelsMergeOperator
from airflow_provider_coremodels.sinks.history import Retention


def export_operator(tmp_path: Path, **kwargs: Any) -> CoreModelsExportOperator:
    return CoreModelsExportOperator(task_id="export", sinks=[str(tmp_path / "out")], **kwargs)


def merge_operator(tmp_path: Path, **kwargs: Any) -> CoreModelsMergeOperator:
    return CoreModelsMergeOperator(
        task_id="merge", sources=[str(tmp_path / "a")], sinks=[str(tmp_path / "out")], **kwargs
    )


@pytest.mark.parametrize("make", [export_operator, merge_operator], ids=["export", "merge"])
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"history_keep": -1}, "history_keep must be a whole number, 0 or more"),
        ({"history_keep": 2.5}, "history_keep must be a whole number"),
        ({"history_max_age_days": 0}, "history_max_age_days must be a positive number of days"),
    ],
)
def test_a_rule_that_makes_no_sense_fails_the_task_before_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any, kwargs: dict[str, Any], message: str
) -> None:
    opened: list[Any] = []
    monkeypatch.setattr(
        "airflow_provider_coremodels.jobs.export.open_sinks", lambda *a, **k: opened.append(k)
    )
    with pytest.raises(AirflowException, match=message):
        make(tmp_path, **kwargs).execute({})
    assert opened == [] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("make", [export_operator, merge_operator], ids=["export", "merge"])
def test_the_rule_reaches_the_sinks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any) -> None:
    """Stopped right after the sinks are opened (nothing here serves an API to capture)."""
    opened: list[dict[str, Any]] = []

    def open_sinks(uris: Any, **kwargs: Any) -> Any:
        opened.append(kwargs)
        raise UsageError("stop here")

    monkeypatch.setattr("airflow_provider_coremodels.jobs.export.open_sinks", open_sinks)
    with pytest.raises(AirflowException, match="stop here"):
        make(tmp_path, history_keep=30, history_max_age_days=90).execute({})
    assert [kwargs["retention"] for kwargs in opened] == [Retention(30, 90)]
