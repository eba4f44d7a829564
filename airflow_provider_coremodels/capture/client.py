"""A client for the deployment's own REST API: API detection, authentication and retries.

One ``requests.Session`` with a connection pool as large as the capture's concurrency. The
client is safe to share between threads: counters and token renewal are guarded by a lock.
Credentials never appear in a log line, an error message or a recorded URL.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests

from airflow_provider_coremodels import __version__, defaults
from airflow_provider_coremodels.capture.pacing import PACINGS, Pacer, kind_of
from airflow_provider_coremodels.core.reading.stream import AnswerReader
from airflow_provider_coremodels.errors import AuthError, CaptureError
from airflow_provider_coremodels.io.transport import (
    Deadline,
    RetryPolicy,
    Transport,
    decode_json,
    redact_url,
    send_with_retries,
    strip_userinfo,
)
from airflow_provider_coremodels.redaction import SECRETS, scrub, scrub_answer, scrubbed_logger

log = scrubbed_logger(__name__)

#: Decodes a response body (raising ValueError on a bad one), in place of the generic JSON decode.
Decoder = Callable[[bytes], Any]
#: Makes the reader a success's body is fed to as it arrives (``core/reading/stream.py``): one per attempt.
Reader = Callable[[], AnswerReader]

USER_AGENT = f"airflow-provider-coremodels/{__version__}"


class ManagedAccess(Protocol):
    """How a managed Airflow is reached where its API server is not called with a password or a
    static token (``capture/mwaa.py``: MWAA's InvokeRestApi; ``capture/composer.py``: a Google
    access token): it opens the client that carries the capture's requests there."""

    def open(self, source: ApiSource, retry: RetryPolicy | None) -> AirflowApiClient: ...


@dataclass(frozen=True)
class ApiSource:
    """Where the REST API is and how to authenticate; secrets are kept out of ``repr``.

    ``username``/``password``: a JWT from ``POST /auth/token`` on Airflow 3, basic auth on
    Airflow 2. ``token``: a static bearer token. ``verify``: TLS verification (True), off
    (False), or the path of a CA bundle. ``concurrency``: the most requests in flight;
    ``pacing``: ``adaptive`` (fewer while the server slows down, ``capture/pacing.py``) or ``fixed``;
    ``pacing_share``: how much of each slot's time an adaptive capture's requests may take (1: no rest).
    ``managed``: a managed Airflow's own way in (MWAA, Composer), in place of username and token.
    ``deadline_alerts``: whether a capture of Airflow 3.3+ reads each DAG's deadline alerts (one
    request per DAG); off, they are unknown, and one lossiness record says so.
    """

    base_url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    verify: bool | str = True
    connect_timeout: float = defaults.CONNECT_TIMEOUT
    read_timeout: float = defaults.READ_TIMEOUT
    concurrency: int = defaults.CONCURRENCY
    pacing: str = defaults.PACING  # "adaptive": the window follows the server, up to concurrency
    pacing_share: float = defaults.PACING_SHARE
    managed: ManagedAccess | None = field(default=None, repr=False, compare=False)
    deadline_alerts: bool = True

    def __post_init__(self) -> None:
        base_url, username, password = strip_userinfo(self.base_url)
        object.__setattr__(self, "base_url", base_url)
        if username and not self.username and not self.token:
            object.__setattr__(self, "username", username)
            object.__setattr__(self, "password", password)
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.pacing not in PACINGS:
            raise ValueError(f"pacing must be one of {', '.join(PACINGS)}, got {self.pacing!r}")
        if not 0 < self.pacing_share <= 1:  # also refuses NaN
            raise ValueError(f"pacing_share must be over 0 and at most 1, got {self.pacing_share}")
        SECRETS.add(self.password, self.token)


@dataclass
class Stats:
    requests: int = 0
    retries: int = 0


@dataclass(frozen=True)
class ApiInfo:
    api_version: str  # "v2" (Airflow 3) or "v1" (Airflow 2)
    airflow_version: str | None


def open_client(source: ApiSource, *, retry: RetryPolicy | None = None) -> AirflowApiClient:
    """The client for ``source``: its managed access's (MWAA, Composer), else the plain one."""
    if source.managed is not None:
        return source.managed.open(source, retry)
    return AirflowApiClient(source, retry=retry)


class NotFound(CaptureError):
    """The API answered 404 for a resource (a DAG deleted during the capture, say)."""


class NotSent(CaptureError):
    """A request the client cannot send (a path MWAA's InvokeRestApi does not take): never counted as sent."""


class AirflowApiClient:
    """GET JSON from one Airflow deployment, with retries, auth and API detection."""

    #: Why the server's own paths (``/ui/...``, outside the REST API) cannot be reached through
    #: this client, or None where they can: the capture then sends no request for them.
    unreachable_server_paths: str | None = None

    def __init__(self, source: ApiSource, *, retry: RetryPolicy | None = None) -> None:
        self.source = source
        self.retry = retry or RetryPolicy()
        self.stats = Stats()
        self.info: ApiInfo | None = None
        self._lock = threading.Lock()  # counters
        self._token_lock = threading.Lock()  # one renewal at a time; held while the renewal request runs
        self._cancelled = threading.Event()
        self._bearer: str | None = source.token
        #: the window of requests in flight, one per client (so per capture)
        self.pacer = Pacer(
            source.concurrency, adaptive=source.pacing == "adaptive", share=source.pacing_share
        )
        # A CA bundle from the environment is resolved once, and each origin's proxy once (by its
        # own URL, NO_PROXY honoured): with trust_env requests re-reads the whole environment on
        # every request, a third of a large capture's CPU.
        self._transport = Transport(pool_size=source.concurrency, verify=source.verify, url=source.base_url)
        self._session = self._transport.session
        self._session.headers.update({"Accept": "application/json", "User-Agent": USER_AGENT})
        self.deadline = self._watched(Deadline(self.retry.budget))

    def _watched(self, deadline: Deadline) -> Deadline:
        """``deadline``, cutting this client's connections when it expires: the budget then ends
        every request in flight, a read blocked on a trickling server's headers too."""
        self._transport.watch(deadline)
        return deadline

    def close(self) -> None:
        self.deadline.close()
        self._transport.close()

    def cancel(self) -> None:
        """Ask a capture running on this client to stop (safe from any thread, e.g. on_kill): the
        requests in flight are cut, so it stops at once."""
        self._cancelled.set()
        self._transport.cut()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def __enter__(self) -> AirflowApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- set-up ---------------------------------------------------------------------------

    def connect(self) -> ApiInfo:
        """Detect the API generation and authenticate: the first requests of a capture."""
        self.deadline.close()
        self.deadline = self._watched(Deadline(self.retry.budget))
        self.info = self._detect()
        if self._uses_jwt:
            self._bearer = self._new_token()
        elif self.source.username and not self.source.token:  # Airflow 2: basic auth on every request
            self._session.auth = (self.source.username, self.source.password or "")
        log.info(
            "Airflow %s (API %s) at %s",
            self.info.airflow_version or "?",
            self.info.api_version,
            self.source.base_url,
        )
        return self.info

    def _detect(self) -> ApiInfo:
        """``GET /api/v2/version`` (Airflow 3), else ``/api/v1/version`` (Airflow 2; v3 answers 404 there)."""
        statuses = []
        for api in ("v2", "v1"):
            response, body = self._send("GET", f"/api/{api}/version", decode=True)
            if response.status_code == 200:
                version = body.get("version") if isinstance(body, dict) else None
                return ApiInfo(api, version if isinstance(version, str) else None)
            if response.status_code in (401, 403):
                self._raise_auth(response)
            statuses.append(f"/api/{api}/version answered HTTP {response.status_code}")
        raise CaptureError(f"no Airflow REST API at {self.source.base_url}: " + " and ".join(statuses))

    def _new_token(self) -> str:
        # The body carries the password: a redirect is never followed, to this origin or another.
        response, body = self._send(
            "POST",
            "/auth/token",
            json={"username": self.source.username, "password": self.source.password or ""},
            authenticated=False,
            decode=True,
            allow_redirects=False,
        )
        if response.is_redirect or response.is_permanent_redirect:
            target = redact_url(response.headers.get("Location", "an unnamed location"))
            raise AuthError(
                f"{self._url('/auth/token')} answered HTTP {response.status_code}, a redirect to {target}: "
                "the password is never sent after a redirect; point the connection at the API server itself"
            )
        if response.status_code in (401, 403):
            raise AuthError(
                f"authentication refused by {self._url('/auth/token')}: HTTP {response.status_code} "
                "(check the username and password)"
            )
        if response.status_code >= 400:
            raise CaptureError(f"{self._url('/auth/token')} answered HTTP {response.status_code}")
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise CaptureError(f"{self._url('/auth/token')} answered without an access_token")
        SECRETS.add(token)
        return token

    # -- requests -------------------------------------------------------------------------

    def api_path(self, path: str) -> str:
        assert self.info is not None, "connect() first"
        return f"/api/{self.info.api_version}{path}"

    def get_json(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        decoder: Decoder | None = None,
        reader: Reader | None = None,
        under_api: bool = True,
        first: bool = False,
    ) -> Any:
        """GET an API path (``/dags``, not ``/api/v2/dags``) as JSON, retrying what is transient.

        ``decoder`` replaces the generic JSON decode, for an answer of which only a few keys
        matter (a typed decode keeps memory to those keys). ``reader``: the answer is read as it
        arrives, each item of its list kept as the reader's collector keeps it (a DAG's tasks, its
        deadline alerts), never held whole. ``under_api=False``: a path of the
        server's own (``/ui/dependencies``), not under the API's prefix. ``first``: a page of a
        list, sent before the per-item requests waiting for the pacer (``Pacer.enter``).
        """
        full = self.api_path(path) if under_api else path
        renewed = False
        while True:
            bearer = self._bearer
            response, body = self._send(
                "GET", full, params=params, decode=True, decoder=decoder, reader=reader, first=first
            )
            if response.status_code == 401 and self._uses_jwt and not renewed:
                self._renew(bearer)
                renewed = True
                continue
            if response.status_code in (401, 403):
                self._raise_auth(response)
            if response.status_code == 404:
                raise NotFound(f"{self._url(full)} answered HTTP 404")
            if response.status_code >= 400:
                raise CaptureError(
                    f"{self._url(full)} answered HTTP {response.status_code}{_problem(response)}"
                )
            return scrub_answer(body)  # the one scrub of what a server writes, before anything holds it

    @property
    def _uses_jwt(self) -> bool:
        """Whether our bearer token is a JWT we requested, and so can renew when it expires."""
        return bool(
            self.info and self.info.api_version == "v2" and self.source.username and not self.source.token
        )

    def _renew(self, stale: str | None) -> None:
        """Renew the JWT once per expiry, however many threads saw the 401."""
        with self._token_lock:
            if self._bearer == stale:
                log.info("API token rejected (expired?); requesting a new one")
                self._bearer = self._new_token()

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        authenticated: bool = True,
        decode: bool = False,
        decoder: Decoder | None = None,
        reader: Reader | None = None,
        allow_redirects: bool = True,
        first: bool = False,
    ) -> tuple[requests.Response, Any]:
        """Send with retries on transient failures; the response returned is final (maybe a 4xx)."""
        headers = {"Authorization": f"Bearer {self._bearer}"} if authenticated and self._bearer else {}
        return send_with_retries(
            self._session,
            method,
            self._url(path),
            policy=self.retry,
            deadline=self.deadline,
            error=CaptureError,
            on_attempt=self._count_request,
            on_retry=self._count_retry,
            pacer=self.pacer,
            kind=kind_of(path),
            first=first,
            decode=decode,
            decoder=decoder or decode_json,
            stream=reader,
            params=params,
            json=json,
            headers=headers,
            timeout=(self.source.connect_timeout, self.source.read_timeout),
            allow_redirects=allow_redirects,
        )

    def _count_request(self) -> None:
        with self._lock:
            self.stats.requests += 1

    def _count_retry(self) -> None:
        with self._lock:
            self.stats.retries += 1

    def _url(self, path: str) -> str:
        return self.source.base_url + path

    def _raise_auth(self, response: requests.Response) -> None:
        url = response.url.split("?", 1)[0]
        detail = _problem(response) or (
            " (the credentials lack permission, or the token is not valid here)"
            if response.status_code == 403
            else " (check the credentials)"
        )
        verb = "access denied" if response.status_code == 403 else "authentication refused"
        raise AuthError(f"{verb} by {url}: HTTP {response.status_code}{detail}")


def _problem(response: requests.Response) -> str:
    """The server's own error message, when it sent one (FastAPI's ``detail``, connexion's ``detail``)."""
    try:
        body = decode_json(response.content)
    except ValueError:
        return ""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):  # FastAPI's validation errors: [{"loc": [...], "msg": "..."}]
        detail = "; ".join(
            f"{'.'.join(str(part) for part in item.get('loc', []))}: {item.get('msg')}"
            for item in detail
            if isinstance(item, dict) and item.get("msg")
        )
    # scrubbed, then cut: a cut first could leave part of a secret its shape no longer shows
    return f": {scrub(detail[:5000])[:500]}" if isinstance(detail, str) and detail else ""
