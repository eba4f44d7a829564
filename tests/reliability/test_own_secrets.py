"""The run's own secrets, and credentials a server quotes, reach nothing the run writes (issue 44).

A scripted API on 127.0.0.1 (``HostileApi("own-secrets")``) echoes the password it was logged in
with and the token it handed out in a DAG's description and its deadline alerts' names, names an
alert after a ``postgresql://`` URL, ``password=...`` and a JWT, quotes an AWS key pair in an
import error, and refuses a request with a body quoting a URL's password and ``password=``. The
managed captures go through the stand-ins of ``tests/support/managed_standins.py``: MWAA's AWS
secret key and Composer's Google token echoed in a description and an import error. Nothing of
it may be seen in stdout, stderr, the log, ``latest.json``, the history, any view of the stored
snapshot (``--format json``, markdown, the table), or the MCP server's answers.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.hostile_api import ASSIGNED_PASSWORD, TOKEN, URL_PASSWORD, HostileApi
from support.secret_shapes import AWS_ID, AWS_SECRET, JWT

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, capture, open_client
from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.errors import CaptureError
from airflow_provider_coremodels.jobs.export import export
from airflow_provider_coremodels.redaction import SECRETS

PASSWORD = "cmOwnPassw0rd-60"  # the API user's password: no credential shape, only the run knows it
#: Every secret the scripted server echoes: none may be seen anywhere.
OWN = (
    PASSWORD,
    TOKEN,
    URL_PASSWORD,
    ASSIGNED_PASSWORD,
    JWT.split(".")[1],
    JWT.split(".")[2],
    AWS_ID,
    AWS_SECRET,
)
QUICK = RetryPolicy(max_attempts=2, backoff=0.01, max_backoff=0.02, budget=60)


def seen(texts: list[tuple[str, str | bytes]], secrets: tuple[str, ...] = OWN) -> list[tuple[str, str]]:
    """(where, secret) for every secret seen in a text, JSON-escaped or not: [] when clean."""
    found = []
    for where, text in texts:
        data = text.decode(errors="replace") if isinstance(text, bytes) else text
        unescaped = data.replace('\\"', '"').replace("\\/", "/").replace("\\\\", "\\")
        found += [(where, secret) for secret in secrets if secret in data or secret in unescaped]
    return found


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(autouse=True)
def forget_secrets():
    """Each test registers its own: a secret another test left would hide a leak here."""
    SECRETS.clear()
    yield
    SECRETS.clear()


def test_echoed_secrets_reach_no_view_no_sink_and_no_line(tmp_path: Path) -> None:
    """``export`` to a file sink, then every view of what it stored: the password and token the
    server echoes (no shape: only the run knows them), the URL password, ``password=``, the JWT and
    the AWS pair are seen nowhere; the alerts, the description and the import error still say what
    they are, with ``***`` where a secret was."""
    sink = tmp_path / "sink"
    with HostileApi("own-secrets", password=PASSWORD) as api:
        exported = cli(
            "export", "--base-url", api.base_url, "--username", "admin", "--password-env", "CM_PASSWORD",
            "--sink", str(sink), "--format", "json", "--retry-budget", "60",
            env={"CM_PASSWORD": PASSWORD},
        )  # fmt: skip
    assert exported.returncode in (0, 1), exported.stderr
    texts: list[tuple[str, str | bytes]] = [("stdout", exported.stdout), ("stderr", exported.stderr)]
    texts += [
        (str(path.relative_to(tmp_path)), path.read_bytes()) for path in sink.rglob("*") if path.is_file()
    ]
    for view in (
        *(["audit", "--snapshot", str(sink), "--format", f] for f in ("table", "json", "markdown", "sarif")),
        ["history", "--sink", str(sink), "--format", "json"],
    ):
        shown = cli(*view)
        assert shown.returncode in (0, 1), shown.stderr
        texts += [(f"{view[0]} {view[-1]} stdout", shown.stdout), (f"{view[0]} stderr", shown.stderr)]

    from airflow_provider_coremodels.integrations.assistant import SnapshotQueries

    queries = SnapshotQueries((sink / "latest.json").read_bytes(), source="latest.json")
    answers = [queries.facts(), queries.findings_page(limit=100), queries.dataset("a")]
    texts.append(("mcp", json.dumps(answers, default=str)))
    assert seen(texts) == []

    stored = json.loads((sink / "latest.json").read_bytes())
    dag = next(d for d in stored["datasets"] if d["name"] == "a")
    assert dag["description"] == "Logs in with ***; the token *** is kept for the next run"
    alerts = json.loads(dag["metadata"][DEADLINE_KEY])
    assert sorted(a.get("name") for a in alerts) == sorted(
        ["***", "token ***", "late load of postgresql://etl:***@db/dw", "password=***"]
    )
    assert {a["reference"] for a in alerts} >= {"DagRunQueuedAtDeadline", "***"}
    [error] = stored["importErrors"]
    assert error["error"] == "botocore.exceptions.ClientError: key *** secret *** refused"
    # the refused request's record, and its log line, say what failed with the secrets scrubbed
    assert "postgresql://etl:***@db:5432/dw failed (password=***)" in exported.stderr
    assert any("password=***" in record["message"] for record in stored["lossiness"])


def test_a_refused_answer_quoting_a_password_is_one_scrubbed_line(tmp_path: Path) -> None:
    """The DAG list refused (400) with a body quoting a URL's password and ``password=``: the
    export's one stderr line names the status and the server's words, the secrets scrubbed."""
    with HostileApi("refused-quoting", password=PASSWORD) as api:
        refused = cli(
            "export", "--base-url", api.base_url, "--username", "admin", "--password-env", "CM_PASSWORD",
            "--sink", str(tmp_path / "sink"), "--retry-budget", "30",
            env={"CM_PASSWORD": PASSWORD},
        )  # fmt: skip
    assert refused.returncode == 3, refused.stderr
    assert seen([("stdout", refused.stdout), ("stderr", refused.stderr)]) == []
    assert "HTTP 400: connection to postgresql://etl:***@db:5432/dw failed (password=***)" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_the_library_logs_and_results_hold_no_echoed_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same server through the library at DEBUG: the log records, the document and the
    context a notifier's templates see hold none of the secrets."""
    from airflow_provider_coremodels.jobs.alerts import alert_context
    from airflow_provider_coremodels.sinks.directory import FileSink

    caplog.set_level(logging.DEBUG)
    with (
        HostileApi("own-secrets", password=PASSWORD) as api,
        AirflowApiClient(ApiSource(api.base_url, username="admin", password=PASSWORD), retry=QUICK) as client,
    ):
        result = export(client, [FileSink(tmp_path / "sink")])
    context = alert_context(result, "http://airflow.test/coremodels")
    texts: list[tuple[str, str | bytes]] = [
        ("log", caplog.text),
        ("document", encode(result.document)),
        ("notifier context", json.dumps(context, default=str)),
    ]
    assert seen(texts) == []


# -- the managed captures: MWAA's AWS keys, Composer's Google token ----------------------------


boto3 = pytest.importorskip("boto3")
pytest.importorskip("google.auth")


def _echoing(quoted: list[str]) -> Any:
    """A small Airflow 3 whose one DAG's description, deadline alert and import error quote
    ``quoted`` (filled in by the test once the secret exists)."""

    def upstream(method: str, path: str, query: dict[str, Any], body: Any) -> tuple[int, Any]:
        said = " and ".join(quoted)
        if path == "/version":
            return 200, {"version": "3.3.2", "git_version": None}
        if path == "/dags":
            return 200, {"dags": [{"dag_id": "a", "description": f"signed with {said}"}], "total_entries": 1}
        if path == "/importErrors":
            error = {"import_error_id": 1, "filename": "x.py", "stack_trace": f"ValueError: refused {said}\n"}
            return 200, {"import_errors": [error], "total_entries": 1}
        return 404, {"detail": "Not Found"}

    return upstream


def _document(client: AirflowApiClient) -> bytes:
    estate = capture(client).estate()
    return encode(build_document(estate, audit(estate)))


def test_mwaa_the_aws_keys_a_server_echoes_are_stored_nowhere() -> None:
    """The session's key id, secret key and session token, registered when the capture starts, are
    scrubbed from a description and an import error quoting them; so is an error ``Message`` of
    MWAA's own quoting a password."""
    from support.managed_standins import MwaaStandIn

    from airflow_provider_coremodels.capture.mwaa import MwaaAccess

    key, secret, session_token = "AKIDSTANDIN0000044", "standin-secret/44+key", "cmOwnSessionToken-44"
    with MwaaStandIn(
        _echoing([key, secret, session_token]), environment="Env", keys={key: secret}
    ) as standin:
        session = boto3.session.Session(
            aws_access_key_id=key, aws_secret_access_key=secret, aws_session_token=session_token,
            region_name="eu-west-1",
        )  # fmt: skip
        access = MwaaAccess("Env", session, endpoint_url=standin.base_url, inject_host_prefix=False)
        source = ApiSource(base_url=access.base_url(), managed=access, concurrency=2)
        with open_client(source, retry=QUICK) as client:
            document = _document(client)
        assert seen([("document", document)], (key, secret, session_token)) == []
        assert b"signed with *** and *** and ***" in document

        standin.fault = lambda path: (
            400,
            {"Message": f"bad request: postgresql://etl:{URL_PASSWORD}@db/dw password={ASSIGNED_PASSWORD}"},
            {"x-amzn-ErrorType": "ValidationException"},
        )
        with open_client(source, retry=QUICK) as client, pytest.raises(CaptureError) as refused:
            client.connect()
    assert seen([("error", str(refused.value))]) == []
    assert "postgresql://etl:***@db/dw password=***" in str(refused.value)


def test_composer_the_google_token_a_server_echoes_is_stored_nowhere() -> None:
    """Composer's access token (``ya29.standin-N``: too short for the ``ya29.`` shape, so only its
    registration finds it) quoted in a description and an import error is stored nowhere."""
    from support.managed_standins import GoogleStandIn

    from airflow_provider_coremodels.capture.composer import ComposerAccess

    quoted: list[str] = []
    with GoogleStandIn(_echoing(quoted)) as standin:
        from google.oauth2.credentials import Credentials

        info = standin.authorized_user_info()
        credentials = Credentials(  # no token yet: the first request refreshes one at the stand-in
            token=None, refresh_token=info["refresh_token"], client_id=info["client_id"],
            client_secret=info["client_secret"], token_uri=info["token_uri"],
        )  # fmt: skip
        source = ApiSource(
            standin.base_url, managed=ComposerAccess(lambda request: credentials), concurrency=2
        )
        with open_client(source, retry=QUICK) as client:
            client.connect()
            quoted += list(standin.tokens)  # the token the capture was handed, echoed from now on
            document = _document(client)
    assert quoted and seen([("document", document)], tuple(quoted)) == []
    assert b"signed with ***" in document


@pytest.mark.parametrize(
    ("key", "value", "kept"),
    [
        ("dag_id", "admin_reports", "admin_reports"),  # an identifier: never the run's secrets
        ("uri", "postgres://db/admin/orders", "postgres://db/admin/orders"),
        ("description", "admin_reports for the admin team", "***_reports for the *** team"),
        ("password", "anything at all", "***"),  # a credential's key: its value whatever it is
        ("token_count", "12", "12"),
    ],
)
def test_identifiers_keep_the_run_secrets_free_text_loses_them(key: str, value: str, kept: str) -> None:
    """A short password (``admin``) is scrubbed from free text, never from an id or a URI, which
    other items refer to; a value under a credential's key is replaced whole."""
    from airflow_provider_coremodels.redaction import scrub_answer

    SECRETS.add("admin")
    assert scrub_answer({"items": [{key: value}]}) == {"items": [{key: kept}]}


def test_owners_and_tags_are_identifiers_throughout() -> None:
    """Teams and notifiers are found through owners and tags: a DAG owned by ``airflow`` (Airflow's
    default owner) keeps its owner when the run's password is ``airflow`` too, in a list and in the
    objects of a tag list, while a credential shape there is still scrubbed and the description
    beside them loses the password."""
    from airflow_provider_coremodels.redaction import scrub_answer

    SECRETS.add("airflow")
    dag = {
        "owners": ["airflow", "orders"],
        "tags": [{"name": "team:airflow", "dag_id": "x"}, {"name": "postgresql://u:pw1234@db/x"}],
        "description": "airflow's nightly load",
    }
    assert scrub_answer({"dags": [dag]}) == {
        "dags": [
            {
                "owners": ["airflow", "orders"],
                "tags": [{"name": "team:airflow", "dag_id": "x"}, {"name": "postgresql://u:***@db/x"}],
                "description": "***'s nightly load",
            }
        ]
    }


def test_every_connection_read_registers_its_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one door every connection comes through (``connection_fields``): a sink's, an
    endpoint's or a cloud's connection has its password and the credentials in its extra (nested,
    or in a JSON string as Google's ``keyfile_dict``) registered, and so scrubbed from anything a
    server writes back; an ordinary extra (a region, a timeout) is not."""
    from airflow_provider_coremodels.compat import BaseHook
    from airflow_provider_coremodels.hooks.connection_fields import get_connection, share_with_other_hooks

    sink_extra = {"aws_secret_access_key": "cmConnAwsSecret-81", "region_name": "eu-west-1"}
    keyfile = json.dumps({"type": "service_account", "private_key": "cmConnPrivateKey-82"})
    gcp_extra = {"keyfile_dict": keyfile, "nested": {"client_secret": "cmConnClientSecret-83"}}
    for conn_id, fields in (
        (
            "lake_sink",
            {"conn_type": "aws", "login": "AKIDCONN", "password": "cmConnPassword-84", "extra": sink_extra},
        ),
        ("gcp_conn", {"conn_type": "google_cloud_platform", "extra": gcp_extra}),
    ):
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))
    get_connection(BaseHook, "lake_sink")
    share_with_other_hooks(BaseHook, "gcp_conn")
    registered = SECRETS.values()
    assert {"cmConnAwsSecret-81", "cmConnPrivateKey-82", "cmConnClientSecret-83", "cmConnPassword-84"} <= set(
        registered
    )
    assert "eu-west-1" not in registered
    answer = scrub_answer_of(f"refused cmConnPassword-84 and cmConnClientSecret-83 in {keyfile}")
    assert "cmConn" not in answer


def scrub_answer_of(text: str) -> str:
    from airflow_provider_coremodels.redaction import scrub_answer

    return str(scrub_answer({"detail": text})["detail"])
