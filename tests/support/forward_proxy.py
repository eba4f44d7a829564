"""A forward HTTP proxy on 127.0.0.1 that records every request it is asked to relay.

What ``HTTP_PROXY`` names: a client sends it each request in absolute form
(``GET http://host:port/path?query HTTP/1.1``); the proxy records the request as it came (the
absolute target in ``requests``, headers and body in ``received``) and relays it to that origin,
its answer coming back unchanged but for the hop-by-hop headers. A test sets ``HTTP_PROXY`` to
``proxy.base_url`` and reads ``proxy.targets()`` to see which URLs went through it::

    with RecordingForwardProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.base_url)
        ...
        assert all(t.startswith("http://127.0.0.1:") for t in proxy.targets())

Plain HTTP only: ``CONNECT`` (the tunnel an ``https://`` URL takes) is refused with 501, which
the tests here never need. An origin that cannot be reached gets a 502.
"""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from support.counting_proxy import UPSTREAM_TIMEOUT, _connection_headers
from support.local_http import BackgroundHTTPServer, RequestHandler


class _ForwardHandler(RequestHandler):
    server_version = "RecordingForwardProxy"
    owner: RecordingForwardProxy

    def do_CONNECT(self) -> None:
        self.send_error(501, "CONNECT is not supported by this test proxy")

    def answer(self, body: bytes) -> None:
        target = urlsplit(self.path)
        if target.scheme != "http" or not target.hostname:  # not absolute form: not a proxy request
            self.send_error(400, "a proxy takes absolute-form requests only")
            return
        # the Host header stays as the client sent it (a SigV4 signature covers it)
        skip = _connection_headers(self.headers) | {"content-length", "expect"}
        headers = {name: value for name, value in self.headers.items() if name.lower() not in skip}
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        upstream = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=UPSTREAM_TIMEOUT)
        try:
            upstream.request(self.command, path, body=body or None, headers=headers)
            response = upstream.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.send_error(502, "Bad Gateway", f"{target.hostname}:{target.port}: {error}")
            return
        finally:
            upstream.close()
        self.send_response_only(response.status, response.reason)
        drop = _connection_headers(response.headers) | {"content-length"}
        for name, value in response.headers.items():
            if name.lower() not in drop:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class RecordingForwardProxy(BackgroundHTTPServer):
    """The proxy: ``targets()`` lists the absolute URLs it relayed, oldest first."""

    handler_class = _ForwardHandler
    description = "the forward proxy"
    thread_name = "forward-proxy"

    def targets(self) -> list[str]:
        return [path for _, path in self.requests]
