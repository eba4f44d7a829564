"""Amazon MWAA: the capture's REST requests carried by MWAA's ``InvokeRestApi``.

MWAA's web server is reached with AWS credentials: each Airflow request (a path under the API,
its query, its JSON body) becomes ``POST /restapi/{Name}`` on the MWAA endpoint, signed with
SigV4, and the answer comes back in an envelope, ``{"RestApiStatusCode": ..., "RestApiResponse":
...}`` (an Airflow error as ``RestApiClientException`` or ``RestApiServerException``, HTTP 400,
with the same two keys). botocore builds the request (the endpoint, the ``env.`` host prefix, the
JSON, the signature) exactly as ``boto3.client("mwaa").invoke_rest_api`` does; its
``before-send`` event hands the signed request to the provider's transport, so botocore's own
HTTP never runs for it: the body cap, the whole-request deadline, the retries and the redirect
rule (none followed: a signed request goes nowhere else) are the transport's. A success's
envelope is read by the transport as it arrives, once: the answer inside it is read as a direct
capture reads one (a DAG's tasks reduced item by item), and botocore is handed an empty envelope,
so the answer is never decoded twice (botocore decoded the whole envelope, which was then encoded
and decoded again: 1.6 GB for one 56 MB answer). Requires boto3 (the ``mwaa`` extra).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import requests
from requests.structures import CaseInsensitiveDict

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.capture.client import (
    USER_AGENT,
    AirflowApiClient,
    ApiInfo,
    ApiSource,
    Decoder,
    NotSent,
    Reader,
)
from airflow_provider_coremodels.capture.pacing import kind_of
from airflow_provider_coremodels.core.reading.stream import AnswerReader
from airflow_provider_coremodels.errors import AuthError, CaptureError
from airflow_provider_coremodels.io.transport import (
    RETRY_STATUSES,
    RetryPolicy,
    decode_json,
    origin,
    send_with_retries,
)
from airflow_provider_coremodels.redaction import SECRETS, scrub, scrubbed_logger

log = scrubbed_logger(__name__)

#: InvokeRestApi's ``Path`` is at most 64 characters (the service model's RestApiPath).
MAX_PATH = 64
STATUS, RESPONSE = "RestApiStatusCode", "RestApiResponse"
#: The envelopes that carry the Airflow web server's own answer (its status and body).
_CARRIED = frozenset({"RestApiClientException", "RestApiServerException"})
UNREACHABLE = "MWAA's InvokeRestApi reaches only the REST API's paths"


@dataclass(frozen=True)
class MwaaAccess:
    """An MWAA environment and the boto3 session (credentials, region) that reaches it.

    ``endpoint_url``: another MWAA endpoint (a VPC endpoint, a local stand-in);
    ``inject_host_prefix``: whether botocore puts InvokeRestApi's ``env.`` before its host (as it
    does for AWS's own endpoints; off for an endpoint that serves it at its own host).
    """

    environment: str
    session: Any  # boto3.session.Session
    endpoint_url: str | None = None
    inject_host_prefix: bool = True

    def open(self, source: ApiSource, retry: RetryPolicy | None) -> AirflowApiClient:
        return MwaaApiClient(source, self, retry=retry)

    def botocore_client(self, source: ApiSource | None = None) -> Any:
        """The ``mwaa`` client whose requests the transport sends: no retries of its own (the
        transport's apply), and timeouts as the source's should its own HTTP ever run."""
        from botocore.config import Config

        config = Config(
            connect_timeout=source.connect_timeout if source else 10,
            read_timeout=source.read_timeout if source else 60,
            retries={"total_max_attempts": 1},
            inject_host_prefix=self.inject_host_prefix,
            user_agent_extra=USER_AGENT,
        )
        return self.session.client("mwaa", endpoint_url=self.endpoint_url, config=config)

    def base_url(self) -> str:
        """Where InvokeRestApi is sent for this environment (what messages and proxies go by)."""
        client = self.botocore_client()
        endpoint = str(client.meta.endpoint_url).rstrip("/")
        if self.inject_host_prefix:
            scheme, _, host = endpoint.partition("://")
            endpoint = f"{scheme}://env.{host}"
        return f"{endpoint}/restapi/{self.environment}"


_UNSET: Any = object()


@dataclass
class _Call:
    """What the transport needs to know of the request botocore is about to send, and the answer
    it read itself (a success's envelope, decoded once as it arrived)."""

    kind: str
    first: bool
    answered: bool = False  # the transport handed botocore an answer to read
    decode: bool = False
    reader: Reader | None = None  # how the answer inside the envelope is read (else: whole)
    decoded: Any = _UNSET  # the envelope, read by the transport (botocore gets an empty one)
    problem: str | None = None  # why the transport could not read it


class _Envelope:
    """The reader of a success's envelope: the answer inside read as ``reader`` reads it, or whole.
    Its failure is kept, not raised: an unreadable envelope is not worth another try (the same
    bytes would come back), and is said as botocore's failure to read one was."""

    def __init__(self, reader: Reader | None) -> None:
        inner = reader() if reader is not None else AnswerReader()
        self.reader = inner.within(RESPONSE)
        self.problem: str | None = None

    def feed(self, data: bytes) -> None:
        if self.problem is None:
            try:
                self.reader.feed(data)
            except ValueError as exc:
                self.problem = str(exc)

    def end(self) -> Any:
        if self.problem is None:
            try:
                return self.reader.end()
            except ValueError as exc:
                self.problem = str(exc)
        return _UNSET


class _Body:
    """A body already read (within the transport's limits), as botocore's response reads one."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Any:
        yield self.data


class MwaaApiClient(AirflowApiClient):
    """The capture client of an MWAA environment: each request sent through ``InvokeRestApi``.

    Paths are the API's own (``/dags``, ``/dags/{id}/tasks``): MWAA puts ``/api/v1`` or
    ``/api/v2`` before them as the environment's Airflow serves. A path over InvokeRestApi's 64
    characters (``/dags/<a dag_id over 52 characters>/tasks``) cannot be sent: that request fails,
    and the capture records what it lost. The server's own paths (``/ui/dependencies``) are not
    reachable through InvokeRestApi either: the capture does not ask for what only they serve.
    """

    unreachable_server_paths = UNREACHABLE

    def __init__(self, source: ApiSource, access: MwaaAccess, *, retry: RetryPolicy | None = None) -> None:
        super().__init__(source, retry=retry)
        self.access = access
        self._mwaa = access.botocore_client(source)
        self._mwaa.meta.events.register("before-send.mwaa.InvokeRestApi", self._carry)
        self._call = threading.local()
        #: the most one InvokeRestApi answer may hold, decompressed (the envelope around the body)
        self.max_response_bytes = defaults.MAX_RESPONSE_BYTES

    def connect(self) -> ApiInfo:
        self._register_credentials()
        return super().connect()

    def _register_credentials(self) -> None:
        """The session's key id, secret key and session token join the secrets no message may show."""
        try:
            credentials = self.access.session.get_credentials()
            frozen = credentials.get_frozen_credentials() if credentials is not None else None
        except Exception as exc:  # botocore's credential chain: an STS or metadata failure
            raise AuthError(scrub(f"AWS credentials for MWAA could not be resolved: {exc}")) from None
        if frozen is None:
            raise AuthError(
                "no AWS credentials for MWAA: set the connection's aws_conn_id, or give boto3 its "
                "default chain (environment, shared config, an instance or task role)"
            )
        SECRETS.add(frozen.access_key, frozen.secret_key, frozen.token)

    def _detect(self) -> ApiInfo:
        """``GET /version`` through InvokeRestApi: the environment's Airflow, and so its API."""
        response, body = self._invoke("GET", "/version", "/version", decode=True)
        if response.status_code in (401, 403):
            self._raise_auth(response)
        if response.status_code != 200 or not isinstance(body, dict):
            raise CaptureError(f"{self._url('/version')} answered HTTP {response.status_code}")
        version = body.get("version")
        version = version if isinstance(version, str) else None
        api = "v1" if version and version.startswith(("1.", "2.")) else "v2"
        return ApiInfo(api, version)

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
        prefix = f"/api/{self.info.api_version}" if self.info else "/api/"
        if not path.startswith(prefix + "/"):
            raise NotSent(f"{self._url(path)}: not sent, {UNREACHABLE}")
        return self._invoke(
            method,
            path,
            path[len(prefix) :],
            params=params,
            json=json,
            decode=decode,
            decoder=decoder,
            reader=reader,
            first=first,
        )

    def _invoke(
        self,
        method: str,
        path: str,
        rest_path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        decode: bool = False,
        decoder: Decoder | None = None,
        reader: Reader | None = None,
        first: bool = False,
    ) -> tuple[requests.Response, Any]:
        """One InvokeRestApi call: the web server's answer as a response of its own (status, body).

        ``decoder`` is not used through MWAA: the envelope is read once, the answer inside it whole
        or as ``reader`` reads it, and whatever a decoder would have kept is in what is read."""
        from botocore.exceptions import BotoCoreError, ClientError

        if len(rest_path) > MAX_PATH:
            raise NotSent(
                f"{self._url(path)}: not sent, InvokeRestApi takes a path of at most {MAX_PATH} "
                f"characters and this one has {len(rest_path)}"
            )
        call: dict[str, Any] = {"Name": self.access.environment, "Path": rest_path, "Method": method}
        if params:
            call["QueryParameters"] = dict(params)
        if json is not None:
            call["Body"] = json
        sending = self._call.current = _Call(kind_of(path), first, decode=decode, reader=reader)
        try:
            answer = self._mwaa.invoke_rest_api(**call)
            if sending.problem is not None:
                raise CaptureError(
                    f"{self._url(path)}: InvokeRestApi's answer is unreadable: {_not_read(sending.problem)}"
                )
            if sending.decoded is not _UNSET:  # read by the transport (_carry): botocore read "{}"
                return self._read_answer(path, sending.decoded, decode)
            status, body = answer.get(STATUS), answer.get(RESPONSE)
        except ClientError as exc:
            status, body = self._carried(exc, path)
        except BotoCoreError as exc:  # no credentials, a parameter refused, a body botocore cannot read
            raise CaptureError(scrub(f"{self._url(path)}: InvokeRestApi failed: {exc}")) from None
        except (RecursionError, ValueError, TypeError, AttributeError, KeyError) as exc:
            if not sending.answered:  # not raised reading an answer: a fault of ours, raised as it is
                raise
            # botocore's own decode of a hostile answer (nested too deeply, not UTF-8, JSON that is
            # no envelope), which the transport cannot bound: this request fails, not the capture
            raise CaptureError(
                f"{self._url(path)}: InvokeRestApi's answer is unreadable: {_unreadable(exc)}"
            ) from None
        finally:
            self._call.current = None
        return self._answer(path, status, body, decode, decoder)

    def _read_answer(self, path: str, envelope: Any, decode: bool) -> tuple[requests.Response, Any]:
        """A success's envelope as the transport read it: the answer inside, decoded once."""
        status = envelope.get(STATUS, _UNSET) if isinstance(envelope, dict) else None
        if status is not _UNSET and (not isinstance(status, int) or isinstance(status, bool)):
            raise CaptureError(f"{self._url(path)}: InvokeRestApi's answer is unreadable: {_NO_ENVELOPE}")
        return self._answer(path, envelope.get(STATUS), envelope.get(RESPONSE), decode, None, decoded=True)

    def _carried(self, exc: Any, path: str) -> tuple[Any, Any]:
        """The web server's status and body from an InvokeRestApi error, or the error MWAA's own is."""
        error = exc.response.get("Error", {})
        code, message = str(error.get("Code", "")), scrub(str(error.get("Message", ""))[:5000])[:500]
        if code in _CARRIED:
            return exc.response.get(STATUS), exc.response.get(RESPONSE)
        if code == "AccessDeniedException":
            raise AuthError(
                f"access denied by {self._url(path)}: {code}: {message} (the caller needs "
                f"airflow:InvokeRestApi on arn:aws:airflow:<region>:<account>:role/"
                f"{self.access.environment}/<Airflow role>)"
            ) from None
        if code in ("UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException"):
            raise AuthError(
                f"authentication refused by {self._url(path)}: {code}: {message} (check the AWS credentials)"
            ) from None
        if code == "ResourceNotFoundException":
            raise CaptureError(f"no MWAA environment {self.access.environment!r}: {message}") from None
        raise CaptureError(f"{self._url(path)}: InvokeRestApi failed: {code}: {message}") from None

    def _answer(
        self,
        path: str,
        status: Any,
        body: Any,
        decode: bool,
        decoder: Decoder | None,
        *,
        decoded: bool = False,
    ) -> tuple[requests.Response, Any]:
        """The web server's answer as the rest of the client reads one: status, body, JSON.
        ``decoded``: ``body`` is the answer as the caller wants it (read once, by ``_carry``)."""
        import msgspec

        if not isinstance(status, int):
            raise CaptureError(f"{self._url(path)}: InvokeRestApi answered without a {STATUS}")
        response = requests.Response()
        response.status_code = status
        response.url = self._url(path)
        response.headers = CaseInsensitiveDict({"Content-Type": "application/json"})
        if decoded and decode and status < 300:
            response._content = b""  # nobody reads a success's body but as decoded
            return response, body
        response._content = msgspec.json.encode(body)  # an error's body: its message is read
        if not decode or status >= 300:
            return response, None
        try:
            return response, (decoder or decode_json)(response._content)
        except ValueError as exc:
            raise CaptureError(f"{self._url(path)}: the carried answer is not usable ({exc})") from None

    def _carry(self, request: Any, **_: Any) -> Any:
        """botocore's ``before-send``: the signed request, sent by the transport, within its limits."""
        from botocore.awsrequest import AWSResponse

        call: _Call | None = getattr(self._call, "current", None)
        envelopes: list[_Envelope] = []

        def envelope() -> _Envelope:  # one per attempt; a success's is read as it arrives
            envelopes.append(_Envelope(call.reader if call is not None else None))
            return envelopes[-1]

        headers = {
            name: value.decode("ascii") if isinstance(value, bytes) else value
            for name, value in request.headers.items()
            if name.lower() != "content-length"
        }
        response, decoded = send_with_retries(
            self._session,
            request.method,
            request.url,
            policy=self.retry,
            deadline=self.deadline,
            error=CaptureError,
            on_attempt=self._count_request,
            on_retry=self._count_retry,
            pacer=self.pacer,
            kind=call.kind if call else "",
            first=call.first if call else False,
            transient=_server_error,
            decode=call is not None and call.decode,
            stream=envelope,
            max_bytes=self.max_response_bytes,
            data=request.body,
            headers=headers,
            timeout=(self.source.connect_timeout, self.source.read_timeout),
            allow_redirects=False,
        )
        if response.is_redirect or response.is_permanent_redirect:
            target = origin(urljoin(request.url, response.headers.get("Location", "")))
            raise CaptureError(
                f"{origin(request.url)} answered InvokeRestApi with HTTP {response.status_code}, a redirect "
                f"to {target}: a signed request is never sent elsewhere"
            )
        if call is not None:
            call.answered = True  # what fails from here on is botocore's reading of the answer
        if envelopes and 200 <= response.status_code < 300 and call is not None and call.decode:
            call.problem = envelopes[-1].problem
            call.decoded = decoded
            return AWSResponse(request.url, response.status_code, dict(response.headers), _Body(b"{}"))
        return AWSResponse(request.url, response.status_code, dict(response.headers), _Body(response.content))

    def _url(self, path: str) -> str:
        return f"MWAA environment {self.access.environment} (InvokeRestApi) {path}"


_NO_ENVELOPE = "not an InvokeRestApi envelope"


def _not_read(problem: str) -> str:
    """Why the provider could not read a success's envelope (``AnswerReader``'s reason)."""
    return problem if problem in ("nested too deeply", "not UTF-8") else f"not JSON ({problem})"


def _unreadable(exc: BaseException) -> str:
    """Why botocore could not read an answer, without quoting it (an exception's text may)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    return f"botocore could not read it ({type(exc).__name__}): not an InvokeRestApi envelope"


def _server_error(response: requests.Response) -> str | None:
    """An envelope carrying the web server's overload or transient error is worth another try."""
    if response.status_code < 400 or len(response.content) > 100_000:
        return None
    try:
        body = decode_json(response.content)
    except ValueError:
        return None
    status = body.get(STATUS) if isinstance(body, dict) else None
    if isinstance(status, int) and status in RETRY_STATUSES:
        return f"the Airflow web server answered HTTP {status} (through InvokeRestApi)"
    return None
