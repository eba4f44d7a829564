"""Each request goes through the proxy its own URL calls for (issue 44 item 3).

``HTTP_PROXY`` names a real recording forward proxy on 127.0.0.1 (``tests/support/forward_proxy.py``),
which relays what it is sent; ``NO_PROXY`` exempts one host. One stand-in server answers as two
origins, ``127.0.0.1:<port>`` and ``localhost:<port>`` (``tests/support/managed_standins.py``), so
that ``NO_PROXY`` can exempt one and not the other: the exempted origin's requests must never reach
the proxy, and the other's must all go through it. Nothing is mocked but google-auth's metadata host,
read once at its import (as ``test_managed.py`` says).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.forward_proxy import RecordingForwardProxy
from support.managed_standins import GoogleStandIn, MwaaStandIn

from airflow_provider_coremodels.capture import ApiSource, RetryPolicy, open_client
from airflow_provider_coremodels.capture.composer import ComposerAccess
from airflow_provider_coremodels.capture.mwaa import MwaaAccess
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook

boto3 = pytest.importorskip("boto3")
pytest.importorskip("google.auth")

QUICK = RetryPolicy(max_attempts=2, backoff=0.01, max_backoff=0.02, budget=30)
DAGS = [{"dag_id": f"dag_{i}"} for i in range(3)]
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD")


def fake_airflow(method: str, path: str, query: dict[str, Any], body: Any) -> tuple[int, Any]:
    if path == "/version":
        return 200, {"version": "3.3.2", "git_version": None}
    if path == "/dags":
        return 200, {"dags": DAGS, "total_entries": len(DAGS)}
    return 404, {"detail": "Not Found"}


@pytest.fixture
def proxy(monkeypatch):
    """The recording proxy, named by HTTP_PROXY; no other proxy setting of this machine applies."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    with RecordingForwardProxy() as running:
        monkeypatch.setenv("HTTP_PROXY", running.base_url)
        yield running


def test_composer_metadata_server_exempted_by_no_proxy_is_reached_directly(proxy, monkeypatch) -> None:
    """The metadata server (application-default credentials, as on Composer's workers) is exempted
    by NO_PROXY: none of its requests, which carry the access token back, reaches the proxy; the web
    server is not exempted, and every request to it goes through the proxy. (The proxy was worked
    out once, for the web server, and the metadata requests went through it too.)"""
    from google.auth.compute_engine import _metadata

    with GoogleStandIn(fake_airflow) as google:
        metadata = f"localhost:{google.port}"
        monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", metadata)
        monkeypatch.setenv("GCE_METADATA_IP", metadata)
        monkeypatch.setenv("NO_PROXY", "localhost")
        monkeypatch.setenv("CLOUDSDK_CONFIG", "/nonexistent")  # no gcloud credentials of this machine
        monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
        monkeypatch.setenv(
            "AIRFLOW_CONN_COMPOSER_PROD",
            json.dumps({"conn_type": "airflow_api_composer", "host": google.base_url,
                        "extra": {"gcp_conn_id": ""}}),
        )  # fmt: skip
        ok, message = AirflowApiHook("composer_prod").test_connection()
    assert (ok, message) == (True, "Connected to Airflow 3.3.2 (API v2): 3 DAGs")
    asked = [entry["path"] for entry in google.log if entry["kind"] == "metadata"]
    assert "/computeMetadata/v1/instance/service-accounts/default/token" in asked  # answered, directly
    targets = proxy.targets()
    assert targets and all(t.startswith(f"{google.base_url}/api/v2/") for t in targets), targets
    assert len(targets) == len([entry for entry in google.log if entry["kind"] == "api"])


def test_composer_token_endpoint_not_exempted_goes_through_the_proxy(proxy, monkeypatch) -> None:
    """The other way round: NO_PROXY exempts the web server, not the token endpoint. The token
    request (it carries the refresh token and the client secret) takes the proxy its URL calls
    for, and no request to the web server reaches the proxy."""
    with GoogleStandIn(fake_airflow) as google:
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        info = {**google.authorized_user_info(), "token_uri": f"http://localhost:{google.port}/token"}
        source = ApiSource(google.base_url, managed=ComposerAccess(lambda request: _user_credentials(info)))
        with open_client(source, retry=QUICK) as client:
            client.connect()
            assert client.get_json("/dags", {"limit": 50, "offset": 0})["total_entries"] == 3
    assert proxy.targets() == [f"http://localhost:{google.port}/token"]
    assert [entry["token"] for entry in google.log if entry["kind"] == "api"] == ["ya29.standin-1"] * 2


def _user_credentials(info: dict[str, str]) -> Any:
    """google-auth's user credentials with no token yet: the first request refreshes them."""
    from google.oauth2.credentials import Credentials

    return Credentials(
        token=None,
        refresh_token=info["refresh_token"],
        client_id=info["client_id"],
        client_secret=info["client_secret"],
        token_uri=info["token_uri"],
    )


@pytest.mark.parametrize(
    ("no_proxy", "proxied"),
    [pytest.param("", True, id="proxied"), pytest.param("localhost", False, id="exempted")],
)
def test_mwaa_invoke_rest_api_takes_the_proxy_of_its_endpoint(proxy, monkeypatch, no_proxy, proxied) -> None:
    """InvokeRestApi's signed requests go through the proxy unless NO_PROXY exempts the MWAA
    endpoint; relayed, the signature still holds (the stand-in checks it)."""
    monkeypatch.setenv("NO_PROXY", no_proxy)
    key, secret = "AKIDSTANDIN0000002", "proxy/secret+key"
    with MwaaStandIn(fake_airflow, environment="Env", keys={key: secret}) as mwaa:
        session = boto3.session.Session(
            aws_access_key_id=key, aws_secret_access_key=secret, region_name="eu-west-1"
        )
        endpoint = f"http://localhost:{mwaa.port}"
        access = MwaaAccess("Env", session, endpoint_url=endpoint, inject_host_prefix=False)
        with open_client(ApiSource(access.base_url(), managed=access), retry=QUICK) as client:
            client.connect()
            assert client.get_json("/dags", {"limit": 50, "offset": 0})["total_entries"] == 3
    assert len(mwaa.log) == 2 and all(entry["problem"] is None for entry in mwaa.log)
    assert proxy.targets() == ([f"{endpoint}/restapi/Env"] * 2 if proxied else [])
