"""The capture's pacing: the window of requests in flight follows the server's latency.

The controller (``Window``) is driven with latencies written down here, so its decisions are
exact. The gate (``Pacer``) is driven through whole captures against real local servers: one
that serves a request at a time (a one-worker API server, CPU-bound), so that every request
in flight beyond the first only waits; and a scripted one that answers 503 with Retry-After.
Every assertion is on the window or on requests in flight, never on how long anything took.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import pytest
from support.local_http import (
    BackgroundHTTPServer,
    Reply,
    RequestHandler,
    ScriptedServer,
    json_reply,
    no_aliases_no_warnings,
)

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, capture
from airflow_provider_coremodels.capture.pacing import (
    DECREASE,
    GROUP,
    MAX_REST,
    START,
    Pacer,
    Window,
    kind_of,
)
from airflow_provider_coremodels.cli.commands import api_source
from airflow_provider_coremodels.io.transport import Slot

TASKS = "/api/v2/dags/*/tasks"
PAGES = "/api/v2/dags"


def feed(window: Window, kind: str, seconds: float, count: int) -> list[int]:
    """``count`` answers of ``kind``, each sent in the window's current epoch; the sizes after each."""
    sizes = []
    for _ in range(count):
        window.answered(kind, seconds, window.epoch)
        sizes.append(window.size)
    return sizes


def grow_to(window: Window, size: int) -> None:
    """Flat answers until the window has just become ``size``: its next round starts empty."""
    for _ in range(1000):
        if window.size == size:
            return
        window.answered(TASKS, 0.010, window.epoch)
    raise AssertionError(f"the window never reached {size}: {window.size}")


# -- the controller, on written-down latencies ---------------------------------------------------


def test_a_server_whose_answers_stay_flat_gets_the_whole_window() -> None:
    """Slow start doubles the window while answers stay as fast as the baseline, up to the ceiling
    and never past it."""
    window = Window(16)
    assert window.size == START == 1
    sizes = feed(window, TASKS, 0.020, 200)
    assert max(sizes) == window.size == 16
    assert sorted(set(sizes)) == [1, 2, 4, 8, 16]  # doubling, not one by one
    assert window.decreases == 0


def test_a_server_that_queues_every_request_keeps_the_window_small() -> None:
    """Latency that grows with the requests in flight (a one-worker server: each request beyond the
    first waits for it) drives the window back down whenever it grows; it never reaches 4."""
    window = Window(16)
    sizes = []
    for _ in range(400):
        window.answered(TASKS, 0.010 * window.size, window.epoch)
        sizes.append(window.size)
    assert max(sizes) <= 3
    assert min(sizes) == 1
    assert window.decreases > 10


def test_slower_answers_within_the_tolerance_hold_the_window() -> None:
    """A round 1.2 times as slow as the baseline (under the 1.25 default, over half its margin)
    neither grows nor shrinks it."""
    window = Window(16)
    assert window.tolerance == 0.25
    grow_to(window, 8)
    feed(window, TASKS, 0.012, 100)
    assert window.size == 8
    assert window.decreases == 0


def test_a_round_over_the_tolerance_shrinks_the_window_multiplicatively() -> None:
    window = Window(16)
    grow_to(window, 16)
    feed(window, TASKS, 0.030, 16)  # one round of the window's size
    assert window.size == int(16 * DECREASE) == 11
    assert window.decreases == 1


def test_after_a_decrease_the_window_grows_by_one_per_round() -> None:
    window = Window(16)
    grow_to(window, 16)
    feed(window, TASKS, 0.030, 16)
    assert window.size == 11
    sizes = feed(window, TASKS, 0.010, 11 + 12 + 13)
    assert sorted(set(sizes)) == [11, 12, 13, 14]


def test_answers_to_requests_sent_before_a_change_do_not_count() -> None:
    """The slow answers of the requests still out when the window shrank say how the old window
    did: they must not shrink it again."""
    window = Window(16)
    grow_to(window, 16)
    old = window.epoch
    feed(window, TASKS, 0.030, 16)
    assert window.size == 11
    for _ in range(32):
        window.answered(TASKS, 0.030, old)
    assert window.size == 11


def test_each_kind_of_request_is_compared_with_its_own_baseline() -> None:
    """A page of 100 DAGs costs the server more than one DAG's tasks: many pages among the tasks
    requests are not a server slowing down."""
    window = Window(16)
    for _ in range(100):
        window.answered(TASKS, 0.010, window.epoch)
        window.answered(PAGES, 0.080, window.epoch)
    assert window.size == 16
    assert window.baseline(TASKS) == pytest.approx(0.010)
    assert window.baseline(PAGES) == pytest.approx(0.080)


def test_the_baseline_is_a_median_so_one_lucky_answer_does_not_set_it() -> None:
    window = Window(16)
    feed(window, TASKS, 0.010, GROUP - 1)
    window.answered(TASKS, 0.001, window.epoch)  # one answer ten times as fast, in the same group
    assert window.baseline(TASKS) == pytest.approx(0.010)


def test_an_overloaded_server_halves_the_window_once_per_epoch() -> None:
    """Several 503s from requests sent under one window halve it once, not once each."""
    window = Window(16)
    feed(window, TASKS, 0.010, 100)
    epoch = window.epoch
    for _ in range(5):
        window.overloaded(epoch)
    assert window.size == 8
    window.overloaded(window.epoch)
    assert window.size == 4
    assert window.smallest == 1 and window.largest == 16


def test_the_window_never_goes_below_one_request() -> None:
    window = Window(4)
    for _ in range(10):
        window.overloaded(window.epoch)
    assert window.size == 1
    feed(window, TASKS, 1.0, 50)
    assert window.size >= 1


def test_fixed_pacing_keeps_the_concurrency_whatever_the_server_does() -> None:
    window = Window(16, adaptive=False)
    assert window.size == 16
    for seconds in (0.01, 0.5, 5.0):
        feed(window, TASKS, seconds, 50)
        window.overloaded(window.epoch)
    assert window.size == 16


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/api/v2/dags/etl_daily/tasks", TASKS),
        ("/api/v2/dags/a%2Fb/details", "/api/v2/dags/*/details"),
        ("/api/v2/dags?limit=100&offset=200", PAGES),
        ("/api/v2/assets/events?asset_id=3", "/api/v2/assets/events"),
        ("/auth/token", "/auth/token"),
    ],
)
def test_the_kind_of_a_request_names_no_dag(path: str, kind: str) -> None:
    assert kind_of(path) == kind


def test_a_retry_after_holds_every_request_not_only_the_refused_one() -> None:
    """A 503's Retry-After holds the gate for all threads: no slot is given before it passes."""
    pacer = Pacer(8)
    refused = pacer.enter(TASKS, time.monotonic() + 30)
    refused.refused(retry_after=0.3)
    pacer.leave(refused)
    held_until = pacer.held_until
    slot = pacer.enter(TASKS, time.monotonic() + 30)
    assert slot.sent >= held_until
    pacer.leave(slot)
    assert pacer.in_flight == 0


def test_a_slot_is_given_at_the_deadline_whatever_holds_the_gate() -> None:
    """At the run's deadline the gate lets the request go, so that its caller sees the budget spent
    and says so, instead of a thread waiting for ever."""
    pacer = Pacer(1)
    first = pacer.enter(TASKS, time.monotonic() + 30)
    until = time.monotonic() + 0.1
    second = pacer.enter(TASKS, until)  # the window is full: only the deadline lets it through
    assert second.sent >= until
    assert pacer.in_flight == 2
    for slot in (first, second):
        pacer.leave(slot)


def answered(pacer: Pacer, seconds: float) -> float:
    """One request through ``pacer`` whose answer took ``seconds``; when it left the gate."""
    slot = pacer.enter(TASKS, time.monotonic() + 30)
    slot.seconds = seconds
    pacer.leave(slot)
    return time.monotonic()


def test_after_an_answer_its_slot_rests_as_long_again_before_the_next_request() -> None:
    """Share 0.5 (the default): a slot that was at the server for 0.2 s rests 0.2 s, so a capture
    alone at a one-worker server leaves it idle half the time for its other clients."""
    pacer = Pacer(1)
    assert pacer.share == 0.5
    left = answered(pacer, 0.2)
    [rest_ends] = pacer._resting
    assert rest_ends > left  # the rest outlasts the request's leaving
    slot = pacer.enter(TASKS, time.monotonic() + 30)  # the only slot rests: this waits it out
    assert slot.sent >= rest_ends and pacer._resting == []
    assert pacer.rested == pytest.approx(0.2)
    pacer.leave(slot)


def test_a_smaller_share_rests_longer_and_a_rest_is_bounded() -> None:
    third = Pacer(4, share=0.25)
    answered(third, 0.1)
    assert third.rested == pytest.approx(0.3)
    stuck = Pacer(4)
    answered(stuck, 600.0)  # a stuck answer (the window shrinks): the slot rests MAX_REST, no more
    assert stuck.rested == MAX_REST


def test_resting_slots_count_against_the_window_and_busy_ones_do_not_rest_the_others() -> None:
    pacer = Pacer(4)
    pacer.window.size = 2
    answered(pacer, 30.0)  # one slot rests (MAX_REST)
    first = pacer.enter(TASKS, time.monotonic() + 30)  # the other is free: no wait
    assert first.sent < pacer._resting[0]  # given while the other slot rests
    until = time.monotonic() + 0.05
    second = pacer.enter(TASKS, until)  # one in flight, one resting: only the deadline lets it in
    assert second.sent >= until
    for slot in (first, second):
        pacer.leave(slot)


def test_fixed_pacing_and_a_whole_share_never_rest() -> None:
    for pacer in (Pacer(4, adaptive=False), Pacer(4, share=1.0)):
        answered(pacer, 0.5)
        assert pacer.rested == 0 and pacer._resting == []


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ValueError, match="share"):
        Pacer(4, share=share)


# -- whole captures against real local servers ---------------------------------------------------

N_DAGS = 40


def estate_replies() -> dict[str, Reply]:
    dags = [{"dag_id": f"dag_{i:03d}", "tags": [], "description": "d"} for i in range(N_DAGS)]
    replies = {
        "/api/v2/version": json_reply({"version": "3.3.2"}),
        "/auth/token": json_reply({"access_token": "t"}, status=201),
        "/api/v2/dags": json_reply({"dags": dags, "total_entries": N_DAGS}),
        "/api/v2/assets": json_reply({"assets": [], "total_entries": 0}),
        "/ui/dependencies": json_reply({"nodes": [], "edges": []}),
        **no_aliases_no_warnings(),
    }
    for dag in dags:
        replies[f"/api/v2/dags/{dag['dag_id']}/tasks"] = json_reply(
            {"tasks": [{"task_id": "t", "operator_name": "EmptyOperator"}], "total_entries": 1}
        )
        replies[f"/ui/dags/{dag['dag_id']}/deadlineAlerts"] = json_reply(
            {"deadline_alerts": [], "total_entries": 0}
        )
    return replies


class _OneAtATime(RequestHandler):
    """Serves one request at a time, ``unit`` seconds each (a one-worker, CPU-bound API server):
    every other request in flight waits in its queue."""

    owner: OneWorkerServer

    def answer(self, body: bytes) -> None:
        server = self.owner
        with server.counter:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            with server.worker:
                time.sleep(server.unit)
                reply = server.replies.get(self.path.partition("?")[0], json_reply({"detail": "?"}, 404))
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        finally:
            with server.counter:
                server.in_flight -= 1


class OneWorkerServer(BackgroundHTTPServer):
    handler_class = _OneAtATime
    description = "the one-worker server"

    def __init__(self, replies: dict[str, Reply], unit: float) -> None:
        super().__init__()
        self.replies, self.unit = replies, unit
        self.worker, self.counter = threading.Lock(), threading.Lock()
        self.in_flight = self.max_in_flight = 0


def captured(base_url: str, pacing: str, concurrency: int = 16) -> tuple[Any, AirflowApiClient]:
    source = ApiSource(base_url, username="u", password="p", concurrency=concurrency, pacing=pacing)
    client = AirflowApiClient(source, retry=RetryPolicy(max_attempts=6, backoff=0.01, max_backoff=0.05))
    try:
        return capture(client), client
    finally:
        client.close()


def test_against_a_one_worker_server_the_capture_keeps_few_requests_waiting() -> None:
    """Requests beyond the first only queue at a one-worker server: the adaptive capture keeps at
    most a few in flight, where the fixed one fills its concurrency; both capture everything."""
    with OneWorkerServer(estate_replies(), unit=0.01) as server:
        adaptive, client = captured(server.base_url, "adaptive")
        adaptive_peak = server.max_in_flight
        server.max_in_flight = 0
        fixed, fixed_client = captured(server.base_url, "fixed")
    assert adaptive.summary.dags == fixed.summary.dags == N_DAGS
    assert adaptive.summary.tasks == fixed.summary.tasks == N_DAGS
    assert not adaptive.lossiness and not fixed.lossiness
    # what the server saw, and what the pacer let through: the window itself may open one more for a
    # round where a loaded machine slowed the sample its baseline came from (5, once, in a full run
    # beside the rest of the suite), while no fifth request was ever in flight
    assert adaptive_peak <= 4
    assert client.pacer.peak <= 4
    assert client.pacer.window.decreases >= 1
    assert server.max_in_flight >= 12  # the fixed capture: its concurrency, whatever the queue
    assert fixed_client.pacer.window.size == 16


def test_a_503_with_retry_after_shrinks_the_window_and_holds_every_request() -> None:
    """The server refuses one tasks request with 503 and Retry-After: 1. The window halves, and no
    request of the capture reaches the server before the second has passed (the arrival times and
    the gate's hold are read off the same monotonic clock)."""
    arrivals: list[tuple[float, str]] = []

    class Recording(ScriptedServer):
        def _next_reply(self, target: str) -> Reply:
            arrivals.append((time.monotonic(), target))
            return super()._next_reply(target)

    with Recording(estate_replies()) as server:
        server.script("/api/v2/dags/dag_010/tasks", json_reply({"detail": "busy"}, 503, {"Retry-After": "1"}))
        result, client = captured(server.base_url, "adaptive")
    assert result.summary.tasks == N_DAGS and not result.lossiness
    assert result.summary.retries == 1
    pacer = client.pacer
    assert pacer.window.decreases >= 1
    refused_at = next(t for t, target in arrivals if target.startswith("/api/v2/dags/dag_010/tasks"))
    held_until = pacer.held_until
    assert held_until > refused_at
    # every request sent once the 503 was in arrived after the hold: none slipped through
    later = [t for t, _ in arrivals if t > refused_at]
    waiting = [t for t in later if t < held_until]
    assert len(waiting) < pacer.window.largest  # only those already out when the 503 was sent
    assert any(t >= held_until for t in later)


def test_the_pacing_option_reaches_the_source() -> None:
    args = argparse.Namespace(
        conn_id=None,
        base_url="http://127.0.0.1:1",
        username=None,
        password_env=None,
        token_env=None,
        ca_bundle=None,
        concurrency=4,
        pacing="fixed",
        pacing_share=0.8,
        timeout=None,
        no_deadline_alerts=False,
    )
    source = api_source(args)
    assert (source.concurrency, source.pacing, source.pacing_share) == (4, "fixed", 0.8)
    default = ApiSource("http://127.0.0.1:1")
    assert (default.pacing, default.pacing_share) == ("adaptive", 0.5)
    with pytest.raises(ValueError, match="pacing must be one of adaptive, fixed"):
        ApiSource("http://127.0.0.1:1", pacing="eager")
    for share in (0.0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="pacing_share must be over 0 and at most 1"):
            ApiSource("http://127.0.0.1:1", pacing_share=share)
    client = AirflowApiClient(ApiSource("http://127.0.0.1:1", pacing_share=0.25))
    assert client.pacer.share == 0.25
    client.close()


def test_a_slot_records_an_answer_or_a_refusal() -> None:
    slot = Slot(TASKS, 0, time.monotonic())
    slot.answered()
    assert slot.seconds is not None and not slot.overloaded
    slot.refused(2.0)
    assert slot.overloaded and slot.retry_after == 2.0


def test_the_summary_says_how_the_window_moved_and_how_long_the_slots_rested() -> None:
    adaptive = Pacer(16)
    assert adaptive.describe() == "adaptive pacing: 1 in flight"
    adaptive.window.smallest, adaptive.window.largest = 1, 4
    answered(adaptive, 0.25)
    assert adaptive.describe() == "adaptive pacing: 1-4 in flight, slots rested 0.2 s"
    assert Pacer(8, adaptive=False).describe() == "fixed pacing: 8 in flight"
    with OneWorkerServer(estate_replies(), unit=0.001) as server:
        result, _ = captured(server.base_url, "adaptive")
    line = result.summary.line()
    assert "; adaptive pacing: 1" in line and "in flight, slots rested" in line


def _waiting(pacer: Pacer, count: int) -> None:
    """Until ``count`` threads wait at the gate (its condition's waiters)."""
    deadline = time.monotonic() + 10
    while len(pacer._changed._waiters) < count:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the threads never reached the gate"
        time.sleep(0.005)


def test_a_page_waiting_goes_before_the_per_item_requests_waiting_longer() -> None:
    """A list's page brings the next requests: it takes the next free slot, however many tasks
    requests were at the gate before it, and they follow once it is through."""
    pacer = Pacer(1, share=1.0)
    held = pacer.enter(TASKS, time.monotonic() + 30)
    order: list[str] = []

    def through(name: str, kind: str, first: bool) -> None:
        slot = pacer.enter(kind, time.monotonic() + 30, first=first)
        order.append(name)
        pacer.leave(slot)

    threads = [threading.Thread(target=through, args=(f"tasks {i}", TASKS, False)) for i in range(3)]
    for i, thread in enumerate(threads):
        thread.start()
        _waiting(pacer, i + 1)
    page = threading.Thread(target=through, args=("page", PAGES, True))
    page.start()
    _waiting(pacer, 4)
    pacer.leave(held)
    for thread in (page, *threads):
        thread.join(10)
    assert order[0] == "page"
    assert sorted(order[1:]) == ["tasks 0", "tasks 1", "tasks 2"]
    assert pacer.in_flight == 0
