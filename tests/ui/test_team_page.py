"""The page's team filter as HTML (no browser; tests/ui/test_live_team_page.py drives it in one)."""

from __future__ import annotations

import re

from support.helpers import recorded_estate
from ui.test_page import render

from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.checks.policy import parse_rules
from airflow_provider_coremodels.core.views.trend import Trend, TrendPoint
from airflow_provider_coremodels.ui.page import render_snapshot_page

TEAMS = "teams:\n  orders: {owners: [data-eng]}\n  finance: {tags: [finance]}\n  crm: {owners: [crm-team]}\n"


def document(rules: str = TEAMS) -> dict:
    estate = recorded_estate()
    return build_document(estate, audit(estate, policy=parse_rules(rules)))


def test_a_document_without_teams_offers_no_team_filter() -> None:
    page = render(document("rules: []"))
    assert page.find("select", id="team-filter") == []
    assert "<th>Team</th>" not in render_snapshot_page(document("rules: []"), source="x")


def test_the_team_filter_offers_each_team_with_its_count_and_keeps_the_fingerprint() -> None:
    html = render_snapshot_page(document(), source="x", team="finance", fingerprint="226496987ca335ec")
    select = re.search(r'<select id="team-filter".*?</select>', html, re.S)
    assert select is not None
    options = re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', select.group(0))
    assert [(value, bool(chosen), text) for value, chosen, text in options] == [
        ("", False, "every team"),
        ("orders", False, "orders (1)"),
        ("finance", True, "finance (1)"),
        ("crm", False, "crm (0)"),
        ("unowned", False, "unowned (2)"),
    ]
    page = render(document(), team="finance", fingerprint="226496987ca335ec")
    assert page.find("input", type="hidden", name="fingerprint", value="226496987ca335ec")
    assert [r.get("data-code") for r in page.rows()] == ["asset-unproduced"]
    assert "Findings of team finance" in page.text


def test_each_teams_trend_is_drawn_from_its_counts() -> None:
    points = (
        TrendPoint(
            "2026-11-20T06:00:00Z", "a" * 16, open=(("Warning", 3),), by_team=(("crm", (("Warning", 1),)),)
        ),
        TrendPoint("2026-11-21T06:00:00Z", "b" * 16, open=(("Warning", 3),), by_team=()),
    )
    page = render(document(), team="crm", trend=Trend(points, 2))
    bars = [g.get("data-open") for g in page.find("g") if g.get("data-open") is not None]
    assert bars == ["1", "0"]
    everyone = render(document(), trend=Trend(points, 2))
    assert [g.get("data-open") for g in everyone.find("g") if g.get("data-open") is not None] == ["3", "3"]
