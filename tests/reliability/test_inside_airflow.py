"""Safe inside Airflow: bounded threads, prompt timeouts and cancellation, nothing left behind."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest
from support.local_http import ScriptedServer, delayed, json_reply, no_aliases_no_warnings

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, capture
from airflow_provider_coremodels.errors import CaptureError

DAG_IDS = [f"dag_{i:02d}" for i in range(12)]
SLOW = 6.0  # seconds each tasks request takes: longer than any test waits for it


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    defaults = {
        "/api/v2/version": json_reply({"version": "3.3.2"}),
        "/auth/token": json_reply({"access_token": "t"}, status=201),
        "/api/v2/dags": json_reply({"dags": [{"dag_id": d} for d in DAG_IDS], "total_entries": len(DAG_IDS)}),
        "/api/v2/assets": json_reply({"assets": [], "total_entries": 0}),
        **no_aliases_no_warnings(),
    }
    with ScriptedServer(defaults) as scripted:
        yield scripted


def capture_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("coremodels-capture")]


def client_for(server: ScriptedServer, **options) -> AirflowApiClient:
    return AirflowApiClient(
        ApiSource(server.base_url, username="u", password="p", **options),
        retry=RetryPolicy(max_attempts=2, backoff=0.01, max_backoff=0.02),
    )


def test_threads_are_bounded_and_gone_after_a_capture(server: ScriptedServer) -> None:
    """A capture uses at most `concurrency` worker threads and leaves none running."""
    for dag_id in DAG_IDS:
        server.set_default(f"/api/v2/dags/{dag_id}/tasks", delayed(0.05, json_reply({"tasks": []})))
    seen: list[int] = []
    with client_for(server, concurrency=3) as client:
        result = capture(client, progress=lambda done, total: seen.append(len(capture_threads())))
    assert result.summary.dags == len(DAG_IDS)
    assert 1 <= max(seen) <= 3
    assert capture_threads() == []


def test_cancel_stops_a_capture_promptly(server: ScriptedServer) -> None:
    """The operator's on_kill cancels the client: the capture raises within a fraction of a second."""
    for dag_id in DAG_IDS:
        server.set_default(f"/api/v2/dags/{dag_id}/tasks", delayed(SLOW, json_reply({"tasks": []})))
    with client_for(server, concurrency=4, read_timeout=SLOW + 2) as client:
        threading.Timer(0.5, client.cancel).start()
        started = time.monotonic()
        with pytest.raises(CaptureError, match=r"^the capture was cancelled$"):
            capture(client)
        assert time.monotonic() - started < SLOW - 1  # not waiting for the answers in flight
    # the requests in flight end by themselves (here when the slow answers arrive); no new ones start
    deadline = time.monotonic() + SLOW + 3
    while capture_threads() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert capture_threads() == []
    assert len([r for r in server.received if r.path.endswith("/tasks")]) <= 4


def test_a_task_timeout_interrupts_the_capture(server: ScriptedServer) -> None:
    """execution_timeout raises in the main thread (SIGALRM, as Airflow does): the capture ends at once."""
    for dag_id in DAG_IDS:
        server.set_default(f"/api/v2/dags/{dag_id}/tasks", delayed(SLOW, json_reply({"tasks": []})))

    class TaskTimeout(Exception):
        pass

    def on_alarm(signum, frame):
        raise TaskTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        with client_for(server, concurrency=4, read_timeout=SLOW + 2) as client:
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            started = time.monotonic()
            with pytest.raises(TaskTimeout):
                capture(client)
            assert time.monotonic() - started < SLOW - 1  # not waiting for the answers in flight
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_read_timeouts_bound_every_request(server: ScriptedServer) -> None:
    """A server that never answers in time costs at most attempts × read timeout, then a clear error."""
    server.set_default("/api/v2/dags", delayed(SLOW, json_reply({"dags": [], "total_entries": 0})))
    with client_for(server, read_timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(CaptureError, match=r"failed after 2 attempts: (ReadTimeout|ConnectionError)"):
            capture(client)
        assert time.monotonic() - started < SLOW - 1  # attempts x read timeout, not the slow answers
