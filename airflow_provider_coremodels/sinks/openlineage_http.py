"""The OpenLineage client's HTTP transports, sent through the provider's one transport.

The client's own HTTP transports read a whole answer into memory (a gzip bomb inflates whole),
time out per socket read rather than per request (a trickling answer holds a push for ever),
follow a 307 with the event and every custom header to wherever it points, and print their URL,
query and all, in their errors. Here the client still makes what each HTTP transport sends (the
event as its ``Serde`` writes it, the bearer of its token provider, its custom headers, gzip if
configured), and the request goes out through the provider's ``transport.Transport`` and
``send_with_retries``, as every other request of the provider does: the answer read as a stream
within 64 MiB (decompressed) and the read timeout, every request of a push inside the push's
budget (``--retry-budget``; its expiry cuts the sockets, whatever they are waiting for), no
redirect followed, the URL's user info and query never printed, every secret scrubbed.

Every HTTP transport the configuration makes is guarded, wherever it sits: alone (``http``,
``async_http``), inside ``composite`` (which ``OPENLINEAGE_URL`` makes), ``transform`` or
``datadog``; a token endpoint (the ``jwt`` and ``oauth2`` auth types) is asked the same way. The
other transports (file, console, Kafka, MSK, Google's and Amazon's lineage APIs) do not send
through the client's HTTP code: they are left as they are, and the push's budget is checked
between their events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urljoin

import requests
from openlineage.client.serde import Serde
from openlineage.client.transport.async_http import AsyncHttpTransport
from openlineage.client.transport.composite import CompositeTransport
from openlineage.client.transport.datadog import DatadogTransport
from openlineage.client.transport.http import (
    HttpConfig,
    HttpTransport,
    TokenEndpointTokenProvider,
    TokenProvider,
)
from openlineage.client.transport.transform.transform import TransformTransport
from openlineage.client.transport.transport import Transport

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.errors import SinkError, UsageError
from airflow_provider_coremodels.io.transport import (
    Deadline,
    RetryPolicy,
    redact_url,
    send_with_retries,
    server_message,
    strip_userinfo,
)
from airflow_provider_coremodels.io.transport import Transport as ProviderTransport
from airflow_provider_coremodels.redaction import SECRETS, scrub

#: Seconds a token endpoint may take to answer, as the client's own token request allows.
TOKEN_TIMEOUT = 10.0


class PushBudget:
    """The budget of one push (``--retry-budget``), shared by every request it makes: the
    events' and the token endpoint's. ``start`` opens a new one at each push, ``finish`` ends it;
    in between, the provider's transports it hands out are cut when it expires, so no socket read
    (a receiver sending its headers a byte at a time) outlives it."""

    def __init__(self, seconds: float = defaults.RETRY_BUDGET) -> None:
        self.seconds = seconds
        self.deadline = Deadline(seconds)
        #: The last failure of a guarded request: what a composite transport, which swallows its
        #: children's errors into "None of the transports successfully emitted", failed on.
        self.failure: SinkError | None = None
        self._transports: list[ProviderTransport] = []

    def start(self) -> None:
        self.finish()
        self.deadline = Deadline(self.seconds)
        self.failure = None

    def transport(self, *, url: str, verify: bool | str) -> ProviderTransport:
        """A transport of the provider's for this push, cut when its budget runs out."""
        transport = ProviderTransport(verify=verify, url=url)
        transport.watch(self.deadline)
        self._transports.append(transport)
        return transport

    def finish(self) -> None:
        """The push is over: its deadline cuts nothing more, and its transports are closed."""
        self.deadline.close()
        transports, self._transports = self._transports, []
        for transport in transports:
            transport.close()


def guard(transport: Transport, budget: PushBudget) -> Transport:
    """``transport`` with every HTTP transport in it (itself included) sending through the
    provider's transport; anything else is returned as it is."""
    if isinstance(transport, (HttpTransport, AsyncHttpTransport)):
        return GuardedHttp(transport, budget)
    if isinstance(transport, CompositeTransport):
        transport.transports[:] = [guard(child, budget) for child in transport.transports]
    elif isinstance(transport, TransformTransport):
        transport.transport = guard(transport.transport, budget)
    elif isinstance(transport, DatadogTransport):
        transport.http = guard(transport.http, budget)  # type: ignore[assignment]
        # its async transport is made on the first dbt event; made now, from the same settings
        if transport.async_http is not None:
            transport.async_http = guard(transport.async_http, budget)  # type: ignore[assignment]
        else:
            twin = GuardedHttp(_sync_twin(transport._async_http_config), budget, kind="async_http")
            transport.async_http = twin  # type: ignore[assignment]
    return transport


def guarded(transport: Transport) -> list[GuardedHttp]:
    """The guarded HTTP transports in ``transport``, for tests and messages."""
    if isinstance(transport, GuardedHttp):
        return [transport]
    children: list[Any] = []
    if isinstance(transport, CompositeTransport):
        children = list(transport.transports)
    elif isinstance(transport, TransformTransport):
        children = [transport.transport]
    elif isinstance(transport, DatadogTransport):
        children = [transport.http, transport.async_http]
    return [g for child in children if child is not None for g in guarded(child)]


def _sync_twin(config: Any) -> HttpTransport:
    """An ``http`` transport with an ``async_http`` configuration's settings: the same request."""
    return HttpTransport(
        HttpConfig(
            url=config.url,
            endpoint=config.endpoint,
            timeout=config.timeout,
            verify=config.verify,
            auth=config.auth,
            compression=config.compression,
            custom_headers=dict(config.custom_headers),
            retry=dict(config.retry),
        )
    )


class GuardedHttp(Transport):
    """One of the client's HTTP transports (``http`` or ``async_http``), its requests sent by
    ``send_with_retries`` within the push's budget. Its ``kind`` and ``name`` are the
    transport's own; the client's retry count and backoff apply (the statuses retried are the
    provider's: 429, 500, 502, 503, 504)."""

    def __init__(
        self, inner: HttpTransport | AsyncHttpTransport, budget: PushBudget, *, kind: str | None = None
    ) -> None:
        self.inner = inner
        self.kind, self.name, self.priority = kind or inner.kind, inner.name, inner.priority
        config = inner.config
        target = urljoin(inner.url, config.endpoint)  # where the client would post
        try:
            clean, username, password = strip_userinfo(target, keep_query=True)
        except ValueError as exc:
            raise UsageError(f"openlineage: the {inner.kind} transport's url is unusable: {exc}") from None
        #: Where events go, as every message names it: no user info, no query (keys ride there).
        self.url, _, self._query = clean.partition("?")
        SECRETS.add(password, *(value for _, value in parse_qsl(self._query, keep_blank_values=True)))
        # requests uses a URL's user info as basic auth; the URL itself never carries it here
        self._auth = (username, password or "") if username else None
        self._verify: bool | str = inner.verify if isinstance(inner, HttpTransport) else config.verify
        self._cert = inner.cert if isinstance(inner, HttpTransport) else None
        self._timeout = float(config.timeout)
        retry = config.retry if isinstance(config.retry, dict) else {}
        self._attempts = max(1, int(retry.get("total", 5)) + 1)
        self._backoff = max(0.0, float(retry.get("backoff_factor", 0.3)))
        self._budget = budget
        self._pushing: tuple[Deadline, requests.Session] | None = None
        guard_token_provider(config.auth, budget, self.session)
        if isinstance(inner, AsyncHttpTransport):
            inner.close(0)  # its worker thread, started by its constructor, has nothing to send

    def __str__(self) -> str:
        return f"<{type(self.inner).__name__}(name={self.name}, kind={self.kind}, url={self.url})>"

    def session(self) -> requests.Session:
        """The session of this push: a transport of the provider's, opened at its first request."""
        deadline = self._budget.deadline
        if self._pushing is None or self._pushing[0] is not deadline:
            transport = self._budget.transport(url=self.url, verify=self._verify)
            transport.session.cert = self._cert
            self._pushing = (deadline, transport.session)
        return self._pushing[1]

    def emit(self, event: Any) -> requests.Response:
        body, headers = self.inner._prepare_request(Serde.to_json(event))
        policy = RetryPolicy(max_attempts=self._attempts, backoff=self._backoff, budget=self._budget.seconds)
        try:
            response, _ = send_with_retries(
                self.session(),
                "POST",
                self.url,
                policy=policy,
                deadline=self._budget.deadline,
                error=SinkError,
                data=body,
                headers=headers,
                params=self._query or None,
                auth=self._auth,
                timeout=(self._timeout, self._timeout),
                allow_redirects=False,
            )
            answered(response, f"POST {self.url}", "the event")
        except SinkError as exc:
            self._budget.failure = exc
            raise
        return response

    def close(self, timeout: float = -1) -> bool:
        self._pushing = None  # its transport is the budget's, closed when the push finishes
        return True


def answered(response: requests.Response, request: str, what: str) -> None:
    """A 2xx, or the ``SinkError`` saying what the answer was: a redirect is never followed (a
    307 would carry ``what`` and its credentials to wherever it points)."""
    status = response.status_code
    if 200 <= status < 300:
        return
    if 300 <= status < 400:
        target = shown_url(response.headers.get("Location") or "an unnamed location")
        raise SinkError(
            f"{request} answered HTTP {status}, a redirect to {target}: redirects are never followed "
            f"(it would carry {what} and its credentials elsewhere); configure the final URL"
        )
    raise SinkError(scrub(f"{request} refused {what}: HTTP {status}{server_message(response)}"))


def shown_url(url: str) -> str:
    """A URL fit for a message: no user info, no query or fragment (where keys ride), bounded."""
    return redact_url(url.partition("#")[0].partition("?")[0])[:300]


# -- token endpoints ------------------------------------------------------------------------


def guard_token_provider(
    provider: TokenProvider, budget: PushBudget, session: Callable[[], requests.Session]
) -> None:
    """A token provider that asks a token endpoint (``jwt``, ``oauth2``) asks it through the
    provider's transport: no redirect (the API key or client secret is in the form), a bounded
    answer, inside the push's budget. The token is cached and renewed as the client does."""
    if not isinstance(provider, TokenEndpointTokenProvider) or getattr(provider, "_coremodels", False):
        return
    name = provider.TOKEN_NAME

    def fetch() -> None:
        clean, username, password = strip_userinfo(provider.token_endpoint, keep_query=True)
        url, _, query = clean.partition("?")
        SECRETS.add(password, *(value for _, value in parse_qsl(query, keep_blank_values=True)))
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        authorization = provider._get_token_request_authorization()
        if authorization:
            headers["Authorization"] = authorization
        response, answer = send_with_retries(
            session(),
            "POST",
            url,
            policy=RetryPolicy(max_attempts=3, budget=budget.seconds),
            deadline=budget.deadline,
            error=SinkError,
            data=provider._get_token_request_data(),
            headers=headers,
            params=query or None,
            auth=(username, password or "") if username else None,
            timeout=(TOKEN_TIMEOUT, TOKEN_TIMEOUT),
            allow_redirects=False,
            decode=True,
        )
        answered(response, f"the {name} endpoint {url}", "the credentials")
        if not isinstance(answer, dict):
            raise SinkError(f"the {name} endpoint {url} answered no JSON object")
        token = provider._extract_token_from_response(answer)
        if not token:
            raise SinkError(
                f"the {name} endpoint {url} answered no token (looked for {', '.join(provider.token_fields)})"
            )
        SECRETS.add(token)
        try:
            expires_in = provider._extract_expires_in(answer)
        except (TypeError, ValueError):
            expires_in = None
        provider._cached_token = token
        provider._token_expiry = (
            time.time() + expires_in if expires_in else provider._extract_expiry_from_jwt(token)
        )

    def get_bearer() -> str | None:
        with provider._lock:
            if not provider._is_token_valid():
                try:
                    fetch()
                except SinkError as exc:
                    budget.failure = exc
                    raise
            return f"Bearer {provider._cached_token}" if provider._cached_token else None

    provider.get_bearer = get_bearer  # type: ignore[method-assign]
    provider._coremodels = True  # type: ignore[attr-defined]
