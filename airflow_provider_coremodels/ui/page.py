"""The CoreModels page as HTML: a snapshot document in, one self-contained page out.

No Airflow and no I/O per request, so every state of the page is a plain function call in a
test. The templates (``ui/templates/*.html.j2``), the CSS (``ui/static/page.css``) and the script
(``ui/static/page.js``) are package data, read once on import; the CSS and the script are
inlined, so the page makes no request of its own, and the Content-Security-Policy admits the
script by the sha256 of exactly the text inlined. The templates autoescape: DAG ids, task ids
and asset URIs are whatever DAG authors wrote, and the page is shown to other people inside the
Airflow UI. The only markup not escaped here is the lineage SVG, which ``core.lineage.to_svg``
escapes itself.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

from jinja2 import DictLoader, Environment
from markupsafe import Markup

from airflow_provider_coremodels.core.checks.teams import UNOWNED, document_teams, finding_teams, of_team
from airflow_provider_coremodels.core.estate.suggest import did_you_mean
from airflow_provider_coremodels.core.views.lineage import (
    DEFAULT_DEPTH,
    MAX_NODES,
    LineageGraph,
    Picture,
    picture,
)
from airflow_provider_coremodels.core.views.render import (
    as_sentence,
    baseline_sentence,
    context_lines,
    dag_links_count,
    display_names,
    freshness_line,
    severity_breakdown,
    severity_counts,
    subject_text,
    table_order,
)
from airflow_provider_coremodels.core.views.trend import Trend, TrendPoint, summary, trend_svg

MAX_DEPTH = 6
#: Most DAG and asset ids offered by the picker; a larger estate is typed into the box.
MAX_PICKER_IDS = 5000


@dataclass(frozen=True)
class Lineage:
    """What the lineage section shows: a picture, or a message saying why not (or both)."""

    svg: Markup | None = None
    summary: str | None = None
    message: str | None = None
    error: str | None = None
    ids: tuple[str, ...] = ()
    around: str = ""
    depth: int = DEFAULT_DEPTH


@dataclass(frozen=True)
class History:
    """What the history section shows: the chart and its entries, or a message saying why not."""

    svg: Markup | None = None
    summary: str | None = None
    message: str | None = None
    error: str | None = None
    rows: tuple[dict[str, Any], ...] = ()


def render_snapshot_page(
    document: Mapping[str, Any],
    *,
    source: str | None,
    note: str | None = None,
    around: str | None = None,
    depth: str | None = None,
    trend: Trend | None = None,
    team: str | None = None,
    fingerprint: str | None = None,
) -> str:
    """The page for one snapshot document; ``source`` where it was read from (None: not shown to
    this user); ``around``/``depth`` are the raw query parameters;
    ``trend`` the open findings over the sink's history (None: a document named by itself);
    ``team`` the team whose findings and trend are shown (None: every team's), ``fingerprint``
    the query's, kept when the team is changed."""
    state = _mapping(document.get("state"))
    facts = _mapping(state.get("facts"))
    counts = _mapping(state.get("counts"))
    names = display_names(document)
    raw = [f for f in _list(document.get("findings")) if isinstance(f, Mapping)]
    teams = document_teams(document)
    team_note = None
    if team and (teams is None or (team != UNOWNED and team not in teams)):
        known = f"its teams are {', '.join((*teams, UNOWNED))}" if teams else "it was audited with no teams"
        team_note = f"No team {team} in this snapshot ({known}): every team's findings are shown."
        team = None
    team_choices = []
    if teams is not None:
        team_choices = [(name, len(of_team(raw, name))) for name in (*teams, UNOWNED)]
    if team:
        raw = of_team(raw, team)
        if trend is not None and trend.points:
            trend = replace(trend, points=tuple(p.of_team(team) for p in trend.points))
    findings = [_finding(f, names) for f in raw]
    findings.sort(key=table_order)  # as the command line's table: the most severe first
    open_findings = [f for f in findings if not f["waived"]]
    external_edges = counts.get("lineageEdgesSkipped", document.get("lineageEdgesSkipped"))
    return _TEMPLATE.render(
        title="CoreModels snapshot",
        fingerprint=document.get("fingerprint"),
        captured_at=state.get("capturedAt"),
        airflow_version=state.get("airflowVersion"),
        api_version=state.get("apiVersion"),
        connector_version=state.get("connectorVersion"),
        source=source,
        note=note,
        facts=[
            ("DAGs", facts.get("dags")),
            ("Paused DAGs", facts.get("pausedDags")),
            ("Assets", facts.get("assets")),
            ("Tasks", facts.get("tasks")),
            ("Lineage edges", counts.get("lineageEdges")),
            ("External edges", external_edges),
            *((("Links between DAGs", links),) if (links := dag_links_count(document)) else ()),
        ],
        baseline=as_sentence(baseline_sentence(document.get("baseline"))),
        context=[as_sentence(line) for line in context_lines(document)],
        freshness=_sentence(freshness_line(document)),
        findings=findings,
        open_count=len(open_findings),
        open_summary=severity_counts(open_findings),
        waived_count=len(findings) - len(open_findings),
        severities=severity_breakdown(findings),
        codes=sorted({f["code"] for f in findings}),
        lossiness=[_lossiness(r) for r in _list(document.get("lossiness")) if isinstance(r, Mapping)],
        lineage=_lineage(document, around, depth),
        history=_history(trend),
        team=team or "",
        team_choices=team_choices,
        team_note=team_note,
        fingerprint_query=fingerprint or "",
    )


def render_problem_page(title: str, detail: str, fix: str) -> str:
    """Why there is no snapshot to show, and what to do about it."""
    return _PROBLEM_TEMPLATE.render(title=title, detail=detail, fix=fix)


# -- the pieces ---------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _finding(raw: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    waived = raw.get("waived")
    subject = _text(raw.get("subject"))
    shown = subject_text({**raw, "subject": subject}, names)
    return {
        "severity": _text(raw.get("severity")),
        "section": _text(raw.get("section")),
        "code": _text(raw.get("code")),
        "subject": subject,
        "display": shown[len(subject) + 1 :] if shown != subject else "",
        "message": _text(raw.get("message")),
        "detail": _text(raw.get("detail")),
        "teams": finding_teams(raw) if "team" in raw else [],
        "waived": (
            {"reason": _text(waived.get("reason")), "expires": _text(waived.get("expires"))}
            if isinstance(waived, Mapping)
            else ({"reason": "", "expires": ""} if waived else None)
        ),
    }


def _sentence(line: str | None) -> str | None:
    return as_sentence(line) if line else None


def _lossiness(raw: Mapping[str, Any]) -> dict[str, str]:
    return {
        "artifact": _text(raw.get("artifact")),
        "subject": _text(raw.get("subject")),
        "message": _text(raw.get("message")),
    }


def _parse_depth(raw: str | None) -> tuple[int, str | None]:
    if raw is None or raw.strip() == "":
        return DEFAULT_DEPTH, None
    try:
        depth = int(raw)
    except ValueError:
        depth = -1
    if not 1 <= depth <= MAX_DEPTH:
        return DEFAULT_DEPTH, (
            f"depth must be a whole number from 1 to {MAX_DEPTH}, not {raw!r}: showing depth {DEFAULT_DEPTH}."
        )
    return depth, None


def _lineage(document: Mapping[str, Any], around: str | None, depth_raw: str | None) -> Lineage:
    around = (around or "").strip()
    depth, depth_problem = _parse_depth(depth_raw)
    if document.get("snapshotStored") is False or "datasets" not in document or "lineage" not in document:
        return Lineage(
            message=(
                "The lineage picture is unavailable: this snapshot exceeded the snapshot cap "
                "(--max-snapshot-bytes, the operator's max_snapshot_bytes), so it was stored without "
                "datasets and lineage. Raise the cap to keep the lineage; the facts and findings "
                "above are complete."
            )
        )
    try:
        graph = LineageGraph.from_document(document)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        # A document that passed load_document should not get here; say so rather than fail.
        return Lineage(message=f"The lineage picture cannot be drawn from this snapshot: {exc}.")
    base = Lineage(
        ids=tuple(sorted({node.id for node in graph.nodes}))[:MAX_PICKER_IDS],
        around=around,
        depth=depth,
        summary=graph.summary(),
        error=depth_problem,
    )
    if not graph.nodes:
        return replace(
            base,
            message="No DAG in this snapshot produces or consumes an asset: there is no lineage to draw.",
        )
    try:
        drawn = picture(graph, around or None, depth, max_nodes=MAX_NODES)
    except ValueError:
        hint = did_you_mean(around, graph.names())  # "; did you mean 'x'?" or ""
        return replace(
            base,
            error=(
                f"There is no DAG or asset {around!r} in the lineage of this snapshot{hint or '.'} "
                "Pick one from the list, or show the whole estate."
            ),
        )
    return replace(
        base,
        svg=Markup(drawn.svg),  # to_svg escapes every label itself
        summary=drawn.caption,
        message=drawn.note,
        around=around or (_centre_id(drawn) if drawn.note else ""),
    )


def _history(trend: Trend | None) -> History:
    if trend is None:
        return History(
            message=(
                "The history is charted when the page reads a sink's directory "
                "(ui_snapshot_dir): a snapshot document named by itself has no history/ beside it."
            )
        )
    if trend.problem is not None:
        return History(error=trend.problem)
    if not trend.points:
        return History(
            message="history/ holds no snapshot yet: the chart begins with the next export that stores one."
        )
    said = summary(trend.points)
    if trend.total > len(trend.points):
        said += f" The newest {len(trend.points)} of the {trend.total} stored entries are drawn."
    return History(
        svg=_trend_svg(trend.points), summary=said, rows=tuple(_row(p) for p in reversed(trend.points))
    )


@lru_cache(maxsize=8)
def _trend_svg(points: tuple[TrendPoint, ...]) -> Markup:
    return Markup(trend_svg(points))  # trend_svg escapes every text itself


def _row(point: TrendPoint) -> dict[str, Any]:
    counts = dict(point.open)
    notes = [
        note
        for note, on in (
            ("latest.json", point.latest),
            ("findings only", point.findings_only),
            ("over the cap", point.over_the_cap),
        )
        if on
    ]
    return {
        "captured_at": point.captured_at,
        "fingerprint": point.fingerprint,
        "counts": [counts.get(s, 0) for s in ("Error", "Warning", "Info")],
        "waived": point.waived,
        "problem": point.problem,
        "notes": ", ".join(notes),
    }


def _centre_id(drawn: Picture) -> str:
    """The id a picture of an estate too large to draw whole was centred on."""
    return next((node.id for node in drawn.graph.nodes if node.key in drawn.graph.centre), "")


# -- the templates, the CSS and the script: package data -----------------------------------


@cache
def _package_file(path: str) -> str:
    """A file shipped in this package (``templates/page.html.j2``), as UTF-8 text, byte for byte."""
    resource = files("airflow_provider_coremodels.ui")
    for part in path.split("/"):
        resource = resource.joinpath(part)
    # Bytes, not read_text(): no newline translation, so what is inlined is what the file holds.
    return resource.read_bytes().decode("utf-8")


def _inlined(path: str) -> str:
    """A static file as the page inlines it: on lines of its own inside its <style> or <script>."""
    return "\n" + _package_file(path)


_STYLE = _inlined("static/page.css")
_SCRIPT = _inlined("static/page.js").replace("__DEFAULT_DEPTH__", str(DEFAULT_DEPTH))


def _csp_hash(inline: str) -> str:
    """The CSP source for an inline block: the sha256 of its text, as the page encodes it (UTF-8)."""
    return f"'sha256-{base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()}'"


#: The page's Content-Security-Policy: its one script by hash, so that markup slipping past the
#: escaping still could not run a script; no fetches, forms only to itself, framed only by Airflow.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        f"script-src {_csp_hash(_SCRIPT)}",
        "style-src 'unsafe-inline'",  # the page's and the lineage SVG's own <style> blocks
        "img-src 'self' data:",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'self'",
    )
)

_TEMPLATES = ("base.html.j2", "page.html.j2", "problem.html.j2")


def _environment() -> Environment:
    env = Environment(
        loader=DictLoader({name: _package_file(f"templates/{name}") for name in _TEMPLATES}),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(style=Markup(_STYLE), script=Markup(_SCRIPT), depth_choices=range(1, MAX_DEPTH + 1))
    return env


_ENV = _environment()
_TEMPLATE = _ENV.get_template("page.html.j2")
_PROBLEM_TEMPLATE = _ENV.get_template("problem.html.j2")
