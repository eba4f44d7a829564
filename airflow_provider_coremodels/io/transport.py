"""The HTTP pieces capture and the endpoint sink share: retries inside a deadline, bounded
bodies, and no secret in any message.

When to retry a request, and for how long: exponential backoff with jitter inside a deadline
that bounds the run's retries. Every body is read as a stream, decompressed piece by piece,
and refused past ``max_bytes`` (a gzip bomb inflates no further than that) or past a deadline
over the whole response (a server that trickles one byte a second gets no more than one read
timeout past it). Credentials written into a URL (``user:password@``) are split out before the
URL is recorded anywhere, and every secret the run knows is scrubbed from every message.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
import urllib3
import urllib3.connection
from requests.adapters import HTTPAdapter

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.errors import CoreModelsError
from airflow_provider_coremodels.redaction import scrub, scrubbed_logger

log = scrubbed_logger(__name__)

_CHUNK = 64 * 1024


#: Statuses worth another try: rate limiting and the gateway/overload family. 500 is included
#: because Airflow answers 500 for transient database errors, and every request retried is safe
#: to repeat: capture's GETs, and the endpoint sink's POST, which carries an Idempotency-Key.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """Per request at most ``max_attempts``; per capture no retry once ``budget`` seconds are spent."""

    max_attempts: int = 6
    backoff: float = 0.5
    max_backoff: float = 10.0
    budget: float = defaults.RETRY_BUDGET

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1``: the server's Retry-After, else jittered backoff."""
        if retry_after is not None:
            return max(0.0, retry_after)
        ceiling = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


class Deadline:
    """The budget of one capture or push: its retries, and the whole run, shared by all of its
    requests and threads. No request starts once it is spent, and none reads past it: at its
    expiry it cuts the sockets of the transports that watch it (``on_expiry``), so a thread
    blocked on a server that sends its headers a byte at a time returns at once, and the process
    can end."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self._timer: threading.Timer | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def on_expiry(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from a daemon timer thread) when the budget runs out, unless closed first."""
        with self._lock:
            self._callbacks.append(callback)
            if self._timer is None:
                self._timer = threading.Timer(self.remaining(), self._expire)
                self._timer.name, self._timer.daemon = "coremodels-deadline", True
                self._timer.start()

    def close(self) -> None:
        """The run is over (or has a new deadline): nothing is cut any more."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._callbacks.clear()

    def _expire(self) -> None:
        with self._lock:
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def spent(self) -> bool:
        return time.monotonic() >= self.expires

    def allows(self, delay: float) -> bool:
        return time.monotonic() + delay <= self.expires

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())


@dataclass
class Slot:
    """One attempt's place in a pacer's window, and what its answer told the pacer."""

    kind: str  # what the request is, for comparing latencies (capture/pacing.py's ``kind_of``)
    epoch: int  # the window's epoch when it was sent
    sent: float  # time.monotonic()
    seconds: float | None = None  # the time to the whole answer, when there was one worth comparing
    overloaded: bool = False
    retry_after: float | None = None

    def answered(self, ours: float = 0.0) -> None:
        """The whole answer is in: its latency counts, less ``ours`` (seconds this side spent
        decoding it as it arrived, which say nothing of the server)."""
        self.seconds = max(0.0, time.monotonic() - self.sent - ours)

    def refused(self, retry_after: float | None = None) -> None:
        """The server is overloaded (an overload status, a read timeout)."""
        self.overloaded, self.retry_after = True, retry_after


class Gate(Protocol):
    """What paces the attempts of a run (``capture/pacing.py``'s ``Pacer``): a slot before each
    attempt, at most until the monotonic time ``until``, and the slot back with what it told;
    a ``first`` request goes before the others waiting."""

    def enter(self, kind: str, until: float, *, first: bool = False) -> Slot: ...

    def leave(self, slot: Slot) -> None: ...


class Incremental(Protocol):
    """A decoder fed a body's bytes as they arrive (``core/reading/stream.py``'s ``AnswerReader``)."""

    def feed(self, data: bytes) -> None: ...

    def end(self) -> Any: ...


def parse_retry_after(value: str | None) -> float | None:
    """A Retry-After header in seconds, from delta-seconds or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def send_with_retries(
    session: requests.Session,
    method: str,
    url: str,
    *,
    policy: RetryPolicy,
    deadline: Deadline,
    error: type[CoreModelsError],
    on_attempt: Callable[[], None] = lambda: None,
    on_retry: Callable[[], None] = lambda: None,
    decode: bool = False,
    decoder: Callable[[bytes], Any] | None = None,
    max_bytes: int = defaults.MAX_RESPONSE_BYTES,
    pacer: Gate | None = None,
    kind: str = "",
    first: bool = False,
    transient: Callable[[requests.Response], str | None] | None = None,
    stream: Callable[[], Incremental] | None = None,
    **request: Any,
) -> tuple[requests.Response, Any]:
    """Send one request, retrying what is transient; return the final response (maybe a 4xx).

    Transient: connection errors, timeouts, a body cut short or too slow, the statuses in
    RETRY_STATUSES, and with ``decode`` a success whose body is not JSON (truncated on the
    wire). The body is read within ``max_bytes`` (decompressed) and the read timeout over the
    whole response; it is on the response as ``content``, and with ``decode`` its JSON comes
    back beside it (decoded strictly as UTF-8, as the offline parse decodes files). Gives up
    with ``error`` after ``policy.max_attempts`` or when the next wait would overrun the
    deadline; every failure, a redirect loop or a redirect to another scheme included, is
    ``error``, its message scrubbed of secrets. With a ``pacer`` each attempt waits for a slot in
    its window and tells it how long the answer of this ``kind`` took, or that the server is
    overloaded (a retried status, a read timeout: the window shrinks, and a Retry-After holds
    every request of the run, not only this one); a ``first`` attempt goes before the others
    waiting for a slot. ``transient``: what a final answer's body says is worth another try (an
    envelope carrying a 5xx from the server behind it, as MWAA's InvokeRestApi answers), or None.
    ``stream``: with ``decode``, a success's body is fed to a new one of these as it arrives, and
    what it ends with is the JSON: the body is never held whole (``content`` is then empty), so a
    large answer costs what the decoder keeps of it, not its size.
    """
    attempt = 0
    while True:
        if deadline.spent():
            raise error(
                f"{method} {url}: not sent, the budget of {deadline.seconds:g} s is spent (--retry-budget)"
            )
        attempt += 1
        on_attempt()
        if attempt > 1 and isinstance(request.get("timeout"), tuple):
            # a retry must not outlive the budget: its read timeout is what the budget has left
            connect, read = request["timeout"]
            request["timeout"] = (connect, max(0.1, min(read, deadline.remaining())))
        if pacer is not None:
            slot = pacer.enter(kind, deadline.expires, first=first)
        else:
            slot = Slot(kind, 0, time.monotonic())
        try:
            outcome = _attempt(
                session, method, url, request, slot, deadline, decode, decoder, max_bytes, error, transient,
                stream if decode else None,
            )  # fmt: skip
        finally:
            if pacer is not None:
                pacer.leave(slot)
        if isinstance(outcome, tuple):
            return outcome
        problem, retry_after = outcome.problem, outcome.retry_after
        cut = getattr(session, "cut_off", False)
        if cut and not deadline.spent():  # cancelled, or the run is over: said by whoever ended it
            raise error(f"{method} {url}: cut off, the run was cancelled or is over")
        delay = policy.delay(attempt, retry_after)
        if cut or attempt >= policy.max_attempts or not deadline.allows(delay):
            budget = f" (the retry budget of {policy.budget:g} s is spent)"
            spent = "" if attempt >= policy.max_attempts else budget
            attempts = f"{attempt} attempt{'s' if attempt > 1 else ''}"
            hint = _hint(url, problem)
            raise error(scrub(f"{method} {url} failed after {attempts}: {problem}{spent}{hint}"))
        log.warning("%s %s: %s; retrying in %.1f s (attempt %d)", method, url, problem, delay, attempt + 1)
        on_retry()
        time.sleep(delay)


class _Timed:
    """An ``Incremental`` and the time spent feeding it: the pacer judges the server by how long
    an answer took to arrive, not by how long this side took to decode it on the way."""

    def __init__(self, inner: Incremental) -> None:
        self.inner = inner
        self.seconds = 0.0

    def feed(self, data: bytes) -> None:
        started = time.monotonic()
        try:
            self.inner.feed(data)
        finally:
            self.seconds += time.monotonic() - started

    def end(self) -> Any:
        return self.inner.end()


@dataclass(frozen=True)
class _Transient:
    """Why one attempt failed in a way worth another try, and the server's Retry-After if it gave one."""

    problem: str
    retry_after: float | None = None


def _attempt(
    session: requests.Session,
    method: str,
    url: str,
    request: dict[str, Any],
    slot: Slot,
    deadline: Deadline,
    decode: bool,
    decoder: Callable[[bytes], Any] | None,
    max_bytes: int,
    error: type[CoreModelsError],
    transient: Callable[[requests.Response], str | None] | None = None,
    stream: Callable[[], Incremental] | None = None,
) -> tuple[requests.Response, Any] | _Transient:
    """One attempt of ``send_with_retries``: the final answer, or what makes it worth another."""
    retry_after: float | None = None
    problem: str | None
    try:
        response = session.request(method, url, stream=True, **request)
    except requests.exceptions.SSLError as exc:
        reason = _tls_reason(exc)
        raise error(scrub(f"TLS error talking to {url}: {reason}{_hint(url, reason)}")) from None
    except requests.Timeout as exc:  # the server is too busy to answer in time: it is overloaded too
        slot.refused()
        return _Transient(f"{type(exc).__name__}: {_reason(exc)}")
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
        return _Transient(f"{type(exc).__name__}: {_reason(exc)}")
    except requests.RequestException as exc:  # too many redirects, a redirect to file:// ...
        raise error(scrub(f"{method} {url} failed: {_reason(exc)}")) from None
    # a success is decoded as it arrives (a redirect, an error or a retried status is read whole)
    fed = _Timed(stream()) if stream is not None and 200 <= response.status_code < 300 else None
    try:
        problem = _read_body(response, max_bytes, _timeout_of(request), deadline, fed)
    except _TooLarge as exc:
        raise error(scrub(f"{method} {url} {exc}")) from None
    except ValueError as exc:  # not JSON, seen before its end: worth another try, as below
        return _Transient(f"the response body is not valid JSON ({exc})")
    if problem is not None:
        return _Transient(problem)
    if response.is_redirect and request.get("allow_redirects", True):
        target = origin(urljoin(response.url, response.headers.get("Location", "")))
        raise error(
            scrub(
                f"{method} {url} answered HTTP {response.status_code}, a redirect to another "
                f"origin ({target}): not followed, so nothing is sent there and nothing it "
                "answers is read"
            )
        )
    if response.status_code in RETRY_STATUSES:
        if response.status_code in (429, 503):  # the statuses RFC 9110 gives Retry-After
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
        slot.refused(retry_after)
        return _Transient(f"HTTP {response.status_code}", retry_after)
    problem = transient(response) if transient is not None else None
    if problem is not None:
        slot.refused()
        return _Transient(problem)
    slot.answered(fed.seconds if fed is not None else 0.0)
    if not decode or response.status_code >= 300:
        return response, None  # a redirect not followed, or a 4xx: the caller decides
    try:
        if fed is not None:
            return response, fed.end()
        return response, (decoder or decode_json)(response.content)
    except ValueError as exc:  # truncated, garbled, not UTF-8: worth another try
        return _Transient(f"the response body is not valid JSON ({exc})")


class Transport:
    """The one way the provider sends HTTP (capture, the endpoint sink, OpenLineage): a session
    whose connections a deadline can cut, which follows a redirect only within the origin it
    was sent to (a redirect elsewhere comes back unfollowed, and ``send_with_retries`` refuses
    it), with a CA bundle resolved once and each origin's proxy resolved once, on its first
    request (``_SameOriginSession.proxies_for``), rather than at every request.

    ``url``: the origin the transport is made for; its proxy is resolved at once, so a proxy
    setting that cannot be read fails here. Every other origin a request goes to (Composer's
    metadata server and token endpoint, beside its web server) gets its own, by ``NO_PROXY``.
    """

    def __init__(
        self, *, pool_size: int = 1, verify: bool | str = True, url: str | None = None, trust_env: bool = True
    ) -> None:
        self.session = _SameOriginSession(environ_proxies=trust_env)
        self.adapter = _CuttableAdapter(pool_connections=1, pool_maxsize=pool_size)
        self.session.mount("http://", self.adapter)
        self.session.mount("https://", self.adapter)
        self.session.trust_env = False
        if trust_env:  # what requests reads from the environment, read once
            if url:
                self.session.proxies_for(url)
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            verify = bundle if verify is True and bundle else verify
        self.session.verify = verify

    def watch(self, deadline: Deadline) -> None:
        """Cut every connection of this transport when ``deadline`` expires."""
        deadline.on_expiry(self.cut)

    def cut(self) -> None:
        """Shut every socket this transport holds, now and from now on: a read blocked on any of
        them returns at once (as a failed request)."""
        self.adapter.sockets.cut()

    def close(self) -> None:
        """Done: every connection is cut (a request still in flight on another thread, one the run
        gave up waiting for, ends now rather than holding the process), then closed."""
        self.cut()
        self.session.close()


class _SameOriginSession(requests.Session):
    """A session that follows a redirect only to the origin (scheme, host, port) it was sent to.

    Another origin's answer is never read, so nothing of it can reach a message (a redirect is
    the way a server would make the provider fetch, and repeat, what it should not); the 3xx
    comes back to the caller instead.

    With ``environ_proxies`` each request goes through the proxy the environment gives its own
    URL (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, read by requests' own
    ``get_environ_proxies``), resolved once per origin: a host ``NO_PROXY`` exempts is reached
    directly whichever origin the transport was made for. (``trust_env`` stays off: requests
    would read the whole environment again at every request, a third of a large capture's CPU.)
    """

    def __init__(self, *, environ_proxies: bool = False) -> None:
        super().__init__()
        self.environ_proxies = environ_proxies
        self._proxies: dict[str, dict[str, str]] = {}
        self._proxies_lock = threading.Lock()

    def proxies_for(self, url: str) -> dict[str, str]:
        """The proxies the environment gives ``url`` (none where ``NO_PROXY`` exempts its host),
        read once per origin."""
        if not self.environ_proxies:
            return {}
        key = origin(url)
        with self._proxies_lock:
            found = self._proxies.get(key)
            if found is None:
                found = self._proxies[key] = requests.utils.get_environ_proxies(url)
            return found

    def request(self, method: str, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        if kwargs.get("proxies") is None and self.environ_proxies:
            text = url.decode("ascii", "replace") if isinstance(url, bytes) else url
            kwargs["proxies"] = self.proxies_for(text)
        return super().request(method, url, *args, **kwargs)

    @property
    def cut_off(self) -> bool:
        """Whether its connections were cut (the run is over): no request is retried then."""
        adapter = self.adapters.get("http://")
        return isinstance(adapter, _CuttableAdapter) and adapter.sockets.cut_off

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        target = super().get_redirect_target(resp)
        if target is None:
            return None
        if origin(urljoin(resp.url, target)) != origin(resp.url):
            return None
        return target


def origin(url: str) -> str:
    """``scheme://host:port`` of a URL, the port made explicit where the scheme has one; never
    the user info, path or query (what a message may show of a URL it was not pointed at)."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return "an unreadable URL"
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


class _Sockets:
    """The sockets of an adapter's connections, to cut at once from another thread."""

    def __init__(self) -> None:
        self._live: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.cut_off = False

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            if not self.cut_off:
                self._live.add(sock)
                return
        _shut(sock)  # a connection opened after the cut is cut at once

    def cut(self) -> None:
        with self._lock:
            self.cut_off = True
            live = list(self._live)
        for sock in live:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _CuttableAdapter(HTTPAdapter):
    """An adapter whose connections register their sockets (``_Sockets``) as they open them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sockets = _Sockets()
        super().__init__(*args, **kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _pools(self.sockets)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _pools(self.sockets)
        return manager


def _pools(sockets: _Sockets) -> dict[str, type[urllib3.HTTPConnectionPool]]:
    """Connection pools whose connections tell ``sockets`` of each socket they open."""

    class Connection(urllib3.connection.HTTPConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            sockets.add(sock)
            return sock

    class TlsConnection(urllib3.connection.HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            sock = super()._new_conn()
            sockets.add(sock)
            return sock

    class Pool(urllib3.HTTPConnectionPool):
        ConnectionCls = Connection

    class TlsPool(urllib3.HTTPSConnectionPool):
        ConnectionCls = TlsConnection

    return {"http": Pool, "https": TlsPool}


def server_message(response: requests.Response) -> str:
    """``": <the server's error message>"``, or ``""``: a JSON ``detail``, ``message`` or ``error``,
    else the first line of the body; bounded, and scrubbed of every secret the run knows and of
    credential shapes (a server may quote a connection string or a token back)."""
    try:
        body = decode_json(response.content)
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("detail", "message", "error"):
            value = body.get(key)
            if isinstance(value, str) and value:
                return ": " + scrub(value[:5000])[:500]  # scrubbed, then cut
    text = response.content[:2000].decode("utf-8", "replace").strip()
    text = scrub(text.splitlines()[0])[:200] if text else ""  # scrubbed, then cut
    return f": {text}" if text else ""


def decode_json(data: bytes) -> Any:
    """A body's JSON, by the offline parse's one rule: strict UTF-8, nesting within bounds."""
    from airflow_provider_coremodels.core.reading.parse import decode

    return decode(data)


class _TooLarge(Exception):
    """A body over the size limit: refused at once, since another try would send the same."""


def _timeout_of(request: dict[str, Any]) -> float | None:
    timeout = request.get("timeout")
    return float(timeout[1]) if isinstance(timeout, tuple) else (float(timeout) if timeout else None)


def _read_body(
    response: requests.Response,
    max_bytes: int,
    seconds: float | None,
    deadline: Deadline,
    fed: Incremental | None = None,
) -> str | None:
    """Read the whole body onto ``response`` within the limits; a transient problem, or None.
    ``fed``: the body goes to this decoder piece by piece instead (``content`` stays empty); its
    ValueError (not JSON) ends the read at once.

    The body must arrive within the read timeout, as a whole, and within what the run's budget
    has left: a server sending one byte a second holds a capture no longer than that.

    ``read1`` returns as soon as any bytes arrive, so a trickling server is seen between reads;
    urllib3 decompresses at most what is asked for per call, so a bomb never inflates whole.
    """
    started = time.monotonic()
    seconds = min(seconds, deadline.remaining()) if seconds is not None else deadline.remaining()
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            chunk = response.raw.read1(_CHUNK, decode_content=True)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise _TooLarge(f"answered a body over the {max_bytes:,}-byte limit (after decompression)")
            if fed is not None:
                fed.feed(chunk)
            else:
                chunks.append(chunk)
            if time.monotonic() - started > seconds:
                return f"the response body took over {seconds:g} s to arrive"
    except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
        # a body cut short, a connection reset, a corrupt gzip stream: worth another try
        return f"the response body could not be read: {type(exc).__name__}: {_reason(exc)}"
    finally:
        response.close()
    response._content = b"".join(chunks)  # what .content, .text and .json() read from now on
    response._content_consumed = True
    return None


_TRANSPORT_REASON = re.compile(
    r"\[Errno -?\d+\] [^'\")]+|timed out|Connection reset by peer|Connection aborted|IncompleteRead"
)


_TLS_REASON = re.compile(r"\[SSL: (\w+)\] ([^(\'\")]+)")

#: What to do about the transport failures people meet first: (what the reason says, scheme or
#: None for either, the hint). The first that matches is given.
_HINTS: tuple[tuple[str, str | None, str], ...] = (
    ("WRONG_VERSION_NUMBER", "https", "the server speaks plain HTTP there: use http://, or the TLS port"),
    ("RECORD_LAYER_FAILURE", "https", "the server speaks plain HTTP there: use http://, or the TLS port"),
    (
        "CERTIFICATE_VERIFY_FAILED",
        None,
        "for a private or self-signed CA give its bundle (the connection's ca_bundle extra, or --ca-bundle)",
    ),
    ("Connection refused", None, "is the API server running and listening at {authority}?"),
    ("Name or service not known", None, "the host name {host} does not resolve: check the URL or connection"),
    ("nodename nor servname", None, "the host name {host} does not resolve: check the URL or connection"),
    ("Connection aborted", "http", "if the server expects TLS there, use https://"),
    ("Connection reset by peer", "http", "if the server expects TLS there, use https://"),
)


def _hint(url: str, reason: str | None) -> str:
    """``"; <what to try>"`` for a failure people commonly meet first, else ``""``."""
    if not reason:
        return ""
    parts = urlsplit(url)
    for marker, scheme, hint in _HINTS:
        if marker in reason and scheme in (None, parts.scheme):
            authority = parts.netloc.rpartition("@")[2]
            return "; " + hint.format(authority=authority, host=parts.hostname or authority)
    return ""


def _tls_reason(exc: Exception) -> str:
    """``certificate verify failed: ... (CERTIFICATE_VERIFY_FAILED)`` from a wrapped TLS error."""
    found = _TLS_REASON.search(str(exc))
    if not found:
        return _reason(exc)
    code, text = found.groups()
    return f"{text.strip()} ({code})"


def _reason(exc: Exception) -> str:
    """A short description of a transport error: urllib3's own is several wrapped reprs long."""
    text = str(exc)
    found = _TRANSPORT_REASON.search(text)
    if found:
        return found.group(0).strip()
    lines = text.splitlines()
    return lines[0][:200] if lines else type(exc).__name__


# -- URLs ------------------------------------------------------------------------------------


def strip_userinfo(url: str, *, keep_query: bool = False) -> tuple[str, str | None, str | None]:
    """Split ``user:password@`` out of a URL, so it is never recorded with the URL.

    A base URL loses its query and trailing slash (paths are appended to it); an endpoint
    (``keep_query``) keeps its path and query exactly.
    """
    try:  # a parser's own message may quote part of a password: never pass it on
        parts = urlsplit(url.strip())
        host, port = parts.hostname or "", parts.port
    except ValueError:
        raise ValueError(f"not a valid URL: {redact_url(url)!r}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    if keep_query:
        clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    else:
        clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return clean, parts.username, parts.password


def redact_url(url: str) -> str:
    """The URL with any user info replaced, for messages about URLs that could not be parsed.

    Everything up to the last ``@`` goes: a password may hold ``/``, ``?`` or ``#``, which end
    an authority for a URL parser, so the authority cannot be trusted to end where they are.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    if "@" in rest:
        rest = "***@" + rest.rpartition("@")[2]
    return scrub(f"{scheme}{sep}{rest}")
