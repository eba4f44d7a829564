"""A fake Airflow 3 API server that lies, one way per mode: for the hostile-input tests.

Each mode is a way a compromised, buggy or misconfigured server (or a proxy in front of one)
misbehaves; everything else answers as a small healthy Airflow 3.3 would (version, token, one
DAG, its tasks, no assets, aliases or warnings). The modes:

``lying-total``      ``total_entries`` of 10**9, one new DAG per page, for ever
``gzip-bomb``        the DAG list as a gzip body that inflates to 1 GiB
``ignores-limit``    every DAG (``HUGE_DAGS`` of them) in one page, whatever ``limit`` says
``trickle``          the DAG list's headers at once, then its body one byte a second
``header-trickle``   the DAG list's status line and headers one byte every 1.5 s (under the read timeout)
``endless-headers``  the DAG list's status line, then header lines for ever, one every 0.5 s
``ignores-offset``   the same first page of DAGs at every offset, with an honest total
``assets-ignore-offset``  the same first page of assets at every offset
``endless``          pages of new DAGs for ever, the total growing with them
``token-redirect``   ``POST /auth/token`` answers 307 to ``redirect_to`` (another origin)
``get-redirect``     the DAG list answers 302 to ``redirect_to`` (another origin)
``redirect-loop``    the DAG list redirects to itself
``redirect-file``    the DAG list redirects to ``file:///etc/passwd``
``echo-secrets``     403 on the DAG list, its body repeating the bearer token and the password
``deep-json``        the DAG list as 100,000 nested arrays
``bad-utf8``         a DAG id holding bytes that are not UTF-8
``dot-ids``          DAGs named ``.`` and ``..`` (legal in Airflow)
``leaky-errors``     credentials quoted wherever a server writes code or configuration (issue 34): one
                     import error per shape of ``secret_shapes.SHAPES``, a DAG description and a DAG
                     warning quoting some, and DAG ``b``'s tasks refused (400) with a password in the body
``own-secrets``      the run's own secrets echoed (issue 44): DAG ``a``'s description quotes the password
                     and the token handed out, its deadline alerts are named after them (and after a
                     ``postgresql://`` URL, ``password=``, a JWT), an import error quotes an AWS key
                     pair, and DAG ``b``'s tasks are refused (400) quoting a URL's password and ``password=``
``refused-quoting``  the DAG list refused (400), its body quoting a URL's password and ``password=``

``max_in_flight`` is the most requests the server had open at once.

``HostileReceiver`` is the same for the other side of an export: an endpoint events or
snapshots are POSTed to (an OpenLineage receiver, a CoreModels endpoint) that lies in one way
per mode:

``gzip-bomb``        200, its body a gzip member that inflates to 1 GiB
``trickle``          200, its headers at once, then a body one byte a second
``header-trickle``   its status line and headers one byte every 1.5 s (under the read timeout)
``redirect``         307 to ``redirect_to`` (another origin), the same path
``echo-query``       400, its body quoting the request's path and query (where keys ride)
``refuse``           500, every time
``token-redirect``   ``POST /oauth/token`` answers 307 to ``redirect_to``; events are taken (200)
``token``            ``POST /oauth/token`` hands out ``TOKEN``; events are taken (200)
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import zlib
from functools import cache
from typing import Any
from urllib.parse import parse_qs, urlsplit

from support.local_http import BackgroundHTTPServer, RequestHandler
from support.secret_shapes import (
    AWS_ID,
    AWS_SECRET,
    DESCRIPTION,
    JWT,
    LOSSINESS_SECRET,
    WARNING,
    traceback_of,
    with_leaky_errors,
)

HUGE_DAGS = 200_000
TOKEN = "hostile-jwt-token-value-0123456789"  # what POST /auth/token hands out


@cache
def gzip_bomb() -> bytes:
    """1 GiB of zeros as one gzip member (about 1 MB), made once per test session."""
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip container
    parts = [compressor.compress(zeros) for _ in range(1024)]
    parts.append(compressor.flush())
    return b"".join(parts)


@cache
def huge_page() -> bytes:
    """Every one of ``HUGE_DAGS`` DAGs in one page, made once per test session (and before the
    server starts: made per request, on a loaded machine it outlasted the client's read timeout,
    and the capture ended before it reached what its test is about)."""
    dags = [_dag(f"d{i:07d}") for i in range(HUGE_DAGS)]
    return json.dumps({"dags": dags, "total_entries": HUGE_DAGS}).encode()


def _dag(dag_id: str) -> dict[str, Any]:
    return {"dag_id": dag_id, "is_paused": False, "owners": ["team"], "description": "d"}


def _leaky(path: str) -> tuple[Any, int] | None:
    """What the ``leaky-errors`` mode answers differently from a healthy server, or None."""
    if path == "/api/v2/dags":
        return {"dags": [{**_dag("a"), "description": DESCRIPTION}, _dag("b")], "total_entries": 2}, 200
    if path == "/api/v2/importErrors":
        errors = with_leaky_errors({"dags": [_dag("a")]})["import_errors"]
        return {"import_errors": errors, "total_entries": len(errors)}, 200
    if path == "/api/v2/dagWarnings":
        warning = {"dag_id": "a", "warning_type": "runtime varying value", "message": WARNING}
        return {"dag_warnings": [warning], "total_entries": 1}, 200
    if path == "/api/v2/dags/b/tasks":
        return {"detail": f"refused: connection failed, password={LOSSINESS_SECRET}"}, 400
    return None


#: What the ``own-secrets`` and ``refused-quoting`` modes quote besides the run's own password and token.
URL_PASSWORD = "cmCanaryOwnUrlPw-61"
ASSIGNED_PASSWORD = "cmCanaryOwnAssigned-62"
REFUSED = f"connection to postgresql://etl:{URL_PASSWORD}@db:5432/dw failed (password={ASSIGNED_PASSWORD})"


def _own_secrets(path: str, password: str) -> tuple[Any, int] | None:
    """What the ``own-secrets`` mode answers differently from a healthy server, or None."""
    if path == "/api/v2/dags":
        echoed = f"Logs in with {password}; the token {TOKEN} is kept for the next run"
        return {"dags": [{**_dag("a"), "description": echoed}, _dag("b")], "total_entries": 2}, 200
    if path == "/ui/dags/a/deadlineAlerts":
        alerts = [
            {"name": password, "reference_type": "DagRunQueuedAtDeadline", "interval": 60},
            {"name": f"token {TOKEN}", "reference_type": JWT, "interval": 120},
            {
                "name": f"late load of postgresql://etl:{URL_PASSWORD}@db/dw",
                "reference_type": "FixedDatetime",
            },
            {"name": f"password={ASSIGNED_PASSWORD}", "reference_type": "DagRunLogicalDateDeadline"},
        ]
        return {"deadline_alerts": alerts, "total_entries": len(alerts)}, 200
    if path == "/api/v2/importErrors":
        line = f"botocore.exceptions.ClientError: key {AWS_ID} secret {AWS_SECRET} refused"
        error = {
            "import_error_id": 1,
            "filename": "broken_aws.py",
            "timestamp": "2026-12-01T06:00:00Z",
            "stack_trace": traceback_of(line, "/opt/airflow/dags/broken_aws.py"),
        }
        return {"import_errors": [error], "total_entries": 1}, 200
    if path == "/api/v2/dags/b/tasks":
        return {"detail": REFUSED}, 400
    return None


class _Handler(RequestHandler):
    owner: HostileApi

    def answer(self, body: bytes) -> None:
        server = self.owner
        with server.lock:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            self._answer()
        finally:
            with server.lock:
                server.in_flight -= 1

    def _answer(self) -> None:
        mode = self.owner.mode
        url = urlsplit(self.path)
        path, query = url.path, {k: v[-1] for k, v in parse_qs(url.query).items()}
        if path == "/api/v2/version":
            return self._json({"version": "3.3.2", "git_version": None})
        if path == "/auth/token":
            if mode == "token-redirect":
                return self._send(307, b"", {"Location": f"{self.owner.redirect_to}/auth/token"})
            return self._json({"access_token": TOKEN, "token_type": "bearer"}, 201)
        if mode == "leaky-errors" and (leaky := _leaky(path)) is not None:
            return self._json(*leaky)
        if mode == "own-secrets" and (own := _own_secrets(path, self.owner.password)) is not None:
            return self._json(*own)
        if mode == "refused-quoting" and path == "/api/v2/dags":
            return self._json({"detail": REFUSED}, 400)
        if path == "/api/v2/dags":
            return self._dags(mode, int(query.get("offset", 0)))
        if path == "/api/v2/assets" and mode == "assets-ignore-offset":
            assets = [{"uri": f"s3://lake/asset_{i:03d}", "name": f"asset_{i:03d}"} for i in range(100)]
            return self._json({"assets": assets, "total_entries": 300})
        if path in ("/api/v2/assets", "/api/v2/assets/aliases", "/api/v2/dagWarnings"):
            key = {"/api/v2/assets": "assets", "/api/v2/assets/aliases": "asset_aliases"}.get(
                path, "dag_warnings"
            )
            return self._json({key: [], "total_entries": 0})
        if path.startswith("/api/v2/dags/") and path.endswith("/tasks"):
            return self._json(
                {"tasks": [{"task_id": "t", "operator_name": "EmptyOperator"}], "total_entries": 1}
            )
        return self._json({"detail": "Not Found"}, 404)

    def _dags(self, mode: str, offset: int) -> None:
        redirect = {
            "get-redirect": f"{self.owner.redirect_to}/api/v2/dags",
            "redirect-loop": "/api/v2/dags?loop=1",
            "redirect-file": "file:///etc/passwd",
        }
        if mode in redirect:
            return self._send(302, b"", {"Location": redirect[mode]})
        if mode == "lying-total":
            return self._json({"dags": [_dag(f"d{offset:010d}")], "total_entries": 10**9})
        if mode == "gzip-bomb":
            return self._send(200, gzip_bomb(), {"Content-Encoding": "gzip"})
        if mode == "ignores-limit":
            return self._send(200, huge_page(), {"Content-Type": "application/json"})
        if mode == "trickle":
            body = json.dumps({"dags": [_dag("a")], "total_entries": 1}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body:
                if self.owner.stopping.wait(1.0):
                    return None
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return None
            return None
        if mode in ("header-trickle", "endless-headers"):
            return self._slow_headers(mode)
        if mode == "ignores-offset":
            return self._json({"dags": [_dag(f"d{i:03d}") for i in range(100)], "total_entries": 300})
        if mode == "endless":
            return self._json(
                {"dags": [_dag(f"d{offset + i:010d}") for i in range(100)], "total_entries": offset + 200}
            )
        if mode == "echo-secrets":
            echoed = f"token {self.headers.get('Authorization')} rejected for password {self.owner.password}"
            return self._json({"detail": echoed}, 403)
        if mode == "deep-json":
            return self._send(200, b"[" * 100_000 + b"]" * 100_000, {"Content-Type": "application/json"})
        if mode == "bad-utf8":
            body = b'{"dags": [{"dag_id": "caf\xe9"}, {"dag_id": "caf\xe8"}], "total_entries": 2}'
            return self._send(200, body, {"Content-Type": "application/json"})
        if mode == "dot-ids":
            return self._json({"dags": [_dag("."), _dag("..")], "total_entries": 2})
        return self._json({"dags": [_dag("a")], "total_entries": 1})

    def _slow_headers(self, mode: str) -> None:
        """Headers that never finish in time, every byte (or line) inside the client's read timeout."""
        if mode == "header-trickle":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
            pieces, pause = [bytes([b]) for b in head], 1.5
        else:
            pieces = [b"HTTP/1.1 200 OK\r\n", *(f"X-Filler-{i}: x\r\n".encode() for i in range(10**6))]
            pause = 0.5
        self.close_connection = True
        for piece in pieces:
            try:
                self.wfile.write(piece)
                self.wfile.flush()
            except OSError:
                return None  # the client cut the connection: what it must do
            if self.owner.stopping.wait(pause):
                return None
        return None

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(status, json.dumps(value).encode(), {"Content-Type": "application/json"})

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up: that is the point of some modes
            self.wfile.write(body)


class _ReceiverHandler(_Handler):
    owner: HostileReceiver  # type: ignore[assignment]

    def handle(self) -> None:
        with contextlib.suppress(ConnectionError):  # a client that gave up mid-answer: the point
            super().handle()

    def answer(self, body: bytes) -> None:
        mode, path = self.owner.mode, self.path
        if path.startswith("/oauth/token"):
            if mode == "token-redirect":
                return self._send(307, b"", {"Location": f"{self.owner.redirect_to}{path}"})
            return self._json({"access_token": TOKEN, "token_type": "bearer", "expires_in": 3600})
        if mode == "header-trickle":
            return self._slow_headers(mode)
        if mode == "gzip-bomb":
            headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
            return self._send(200, gzip_bomb(), headers)
        if mode == "trickle":
            text = b'{"status": "accepted, eventually"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            for byte in text:
                if self.owner.stopping.wait(1.0):
                    return None
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return None
            return None
        if mode == "redirect":
            return self._send(307, b"", {"Location": f"{self.owner.redirect_to}{path}"})
        if mode == "echo-query":
            return self._json({"detail": f"no such receiver {path}"}, 400)
        if mode == "refuse":
            return self._json({"detail": "busy"}, 500)
        return self._send(200, b"", {})


class HostileReceiver(BackgroundHTTPServer):
    """An endpoint that lies to whoever POSTs to it, in one mode; ``redirect_to`` is where its
    redirects point. ``events`` are the bodies POSTed to anything but the token path."""

    handler_class = _ReceiverHandler
    description = "the hostile receiver"
    thread_name = "hostile-receiver"

    def __init__(self, mode: str, *, redirect_to: str = "http://127.0.0.1:9") -> None:
        super().__init__()
        self.mode = mode
        self.redirect_to = redirect_to
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0

    def stop(self) -> None:
        self.stopping.set()
        time.sleep(0)
        super().stop()


class HostileApi(BackgroundHTTPServer):
    """The fake API in one mode; ``redirect_to`` is where its redirects point."""

    handler_class = _Handler
    description = "the hostile API"
    thread_name = "hostile-api"

    def __init__(self, mode: str, *, password: str = "", redirect_to: str = "http://127.0.0.1:9") -> None:
        super().__init__()
        self.mode = mode
        self.password = password
        self.redirect_to = redirect_to
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        if mode == "ignores-limit":
            huge_page()

    def stop(self) -> None:
        self.stopping.set()
        time.sleep(0)  # let trickling handlers see it
        super().stop()
