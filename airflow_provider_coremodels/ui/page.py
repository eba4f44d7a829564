"""The CoreModels page as HTML: a snapshot document in, one self-contained page out.

No Airflow and no I/O, so every state of the page is a plain function call in a test. The
template autoescapes: DAG ids, task ids and asset URIs are whatever DAG authors wrote, and
the page is shown to other people inside the Airflow UI. The only markup not escaped here
is the lineage SVG, which ``core.lineage.to_svg`` escapes itself.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from airflow_provider_coremodels.core.lineage import LineageGraph, to_svg

#: Over this many nodes the picture is not drawn: past a few hundred boxes it is unreadable
#: (and slow to lay out), and a neighbourhood (``?around=``) is what a person needs anyway.
MAX_NODES = 300
DEFAULT_DEPTH = 2
MAX_DEPTH = 6
#: Most DAG and asset ids offered by the picker; a larger estate is typed into the box.
MAX_PICKER_IDS = 5000

SEVERITIES = ("Error", "Warning", "Info")


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


def render_snapshot_page(
    document: Mapping[str, Any],
    *,
    source: str,
    note: str | None = None,
    around: str | None = None,
    depth: str | None = None,
) -> str:
    """The page for one snapshot document; ``around``/``depth`` are the raw query parameters."""
    state = _mapping(document.get("state"))
    facts = _mapping(state.get("facts"))
    counts = _mapping(state.get("counts"))
    findings = [_finding(f) for f in _list(document.get("findings")) if isinstance(f, Mapping)]
    open_findings = [f for f in findings if not f["waived"]]
    by_severity = Counter(f["severity"] for f in open_findings)
    all_by_severity = Counter(f["severity"] for f in findings)
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
        ],
        baseline=_baseline_line(document.get("baseline")),
        findings=findings,
        open_count=len(open_findings),
        open_summary=", ".join(f"{by_severity[s]} {s}" for s in _severity_order(by_severity)),
        waived_count=len(findings) - len(open_findings),
        severities=[(s, all_by_severity[s]) for s in _severity_order(all_by_severity)],
        codes=sorted({f["code"] for f in findings}),
        lossiness=[_lossiness(r) for r in _list(document.get("lossiness")) if isinstance(r, Mapping)],
        lineage=_lineage(document, around, depth),
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


def _finding(raw: Mapping[str, Any]) -> dict[str, Any]:
    waived = raw.get("waived")
    return {
        "severity": _text(raw.get("severity")),
        "section": _text(raw.get("section")),
        "code": _text(raw.get("code")),
        "subject": _text(raw.get("subject")),
        "message": _text(raw.get("message")),
        "detail": _text(raw.get("detail")),
        "waived": (
            {"reason": _text(waived.get("reason")), "expires": _text(waived.get("expires"))}
            if isinstance(waived, Mapping)
            else ({"reason": "", "expires": ""} if waived else None)
        ),
    }


def _severity_order(present: Iterable[str]) -> list[str]:
    """Error, Warning, Info, then any severity a newer document might bring, by name."""
    names = set(present)
    return [s for s in SEVERITIES if s in names] + sorted(names - set(SEVERITIES))


def _lossiness(raw: Mapping[str, Any]) -> dict[str, str]:
    return {
        "artifact": _text(raw.get("artifact")),
        "subject": _text(raw.get("subject")),
        "message": _text(raw.get("message")),
    }


def _baseline_line(raw: Any) -> str:
    if not isinstance(raw, Mapping):
        return "Coverage and drift: this snapshot does not say whether a baseline was compared."
    if raw.get("evaluated"):
        fingerprint = _text(raw.get("fingerprint")) or "(unknown)"
        return f"Coverage and drift: compared with the baseline {fingerprint}."
    reason = _text(raw.get("reason")) or "no reason recorded"
    return f"Coverage and drift: not evaluated ({reason})."


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
    shown = graph
    if around:
        try:
            shown = graph.neighbourhood(around, depth)
        except ValueError:
            return replace(
                base,
                error=(
                    f"There is no DAG or asset {around!r} in the lineage of this snapshot. "
                    "Pick one from the list, or show the whole estate."
                ),
            )
    if len(shown.nodes) > MAX_NODES:
        what = f"The neighbourhood of {around!r} at depth {depth}" if around else "The lineage of this estate"
        advice = (
            "choose a smaller depth"
            if around
            else "pick a DAG or asset below to draw what surrounds it (?around=<id>&depth=N)"
        )
        too_many = f"{what} has {len(shown.nodes)} nodes, over the {MAX_NODES} this page draws"
        return replace(base, message=f"{too_many}: {advice}.")
    return replace(
        base,
        svg=Markup(to_svg(shown)),  # to_svg escapes every label itself
        summary=(f"Around {around!r}, depth {depth}: " if around else "") + shown.summary(),
    )


# -- the templates ------------------------------------------------------------------------

_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --panel: #f6f8fa;
  --line: #d1d9e0; --error: #d1242f; --warning: #9a6700; --info: #0969da; --accent: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --panel: #151b23; --line: #3d444d;
    --error: #ff7b72; --warning: #d29922; --info: #58a6ff; --accent: #58a6ff; }
}
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 24px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.meta { color: var(--muted); margin: 0; }
.meta span + span::before { content: " · "; }
.note { background: var(--panel); border-left: 4px solid var(--warning); padding: 8px 12px; margin: 12px 0; }
.facts { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0 8px; padding: 0; list-style: none; }
.facts li { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px;
  min-width: 110px; }
.facts .value { display: block; font-size: 22px; font-weight: 600; }
.facts .label { color: var(--muted); font-size: 12px; }
.baseline, .summary { margin: 6px 0; }
.filters { display: flex; flex-wrap: wrap; align-items: center; gap: 6px 16px; margin: 8px 0; }
.filters fieldset { border: 0; margin: 0; padding: 0; display: flex; gap: 10px; align-items: center; }
.filters legend { float: left; margin-right: 6px; color: var(--muted); }
#findings-count { color: var(--muted); margin-left: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--panel); font-weight: 600; }
td.subject { overflow-wrap: anywhere; min-width: 28ch; }
td code { white-space: nowrap; }
.sev { font-weight: 600; white-space: nowrap; }
.sev-Error { color: var(--error); } .sev-Warning { color: var(--warning); } .sev-Info { color: var(--info); }
tr.waived td { opacity: 0.65; }
.waived-mark { display: inline-block; margin-top: 2px; font-size: 12px; color: var(--muted);
  font-style: italic; }
.empty { color: var(--muted); }
.error { color: var(--error); font-weight: 600; }
.lineage-form { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.lineage-form input[type=text] { min-width: 320px; }
.picture { overflow: auto; max-height: 75vh; border: 1px solid var(--line); border-radius: 6px;
  background: #ffffff; padding: 4px; }
.picture svg g.node { cursor: pointer; }
.legend { color: var(--muted); font-size: 12px; }
a { color: var(--accent); }
"""

_SCRIPT = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll("#findings tbody tr.finding"));
  var count = document.getElementById("findings-count");
  var code = document.getElementById("code-filter");
  var waived = document.getElementById("show-waived");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[name=severity]"));
  function apply() {
    var wanted = {};
    boxes.forEach(function (box) { wanted[box.value] = box.checked; });
    var shown = 0;
    rows.forEach(function (row) {
      var visible = wanted[row.dataset.severity] !== false
        && (!code || code.value === "" || row.dataset.code === code.value)
        && (!waived || waived.checked || row.dataset.waived !== "true");
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (count) { count.textContent = "Showing " + shown + " of " + rows.length + " findings"; }
  }
  boxes.concat([code, waived]).forEach(function (control) {
    if (control) { control.addEventListener("change", apply); }
  });
  apply();
  // Clicking a node of the picture draws what surrounds it.
  Array.prototype.forEach.call(document.querySelectorAll(".picture g.node"), function (node) {
    node.addEventListener("click", function () {
      var params = new URLSearchParams(window.location.search);
      params.set("around", node.getAttribute("data-id"));
      if (!params.get("depth")) { params.set("depth", "__DEFAULT_DEPTH__"); }
      window.location.href = "?" + params.toString() + "#lineage";
    });
  });
})();
""".replace("__DEFAULT_DEPTH__", str(DEFAULT_DEPTH))

#: The page's Content-Security-Policy: its one script by hash, so that markup slipping past the
#: escaping still could not run a script; no fetches, forms only to itself, framed only by Airflow.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        f"script-src 'sha256-{base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()}'",
        "style-src 'unsafe-inline'",  # the page's and the lineage SVG's own <style> blocks
        "img-src 'self' data:",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'self'",
    )
)

_BASE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ style }}</style>
</head>
<body>
{% block body %}{% endblock %}
</body>
</html>
"""

_PAGE = """{% extends "base" %}
{% block body %}
<header>
  <h1>{{ title }}</h1>
  <p class="meta">
    <span>fingerprint <code>{{ fingerprint or "none" }}</code></span>
    <span>captured {{ captured_at or "at an unknown time (offline audit)" }}</span>
    <span>Airflow {{ airflow_version or "version unknown" }}
      {%- if api_version %} (API {{ api_version }}){% endif %}</span>
    {% if connector_version %}<span>connector {{ connector_version }}</span>{% endif %}
  </p>
  <p class="meta">from <code>{{ source }}</code> · <a href="snapshot.json">snapshot.json</a></p>
  {% if note %}<p class="note">{{ note }}</p>{% endif %}
</header>

<section id="facts">
  <ul class="facts">
  {% for label, value in facts %}
    <li><span class="value">{{ "—" if value is none else value }}</span>
      <span class="label">{{ label }}</span></li>
  {% endfor %}
  </ul>
  <p class="baseline">{{ baseline }}</p>
  <p class="summary">Findings: {{ open_count }} open{% if open_summary %} ({{ open_summary }}){% endif %}
    {%- if waived_count %} · {{ waived_count }} waived{% endif %}.</p>
</section>

<section id="findings-section">
  <h2>Findings</h2>
  {% if findings %}
  <div class="filters" id="filters" role="search" aria-label="Filter the findings">
    <fieldset>
      <legend>Severity</legend>
      {% for severity, count in severities %}
      <label><input type="checkbox" name="severity" id="sev-{{ severity }}" value="{{ severity }}" checked>
        {{ severity }} ({{ count }})</label>
      {% endfor %}
    </fieldset>
    <label>Code
      <select id="code-filter" name="code">
        <option value="">all codes</option>
        {% for code in codes %}<option value="{{ code }}">{{ code }}</option>{% endfor %}
      </select>
    </label>
    {% if waived_count %}
    <label><input type="checkbox" id="show-waived" checked> show waived</label>
    {% endif %}
    <span id="findings-count" aria-live="polite">
      Showing {{ findings|length }} of {{ findings|length }} findings</span>
  </div>
  <table id="findings">
    <thead><tr><th>Severity</th><th>Section</th><th>Code</th><th>Subject</th><th>Message</th><th>Detail</th></tr></thead>
    <tbody>
    {% for f in findings %}
      <tr class="finding{% if f.waived %} waived{% endif %}" data-severity="{{ f.severity }}"
          data-code="{{ f.code }}" data-waived="{{ 'true' if f.waived else 'false' }}">
        <td class="sev sev-{{ f.severity }}">{{ f.severity }}</td>
        <td>{{ f.section }}</td>
        <td><code>{{ f.code }}</code></td>
        <td class="subject mono">{{ f.subject }}</td>
        <td>{{ f.message }}{% if f.waived %}<br><span class="waived-mark">
          {{- "waived: " ~ (f.waived.reason or "no reason given") }}
          {%- if f.waived.expires %} (until {{ f.waived.expires }}){% endif %}</span>{% endif %}</td>
        <td class="mono">{{ f.detail }}</td>
      </tr>
    {% endfor %}
    </tbody>
  </table>
  {% else %}
  <p class="empty" id="no-findings">No findings: every rule passed for this snapshot.</p>
  {% endif %}
</section>

<section id="lossiness">
  <h2>Lossiness</h2>
  {% if lossiness %}
  <table>
    <thead><tr><th>Artifact</th><th>Subject</th><th>What was lost</th></tr></thead>
    <tbody>
    {% for r in lossiness %}
      <tr><td>{{ r.artifact }}</td><td class="mono">{{ r.subject }}</td><td>{{ r.message }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% else %}
  <p class="empty">Nothing was lost: every artifact was read in full.</p>
  {% endif %}
</section>

<section id="lineage">
  <h2>Lineage</h2>
  {% if lineage.ids %}
  <form class="lineage-form" method="get" action="#lineage">
    <label for="around">Around</label>
    <input type="text" id="around" name="around" list="lineage-ids" value="{{ lineage.around }}"
           placeholder="a DAG id or asset URI">
    <datalist id="lineage-ids">{% for id in lineage.ids %}<option value="{{ id }}">{% endfor %}</datalist>
    <label for="depth">depth</label>
    <select id="depth" name="depth">
      {% for d in depth_choices %}
      <option value="{{ d }}"{% if d == lineage.depth %} selected{% endif %}>{{ d }}</option>
      {% endfor %}
    </select>
    <button type="submit">Show neighbourhood</button>
    <a href="?#lineage">whole estate</a>
  </form>
  {% endif %}
  {% if lineage.error %}<p class="error" id="lineage-error">{{ lineage.error }}</p>{% endif %}
  {% if lineage.message %}<p class="note" id="lineage-message">{{ lineage.message }}</p>{% endif %}
  {% if lineage.summary %}<p class="legend" id="lineage-summary">{{ lineage.summary }}</p>{% endif %}
  {% if lineage.svg %}
  <p class="legend">Arrows follow the data: producing DAG → asset → consuming DAG. Blue boxes are DAGs,
    green rounded boxes assets, dashed grey boxes paused or external DAGs; a red border marks open findings.
    Click a box to draw what surrounds it.</p>
  <div class="picture">{{ lineage.svg }}</div>
  {% endif %}
</section>
<script>{{ script }}</script>
{% endblock %}
"""

_PROBLEM = """{% extends "base" %}
{% block body %}
<h1>{{ title }}</h1>
<p id="problem-detail">{{ detail }}</p>
<p id="problem-fix">{{ fix }}</p>
{% endblock %}
"""


def _environment() -> Environment:
    from jinja2 import DictLoader

    env = Environment(
        loader=DictLoader({"base": _BASE, "page": _PAGE, "problem": _PROBLEM}),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(style=Markup(_STYLE), script=Markup(_SCRIPT), depth_choices=range(1, MAX_DEPTH + 1))
    return env


_ENV = _environment()
_TEMPLATE = _ENV.get_template("page")
_PROBLEM_TEMPLATE = _ENV.get_template("problem")
