"""The open findings over a sink's history as an inline SVG (``core/views/trend.py``), read back as XML."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from airflow_provider_coremodels.core.views.trend import TrendPoint, summary, trend_svg

SVG = "{http://www.w3.org/2000/svg}"


def point(day: int, *, error: int = 0, warning: int = 0, info: int = 0, **kwargs: object) -> TrendPoint:
    counts = tuple((s, n) for s, n in (("Error", error), ("Warning", warning), ("Info", info)) if n)
    return TrendPoint(f"2026-11-{day:02d}T06:00:00Z", f"{day:016x}", counts, **kwargs)  # type: ignore[arg-type]


def parsed(points: list[TrendPoint]) -> ET.Element:
    return ET.fromstring(trend_svg(points))  # well-formed XML, or this raises


def entries(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if "entry" in g.get("class", "").split()]


def bars(entry: ET.Element) -> dict[str, float]:
    """Each severity's bar height in the entry's group."""
    return {
        rect.get("class", "").split()[-1].removeprefix("sev-"): float(rect.get("height", 0))
        for rect in entry.iter(f"{SVG}rect")
        if "sev" in rect.get("class", "").split()
    }


def test_one_bar_per_entry_stacked_by_severity_in_proportion() -> None:
    points = [point(1, warning=2, info=1), point(2, error=1, warning=4, info=1), point(3), point(4, info=3)]
    svg = parsed(points)
    groups = entries(svg)
    assert [g.get("data-captured") for g in groups] == [p.captured_at for p in points]
    assert [int(g.get("data-open", -1)) for g in groups] == [p.total for p in points]
    heights = [bars(g) for g in groups]
    assert heights[2] == {}  # no open findings: no bar, but a group to point at
    unit = heights[0]["Warning"] / 2
    assert unit > 0
    for drawn, p in zip(heights, points, strict=True):
        assert drawn == pytest.approx({s: n * unit for s, n in p.open}, abs=0.2)  # drawn to 0.1 px
    # the most severe at the foot: Error's bar is the lowest of its stack
    stack = {
        r.get("class").split()[-1]: float(r.get("y"))
        for r in groups[1].iter(f"{SVG}rect")
        if "sev" in (r.get("class") or "")
    }
    assert stack["sev-Error"] > stack["sev-Warning"] > stack["sev-Info"]


def test_each_bar_says_what_it_stands_for() -> None:
    points = [point(1, warning=1), point(2, warning=2, info=1, waived=1, latest=True, findings_only=True)]
    titles = [g.find(f"{SVG}title").text for g in entries(parsed(points))]
    assert titles[1] == (
        "2026-11-02T06:00:00Z · fingerprint 0000000000000002 · 3 open (2 Warning, 1 Info) · 1 waived · "
        "stored for its findings alone · what latest.json holds"
    )
    assert titles[0].endswith("1 open (1 Warning)")


def test_a_damaged_entry_is_a_cross_and_the_latest_is_marked() -> None:
    points = [point(1, warning=1), point(2, problem="is not valid JSON"), point(3, info=1, latest=True)]
    groups = entries(parsed(points))
    assert bars(groups[1]) == {} and groups[1].find(f"{SVG}path").get("class") == "damaged"
    assert "could not be read: is not valid JSON" in groups[1].find(f"{SVG}title").text
    assert [g.find(f"{SVG}path[@class='latest']") is not None for g in groups] == [False, False, True]
    assert "is-latest" in groups[2].get("class")


def test_text_from_documents_is_escaped() -> None:
    hostile = TrendPoint(
        '2026-11-01T06:00:00Z"><script>alert(1)</script>', "x" * 16, problem="<img src=x>\x1b"
    )
    text = trend_svg([hostile])
    assert "<script" not in text and "<img" not in text and "\x1b" not in text
    svg = ET.fromstring(text)
    assert entries(svg)[0].get("data-captured").endswith("<script>alert(1)</script>")


@pytest.mark.parametrize("count", [1, 2, 7, 90, 400])
def test_any_number_of_entries_draws_within_bounds(count: int) -> None:
    points = [point(1 + i % 28, warning=i % 7) for i in range(count)]
    svg = parsed(points)
    width = float(svg.get("width"))
    assert len(entries(svg)) == count
    xs = [float(r.get("x")) for g in entries(svg) for r in g.iter(f"{SVG}rect")]
    assert min(xs) > 0 and max(xs) < width
    labels = [t for t in svg.iter(f"{SVG}text") if t.get("text-anchor") == "middle"]
    positions = [float(t.get("x")) for t in labels]
    assert all(b - a >= 28 for a, b in itertools.pairwise(positions))  # labels never overlap


def test_the_axis_reaches_the_peak_in_round_steps() -> None:
    svg = parsed([point(1, warning=7), point(2, warning=3)])
    ticks = [int(t.text) for t in svg.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert ticks == [0, 2, 4, 6, 8]
    svg = parsed([point(1, warning=130)])
    ticks = [int(t.text) for t in svg.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert ticks[-1] >= 130 and len(ticks) <= 6


def test_the_summary_sentence() -> None:
    assert summary([]) == "No snapshot stored in the history yet."
    points = [point(1, warning=5), point(2, warning=2, info=1), point(3, problem="damaged")]
    assert summary(points) == (
        "Open findings over 3 stored snapshots, from 2026-11-01T06:00:00Z to 2026-11-03T06:00:00Z: "
        "3 in the newest readable one, at most 5."
    )
