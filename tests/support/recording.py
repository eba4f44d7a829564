"""Record a real Airflow server's answers through a proxy, and replay them without the server.

``RecordingProxy`` sits on 127.0.0.1 in front of a real server (``dev/record_versions.py`` puts it in
front of each Airflow line's ``VersionServer``). It forwards every request as it came (method, path,
query, headers, body) and records each exchange::

    {"method": "GET", "path": "/api/v2/dags", "query": [["limit", "100"], ["offset", "0"]],
     "status": 200, "content_type": "application/json", "body": "{...}"}

``query`` is the sorted list of (name, value) pairs; ``path`` is percent-decoded; ``body`` is the
response's text (a compressed answer is recorded decompressed). Neither the request's headers nor
its body are recorded: they hold the credentials.

``ReplayServer`` answers each request from such a recording by (method, path, sorted query pairs),
ignoring the headers (the Authorization token differs from the recording's). ``POST /auth/token``
is replayed like any other exchange. When one request was answered twice, the last answer is
replayed. A request that is not in the recording gets HTTP 599 with
``{"detail": "not recorded: GET /api/v2/..."}`` and is listed in ``server.unrecorded``, so that a
test can assert that nothing it asked for was missing::

    with ReplayServer(load_recording(path)["exchanges"]) as server:
        ...  # point a client at server.base_url
        assert server.unrecorded == []

A capture of an Airflow before 3.1 asks for the asset events of the last 7 days
(``timestamp_gte`` = its own clock less 7 days): ``capture_clock(recording["captured_at"])`` sets
the capture's clock to the recording's, so that the replayed capture asks what the recorded one
asked (and judges freshness at the same time).

``save_recording`` and ``load_recording`` write and read the gzipped JSON files of
``tests/fixtures/versions/`` (``{"airflow", "scenario", "recorded_at", "exchanges", ...}``).
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from support.counting_proxy import CountingProxy, _ProxyHandler
from support.local_http import BackgroundHTTPServer, RequestHandler

#: The status of an answer the recording does not hold (not a status any server sends).
NOT_RECORDED = 599

Key = tuple[str, str, tuple[tuple[str, str], ...]]


def request_key(method: str, target: str) -> Key:
    """How a request is looked up: its method, decoded path and sorted query pairs."""
    url = urlsplit(target)
    query = tuple(sorted(parse_qsl(url.query, keep_blank_values=True)))
    return method.upper(), unquote(url.path), query


def exchange_key(exchange: Mapping[str, Any]) -> Key:
    return (
        str(exchange["method"]).upper(),
        str(exchange["path"]),
        tuple((str(name), str(value)) for name, value in exchange["query"]),
    )


def describe(key: Key) -> str:
    """``GET /api/v2/dags?limit=100&offset=0`` (the query sorted)."""
    method, path, query = key
    return f"{method} {path}" + ("?" + "&".join(f"{n}={v}" for n, v in query) if query else "")


# -- recording -----------------------------------------------------------------------------------


def _decoded(body: bytes, encoding: str | None) -> bytes:
    encoding = (encoding or "").strip().lower()
    if encoding in ("gzip", "x-gzip"):
        return gzip.decompress(body)
    if encoding == "deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:  # raw deflate, without the zlib header
            return zlib.decompress(body, -zlib.MAX_WBITS)
    return body


class _DecodedResponse:
    """An upstream response whose body was decompressed: what the client is sent and what is recorded."""

    def __init__(self, response: http.client.HTTPResponse) -> None:
        self.status = response.status
        self.reason = response.reason
        self.headers = response.headers
        del self.headers["Content-Encoding"]


class _RecordingHandler(_ProxyHandler):
    """The counting proxy's forwarding, recording each exchange as it is answered."""

    owner: RecordingProxy

    def _exchange(self, headers: dict[str, str], body: bytes) -> tuple[Any, bytes]:
        response, response_body = super()._exchange(headers, body)
        encoding = response.headers.get("Content-Encoding")
        if encoding and encoding.strip().lower() != "identity":
            response_body = _decoded(response_body, encoding)
            response = _DecodedResponse(response)  # the client gets it plain too
        method, path, query = request_key(self.command, self.path)
        self.owner._add(
            {
                "method": method,
                "path": path,
                "query": [list(pair) for pair in query],
                "status": response.status,
                "content_type": response.headers.get("Content-Type"),
                "body": response_body.decode("utf-8", errors="replace"),
            }
        )
        return response, response_body


class RecordingProxy(CountingProxy):
    """A reverse proxy on 127.0.0.1 in front of ``upstream_base_url`` recording every exchange.

    ``exchanges`` is a snapshot of what was recorded so far, in the order the answers came back.
    """

    handler_class = _RecordingHandler
    description = "the recording proxy"
    thread_name = "recording-proxy"

    def __init__(self, upstream_base_url: str) -> None:
        super().__init__(upstream_base_url)
        self._exchanges: list[dict[str, Any]] = []
        self._exchanges_lock = threading.Lock()

    @property
    def exchanges(self) -> list[dict[str, Any]]:
        with self._exchanges_lock:
            return [dict(exchange) for exchange in self._exchanges]

    def _add(self, exchange: dict[str, Any]) -> None:
        with self._exchanges_lock:
            self._exchanges.append(exchange)


# -- replay ---------------------------------------------------------------------------------------


class _ReplayHandler(RequestHandler):
    server_version = "AirflowRecordingReplay"
    owner: ReplayServer

    def answer(self, body: bytes) -> None:
        status, content_type, payload = self.owner._answer(self.command, self.path)
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class ReplayServer(BackgroundHTTPServer):
    """Answers each request from recorded exchanges by (method, path, sorted query pairs).

    ``unrecorded`` lists the requests the recording had no answer for (each got HTTP 599), as
    ``describe`` words them, in arrival order.
    """

    handler_class = _ReplayHandler
    description = "the replay server"
    thread_name = "recording-replay"

    def __init__(self, exchanges: Iterable[Mapping[str, Any]]) -> None:
        super().__init__()
        self._answers: dict[Key, tuple[int, str | None, bytes]] = {}
        for exchange in exchanges:  # a request answered twice: the last answer wins
            self._answers[exchange_key(exchange)] = (
                int(exchange["status"]),
                exchange.get("content_type"),
                str(exchange["body"]).encode("utf-8"),
            )
        self._unrecorded: list[str] = []
        self._unrecorded_lock = threading.Lock()

    @property
    def unrecorded(self) -> list[str]:
        with self._unrecorded_lock:
            return list(self._unrecorded)

    def _answer(self, method: str, target: str) -> tuple[int, str | None, bytes]:
        key = request_key(method, target)
        found = self._answers.get(key)
        if found is not None:
            return found
        what = describe(key)
        with self._unrecorded_lock:
            self._unrecorded.append(what)
        return NOT_RECORDED, "application/json", json.dumps({"detail": f"not recorded: {what}"}).encode()


# -- files -------------------------------------------------------------------------------------------


def save_recording(path: str | Path, recording: Mapping[str, Any]) -> int:
    """Write a recording as gzipped JSON (stable: no timestamp in the gzip header); its size in bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(recording, indent=None, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    path.write_bytes(packed)
    return len(packed)


def load_recording(path: str | Path) -> dict[str, Any]:
    recording: dict[str, Any] = json.loads(gzip.decompress(Path(path).read_bytes()).decode("utf-8"))
    return recording


@contextlib.contextmanager
def capture_clock(at: str) -> Iterator[None]:
    """Within the block, the capture's clock (``capture.crawl``'s ``datetime.now``) says ``at``
    (``YYYY-MM-DDTHH:MM:SSZ``, a recording's ``captured_at``)."""
    from airflow_provider_coremodels.capture import crawl

    fixed = datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)

    class _Frozen(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return fixed.astimezone(tz) if tz is not None else fixed.replace(tzinfo=None)

    original = crawl.datetime
    crawl.datetime = _Frozen  # type: ignore[misc]
    try:
        yield
    finally:
        crawl.datetime = original  # type: ignore[misc]
