"""How many requests a capture keeps in flight: as many as the server answers without slowing down.

In Airflow 3 the API server a capture reads also serves the workers' execution API (task state
updates, heartbeats, XCom): a capture that holds its full concurrency whatever the server's
latency does slows every one of those down with it. So the window of requests in flight follows
the server (AIMD, as TCP does): it starts small and doubles while answers come back as fast as
the fastest seen, then grows by one per round while they stay that fast, and shrinks to
``DECREASE`` of itself when a round's answers are slower than the baseline by more than the
tolerance. A 429 or 503 (and any other overload status, or a read timeout) halves it, and a
``Retry-After`` holds every new request, not only the one refused, until it has passed. The
configured concurrency is the ceiling; ``pacing="fixed"`` keeps the window there, as before.

The window says how many requests may be *at the server* at once; ``share`` says how much of
each slot's time they may take there. An adaptive capture's slot rests after each answer for as
long again as the answer took (``share`` 0.5): a request alone at a one-worker server otherwise
keeps it busy from one answer to the next, and every other client (a worker's heartbeat) then
waits behind it. The rest costs a capture at most twice its time at a window of one, and less
where the server has room (the window grows instead, up to the concurrency); ``pacing_share=1``
and ``pacing="fixed"`` never rest.

``Window`` is the controller alone (no clock, no threads: tests feed it latencies); ``Pacer``
is the gate the client's threads pass through, one slot per request in flight or resting.
"""

from __future__ import annotations

import heapq
import statistics
import threading
import time

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.io.transport import Slot

#: The window a capture starts with: its first answers, alone at the server, are the baselines.
START = 1
#: The multiplicative decrease: a round slower than the tolerance leaves this much of the window.
DECREASE = 0.7
#: Answers of one kind are taken in groups of this many; the lowest group median is its baseline
#: (a median, so one answer that was fast by chance does not make every later one look slow).
GROUP = 5
#: The fewest comparable answers a decision is made on (a round is at least the window's size).
ROUND = 4
#: What is adaptive and what is not (the CLI's ``--pacing``, the connection's ``pacing`` extra).
PACINGS = ("adaptive", "fixed")
#: The longest rest a slot takes after one answer, whatever the answer took: a rest follows the
#: server's ordinary pace, and a minute-long answer says the server is stuck (the window shrinks).
MAX_REST = 2.0


class Window:
    """The size of the window, moved by what the answers tell; not thread-safe (``Pacer`` guards it).

    Answers are compared per kind of request (``/dags/*/tasks`` with ``/dags/*/tasks``, never with
    a DAG page, which costs the server several times as much), each against the baseline of its
    kind. An answer to a request sent before the window last changed is not counted towards a
    decision: it says how the old window did, which the change already answered.
    """

    def __init__(
        self, maximum: int, *, adaptive: bool = True, tolerance: float = defaults.PACING_TOLERANCE
    ) -> None:
        if maximum < 1:
            raise ValueError(f"the window's maximum must be at least 1, got {maximum}")
        if not tolerance > 0:
            raise ValueError(f"the latency tolerance must be positive, got {tolerance}")
        self.maximum = maximum
        self.adaptive = adaptive
        self.tolerance = tolerance
        self.size = min(START, maximum) if adaptive else maximum
        self.epoch = 0  # changes whenever the size does
        self.smallest = self.largest = self.size  # the range it moved in
        self.decreases = 0
        self._slow_start = True
        self._baseline: dict[str, float] = {}
        self._group: dict[str, list[float]] = {}
        self._round: list[float] = []

    def baseline(self, kind: str) -> float | None:
        """The baseline latency of one kind of request, in seconds, once there is one."""
        return self._baseline.get(kind)

    def answered(self, kind: str, seconds: float, epoch: int) -> None:
        """An answer of ``kind`` took ``seconds``, for a request sent during ``epoch``."""
        if not self.adaptive:
            return
        group = self._group.setdefault(kind, [])
        group.append(seconds)
        if len(group) >= GROUP:
            median = statistics.median(group)
            group.clear()
            known = self._baseline.get(kind)
            self._baseline[kind] = median if known is None else min(known, median)
        base = self._baseline.get(kind)
        if base is None or epoch != self.epoch:
            return
        self._round.append(seconds / base if base > 0 else 1.0)
        if len(self._round) >= max(ROUND, self.size):
            self._decide(statistics.median(self._round))

    def overloaded(self, epoch: int) -> None:
        """The server said it is overloaded (429, 503, a timeout): half the window, once per epoch."""
        self._slow_start = False
        if self.adaptive and epoch == self.epoch:
            self._resize(self.size // 2)
            self.decreases += 1

    def _decide(self, ratio: float) -> None:
        """One round's verdict: ``ratio`` is its median answer over the baseline of its kind."""
        if ratio > 1 + self.tolerance:
            self._slow_start = False
            self.decreases += 1
            self._resize(int(self.size * DECREASE))
        elif ratio <= 1 + self.tolerance / 2:
            self._resize(self.size * 2 if self._slow_start else self.size + 1)
        else:  # slower, within the tolerance: hold, and grow no faster than by one from now on
            self._slow_start = False
            self._round.clear()

    def _resize(self, size: int) -> None:
        size = max(1, min(self.maximum, size))
        self._round.clear()
        if size != self.size:
            self.size = size
            self.epoch += 1
            self.smallest, self.largest = min(self.smallest, size), max(self.largest, size)


class Pacer:
    """The gate the client's threads pass through: at most ``window.size`` slots taken, a slot
    taken from a request's start until its rest after the answer ends, and no request started
    while a ``Retry-After`` holds. Thread-safe; ``peak`` is the most requests ever in flight.

    ``share``: how much of a slot's time its requests may take, 1 = no rest (``fixed`` pacing
    always); after an answer of ``t`` seconds its slot rests ``t * (1 - share) / share``, at most
    ``MAX_REST``."""

    def __init__(
        self,
        maximum: int,
        *,
        adaptive: bool = True,
        tolerance: float = defaults.PACING_TOLERANCE,
        share: float = defaults.PACING_SHARE,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"the share of a slot's time must be in (0, 1], got {share}")
        self.window = Window(maximum, adaptive=adaptive, tolerance=tolerance)
        self.share = share if adaptive else 1.0
        self.in_flight = 0
        self.peak = 0
        self.rested = 0.0  # seconds of rest taken in all (slots times seconds)
        self.held_until = 0.0  # time.monotonic() before which no request starts (a Retry-After)
        self._first_waiting = 0  # pages waiting for a slot: per-item requests wait behind them
        self._resting: list[float] = []  # heap: when each resting slot is free again
        self._changed = threading.Condition()

    def describe(self) -> str:
        """What the window did, for the capture's summary line: ``adaptive pacing: 1-4 in flight,
        slots rested 41.3 s`` (or ``fixed pacing: 8 in flight``)."""
        if not self.window.adaptive:
            return f"fixed pacing: {self.window.maximum} in flight"
        low, high = self.window.smallest, self.window.largest
        moved = f"{low}-{high}" if low < high else f"{low}"
        rested = f", slots rested {self.rested:.1f} s" if self.rested else ""
        return f"adaptive pacing: {moved} in flight{rested}"

    def enter(self, kind: str, until: float, *, first: bool = False) -> Slot:
        """Wait for a free slot in the window (and for any Retry-After to pass), at most until the
        monotonic time ``until`` (the run's deadline: the caller then finds its budget spent).

        ``first``: a page of a list, which goes before every per-item request waiting (a DAG's
        tasks): its answer brings the next requests, and a list read in a short span is less
        likely to have its page boundaries moved by a change on the server."""
        with self._changed:
            if first:
                self._first_waiting += 1
            try:
                while True:
                    now = time.monotonic()
                    while self._resting and self._resting[0] <= now:
                        heapq.heappop(self._resting)
                    held = self.held_until - now
                    free = held <= 0 and self.in_flight + len(self._resting) < self.window.size
                    if (free and (first or not self._first_waiting)) or now >= until:
                        break
                    if held > 0:
                        wait = held
                    elif self._resting and self.in_flight + len(self._resting) - 1 < self.window.size:
                        wait = self._resting[0] - now  # the next rest to end frees the slot needed
                    else:
                        wait = until - now
                    self._changed.wait(min(wait, until - now, 0.5))
            finally:
                if first:
                    self._first_waiting -= 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if first and not self._first_waiting:
                self._wake()  # the requests held back for this page may take what room is left
            return Slot(kind, self.window.epoch, time.monotonic())

    def leave(self, slot: Slot) -> None:
        """The request is over: what its answer told moves the window, and its slot rests."""
        with self._changed:
            self.in_flight -= 1
            if slot.overloaded:
                self.window.overloaded(slot.epoch)
                if slot.retry_after:
                    self.held_until = max(self.held_until, time.monotonic() + slot.retry_after)
            elif slot.seconds is not None:
                self.window.answered(slot.kind, slot.seconds, slot.epoch)
                if self.share < 1:
                    rest = min(MAX_REST, slot.seconds * (1 - self.share) / self.share)
                    heapq.heappush(self._resting, time.monotonic() + rest)
                    self.rested += rest
            self._wake()

    def _wake(self) -> None:
        """Wake as many waiting threads as there is room for, not all of them (sixteen threads
        woken per answer to find one slot cost a capture a third more client CPU), and one when
        a slot went to rest, to wait for the rest's end rather than for a next answer; all of
        them while a page waits, which a woken per-item request would not let through."""
        if self._first_waiting:
            self._changed.notify_all()
            return
        room = self.window.size - self.in_flight - len(self._resting)
        self._changed.notify(max(room, 1 if self._resting else 0))


def kind_of(path: str) -> str:
    """What a request is, for comparing latencies: its path without the query, the segment that
    names a DAG made ``*``. ``/api/v2/dags/x/tasks`` and ``/api/v2/dags/y/tasks`` are one kind;
    ``/api/v2/dags`` (a page of DAGs) is another."""
    parts = path.partition("?")[0].split("/")
    return "/".join("*" if i and parts[i - 1] == "dags" else part for i, part in enumerate(parts))
