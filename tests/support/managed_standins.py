"""Local stand-ins of the two managed Airflow front doors, each in front of a real Airflow API server.

- ``MwaaStandIn``: MWAA's ``InvokeRestApi`` (``POST /restapi/{Name}``, the JSON request and the
  envelope as the botocore service model ``mwaa-2020-07-01`` and the API reference describe them).
  It checks the SigV4 ``Authorization`` header as AWS would (the canonical request rebuilt from what
  arrived, the signature recomputed with the secret key, the date within five minutes), then sends
  ``Method`` ``/api/v2`` + ``Path`` with ``QueryParameters`` to the Airflow server behind it with
  its own JWT, and wraps the answer: HTTP 200 with ``RestApiStatusCode``/``RestApiResponse``, or
  HTTP 400 ``RestApiClientException`` (4xx) / ``RestApiServerException`` (5xx) with the same keys.
- ``GoogleStandIn``: an OAuth 2.0 token endpoint (``grant_type=refresh_token``, as google-auth's
  user credentials refresh), the GCE metadata server's token and service-account paths (what
  application-default credentials use on Composer's workers, GKE with workload identity and GCE),
  issuing short-lived tokens, and Composer's web server: a proxy that takes a bearer token only
  while it is unexpired and forwards to the Airflow server.

What they are not: no IAM (any signature with the known key is allowed; no Airflow role is mapped
from ``airflow:InvokeRestApi`` on ``role/{env}/{role}``), no request or response size limits of the
real service (not published in its model), no 10-second timeout of InvokeRestApi, no throttling;
the Google side has no service-account JWT grant, no IAM check of the token's identity, no IAP,
and no ID tokens; google-auth reads the metadata server's address once, at import, so the test points
its module constant here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import requests

#: (method, Airflow path under /api/v2, or a server path under /ui/, query, JSON body)
#: -> (status, JSON answer)
Upstream = Callable[[str, str, dict[str, Any], Any], tuple[int, Any]]


def real_server_upstream(server: Any) -> Upstream:
    """Forward to a real Airflow API server (``tests/support/airflow_server.py``) with its JWT."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {server.token()}"

    def forward(method: str, path: str, query: dict[str, Any], body: Any) -> tuple[int, Any]:
        url = f"{server.base_url}{path}" if path.startswith("/ui/") else f"{server.base_url}/api/v2{path}"
        response = session.request(method, url, params=query or None, json=body, timeout=60)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, {"detail": response.text[:200]}

    return forward


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 in a daemon thread, with a request log."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.standin = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def record(self, **entry: Any) -> None:
        with self.lock:
            self.log.append(entry)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet
        pass

    @property
    def standin(self) -> Any:
        return self.server.standin  # type: ignore[attr-defined]

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# -- SigV4, as AWS checks it ------------------------------------------------------------------


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_problem(
    method: str, target: str, headers: Any, body: bytes, keys: dict[str, str], service: str
) -> str | None:
    """Why the request's SigV4 signature does not hold, or None: the canonical request rebuilt
    from what arrived (path, query, the signed headers, the payload's hash) and signed again."""
    auth = headers.get("Authorization", "")
    algorithm, _, rest = auth.partition(" ")
    if algorithm != "AWS4-HMAC-SHA256":
        return f"not a SigV4 Authorization header: {algorithm or 'none'}"
    fields = dict(part.strip().split("=", 1) for part in rest.split(",") if "=" in part)
    try:
        access_key, date, region, signed_service, terminal = fields["Credential"].split("/")
        signed_headers = fields["SignedHeaders"].split(";")
        signature = fields["Signature"]
    except (KeyError, ValueError):
        return "a malformed Authorization header"
    if access_key not in keys:
        return f"unknown access key {access_key}"
    if (signed_service, terminal) != (service, "aws4_request"):
        return f"signed for service {signed_service}, not {service}"
    if "host" not in signed_headers:
        return "the host header is not signed"
    amz_date = headers.get("X-Amz-Date", "")
    try:
        when = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return "no X-Amz-Date"
    if abs(time.time() - when.timestamp()) > 300 or not amz_date.startswith(date):
        return "the signature's date is not now"
    parts = urlsplit(target)
    canonical_path = quote(parts.path, safe="/~")
    query = sorted(
        (quote(k, safe="-_.~"), quote(v, safe="-_.~"))
        for k, vs in parse_qs(parts.query, keep_blank_values=True).items()
        for v in vs
    )
    canonical_query = "&".join(f"{k}={v}" for k, v in query)
    canonical_headers = "".join(
        f"{name}:{' '.join((headers.get(name) or '').split())}\n" for name in signed_headers
    )
    payload = hashlib.sha256(body).hexdigest()
    canonical = "\n".join(
        [method, canonical_path, canonical_query, canonical_headers, ";".join(signed_headers), payload]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(
        _hmac(_hmac(_hmac(f"AWS4{keys[access_key]}".encode(), date), region), service), "aws4_request"
    )
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(expected, signature) else "the signature does not match"


class _MwaaHandler(_Handler):
    def do_POST(self) -> None:
        standin: MwaaStandIn = self.standin
        body = self._body()
        problem = sigv4_problem("POST", self.path, self.headers, body, standin.keys, "airflow")
        name = self.path.split("?")[0].removeprefix("/restapi/")
        standin.record(path=self.path, problem=problem, headers=dict(self.headers), body=body)
        if problem is not None:
            self._send(403, {"message": problem}, {"x-amzn-ErrorType": "InvalidSignatureException"})
            return
        if not self.path.startswith("/restapi/") or name != standin.environment:
            self._send(
                404,
                {"message": f"Environment {name} not found"},
                {"x-amzn-ErrorType": "ResourceNotFoundException"},
            )
            return
        call = json.loads(body)
        rest_path, method = call.get("Path", ""), call.get("Method", "")
        if not 1 <= len(rest_path) <= 64:  # the model's RestApiPath
            self._send(400, {"message": "Path too long"}, {"x-amzn-ErrorType": "ValidationException"})
            return
        if standin.fault is not None:
            fault = standin.fault(rest_path)
            if fault is not None:
                status, answer, headers = fault
                self._send(status, answer, headers)
                return
        status, answer = standin.upstream(
            method, rest_path, call.get("QueryParameters") or {}, call.get("Body")
        )
        envelope = {"RestApiStatusCode": status, "RestApiResponse": answer}
        if status < 400:
            self._send(200, envelope)
        else:
            kind = "RestApiClientException" if status < 500 else "RestApiServerException"
            self._send(400, envelope, {"x-amzn-ErrorType": kind})


class MwaaStandIn(_Server):
    """InvokeRestApi for one environment, in front of ``upstream``; ``keys``: access key -> secret.

    ``fault(path)`` may answer a request instead of the upstream: (HTTP status, body, headers).
    """

    def __init__(self, upstream: Upstream, *, environment: str, keys: dict[str, str]) -> None:
        super().__init__(_MwaaHandler)
        self.upstream = upstream
        self.environment = environment
        self.keys = keys
        self.fault: Callable[[str], tuple[int, Any, dict[str, str]] | None] | None = None


# -- Google: a token endpoint and Composer's web server ------------------------------------------


class _GoogleHandler(_Handler):
    def do_POST(self) -> None:
        standin: GoogleStandIn = self.standin
        form = {k: v[0] for k, v in parse_qs(self._body().decode()).items()}
        if self.path != "/token":
            self._send(404, {"error": "not_found"})
            return
        standin.record(kind="token", form={k: v for k, v in form.items() if k == "grant_type"})
        good = (
            form.get("grant_type") == "refresh_token"
            and form.get("refresh_token") == standin.refresh_token
            and form.get("client_id") == standin.client_id
            and form.get("client_secret") == standin.client_secret
        )
        if not good:
            self._send(400, {"error": "invalid_grant", "error_description": "Bad Request"})
            return
        with standin.lock:
            standin.issued += 1
            token = f"ya29.standin-{standin.issued}"
            standin.tokens[token] = time.time() + standin.lifetime
        self._send(200, {"access_token": token, "expires_in": standin.lifetime, "token_type": "Bearer"})

    def _metadata(self) -> None:
        """The GCE metadata server, as google-auth's compute-engine credentials ask it."""
        standin: GoogleStandIn = self.standin
        parts = urlsplit(self.path)
        standin.record(kind="metadata", path=parts.path)
        if self.headers.get("Metadata-Flavor") != "Google":
            self._send(403, {"error": "Missing Metadata-Flavor:Google header"})
            return
        flavor = {"Metadata-Flavor": "Google"}
        account = "/computeMetadata/v1/instance/service-accounts/default/"
        if parts.path in ("/", ""):
            self._send(200, b"computeMetadata/\n", flavor)
        elif parts.path == account:
            info = {"email": "exporter@project.iam.gserviceaccount.com", "aliases": ["default"],
                    "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}  # fmt: skip
            self._send(200, info, flavor)
        elif parts.path == account + "token":
            with standin.lock:
                standin.issued += 1
                token = f"ya29.metadata-{standin.issued}"
                standin.tokens[token] = time.time() + standin.lifetime
            self._send(
                200, {"access_token": token, "expires_in": standin.lifetime, "token_type": "Bearer"}, flavor
            )
        elif parts.path == "/computeMetadata/v1/project/project-id":
            self._send(200, b"standin-project", flavor)
        else:
            self._send(404, {"error": "not found"}, flavor)

    def do_GET(self) -> None:
        standin: GoogleStandIn = self.standin
        if self.path == "/" or self.path.startswith("/computeMetadata/"):
            self._metadata()
            return
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        expires = standin.tokens.get(token or "")
        standin.record(kind="api", path=self.path, token=token)
        if standin.redirect_to and self.path.startswith("/api/v2/dags?"):
            self.send_response(302)
            self.send_header("Location", standin.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if expires is None or expires < time.time():
            self._send(401, {"detail": "Invalid IAP credentials: expired or unknown token"})
            return
        parts = urlsplit(self.path)
        # Composer's web server is the whole Airflow API server: the REST API and the UI's routes
        if not parts.path.startswith(("/api/v2", "/ui/")):
            self._send(404, {"detail": "Not Found"})
            return
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        status, answer = standin.upstream("GET", parts.path.removeprefix("/api/v2"), query, None)
        self._send(status, answer)


class GoogleStandIn(_Server):
    """A token endpoint (``/token``) and Composer's web server (``/api/v2/...``) in one server.

    Tokens live ``lifetime`` seconds; ``expire_all()`` ends every token now (as a revocation or an
    expiry between two requests would), ``redirect_to`` makes the DAG list redirect elsewhere."""

    def __init__(self, upstream: Upstream, *, lifetime: int = 3600) -> None:
        super().__init__(_GoogleHandler)
        self.upstream = upstream
        self.lifetime = lifetime
        self.client_id, self.client_secret, self.refresh_token = (
            "standin-client",
            "s3cr3t-client",
            "1//refresh",
        )
        self.tokens: dict[str, float] = {}
        self.issued = 0
        self.redirect_to: str | None = None

    def expire_all(self) -> None:
        with self.lock:
            self.tokens = dict.fromkeys(self.tokens, 0.0)

    def authorized_user_info(self) -> dict[str, str]:
        """What an ``authorized_user`` ADC file holds (``gcloud auth application-default login``),
        with this token endpoint as its ``token_uri``."""
        return {
            "type": "authorized_user",
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "refresh_token": self.refresh_token,
            "token_uri": f"{self.base_url}/token",
        }
