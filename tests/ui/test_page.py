"""The CoreModels page as HTML, rendered from snapshot documents without Airflow or a browser."""

from __future__ import annotations

import base64
import copy
import fnmatch
import hashlib
import json
import re
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from support.helpers import as_served, dense_artifacts, document_for, recorded_document, recorded_estate

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.snapshots.document import for_storage
from airflow_provider_coremodels.core.views.layout import MAX_EDGES
from airflow_provider_coremodels.core.views.lineage import LineageGraph, picture
from airflow_provider_coremodels.core.views.trend import Trend, TrendPoint
from airflow_provider_coremodels.ui.page import (
    CONTENT_SECURITY_POLICY,
    DEFAULT_DEPTH,
    MAX_NODES,
    render_problem_page,
    render_snapshot_page,
)

HOSTILE_DAG = '<script>alert("dag")</script>'
HOSTILE_ASSET = 's3://lake/"><img src=x onerror=alert(1)>.parquet'
#: The page's package data, as the installed package holds it.
UI_PACKAGE = "airflow_provider_coremodels.ui"
PACKAGE_DATA = (
    "templates/base.html.j2",
    "templates/page.html.j2",
    "templates/problem.html.j2",
    "static/page.css",
    "static/page.js",
)


class _Page(HTMLParser):
    """The tags and visible text of a page, so tests assert on structure, not on whitespace."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self._in_style = False
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)
        elif not self._in_style:
            self._text.append(data)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", " ".join(self._text))

    def find(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())]

    def rows(self) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == "tr" and "finding" in (a.get("class") or "")]


def render(document: dict[str, Any], **kwargs: Any) -> _Page:
    return _Page(render_snapshot_page(document, source="/data/coremodels/latest.json", **kwargs))


def hostile_document() -> dict[str, Any]:
    dags = [
        {"dag_id": HOSTILE_DAG, "is_paused": False, "owners": ["airflow"], "fileloc": "/dags/x.py"},
        {"dag_id": "consumer", "is_paused": False, "owners": ["team"], "description": "reads it"},
    ]
    assets = [
        {
            "uri": HOSTILE_ASSET,
            "producing_tasks": [{"dag_id": HOSTILE_DAG, "task_id": "t"}],
            "scheduled_dags": [{"dag_id": "consumer"}],
        }
    ]
    return document_for(dags, None, {"assets": assets})


def test_the_recorded_estate_shows_facts_findings_and_lineage() -> None:
    document = recorded_document()
    page = render(document)
    assert page.find("h1")
    for words in (
        f"fingerprint {document['fingerprint']}",
        "6 DAGs",
        "2 Paused DAGs",
        "4 Assets",
        "11 Tasks",
        "7 Lineage edges",
        "0 External edges",
        "Coverage and drift: not evaluated (no baseline given).",
        "Findings: 4 open (3 Warning, 1 Info).",
        "Showing 4 of 4 findings",
        "Nothing was lost",
    ):
        assert words in page.text
    rows = page.rows()
    assert [(r["data-severity"], r["data-code"]) for r in rows] == [
        ("Warning", "asset-unproduced"),
        ("Warning", "dag-no-owner"),
        ("Warning", "paused-producer"),
        ("Info", "dag-no-description"),
    ]  # the command line's order: the most severe first
    assert [f["code"] for f in document["findings"]][1] == "dag-no-description"  # the document's: by code
    assert page.find("svg", **{"class": "coremodels-lineage"})
    # the Content-Security-Policy admits the one hashed script: no inline event handlers
    assert not [(t, k) for t, a in page.tags for k in a if k.startswith("on")]
    assert {a["data-id"] for a in page.find("g") if a.get("data-id")} >= {
        "load_orders",
        "s3://lake/orders.parquet",
    }


def test_policy_findings_and_airflow_warnings_show_like_the_others() -> None:
    """The team's rules and Airflow's own warnings: rows, filters, and the policy line, escaped."""
    from airflow_provider_coremodels.core.checks.policy import rules_from_value

    dags = [
        {"dag_id": "adhoc", "is_paused": False, "owners": ["bob"], "description": "a one-off"},
        {"dag_id": HOSTILE_DAG, "is_paused": False, "owners": ["team"], "description": "long enough"},
    ]
    warning = {"dag_id": "adhoc", "warning_type": "non-existent pool", "message": "<b>pool</b> 'etl' is gone"}
    rules = rules_from_value(
        [{"code": "policy-owner", "severity": "Error", "require": {"owner_in": ["team"]}}]
    )
    dags_doc, _ = as_served({"dags": dags, "dag_warnings": [warning]}, None)
    estate = parse_artifacts(json.dumps(dags_doc).encode())
    document = build_document(estate, audit(estate, policy=rules))
    page = render(document)
    rows = [(r["data-severity"], r["data-code"]) for r in page.rows()]
    assert ("Error", "policy-owner") in rows and ("Warning", "airflow-warning") in rows
    assert f"Policy: 1 rule (digest {document['policy']['digest']}), 1 finding." in page.text
    assert "owners: bob; not in the list: bob" in page.text
    assert "non-existent pool: <b>pool</b> 'etl' is gone" in page.text  # shown as text, never markup
    assert not page.find("b")
    options = [a["value"] for t, a in page.tags if t == "option" and a.get("value")]
    assert "policy-owner" in options and "airflow-warning" in options


def test_findings_are_listed_most_severe_first_then_by_section_code_and_subject() -> None:
    """The page lists findings as the command line's table does, not in the document's order."""
    findings = [
        {"section": s, "severity": v, "code": c, "subject": j, "message": "m"}
        for s, v, c, j in (
            ("Conformance", "Info", "dag-no-description", "a"),
            ("Conformance", "Warning", "dag-no-owner", "b"),
            ("Conformance", "Warning", "dag-no-owner", "a"),
            ("Coverage", "Info", "dataset-unmapped", "a"),
            ("Drift", "Warning", "dataset-removed", "a"),
            ("Conformance", "Error", "dag-import-error", "z/f.py"),
            ("Policy", "Critical", "policy-future", "x"),  # a severity this version does not know: last
        )
    ]
    page = render({**recorded_document(), "findings": findings})
    assert [(r["data-severity"], r["data-code"]) for r in page.rows()] == [
        ("Error", "dag-import-error"),
        ("Warning", "dag-no-owner"),
        ("Warning", "dag-no-owner"),
        ("Warning", "dataset-removed"),
        ("Info", "dag-no-description"),
        ("Info", "dataset-unmapped"),
        ("Critical", "policy-future"),
    ]
    assert [r["data-code"] for r in page.rows()] == [code for _, code in render_table_order(findings)]


def render_table_order(findings: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The (severity, code) of each row of the command line's table, in its order."""
    from airflow_provider_coremodels.core.views.render import render_table

    table = render_table({**recorded_document(), "findings": findings}).splitlines()
    start = next(i for i, line in enumerate(table) if line.startswith("SEVERITY"))
    rows = [line.split()[:3] for line in table[start + 1 : start + 1 + len(findings)]]
    return [(row[0], row[2]) for row in rows]


def test_filters_offer_each_severity_and_code_present() -> None:
    page = render(recorded_document())
    boxes = page.find("input", type="checkbox", name="severity")
    assert [b["value"] for b in boxes] == ["Warning", "Info"]  # Error, Warning, Info order; only present ones
    assert all("checked" in b for b in boxes)
    options = [a["value"] for t, a in page.tags if t == "option" and a.get("value") is not None]
    codes = ["asset-unproduced", "dag-no-description", "dag-no-owner", "paused-producer"]
    assert options[: 1 + len(codes)] == ["", *codes]  # "all codes", then each code once, sorted
    assert page.find("select", id="code-filter")
    assert "Warning (3)" in page.text and "Info (1)" in page.text
    assert any("findings-count" in s for s in page.scripts)  # the filter script is inline


def test_a_hostile_dag_id_and_asset_uri_are_escaped_everywhere() -> None:
    """DAG ids and URIs come from DAG authors: nothing in them may become markup or script."""
    document = hostile_document()
    html = render_snapshot_page(document, source="/data/<b>x</b>", note="<i>note</i>")
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "<b>x</b>" not in html and "<i>note</i>" not in html
    page = _Page(html)
    assert [t for t, _ in page.tags].count("script") == 1  # only the page's own
    assert not page.find("img")
    assert HOSTILE_DAG in page.text and HOSTILE_ASSET in page.text  # shown, as text
    assert {r["data-code"] for r in page.rows()} >= {"dag-no-owner"}
    assert any(a.get("data-id") == HOSTILE_DAG for a in page.find("g"))
    # the same page around the hostile id, and with it as an unknown id
    around = render(document, around=HOSTILE_DAG, depth="1")
    assert not around.find("img") and [t for t, _ in around.tags].count("script") == 1
    unknown = render_snapshot_page(document, source="x", around="<script>x()</script>")
    assert "<script>x()" not in unknown


def test_no_findings_says_so_and_offers_no_filters() -> None:
    document = document_for(
        [{"dag_id": "tidy", "is_paused": False, "owners": ["team"], "description": "all good"}]
    )
    assert document["findings"] == []
    page = render(document)
    assert "No findings" in page.text
    assert "Findings: 0 open." in page.text
    assert not page.find("select", id="code-filter") and not page.rows()
    assert "no lineage to draw" in page.text  # one DAG, no assets


def test_waived_findings_are_marked_and_not_counted_as_open() -> None:
    document = recorded_document()
    for finding in document["findings"]:
        if finding["code"] == "dag-no-owner":
            finding["waived"] = {"reason": "owned by <ops>", "expires": "2027-03-31"}
        if finding["code"] == "dag-no-description":
            finding["waived"] = {"reason": "legacy", "expires": None}
    page = render(document)
    assert "Findings: 2 open (2 Warning) · 2 waived." in page.text
    assert "waived: owned by <ops> (until 2027-03-31)" in page.text
    assert "waived: legacy" in page.text and "legacy (until" not in page.text
    waived = [r for r in page.rows() if r["data-waived"] == "true"]
    assert {r["data-code"] for r in waived} == {"dag-no-owner", "dag-no-description"}
    assert page.find("input", id="show-waived")


def test_an_over_cap_snapshot_keeps_facts_and_findings_but_has_no_picture() -> None:
    estate = recorded_estate()
    document = for_storage(build_document(estate, audit(estate), max_snapshot_bytes=100))
    assert document["snapshotStored"] is False and "lineage" not in document
    page = render(document)
    assert "6 DAGs" in page.text and len(page.rows()) == 4
    assert "lineage picture is unavailable: this snapshot exceeded the snapshot cap" in page.text
    assert not page.find("svg")
    assert "over the 100-byte cap" in page.text  # the lossiness record says why


def test_around_draws_the_neighbourhood_only() -> None:
    page = render(recorded_document(), around="load_orders", depth="1")
    drawn = {a["data-id"] for a in page.find("g") if a.get("data-id")}
    assert drawn == {"load_orders", "s3://lake/orders.parquet"}
    assert "Around 'load_orders', depth 1:" in page.text
    assert page.find("input", id="around", value="load_orders")
    assert [o["value"] for o in page.find("option") if "selected" in o] == ["1"]


def test_an_unknown_id_says_so_and_still_offers_the_picker() -> None:
    page = render(recorded_document(), around="no_such_dag")
    assert "There is no DAG or asset 'no_such_dag' in the lineage of this snapshot." in page.text
    assert not page.find("svg")
    assert page.find("datalist", id="lineage-ids")
    assert "load_orders" in [a["value"] for a in page.find("option") if a.get("value")]


def test_an_unknown_id_near_a_known_one_is_offered_it() -> None:
    page = render(recorded_document(), around="daily_revenu")
    assert (
        "There is no DAG or asset 'daily_revenu' in the lineage of this snapshot; did you mean "
        "'daily_revenue'? Pick one from the list, or show the whole estate." in page.text
    )
    assert not page.find("svg")


@pytest.mark.parametrize("depth", ["0", "-1", "seven", "99"])
def test_a_bad_depth_falls_back_to_the_default_and_says_so(depth: str) -> None:
    page = render(recorded_document(), around="load_orders", depth=depth)
    assert f"depth must be a whole number from 1 to 6, not '{depth}': showing depth 2." in page.text
    assert page.find("svg")


@pytest.mark.parametrize("case", ["assets", "3000"])
def test_a_dense_estate_the_page_draws_within_the_limits_and_says_what_it_left_out(case: str) -> None:
    """Issue 34: the dense estates whose picture took minutes. The page draws what ``picture``
    draws, byte for byte (so the bounds tested in tests/core/test_layout.py hold here), and
    says what it left out twice: the message above the picture and the caption on it."""
    docs = dense_artifacts(case)
    document = document_for(docs["dags"], None, docs["datasets"])
    drawn = picture(LineageGraph.from_document(document))
    assert drawn.note and len(drawn.graph.edges) <= MAX_EDGES
    html = render_snapshot_page(document, source="/data/coremodels/latest.json")
    assert drawn.svg in html
    page = _Page(html)
    assert " ".join(drawn.note.split()) in page.text  # the message, and the caption's lines
    assert page.text.count("is too dense for one picture") == 2
    assert len([a for a in page.find("text") if a.get("class") == "caption"]) >= 2


def test_over_the_node_cap_the_page_draws_the_estate_around_one_node_and_says_so() -> None:
    """A ring of 200 DAGs and 200 assets: over the 300 nodes one picture draws, so the page draws
    the neighbourhood of its focus (no findings here: the most linked node, then the first)."""
    dags = [
        {"dag_id": f"dag_{i:03}", "is_paused": False, "owners": ["t"], "description": "d"} for i in range(200)
    ]
    assets = [
        {
            "uri": f"s3://lake/a{i:03}",
            "producing_tasks": [{"dag_id": f"dag_{i:03}", "task_id": "t"}],
            "scheduled_dags": [{"dag_id": f"dag_{(i + 1) % 200:03}"}],
        }
        for i in range(200)
    ]
    document = document_for(dags, None, {"assets": assets})
    page = render(document)
    assert (
        f"The whole estate has 400 nodes, over the {MAX_NODES} one picture draws: this is the "
        "neighbourhood of 's3://lake/a000' (the most linked node) at depth 2." in page.text
    )
    assert {a["data-id"] for a in page.find("g") if a.get("data-id")} == {
        "s3://lake/a199", "dag_000", "s3://lake/a000", "dag_001", "s3://lake/a001",
    }  # fmt: skip
    assert page.find("input", id="around", value="s3://lake/a000")  # the picker names the centre
    assert "Around 's3://lake/a000', depth 2:" in page.text
    assert len([a for a in page.find("option") if a.get("value", "").startswith("dag_")]) == 200
    near = render(document, around="dag_010", depth="2")
    assert {a["data-id"] for a in near.find("g") if a.get("data-id")} == {
        "s3://lake/a009",
        "dag_010",
        "s3://lake/a010",
        "dag_009",
        "dag_011",
    }
    assert "The whole estate" not in near.text
    whole_ring = render(document, around="dag_010", depth="6")
    assert len([a for a in whole_ring.find("g") if a.get("data-id")]) == 13


def test_a_neighbourhood_over_the_node_cap_is_cut_and_the_page_says_where() -> None:
    dags = [{"dag_id": "producer", "owners": ["t"], "description": "d"}] + [
        {"dag_id": f"consumer_{i:03}", "owners": ["t"], "description": "d"} for i in range(400)
    ]
    assets = [
        {
            "uri": "s3://lake/hub",
            "producing_tasks": [{"dag_id": "producer", "task_id": "t"}],
            "scheduled_dags": [{"dag_id": f"consumer_{i:03}"} for i in range(400)],
        }
    ]
    page = render(document_for(dags, None, {"assets": assets}), around="s3://lake/hub", depth="1")
    assert len([a for a in page.find("g") if a.get("data-id")]) == MAX_NODES
    assert (
        "The neighbourhood of 's3://lake/hub' at depth 1 holds more than the 300 nodes one picture "
        "draws: drawn are 299 of the 401 at distance 1" in page.text
    )
    assert "s3://lake/hub +102" in page.text  # the hub's box counts its links not drawn


def test_a_sparse_or_odd_document_still_renders() -> None:
    """Fields a future (or damaged) document lacks are shown as unknown, never a crash."""
    document = copy.deepcopy(recorded_document())
    del document["baseline"]
    document["state"] = {"facts": "not a mapping"}
    document["findings"].append("not a finding")
    document["findings"].append({"severity": "Critical", "code": "new-rule", "subject": None})
    document["lossiness"] = [{"artifact": "tasks", "subject": "legacy_cleanup", "message": "tasks ignored"}]
    page = render(document)
    assert "does not say whether a baseline was compared" in page.text
    assert "— DAGs" in page.text  # an unknown fact shows as a dash
    assert page.find("input", type="checkbox", name="severity", value="Critical")
    assert "tasks legacy_cleanup tasks ignored" in page.text


def test_the_problem_page_escapes_and_shows_its_parts() -> None:
    page = _Page(render_problem_page("No snapshot yet", "dir <x> is empty", "Run the export."))
    assert page.text.strip().startswith("No snapshot yet")
    assert "dir <x> is empty" in page.text and "Run the export." in page.text
    assert not page.find("x")


def _package_file(path: str) -> str:
    resource = files(UI_PACKAGE)
    for part in path.split("/"):
        resource = resource.joinpath(part)
    return resource.read_bytes().decode("utf-8")


def test_the_installed_package_holds_the_templates_css_and_script() -> None:
    for path in PACKAGE_DATA:
        assert _package_file(path).strip(), f"{path} is missing or empty in the installed package"


def test_the_package_data_files_are_declared_for_the_wheel() -> None:
    """A new file under ui/templates or ui/static must match pyproject's package-data, or wheels lack it."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"]["package-data"]["airflow_provider_coremodels"]
    assert "py.typed" in globs
    shipped = {
        f"ui/{folder}/{entry.name}"
        for folder in ("templates", "static")
        for entry in files(UI_PACKAGE).joinpath(folder).iterdir()
        if entry.is_file()
    }
    assert shipped >= {f"ui/{path}" for path in PACKAGE_DATA}
    assert [path for path in sorted(shipped) if not any(fnmatch.fnmatch(path, g) for g in globs)] == []


def test_the_csp_hash_is_the_script_exactly_as_inlined_from_its_file() -> None:
    """The browser hashes the text between <script> and </script>: page.js as inlined, hashed in the CSP."""
    html = render_snapshot_page(recorded_document(), source="/data/coremodels/latest.json")
    [inline] = re.findall(r"<script>(.*?)</script>", html, re.S)
    source = _package_file("static/page.js")
    assert '"__DEFAULT_DEPTH__"' in source  # the one value filled in before hashing
    assert inline == "\n" + source.replace("__DEFAULT_DEPTH__", str(DEFAULT_DEPTH))
    assert f'params.set("depth", "{DEFAULT_DEPTH}")' in inline
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    directives = [d.strip() for d in CONTENT_SECURITY_POLICY.split(";")]
    [script_src] = [d for d in directives if d.startswith("script-src")]
    assert script_src == f"script-src 'sha256-{digest}'"  # that script alone: no 'unsafe-inline', no URL
    # the stylesheet is inlined from its file too, byte for byte (the lineage SVG has its own)
    [style] = re.findall(r"<style>(.*?)</style>", html.partition("</head>")[0], re.S)
    assert style == "\n" + _package_file("static/page.css")
    # the problem page has the same stylesheet and no script
    problem = render_problem_page("No snapshot yet", "empty", "Run the export.")
    assert re.findall(r"<style>(.*?)</style>", problem, re.S) == [style] and "<script" not in problem


def test_the_asset_estate_shows_conflicts_lossiness_and_how_edges_were_learned() -> None:
    document = recorded_document("airflow3_assets")
    page = render(document)
    codes = [r["data-code"] for r in page.rows()]
    assert codes.count("asset-conflict") == 2 and "paused-producer" in codes
    assert "orders_by_slash_ref" in page.text and "matches no asset" in page.text  # the lossiness
    dashed = [a for a in page.find("path") if "via" in (a.get("class") or "").split()]
    assert len(dashed) == len([e for e in document["lineage"] if e.get("via")]) == 6
    assert "watched" in page.text  # the watched file's mark on the picture
    assert (
        "Asset model: 3 edges through Asset.ref, 2 edges through aliases, 1 edge from a task inlet, "
        "1 watched asset, 2 asset conflicts." in page.text
    )


# -- the history chart ----------------------------------------------------------------------


def trend_points(*totals: int) -> tuple[TrendPoint, ...]:
    return tuple(
        TrendPoint(
            f"2026-11-{day:02d}T06:00:00Z", f"{day:016x}", (("Warning", total),), latest=day == len(totals)
        )
        for day, total in enumerate(totals, start=1)
    )


def test_the_history_chart_is_drawn_inline_with_its_entries() -> None:
    points = trend_points(4, 6, 3)
    html = render_snapshot_page(
        recorded_document(), source="/data/x/latest.json", trend=Trend(points, total=12)
    )
    page = _Page(html)
    [svg] = page.find("svg", **{"class": "coremodels-trend", "role": "img"})
    assert svg["aria-label"].startswith("Open findings over 3 stored snapshots")
    assert "The newest 3 of the 12 stored entries are drawn." in page.text
    groups = [a for t, a in page.tags if t == "g" and "entry" in (a.get("class") or "")]
    assert [g["data-open"] for g in groups] == ["4", "6", "3"]
    rows = [a for t, a in page.tags if t == "tr" and a.get("class") == "history-entry"]
    assert len(rows) == 3  # the entries, newest first, as a table beside the picture
    newest = page.text.index("2026-11-03T06:00:00Z 0000000000000003 0 3 0 0 latest.json")
    assert newest < page.text.index("2026-11-01T06:00:00Z 0000000000000001 0 4 0 0")
    # drawn without a script or a request: the page's one script, the same CSP
    assert (
        len(page.scripts) == 1
        and "<image" not in html
        and "href=" not in html.partition('class="chart"')[2][:3000]
    )
    assert render_snapshot_page(recorded_document(), source="x").count("<script") == html.count("<script")


@pytest.mark.parametrize(
    ("trend", "shown"),
    [
        (None, "The history is charted when the page reads a sink's directory"),
        (Trend(), "history/ holds no snapshot yet"),
        (
            Trend(problem="s3://b/p/history/ cannot be listed: AccessDenied"),
            "s3://b/p/history/ cannot be listed",
        ),
    ],
)
def test_without_a_history_the_section_says_why(trend: Trend | None, shown: str) -> None:
    page = render(recorded_document(), trend=trend)
    assert shown in page.text
    assert page.find("svg", **{"class": "coremodels-trend"}) == []
