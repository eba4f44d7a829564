"""The HTTP endpoint sink against a real local HTTP server: wire format, auth, retries, errors, secrecy.

Every test POSTs to a ``ScriptedServer`` on 127.0.0.1 and reads back what arrived on the wire;
nothing is mocked. The retry policy is fast (10-20 ms backoff) so that the retry tests are too,
except where a server's Retry-After sets the pace.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import logging
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.helpers import artifact_paths, document_for
from support.hostile_api import gzip_bomb
from support.local_http import RESET, Received, Reply, ScriptedServer, json_reply

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.snapshots.document import Document, encode, for_storage, stored_version
from airflow_provider_coremodels.errors import SinkError
from airflow_provider_coremodels.hooks.coremodels import CoreModelsHook
from airflow_provider_coremodels.io.transport import RetryPolicy
from airflow_provider_coremodels.jobs.export import open_sink
from airflow_provider_coremodels.sinks.endpoint import EndpointSink

TOKEN = "cm-canary-T0ken-7f3a9c2e51b8"  # distinctive, so a leak is found by a plain substring search
USERINFO_PASSWORD = "us3r-inf0-Pa55-canary"
SECRETS = (TOKEN, USERINFO_PASSWORD)
FAST = RetryPolicy(max_attempts=3, backoff=0.01, max_backoff=0.02)
PATH = "/snapshots"
CONN_ID = "coremodels_test"
CREATED = json_reply({"id": "snapshot-1"}, status=201)


# -- fixtures and helpers ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_secret_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every test runs with DEBUG logging captured (urllib3's too); no record may hold a secret."""
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.records:
        for secret in SECRETS:
            assert secret not in record.getMessage(), f"{record.name} logged a secret"
    for secret in SECRETS:
        assert secret not in caplog.text


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A server answering 201 on /snapshots unless a test scripts otherwise."""
    with ScriptedServer({PATH: CREATED}) as scripted:
        yield scripted


@pytest.fixture(scope="module")
def document() -> Document:
    """The snapshot document of the recorded Airflow 3 estate (read-only: tests must not mutate it)."""
    return airflow3_document()


def airflow3_document(**kwargs: Any) -> Document:
    """Build the document of the recorded Airflow 3 artifacts (``kwargs`` go to build_document)."""
    paths = artifact_paths("airflow3")
    dags, tasks, datasets = (json.loads(paths[name].read_text()) for name in ("dags", "tasks", "datasets"))
    return document_for(dags, tasks, datasets, **kwargs)


def url(server: ScriptedServer, path: str = PATH) -> str:
    return server.base_url + path


def posts(server: ScriptedServer, path: str = PATH) -> list[Received]:
    """The POSTs ``server`` got for ``path`` (query string ignored)."""
    return [r for r in server.received if r.method == "POST" and r.path.split("?", 1)[0] == path]


def sent_json(request: Received) -> dict[str, Any]:
    """The request's gzip body, decompressed and parsed."""
    return json.loads(gzip.decompress(request.body))


def message(error: pytest.ExceptionInfo[SinkError]) -> str:
    """The error's message, checked to be free of every secret."""
    text = str(error.value)
    for secret in SECRETS:
        assert secret not in text
    return text


def conn_env(monkeypatch: pytest.MonkeyPatch, **fields: Any) -> None:
    """Define the ``coremodels`` connection CONN_ID as an AIRFLOW_CONN_* JSON variable."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "coremodels", **fields}))


# -- the POST on the wire ----------------------------------------------------------------------


@pytest.mark.parametrize("token", [TOKEN, None], ids=["token", "no-token"])
def test_post_is_gzip_json_keyed_by_fingerprint(
    server: ScriptedServer, document: Document, token: str | None
) -> None:
    """One gzip POST of exactly encode(document), JSON, keyed by fingerprint; bearer only with a token."""
    result = EndpointSink(url(server), token=token, retry=FAST).push(document)

    assert result.written == [url(server)]
    (request,) = server.received
    assert (request.method, request.path) == ("POST", PATH)
    assert request.headers.get("Content-Encoding") == "gzip"
    assert request.body[:2] == b"\x1f\x8b"  # the gzip magic number: compressed on the wire
    assert gzip.decompress(request.body) == encode(document)
    assert request.headers.get("Content-Type") == "application/json"
    assert request.headers.get("Idempotency-Key") == stored_version(document)
    assert request.headers.get("User-Agent", "").startswith("airflow-provider-coremodels/")
    if token:
        assert request.headers.get("Authorization") == f"Bearer {token}"
    else:
        assert request.headers.get("Authorization") is None


def test_read_baseline_is_none(server: ScriptedServer) -> None:
    """An endpoint keeps no baseline the sink can read back, and asking for one sends nothing."""
    assert EndpointSink(url(server), token=TOKEN).read_baseline() is None
    assert server.received == []


# -- the token from a coremodels connection ------------------------------------------------------


def test_open_sink_takes_the_token_from_the_connection(
    server: ScriptedServer, document: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open_sink(http URL, coremodels_conn_id=...) posts to that URL (not the host) with the conn's token."""
    conn_env(monkeypatch, host="http://127.0.0.1:9/elsewhere", password=TOKEN)
    sink = open_sink(url(server), coremodels_conn_id=CONN_ID, retry=FAST)

    assert isinstance(sink, EndpointSink)
    assert sink.uri == url(server)
    assert TOKEN not in repr(sink)
    sink.push(document)
    (request,) = posts(server)
    assert request.headers.get("Authorization") == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    "connection",
    [
        pytest.param(lambda port: {"host": f"http://127.0.0.1:{port}{PATH}"}, id="host-is-the-url"),
        pytest.param(lambda port: {"host": f"http://127.0.0.1{PATH}", "port": port}, id="host-and-port"),
    ],
)
def test_hook_sink_posts_to_the_connection_host(
    server: ScriptedServer, document: Document, monkeypatch: pytest.MonkeyPatch, connection: Any
) -> None:
    """CoreModelsHook(conn).get_sink() with no URL posts to the conn's host, its password as bearer."""
    port = int(server.base_url.rsplit(":", 1)[1])
    conn_env(monkeypatch, password=TOKEN, **connection(port))
    sink = CoreModelsHook(CONN_ID).get_sink(retry=FAST)

    assert sink.uri == url(server)
    assert TOKEN not in repr(sink)
    result = sink.push(document)
    assert result.written == [url(server)]
    (request,) = posts(server)
    assert request.headers.get("Authorization") == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("timeout", "read"), [(None, defaults.READ_TIMEOUT), ("", defaults.READ_TIMEOUT), ("7", 7.0)]
)
def test_hook_sink_reads_the_timeout_extra_a_form_may_leave_empty(
    monkeypatch: pytest.MonkeyPatch, timeout: Any, read: float
) -> None:
    """The connection form stores an empty number as null (or ""): the default, not 'not usable'."""
    conn_env(monkeypatch, host="https://coremodels.example/api", extra=json.dumps({"timeout": timeout}))
    assert CoreModelsHook(CONN_ID).get_sink(retry=FAST)._timeout == read


def test_connection_without_password_sends_no_authorization(
    server: ScriptedServer, document: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coremodels connection with no password gives a sink that sends no Authorization header."""
    conn_env(monkeypatch, host=url(server))
    CoreModelsHook(CONN_ID).get_sink(retry=FAST).push(document)
    (request,) = posts(server)
    assert request.headers.get("Authorization") is None


# -- retries -------------------------------------------------------------------------------------

# Each: the failing first answer, and the least time the push must take (the server's Retry-After).
TRANSIENT = {
    "503": (json_reply({"detail": "Service Unavailable"}, status=503), 0.0),
    "429 retry-after 1": (json_reply({"detail": "slow down"}, status=429, headers={"Retry-After": "1"}), 0.9),
    "connection reset": (RESET, 0.0),
}


@pytest.mark.parametrize(("failure", "min_seconds"), TRANSIENT.values(), ids=TRANSIENT.keys())
def test_transient_failure_is_retried_with_the_same_idempotency_key(
    server: ScriptedServer, document: Document, failure: Reply, min_seconds: float
) -> None:
    """A 503, a 429 (after its Retry-After) or a reset is retried once, resending the identical request."""
    server.script(PATH, failure, CREATED)
    sink = EndpointSink(url(server), token=TOKEN, retry=FAST)

    started = time.monotonic()
    result = sink.push(document)
    waited = time.monotonic() - started

    assert result.written == [url(server)]
    assert result.unchanged is False
    attempts = posts(server)
    assert len(attempts) == 2
    assert [r.headers.get("Idempotency-Key") for r in attempts] == [stored_version(document)] * 2
    assert [r.headers.get("Authorization") for r in attempts] == [f"Bearer {TOKEN}"] * 2
    assert attempts[0].body == attempts[1].body
    assert waited >= min_seconds


def test_persistent_503_gives_up_with_a_sink_error_naming_the_url(
    server: ScriptedServer, document: Document
) -> None:
    """An endpoint stuck at 503 gets max_attempts POSTs, then a SinkError (exit code 3) naming the URL."""
    server.set_default(PATH, json_reply({"detail": "Service Unavailable"}, status=503))
    sink = EndpointSink(url(server), token=TOKEN, retry=FAST)

    with pytest.raises(SinkError) as error:
        sink.push(document)

    assert error.value.exit_code == 3
    text = message(error)
    assert url(server) in text
    assert "3 attempts" in text
    assert "503" in text
    assert len(posts(server)) == 3


# -- client errors ------------------------------------------------------------------------------

# Each: the server's answer, and what the error message must quote of it.
CLIENT_ERRORS = {
    "400 json detail": (
        json_reply({"detail": "schemaVersion 1 is not supported"}, status=400),
        "schemaVersion 1 is not supported",
    ),
    "401 plain text": (
        Reply(401, b"invalid or expired API token\n", {"Content-Type": "text/plain"}),
        "invalid or expired API token",
    ),
    "403 json message": (json_reply({"message": "read-only workspace"}, status=403), "read-only workspace"),
    "413 json error": (json_reply({"error": "payload too large"}, status=413), "payload too large"),
}


@pytest.mark.parametrize(("reply", "quoted"), CLIENT_ERRORS.values(), ids=CLIENT_ERRORS.keys())
def test_client_error_is_not_retried_and_surfaces_the_server_message(
    server: ScriptedServer, document: Document, reply: Reply, quoted: str
) -> None:
    """A 4xx is final after one POST: the SinkError names the URL, the status and the server's message."""
    server.set_default(PATH, reply)

    with pytest.raises(SinkError) as error:
        EndpointSink(url(server), token=TOKEN, retry=FAST).push(document)

    text = message(error)
    assert quoted in text
    assert f"HTTP {reply.status}" in text
    assert url(server) in text
    assert error.value.exit_code == 3
    assert len(posts(server)) == 1


# -- the server's answer -------------------------------------------------------------------------

# Each: the server's success answer, and whether the push counts as unchanged.
ANSWERS = {
    "200 unchanged true": (json_reply({"unchanged": True}), True),
    "201 json": (CREATED, False),
    "201 empty body": (Reply(201), False),
    "200 unchanged false": (json_reply({"unchanged": False}), False),
    "200 unchanged string": (json_reply({"unchanged": "true"}), False),  # only JSON true counts
    "200 json array": (json_reply([{"unchanged": True}]), False),
    "200 not json": (Reply(200, b"OK", {"Content-Type": "text/plain"}), False),
}


@pytest.mark.parametrize(("reply", "unchanged"), ANSWERS.values(), ids=ANSWERS.keys())
def test_server_answer_decides_unchanged(
    server: ScriptedServer, document: Document, reply: Reply, unchanged: bool
) -> None:
    """Only a JSON object with "unchanged": true makes the push unchanged (nothing written)."""
    server.set_default(PATH, reply)
    result = EndpointSink(url(server), token=TOKEN, retry=FAST).push(document)

    assert result.sink == url(server)
    assert result.unchanged is unchanged
    assert result.written == ([] if unchanged else [url(server)])
    if unchanged:
        assert result.baseline_replaced is False
    assert len(posts(server)) == 1


# -- the snapshot cap ----------------------------------------------------------------------------


def test_over_the_cap_posts_the_document_without_datasets_and_lineage(server: ScriptedServer) -> None:
    """Over the cap the POST is for_storage(document): no datasets or lineage; no baseline replaced."""
    document = airflow3_document(max_snapshot_bytes=100)
    assert document["snapshotStored"] is False

    result = EndpointSink(url(server), token=TOKEN, retry=FAST).push(document)

    (request,) = posts(server)
    assert gzip.decompress(request.body) == encode(for_storage(document))
    sent = sent_json(request)
    assert "datasets" not in sent
    assert "lineage" not in sent
    assert sent["snapshotStored"] is False
    assert sent["fingerprint"] == document["fingerprint"]
    for key in ("state", "findings", "lossiness"):
        assert sent[key] == document[key]
    assert any(record["artifact"] == "snapshot" for record in sent["lossiness"])
    assert request.headers.get("Idempotency-Key") == stored_version(document)
    assert result.written == [url(server)]
    assert result.baseline_replaced is False


# -- secrets ---------------------------------------------------------------------------------


def _closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens any more."""
    with ScriptedServer() as gone:
        address = url(gone)
    return address


# Each: how the endpoint fails (set up on the server), or None for a port where nothing listens.
FAILURES = {
    "persistent 503": json_reply({"detail": "Service Unavailable"}, status=503),
    "persistent reset": RESET,
    "400": json_reply({"detail": "schemaVersion 1 is not supported"}, status=400),
    "401 plain text": Reply(401, b"invalid or expired API token", {"Content-Type": "text/plain"}),
    "unreachable": None,
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
def test_token_never_in_error_messages_or_repr(
    server: ScriptedServer, document: Document, failure: Reply | None
) -> None:
    """Whatever the failure, neither the SinkError nor repr(sink) holds the token (logs: autouse check)."""
    if failure is None:
        target = _closed_port_url()
    else:
        server.set_default(PATH, failure)
        target = url(server)
    sink = EndpointSink(target, token=TOKEN, retry=FAST)
    assert TOKEN not in repr(sink)
    assert TOKEN not in sink.uri

    with pytest.raises(SinkError) as error:
        sink.push(document)

    message(error)
    assert target in str(error.value)


def test_url_userinfo_is_used_as_basic_auth_and_never_recorded(
    server: ScriptedServer, document: Document
) -> None:
    """user:pw@ in the URL becomes basic auth on the wire, and is not in uri, repr, result or logs."""
    port = server.base_url.rsplit(":", 1)[1]
    sink = EndpointSink(f"http://user:{USERINFO_PASSWORD}@127.0.0.1:{port}/x", retry=FAST)

    assert sink.uri == url(server, "/x")
    assert USERINFO_PASSWORD not in repr(sink)
    server.set_default("/x", CREATED)
    result = sink.push(document)

    assert result.written == [url(server, "/x")]
    (request,) = posts(server, "/x")
    expected = "Basic " + base64.b64encode(f"user:{USERINFO_PASSWORD}".encode()).decode()
    assert request.headers.get("Authorization") == expected


# -- URLs and redirects ---------------------------------------------------------------------------


def test_query_string_of_the_endpoint_url_is_kept(server: ScriptedServer, document: Document) -> None:
    """An endpoint URL's query string (e.g. ?workspace=...) is part of where the snapshot is POSTed."""
    sink = EndpointSink(url(server) + "?workspace=analytics", token=TOKEN, retry=FAST)
    sink.push(document)
    (request,) = posts(server)
    assert request.path == PATH + "?workspace=analytics"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_refused_not_followed(server: ScriptedServer, document: Document, status: int) -> None:
    """A redirected POST would arrive as a body-less GET: the sink refuses and names the new URL."""
    server.script("/old", Reply(status, b"", {"Location": url(server, "/new")}))
    server.set_default("/new", json_reply({"items": []}))
    sink = EndpointSink(url(server, "/old"), token=TOKEN, retry=FAST)

    with pytest.raises(SinkError) as error:
        sink.push(document)
    assert message(error) == (
        f"sink {url(server, '/old')} answered HTTP {status}, a redirect to {url(server, '/new')}: "
        "point the sink at the final URL (a redirected POST would lose its body)"
    )
    assert [r.method for r in server.received] == ["POST"]


def test_a_gzip_bomb_reply_is_refused_before_it_inflates(server: ScriptedServer) -> None:
    """The endpoint's reply is read like capture's responses: within 64 MiB once decompressed."""
    server.script(PATH, Reply(200, gzip_bomb(), {"Content-Encoding": "gzip"}))
    sink = EndpointSink(f"{server.base_url}{PATH}", token="t0ken-value", retry=FAST)
    with pytest.raises(SinkError, match=re.escape("over the 67,108,864-byte limit (after decompression)")):
        sink.push(document_for([{"dag_id": "a"}]))


def test_a_reply_nested_too_deeply_is_no_traceback(server: ScriptedServer) -> None:
    """A 100,000-deep reply is not the object that says "unchanged": the push counts as written."""
    server.script(PATH, Reply(200, b"[" * 100_000 + b"]" * 100_000, {"Content-Type": "application/json"}))
    sink = EndpointSink(f"{server.base_url}{PATH}", token="t0ken-value", retry=FAST)
    assert sink.push(document_for([{"dag_id": "a"}])).unchanged is False


@pytest.mark.parametrize(
    ("status", "ok", "says"),
    [
        (405, True, "HTTP 405 to a GET"),
        (200, True, "HTTP 200 to a GET"),
        (401, False, "refused the token: HTTP 401"),
        (404, False, "HTTP 404 to a GET: check the endpoint URL"),
    ],
)
def test_the_coremodels_connection_test_pushes_nothing(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, status: int, ok: bool, says: str
) -> None:
    """The UI's Test button: one GET with the token, never a POST, and the token never in the answer."""
    conn_env(monkeypatch, host=url(server), password="Test-b7n-t0ken")
    server.script(PATH, json_reply({"detail": "whatever"}, status=status))
    passed, message = CoreModelsHook(CONN_ID).test_connection()
    assert (passed, says in message) == (ok, True), message
    assert "Test-b7n-t0ken" not in message
    assert [(r.method, r.headers.get("Authorization")) for r in server.received] == [
        ("GET", "Bearer Test-b7n-t0ken")
    ]


def test_the_idempotency_key_covers_the_findings_sent(server: ScriptedServer, document: Document) -> None:
    """The same estate with other findings is another push (another key); the same again is not."""
    waived = copy.deepcopy(document)
    waived["findings"][0]["waived"] = {"reason": "accepted", "expires": None}
    sink = EndpointSink(url(server), token=TOKEN)
    for doc in (document, waived, waived):
        sink.push(doc)
    keys = [r.headers.get("Idempotency-Key") for r in server.received]
    assert keys[1] == keys[2] != keys[0]
    assert all(key.startswith(document["fingerprint"] + "-") for key in keys)
