"""How the REST client handles failures: retries, give-ups, auth renewal, and secrecy.

The client talks to a ``ScriptedServer`` with an Airflow-3-like surface; each test scripts the
answers of one path. The retry policy is fast (10-50 ms backoff) so the tests are too.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest
from support.local_http import (
    RESET,
    Received,
    Reply,
    ScriptedServer,
    delayed,
    json_reply,
    no_aliases_no_warnings,
    truncated,
)

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, capture
from airflow_provider_coremodels.capture.client import NotFound
from airflow_provider_coremodels.core import ABSENT
from airflow_provider_coremodels.errors import AuthError, CaptureError
from airflow_provider_coremodels.io.transport import parse_retry_after

USERNAME = "admin"
PASSWORD = "Pa55-w0rd-n0t-f0r-l0gs"  # distinctive, so a leak is found by a plain substring search
FAST = RetryPolicy(max_attempts=4, backoff=0.01, max_backoff=0.05)
MakeClient = Callable[..., AirflowApiClient]

DAG_IDS = ("alpha", "beta", "gamma")
DAGS = {"dags": [{"dag_id": dag_id, "tags": []} for dag_id in DAG_IDS], "total_entries": len(DAG_IDS)}
ASSET = {"id": 1, "uri": "s3://bucket/orders", "producing_tasks": [{"dag_id": "alpha", "task_id": "load"}]}
ASSETS = {"assets": [ASSET], "total_entries": 1}


def tasks_of(dag_id: str) -> dict[str, Any]:
    return {"tasks": [{"task_id": f"{dag_id}_task", "operator_name": "EmptyOperator"}], "total_entries": 1}


def airflow3() -> dict[str, Reply]:
    """The default answers: a healthy Airflow 3.3 with three DAGs and one asset."""
    return {
        "/api/v2/version": json_reply({"version": "3.3.2", "git_version": None}),
        "/auth/token": json_reply({"access_token": "t1"}, status=201),
        "/api/v2/dags": json_reply(DAGS),
        **{f"/api/v2/dags/{dag_id}/tasks": json_reply(tasks_of(dag_id)) for dag_id in DAG_IDS},
        "/api/v2/assets": json_reply(ASSETS),
        **no_aliases_no_warnings(),
    }


def received(server: ScriptedServer, path: str) -> list[Received]:
    """The requests ``server`` got for ``path`` (query string ignored)."""
    return [r for r in server.received if r.path.split("?", 1)[0] == path]


def hits(server: ScriptedServer, path: str) -> int:
    return len(received(server, path))


def message(error: pytest.ExceptionInfo[BaseException]) -> str:
    """The error's message, checked to be free of the password."""
    text = str(error.value)
    assert PASSWORD not in text
    return text


@pytest.fixture(autouse=True)
def no_password_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every test runs with DEBUG logging captured (urllib3's too), and no record may hold the password."""
    caplog.set_level(logging.DEBUG)
    yield
    assert PASSWORD not in caplog.text


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(airflow3()) as scripted:
        yield scripted


@pytest.fixture
def make_client(server: ScriptedServer) -> Iterator[MakeClient]:
    """``make_client(retry=..., credentials=..., connect=..., **ApiSource options)``.

    By default the client logs in with username and password and is connected (version probe
    and token), after which the server's request log is cleared.
    """
    clients: list[AirflowApiClient] = []

    def make(
        *, retry: RetryPolicy = FAST, credentials: bool = True, connect: bool = True, **options: Any
    ) -> AirflowApiClient:
        auth = {"username": USERNAME, "password": PASSWORD} if credentials else {}
        client = AirflowApiClient(ApiSource(server.base_url, **auth, **options), retry=retry)
        clients.append(client)
        if connect:
            client.connect()
            server.reset()
        return client

    yield make
    for client in clients:
        client.close()


# -- transient failures ------------------------------------------------------------------------

DAGS_PATH = "/api/v2/dags"

# Each: a failing answer, and how the client's retry warning names the problem.
TRANSIENT = {
    "500": (json_reply({"detail": "database is locked"}, status=500), "HTTP 500"),
    "502": (Reply(502, b"<html>Bad Gateway</html>", {"Content-Type": "text/html"}), "HTTP 502"),
    "503": (json_reply({"detail": "Service Unavailable"}, status=503), "HTTP 503"),
    "504": (Reply(504, b"", {"Content-Type": "text/plain"}), "HTTP 504"),
    "connection reset": (RESET, "ConnectionError"),
    "read timeout": (delayed(1.0, json_reply(DAGS)), "ReadTimeout"),
    "truncated body": (truncated(json_reply(DAGS)), "the response body could not be read: ProtocolError"),
    "invalid JSON body": (Reply(200, b'{"dags": [{"dag_', {"Content-Type": "application/json"}), "JSON"),
}


@pytest.mark.parametrize(("failure", "problem"), TRANSIENT.values(), ids=TRANSIENT.keys())
def test_transient_failure_is_retried_until_it_succeeds(
    server: ScriptedServer,
    make_client: MakeClient,
    caplog: pytest.LogCaptureFixture,
    failure: Reply,
    problem: str,
) -> None:
    """A 5xx, reset, read timeout, truncated or garbled body is retried (twice here) and then succeeds."""
    server.script(DAGS_PATH, failure, failure)  # then the default answer: the DAGs
    client = make_client(read_timeout=0.3)

    assert client.get_json("/dags") == DAGS
    assert client.stats.retries == 2
    assert hits(server, DAGS_PATH) == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all(problem in warning and f"{server.base_url}{DAGS_PATH}" in warning for warning in warnings)


def test_429_retry_after_is_honoured(server: ScriptedServer, make_client: MakeClient) -> None:
    """A 429 with ``Retry-After: 1`` makes the client wait about a second (not its backoff), then succeed."""
    server.script(DAGS_PATH, json_reply({"detail": "Too Many Requests"}, 429, {"Retry-After": "1"}))
    client = make_client()

    started = time.monotonic()
    assert client.get_json("/dags") == DAGS
    elapsed = time.monotonic() - started

    assert 0.9 <= elapsed < 3
    assert client.stats.retries == 1
    assert hits(server, DAGS_PATH) == 2


def test_persistent_503_gives_up_after_max_attempts(server: ScriptedServer, make_client: MakeClient) -> None:
    """A 503 that never ends is tried ``max_attempts`` times; the CaptureError says how many attempts."""
    server.set_default(DAGS_PATH, json_reply({"detail": "Service Unavailable"}, status=503))
    client = make_client(retry=replace(FAST, max_attempts=3))

    with pytest.raises(CaptureError) as error:
        client.get_json("/dags")

    assert type(error.value) is CaptureError
    assert message(error) == f"GET {server.base_url}{DAGS_PATH} failed after 3 attempts: HTTP 503"
    assert hits(server, DAGS_PATH) == 3
    assert client.stats.retries == 2


def test_retry_budget_gives_up_rather_than_sleep_past_it(
    server: ScriptedServer, make_client: MakeClient
) -> None:
    """With a 0.5 s budget, a 429 asking for 5 s fails at once instead of sleeping past the budget."""
    server.set_default(DAGS_PATH, json_reply({"detail": "slow down"}, 429, {"Retry-After": "5"}))
    client = make_client(retry=RetryPolicy(backoff=0.01, max_backoff=0.05, budget=0.5))

    started = time.monotonic()
    with pytest.raises(CaptureError) as error:
        client.get_json("/dags")

    assert time.monotonic() - started < 4  # never the 5 s it was asked to sleep
    assert message(error) == (
        f"GET {server.base_url}{DAGS_PATH} failed after 1 attempt: HTTP 429 "
        "(the retry budget of 0.5 s is spent)"
    )
    assert hits(server, DAGS_PATH) == 1
    assert client.stats.retries == 0


def test_garbled_retry_after_on_the_wire_is_ignored(server: ScriptedServer, make_client: MakeClient) -> None:
    """A 429 whose Retry-After is a non-ASCII 'digit' is retried with backoff, not a crash."""
    server.script(DAGS_PATH, json_reply({"detail": "slow down"}, 429, {"Retry-After": "²"}))
    client = make_client()

    assert client.get_json("/dags") == DAGS
    assert client.stats.retries == 1


# -- answers that are final ------------------------------------------------------------------------

CLIENT_ERRORS = {
    "400": (400, "offset must be 0 or more"),
    "422": (422, "limit must be an integer"),
}


@pytest.mark.parametrize(("status", "detail"), CLIENT_ERRORS.values(), ids=CLIENT_ERRORS.keys())
def test_client_error_is_not_retried(
    server: ScriptedServer, make_client: MakeClient, status: int, detail: str
) -> None:
    """A 400 or 422 fails at once (one request): a CaptureError naming URL, status and the server's detail."""
    server.script(DAGS_PATH, json_reply({"detail": detail}, status=status))
    client = make_client()

    with pytest.raises(CaptureError) as error:
        client.get_json("/dags", params={"limit": 100})

    assert type(error.value) is CaptureError
    assert message(error) == f"{server.base_url}{DAGS_PATH} answered HTTP {status}: {detail}"
    assert hits(server, DAGS_PATH) == 1
    assert client.stats.retries == 0


def test_404_raises_not_found_without_retry(server: ScriptedServer, make_client: MakeClient) -> None:
    """A 404 fails at once (one request) with NotFound naming the URL and the status."""
    path = "/api/v2/dags/deleted/tasks"  # nothing scripted: the server's 404 {"detail": "Not Found"}
    client = make_client()

    with pytest.raises(NotFound) as error:
        client.get_json("/dags/deleted/tasks")

    text = message(error)
    assert f"{server.base_url}{path}" in text
    assert "HTTP 404" in text
    assert hits(server, path) == 1
    assert client.stats.retries == 0


def test_fastapi_422_detail_list_is_reported(server: ScriptedServer, make_client: MakeClient) -> None:
    """A FastAPI-style 422 (``detail`` a list of errors) puts the server's ``msg`` in the error message."""
    msg = "Input should be a valid integer, unable to parse string as an integer"
    error_item = {"type": "int_parsing", "loc": ["query", "limit"], "msg": msg, "input": "x"}
    server.script(DAGS_PATH, json_reply({"detail": [error_item]}, status=422))
    client = make_client()

    with pytest.raises(CaptureError) as error:
        client.get_json("/dags")

    assert msg in message(error)


def test_403_raises_auth_error(server: ScriptedServer, make_client: MakeClient) -> None:
    """A 403 is an AuthError naming URL and status, with no retry and no token renewal."""
    server.script(DAGS_PATH, json_reply({"detail": "Forbidden"}, status=403))
    client = make_client()

    with pytest.raises(AuthError) as error:
        client.get_json("/dags", params={"limit": 100})

    assert message(error) == f"access denied by {server.base_url}{DAGS_PATH}: HTTP 403: Forbidden"
    assert hits(server, DAGS_PATH) == 1
    assert hits(server, "/auth/token") == 0


# -- token renewal ----------------------------------------------------------------------------------


def test_401_renews_the_token_once_and_retries_with_it(
    server: ScriptedServer, make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A 401 triggers exactly one POST /auth/token; the request is repeated with the new bearer token."""
    first, second = json_reply({"access_token": "t1"}, 201), json_reply({"access_token": "t2"}, 201)
    server.script("/auth/token", first, second)
    client = make_client()
    server.script(DAGS_PATH, json_reply({"detail": "Token expired"}, status=401))

    assert client.get_json("/dags") == DAGS

    [renewal] = received(server, "/auth/token")
    assert renewal.method == "POST"
    assert json.loads(renewal.body) == {"username": USERNAME, "password": PASSWORD}
    assert [r.headers.get("Authorization") for r in received(server, DAGS_PATH)] == ["Bearer t1", "Bearer t2"]
    assert any("requesting a new one" in r.getMessage() for r in caplog.records)  # logs were captured


def test_second_401_after_renewal_raises_auth_error(server: ScriptedServer, make_client: MakeClient) -> None:
    """A 401 that survives one token renewal is an AuthError naming URL and status; no second renewal."""
    client = make_client()
    server.set_default(DAGS_PATH, json_reply({"detail": "Token rejected"}, status=401))

    with pytest.raises(AuthError) as error:
        client.get_json("/dags")

    url = f"{server.base_url}{DAGS_PATH}"
    assert message(error) == f"authentication refused by {url}: HTTP 401: Token rejected"
    assert hits(server, "/auth/token") == 1
    assert hits(server, DAGS_PATH) == 2


def test_401_with_a_static_token_is_not_renewed(server: ScriptedServer, make_client: MakeClient) -> None:
    """With a static token (no username) a 401 is an AuthError at once: there is nothing to renew with."""
    client = make_client(credentials=False, token="static-token")
    server.script(DAGS_PATH, json_reply({"detail": "Token expired"}, status=401))

    with pytest.raises(AuthError, match=r"HTTP 401"):
        client.get_json("/dags")

    assert hits(server, "/auth/token") == 0
    assert [r.headers.get("Authorization") for r in received(server, DAGS_PATH)] == ["Bearer static-token"]


def test_refused_login_raises_auth_error_without_the_password(
    server: ScriptedServer, make_client: MakeClient
) -> None:
    """A 401 from POST /auth/token at connect is an AuthError naming the token URL, never the password."""
    server.set_default("/auth/token", json_reply({"detail": "Invalid credentials"}, status=401))
    client = make_client(connect=False)

    with pytest.raises(AuthError) as error:
        client.connect()

    assert message(error).startswith(f"authentication refused by {server.base_url}/auth/token: HTTP 401")


# -- parse_retry_after --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", 1.0), ("120", 120.0), (" 7 ", 7.0), ("0", 0.0)],
)
def test_parse_retry_after_delta_seconds(value: str, expected: float) -> None:
    """Retry-After in delta-seconds is read as that many seconds."""
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date() -> None:
    """Retry-After as an HTTP date is the seconds until then, and 0 for a date already past."""
    soon = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 28 <= parse_retry_after(soon) <= 30  # type: ignore[operator]
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "soon",
        "-5",
        "1.5",
        "Wed, 99 Oct 2015 07:28:00 GMT",
        "²",
    ],
)
def test_parse_retry_after_garbage_is_none(value: str | None) -> None:
    """A missing or unreadable Retry-After is None (fall back to backoff), never an exception."""
    assert parse_retry_after(value) is None


# -- capture() end to end ------------------------------------------------------------------------------


def test_capture_survives_one_dag_whose_tasks_keep_failing(
    server: ScriptedServer, make_client: MakeClient
) -> None:
    """A DAG whose /tasks answers 503 for good loses only its tasks, declared as lossiness on that DAG."""
    server.set_default("/api/v2/dags/beta/tasks", json_reply({"detail": "Service Unavailable"}, status=503))
    client = make_client(retry=replace(FAST, max_attempts=3), connect=False)

    result = capture(client)

    assert [dag["dag_id"] for dag in result.dags["dags"]] == list(DAG_IDS)
    assert sorted(result.tasks) == ["alpha", "gamma"]
    assert result.tasks["alpha"]["tasks"][0]["task_id"] == "alpha_task"
    [loss] = result.lossiness
    assert (loss.artifact, loss.subject) == ("tasks", "beta")
    assert "failed after 3 attempts: HTTP 503" in loss.message
    assert PASSWORD not in loss.message
    assert result.datasets is not ABSENT
    assert hits(server, "/api/v2/dags/beta/tasks") == 3
    assert result.summary.retries == 2


def test_capture_without_assets_when_they_keep_failing(
    server: ScriptedServer, make_client: MakeClient
) -> None:
    """An /assets answering 503 for good leaves datasets ABSENT, with a "datasets artifact ignored" record."""
    server.set_default("/api/v2/assets", json_reply({"detail": "Service Unavailable"}, status=503))
    client = make_client(retry=replace(FAST, max_attempts=3), connect=False)

    result = capture(client)

    assert result.datasets is ABSENT
    assert sorted(result.tasks) == list(DAG_IDS)
    [loss] = result.lossiness
    assert loss.artifact == "datasets"
    assert loss.message.startswith("datasets artifact ignored: ")
    assert "HTTP 503" in loss.message
    assert PASSWORD not in loss.message
    assert hits(server, "/api/v2/assets") == 3
    assert result.summary.assets == 0
