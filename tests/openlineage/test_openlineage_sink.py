"""The ``openlineage://`` sink: events sent with the official client and its transports.

Real parts: the client's HTTP transport posts to a real local receiver (and its file transport
writes a real file); ``export`` captures a real local (replayed Airflow 2) REST API. Each command
runs in its own process, so what is asserted of stderr is what a user sees.
"""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest
from cli.test_audit_command import run
from support.helpers import EXAMPLE_ESTATE, FIXTURES
from support.openlineage_kit import API_KEY, Receiver, cli, http_transport
from support.replay_server import AirflowV1ReplayServer

pytestmark = pytest.mark.slow  # local receivers, and the command line in subprocesses

EXTRA = "pip install 'airflow-provider-coremodels[openlineage]'"


@pytest.fixture
def example(tmp_path: Path, capsys) -> str:
    """The example estate as one deployment's stored snapshot, for merge: ``example=<path>``."""
    code, out, _ = run(capsys, "audit", "--example", "--format", "json")
    assert code == 0
    path = tmp_path / "example.json"
    path.write_text(out)
    return f"example={path}"


def test_export_sends_what_it_prints(receiver: Receiver) -> None:
    """One export, both ways: the events on stdout are, byte for byte, the bodies the receiver got."""
    with AirflowV1ReplayServer(FIXTURES / "airflow2") as airflow:
        result = cli(
            "export", "--base-url", airflow.base_url, "--username", airflow.username,
            "--password-env", "AF_PASSWORD", "--sink", "openlineage://", "--format", "openlineage",
            env={"AF_PASSWORD": airflow.password, **http_transport(receiver.base_url)},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    assert len(printed) == 5  # the five DAGs of the recorded Airflow 2 estate
    assert receiver.bodies == printed
    assert {r.headers["Authorization"] for r in receiver.received} == {f"Bearer {API_KEY}"}
    assert result.stderr.splitlines()[-1].endswith("; openlineage:// (sent 5 events)")
    assert API_KEY not in result.stdout + result.stderr


def test_merge_sends_what_it_prints(example: str, receiver: Receiver) -> None:
    env = http_transport(receiver.base_url)
    printed = cli("merge", example, "--format", "openlineage", env=env)
    sent = cli("merge", example, "--sink", "openlineage://", "--format", "json", env=env)
    assert (printed.returncode, sent.returncode) == (0, 0), printed.stderr + sent.stderr
    assert receiver.bodies == printed.stdout.splitlines()
    assert [(e["job"]["namespace"], e["job"]["name"]) for e in receiver.events][:2] == [
        ("example", "backfill_customers"),  # merged: the deployment's name is the default namespace
        ("example", "customer_report"),
    ]
    fingerprint = json.loads(sent.stdout)["fingerprint"]
    assert sent.stderr.splitlines()[-1] == (
        f"merge: 1 deployments, fingerprint {fingerprint}; openlineage:// (sent 6 events)"
    )


def test_the_sink_query_chooses_events_and_namespace(example: str, receiver: Receiver) -> None:
    result = cli(
        "merge", example, "--sink", "openlineage://?events=job&namespace=example=airflow-prod",
        env=http_transport(receiver.base_url),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(receiver.events) == 6
    for event in receiver.events:
        assert event["schemaURL"].endswith("#/$defs/JobEvent")
        assert event["job"]["namespace"] == "airflow-prod"


def test_the_file_transport_writes_what_is_printed(example: str, tmp_path: Path) -> None:
    path = tmp_path / "events.ndjson"
    env = {"OPENLINEAGE__TRANSPORT__TYPE": "file", "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(path),
           "OPENLINEAGE__TRANSPORT__APPEND": "true"}  # fmt: skip
    printed = cli("merge", example, "--format", "openlineage", "--openlineage-events", "job", env=env)
    sent = cli("merge", example, "--sink", "openlineage://", "--openlineage-events", "job", env=env)
    assert (printed.returncode, sent.returncode) == (0, 0), sent.stderr
    assert path.read_text().splitlines() == printed.stdout.splitlines()


def test_airflows_openlineage_configuration_is_used(example: str, receiver: Receiver) -> None:
    """Where the OpenLineage provider is configured the Airflow way ([openlineage] transport),
    openlineage:// sends where the provider sends."""
    transport = {"type": "http", "url": receiver.base_url, "retry": {"total": 0}}
    result = cli("merge", example, "--sink", "openlineage://",
                 env={"AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(receiver.events) == 6


def test_openlineage_url_and_api_key(example: str, receiver: Receiver) -> None:
    result = cli("merge", example, "--sink", "openlineage://",
                 env={"OPENLINEAGE_URL": receiver.base_url, "OPENLINEAGE_API_KEY": API_KEY})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(receiver.events) == 6
    assert {r.headers["Authorization"] for r in receiver.received} == {f"Bearer {API_KEY}"}


#: Ways of configuring where events go, each read by the client or by Airflow's provider.
SETTINGS = {
    "client-variables": lambda url: http_transport(url),
    "url-and-namespace": lambda url: {"OPENLINEAGE_URL": url, "OPENLINEAGE_NAMESPACE": "from-the-client"},
    "airflow-conf": lambda url: {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "http", "url": url}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "from-airflow",
    },
}


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
def test_a_forked_run_sends_and_says_what_a_fresh_one_does(receiver: Receiver, settings) -> None:
    """The tests here fork the command line from a process that imported the sink (support.cli_forks),
    which holds only if the client's and the provider's settings are read when a run reads them, not
    when the sink is imported: the same export, forked and started afresh, sends and says the same."""
    with AirflowV1ReplayServer(FIXTURES / "airflow2") as airflow:
        env = {"AF_PASSWORD": airflow.password, **settings(receiver.base_url)}
        argv = (
            "export", "--base-url", airflow.base_url, "--username", airflow.username,
            "--password-env", "AF_PASSWORD", "--sink", "openlineage://", "--format", "openlineage",
        )  # fmt: skip
        fresh = cli(*argv, env=env, fresh=True)
        sent_fresh = receiver.bodies
        forked = cli(*argv, env=env)
        sent_forked = receiver.bodies[len(sent_fresh) :]
    assert fresh.returncode == 0 and len(sent_fresh) == 5, fresh.stderr
    timeless = [_without_capture_time(text) for text in (forked.stdout, forked.stderr, *sent_forked)]
    assert timeless == [_without_capture_time(text) for text in (fresh.stdout, fresh.stderr, *sent_fresh)]
    assert forked.returncode == fresh.returncode


def _without_capture_time(text: str) -> str:
    """The text without the times a run reads off the clock: when it captured the estate (each
    event's time), when it logged a line, and how long it took."""
    text = re.sub(r'"eventTime": "[^"]*"', '"eventTime": "-"', text)
    text = re.sub(r"^\d{4}-\d\d-\d\dT[\d:.]+Z ", "", text, flags=re.MULTILINE)
    return re.sub(r"\b\d+\.\d+ s\b", "- s", text)


def test_disabled_openlineage_sends_nothing_and_says_so(example: str) -> None:
    result = cli("merge", example, "--sink", "openlineage://", env={"OPENLINEAGE_DISABLED": "true"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("openlineage:// (sent 0 events)")
    assert "OpenLineage is disabled (OPENLINEAGE_DISABLED): nothing sent" in result.stderr


# -- failures: one line on stderr, the right exit code, no secret -------------------------------


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    assert API_KEY not in stderr
    assert len(stderr.splitlines()) == 1, stderr
    return stderr.rstrip("\n")


def error_line(stderr: str) -> str:
    """The failure after retries: one error line, the last; the retries before it are warnings."""
    assert "Traceback" not in stderr
    assert API_KEY not in stderr
    lines = stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], stderr
    assert all("warning" in line and "retrying" in line for line in lines[:-1]), stderr
    return lines[-1]


def test_a_refusing_receiver_is_exit_3(example: str) -> None:
    with Receiver(status=500) as refusing:
        url = refusing.base_url
        result = cli("merge", example, "--sink", "openlineage://", env=http_transport(url))
        tried = len(refusing.received)
    assert result.returncode == 3
    assert API_KEY not in result.stdout
    assert error_line(result.stderr) == (
        "error: sink openlineage://: the OpenLineage http transport failed after 0 of 6 events: "
        f"POST {url}/api/v1/lineage failed after 2 attempts: HTTP 500"
    )
    assert tried == 2  # the first event, and the one retry configured; then the export stops


def test_an_unreachable_receiver_is_exit_3(example: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = cli("merge", example, "--sink", "openlineage://", env=http_transport(f"http://127.0.0.1:{port}"))
    assert result.returncode == 3
    line = error_line(result.stderr)
    assert line.startswith(
        "error: sink openlineage://: the OpenLineage http transport failed after 0 of 6 events"
    )
    assert "Connection refused" in line


def test_an_api_key_in_a_url_is_never_printed(example: str) -> None:
    with Receiver(status=500) as refusing:
        url = refusing.base_url.replace("http://", f"http://user:{API_KEY}@")
        result = cli("merge", example, "--sink", "openlineage://", env=http_transport(url))
    assert result.returncode == 3
    assert "user" not in error_line(result.stderr)  # the URL's user info is not printed either


def test_no_configuration_is_exit_2_before_anything_is_done(example: str) -> None:
    result = cli("merge", example, "--sink", "openlineage://")
    assert (result.returncode, result.stdout) == (2, "")
    assert one_line(result.stderr) == (
        "error: sink openlineage://: no OpenLineage transport is configured (set OPENLINEAGE_URL, "
        "OPENLINEAGE_CONFIG or OPENLINEAGE__TRANSPORT__TYPE, write an openlineage.yml, or configure "
        "[openlineage] transport)"
    )


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("openlineage://marquez:5000", "openlineage:// takes no host or path"),
        ("openlineage://?event=job", "unknown query parameter 'event'"),
        ("openlineage://?events=dataset", "openlineage events must be run or job, got 'dataset'"),
    ],
)
def test_a_sink_uri_it_cannot_use_is_exit_2(example: str, receiver: Receiver, uri: str, problem: str) -> None:
    result = cli("merge", example, "--sink", uri, env=http_transport(receiver.base_url))
    assert (result.returncode, result.stdout) == (2, "")
    assert one_line(result.stderr).startswith(f"error: sink {uri}")
    assert problem in result.stderr
    assert receiver.received == []


@pytest.mark.parametrize("missing", ["openlineage", "airflow.providers.openlineage"])
def test_without_the_extra_the_format_is_exit_2(missing: str) -> None:
    """Simulated: the module is made unimportable (``sys.modules[name] = None``) in the process."""
    result = cli("audit", "--example", "--format", "openlineage", env={"MISSING": missing})
    assert (result.returncode, result.stdout) == (2, "")
    assert one_line(result.stderr).startswith(
        f"error: --format openlineage needs the openlineage extra: {EXTRA} ("
    )


def test_without_the_extra_the_sink_is_exit_2(example: str) -> None:
    """Simulated as above; the sink is refused before anything is read or sent."""
    result = cli("merge", example, "--sink", "openlineage://", env={"MISSING": "openlineage"})
    assert (result.returncode, result.stdout) == (2, "")
    assert one_line(result.stderr).startswith(
        f"error: sink openlineage:// needs the openlineage extra: {EXTRA} ("
    )


def test_the_example_estates_recording_is_what_the_sink_describes() -> None:
    """Guard: the estate the sink tests merge is the shipped example (six DAGs)."""
    assert len(json.loads((EXAMPLE_ESTATE / "dags.json").read_bytes())["dags"]) == 6
    assert "OPENLINEAGE__TRANSPORT__TYPE" not in os.environ  # the autouse fixture cleaned up


def test_the_secrets_of_a_client_configuration_are_remembered() -> None:
    """Which configuration values are scrubbed from every message: secrets, not their neighbours
    (scrubbing "api_key" or a Kafka message key would blank ordinary words)."""
    from airflow_provider_coremodels.integrations.openlineage import remember_secrets
    from airflow_provider_coremodels.redaction import SECRETS

    remember_secrets(
        {
            "transport": {
                "type": "composite",
                "transports": {
                    "marquez": {"type": "http", "url": "https://user:url-pass-1@marquez:5000",
                                "auth": {"type": "api_key", "apiKey": "key-1111"},
                                "custom_headers": {"Authorization": "Bearer tok-2222"}},
                    "catalog": {"type": "http", "url": "https://catalog",
                                "auth": {"type": "oauth2", "clientId": "coremodels",
                                         "clientSecret": "sec-3333", "tokenEndpoint": "https://idp/token"}},
                    "kafka": {"type": "kafka", "topic": "lineage", "messageKey": "airflow",
                              "config": {"bootstrap.servers": "broker:9092", "sasl.password": "kaf-4444"}},
                },
            }
        }
    )  # fmt: skip
    said = "url-pass-1 key-1111 Bearer tok-2222 sec-3333 kaf-4444"
    kept = "api_key oauth2 coremodels airflow https://idp/token"
    assert SECRETS.scrub(f"{said} {kept}") == f"*** *** *** *** *** {kept}"
