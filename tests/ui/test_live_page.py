"""The CoreModels page served by a real Airflow 3.3 API server, looked at in a headless Chromium.

One API server (SQLite, example_dags/estate) for the module, with the provider installed as
users install it. Before anything is exported the page says so; then the real export command
captures that same server with a waiver file and writes the snapshot through the file sink,
and the page is checked as a person sees it: the text, which findings rows are visible as
the filters change, the lineage picture, the Airflow UI's Browse menu and the iframe it
shows the page in. Screenshots land in test-artifacts/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from support.airflow_server import AirflowApiServer
from support.browser import Browser
from support.helpers import REPO, UI_PAGE

from airflow_provider_coremodels.core.views.render import table_order

pytestmark = [pytest.mark.airflow_server, UI_PAGE]

ARTIFACTS = REPO / "test-artifacts"
PAGE = "/coremodels/"
WAIVER = {
    "code": "dag-no-description", "subject": "legacy_*", "reason": "retired in Q1", "expires": "2099-12-31",
}  # fmt: skip
#: What an earlier export waived besides (a history of changing findings for the chart).
EARLIER = [
    {"code": "dag-no-owner", "subject": "legacy_*", "reason": "ops owned it then"},
    {"code": "paused-producer", "subject": "*", "reason": "migrating then"},
]

VISIBLE_ROWS = """Array.from(document.querySelectorAll("#findings tbody tr.finding"))
  .filter((row) => row.getClientRects().length > 0)
  .map((row) => row.dataset.code + " " + row.querySelector(".subject").innerText)"""
COUNT_TEXT = 'document.getElementById("findings-count").innerText'


@dataclass
class Live:
    server: AirflowApiServer
    snapshot_dir: Path
    token: str
    before_export: requests.Response
    document: dict[str, Any]
    exports: list[dict[str, Any]]  # every export's document, the last one ``document``

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return requests.get(f"{self.server.base_url}{path}", timeout=30, **kwargs)

    def authed(self, path: str, **params: Any) -> requests.Response:
        return self.get(path, params=params, headers={"Authorization": f"Bearer {self.token}"})


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("coremodels-ui")
    snapshot_dir = root / "coremodels"  # what the export DAG's file sink would write; not there yet
    # Airflow's defaults otherwise: the plugin loads through the package's entry point.
    # the configuration exposed: the admin may read where the snapshot is (ui/app.py), and is shown it
    extra_env = {
        "AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR": str(snapshot_dir),
        "AIRFLOW__API__EXPOSE_CONFIG": "True",
    }
    with AirflowApiServer(REPO / "example_dags" / "estate", extra_env=extra_env) as server:
        token = server.token()
        before = requests.get(
            f"{server.base_url}{PAGE}", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        # Three exports of the same estate, each with other waivers: three entries in history/, their
        # open findings 4, 1 and 3 (the last, with WAIVER, is what the page shows).
        exports = []
        for name, waived in (("none", []), ("most", [*EARLIER, WAIVER]), ("one", [WAIVER])):
            waivers = root / f"waivers-{name}.json"
            waivers.write_text(json.dumps(waived))
            export = subprocess.run(
                [
                    sys.executable, "-m", "airflow_provider_coremodels", "export",
                    "--base-url", server.base_url, "--username", server.username,
                    "--password-env", "COREMODELS_UI_TEST_PASSWORD",
                    "--sink", str(snapshot_dir), "--waivers", str(waivers), "--format", "json",
                ],
                env={**os.environ, "COREMODELS_UI_TEST_PASSWORD": server.password},
                capture_output=True,
                text=True,
                timeout=300,
            )  # fmt: skip
            assert export.returncode == 0, export.stderr
            exports.append(json.loads(export.stdout))
        yield Live(server, snapshot_dir, token, before, exports[-1], exports)


def open_page(browser: Browser, live: Live, path: str = PAGE) -> int | None:
    browser.clear_cookies()
    browser.set_cookie("_token", live.token, url=live.server.base_url)  # what the UI's login leaves
    return browser.navigate(f"{live.server.base_url}{path}")


def test_the_api_server_loads_the_plugin_the_provider_registers(live: Live) -> None:
    [plugin] = [p for p in live.authed("/api/v2/plugins").json()["plugins"] if p["name"] == "coremodels"]
    [app] = plugin["fastapi_apps"]
    assert (app["app"], app["url_prefix"]) == ("airflow_provider_coremodels.ui.plugin.LazyApp", "/coremodels")
    [view] = plugin["external_views"]
    assert (view["href"], view["url_route"], view["destination"], view["category"]) == (
        "/coremodels/", "coremodels", "nav", "browse",
    )  # fmt: skip
    errors = live.authed("/api/v2/plugins/importErrors").json()
    assert errors["total_entries"] == 0, errors
    for icon in (view["icon"], view["icon_dark_mode"]):
        assert live.get(icon).headers["content-type"] == "image/svg+xml"


def test_before_the_first_export_the_page_says_there_is_no_snapshot_yet(live: Live) -> None:
    assert live.before_export.status_code == 200
    assert "<title>No snapshot yet</title>" in live.before_export.text
    assert f"{live.snapshot_dir} does not exist yet" in live.before_export.text


def test_the_page_needs_an_airflow_login(live: Live) -> None:
    page = live.get(PAGE)
    assert page.status_code == 401 and page.headers["content-type"].startswith("text/html")
    assert "Sign in to Airflow first" in page.text and "Traceback" not in page.text
    assert live.get("/coremodels/snapshot.json").status_code == 401
    assert live.get(PAGE, headers={"Authorization": "Bearer not-a-jwt"}).status_code == 403
    assert live.get(PAGE, cookies={"_token": "not-a-jwt"}).status_code == 403


def test_snapshot_json_is_the_stored_document(live: Live) -> None:
    response = live.authed("/coremodels/snapshot.json")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert response.content == (live.snapshot_dir / "latest.json").read_bytes()
    assert response.json()["fingerprint"] == live.document["fingerprint"]


def test_a_person_sees_the_snapshot_and_filters_its_findings(browser: Browser, live: Live) -> None:
    document = live.document
    findings = document["findings"]
    assert [f["code"] for f in findings if f.get("waived")] == ["dag-no-description"]  # the waiver held
    assert open_page(browser, live) == 200
    text = browser.evaluate("document.body.innerText")
    assert f"fingerprint {document['fingerprint']}" in text
    assert "Airflow 3.3" in text and f"captured {document['state']['capturedAt']}" in text
    facts = browser.evaluate('Array.from(document.querySelectorAll(".facts li")).map((li) => li.innerText)')
    assert [" ".join(f.split()) for f in facts] == [
        "6 DAGs", "2 Paused DAGs", "4 Assets", "11 Tasks", "7 Lineage edges", "0 External edges",
    ]  # fmt: skip
    assert "Findings: 3 open (3 Warning) · 1 waived." in text
    assert "waived: retired in Q1 (until 2099-12-31)" in text

    def shown() -> list[str]:
        rows: list[str] = browser.evaluate(VISIBLE_ROWS)
        assert browser.evaluate(COUNT_TEXT) == f"Showing {len(rows)} of {len(findings)} findings"
        return rows

    # the command line's order: the most severe first (the document's is by section and code)
    everything = [f"{f['code']} {f['subject']}" for f in sorted(findings, key=table_order)]
    assert everything[-1] == "dag-no-description legacy_cleanup"  # the one Info, after the Warnings
    assert shown() == everything
    browser.click("#sev-Warning")  # untick Warning: only the waived Info finding is left
    assert shown() == ["dag-no-description legacy_cleanup"]
    browser.click("#show-waived")
    assert shown() == []
    browser.click("#sev-Warning")
    assert shown() == [row for row in everything if not row.startswith("dag-no-description")]
    browser.evaluate(
        'const code = document.getElementById("code-filter"); code.value = "dag-no-owner";'
        ' code.dispatchEvent(new Event("change", {bubbles: true}))'
    )
    assert shown() == ["dag-no-owner legacy_cleanup"]
    browser.evaluate(
        'const reset = document.getElementById("code-filter"); reset.value = "";'
        ' reset.dispatchEvent(new Event("change", {bubbles: true}))'
    )
    browser.click("#show-waived")
    assert shown() == everything

    nodes = browser.evaluate(
        'Array.from(document.querySelectorAll("svg.coremodels-lineage g.node"))'
        '.map((g) => [g.dataset.id, g.getAttribute("class")])'
    )
    classes = dict(nodes)
    assert len(classes) == 9  # 5 DAGs with lineage and 4 assets; legacy_cleanup has none
    assert "paused" in classes["load_orders"] and "paused" in classes["backfill_customers"]
    assert "has-findings" in classes["s3://lake/orders.parquet"]
    assert "has-findings" not in classes["daily_revenue"]
    assert browser.exceptions == []
    assert not [line for line in browser.console if "Content Security Policy" in line]
    browser.screenshot(ARTIFACTS / "coremodels-page.png")


def test_the_chart_draws_the_open_findings_of_every_stored_snapshot(browser: Browser, live: Live) -> None:
    """Three exports stored three entries (the same estate, other waivers): a bar each, as tall as
    its open findings, the one shown marked; drawn inline, so the strict CSP has nothing to refuse."""
    opened = [sum(1 for f in doc["findings"] if not f.get("waived")) for doc in live.exports]
    assert opened == [4, 1, 3]  # the waivers did what they say, or this test shows nothing
    assert len(list((live.snapshot_dir / "history").iterdir())) == 3
    assert open_page(browser, live) == 200
    entries = 'Array.from(document.querySelectorAll("svg.coremodels-trend g.entry"))'
    bars = browser.evaluate(
        f'{entries}.map((g) => [Number(g.dataset.open), g.classList.contains("is-latest")])'
    )
    assert bars == [[4, False], [1, False], [3, True]]
    heights = browser.evaluate(
        f"{entries}.map((g) => Array.from(g.querySelectorAll('rect.sev'))"
        ".reduce((h, r) => h + r.getBoundingClientRect().height, 0))"
    )
    assert heights[0] > heights[2] > heights[1] > 0  # drawn in proportion
    assert heights[0] / heights[1] == pytest.approx(4, rel=0.05)
    summary = browser.evaluate('document.getElementById("history-summary").innerText')
    assert summary.startswith("Open findings over 3 stored snapshots, from ")
    assert ": 3 in the newest, at most 4." in summary
    browser.click("#history-entries summary")
    rows = browser.evaluate(
        'Array.from(document.querySelectorAll("#history-entries tr.history-entry")).map((r) => r.innerText)'
    )
    assert [row.split("\t")[1] for row in rows] == [live.document["fingerprint"]] * 3
    assert rows[0].split("\t")[-1] == "latest.json, findings only"
    assert browser.exceptions == []
    assert not [line for line in browser.console if "Content Security Policy" in line]
    browser.screenshot(ARTIFACTS / "coremodels-trend.png", selector="#history")


def test_clicking_a_node_draws_its_neighbourhood(browser: Browser, live: Live) -> None:
    open_page(browser, live)
    browser.click('svg.coremodels-lineage g.node[data-id="load_orders"]', navigates=True)
    assert browser.evaluate("location.search") == "?around=load_orders&depth=2"
    drawn = browser.evaluate('Array.from(document.querySelectorAll("g.node")).map((g) => g.dataset.id)')
    assert sorted(drawn) == ["daily_revenue", "load_orders", "s3://lake/orders.parquet"]
    assert browser.evaluate('document.getElementById("around").value') == "load_orders"
    assert browser.evaluate('document.getElementById("lineage-summary").innerText').startswith(
        "Around 'load_orders', depth 2:"
    )
    browser.screenshot(ARTIFACTS / "coremodels-neighbourhood.png")

    # The picker: type an id, choose a depth, submit.
    browser.evaluate(
        'document.getElementById("around").value = "s3://lake/customers.parquet";'
        ' document.getElementById("depth").value = "1"'
    )
    browser.click(".lineage-form button[type=submit]", navigates=True)
    assert browser.evaluate("location.search + location.hash") == (
        "?around=s3%3A%2F%2Flake%2Fcustomers.parquet&depth=1#lineage"
    )
    drawn = browser.evaluate('Array.from(document.querySelectorAll("g.node")).map((g) => g.dataset.id)')
    assert sorted(drawn) == [
        "backfill_customers", "customer_report", "s3://lake/customers.parquet", "sync_crm",
    ]  # fmt: skip

    assert open_page(browser, live, f"{PAGE}?around=no_such_dag") == 200
    error = browser.evaluate('document.getElementById("lineage-error").innerText')
    assert error.startswith("There is no DAG or asset 'no_such_dag' in the lineage of this snapshot.")
    assert browser.evaluate('document.querySelectorAll("svg.coremodels-lineage").length') == 0


PICTURE_STATE = """(() => { const svg = document.querySelector(".picture svg");
  const frame = document.querySelector(".picture").getBoundingClientRect();
  const boxes = Array.from(svg.querySelectorAll("g.node rect")).map((r) => r.getBoundingClientRect());
  const inside = boxes.filter((b) => b.left >= frame.left - 1 && b.right <= frame.right + 1
    && b.top >= frame.top - 1 && b.bottom <= frame.bottom + 1).length;
  return {viewBox: svg.getAttribute("viewBox").split(" ").map(Number),
          scale: Number(document.querySelector(".picture").dataset.scale),
          level: document.getElementById("zoom-level").innerText,
          boxes: boxes.length, inside: inside}; })()"""


def drag(browser: Browser, selector: str, dx: float, dy: float) -> None:
    """Press the mouse in the middle of ``selector``, move it by (dx, dy) in steps, release it."""
    x, y = browser.evaluate(
        f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
        " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
    )
    events = [("mousePressed", x, y)] + [("mouseMoved", x + dx * i / 5, y + dy * i / 5) for i in range(1, 6)]
    for kind, px, py in [*events, ("mouseReleased", x + dx, y + dy)]:
        params = {"type": kind, "x": px, "y": py, "button": "left", "buttons": 1, "clickCount": 1}
        browser.command("Input.dispatchMouseEvent", params)


def test_the_picture_fits_its_frame_and_pans_and_zooms(browser: Browser, live: Live) -> None:
    """The whole picture shows at first (no box clipped by the frame); the buttons, the wheel
    and a drag move it; a click after a drag does not leave the page; no CSP complaint."""
    browser.command("Emulation.setScriptExecutionDisabled", {"value": True})
    try:  # without the script: the picture at its own size, scrolling in its frame, no buttons
        open_page(browser, live)
        assert browser.evaluate('getComputedStyle(document.querySelector(".picture")).overflow') == "auto"
        assert browser.evaluate('document.querySelector(".picture-tools").getClientRects().length') == 0
    finally:
        browser.command("Emulation.setScriptExecutionDisabled", {"value": False})
    open_page(browser, live)
    assert browser.evaluate('getComputedStyle(document.querySelector(".picture")).overflow') == "hidden"
    before = browser.evaluate(PICTURE_STATE)
    assert before["boxes"] == 9 and before["inside"] == 9  # fitted: every box in the frame
    assert before["scale"] <= 1 and before["level"] == f"{round(before['scale'] * 100)}%"

    browser.click('[data-zoom="in"]')
    zoomed = browser.evaluate(PICTURE_STATE)
    assert zoomed["scale"] == pytest.approx(before["scale"] * 1.25, rel=1e-3)
    assert zoomed["viewBox"][2] == pytest.approx(before["viewBox"][2] / 1.25, rel=1e-2)

    drag(browser, ".picture", -120, -40)
    panned = browser.evaluate(PICTURE_STATE)
    assert panned["viewBox"][0] == pytest.approx(zoomed["viewBox"][0] + 120 / zoomed["scale"], abs=1)
    assert panned["viewBox"][1] == pytest.approx(zoomed["viewBox"][1] + 40 / zoomed["scale"], abs=1)
    assert browser.evaluate("location.search") == ""  # a drag is no click: still the whole estate

    browser.evaluate('document.querySelector(".picture").scrollIntoView()')
    x, y = browser.evaluate(
        '(() => { const r = document.querySelector(".picture").getBoundingClientRect();'
        " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
    )
    browser.command(
        "Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": -200}
    )
    wheeled = browser.wait_for(f"{PICTURE_STATE}.scale > {panned['scale'] + 0.01} && {PICTURE_STATE}")
    assert wheeled["scale"] == pytest.approx(panned["scale"] * 1.349, rel=1e-2)  # exp(200 * 0.0015)

    browser.click('[data-zoom="fit"]')
    assert browser.evaluate(PICTURE_STATE)["inside"] == 9
    browser.click('[data-zoom="actual"]')
    assert browser.evaluate(PICTURE_STATE)["scale"] == 1
    browser.evaluate('document.querySelector(".picture").focus()')
    browser.command("Input.dispatchKeyEvent", {"type": "keyDown", "key": "-", "text": "-"})
    assert browser.wait_for(f"{PICTURE_STATE}.scale < 1 && {PICTURE_STATE}")["scale"] == pytest.approx(
        0.8, rel=1e-3
    )
    assert browser.exceptions == []
    assert not [line for line in browser.console if "Content Security Policy" in line]
    browser.click('[data-zoom="fit"]')
    browser.screenshot(ARTIFACTS / "coremodels-lineage.png", full_page=False)


def test_the_command_line_writes_the_picture_the_server_draws(live: Live, tmp_path: Path) -> None:
    """`lineage --snapshot latest.json --format svg` (with the export's waivers) is the page's <svg>."""
    waivers = tmp_path / "waivers.json"
    waivers.write_text(json.dumps([WAIVER]))
    for query, argv in (
        ({}, []),
        ({"around": "load_orders", "depth": "1"}, ["--around", "load_orders", "--depth", "1"]),
    ):
        page = live.authed(PAGE, **query).text
        start = page.index('<svg xmlns="http://www.w3.org/2000/svg" class="coremodels-lineage"')
        drawn = page[start : page.index("</svg>", start) + len("</svg>")]
        cli = subprocess.run(
            [sys.executable, "-m", "airflow_provider_coremodels", "lineage", "--format", "svg",
             "--snapshot", str(live.snapshot_dir / "latest.json"), "--waivers", str(waivers), *argv],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert cli.returncode == 0, cli.stderr
        assert cli.stdout == drawn + "\n"


def test_the_airflow_ui_lists_the_page_and_shows_it_in_a_frame(browser: Browser, live: Live) -> None:
    assert open_page(browser, live, "/") == 200
    browser.wait_for('!!document.querySelector("button[aria-label=Browse]")')
    browser.click("button[aria-label=Browse]")
    item = browser.wait_for(
        'Array.from(document.querySelectorAll("[role=menuitem]"))'
        '.filter((a) => a.innerText.trim() === "CoreModels").map((a) => a.getAttribute("href"))[0]'
    )
    assert item == "/plugin/coremodels"
    browser.click('[role=menuitem][href="/plugin/coremodels"]')
    src = browser.wait_for('document.querySelector("iframe") && document.querySelector("iframe").src')
    assert src == f"{live.server.base_url}{PAGE}"
    framed = browser.wait_for(
        '(() => { const d = document.querySelector("iframe").contentDocument;'
        " return d && d.readyState === 'complete' && d.querySelector('svg.coremodels-lineage')"
        " && d.body.innerText; })()"
    )
    assert f"fingerprint {live.document['fingerprint']}" in framed
    assert "Showing 4 of 4 findings" in framed
    # The UI mirrors the frame's location into its own URL, so what the frame shows can be linked to.
    assert browser.evaluate("location.pathname") == "/plugin/coremodels/coremodels/"
    browser.screenshot(ARTIFACTS / "airflow-ui-coremodels.png", full_page=False)

    # The UI sandboxes the frame; the filter script still runs in it.
    in_frame = 'document.querySelector("iframe").contentDocument'
    browser.evaluate(f'{in_frame}.getElementById("sev-Warning").click()')
    count = browser.evaluate(f'{in_frame}.getElementById("findings-count").innerText')
    assert count == "Showing 1 of 4 findings"

    # A link to a neighbourhood opens the UI with the page framed at that neighbourhood.
    assert open_page(browser, live, "/plugin/coremodels/coremodels/?around=load_orders&depth=1") == 200
    drawn = browser.wait_for(
        f'(() => {{ const d = {in_frame}; return d && d.readyState === "complete"'
        ' && Array.from(d.querySelectorAll("svg.coremodels-lineage g.node")).map((g) => g.dataset.id)'
        '.sort().join(" "); })()'
    )
    assert drawn == "load_orders s3://lake/orders.parquet"


def test_without_a_login_the_browser_gets_a_401_page(browser: Browser, live: Live) -> None:
    browser.clear_cookies()
    assert browser.navigate(f"{live.server.base_url}{PAGE}") == 401
    assert browser.evaluate("document.querySelector('h1').innerText") == "Sign in to Airflow first"
    assert live.document["fingerprint"] not in browser.evaluate("document.documentElement.outerHTML")
    browser.screenshot(ARTIFACTS / "coremodels-401.png")
