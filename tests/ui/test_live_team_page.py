"""The page's team filter and each team's trend, on a real Airflow 3.3 API server, in Chromium (issue 36).

One API server (SQLite, example_dags/estate) for the module. The real export command captures it
twice into the page's directory with a rules file naming three teams: the first time load_orders
(owner data-eng) is the team orders', the second time the file gives data-eng to crm instead. So
paused-producer s3://lake/orders.parquet is orders' in the first entry and crm's in the second;
finance keeps asset-unproduced s3://vendor/fx_rates.csv (daily_revenue, tag finance) in both, and
legacy_cleanup's two findings are no team's. The export's ``--team`` is checked on the same
captures: it prints one team's findings while the sink gets every finding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from support.airflow_server import AirflowApiServer
from support.browser import Browser
from support.helpers import REPO, UI_PAGE

pytestmark = [pytest.mark.airflow_server, UI_PAGE]

ARTIFACTS = REPO / "test-artifacts"
PAGE = "/coremodels/"
FIRST = "teams:\n  orders: {owners: [data-eng]}\n  finance: {tags: [finance]}\n  crm: {owners: [crm-team]}\n"
SECOND = FIRST.replace("orders: {owners: [data-eng]}", "orders: {owners: [nobody]}").replace(
    "crm: {owners: [crm-team]}", "crm: {owners: [crm-team, data-eng]}"
)
ROWS = """Array.from(document.querySelectorAll("#findings tbody tr.finding"))
  .map((row) => row.dataset.code + " " + row.querySelector(".subject").innerText)"""
BARS = """Array.from(document.querySelectorAll("svg.coremodels-trend g.entry"))
  .map((g) => Number(g.dataset.open))"""


@dataclass
class Live:
    server: AirflowApiServer
    token: str
    printed: list[dict[str, Any]]  # what each export printed (--team orders)
    stored: dict[str, Any]  # latest.json after both


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("coremodels-teams-ui")
    snapshot_dir = root / "coremodels"
    extra_env = {"AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR": str(snapshot_dir)}
    with AirflowApiServer(REPO / "example_dags" / "estate", extra_env=extra_env) as server:
        printed = []
        for name, text in (("first", FIRST), ("second", SECOND)):
            rules = root / f"{name}.yaml"
            rules.write_text(text)
            export = subprocess.run(
                [
                    sys.executable, "-m", "airflow_provider_coremodels", "export",
                    "--base-url", server.base_url, "--username", server.username,
                    "--password-env", "COREMODELS_UI_TEST_PASSWORD", "--sink", str(snapshot_dir),
                    "--rules", str(rules), "--format", "json", "--team", "orders", "--fail-on", "warning",
                ],
                env={**os.environ, "COREMODELS_UI_TEST_PASSWORD": server.password},
                capture_output=True,
                text=True,
                timeout=300,
            )  # fmt: skip
            # --fail-on counts orders' findings alone: its paused-producer the first time, none after
            assert export.returncode == (1 if name == "first" else 0), export.stderr
            printed.append(json.loads(export.stdout))
        stored = json.loads((snapshot_dir / "latest.json").read_text())
        yield Live(server, server.token(), printed, stored)


def open_page(browser: Browser, live: Live, query: str = "") -> int | None:
    browser.clear_cookies()
    browser.set_cookie("_token", live.token, url=live.server.base_url)
    return browser.navigate(f"{live.server.base_url}{PAGE}{query}")


def test_a_real_export_names_every_findings_team_and_team_prints_one_teams(live: Live) -> None:
    first, second = live.printed
    assert [(f["code"], f["team"]) for f in first["findings"]] == [("paused-producer", ["orders"])]
    assert second["findings"] == []
    teams = {(f["code"], f["subject"]): f["team"] for f in live.stored["findings"]}
    assert teams == {
        ("asset-unproduced", "s3://vendor/fx_rates.csv"): ["finance"],
        ("dag-no-description", "legacy_cleanup"): [],
        ("dag-no-owner", "legacy_cleanup"): [],
        ("paused-producer", "s3://lake/orders.parquet"): ["crm"],
    }  # the sink got every finding, whatever --team printed


def choose_team(browser: Browser, team: str) -> None:
    """Pick ``team`` in the select as a person would; the page is asked for again with it."""
    browser.evaluate(
        f'const t = document.getElementById("team-filter"); t.value = {json.dumps(team)};'
        ' t.dispatchEvent(new Event("change", {bubbles: true}))'
    )
    wanted = f"team={team}" if team else "team="
    browser.wait_for(f'location.search.includes({json.dumps(wanted)}) && document.readyState === "complete"')


def test_the_team_filter_shows_one_teams_findings_and_its_trend(browser: Browser, live: Live) -> None:
    assert open_page(browser, live) == 200
    options = browser.evaluate(
        'Array.from(document.querySelectorAll("#team-filter option")).map((o) => o.innerText.trim())'
    )
    assert options == ["every team", "orders (0)", "finance (1)", "crm (1)", "unowned (2)"]
    assert len(browser.evaluate(ROWS)) == 4
    assert browser.evaluate(BARS) == [4, 4]  # every team's: the same estate twice
    choose_team(browser, "crm")
    assert browser.evaluate(ROWS) == ["paused-producer s3://lake/orders.parquet"]
    assert browser.evaluate(BARS) == [0, 1]  # crm's trend: the finding came to it in the second export
    heading = browser.evaluate('document.querySelector("#history h2").innerText')
    assert heading == "Open findings over time of team crm"
    choose_team(browser, "orders")
    assert browser.evaluate(ROWS) == []
    assert browser.evaluate(BARS) == [1, 0]
    assert "No findings of team orders" in browser.evaluate("document.body.innerText")
    choose_team(browser, "unowned")
    assert sorted(browser.evaluate(ROWS)) == [
        "dag-no-description legacy_cleanup",
        "dag-no-owner legacy_cleanup",
    ]
    assert browser.evaluate(BARS) == [2, 2]
    browser.screenshot(ARTIFACTS / "coremodels-team-page.png")
    assert browser.exceptions == []
    assert not [line for line in browser.console if "Content Security Policy" in line]


def test_an_unknown_team_says_so_and_shows_every_finding(browser: Browser, live: Live) -> None:
    assert open_page(browser, live, "?team=ordres") == 200
    note = browser.evaluate('document.getElementById("team-note").innerText')
    assert note == (
        "No team ordres in this snapshot (its teams are orders, finance, crm, unowned): "
        "every team's findings are shown."
    )
    assert len(browser.evaluate(ROWS)) == 4
