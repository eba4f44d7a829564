"""The HTTP pieces capture and the endpoint sink share: retries inside a deadline, and URLs without secrets.

When to retry a request, and for how long: exponential backoff with jitter inside a deadline
that bounds the whole run. Credentials written into a URL (``user:password@``) are split out
before the URL is recorded anywhere.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.errors import CoreModelsError

log = logging.getLogger(__name__)

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
    """The retry budget of one capture, shared by all of its requests and threads."""

    def __init__(self, seconds: float) -> None:
        self.expires = time.monotonic() + seconds

    def allows(self, delay: float) -> bool:
        return time.monotonic() + delay <= self.expires

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())


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
    **request: Any,
) -> tuple[requests.Response, Any]:
    """Send one request, retrying what is transient; return the final response (maybe a 4xx).

    Transient: connection errors, timeouts, a body cut short, the statuses in RETRY_STATUSES,
    and with ``decode`` a success whose body is not JSON (truncated on the wire). With
    ``decode`` the decoded body comes back beside the response. Gives up with ``error`` after
    ``policy.max_attempts`` or when the next wait would overrun the deadline.
    """
    attempt = 0
    while True:
        attempt += 1
        on_attempt()
        retry_after: float | None = None
        if attempt > 1 and isinstance(request.get("timeout"), tuple):
            # a retry must not outlive the budget: its read timeout is what the budget has left
            connect, read = request["timeout"]
            request["timeout"] = (connect, max(0.1, min(read, deadline.remaining())))
        try:
            response = session.request(method, url, **request)
        except requests.exceptions.SSLError as exc:
            raise error(f"TLS error talking to {url}: {_reason(exc)}") from None
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            problem = f"{type(exc).__name__}: {_reason(exc)}"
        else:
            if response.status_code in RETRY_STATUSES:
                problem = f"HTTP {response.status_code}"
                if response.status_code in (429, 503):  # the statuses RFC 9110 gives Retry-After
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
            elif not decode or response.status_code >= 400:
                return response, None
            else:
                try:
                    return response, response.json()
                except ValueError:  # a truncated or garbled body: worth another try
                    problem = "the response body is not valid JSON"
        delay = policy.delay(attempt, retry_after)
        if attempt >= policy.max_attempts or not deadline.allows(delay):
            budget = f" (the retry budget of {policy.budget:g} s is spent)"
            spent = "" if attempt >= policy.max_attempts else budget
            attempts = f"{attempt} attempt{'s' if attempt > 1 else ''}"
            raise error(f"{method} {url} failed after {attempts}: {problem}{spent}")
        log.warning("%s %s: %s; retrying in %.1f s (attempt %d)", method, url, problem, delay, attempt + 1)
        on_retry()
        time.sleep(delay)


_TRANSPORT_REASON = re.compile(
    r"\[Errno -?\d+\] [^'\")]+|timed out|Connection reset by peer|Connection aborted|IncompleteRead"
)


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
    parts = urlsplit(url.strip())
    if not parts.scheme or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    if keep_query:
        clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    else:
        clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return clean, parts.username, parts.password


def redact_url(url: str) -> str:
    """The URL with any user info replaced, for messages about URLs that could not be parsed."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return f"{scheme}{sep}{authority}{slash}{path}"
