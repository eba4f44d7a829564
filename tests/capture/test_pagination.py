"""Pagination under change, URL-encoded DAG ids, and progress reporting (scripted local server)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from support.local_http import ScriptedServer, json_reply, no_aliases_no_warnings

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.capture.progress import ProgressReporter

PASSWORD = "pagination-test-pw"


def page(dag_ids: list[str], total: int) -> object:
    return json_reply({"dags": [{"dag_id": d} for d in dag_ids], "total_entries": total})


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    defaults = {
        "/api/v2/version": json_reply({"version": "3.3.2"}),
        "/auth/token": json_reply({"access_token": "t"}, status=201),
        "/api/v2/assets": json_reply({"assets": [], "total_entries": 0}),
        **no_aliases_no_warnings(),
    }
    with ScriptedServer(defaults) as scripted:
        yield scripted


def run(server: ScriptedServer, dag_ids: list[str]):
    for dag_id in dag_ids:
        server.set_default(f"/api/v2/dags/{dag_id}/tasks", json_reply({"tasks": [], "total_entries": 0}))
    # one worker: the DAG pages are answered in the order they were scripted
    source = ApiSource(server.base_url, username="u", password=PASSWORD, concurrency=1)
    with AirflowApiClient(source) as client:
        return capture(client)


def test_estate_growing_during_capture_is_followed_and_declared(server: ScriptedServer) -> None:
    """A list that grows between pages is read to its end, and a lossiness record says it changed."""
    server.script("/api/v2/dags", page(["a", "b"], 3), page(["c", "d"], 4))
    result = run(server, ["a", "b", "c", "d"])
    assert [d["dag_id"] for d in result.dags["dags"]] == ["a", "b", "c", "d"]
    assert [(r.artifact, r.message) for r in result.lossiness] == [
        ("dags", "the estate changed during the capture: /dags listed 3 DAGs at the start and 4 at the end")
    ]


def test_a_page_boundary_moving_does_not_duplicate_a_dag(server: ScriptedServer) -> None:
    """A DAG inserted before the boundary shifts b onto the next page: b is kept once, paging ends empty."""
    server.script("/api/v2/dags", page(["a", "b"], 3), page(["b", "c"], 4), page([], 4))
    result = run(server, ["a", "b", "c"])
    assert [d["dag_id"] for d in result.dags["dags"]] == ["a", "b", "c"]
    listing = "/api/v2/dags?exclude_stale=false&limit=100"  # stale DAGs too (core/reading/broken.py)
    offsets = [r.path for r in server.received if r.path.startswith(listing)]
    assert offsets == [f"{listing}&offset={o}&order_by=dag_id" for o in (0, 2, 4)]
    assert result.lossiness[0].message.startswith("the estate changed during the capture")


def test_dag_ids_are_url_encoded_in_the_tasks_path(server: ScriptedServer) -> None:
    server.script("/api/v2/dags", page(["etl/daily run", "ünïcode"], 2))
    server.set_default("/api/v2/dags/etl%2Fdaily%20run/tasks", json_reply({"tasks": [{"task_id": "t"}]}))
    server.set_default("/api/v2/dags/%C3%BCn%C3%AFcode/tasks", json_reply({"tasks": [{"task_id": "u"}]}))
    source = ApiSource(server.base_url, username="u", password=PASSWORD)
    with AirflowApiClient(source) as client:
        result = capture(client)
    assert result.tasks == {
        "etl/daily run": {"tasks": [{"task_id": "t"}]},
        "ünïcode": {"tasks": [{"task_id": "u"}]},
    }
    assert result.lossiness == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal() -> None:
    stream = _Terminal()
    progress = ProgressReporter(stream)
    progress(1, 4)
    progress(4, 4)
    progress.close()
    assert stream.getvalue().endswith("\rcapturing tasks [##############################] 4/4 DAGs\n")


def test_a_log_line_never_starts_on_the_bar(caplog) -> None:
    """A retry warning while the bar shows: the bar is erased first, the warning gets its own
    line, and the next frame is drawn below it; close() leaves the handlers as they were."""
    stream = _Terminal()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        progress = ProgressReporter(stream)
        progress(1, 4)
        logging.getLogger("airflow_provider_coremodels.io.transport").warning("GET /x: HTTP 503; retrying")
        progress(4, 4)
        progress.close()
        assert handler.filters == []
    finally:
        root.removeHandler(handler)
    bar = "capturing tasks [{}] {}/4 DAGs"
    assert stream.getvalue() == (
        "\r" + bar.format("#######" + "." * 23, 1)
        + "\r\x1b[2K" + "GET /x: HTTP 503; retrying\n"
        + "\r" + bar.format("#" * 30, 4) + "\n"
    )  # fmt: skip


def test_progress_is_a_line_every_few_seconds_in_a_log() -> None:
    stream = io.StringIO()
    progress = ProgressReporter(stream, interval=3600)
    for done in range(1, 100):
        progress(done, 100)  # within the interval: nothing
    progress(100, 100)  # the last one is always reported
    progress.close()
    assert stream.getvalue() == "capturing: tasks of 100/100 DAGs fetched\n"


def test_a_user_who_may_not_read_warnings_or_aliases_still_captures(server: ScriptedServer) -> None:
    """A 403 on a list only the asset model reads is a lossiness record, not a failed capture."""
    server.script("/api/v2/dags", page(["a"], 1))
    server.set_default("/api/v2/dagWarnings", json_reply({"detail": "Forbidden"}, status=403))
    server.set_default("/api/v2/assets/aliases", json_reply({"detail": "Forbidden"}, status=403))
    result = run(server, ["a"])
    assert [d["dag_id"] for d in result.dags["dags"]] == ["a"]
    assert result.dags["dag_warnings"] == [] and result.datasets["asset_aliases"] == []
    assert sorted((r.artifact, r.message.split(":")[0]) for r in result.lossiness) == [
        ("dags", "DAG warnings could not be listed"),
        ("datasets", "asset aliases could not be listed"),
    ]
    assert all("HTTP 403" in r.message and PASSWORD not in r.message for r in result.lossiness)


def test_a_user_refused_the_deadline_alerts_still_captures_and_the_rule_judges_no_dag(
    server: ScriptedServer,
) -> None:
    """Airflow 3.3's deadline alerts come from a UI route a role may not grant: a 403 on it leaves
    that DAG's alerts unknown (one record), the others are read, and ``deadline: true`` fails only
    the DAG known to have none."""
    from airflow_provider_coremodels.core import audit, build_document
    from airflow_provider_coremodels.core.checks.policy import rules_from_value

    server.script("/api/v2/dags", page(["a", "b"], 2))
    server.set_default("/ui/dags/a/deadlineAlerts", json_reply({"detail": "Forbidden"}, status=403))
    result = run(server, ["a", "b"])
    assert [r.message.split(": access denied")[0] for r in result.lossiness] == [
        "deadline alerts unknown for 1 of 2 DAGs (the rules' deadline check does not judge them): a: refused"
    ]
    assert "HTTP 403" in result.lossiness[0].message and PASSWORD not in result.lossiness[0].message
    estate = result.estate()
    assert {d.identity: d.metadata.get("airflow.deadline") for d in estate.dags()} == {"a": None, "b": "[]"}
    rules = rules_from_value([{"code": "policy-deadline", "require": {"deadline": True}}])
    document = build_document(estate, audit(estate, policy=rules))
    assert [f["subject"] for f in document["findings"] if f["code"] == "policy-deadline"] == ["b"]
    assert document["policy"]["notChecked"] == {"deadline alerts unknown": 1}
