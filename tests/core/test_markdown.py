"""The markdown report: what a reviewer sees in a pull-request comment."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from support.helpers import document_for, recorded_document, recorded_estate

from airflow_provider_coremodels.core import audit, build_document, load_document
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.views.markdown import render_markdown


def section(report: str, heading: str) -> str:
    """The text under one ``###`` heading, up to the next."""
    match = re.search(rf"^### {re.escape(heading)}.*?$(.*?)(?=^### |\Z)", report, re.M | re.S)
    assert match, f"no section {heading!r} in:\n{report}"
    return match.group(1)


def test_summary_findings_grouped_by_severity_and_the_diagram() -> None:
    report = render_markdown(recorded_document())
    assert report.startswith("## CoreModels audit of the Airflow estate\n")
    assert "**6 DAGs** (2 paused) · **4 assets** · **11 tasks** · **7 lineage edges** (0 external)" in report
    assert "### Findings: 4 open (3 Warning, 1 Info)\n" in report
    warning = report.index("#### 🟠 Warning (3)")
    info = report.index("#### 🔵 Info (1)")
    assert warning < info  # most severe first
    warnings = report[warning:info]
    assert "| `dag-no-owner` | `legacy_cleanup` | owners: airflow |" in warnings
    assert (
        "| `paused-producer` | `s3://lake/orders.parquet` | "
        "producers: load\\_orders; active consumers: daily\\_revenue |" in warnings
    )
    assert "`dag-no-description`" in report[info:]
    assert "Coverage and drift: not evaluated (no baseline given)." in section(
        report, "Drift since the baseline"
    )
    lineage = section(report, "Lineage")
    assert "```mermaid\nflowchart LR\n" in lineage
    assert '[("s3://lake/orders.parquet (1 finding)")]' in lineage
    assert '["load_orders (paused)"]' in lineage
    assert "Lossiness" not in report


def test_waived_findings_are_listed_apart_with_their_reason() -> None:
    estate = recorded_estate()
    waiver = Waiver("dag-no-owner", "legacy_*", "ops owns it", dt.date(2999, 1, 1))
    report = render_markdown(build_document(estate, audit(estate, waivers=(waiver,))))
    assert "### Findings: 3 open (2 Warning, 1 Info), 1 waived" in report
    assert "#### 🟠 Warning (2)" in report
    waived = report[report.index("<details><summary>Waived (1)") :]
    assert "| `dag-no-owner` | `legacy_cleanup` | ops owns it | 2999-01-01 |" in waived


def test_drift_since_the_baseline() -> None:
    def dag(dag_id: str) -> dict:
        return {"dag_id": dag_id, "owners": ["t"], "description": "d", "fileloc": f"/dags/{dag_id}.py"}

    before = document_for(
        [dag("kept"), dag("gone")], {"kept": [{"task_id": "a", "operator_name": "BashOperator"}]}
    )
    now = document_for(
        [dag("kept"), dag("new")], {"kept": [{"task_id": "a", "operator_name": "PythonOperator"}]}
    )
    estate = load_document(json.dumps(now)).estate
    assert estate is not None
    document = build_document(estate, audit(estate, load_document(json.dumps(before)).as_baseline()))
    report = render_markdown(document)
    drift = section(report, "Drift since the baseline")
    assert (
        f"Against the baseline `{before['fingerprint']}`: "
        "1 `dataset-removed`, 1 `dataset-unmapped`, 1 `field-type-drift`." in drift
    )
    assert "| Warning | `field-type-drift` | `kept.a` | was BashOperator; now PythonOperator |" in drift
    assert "No conformance findings; drift is below." in report

    unchanged = build_document(estate, audit(estate, load_document(json.dumps(now)).as_baseline()))
    assert "No change against the baseline" in section(render_markdown(unchanged), "Drift since the baseline")


def test_hostile_names_cannot_break_the_table_or_inject_html() -> None:
    hostile = "a|b`c <img src=x onerror=alert(1)> **bold**\nnext"
    report = render_markdown(document_for([{"dag_id": hostile, "owners": ["airflow"]}]))
    row = next(line for line in report.splitlines() if "dag-no-owner" in line and line.startswith("|"))
    cells = re.split(r"(?<!\\)\|", row)
    assert len(cells) == 5  # | code | subject | detail |: the pipe in the name is escaped
    # inline code: inert; the newline written as the escape every view uses
    assert "``a\\|b`c <img src=x onerror=alert(1)> **bold**\\nnext``" in row
    assert "\nnext" not in report


def test_long_lists_are_cut_and_a_large_picture_is_left_out() -> None:
    dags = [{"dag_id": f"dag_{i:03}", "owners": ["airflow"], "description": "d"} for i in range(80)]
    assets = {
        "assets": [{"uri": f"s3://a/{i}", "scheduled_dags": [{"dag_id": f"dag_{i:03}"}]} for i in range(80)]
    }
    report = render_markdown(document_for(dags, None, assets), max_rows=10, max_diagram_nodes=50)
    warnings = report[report.index("#### 🟠 Warning (160)") : report.index("<details>")]
    assert warnings.count("\n| `") == 10
    assert "… and 150 more: run the audit with `--format table` for the full list." in report
    assert "The picture has 160 nodes, too many for a comment." in section(report, "Lineage")
    assert "```mermaid" not in report
    assert len(render_markdown(document_for(dags * 10, None, assets))) < 65_536


def test_a_document_over_the_cap_says_there_is_no_picture() -> None:
    document = {k: v for k, v in recorded_document().items() if k not in ("datasets", "lineage")}
    document["lossiness"] = [{"artifact": "snapshot", "message": "over the cap"}]
    report = render_markdown(document)
    assert "No picture: the snapshot was stored without datasets and lineage" in section(report, "Lineage")
    assert "- `snapshot`: over the cap" in section(report, "Lossiness (1)")


def test_the_asset_estate_report_draws_refs_aliases_and_inlets_dashed() -> None:
    report = render_markdown(recorded_document("airflow3_assets"))
    assert "`asset-conflict`" in report and "only an alternative input of: valuation" in report
    assert (
        "Asset model: 3 edges through Asset.ref, 2 edges through aliases, 1 edge from a task inlet, "
        "1 watched asset, 2 asset conflicts." in report
    )
    dashed = [line.split()[1] for line in report.splitlines() if "-.->" in line]
    assert sorted(dashed) == sorted(["-.->|alias:daily_exports|"] * 2 + ["-.->|ref|"] * 3 + ["-.->|inlet|"])


def test_mentions_autolinks_and_references_from_the_estate_are_inert() -> None:
    """Before: a consumer named ``@org/security-team ...`` (the server chooses the names) in the
    Detail column notified that team from every pull request, and ``https://evil.example``,
    ``www.evil.example`` and an e-mail address became links. Then a zero-width space broke each,
    and went along when a reader copied the URI (issue 45). Now each such word is inline code, in
    every cell and line of the report: inert, and it copies as it is."""
    hostile = "@org/security-team https://evil.example/login www.evil.example ops@evil.example #12"
    dags = [{"dag_id": hostile, "owners": ["team"], "description": "d"}]
    assets = {"assets": [{"uri": "s3://lake/x", "scheduled_dags": [{"dag_id": hostile}]}]}
    report = render_markdown(document_for(dags, None, assets, served=True))
    row = next(line for line in report.splitlines() if "asset-unproduced" in line and line.startswith("|"))
    assert (
        "`@org/security-team` `https://evil.example/login` `www.evil.example` `ops@evil.example` `#12`" in row
    )
    assert "&#8203;" not in report and "\u200b" not in report
    # nothing live is left outside code spans and the diagram (neither renders mentions or links)
    text = re.sub(r"``.*?``|`[^`]*`", "", report.split("```mermaid")[0])
    assert "@" not in text and "://" not in text
    assert not re.search(r"(?i)\bwww\.", text)
    assert not re.search(r"#\d", text)


@pytest.mark.parametrize(
    ("detail", "written"),
    [
        ("consumers: s3://lake/x.csv, daily", "consumers: `s3://lake/x.csv`, daily"),
        ("(see https://wiki.example/a_b).", "(see `https://wiki.example/a_b`)."),
        ("mail ops@example.com; or @oncall", "mail `ops@example.com`; or `@oncall`"),
        ("a `tick` in https://x/`y`", "a \\`tick\\` in `` https://x/`y` ``"),
        ("alone @ here", "alone `@` here"),
        ("no_uri | here", "no\\_uri \\| here"),
    ],
)
def test_a_uri_is_inline_code_that_copies_clean(detail: str, written: str) -> None:
    """Issue 45: a URI (or mention, or e-mail address) in a detail is inline code, the sentence's
    punctuation outside it, nothing added inside it: what a reader copies is the URI."""
    from airflow_provider_coremodels.core.views.markdown import _text

    assert _text(detail) == written
