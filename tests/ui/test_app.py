"""The page's FastAPI glue, for the states a real server in test_live_page cannot easily reach.

Here Airflow's authentication is replaced (a dependency override and a stub auth manager): a
SimpleAuthManager lets every role read every DAG, so a refused role, a snapshot option left
unset and a failing renderer are only reachable this way. The real authentication is tested
against a real API server in test_live_page.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow.api_fastapi.core_api.security import get_user
from fastapi.testclient import TestClient
from support.helpers import UI_PAGE, recorded_estate

from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.sinks.directory import FileSink
from airflow_provider_coremodels.ui import app as app_module
from airflow_provider_coremodels.ui.app import app
from airflow_provider_coremodels.ui.page import CONTENT_SECURITY_POLICY
from airflow_provider_coremodels.ui.plugin import CoreModelsPlugin, LazyApp


class _AuthManager:
    def __init__(self, allowed: bool, configuration: bool = False) -> None:
        self.allowed = allowed
        self.configuration = configuration

    def is_authorized_dag(self, **_: Any) -> bool:
        return self.allowed

    def is_authorized_asset(self, **_: Any) -> bool:
        return self.allowed

    def is_authorized_configuration(self, *, method: str, **_: Any) -> bool:
        assert method == "GET"
        return self.configuration


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.delenv("AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR", raising=False)
    monkeypatch.setattr("airflow.api_fastapi.app.get_auth_manager", lambda: _AuthManager(allowed=True))
    app.dependency_overrides[get_user] = lambda: object()
    try:
        yield TestClient(app, raise_server_exceptions=False)
    finally:
        app.dependency_overrides.clear()


@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    estate = recorded_estate()
    document = build_document(estate, audit(estate))
    document["state"]["capturedAt"] = "2026-11-29T06:00:00Z"
    FileSink(tmp_path).push(document)
    monkeypatch.setenv("AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR", str(tmp_path))
    return tmp_path


def test_unset_the_page_says_how_to_configure_it(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "<title>The CoreModels page is not configured</title>" in page.text
    assert "AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR" in page.text
    document = client.get("/snapshot.json")
    assert document.status_code == 404
    assert document.json()["detail"].startswith("The CoreModels page is not configured:")


def test_a_configured_directory_is_shown(client: TestClient, exported: Path) -> None:
    page = client.get("/", params={"around": "load_orders", "depth": "1"})
    assert page.status_code == 200 and "Around &#39;load_orders&#39;, depth 1" in page.text
    assert client.get("/snapshot.json").content == (exported / "latest.json").read_bytes()
    # and its history, charted inline
    assert page.text.count('<svg xmlns="http://www.w3.org/2000/svg" class="coremodels-trend"') == 1
    assert "Open findings over 1 stored snapshot, 2026-11-29T06:00:00Z: 4 in the newest" in page.text


def test_a_history_that_cannot_be_read_costs_the_page_nothing_else(
    client: TestClient, exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unforeseen failure listing history/ is said in the chart's place; the rest of the page stands."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("listing failed")

    monkeypatch.setattr("airflow_provider_coremodels.ui.source.list_history", broken)
    page = client.get("/")
    assert page.status_code == 200
    assert "history/ cannot be listed: RuntimeError: listing failed" in page.text
    assert "coremodels-lineage" in page.text and "coremodels-trend" not in page.text


def test_a_role_that_cannot_read_every_dag_is_refused(
    client: TestClient, exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("airflow.api_fastapi.app.get_auth_manager", lambda: _AuthManager(allowed=False))
    page = client.get("/")
    assert page.status_code == 403 and "<title>Not allowed</title>" in page.text
    assert "load_orders" not in page.text
    assert client.get("/snapshot.json").status_code == 403


def test_failures_are_a_short_page_never_a_stack_trace(
    client: TestClient, exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(app_module, "render_snapshot_page", broken)
    page = client.get("/")
    assert page.status_code == 500 and "The snapshot could not be shown" in page.text
    assert "secret internals" not in page.text and "Traceback" not in page.text
    monkeypatch.setattr(app_module, "read_snapshot", broken)
    page = client.get("/")
    assert page.status_code == 500 and "The snapshot could not be read" in page.text
    assert "secret internals" not in page.text


@UI_PAGE
def test_the_plugin_mounts_the_app_lazily() -> None:
    """Loading the plugin (every Airflow process does) must not import the app and Airflow's API security."""
    [entry] = CoreModelsPlugin.fastapi_apps
    assert isinstance(entry["app"], LazyApp) and entry["url_prefix"] == "/coremodels"
    response = TestClient(entry["app"]).get("/icon.svg")  # the first request imports the real app
    assert response.status_code == 200 and response.headers["content-type"] == "image/svg+xml"


def test_the_page_allows_only_its_own_script(client: TestClient, exported: Path) -> None:
    """A CSP with the script's hash: markup slipping past the escaping still could not run a script."""
    page = client.get("/")
    policy = page.headers["content-security-policy"]
    assert policy == CONTENT_SECURITY_POLICY
    script_src = policy.split("script-src")[1].split(";")[0]
    assert "'unsafe-inline'" not in script_src
    [script] = re.findall(r"<script>(.*?)</script>", page.text, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["cache-control"] == "no-store"
    app.dependency_overrides.clear()  # back to Airflow's own authentication: no login, a 401 page
    refused = client.get("/")
    assert refused.status_code == 401
    assert refused.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_an_export_tasks_link_shows_the_snapshot_it_stored(client: TestClient, exported: Path) -> None:
    """The task's CoreModels link names its snapshot's fingerprint: after a later export, the page
    still shows that one (from history/), and says which is the latest."""
    first = json.loads((exported / "latest.json").read_bytes())
    estate = recorded_estate()
    later = build_document(estate, audit(estate))
    later["state"]["capturedAt"] = "2026-11-30T06:00:00Z"
    later["datasets"] = later["datasets"][:-1]
    later["fingerprint"] = "0123456789abcdef"
    FileSink(exported).push(later)

    linked = client.get("/snapshot.json", params={"fingerprint": first["fingerprint"]})
    assert linked.status_code == 200 and linked.json()["fingerprint"] == first["fingerprint"]
    page = client.get("/", params={"fingerprint": first["fingerprint"]})
    assert page.status_code == 200 and f"fingerprint {first['fingerprint']}" in page.text
    assert "the latest is 0123456789abcdef" in page.text
    assert client.get("/snapshot.json").json()["fingerprint"] == "0123456789abcdef"

    gone = client.get("/", params={"fingerprint": "fedcba9876543210"})
    assert gone.status_code == 200 and "No stored snapshot has the fingerprint fedcba9876543210" in gone.text
    bad = client.get("/", params={"fingerprint": "../../etc/passwd"})
    assert bad.status_code == 400 and "<title>Not a snapshot fingerprint</title>" in bad.text


# -- where the snapshot is kept: shown only to whom Airflow shows the configuration (issue 45) ----


def allow_configuration(monkeypatch: pytest.MonkeyPatch, exposed: str | None, may_read: bool) -> None:
    if exposed is None:
        monkeypatch.delenv("AIRFLOW__API__EXPOSE_CONFIG", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW__API__EXPOSE_CONFIG", exposed)
    manager = _AuthManager(allowed=True, configuration=may_read)
    monkeypatch.setattr("airflow.api_fastapi.app.get_auth_manager", lambda: manager)


@pytest.mark.parametrize(
    ("exposed", "may_read", "shown"),
    [
        (None, True, False),  # Airflow's default: the configuration is not exposed, to anyone
        ("False", True, False),
        ("True", False, False),  # exposed, but not to this role
        ("True", True, True),
        ("non-sensitive-only", True, True),  # the option is not a sensitive one
    ],
)
def test_the_sinks_path_is_shown_only_to_whom_airflow_shows_the_configuration(
    client: TestClient, exported: Path, monkeypatch: pytest.MonkeyPatch, exposed: str | None, may_read: bool,
    shown: bool,
) -> None:  # fmt: skip
    allow_configuration(monkeypatch, exposed, may_read)
    page = client.get("/")
    assert page.status_code == 200 and "CoreModels snapshot" in page.text
    assert (str(exported) in page.text) is shown
    assert ("from <code>" in page.text) is shown
    assert '<a href="snapshot.json">snapshot.json</a>' in page.text


def test_a_note_and_a_problem_name_the_option_not_the_path(
    client: TestClient, exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest history entry shown for a latest.json gone, then a folder with no snapshot at all:
    what is said is kept, where it is becomes ``[coremodels] ui_snapshot_dir``."""
    allow_configuration(monkeypatch, "True", False)
    (exported / "latest.json").unlink()
    page = client.get("/")
    assert page.status_code == 200 and str(exported) not in page.text
    assert "[coremodels] ui_snapshot_dir/latest.json does not exist: showing the newest entry" in page.text
    for entry in (exported / "history").iterdir():
        entry.unlink()
    page = client.get("/")
    assert str(exported) not in page.text
    assert "[coremodels] ui_snapshot_dir has no latest.json and no history/ entry" in page.text
    detail = client.get("/snapshot.json").json()["detail"]
    assert str(exported) not in detail and "[coremodels] ui_snapshot_dir has no latest.json" in detail
    allow_configuration(monkeypatch, "True", True)
    assert f"{exported} has no latest.json" in client.get("/").text
