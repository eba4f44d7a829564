"""The first mistakes people make with a connection, each answered with what to try.

Real sockets throughout: a closed port, a plain HTTP server asked for TLS, a TLS server (a
certificate made in the run, tests/support/tls.py) asked for plain HTTP or not trusted, and
the same server trusted through ``--ca-bundle``.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from support.local_http import ScriptedServer, json_reply, no_aliases_no_warnings
from support.tls import self_signed

from airflow_provider_coremodels.capture import RetryPolicy
from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.errors import SinkError
from airflow_provider_coremodels.sinks.endpoint import EndpointSink

PASSWORD = "hint-test-password"


def airflow3() -> dict:
    return {
        "/api/v2/version": json_reply({"version": "3.3.2", "git_version": None}),
        "/auth/token": json_reply({"access_token": "t1"}, status=201),
        "/api/v2/dags": json_reply({"dags": [{"dag_id": "a", "tags": []}], "total_entries": 1}),
        "/api/v2/dags/a/tasks": json_reply({"tasks": [], "total_entries": 0}),
        "/api/v2/assets": json_reply({"assets": [], "total_entries": 0}),
        **no_aliases_no_warnings(),
    }


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory):
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(certificate):
    server = ScriptedServer(airflow3())
    server.tls = certificate[1]
    with server:
        yield server


def capture(capsys, monkeypatch, tmp_path: Path, url: str, *extra: str) -> tuple[int, str]:
    monkeypatch.setenv("HINT_PASSWORD", PASSWORD)
    argv = ["capture", "--base-url", url, "--username", "u", "--password-env", "HINT_PASSWORD"]
    code = main([*argv, "--out", str(tmp_path / "out"), "--retry-budget", "1", *extra])
    err = capsys.readouterr().err
    return code, err


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connection_asks_whether_the_server_listens_there(capsys, monkeypatch, tmp_path) -> None:
    port = closed_port()
    code, err = capture(capsys, monkeypatch, tmp_path, f"http://127.0.0.1:{port}")
    assert code == 3
    assert err.endswith(f"Connection refused (the retry budget of 1 s is spent); is the API server running "
                        f"and listening at 127.0.0.1:{port}?\n")  # fmt: skip
    assert err.count("\n") == 1


def test_https_to_a_plain_http_server_says_use_http(capsys, monkeypatch, tmp_path) -> None:
    with ScriptedServer(airflow3()) as plain:
        url = plain.base_url.replace("http://", "https://")
        code, err = capture(capsys, monkeypatch, tmp_path, url)
    assert code == 3
    assert f"TLS error talking to {url}/api/v2/version: wrong version number (WRONG_VERSION_NUMBER); " in err
    assert err.endswith("the server speaks plain HTTP there: use http://, or the TLS port\n")
    assert plain.requests == []


def test_http_to_a_tls_server_says_use_https(capsys, monkeypatch, tmp_path, tls_server) -> None:
    url = tls_server.base_url.replace("https://", "http://")
    code, err = capture(capsys, monkeypatch, tmp_path, url)
    assert code == 3
    assert err.endswith("; if the server expects TLS there, use https://\n")
    assert err.count("\n") == 1


def test_an_untrusted_certificate_names_the_ca_bundle(capsys, monkeypatch, tmp_path, tls_server) -> None:
    code, err = capture(capsys, monkeypatch, tmp_path, tls_server.base_url)
    assert code == 3
    assert "certificate verify failed: self-signed certificate (CERTIFICATE_VERIFY_FAILED); " in err
    assert err.endswith("(the connection's ca_bundle extra, or --ca-bundle)\n")
    assert tls_server.requests == []


def test_the_ca_bundle_makes_the_same_server_trusted(
    capsys, monkeypatch, tmp_path, tls_server, certificate
) -> None:
    code, err = capture(
        capsys, monkeypatch, tmp_path, tls_server.base_url, "--ca-bundle", str(certificate[0])
    )
    assert (code, err) == (0, "capturing: tasks of 1/1 DAGs fetched\n")
    assert ("GET", "/api/v2/dags/a/tasks") in tls_server.requests
    assert (tmp_path / "out" / "dags.json").is_file()


def test_the_endpoint_sink_gives_the_same_hints(tls_server) -> None:
    """The sink sends through the capture's transport: a plain-HTTP URL to a TLS endpoint."""
    url = tls_server.base_url.replace("https://", "http://") + "/snapshots"
    sink = EndpointSink(url, token=None, retry=RetryPolicy(budget=1))
    with pytest.raises(SinkError, match=r"; if the server expects TLS there, use https://$"):
        sink.probe()
