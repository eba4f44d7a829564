"""A reverse proxy on 127.0.0.1 that forwards to a real server but breaks some requests on purpose.

Built on ``CountingProxy``: a request that is not picked for a fault is forwarded unchanged.
A picked request gets one of these faults instead (``ALL_FAULTS``):

``"429"``
    HTTP 429 with ``Retry-After`` (``retry_after``, "1" by default), without asking upstream.
``"500"``, ``"502"``, ``"503"``, ``"504"``
    That status with a small JSON ``detail``, without asking upstream.
``"reset"``
    The connection is closed with a TCP reset instead of an answer.
``"slow"``
    Nothing is sent for ``slow_seconds`` (set it above the client's read timeout), then the
    real answer follows, if the client is still there, and the connection is closed.
``"truncated"``
    The upstream's real status and headers, with the full Content-Length, but only
    ``truncate_fraction`` of its body (at least one byte, never all); then the connection is
    closed.

Which request gets which fault is deterministic: the n-th request with a given method and
path (query included) is decided by a hash of ``(seed, method, path, n)``, so the decisions do
not depend on the order in which concurrent requests arrive. Each request is faulted with
probability ``rate`` (0 forwards everything, 1 breaks everything), the fault drawn uniformly
from ``faults``. ``injections`` records every decision, ``counts()`` the faults by kind::

    with FaultProxy(airflow.base_url, rate=0.2, seed=7) as proxy:
        client = SomeClient(proxy.base_url)
        ...
        print(proxy.counts())  # Counter({'503': 2, 'reset': 1, ...})
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from support.counting_proxy import CountingProxy, _ProxyHandler

STATUS_FAULTS = ("429", "500", "502", "503", "504")
ALL_FAULTS = (*STATUS_FAULTS, "reset", "slow", "truncated")
MAX_SLOW_SECONDS = 30.0  # a slow answer never keeps a handler thread longer than this

_REASONS = {
    "429": "Too Many Requests",
    "500": "Internal Server Error",
    "502": "Bad Gateway",
    "503": "Service Unavailable",
    "504": "Gateway Timeout",
}


@dataclass(frozen=True)
class Injection:
    """The decision taken for one request: ``fault`` is None when it was forwarded unchanged."""

    seq: int  # arrival order at the proxy, from 0
    method: str
    path: str  # with the query string
    nth: int  # this was the nth request (from 1) with this method and path
    fault: str | None
    at: float  # time.monotonic() when it arrived


class _FaultHandler(_ProxyHandler):
    server_version = "FaultProxy"
    owner: FaultProxy

    def setup(self) -> None:
        super().setup()
        self._truncate = False

    def answer(self, body: bytes) -> None:
        fault = self.owner._decide(self.command, self.path)
        if fault is None:
            super().answer(body)
        elif fault in STATUS_FAULTS:
            self._status(int(fault))
        elif fault == "reset":
            self._reset()
        elif fault == "slow":
            if self.owner._stopping.wait(self.owner.slow_seconds):
                self._reset()  # the proxy is stopping: do not keep stop() waiting
                return
            with contextlib.suppress(OSError):  # long after the client gave up: it has most likely gone
                super().answer(body)
            self.close_connection = True
        else:  # truncated
            self._truncate = True
            try:
                super().answer(body)
            finally:
                self._truncate = False
            self.close_connection = True

    def write_body(self, data: bytes) -> None:
        if not self._truncate:
            super().write_body(data)
            return
        # The headers already promised len(data) bytes; send fewer, and answer() then closes.
        cut = int(len(data) * self.owner.truncate_fraction)
        cut = min(max(cut, 1), len(data) - 1) if len(data) > 1 else 0
        self.wfile.write(data[:cut])

    def _status(self, status: int) -> None:
        payload = json.dumps({"detail": f"injected fault: HTTP {status}"}).encode()
        self.send_response(status, _REASONS[str(status)])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status == 429:
            self.send_header("Retry-After", self.owner.retry_after)
        self.end_headers()
        self.wfile.write(payload)

    def _reset(self) -> None:
        # A zero SO_LINGER timeout makes the close send a RST rather than a FIN; the socket
        # really closes in finish(), once the handler's file objects let go of it.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True


class FaultProxy(CountingProxy):
    """A ``CountingProxy`` that injects a fault into a ``rate`` share of the requests (see the module)."""

    handler_class = _FaultHandler
    description = "the fault proxy"
    thread_name = "fault-proxy"

    def __init__(
        self,
        upstream_base_url: str,
        *,
        rate: float,
        seed: int,
        faults: Iterable[str] = ALL_FAULTS,
        retry_after: str = "1",
        slow_seconds: float = 2.0,
        truncate_fraction: float = 0.5,
    ) -> None:
        super().__init__(upstream_base_url)
        self.faults = tuple(faults)
        unknown = sorted(set(self.faults) - set(ALL_FAULTS))
        if not self.faults or unknown:
            raise ValueError(f"faults must be a non-empty choice of {ALL_FAULTS}, got {self.faults}")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be between 0 and 1, got {rate}")
        if not 0.0 < slow_seconds <= MAX_SLOW_SECONDS:
            raise ValueError(f"slow_seconds must be in (0, {MAX_SLOW_SECONDS}], got {slow_seconds}")
        if not 0.0 <= truncate_fraction < 1.0:
            raise ValueError(f"truncate_fraction must be in [0, 1), got {truncate_fraction}")
        self.rate = rate
        self.seed = seed
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.truncate_fraction = truncate_fraction
        self._injections: list[Injection] = []
        self._seen: Counter[tuple[str, str]] = Counter()
        self._decide_lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def injections(self) -> list[Injection]:
        """Every request's decision so far, in arrival order (forwarded ones with ``fault=None``)."""
        with self._decide_lock:
            return list(self._injections)

    def injected(self) -> list[Injection]:
        """The requests that got a fault, in arrival order."""
        return [i for i in self.injections if i.fault is not None]

    def counts(self) -> Counter[str]:
        """How many faults of each kind were injected."""
        return Counter(i.fault for i in self.injected() if i.fault is not None)

    def reset(self) -> None:
        """Forget the recorded requests and decisions: the next requests are decided afresh."""
        super().reset()
        with self._decide_lock:
            self._injections.clear()
            self._seen.clear()

    def start(self) -> FaultProxy:
        self._stopping.clear()
        super().start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers holding back a slow answer
        super().stop()

    # -- called from the handler threads ---------------------------------------------------------

    def _decide(self, method: str, path: str) -> str | None:
        with self._decide_lock:
            self._seen[(method, path)] += 1
            nth = self._seen[(method, path)]
            digest = hashlib.sha256(f"{self.seed}\0{method}\0{path}\0{nth}".encode()).digest()
            draw = int.from_bytes(digest[:8], "big") / 2**64  # uniform in [0, 1)
            fault = None
            if draw < self.rate:
                fault = self.faults[int.from_bytes(digest[8:16], "big") % len(self.faults)]
            self._injections.append(
                Injection(len(self._injections), method, path, nth, fault, time.monotonic())
            )
            return fault
