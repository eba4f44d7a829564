"""Managed Airflow captured: Amazon MWAA through InvokeRestApi, Google Cloud Composer with a Google token.

Against local stand-ins (``tests/support/managed_standins.py``, which says what they do not
model): the requests are built and signed by botocore and google-auth themselves, the stand-ins
check them as the services would (SigV4 recomputed from what arrived; a token only while
unexpired). The scripted upstream here is a small fake Airflow; the last tests put the stand-ins
in front of the real Airflow 3.3 API server and capture the example estate through them.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from support.helpers import fingerprint_without_deadlines
from support.managed_standins import GoogleStandIn, MwaaStandIn, real_server_upstream

from airflow_provider_coremodels.capture import ApiSource, RetryPolicy, capture, open_client
from airflow_provider_coremodels.capture.composer import ComposerAccess
from airflow_provider_coremodels.capture.mwaa import MwaaAccess
from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY
from airflow_provider_coremodels.errors import AuthError, CaptureError, ConnectionConfigError
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook
from airflow_provider_coremodels.redaction import SECRETS

boto3 = pytest.importorskip("boto3")
pytest.importorskip("google.auth")

KEY, SECRET = "AKIDSTANDIN0000001", "standin/secret+key"
ENV = "MyAirflowEnvironment"
DAGS = [{"dag_id": f"dag_{i:02d}"} for i in range(7)]
QUICK = RetryPolicy(max_attempts=3, backoff=0.01, max_backoff=0.02, budget=30)


def fake_airflow(method: str, path: str, query: dict[str, Any], body: Any) -> tuple[int, Any]:
    """A few paths of Airflow 3's API, paged as Airflow pages (``limit``/``offset``)."""
    if path == "/version":
        return 200, {"version": "3.3.2", "git_version": None}
    if path == "/dags":
        offset, limit = int(query.get("offset", 0)), int(query.get("limit", 50))
        return 200, {"dags": DAGS[offset : offset + limit], "total_entries": len(DAGS)}
    return 404, {"detail": "Not Found"}


def session(secret: str = SECRET) -> Any:
    return boto3.session.Session(aws_access_key_id=KEY, aws_secret_access_key=secret, region_name="eu-west-1")


def mwaa_source(standin: MwaaStandIn, secret: str = SECRET) -> ApiSource:
    # the stand-in serves InvokeRestApi at its own host: botocore's "env." prefix is left off
    access = MwaaAccess(ENV, session(secret), endpoint_url=standin.base_url, inject_host_prefix=False)
    return ApiSource(base_url=access.base_url(), managed=access, concurrency=2)


@pytest.fixture
def mwaa():
    with MwaaStandIn(fake_airflow, environment=ENV, keys={KEY: SECRET}) as standin:
        yield standin


# -- MWAA ---------------------------------------------------------------------------------------


def test_mwaa_requests_are_sigv4_signed_invoke_rest_api_calls_paged_as_on_any_server(mwaa) -> None:
    """Every request is ``POST /restapi/{Name}`` with the model's JSON (Path relative to the API,
    Method, QueryParameters), its SigV4 signature holds, and the v2 pages come back as Airflow's."""
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        info = client.connect()
        first = client.get_json("/dags", {"limit": 5, "offset": 0})
        second = client.get_json("/dags", {"limit": 5, "offset": 5})
    assert (info.api_version, info.airflow_version) == ("v2", "3.3.2")
    assert [d["dag_id"] for d in first["dags"] + second["dags"]] == [d["dag_id"] for d in DAGS]
    assert [entry["problem"] for entry in mwaa.log] == [None, None, None]
    assert {entry["path"] for entry in mwaa.log} == {f"/restapi/{ENV}"}
    calls = [json.loads(entry["body"]) for entry in mwaa.log]
    assert calls[0] == {"Path": "/version", "Method": "GET"}
    assert calls[2] == {"Path": "/dags", "Method": "GET", "QueryParameters": {"limit": 5, "offset": 5}}
    auth = mwaa.log[0]["headers"]["Authorization"]
    assert (
        auth.startswith(f"AWS4-HMAC-SHA256 Credential={KEY}/") and "/eu-west-1/airflow/aws4_request" in auth
    )
    assert SECRET not in json.dumps(mwaa.log[0]["headers"])


def test_mwaa_a_wrong_secret_key_is_refused_as_authentication(mwaa) -> None:
    refused = pytest.raises(AuthError, match="InvalidSignatureException: the signature does not match")
    with open_client(mwaa_source(mwaa, secret="not-the-secret"), retry=QUICK) as client, refused as exc:
        client.connect()
    assert "not-the-secret" not in str(exc.value)
    assert mwaa.log[0]["problem"] == "the signature does not match"  # the stand-in did check it


def test_mwaa_an_airflow_error_comes_back_as_its_own_status(mwaa) -> None:
    """A 404 of the web server arrives as RestApiClientException (HTTP 400): read as the 404 it is."""
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        client.connect()
        with pytest.raises(CaptureError, match=r"/api/v2/nothing answered HTTP 404"):
            client.get_json("/nothing")


def test_mwaa_a_web_server_overload_in_the_envelope_is_retried(mwaa) -> None:
    """RestApiServerException carrying a 503 is transient: the transport tries again."""
    faults = iter([(400, {"RestApiStatusCode": 503, "RestApiResponse": {"detail": "busy"}},
                    {"x-amzn-ErrorType": "RestApiServerException"})])  # fmt: skip
    mwaa.fault = lambda path: next(faults, None) if path == "/dags" else None
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        client.connect()
        page = client.get_json("/dags", {"limit": 50, "offset": 0})
    assert len(page["dags"]) == len(DAGS)
    assert client.stats.retries == 1


def test_mwaa_an_answer_over_the_body_cap_is_refused(mwaa) -> None:
    mwaa.fault = lambda path: (200, {"RestApiStatusCode": 200, "RestApiResponse": {"x": "y" * 50_000}}, {})
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        client.max_response_bytes = 10_000
        with pytest.raises(CaptureError, match="over the 10,000-byte limit"):
            client.connect()


def test_mwaa_a_redirect_is_never_followed_with_the_signed_request(mwaa) -> None:
    with MwaaStandIn(fake_airflow, environment=ENV, keys={KEY: SECRET}) as elsewhere:
        mwaa.fault = lambda path: (307, b"", {"Location": f"{elsewhere.base_url}/restapi/{ENV}"})
        refused = pytest.raises(CaptureError, match="a signed request is never sent elsewhere")
        with open_client(mwaa_source(mwaa), retry=QUICK) as client, refused:
            client.connect()
        assert elsewhere.log == []


def crawled_airflow(method: str, path: str, query: dict[str, Any], body: Any) -> tuple[int, Any]:
    """Enough of Airflow 3.3's API for a whole capture: the DAGs, each with a task, and empty lists."""
    if path.endswith("/tasks"):
        return 200, {"tasks": [{"task_id": "only"}], "total_entries": 1}
    empty = {
        "/assets": "assets",
        "/assets/aliases": "asset_aliases",
        "/importErrors": "import_errors",
        "/dagWarnings": "dag_warnings",
        "/dags/~/dagRuns": "dag_runs",
        "/assets/events": "asset_events",
    }
    if path in empty:
        return 200, {empty[path]: [], "total_entries": 0}
    return fake_airflow(method, path, query, body)


NESTED = b"[" * 100_000 + b"]" * 100_000
ERROR = {"x-amzn-ErrorType": "RestApiClientException"}


@pytest.mark.parametrize(
    ("status", "answer", "headers", "why"),
    [
        pytest.param(200, b'{"RestApiStatusCode": 200, "RestApiResponse": ' + NESTED + b"}", {},
                     "nested too deeply", id="nested-100000"),
        pytest.param(400, b'{"RestApiStatusCode": 404, "RestApiResponse": ' + NESTED + b"}", ERROR,
                     "nested too deeply", id="nested-in-an-error"),
        pytest.param(200, b'{"RestApiStatusCode": 200, "RestApiResponse": "\xff"}', {}, "not UTF-8",
                     id="not-utf8"),
        pytest.param(200, b"[1, 2]", {}, "not an InvokeRestApi envelope", id="an-array"),
        pytest.param(200, b'{"RestApiStatusCode": [200], "RestApiResponse": {}}', {},
                     "not an InvokeRestApi envelope", id="a-status-not-a-number"),
        pytest.param(400, b'{"__type": 5, "message": []}', ERROR, "not an InvokeRestApi envelope",
                     id="an-error-of-no-type"),
    ],
)  # fmt: skip
def test_mwaa_a_hostile_answer_for_one_dag_is_that_dags_lossiness(mwaa, status, answer, headers, why) -> None:
    """An answer botocore's own decode fails on (nested 100,000 deep: RecursionError before the
    provider's bounded decoder runs; not UTF-8; JSON that is no envelope) ended the capture with
    ``error: unexpected RecursionError``, exit 3. It is that DAG's lossiness, as in a direct
    capture, and the capture goes on; the summary counts only the requests sent (none for deadline
    alerts: InvokeRestApi cannot reach them, so they are not asked for)."""
    mwaa.upstream = crawled_airflow
    mwaa.fault = lambda path: (status, answer, headers) if path == "/dags/dag_03/tasks" else None
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        result = capture(client)
    assert sorted(result.tasks) == [d["dag_id"] for d in DAGS if d["dag_id"] != "dag_03"]
    lost = [r.message for r in result.lossiness if r.artifact == "tasks"]
    assert len(lost) == 1 and why in lost[0], lost
    assert lost[0].startswith(
        f"tasks of DAG 'dag_03' could not be captured: MWAA environment {ENV} (InvokeRestApi) "
        "/api/v2/dags/dag_03/tasks: InvokeRestApi's answer is unreadable: "
    )
    assert result.summary.requests == len(mwaa.log)  # counted as sent: every one reached the endpoint
    assert "deadline alerts" not in result.summary.line()
    assert not any(b"/ui/" in entry["body"] for entry in mwaa.log)
    deadline = [r.message for r in result.lossiness if r.message.startswith("deadline alerts unknown")]
    assert deadline == [
        "deadline alerts unknown: not read, MWAA's InvokeRestApi reaches only the REST API's paths and "
        "Airflow serves them at GET /ui/dags/{dag_id}/deadlineAlerts only; the rules' deadline check is "
        "not judged"
    ]


def test_mwaa_requests_not_sent_are_not_counted_in_the_summary(mwaa) -> None:
    """A DAG whose id makes its paths too long for InvokeRestApi: its tasks and doc_md are never
    sent, and the summary counts neither (it said "N for doc_md" for requests never sent)."""
    long_id = "x" * 60

    def upstream(method: str, path: str, query: dict[str, Any], body: Any) -> tuple[int, Any]:
        if path == "/dags":
            return 200, {"dags": [{"dag_id": "short"}, {"dag_id": long_id}], "total_entries": 2}
        return crawled_airflow(method, path, query, body)

    mwaa.upstream = upstream
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        result = capture(client)
    assert result.summary.requests == len(mwaa.log)
    assert "1 for doc_md" in result.summary.line()  # the short one's, sent
    assert any(long_id in r.message and "not sent" in r.message for r in result.lossiness)


def test_mwaa_a_path_over_64_characters_is_not_sent(mwaa) -> None:
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        client.connect()
        sent = len(mwaa.log)
        with pytest.raises(CaptureError, match="at most 64 characters and this one has 72"):
            client.get_json(f"/dags/{'x' * 60}/tasks")
    assert len(mwaa.log) == sent


def test_mwaa_connection_through_the_amazon_providers_aws_connection(mwaa, monkeypatch) -> None:
    """``airflow_api_mwaa`` names the environment and an ``aws`` connection (the amazon provider's
    keys and region); the generic hook reads its type and captures through InvokeRestApi."""
    monkeypatch.setenv(
        "AIRFLOW_CONN_AWS_STANDIN",
        json.dumps(
            {"conn_type": "aws", "login": KEY, "password": SECRET, "extra": {"region_name": "eu-west-1"}}
        ),
    )
    extra = {"aws_conn_id": "aws_standin", "endpoint_url": mwaa.base_url, "inject_host_prefix": False}
    monkeypatch.setenv(
        "AIRFLOW_CONN_MWAA_PROD", json.dumps({"conn_type": "airflow_api_mwaa", "host": ENV, "extra": extra})
    )
    ok, message = AirflowApiHook("mwaa_prod").test_connection()
    assert (ok, message) == (True, "Connected to Airflow 3.3.2 (API v2): 7 DAGs")
    assert all(entry["problem"] is None for entry in mwaa.log)
    assert SECRET not in SECRETS.scrub(f"signed with {SECRET}")  # registered: no message can show it


def test_mwaa_connection_without_an_aws_connection_uses_boto3s_default_chain(mwaa, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    extra = {"aws_conn_id": "", "endpoint_url": mwaa.base_url, "inject_host_prefix": "false"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_MWAA_PROD", json.dumps({"conn_type": "airflow_api_mwaa", "host": ENV, "extra": extra})
    )
    with AirflowApiHook("mwaa_prod").get_conn(QUICK) as client:
        client.connect()
        assert client.get_json("/dags", {"limit": 1, "offset": 0})["total_entries"] == 7


def test_mwaa_connection_without_a_region_says_where_to_set_one(monkeypatch) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv(
        "AIRFLOW_CONN_MWAA_PROD",
        json.dumps({"conn_type": "airflow_api_mwaa", "host": ENV, "extra": {"aws_conn_id": ""}}),
    )
    with pytest.raises(ConnectionConfigError, match="no AWS region for MWAA environment"):
        AirflowApiHook("mwaa_prod").get_source()


# -- Composer -----------------------------------------------------------------------------------


@pytest.fixture
def google():
    with GoogleStandIn(fake_airflow) as standin:
        yield standin


def expired_user_credentials(info: dict[str, str]) -> Any:
    """google-auth's user credentials (what ``gcloud auth application-default login`` leaves), with
    a token that expired long ago and the stand-in's token endpoint as their ``token_uri``."""
    from google.oauth2.credentials import Credentials

    return Credentials(
        token="ya29.long-expired",
        expiry=datetime.datetime(2020, 1, 1),
        refresh_token=info["refresh_token"],
        client_id=info["client_id"],
        client_secret=info["client_secret"],
        token_uri=info["token_uri"],
    )


def composer_source(standin: GoogleStandIn) -> ApiSource:
    info = standin.authorized_user_info()
    return ApiSource(standin.base_url, managed=ComposerAccess(lambda request: expired_user_credentials(info)))


def test_composer_an_expired_token_is_refreshed_before_it_is_sent(google) -> None:
    with open_client(composer_source(google), retry=QUICK) as client:
        client.connect()
        client.get_json("/dags", {"limit": 50, "offset": 0})
    tokens = [entry["token"] for entry in google.log if entry["kind"] == "api"]
    assert tokens == ["ya29.standin-1", "ya29.standin-1"]  # never the expired one
    assert [entry for entry in google.log if entry["kind"] == "token"] == [
        {"kind": "token", "form": {"grant_type": "refresh_token"}}
    ]


def test_composer_a_token_refused_mid_capture_is_refreshed_once(google) -> None:
    with open_client(composer_source(google), retry=QUICK) as client:
        client.connect()
        google.expire_all()  # expired at the server before the client's clock says so
        assert client.get_json("/dags", {"limit": 50, "offset": 0})["total_entries"] == 7
    assert client.refreshes == 2
    assert [entry["token"] for entry in google.log if entry["kind"] == "api"] == [
        "ya29.standin-1", "ya29.standin-1", "ya29.standin-2",
    ]  # fmt: skip


def test_composer_a_token_near_its_expiry_is_renewed_before_the_request(google) -> None:
    """google-auth counts a token with under 3 min 45 s left as expired: a token that lives a
    minute is renewed before every request, so none is ever sent in its last minutes."""
    google.lifetime = 60
    with open_client(composer_source(google), retry=QUICK) as client:
        client.connect()
        client.get_json("/dags", {"limit": 50, "offset": 0})
    sent = [entry["token"] for entry in google.log if entry["kind"] == "api"]
    assert len(sent) == 2 and len(set(sent)) == 2
    assert client.refreshes == google.issued == 3  # the version request, connect, the DAG page


def test_composer_the_token_is_never_sent_to_another_origin(google) -> None:
    with GoogleStandIn(fake_airflow) as elsewhere:
        google.redirect_to = elsewhere.base_url
        with open_client(composer_source(google), retry=QUICK) as client:
            client.connect()
            with pytest.raises(CaptureError, match="a redirect to another origin"):
                client.get_json("/dags", {"limit": 1})
        assert elsewhere.log == []


def test_composer_a_refused_refresh_is_an_auth_failure_without_secrets(google) -> None:
    source = composer_source(google)
    google.refresh_token = "revoked"  # the token endpoint no longer knows the refresh token
    with (
        open_client(source, retry=QUICK) as client,
        pytest.raises(AuthError, match="no Google access token") as exc,
    ):
        client.connect()
    assert "s3cr3t-client" not in str(exc.value) and "1//refresh" not in str(exc.value)


def test_composer_connection_with_application_default_credentials(google, monkeypatch, tmp_path) -> None:
    """``airflow_api_composer`` with no Google connection: application-default credentials, here
    the metadata server's (as on Composer's own workers, or GKE with workload identity), found and
    asked through the bounded transport. google-auth reads the metadata host once, at import, and
    ignores a ``token_uri`` in an authorized-user file: so its module constant is pointed at the
    stand-in (the one thing mocked here) and the ping address comes from GCE_METADATA_IP."""
    from google.auth.compute_engine import _metadata

    host = google.base_url.removeprefix("http://")
    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", host)
    monkeypatch.setenv("GCE_METADATA_IP", host)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))  # no gcloud credentials of this machine
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv(
        "AIRFLOW_CONN_COMPOSER_PROD",
        json.dumps(
            {"conn_type": "airflow_api_composer", "host": google.base_url, "extra": {"gcp_conn_id": ""}}
        ),
    )
    ok, message = AirflowApiHook("composer_prod").test_connection()
    assert (ok, message) == (True, "Connected to Airflow 3.3.2 (API v2): 7 DAGs")
    assert google.issued == 1
    assert {entry["token"] for entry in google.log if entry["kind"] == "api"} == {"ya29.metadata-1"}


# -- through the stand-ins, the real Airflow 3.3 API server behind them -------------------------


def direct_estate(airflow_server) -> Any:
    source = ApiSource(
        airflow_server.base_url, username=airflow_server.username, password=airflow_server.password
    )
    with open_client(source) as client:
        return capture(client).estate()


def direct_document(airflow_server) -> dict:
    estate = direct_estate(airflow_server)
    return build_document(estate, audit(estate))


@pytest.mark.airflow_server
def test_the_estate_captured_through_mwaa_is_the_estate_captured_directly(airflow_server) -> None:
    """Every request of a whole capture through InvokeRestApi, signed and checked; the same
    datasets and lineage as the direct capture, but for what only the server's own routes show:
    the dependency graph (``/ui/dependencies``) and each DAG's deadline alerts (``/ui/dags/...``)
    are out of InvokeRestApi's reach, never sent, and said in lossiness (the fingerprint is taken
    without ``airflow.deadline``, which the direct capture has and MWAA cannot know)."""
    upstream = real_server_upstream(airflow_server)
    with (
        MwaaStandIn(upstream, environment=ENV, keys={KEY: SECRET}) as standin,
        open_client(mwaa_source(standin)) as client,
    ):
        result = capture(client)
    estate = result.estate()
    assert {d.metadata.get(DEADLINE_KEY) for d in estate.dags()} == {None}
    direct = direct_estate(airflow_server)
    assert fingerprint_without_deadlines(estate) == fingerprint_without_deadlines(direct)
    assert all(entry["problem"] is None for entry in standin.log) and len(standin.log) > 10
    assert not any(b"/ui/" in entry["body"] for entry in standin.log)  # never sent
    messages = [record.message for record in result.lossiness]
    assert any("/ui/dependencies" in message for message in messages)
    assert any(
        message.startswith("deadline alerts unknown: not read, ") and "InvokeRestApi" in message
        for message in messages
    ), messages
    assert "deadline alerts" not in result.summary.line()  # none asked for: none sent


@pytest.mark.airflow_server
def test_the_estate_captured_through_composer_is_the_estate_captured_directly(airflow_server) -> None:
    upstream = real_server_upstream(airflow_server)
    with GoogleStandIn(upstream) as standin, open_client(composer_source(standin)) as client:
        result = capture(client)
    estate = result.estate()
    document = build_document(estate, audit(estate))
    assert document["fingerprint"] == direct_document(airflow_server)["fingerprint"]
    assert standin.issued == 1


@pytest.mark.airflow_server
def test_mwaa_connections_stored_in_the_metadata_database_capture_from_the_command_line(
    airflow_server, tmp_path
) -> None:
    """Both connections kept where users keep them (``airflow connections add``): the
    ``airflow_api_mwaa`` one and the ``aws`` one it names, which the amazon provider's hook, outside
    a task, would not find there by itself. ``python -m ... capture --conn-id`` reads both."""
    import subprocess
    import sys
    from pathlib import Path

    from support.airflow_server import migrated_home

    env = migrated_home(tmp_path / "home", tmp_path / "dags")
    airflow = str(Path(sys.executable).with_name("airflow"))
    with MwaaStandIn(real_server_upstream(airflow_server), environment=ENV, keys={KEY: SECRET}) as standin:
        extra = {"aws_conn_id": "aws_stored", "endpoint_url": standin.base_url, "inject_host_prefix": False}
        aws = {"conn_type": "aws", "login": KEY, "password": SECRET, "extra": {"region_name": "eu-west-1"}}
        for conn_id, conn in (
            ("aws_stored", aws),
            ("mwaa_stored", {"conn_type": "airflow_api_mwaa", "host": ENV, "extra": extra}),
        ):
            added = subprocess.run(
                [airflow, "connections", "add", conn_id, "--conn-json", json.dumps(conn)],
                capture_output=True, text=True, env=env, timeout=120,
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
        result = subprocess.run(
            [sys.executable, "-m", "airflow_provider_coremodels", "capture", "--conn-id", "mwaa_stored",
             "--out", str(tmp_path / "out")],
            capture_output=True, text=True, env=env, timeout=180,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("captured 6 DAGs, 11 tasks, 4 assets")
    assert SECRET not in result.stdout + result.stderr
    assert standin.log and all(entry["problem"] is None for entry in standin.log)


def test_mwaa_access_denied_names_the_permission_it_needs(mwaa) -> None:
    """AccessDeniedException (the caller lacks airflow:InvokeRestApi on the Airflow role) is an
    authentication failure (exit 3) that says which permission, on which resource, is missing."""
    denied = (
        403,
        {"Message": "User is not authorized to access Airflow role"},
        {"x-amzn-ErrorType": "AccessDeniedException"},
    )
    mwaa.fault = lambda path: denied
    refused = pytest.raises(AuthError, match=rf"airflow:InvokeRestApi on .*:role/{ENV}/<Airflow role>")
    with open_client(mwaa_source(mwaa), retry=QUICK) as client, refused:
        client.connect()
    assert client.stats.retries == 0


def test_mwaa_a_large_answer_is_decoded_once_as_it_arrives(mwaa) -> None:
    """One 20 MB tasks answer through InvokeRestApi cost 1.9x what it costs direct (botocore
    decoded the envelope whole, which was encoded and decoded again): the envelope is read once,
    as it arrives, each task reduced as read, so the capture's Python allocations at their peak
    stay a fraction of the answer (tracemalloc, which counts them exactly); the tasks are all there."""
    import tracemalloc

    doc = "lorem ipsum dolor sit amet " * 700
    tasks = [{"task_id": f"t{i:05d}", "operator_name": "BashOperator", "doc_md": doc} for i in range(1_000)]
    inside = {"tasks": tasks, "total_entries": 1_000}
    answer = json.dumps({"RestApiStatusCode": 200, "RestApiResponse": inside})
    large = answer.encode()
    del tasks, inside, answer
    mwaa.upstream = crawled_airflow
    mwaa.fault = lambda path: (200, large, {}) if path == "/dags/dag_00/tasks" else None
    with open_client(mwaa_source(mwaa), retry=QUICK) as client:
        client.connect()
        tracemalloc.start()
        try:
            result = capture(client)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(result.tasks["dag_00"]["tasks"]) == 1_000
    assert result.tasks["dag_00"]["tasks"][0] == {"task_id": "t00000", "operator_name": "BashOperator"}
    assert peak < len(large) / 4, f"{peak / 1e6:.1f} MB at the peak for a {len(large) / 1e6:.1f} MB answer"
