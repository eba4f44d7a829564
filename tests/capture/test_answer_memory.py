"""A capture's memory follows the estate, not the size of the answers nor how many DAGs sent large
ones (issue 44, failure 3).

A fake Airflow 3.3 on 127.0.0.1 (a real HTTP server in this process) serves DAGs whose tasks, or
whose deadline alerts, come in one answer of about 60 MB each, under the 64 MiB cap on one answer.
The export runs as a user runs it, ``python -m airflow_provider_coremodels export``, in a subprocess
of its own, whose peak RSS (its own ``VmHWM``) is measured. It must stay under the same bound for 3
DAGs and for 6: what the same export costs with small answers, plus one answer's size. Before,
every answer was decoded whole and every item kept: ~59 MB of alerts for 3 DAGs peaked at 2.3 GB,
and 6 DAGs were killed at 3 GB.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from support.large_answers import ANSWER_BYTES, LargeAnswers, large_answer
from support.measured import run_measured

pytestmark = pytest.mark.slow

PASSWORD = "memory-test-password"
#: Over the small answers' peak: one answer's size, and room for the allocator (its arenas, per
#: thread, are not given back at once) on a machine shared with other work.
ALLOWANCE_MB = ANSWER_BYTES / 2**20 + 64


def export(server: LargeAnswers, out: Path) -> tuple[float, dict[str, Any]]:
    """The export, measured: its peak RSS in MB, and the document it stored."""
    measured = run_measured(
        "export",
        "--base-url",
        server.base_url,
        "--username",
        "admin",
        "--password-env",
        "MEMORY_TEST_PASSWORD",
        "--sink",
        str(out),
        "--max-snapshot-bytes",
        "100000000",
        env={"MEMORY_TEST_PASSWORD": PASSWORD},
        timeout=600,
    )
    assert measured.code == 0, measured.err
    return measured.peak_rss_mb, json.loads((out / "latest.json").read_text())


@cache
def small_peak(dags: int) -> float:
    """The same export with small answers: the interpreter, the imports and the estate."""
    import tempfile

    with LargeAnswers(dags, None) as server, tempfile.TemporaryDirectory() as tmp:
        return export(server, Path(tmp))[0]


@cache
def every_alert_kept() -> str:
    """A DAG's ``airflow.deadline`` as it was when every alert was decoded, kept and sorted (every
    DAG is served the same alerts)."""
    from airflow_provider_coremodels.core.reading.deadlines import deadline_text

    return deadline_text(json.loads(large_answer("alerts", "dag_00"))["deadline_alerts"])


def _metadata(document: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {d["identity"]: d["metadata"] for d in document["datasets"] if d["materialization"] == "dag"}


@pytest.mark.parametrize("large", ["tasks", "alerts"])
@pytest.mark.parametrize("dags", [3, 6])
def test_memory_does_not_grow_with_the_dags_large_answers(tmp_path: Path, dags: int, large: str) -> None:
    """Pins the bound: 3 and 6 DAGs of ~60 MB answers each cost the small answers' peak plus one
    answer at most, and the document keeps every task and the alerts it kept before."""
    bound = small_peak(dags) + ALLOWANCE_MB
    with LargeAnswers(dags, large) as server:
        peak, document = export(server, tmp_path / "sink")
    print(f"{dags} DAGs, large {large}: peak RSS {peak:.0f} MB, bound {bound:.0f} MB")
    assert peak < bound, f"peak RSS {peak:.0f} MB over the bound {bound:.0f} MB ({dags} DAGs, large {large})"
    fields = {d["identity"]: len(d["fields"]) for d in document["datasets"] if d["materialization"] == "dag"}
    if large == "tasks":
        expected = json.loads(large_answer("tasks", "dag_00"))["total_entries"]
        assert sorted(fields.values()) == [expected] * dags
    else:  # the 50 alerts the document listed when every alert was kept and sorted
        for metadata in _metadata(document).values():
            assert metadata["airflow.deadline"] == every_alert_kept()
            assert len(json.loads(metadata["airflow.deadline"])) == 50
