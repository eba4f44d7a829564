"""The page read from object storage, as on Kubernetes or managed Airflow: nothing on a shared disk.

A real Airflow 3.3 API server (SQLite, example_dags/estate) with the plugin, whose
``[coremodels] ui_snapshot_dir`` is an ``s3://`` URI on a real local S3 server (moto's server
mode), read with the connection ``[coremodels] ui_snapshot_conn_id`` names. That connection is
added with ``airflow connections add``, so it lives in the metadata database, where a store's
own lookup outside a task does not look. The export command writes the snapshot there through
the object-storage sink, and the page is looked at in headless Chromium.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from support.airflow_server import AirflowApiServer
from support.browser import Browser
from support.helpers import REPO, UI_PAGE
from support.s3_server import BUCKET, SECRETS, S3Store, running_s3

pytestmark = [pytest.mark.airflow_server, UI_PAGE]

ARTIFACTS = REPO / "test-artifacts"
PAGE = "/coremodels/"
PREFIX = "governance/airflow"
URI = f"s3://{BUCKET}/{PREFIX}"
CONN_ID = "governance_s3"


@dataclass
class Live:
    server: AirflowApiServer
    s3: S3Store
    token: str

    def page(self, path: str = PAGE) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return requests.get(f"{self.server.base_url}{path}", headers=headers, timeout=60)

    def airflow(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        """A command in the server's Airflow home: its database, not this process's environment."""
        environment = {k: v for k, v in self.server.env.items() if not k.startswith("AIRFLOW_CONN_")}
        return subprocess.run(
            args, capture_output=True, text=True, env={**environment, **env}, cwd=REPO, timeout=300
        )

    def export(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.airflow(
            sys.executable, "-m", "airflow_provider_coremodels", "export",
            "--base-url", self.server.base_url, "--username", self.server.username,
            "--password-env", "AF_PASSWORD", "--sink", URI, "--sink-conn-id", CONN_ID, *argv,
            AF_PASSWORD=self.server.password,
        )  # fmt: skip


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    extra_env = {
        "AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR": URI,
        "AIRFLOW__API__EXPOSE_CONFIG": "True",  # the admin is shown where the page reads (ui/app.py)
        "AIRFLOW__COREMODELS__UI_SNAPSHOT_CONN_ID": CONN_ID,
    }
    with (
        running_s3() as s3,
        AirflowApiServer(REPO / "example_dags" / "estate", extra_env=extra_env) as server,
    ):
        yield Live(server, s3, server.token())


def test_the_page_reads_the_latest_snapshot_from_s3(browser: Browser, live: Live) -> None:
    # Before its connection exists, the page names it and says what to do; nothing is cached.
    undefined = live.page()
    assert undefined.status_code == 500
    assert "<title>The snapshot store cannot be opened</title>" in undefined.text
    said = html.unescape(undefined.text)
    assert f"[coremodels] ui_snapshot_conn_id: connection '{CONN_ID}' is not defined" in said, said

    airflow = str(Path(sys.executable).with_name("airflow"))
    added = live.airflow(airflow, "connections", "add", CONN_ID, "--conn-json", live.s3.connection())
    assert added.returncode == 0, added.stderr
    empty = live.page()
    assert empty.status_code == 200, empty.text
    assert "<title>No snapshot yet</title>" in empty.text
    assert f"{URI} has no latest.json" in html.unescape(empty.text), html.unescape(empty.text)[-900:]

    exported = live.export("--format", "json")
    assert exported.returncode == 0, exported.stderr
    document = json.loads(exported.stdout)
    stored = live.s3.get(f"{PREFIX}/latest.json")

    browser.clear_cookies()
    browser.set_cookie("_token", live.token, url=live.server.base_url)
    assert browser.navigate(f"{live.server.base_url}{PAGE}") == 200
    text = browser.evaluate("document.body.innerText")
    assert f"fingerprint {document['fingerprint']}" in text
    assert f"{URI}/latest.json" in text  # where it was read from
    assert "Findings: 4 open" in text
    nodes = browser.evaluate('Array.from(document.querySelectorAll("svg.coremodels-lineage g.node")).length')
    assert nodes == 9  # 5 DAGs with lineage and 4 assets; legacy_cleanup has none
    assert browser.exceptions == []
    assert not [line for line in browser.console if "Content Security Policy" in line]
    browser.screenshot(ARTIFACTS / "coremodels-page-s3.png")

    raw = live.page("/coremodels/snapshot.json")
    assert raw.status_code == 200 and raw.content == stored
    for secret in SECRETS:
        assert secret not in text and secret not in raw.text and secret not in exported.stderr


def test_a_newer_snapshot_in_the_store_replaces_the_one_shown(live: Live, tmp_path: Path) -> None:
    """Same estate, a waiver added: the sink rewrites latest.json, and the page shows it at once."""
    if not live.s3.keys(PREFIX):
        pytest.skip("needs the export of the test above")
    waivers = tmp_path / "waivers.json"
    waivers.write_text(json.dumps([{"code": "dag-no-description", "subject": "*", "reason": "later"}]))
    exported = live.export("--waivers", str(waivers))
    assert exported.returncode == 0, exported.stderr
    assert "unchanged, findings changed" in exported.stdout
    page = live.page()
    assert page.status_code == 200
    assert "1 waived" in page.text
    assert live.page("/coremodels/snapshot.json").content == live.s3.get(f"{PREFIX}/latest.json")
