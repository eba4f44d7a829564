"""A notifier cannot hold the export task: each runs under a deadline, the next runs whatever one
does, and ``execute()`` returns.

The export operator's ``execute`` runs in this process, as in tests/openlineage, against real
parts: a real local (replayed Airflow 2) REST API through an ``AIRFLOW_CONN_*`` connection and a
real file sink. The first export is told with ``notify_first_export=True`` (by default it records
the baseline and tells nobody, tested here too), so every notifier is called. The
notifiers are the test's own: one that hangs on an Event the test releases at teardown, one that
raises, one that is slow but within its deadline, one that raises after its deadline, and one
that records its call. Nothing is timed: the deadline is one the test sets, and what is asserted
is what each notifier was given, what it came to, and what the task log says.
(That a hung notifier keeps no task process alive, under ``dag.test()``: tests/operators/test_alerts.py.)
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.helpers import FIXTURES
from support.replay_server import AirflowV1ReplayServer

from airflow_provider_coremodels.compat import AirflowException
from airflow_provider_coremodels.operators.export import CoreModelsExportOperator

DEADLINE = 2.0  # twenty times the slow notifier's sleep (a busy machine's margin), and waited out twice
NOTIFIER_LINES = ("CoreModels notifier", "notifiers:")
ABANDONED = "CoreModels notifier {} did not return within 2 s: abandoned"


class Calls:
    """What every notifier was called with, in the order they were called."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.contexts: list[dict[str, Any]] = []
        self.release = threading.Event()  # set at teardown: the hanging notifiers return
        self.late_ended = threading.Event()

    def called(self, name: str, context: dict[str, Any]) -> None:
        self.names.append(name)
        self.contexts.append(context)


class Hanging:
    """Never returns while the test runs, as a webhook call to a service that never answers."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def __call__(self, context: dict[str, Any]) -> None:
        self.calls.called("Hanging", context)
        self.calls.release.wait()


class Broken:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def __call__(self, context: dict[str, Any]) -> None:
        self.calls.called("Broken", context)
        raise RuntimeError("the chat service is down")


class Slow:
    """Takes a twentieth of its deadline: slower than an instant one, well within the deadline."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def __call__(self, context: dict[str, Any]) -> None:
        self.calls.called("Slow", context)
        time.sleep(DEADLINE / 20)


class LateFailing:
    """Hangs past its deadline, then raises once the test releases it."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def __call__(self, context: dict[str, Any]) -> None:
        self.calls.called("LateFailing", context)
        try:
            self.calls.release.wait()
            raise RuntimeError("failed after its deadline")
        finally:
            self.calls.late_ended.set()


class Recording:
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def __call__(self, context: dict[str, Any]) -> None:
        self.calls.called("Recording", context)


@pytest.fixture
def calls() -> Iterator[Calls]:
    calls = Calls()
    yield calls
    calls.release.set()  # the abandoned threads end with the test


@pytest.fixture
def replay() -> Iterator[AirflowV1ReplayServer]:
    with AirflowV1ReplayServer(FIXTURES / "airflow2") as airflow:
        connection = {"conn_type": "airflow_api", "host": airflow.base_url, "login": airflow.username,
                      "password": airflow.password}  # fmt: skip
        os.environ["AIRFLOW_CONN_REPLAY"] = json.dumps(connection)
        yield airflow
        del os.environ["AIRFLOW_CONN_REPLAY"]


def export(tmp_path: Path, notifiers: Any, **kwargs: Any) -> CoreModelsExportOperator:
    return CoreModelsExportOperator(
        task_id="export_estate",
        airflow_api_conn_id="replay",
        sinks=[str(tmp_path / "sink")],
        on_new_findings=notifiers,
        metrics=False,
        **{"notify_first_export": True, **kwargs},
    )


class TaskLog:
    """The operator's log lines, ``(level, message)``: structlog's (Airflow 3.1+ gives operators a
    structlog logger) and the standard library's (the same test on Airflow 3.0)."""

    def __init__(self, structured: list[dict[str, Any]], caplog: pytest.LogCaptureFixture) -> None:
        self.structured, self.caplog = structured, caplog

    def lines(self) -> list[tuple[str, str]]:
        out = [(str(e["log_level"]), str(e["event"])) for e in self.structured]
        out += [(r.levelname.lower(), r.getMessage()) for r in self.caplog.records]
        return [(level, message) for level, message in out if message.startswith(NOTIFIER_LINES)]


@pytest.fixture
def task_log(caplog: pytest.LogCaptureFixture) -> Iterator[TaskLog]:
    caplog.set_level(logging.INFO)
    with capture_logs() as structured:
        yield TaskLog(structured, caplog)


def test_each_notifier_has_its_deadline_and_the_task_returns(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path, task_log: TaskLog
) -> None:
    """Hanging, failing, slow, failing late and recording, in that order: each called once, in
    order; the hung ones abandoned, the failing one an error line, the slow and the recording ones
    sent; and the task returns its summary with the snapshot stored."""
    notifiers = [Hanging(calls), Broken(calls), Slow(calls), LateFailing(calls), Recording(calls)]
    summary = export(tmp_path, notifiers, notifier_timeout=DEADLINE).execute({})  # type: ignore[arg-type]

    assert summary["newFindings"] > 0 and summary["snapshotStored"] is True
    assert (tmp_path / "sink" / "latest.json").exists()
    assert calls.names == ["Hanging", "Broken", "Slow", "LateFailing", "Recording"]
    for context in calls.contexts:  # each got the findings, each in a context of its own
        assert len(context["coremodels"]["new_findings"]) == summary["newFindings"]
    assert len({id(c) for c in calls.contexts}) == 5
    said = [
        ("warning", ABANDONED.format("Hanging")),
        ("error", "CoreModels notifier Broken failed: RuntimeError: the chat service is down"),
        ("warning", ABANDONED.format("LateFailing")),
        ("info", "notifiers: 5 called (deadline 2 s each): 2 sent, 1 failed, 2 abandoned"),
    ]
    assert task_log.lines() == said

    # the abandoned threads run on, as daemons: none can keep the process alive
    hung = [t for t in threading.enumerate() if t.name.startswith("coremodels-notifier-")]
    assert sorted(t.name for t in hung) == ["coremodels-notifier-Hanging", "coremodels-notifier-LateFailing"]
    assert all(t.daemon for t in hung)

    # the late failure, once released, is logged as nothing: neither sent nor failed
    calls.release.set()
    assert calls.late_ended.wait(30)
    for thread in hung:
        thread.join(30)
    assert task_log.lines() == said


class Leaky:
    """Fails quoting the credentials it was configured with, as a webhook or SMTP client's error may."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def __call__(self, context: dict[str, Any]) -> None:
        self.calls.called("Leaky", context)
        raise RuntimeError("POST https://hooks:s3cr3t-pw@chat.example.com/x refused; password=hunter22")


def test_a_failing_notifier_s_quoted_credentials_never_reach_the_log(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path, task_log: TaskLog
) -> None:
    export(tmp_path, [Leaky(calls)], notifier_timeout=DEADLINE).execute({})  # type: ignore[arg-type]
    (level, line), _ = task_log.lines()
    assert level == "error" and line.startswith(
        "CoreModels notifier Leaky failed: RuntimeError: POST https://"
    )
    assert "s3cr3t-pw" not in line and "hunter22" not in line
    assert "chat.example.com" in line  # what failed is still named


def test_a_notifier_within_its_deadline_is_waited_for(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path, task_log: TaskLog
) -> None:
    """With the default deadline (10 s) the slow notifier is sent, and its thread is gone."""
    export(tmp_path, [Slow(calls), Recording(calls)]).execute({})  # type: ignore[arg-type]
    assert calls.names == ["Slow", "Recording"]
    assert task_log.lines() == [
        ("info", "notifiers: 2 called (deadline 10 s each): 2 sent, 0 failed, 0 abandoned")
    ]
    assert not [t for t in threading.enumerate() if t.name.startswith("coremodels-notifier-")]


class TaskTimeout(Exception):
    pass


class Alarming(Hanging):
    """Hangs, and meanwhile the task's ``execution_timeout`` fires (SIGALRM, as Airflow sets it)."""

    def __call__(self, context: dict[str, Any]) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        super().__call__(context)


def test_a_task_timeout_is_not_held_by_a_notifier(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path
) -> None:
    """A deadline longer than the task has left: the task's timeout still ends the wait at once
    (the signal reaches the main thread while it waits on the notifier), so the task fails on
    its own timeout, as Airflow means it to; without it, the wait would end at the deadline and
    the task would return."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise TaskTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        operator = export(tmp_path, [Alarming(calls), Recording(calls)], notifier_timeout=30)
        with pytest.raises(TaskTimeout):
            operator.execute({})  # type: ignore[arg-type]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert calls.names == ["Hanging"]  # the task ended while the first one hung
    assert (tmp_path / "sink" / "latest.json").exists()  # pushed before anyone was told


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "10", True, None])
def test_a_deadline_that_makes_no_sense_fails_the_task_before_anything(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path, value: Any
) -> None:
    with pytest.raises(AirflowException, match="notifier_timeout must be a positive number of seconds, got "):
        export(tmp_path, [Recording(calls)], notifier_timeout=value).execute({})  # type: ignore[arg-type]
    assert replay.requests == [] and not (tmp_path / "sink").exists() and calls.names == []


def test_the_first_export_calls_no_notifier_by_default_and_the_next_tells_what_opened(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Quiet by default: the first export into an empty sink calls nobody (one line says so), and
    the second, into the same sink, has nothing new to tell either; nobody is told of the past."""
    caplog.set_level(logging.INFO)
    with capture_logs() as structured:
        first = export(tmp_path, [Recording(calls)], notify_first_export=False).execute({})  # type: ignore[arg-type]
        second = export(tmp_path, [Recording(calls)], notify_first_export=False).execute({})  # type: ignore[arg-type]
    assert first["newFindings"] > 0 and second["newFindings"] == 0
    assert calls.names == []
    lines = [str(e["event"]) for e in structured] + [r.getMessage() for r in caplog.records]
    quiet = [line for line in lines if line.startswith("first export (no previous snapshot)")]
    assert quiet == [
        f"first export (no previous snapshot): the baseline is recorded with {first['newFindings']} open "
        "finding(s) and no notifier is called (notify_first_export=True would call them)"
    ]


def test_a_minimum_severity_above_every_new_finding_calls_nobody(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path
) -> None:
    """The replayed estate's findings are Info and Warning: at ``error`` none is worth a call."""
    summary = export(tmp_path, [Recording(calls)], notify_min_severity="error").execute({})  # type: ignore[arg-type]
    assert summary["newFindings"] > 0 and calls.names == []
    again = export(tmp_path / "again", [Recording(calls)], notify_min_severity="Warning").execute({})  # type: ignore[arg-type]
    [context] = calls.contexts
    told = context["coremodels"]["new_findings"]
    assert told and {f["severity"] for f in told} == {"Warning"} and len(told) < again["newFindings"]
    assert context["coremodels"]["text"].endswith(
        f"{again['newFindings'] - len(told)} more new below Warning, not listed"
    )


@pytest.mark.parametrize("value", ["critical", "", None, 2])
def test_a_minimum_severity_that_names_none_fails_the_task_before_anything(
    replay: AirflowV1ReplayServer, calls: Calls, tmp_path: Path, value: Any
) -> None:
    with pytest.raises(
        AirflowException, match="notify_min_severity must be one of info, warning, error, got "
    ):
        export(tmp_path, [Recording(calls)], notify_min_severity=value).execute({})  # type: ignore[arg-type]
    assert replay.requests == [] and not (tmp_path / "sink").exists() and calls.names == []
