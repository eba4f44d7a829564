"""Local HTTP servers for the tests: a background-thread base class and a scripted server.

``BackgroundHTTPServer`` is the common part of every fake server the tests run: it listens on
127.0.0.1 on a port picked by the operating system, serves from a background thread (one
handler thread per connection, HTTP/1.1 keep-alive), records every request it receives, and
stops cleanly, closing any kept-alive connections, on ``stop()`` or when its ``with`` block
ends. A subclass sets ``handler_class`` to a ``RequestHandler`` subclass whose
``answer(body)`` writes the response; inside it, ``self.owner`` is the server object::

    class Hello(RequestHandler):
        def answer(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

    class HelloServer(BackgroundHTTPServer):
        handler_class = Hello

    with HelloServer() as server:
        requests.get(server.base_url + "/hi?x=1")
        assert server.requests == [("GET", "/hi?x=1")]

``ScriptedServer`` answers each request from a queue of scripted replies for its path, which
makes failures (an HTTP 503, a reset connection, a slow or truncated answer) easy to stage::

    with ScriptedServer({"/api/v2/version": json_reply({"version": "3.3.2"})}) as server:
        server.script("/api/v2/dags", json_reply({"detail": "busy"}, status=503), RESET)
        ...  # the first two requests for /api/v2/dags fail, later ones get the 404 fallback
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import struct
import sys
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote

_Server = TypeVar("_Server", bound="BackgroundHTTPServer")


class TrackingHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer (daemon threads) that can close its open keep-alive connections.

    A handler thread of an idle keep-alive connection waits for the client's next request;
    ``close_connections`` shuts those sockets down so that the threads end at once.
    """

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._open: set[socket.socket] = set()
        self._open_changed = threading.Condition()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_changed:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        try:
            super().shutdown_request(request)
        finally:
            with self._open_changed:
                self._open.discard(request)
                self._open_changed.notify_all()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request (many tests' clients give up on purpose) is not an
        error of the server: only other exceptions are printed, as socketserver does."""
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)

    def close_connections(self, timeout: float = 5.0) -> None:
        """Shut down every open connection and wait (at most ``timeout`` s) for their threads to let go."""
        with self._open_changed:
            for sock in self._open:
                with contextlib.suppress(OSError):  # already closed by the client
                    sock.shutdown(socket.SHUT_RDWR)
            self._open_changed.wait_for(lambda: not self._open, timeout)


@dataclass(frozen=True)
class Received:
    """One request as the server received it."""

    method: str
    path: str  # with the query string, as sent
    headers: Message  # case-insensitive ``headers.get("Authorization")``
    body: bytes


class RequestHandler(BaseHTTPRequestHandler):
    """The handler of one connection: reads each request's body, records it, then calls ``answer``.

    Subclasses implement ``answer(body)``. Every answer must carry a Content-Length (or close
    the connection), since connections are kept alive. GET, POST, PUT, PATCH and DELETE are
    handled; a subclass adds another method with ``def do_HEAD(self): self.dispatch()``.
    """

    protocol_version = "HTTP/1.1"  # keep-alive
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits for
    # the client's delayed ACK of the headers (40 ms on Linux) on every kept-alive request.
    disable_nagle_algorithm = True
    timeout = 30  # seconds an idle keep-alive connection is kept open
    owner: BackgroundHTTPServer  # set on the subclass made for each server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``server.requests`` instead of an access log."""

    def do_GET(self) -> None:
        self.dispatch()

    def do_POST(self) -> None:
        self.dispatch()

    def do_PUT(self) -> None:
        self.dispatch()

    def do_PATCH(self) -> None:
        self.dispatch()

    def do_DELETE(self) -> None:
        self.dispatch()

    def answer(self, body: bytes) -> None:
        """Write the response to ``self.wfile`` (``body`` is the request's, already read)."""
        raise NotImplementedError

    def dispatch(self) -> None:
        """Read the body, record the request on the owner, and answer it."""
        body = self.read_body()
        self.owner._record(Received(self.command, self.path, self.headers, body))
        self.answer(body)

    def read_body(self) -> bytes:
        """The request body, from a Content-Length or a chunked Transfer-Encoding.

        Always read, so that the next request on a kept-alive connection starts clean.
        """
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # skip trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""


class BackgroundHTTPServer:
    """An HTTP server on 127.0.0.1 that serves from a background thread and records its requests.

    Use as a context manager (or call ``start()`` and ``stop()``); it always stops on exit.
    ``base_url`` is ``http://127.0.0.1:PORT`` once started. ``requests`` lists the requests as
    ``(method, path_with_query)`` in arrival order, ``received`` the same with headers and
    bodies; ``count(prefix)`` counts those whose path starts with ``prefix``; ``reset()``
    forgets them. All of these are safe to call while requests are being served.
    """

    handler_class: type[RequestHandler] = RequestHandler
    description = "the server"  # in error messages: "<description> is not running"
    thread_name = "local-http"  # the serving thread is "<thread_name>-<port>"
    #: Serve HTTPS with this server-side context (tests/support/tls.py makes one); None: plain HTTP.
    tls: ssl.SSLContext | None = None

    def __init__(self) -> None:
        self._received: list[Received] = []
        self._received_lock = threading.Lock()
        self._server: TrackingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{self.description} is not running")
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    @property
    def requests(self) -> list[tuple[str, str]]:
        """A snapshot of the requests so far, as ``(method, path_with_query)``, oldest first."""
        with self._received_lock:
            return [(r.method, r.path) for r in self._received]

    @property
    def received(self) -> list[Received]:
        """A snapshot of the requests so far, with their headers and bodies, oldest first."""
        with self._received_lock:
            return list(self._received)

    def count(self, prefix: str = "") -> int:
        """How many requests had a path (with query) starting with ``prefix``."""
        with self._received_lock:
            return sum(1 for r in self._received if r.path.startswith(prefix))

    def reset(self) -> None:
        """Forget the recorded requests."""
        with self._received_lock:
            self._received.clear()

    def start(self: _Server) -> _Server:
        if self._server is not None:
            raise RuntimeError(f"{self.description} is already running")
        handler = type(self.handler_class.__name__.lstrip("_"), (self.handler_class,), {"owner": self})
        self._server = TrackingHTTPServer(("127.0.0.1", 0), handler)  # port 0: the OS picks a free one
        if self.tls is not None:  # each accepted connection does its handshake in the serving thread
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.thread_name}-{self._server.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and the listening socket. Safe to call twice."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _record(self, request: Received) -> None:
        """Called from the handler threads."""
        with self._received_lock:
            self._received.append(request)


# -- the scripted server -------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, headers and body, and how to misbehave while sending it.

    ``delay``: seconds to wait before answering (to cause a client's read timeout).
    ``truncate``: announce the full Content-Length, send only half the body, then close.
    ``reset``: close the connection with a TCP reset instead of answering at all.
    """

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncate: bool = False
    reset: bool = False


def json_reply(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    """A JSON answer."""
    return Reply(status, json.dumps(value).encode(), {"Content-Type": "application/json", **(headers or {})})


def delayed(seconds: float, reply: Reply) -> Reply:
    """``reply``, sent only after ``seconds``."""
    return replace(reply, delay=seconds)


def truncated(reply: Reply) -> Reply:
    """``reply`` cut short on the wire: its Content-Length promises more than is sent."""
    return replace(reply, truncate=True)


#: Reset the connection without answering.
RESET = Reply(reset=True)
#: The answer to a path with nothing scripted and no default.
NOT_FOUND = json_reply({"detail": "Not Found"}, status=404)


def no_aliases_no_warnings() -> dict[str, Reply]:
    """What an Airflow 3 server without asset aliases, DAG warnings, failed runs or import errors
    answers to the lists the capture reads beside the DAGs and assets: defaults for a scripted
    Airflow 3. (Its dependency graph and DAG details follow what else is scripted: see
    ``ScriptedServer``.)"""
    return {
        "/api/v2/assets/aliases": json_reply({"asset_aliases": [], "total_entries": 0}),
        "/api/v2/dagWarnings": json_reply({"dag_warnings": [], "total_entries": 0}),
        "/api/v2/importErrors": json_reply({"import_errors": [], "total_entries": 0}),
        FAILED_RUNS: json_reply({"dags": [], "total_entries": 0}),
    }


#: The list of DAGs whose latest run failed (a script key: the DAG list with that filter).
FAILED_RUNS = "/api/v2/dags?last_dag_run_state=failed"


class _ScriptedHandler(RequestHandler):
    """Answers each request with the next scripted ``Reply`` for its path."""

    server_version = "Scripted"
    owner: ScriptedServer

    def answer(self, body: bytes) -> None:
        reply = self.owner._next_reply(self.path)
        if reply.delay and self.owner._stopping.wait(reply.delay):
            reply = RESET  # the server is stopping: do not keep stop() waiting
        if reply.reset:
            # SO_LINGER with a zero timeout makes the close send a RST rather than a FIN (the
            # socket really closes in finish(), once the handler's file objects let go of it).
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        sent = reply.body[: len(reply.body) // 2] if reply.truncate else reply.body
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            if reply.truncate:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(sent)
        except OSError:  # the client gave up waiting (a read timeout): nobody to answer
            self.close_connection = True
        if reply.truncate:
            self.close_connection = True


class ScriptedServer(BackgroundHTTPServer):
    """A server whose answers are scripted per path (the path without its query string).

    Each request takes the next reply from its path's queue (``script(path, *replies)``); once
    the queue is empty it gets the path's default (``defaults`` or ``set_default``), or a 404
    ``{"detail": "Not Found"}``. A key may name a query too (``/api/v2/dags?last_dag_run_state=failed``):
    it then takes the requests of that path whose query has those values. The method is not
    looked at.
    """

    handler_class = _ScriptedHandler
    description = "the scripted server"
    thread_name = "scripted-http"

    def __init__(self, defaults: dict[str, Reply] | None = None) -> None:
        super().__init__()
        self._defaults: dict[str, Reply] = dict(defaults or {})
        self._queues: dict[str, deque[Reply]] = {}
        self._script_lock = threading.Lock()
        self._stopping = threading.Event()

    def script(self, path: str, *replies: Reply) -> None:
        """Queue ``replies`` for the next requests of ``path``, after any already queued."""
        with self._script_lock:
            self._queues.setdefault(path, deque()).extend(replies)

    def set_default(self, path: str, reply: Reply) -> None:
        """The answer for ``path`` whenever its queue is empty."""
        with self._script_lock:
            self._defaults[path] = reply

    def start(self) -> ScriptedServer:
        self._stopping.clear()
        return super().start()

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping before a delayed reply
        super().stop()

    def _next_reply(self, target: str) -> Reply:
        """The reply for a request target: a script keyed ``path?name=value`` takes the requests
        of that path whose query has that value; any other, the requests of its path."""
        path, _, query = target.partition("?")
        asked = set(parse_qsl(query, keep_blank_values=True))
        with self._script_lock:
            keys = [
                key
                for key in {*self._queues, *self._defaults}
                if key.startswith(path + "?") and set(parse_qsl(key.partition("?")[2])) <= asked
            ]
            key = keys[0] if keys else path
            queue = self._queues.get(key)
            if queue:
                return queue.popleft()
            if key not in self._defaults:
                return self._derived(path)
            return self._defaults[key]

    def _derived(self, path: str) -> Reply:
        """What a real Airflow 3 answers, where nothing is scripted, to the two requests whose answer
        follows from the rest: the dependency graph, drawn from the scripted asset list's references
        (the code declares them all), a DAG's details, for a DAG with no ``doc_md``, and its deadline
        alerts (Airflow 3.3's UI route), for a DAG with none. Any other path is a 404. A test about
        any of them scripts it."""
        assets = self._defaults.get("/api/v2/assets")
        if path == "/ui/dependencies" and assets is not None and assets.status == 200:
            return json_reply(graph_of(json.loads(assets.body or b"{}")))
        parts = path.split("/")
        if len(parts) == 6 and parts[1:4] == ["api", "v2", "dags"] and parts[5] == "details":
            return json_reply({"dag_id": unquote(parts[4]), "doc_md": None})
        if len(parts) == 5 and parts[1:3] == ["ui", "dags"] and parts[4] == "deadlineAlerts":
            return json_reply({"deadline_alerts": [], "total_entries": 0})
        return NOT_FOUND


def graph_of(assets_page: Any) -> dict[str, Any]:
    """``GET /ui/dependencies`` of an estate whose code declares every reference of ``assets_page``."""
    edges = []
    for raw in assets_page.get("assets", []) if isinstance(assets_page, dict) else []:
        if not isinstance(raw, dict):
            continue
        node = f"asset:{raw.get('id')}"
        for ref in raw.get("producing_tasks") or []:
            if isinstance(ref, dict):
                edges.append({"source_id": f"dag:{ref.get('dag_id')}", "target_id": node})
        for key in ("scheduled_dags", "consuming_dags"):
            for ref in raw.get(key) or []:
                if isinstance(ref, dict):
                    edges.append({"source_id": node, "target_id": f"dag:{ref.get('dag_id')}"})
    return {"nodes": [], "edges": edges}
