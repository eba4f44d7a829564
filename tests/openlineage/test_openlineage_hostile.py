"""An OpenLineage receiver that lies: every request the client makes for the sink goes through the
provider's one transport (issue 23, items 1-4).

Real parts: ``export`` runs as a user runs it (a process of its own, ``--retry-budget 3``, forked
from one that imported the OpenLineage sink: ``support.cli_forks``), capturing a
real local (replayed Airflow 2) REST API, and the official client's own transports, configured
the client's way (its environment variables), post to a real local receiver
(``tests/support/hostile_api.py``'s ``HostileReceiver``) that lies in one way per mode. Each run
must end with exit 3 and one ``error:`` line (the last on stderr), within the budget plus one
read timeout plus start-up, under a memory ceiling, with no secret (the API key, a custom
credential header, a key in the endpoint's query) in anything it printed, and nothing sent to
another origin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.helpers import FIXTURES
from support.hostile_api import TOKEN, HostileReceiver, gzip_bomb
from support.local_http import ScriptedServer
from support.measured import START_UP_ALLOWANCE, Measured, run_measured
from support.openlineage_kit import API_KEY
from support.replay_server import AirflowV1ReplayServer

pytestmark = pytest.mark.slow  # lying receivers on local servers, each run waited out to its deadline

BUDGET = 3.0  # under the client's timeout: the budget, not the timeout, ends a trickle
#: The client's own read timeout (its ``timeout``, default 5 s), which the transport keeps.
CLIENT_TIMEOUT = 5.0
RSS_CEILING_MB = 300
HARD_LIMIT = 60
HEADER_TOKEN = "custom-Header-tok-4f1e"  # a credential in the client's custom_headers
QUERY_KEY = "query-Code-key-9a8b7c"  # a key in the endpoint's query (Azure Functions' ?code=)
CLIENT_SECRET = "oauth-Client-secret-3d2c"
SECRETS = (API_KEY, HEADER_TOKEN, QUERY_KEY, CLIENT_SECRET, TOKEN)


def export(tmp_path: Path, env: dict[str, str]) -> Measured:
    """``export --sink openlineage:// --retry-budget 3`` of the replayed Airflow 2 estate (5 DAGs)."""
    with AirflowV1ReplayServer(FIXTURES / "airflow2") as airflow:
        argv = [
            "export", "--base-url", airflow.base_url, "--username", airflow.username,
            "--password-env", "AF_PASSWORD", "--sink", "openlineage://", "--retry-budget", str(BUDGET),
        ]  # fmt: skip
        # the hard limit: a run that hangs fails here, not at CI's timeout
        return run_measured(
            *argv, env={**env, "AF_PASSWORD": airflow.password}, timeout=HARD_LIMIT, forked=True
        )


def assert_failed_cleanly(run: Measured) -> str:
    """Exit 3, one error line (the last), in time and memory, no secret: the error line."""
    print(f"exit {run.code} in {run.seconds:.1f} s, peak RSS {run.peak_rss_mb:.0f} MB")
    assert run.code == 3, run.err
    assert "Traceback" not in run.err and "unexpected" not in run.err, run.err
    lines = run.err.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == lines[-1:], run.err  # retries may be warnings before it
    assert run.seconds < BUDGET + CLIENT_TIMEOUT + START_UP_ALLOWANCE, f"{run.seconds:.1f} s"
    assert run.peak_rss_mb < RSS_CEILING_MB, f"peak RSS {run.peak_rss_mb:.0f} MB"
    for secret in SECRETS:
        assert secret not in run.out + run.err, secret
    return errors[0]


def transport_env(kind: str, url: str) -> dict[str, str]:
    """The client's own environment configuration of a transport posting to ``url``: the API key,
    a custom credential header and a key in the endpoint's query ride on every event."""
    endpoint = f"api/v1/lineage?code={QUERY_KEY}"
    http = {
        "url": url,
        "endpoint": endpoint,
        "auth": {"type": "api_key", "apiKey": API_KEY},
        "custom_headers": {"X-Api-Token": HEADER_TOKEN},
        "retry": {"total": 1, "backoff_factor": 0},
    }
    if kind in ("http", "async_http"):
        return {
            "OPENLINEAGE__TRANSPORT__TYPE": kind,
            **{f"OPENLINEAGE__TRANSPORT__{key.upper()}": _env(value) for key, value in http.items()},
        }
    if kind == "composite":  # its one child fails: it says only "None of the transports ..."
        return {
            "OPENLINEAGE__TRANSPORT__TYPE": "composite",
            "OPENLINEAGE__TRANSPORT__TRANSPORTS": _env({"catalog": {"type": "http", **http}}),
        }
    if kind == "url":  # the client's simplest configuration: an http transport, no custom headers
        return {"OPENLINEAGE_URL": url, "OPENLINEAGE_API_KEY": API_KEY, "OPENLINEAGE_ENDPOINT": endpoint}
    if kind == "transform":
        return {
            "OPENLINEAGE__TRANSPORT__TYPE": "transform",
            "OPENLINEAGE__TRANSPORT__TRANSFORMER_CLASS": "openlineage.client.transport.transform."
            "transformers.job_namespace_replace_transformer.JobNamespaceReplaceTransformer",
            "OPENLINEAGE__TRANSPORT__TRANSFORMER_PROPERTIES": _env({"new_job_namespace": "elsewhere"}),
            "OPENLINEAGE__TRANSPORT__TRANSPORT": _env({"type": "http", **http}),
        }
    if kind == "datadog":  # its intake may be any URL; its api key rides as the bearer
        return {
            "OPENLINEAGE__TRANSPORT__TYPE": "datadog",
            "OPENLINEAGE__TRANSPORT__APIKEY": API_KEY,
            "OPENLINEAGE__TRANSPORT__SITE": url,
            "OPENLINEAGE__TRANSPORT__RETRY": _env(http["retry"]),
        }
    raise AssertionError(kind)


def _env(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


SAYS = {
    # 1: memory the server decides
    "gzip-bomb": "answered a body over the 67,108,864-byte limit (after decompression)",
    # 2: no real deadline
    "trickle": "the response body ",  # was cut when the budget ran out
    # 2, again: headers a byte every 1.5 s, each read inside the client's timeout: the budget ends it
    "header-trickle": f"(the retry budget of {BUDGET:g} s is spent)",
    # 3: the event and its credentials re-POSTed elsewhere
    "redirect": "answered HTTP 307, a redirect to http://127.0.0.1:",
    # 4: a key in the query, printed in the error line (and echoed back by the server)
    "echo-query": "refused the event: HTTP 400: no such receiver /api/v1/lineage?code=***",
}
CASES = [
    (kind, mode) for kind in ("http", "async_http", "composite") for mode in SAYS if mode != "header-trickle"
]
CASES += [("http", "header-trickle"), ("composite", "header-trickle")]
CASES += [("url", "redirect"), ("transform", "redirect"), ("datadog", "redirect"), ("datadog", "gzip-bomb")]
#: What each kind is called in the error line (OPENLINEAGE_URL makes a plain http transport).
KIND_SAID = {"url": "http"}


@pytest.mark.parametrize(("kind", "mode"), CASES, ids=[f"{k}-{m}" for k, m in CASES])
def test_a_lying_receiver_ends_the_push_with_exit_3_and_one_line(
    tmp_path: Path, kind: str, mode: str
) -> None:
    """Before: the bomb inflated whole (2.2 GB, exit 0), the trickle held export past 90 s, the
    307 re-POSTed the event and X-Api-Token to the other origin, the query key was printed."""
    gzip_bomb()  # made before the receiver answers, so making it is not what the client waits for
    with ScriptedServer() as elsewhere, HostileReceiver(mode, redirect_to=elsewhere.base_url) as receiver:
        url = receiver.base_url
        run = export(tmp_path, transport_env(kind, url))
        got = receiver.received
        leaked = elsewhere.received
    line = assert_failed_cleanly(run)
    said = KIND_SAID.get(kind, kind)
    assert line.startswith(
        f"error: sink openlineage://: the OpenLineage {said} transport failed after 0 of 5 "
    )
    assert SAYS[mode] in line
    assert f"POST {url}/api/v1/lineage " in line  # named without its query
    assert leaked == []  # nothing, let alone the event or a credential, went to another origin
    assert got, "the receiver was asked"
    sent = got[0]
    assert sent.headers["Authorization"] == f"Bearer {API_KEY}"
    if kind != "datadog":  # datadog posts to its intake's own path, with no headers of ours
        assert sent.path == f"/api/v1/lineage?code={QUERY_KEY}"  # the query still goes where it belongs
    if kind not in ("datadog", "url"):
        assert sent.headers["X-Api-Token"] == HEADER_TOKEN
    if mode in ("redirect", "echo-query", "gzip-bomb"):
        assert len(got) == 1  # refused at once: another try would get the same


def test_a_receiver_that_answers_is_sent_every_event_through_each_transport(tmp_path: Path) -> None:
    """The control: the guarded transports still deliver what the client makes (its serialization,
    its auth, custom headers and query), for every transport kind above."""
    for kind in ("http", "async_http", "composite", "url", "transform", "datadog"):
        with HostileReceiver("answers") as receiver:
            run = export(tmp_path, transport_env(kind, receiver.base_url))
            got = [r for r in receiver.received if r.path.startswith("/api/v1/lineage")]
        assert run.code == 0, (kind, run.err)
        assert run.out.strip().splitlines()[-1].endswith("; openlineage:// (sent 5 events)"), (kind, run.out)
        assert len(got) == 5, kind
        assert {r.headers["Authorization"] for r in got} == {f"Bearer {API_KEY}"}
        if kind != "datadog":
            assert {r.path for r in got} == {f"/api/v1/lineage?code={QUERY_KEY}"}
        if kind not in ("datadog", "url"):
            assert {r.headers["X-Api-Token"] for r in got} == {HEADER_TOKEN}
        for secret in SECRETS:
            assert secret not in run.out + run.err, (kind, secret)


def _oauth2_env(url: str) -> dict[str, str]:
    return {
        "OPENLINEAGE__TRANSPORT__TYPE": "http",
        "OPENLINEAGE__TRANSPORT__URL": url,
        "OPENLINEAGE__TRANSPORT__AUTH": json.dumps(
            {
                "type": "oauth2",
                "clientId": "coremodels",
                "clientSecret": CLIENT_SECRET,
                "tokenEndpoint": f"{url}/oauth/token",
            }
        ),
        "OPENLINEAGE__TRANSPORT__RETRY": json.dumps({"total": 0}),
    }


def test_a_token_endpoint_is_asked_through_the_transport_too(tmp_path: Path) -> None:
    """The client's oauth2 token provider, as it is: its form, its basic credentials, its cache
    (one token request for five events), with the token it hands out on every event."""
    with HostileReceiver("token") as receiver:
        run = export(tmp_path, _oauth2_env(receiver.base_url))
        got = receiver.received
    assert run.code == 0, run.err
    asked = [r for r in got if r.path == "/oauth/token"]
    events = [r for r in got if r.path == "/api/v1/lineage"]
    assert len(asked) == 1 and len(events) == 5
    assert asked[0].body == b"grant_type=client_credentials"
    assert asked[0].headers["Authorization"].startswith("Basic ")
    assert {r.headers["Authorization"] for r in events} == {f"Bearer {TOKEN}"}
    for secret in SECRETS:
        assert secret not in run.out + run.err


def test_a_token_endpoint_that_redirects_gets_no_credentials_elsewhere(tmp_path: Path) -> None:
    """Before: the client's own token request (requests.post) followed the 307 with the form and
    the client secret to the other origin."""
    with (
        ScriptedServer() as elsewhere,
        HostileReceiver("token-redirect", redirect_to=elsewhere.base_url) as receiver,
    ):
        url = receiver.base_url
        run = export(tmp_path, _oauth2_env(url))
        leaked = elsewhere.received
    line = assert_failed_cleanly(run)
    assert leaked == []
    assert f"the OAuth2 access token endpoint {url}/oauth/token answered HTTP 307" in line
    assert "redirects are never followed" in line


def test_every_http_transport_of_a_configuration_is_guarded(tmp_path: Path) -> None:
    """Which transports are guarded, wherever they sit; the others are left as the client made them."""
    from openlineage.client.transport import get_default_factory
    from openlineage.client.transport.file import FileTransport

    from airflow_provider_coremodels.sinks.openlineage_http import GuardedHttp, PushBudget, guard, guarded

    http = {"type": "http", "url": "http://127.0.0.1:9"}
    config = {
        "type": "composite",
        "transports": {
            "plain": http,
            "queued": {**http, "type": "async_http"},
            "renamed": {
                "type": "transform",
                "transformer_class": "openlineage.client.transport.transform.transformers."
                "job_namespace_replace_transformer.JobNamespaceReplaceTransformer",
                "transformer_properties": {"new_job_namespace": "x"},
                "transport": http,
            },
            "dd": {"type": "datadog", "apiKey": "dd-key-1234", "site": "http://127.0.0.1:9"},
            "file": {"type": "file", "log_file_path": str(tmp_path / "events.ndjson")},
        },
    }
    budget = PushBudget(5)
    composite = guard(get_default_factory().create(config), budget)
    found = guarded(composite)
    assert [g.kind for g in found] == ["http", "async_http", "http", "http", "async_http"]
    assert all(isinstance(g, GuardedHttp) for g in found)
    assert any(isinstance(t, FileTransport) for t in composite.transports)  # type: ignore[attr-defined]
    queued = found[1].inner
    assert not queued.worker_thread.is_alive()  # the async transport's own worker was stopped
