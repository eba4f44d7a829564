"""Google Cloud Composer: the capture's requests with a Google access token, refreshed as it expires.

Composer's Airflow web server takes a Google OAuth 2.0 access token as a bearer token (IAM decides
what it may read). google-auth makes the token, from the google provider's connection or from
application-default credentials; every request it sends to do so (a token endpoint, the metadata
server) goes through the provider's transport, by an implementation of google-auth's transport
``Request`` of our own: a body cap, the capture's deadline, no redirect followed. The token is sent
to the web server's origin only (the transport follows no redirect elsewhere), and renewed before
it expires (google-auth's ``valid``: over 3 minutes 45 seconds left) and once on a 401. Requires
google-auth (the ``composer`` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from airflow_provider_coremodels.capture.client import AirflowApiClient, ApiSource, Decoder, Reader
from airflow_provider_coremodels.errors import AuthError, CaptureError
from airflow_provider_coremodels.io.transport import RetryPolicy, send_with_retries
from airflow_provider_coremodels.redaction import SECRETS, scrub, scrubbed_logger

log = scrubbed_logger(__name__)

#: The scope Composer's web server asks of a token (IAM roles decide the rest).
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
#: A token endpoint's answer is a few hundred bytes: far more is not a token endpoint.
TOKEN_MAX_BYTES = 1 << 20

#: Credentials made with the bounded transport's ``Request`` (for the metadata server check).
CredentialsFactory = Callable[[Any], Any]


@dataclass(frozen=True)
class ComposerAccess:
    """Where the Google credentials come from: ``credentials`` made by a factory given the bounded
    request (application-default credentials look for the metadata server with it)."""

    credentials: CredentialsFactory

    def open(self, source: ApiSource, retry: RetryPolicy | None) -> AirflowApiClient:
        return ComposerApiClient(source, self.credentials, retry=retry)


def application_default(request: Any) -> Any:
    """Application-default credentials (``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's, the metadata
    server's), scoped for Composer."""
    import google.auth

    credentials, _ = google.auth.default(scopes=list(SCOPES), request=request)
    return credentials


class ComposerApiClient(AirflowApiClient):
    """The capture client of a Composer environment's web server, with a Google access token."""

    def __init__(
        self, source: ApiSource, credentials: CredentialsFactory, *, retry: RetryPolicy | None = None
    ) -> None:
        super().__init__(source, retry=retry)
        self._factory = credentials
        self._credentials: Any = None
        self._refresh_lock = threading.Lock()
        self.refreshes = 0  # tokens obtained: the first, and one per expiry or refusal

    @property
    def _uses_jwt(self) -> bool:  # a token we obtain, and so can renew after a 401
        return True

    def _new_token(self) -> str:
        return self._token()

    def _renew(self, stale: str | None) -> None:
        with self._token_lock:
            if self._bearer == stale:
                log.info("Google access token refused (expired or revoked?); refreshing it")
                self._bearer = self._token(renew=True)

    def _token(self, *, renew: bool = False) -> str:
        """A valid access token: the current one, or a new one when it is near its expiry."""
        from google.auth.exceptions import GoogleAuthError

        with self._refresh_lock:
            try:
                if self._credentials is None:
                    self._credentials = self._factory(BoundedRequest(self))
                if renew or not self._credentials.valid:
                    self._credentials.refresh(BoundedRequest(self))
                    self.refreshes += 1
            except GoogleAuthError as exc:
                raise AuthError(scrub(f"no Google access token for {self.source.base_url}: {exc}")) from None
            token = self._credentials.token
            if not isinstance(token, str) or not token:
                raise AuthError(
                    f"no Google access token for {self.source.base_url}: the credentials gave none"
                )
            SECRETS.add(token)
            return token

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
        if authenticated:
            self._bearer = self._token()
        return super()._send(
            method,
            path,
            params=params,
            json=json,
            authenticated=authenticated,
            decode=decode,
            decoder=decoder,
            reader=reader,
            allow_redirects=allow_redirects,
            first=first,
        )


class _Response:
    """A transport answer as google-auth reads one (``google.auth.transport.Response``)."""

    def __init__(self, response: requests.Response) -> None:
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self.data = response.content


class BoundedRequest:
    """google-auth's transport ``Request``, sent by the provider's transport: within the client's
    deadline and retries, a body cap of ``TOKEN_MAX_BYTES``, and no redirect followed (a token
    request carries a refresh token or a signed assertion: it goes to its own endpoint only)."""

    def __init__(self, client: AirflowApiClient) -> None:
        self.client = client

    def __call__(
        self,
        url: str,
        method: str = "GET",
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        **_: Any,
    ) -> _Response:
        from google.auth.exceptions import TransportError

        read = self.client.source.read_timeout
        read = min(read, float(timeout)) if timeout else read
        try:
            response, _ = send_with_retries(
                self.client._session,
                method,
                url,
                # google-auth retries a token request itself (and pings the metadata server thrice)
                policy=RetryPolicy(max_attempts=1, budget=self.client.retry.budget),
                deadline=self.client.deadline,
                error=CaptureError,
                max_bytes=TOKEN_MAX_BYTES,
                data=body,
                headers=dict(headers or {}),
                timeout=(self.client.source.connect_timeout, read),
                allow_redirects=False,
            )
        except CaptureError as exc:
            raise TransportError(str(exc)) from None  # type: ignore[no-untyped-call]
        return _Response(response)
