"""The HTTP endpoint sink: POST the snapshot document to CoreModels (or any endpoint).

The body is the document as gzip-encoded JSON; ``Idempotency-Key`` is
``<fingerprint>-<findings digest>``, so a retried or repeated push of an unchanged estate with
unchanged findings is recognisably the same push, and one whose findings changed is not. Transient
failures are retried as in capture; on a 4xx the server's own error message is surfaced.
Redirects are not followed: HTTP clients turn a redirected POST into a GET without the body,
which would report a push that never arrived.
An endpoint keeps no baseline that this sink can read back; the server may answer
``{"unchanged": true}`` to say it already held this key.
"""

from __future__ import annotations

import gzip
from typing import Any

import requests

from airflow_provider_coremodels import __version__, defaults
from airflow_provider_coremodels.core.snapshots.document import Document, encode, for_storage, stored_version
from airflow_provider_coremodels.errors import SinkError
from airflow_provider_coremodels.io.transport import (
    Deadline,
    RetryPolicy,
    Transport,
    decode_json,
    redact_url,
    send_with_retries,
    server_message,
    strip_userinfo,
)
from airflow_provider_coremodels.redaction import SECRETS, scrubbed_logger
from airflow_provider_coremodels.sinks.base import Sink, SinkResult

log = scrubbed_logger(__name__)


class EndpointSink(Sink):
    """``POST`` to an ``http://`` or ``https://`` URL with an optional bearer token."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        verify: bool | str = True,
        timeout: float = defaults.READ_TIMEOUT,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.uri, username, password = strip_userinfo(url, keep_query=True)
        # Credentials written into the URL are used (as basic auth), but never recorded with it.
        self._auth = (username, password or "") if username and not token else None
        self._token = token
        SECRETS.add(token, password)
        self._verify = verify
        self._timeout = timeout
        self._retry = retry or RetryPolicy()

    def __repr__(self) -> str:
        return f"EndpointSink({self.uri!r})"

    def read_baseline(self) -> bytes | None:
        return None

    def probe(self) -> int:
        """GET the endpoint with the token, pushing nothing: the status it answers (a snapshot
        endpoint that takes only POSTs answers 405, which still shows it is there)."""
        return self._send("GET", {}).status_code

    def push(self, document: Document) -> SinkResult:
        stored = for_storage(document)
        headers = {
            "Content-Type": "application/json",
            "Content-Encoding": "gzip",
            "Idempotency-Key": stored_version(document),
        }
        response = self._send("POST", headers, data=gzip.compress(encode(stored)))
        if response.is_redirect or response.is_permanent_redirect:
            target = redact_url(response.headers.get("Location", "an unnamed location"))
            raise SinkError(
                f"sink {self.uri} answered HTTP {response.status_code}, a redirect to {target}: "
                "point the sink at the final URL (a redirected POST would lose its body)"
            )
        if response.status_code >= 400:
            raise SinkError(
                f"sink {self.uri} refused the snapshot: HTTP {response.status_code}{server_message(response)}"
            )
        unchanged = _answer(response).get("unchanged") is True
        log.info("sink %s: HTTP %s%s", self.uri, response.status_code, " (unchanged)" if unchanged else "")
        return SinkResult(
            self.uri,
            unchanged=unchanged,
            written=[] if unchanged else [self.uri],
            baseline_replaced=stored is document and not unchanged,
        )

    def _send(self, method: str, headers: dict[str, str], **request: Any) -> requests.Response:
        """One request to the endpoint, with the token, retried as capture's are; never redirected
        (credentials ride on it, and a redirected POST loses its body)."""
        headers = {**headers, "User-Agent": f"airflow-provider-coremodels/{__version__}"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        transport = Transport(verify=self._verify, trust_env=False)
        transport.session.auth = self._auth
        deadline = Deadline(self._retry.budget)
        transport.watch(deadline)  # the budget ends the push, whatever its socket is doing
        try:
            response, _ = send_with_retries(
                transport.session,
                method,
                self.uri,
                policy=self._retry,
                deadline=deadline,
                error=SinkError,
                headers=headers,
                timeout=(defaults.CONNECT_TIMEOUT, self._timeout),
                allow_redirects=False,
                **request,
            )
        finally:
            deadline.close()
            transport.close()
        return response


def _answer(response: requests.Response) -> dict[str, object]:
    try:
        body = decode_json(response.content)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
