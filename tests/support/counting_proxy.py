"""A tiny reverse proxy on 127.0.0.1 that forwards everything upstream and counts the requests.

Put it between a client and a server to see how many calls the client makes (to check paging,
caching or connection reuse) without changing either side::

    from support.counting_proxy import CountingProxy

    with AirflowV1ReplayServer() as airflow, CountingProxy(airflow.base_url) as proxy:
        client = SomeClient(proxy.base_url)
        ...
        assert proxy.count("/api/v1/dags") == 3

Each request is forwarded as it came (method, path with query, headers including
``Authorization``, body) to the upstream base URL; the upstream's status, headers and body come
back unchanged, except for the hop-by-hop headers (``Connection``, ``Transfer-Encoding``,
``Keep-Alive``, ...), which belong to one connection only, and ``Content-Length``, which is set
to the body actually sent.

Clients may keep their connections open (HTTP/1.1 keep-alive) and may connect concurrently:
each client connection gets its own handler thread, and each handler thread its own upstream
connection. If the upstream cannot be reached, the client gets a 502.
"""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlsplit

from support.local_http import BackgroundHTTPServer, RequestHandler

# Headers that describe one connection, not the message (RFC 9110 section 7.6.1); never forwarded.
HOP_BY_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
UPSTREAM_TIMEOUT = 30.0  # seconds
# What a kept-alive upstream connection raises when the upstream has closed it meanwhile.
STALE_CONNECTION_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _connection_headers(headers: Any) -> set[str]:
    """The hop-by-hop headers of a message: the fixed ones plus those its ``Connection`` names."""
    named = {
        token.strip().lower() for value in headers.get_all("Connection", []) for token in value.split(",")
    }
    return HOP_BY_HOP_HEADERS | named


class _ProxyHandler(RequestHandler):
    """Forwards one client connection's requests over one upstream connection."""

    server_version = "CountingProxy"
    owner: CountingProxy

    def setup(self) -> None:
        super().setup()
        self._upstream: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if self._upstream is not None:
                self._upstream.close()

    def do_HEAD(self) -> None:  # GET, POST, PUT, PATCH and DELETE come from RequestHandler
        self.dispatch()

    def do_OPTIONS(self) -> None:
        self.dispatch()

    def answer(self, body: bytes) -> None:
        skip = _connection_headers(self.headers) | {"host", "content-length", "expect"}
        headers = {name: value for name, value in self.headers.items() if name.lower() not in skip}
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        try:
            response, response_body = self._exchange(headers, body)
        except (OSError, http.client.HTTPException) as error:
            self.send_error(502, "Bad Gateway", f"upstream {self.owner.upstream_base_url}: {error}")
            return

        # Not send_response(), which adds a Server and a Date of its own: forward the upstream's.
        self.log_request(response.status)
        self.send_response_only(response.status, response.reason)
        skip = _connection_headers(response.headers) | {"content-length"}
        for name, value in response.headers.items():
            if name.lower() not in skip:
                self.send_header(name, value)
        if self.command == "HEAD":
            # No body: pass on the length the body would have had, if the upstream said.
            if response.headers.get("Content-Length") is not None:
                self.send_header("Content-Length", response.headers["Content-Length"])
        elif response.status not in (204, 304):
            self.send_header("Content-Length", str(len(response_body)))
        self.end_headers()
        if self.command != "HEAD":
            self.write_body(response_body)

    def write_body(self, data: bytes) -> None:
        """Send the upstream's body, whose length the headers already announced (a hook for subclasses)."""
        self.wfile.write(data)

    def _exchange(self, headers: dict[str, str], body: bytes) -> tuple[http.client.HTTPResponse, bytes]:
        """Send the request upstream and read the whole answer.

        A kept-alive upstream connection may have been closed by the upstream in the meantime;
        then the request is sent once more over a fresh connection.
        """
        while True:
            reused = self._upstream is not None
            if self._upstream is None:
                self._upstream = self.owner._connect()
            try:
                path = self.owner._upstream_path(self.path)
                self._upstream.request(self.command, path, body or None, headers)
                response = self._upstream.getresponse()
                return response, response.read()
            except STALE_CONNECTION_ERRORS:
                self._upstream.close()
                self._upstream = None
                if not reused:
                    raise
            except (OSError, http.client.HTTPException):
                self._upstream.close()
                self._upstream = None
                raise


class CountingProxy(BackgroundHTTPServer):
    """A reverse proxy on 127.0.0.1 in front of ``upstream_base_url`` that records every request.

    Use as a context manager (or call ``start()`` and ``stop()``); it always stops on exit.
    ``base_url`` is ``http://127.0.0.1:PORT`` once started. ``requests`` lists the requests as
    ``(method, path_with_query)`` in arrival order; ``count(prefix)`` counts those whose path
    starts with ``prefix``; ``reset()`` forgets them (all from ``local_http.BackgroundHTTPServer``).
    """

    handler_class = _ProxyHandler
    description = "the proxy"
    thread_name = "counting-proxy"

    def __init__(self, upstream_base_url: str) -> None:
        super().__init__()
        upstream = urlsplit(upstream_base_url)
        if upstream.scheme not in ("http", "https") or not upstream.hostname:
            raise ValueError(f"not an http(s) base URL: {upstream_base_url!r}")
        self.upstream_base_url = upstream_base_url.rstrip("/")
        self._upstream = upstream

    # -- called from the handler threads ---------------------------------------------------------

    def _connect(self) -> http.client.HTTPConnection:
        connection_class = (
            http.client.HTTPSConnection if self._upstream.scheme == "https" else http.client.HTTPConnection
        )
        return connection_class(self._upstream.hostname, self._upstream.port, timeout=UPSTREAM_TIMEOUT)

    def _upstream_path(self, path: str) -> str:
        """The request path under the upstream base URL's own path (if it has one)."""
        return self._upstream.path.rstrip("/") + path
