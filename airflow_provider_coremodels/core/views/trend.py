"""The open findings of a sink's stored history as a picture: one stacked bar per snapshot.

Pure: the points in (one per history entry, oldest first), a self-contained ``<svg>`` out, its
styles inside it and every text escaped, so the UI page inlines it without a request, a script
or a font. Bars are evenly spaced, one per stored snapshot (a snapshot is stored when the estate
or its findings change, so the spacing is by change, not by day); the capture dates run along
the bottom. A bar stacks the open findings by severity, the most severe at its foot; an entry
that could not be read is a cross on the axis; the entry ``latest.json`` holds is marked below.
Each bar's ``<title>`` says what it stands for when pointed at.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from airflow_provider_coremodels.core.estate.rules import most_severe_first
from airflow_provider_coremodels.core.estate.text import printable

#: The severities the bars stack, the most severe at the foot; any other is grey, on top.
STACKED = ("Error", "Warning", "Info")
_COLOURS = {"Error": "#cf222e", "Warning": "#d4a72c", "Info": "#54aeff"}
_OTHER = "#8c959f"

_HEIGHT = 220
_TOP, _BOTTOM, _LEFT, _RIGHT = 30, 44, 44, 16
_PLOT_WIDTH = 720  # the width the bars share, within their bounds
_MIN_PLOT_WIDTH = 380  # room for the legend, however few the bars
_MIN_STEP, _MAX_STEP = 7.0, 56.0

_STYLE = (
    "text{font:11px system-ui,-apple-system,'Segoe UI',sans-serif;fill:#57606a}"
    ".grid{stroke:#d0d7de;stroke-width:1}.axis{stroke:#8c959f;stroke-width:1}"
    ".entry.capped rect.sev{opacity:.55;stroke:#57606a;stroke-dasharray:2 2}"
    ".damaged{stroke:#8c959f;stroke-width:1.5}.latest{fill:#1f2328}"
    ".entry:hover rect.sev{filter:brightness(.9)}"
)


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One history entry as the chart draws it. ``open`` counts its open findings by severity;
    ``problem`` says why it could not be read (no bar then)."""

    captured_at: str
    fingerprint: str
    open: tuple[tuple[str, int], ...] = ()
    waived: int = 0
    latest: bool = False
    findings_only: bool = False
    over_the_cap: bool = False
    problem: str | None = None
    #: Each team's open findings by severity, where the snapshot was audited with teams.
    by_team: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    #: Each team's waived findings, where it has any.
    waived_by_team: tuple[tuple[str, int], ...] = ()

    def of_team(self, team: str) -> TrendPoint:
        """The point as one team's trend draws it: that team's open and waived findings only."""
        return dataclasses.replace(
            self,
            open=dict(self.by_team).get(team, ()),
            waived=dict(self.waived_by_team).get(team, 0),
            by_team=(),
            waived_by_team=(),
        )

    @property
    def total(self) -> int:
        return sum(count for _, count in self.open)

    def describe(self) -> str:
        """What the bar's tooltip says."""
        parts = [self.captured_at, f"fingerprint {self.fingerprint}"]
        if self.problem is not None:
            parts.append(f"could not be read: {self.problem}")
        else:
            counts = dict(self.open)
            shown = ", ".join(f"{counts[s]} {s}" for s in most_severe_first(counts) if counts[s])
            parts.append(f"{self.total} open ({shown})" if self.total else "no open findings")
            if self.waived:
                parts.append(f"{self.waived} waived")
        if self.findings_only:
            parts.append("stored for its findings alone")
        if self.over_the_cap:
            parts.append("stored without datasets and lineage (over the cap)")
        if self.latest:
            parts.append("what latest.json holds")
        return " · ".join(parts)


@dataclass(frozen=True, slots=True)
class Trend:
    """What the page's chart draws: the newest entries of ``history/`` (``points``, oldest first)
    of ``total``, or why the history could not be listed (``problem``)."""

    points: tuple[TrendPoint, ...] = ()
    total: int = 0
    problem: str | None = None


def summary(points: Sequence[TrendPoint]) -> str:
    """One sentence: how many snapshots, from when to when, and the open findings of the newest."""
    if not points:
        return "No snapshot stored in the history yet."
    read = [p for p in points if p.problem is None]
    span = (
        f"from {points[0].captured_at} to {points[-1].captured_at}"
        if len(points) > 1
        else points[0].captured_at
    )
    count = f"{len(points)} stored snapshot{'s' if len(points) != 1 else ''}"
    if not read:
        return f"Open findings over {count}, {span}: none of them could be read."
    newest = read[-1]
    peak = max(p.total for p in read)
    return (
        f"Open findings over {count}, {span}: {newest.total} in the newest"
        f"{'' if newest is points[-1] else ' readable one'}, at most {peak}."
    )


def trend_svg(points: Sequence[TrendPoint]) -> str:
    """The chart of ``points`` (oldest first) as one ``<svg>`` element."""
    count = max(len(points), 1)
    step = min(_MAX_STEP, max(_MIN_STEP, _PLOT_WIDTH / count))
    bar = max(step * 0.7, 3.0)
    plot_height = _HEIGHT - _TOP - _BOTTOM
    plot_width = max(step * count, _MIN_PLOT_WIDTH)
    start = _LEFT + (plot_width - step * count) / 2  # few bars stand in the middle
    width = _LEFT + plot_width + _RIGHT
    peak = max((p.total for p in points if p.problem is None), default=0)
    tick, top = _scale(peak)
    base = _TOP + plot_height

    def y(value: float) -> float:
        return base - plot_height * value / top

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="coremodels-trend" width="{width:.0f}" '
        f'height="{_HEIGHT}" viewBox="0 0 {width:.0f} {_HEIGHT}" role="img" '
        f'aria-label="{_text(summary(points))}">',
        f"<style>{_STYLE}</style>",
    ]
    for value in range(0, top + 1, tick):
        at = f"{y(value):.1f}"
        out.append(f'<line class="grid" x1="{_LEFT}" y1="{at}" x2="{width - _RIGHT:.1f}" y2="{at}"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value}</text>')
    out.append(f'<line class="axis" x1="{_LEFT}" y1="{base}" x2="{width - _RIGHT:.1f}" y2="{base}"/>')
    out += _legend()
    for index, point in enumerate(points):
        x = start + step * index + (step - bar) / 2
        centre = x + bar / 2
        classes = (
            ["entry"] + (["capped"] if point.over_the_cap else []) + (["is-latest"] if point.latest else [])
        )
        out.append(
            f'<g class="{" ".join(classes)}" data-captured="{_text(point.captured_at)}" '
            f'data-fingerprint="{_text(point.fingerprint)}" data-open="{point.total}">'
        )
        out.append(f"<title>{_text(point.describe())}</title>")
        if point.problem is not None:
            d = min(bar / 2, 4.0)
            out.append(
                f'<path class="damaged" d="M{centre - d:.1f},{base - 2 * d - 2:.1f} l{2 * d:.1f},{2 * d:.1f} '
                f'm0,{-2 * d:.1f} l{-2 * d:.1f},{2 * d:.1f}"/>'
            )
        else:
            # an invisible full-height bar, so an entry without findings can be pointed at too
            out.append(
                f'<rect x="{x:.1f}" y="{_TOP}" width="{bar:.1f}" height="{plot_height}" fill="transparent"/>'
            )
            stacked = 0
            for severity, value in _stacked(point):
                if value <= 0:
                    continue
                colour = _COLOURS.get(severity, _OTHER)
                top_y, bottom_y = y(stacked + value), y(stacked)
                out.append(
                    f'<rect class="sev sev-{_text(severity)}" x="{x:.1f}" y="{top_y:.1f}" width="{bar:.1f}" '
                    f'height="{bottom_y - top_y:.1f}" fill="{colour}"/>'
                )
                stacked += value
        if point.latest:
            out.append(f'<path class="latest" d="M{centre:.1f},{base + 3} l4,6 l-8,0 z"/>')
        out.append("</g>")
    out += _dates(points, step, start)
    out.append("</svg>")
    return "".join(out)


def _stacked(point: TrendPoint) -> list[tuple[str, int]]:
    counts = dict(point.open)
    others = sum(value for severity, value in counts.items() if severity not in STACKED)
    return [(severity, counts.get(severity, 0)) for severity in STACKED] + [("other", others)]


def _scale(peak: int) -> tuple[int, int]:
    """A tick step of 1, 2 or 5 times a power of ten, at most five ticks, and the top of the axis."""
    peak = max(peak, 1)
    magnitude = 10 ** max(len(str(peak)) - 2, 0)
    for tick in (magnitude * m for m in (1, 2, 5, 10, 20, 50, 100)):
        if math.ceil(peak / tick) <= 5:
            return tick, tick * math.ceil(peak / tick)
    return peak, peak  # pragma: no cover - the steps above always reach one


def _legend() -> list[str]:
    """``open findings  ■ Error  ■ Warning  ■ Info`` along the top (about 6.5 pixels a letter)."""
    out = [f'<text x="{_LEFT}" y="16">open findings</text>']
    x = _LEFT + 96.0
    for severity in STACKED:
        out.append(f'<rect x="{x:.1f}" y="7" width="9" height="9" fill="{_COLOURS[severity]}"/>')
        out.append(f'<text x="{x + 13:.1f}" y="16">{severity}</text>')
        x += 13 + 6.5 * len(severity) + 16
    return out


def _dates(points: Sequence[TrendPoint], step: float, start: float) -> list[str]:
    """Date labels under some bars: the first, the last, and as many between as fit."""
    if not points:
        return []
    days = {p.captured_at[:10] for p in points}
    minutes = {p.captured_at[:16] for p in points}
    # the dates; the times, where all is one day; the seconds too, where all is one minute
    cut = slice(5, 10) if len(days) > 1 else slice(11, 16) if len(minutes) > 1 else slice(11, 19)
    every = max(1, math.ceil(56 / step))  # a label is about 30 pixels wide: keep them apart
    chosen = list(range(0, len(points), every))
    last = len(points) - 1
    if chosen[-1] != last:
        if last - chosen[-1] < every and len(chosen) > 1:
            chosen[-1] = last  # the newest is labelled rather than its close neighbour
        else:
            chosen.append(last)
    out = []
    for index in chosen:
        x = start + step * index + step / 2
        out.append(
            f'<text x="{x:.1f}" y="{_HEIGHT - _BOTTOM + 24}" text-anchor="middle">'
            f"{_text(points[index].captured_at[cut])}</text>"
        )
    first, newest = points[0].captured_at[:10], points[-1].captured_at[:10]
    span = first if first == newest else f"{first} to {newest}"
    out.append(f'<text x="{_LEFT}" y="{_HEIGHT - 6}">{_text(span)}</text>')
    return out


def _text(value: str) -> str:
    return escape(printable(value), quote=True)
