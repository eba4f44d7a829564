"""Where the API is and how to authenticate: URLs, connections, the hook, and the source options."""

from __future__ import annotations

import json

import pytest
from support.helpers import AIRFLOW_VERSION

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.capture.client import ApiSource
from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.errors import ConnectionConfigError
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook
from airflow_provider_coremodels.hooks.connection_fields import base_url
from airflow_provider_coremodels.io.transport import redact_url, strip_userinfo


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8080/", ("http://127.0.0.1:8080", None, None)),
        (
            "https://user:s3cret@airflow.example:8443/prefix/",
            ("https://airflow.example:8443/prefix", "user", "s3cret"),
        ),
        ("http://[::1]:8080", ("http://[::1]:8080", None, None)),
    ],
)
def test_strip_userinfo(url: str, expected: tuple) -> None:
    assert strip_userinfo(url) == expected


def test_user_info_in_a_base_url_becomes_credentials_and_never_the_url() -> None:
    source = ApiSource("http://admin:s3cret@127.0.0.1:8080")
    assert (source.base_url, source.username, source.password) == ("http://127.0.0.1:8080", "admin", "s3cret")
    assert "s3cret" not in repr(source)


def test_an_unparsable_url_is_reported_without_its_password() -> None:
    with pytest.raises(ValueError, match="not an http") as excinfo:
        ApiSource("admin:s3cret@nowhere")
    assert "s3cret" not in str(excinfo.value)
    assert redact_url("https://u:p@h/x") == "https://***@h/x"


@pytest.mark.parametrize(
    ("host", "schema", "port", "expected"),
    [
        ("airflow-api", None, 8080, "http://airflow-api:8080"),
        ("airflow-api", "https", None, "https://airflow-api"),
        ("https://airflow.example/base/", None, 443, "https://airflow.example:443/base"),
        ("http://127.0.0.1:9000", None, 8080, "http://127.0.0.1:9000"),
    ],
)
def test_base_url_from_connection_fields(
    host: str, schema: str | None, port: int | None, expected: str
) -> None:
    assert base_url(host, schema, port) == expected


def conn_env(monkeypatch, conn_id: str, **fields) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "airflow_api", **fields}))


def test_hook_reads_a_connection_from_the_environment(monkeypatch) -> None:
    conn_env(
        monkeypatch,
        "api",
        host="airflow-api",
        port=8080,
        login="exporter",
        password="pw",
        extra={"concurrency": 16, "timeout": 30, "ca_bundle": "/etc/ca.pem", "pacing_share": "0.75"},
    )
    source = AirflowApiHook("api").get_source()
    assert source.base_url == "http://airflow-api:8080"
    assert (source.username, source.password, source.token) == ("exporter", "pw", None)
    assert (source.concurrency, source.read_timeout, source.verify) == (16, 30.0, "/etc/ca.pem")
    assert (source.pacing, source.pacing_share) == ("adaptive", 0.75)
    assert source.deadline_alerts is True  # read unless the connection says not to


@pytest.mark.parametrize("value", [False, "false", "False"])
def test_a_connection_can_turn_the_deadline_alerts_off(monkeypatch, value) -> None:
    """The form stores a boolean; a connection URI or JSON written by hand, often the text."""
    conn_env(monkeypatch, "api", host="h", login="u", password="p", extra={"deadline_alerts": value})
    assert AirflowApiHook("api").get_source().deadline_alerts is False


def test_numeric_extras_a_form_left_empty_take_their_defaults(monkeypatch) -> None:
    """The connection form stores an empty number as null (or ""): the default, not an error."""
    empty = {"concurrency": None, "timeout": "", "connect_timeout": None, "pacing_share": None}
    conn_env(monkeypatch, "api", host="h", login="u", password="p", extra=empty)
    source = AirflowApiHook("api").get_source()
    assert (source.concurrency, source.read_timeout, source.connect_timeout, source.pacing_share) == (
        defaults.CONCURRENCY, defaults.READ_TIMEOUT, defaults.CONNECT_TIMEOUT, defaults.PACING_SHARE,
    )  # fmt: skip


def test_hook_password_without_login_is_a_bearer_token(monkeypatch) -> None:
    conn_env(monkeypatch, "api", host="https://airflow.example", password="tok")
    source = AirflowApiHook("api").get_source()
    assert (source.username, source.password, source.token, source.verify) == (None, None, "tok", True)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"verify": "maybe"}, "extra 'verify' must be true or false"),
        ({"concurrency": "lots"}, "is not usable"),
        ({"pacing_share": 2}, "is not usable: pacing_share must be over 0 and at most 1, got 2"),
        ({"token": 5}, "extra 'token' must be a string"),
        ({"deadline_alerts": "sometimes"}, "connection 'api': extra 'deadline_alerts' must be true or false"),
    ],
)
def test_hook_rejects_bad_extras_clearly(monkeypatch, extra: dict, message: str) -> None:
    conn_env(monkeypatch, "api", host="h", login="u", password="p", extra=extra)
    with pytest.raises(ConnectionConfigError, match=message):
        AirflowApiHook("api").get_source()


def test_hook_ui_and_identity() -> None:
    assert (AirflowApiHook.conn_type, AirflowApiHook.default_conn_name) == (
        "airflow_api",
        "airflow_api_default",
    )
    behaviour = AirflowApiHook.get_ui_field_behaviour()
    assert set(behaviour) == {"hidden_fields", "relabeling", "placeholders"}
    assert "password" in behaviour["relabeling"]


def test_hook_test_connection_reports_failure_without_secrets(monkeypatch) -> None:
    conn_env(monkeypatch, "api", host="http://127.0.0.1:1", login="u", password="canary-pw")
    ok, message = AirflowApiHook("api").test_connection()
    assert not ok
    assert "127.0.0.1:1" in message
    assert "canary-pw" not in message


def test_hook_test_connection_against_a_real_server(airflow_server, monkeypatch) -> None:
    conn_env(
        monkeypatch,
        "api",
        host=airflow_server.base_url,
        login=airflow_server.username,
        password=airflow_server.password,
    )
    connected = f"Connected to Airflow {AIRFLOW_VERSION} (API v2): 6 DAGs"
    assert AirflowApiHook("api").test_connection() == (True, connected)


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        pytest.param(
            ["--conn-id", "a", "--base-url", "http://h"], {}, "give either --conn-id or --base-url", id="both"
        ),
        pytest.param(
            [],
            {},
            "no --conn-id or --base-url given, and the default connection 'airflow_api_default' "
            "is not defined",
            id="neither",
        ),
        pytest.param(
            ["--base-url", "http://h", "--username", "u", "--password-env", "UNSET_VAR_X"],
            {},
            "environment variable UNSET_VAR_X is not set",
            id="unset-env",
        ),
        pytest.param(
            ["--conn-id", "a", "--username", "u"], {}, "go with --base-url, not --conn-id", id="mixed"
        ),
        pytest.param(["--base-url", "nope"], {}, "--base-url: not an http(s) URL", id="bad-url"),
    ],
)
def test_source_option_errors_exit_2(capsys, tmp_path, monkeypatch, argv, env, message) -> None:
    monkeypatch.delenv("UNSET_VAR_X", raising=False)
    code = main(["capture", *argv, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("delimiter", ["/", "#", "?"])
def test_a_password_holding_url_delimiters_is_never_quoted(delimiter: str) -> None:
    """A URL parser ends the authority at "/", "#" or "?": the URL is refused, and nothing of
    the password (its part before the delimiter included) is in the message."""
    url = f"https://admin:Zq9{delimiter}Wk7@airflow.example.com/api"
    assert redact_url(url) == "https://***@airflow.example.com/api"
    with pytest.raises(ValueError, match="not a valid URL") as excinfo:
        strip_userinfo(url)
    assert "Zq9" not in str(excinfo.value) and "Wk7" not in str(excinfo.value)


def test_an_at_sign_in_a_password_is_read_as_part_of_it() -> None:
    assert strip_userinfo("https://admin:Zq9@Wk7@airflow.example.com/api") == (
        "https://airflow.example.com/api",
        "admin",
        "Zq9@Wk7",
    )


def test_secrets_are_scrubbed_from_log_records_and_messages(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from airflow_provider_coremodels.redaction import SECRETS

    ApiSource("https://airflow.example.com", username="u", password="hunter2-pw")
    client_log = logging.getLogger("airflow_provider_coremodels.capture.client")
    client_log.warning("server said %s", "hunter2-pw rejected")
    assert caplog.records[-1].getMessage() == "server said *** rejected"
    assert SECRETS.scrub("echo: hunter2-pw") == "echo: ***"


def test_no_deadline_alerts_on_the_command_line_turns_them_off() -> None:
    from airflow_provider_coremodels.cli.commands import api_source
    from airflow_provider_coremodels.cli.main import build_parser

    for command in (["capture", "--out", "o"], ["export", "--sink", "s"]):
        on = build_parser().parse_args([*command, "--base-url", "http://127.0.0.1:1"])
        off = build_parser().parse_args(
            [*command, "--base-url", "http://127.0.0.1:1", "--no-deadline-alerts"]
        )
        assert (api_source(on).deadline_alerts, api_source(off).deadline_alerts) == (True, False)
