"""A markdown report fit for a pull-request comment: summary, findings, drift, the lineage picture.

Written for GitHub-flavoured markdown (GitLab renders it too): tables, a Mermaid diagram,
``<details>`` for the long parts. Everything taken from the estate is escaped (its control
characters first, as ``\\x1b`` or ``\\n``, then markdown and HTML) and made inert where a
comment would act on it: no ``@team`` mention notifies anyone, no URL, ``www.`` name, e-mail
address or ``#123`` becomes a link. Each such word is written as inline code, which renders no
mention or link and copies as it is (a zero-width space inside a URI went along with a copy). The
long lists are cut, so a large estate still fits in one comment (GitHub allows 65,536 characters).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_coremodels.core.checks.teams import document_teams, grouped
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.rules import (
    COVERAGE,
    DRIFT,
    POLICY,
    catalogue,
    most_severe_first,
)
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.reading.owner_links import with_links
from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_mermaid
from airflow_provider_coremodels.core.views.render import (
    as_sentence,
    baseline_sentence,
    change_lines,
    context_lines,
    display_names,
    freshness_line,
    links_part,
    severity_counts,
    subject_text,
    table_order,
)

MAX_ROWS = 50  # per table
MAX_DIAGRAM_NODES = 120  # more than this is unreadable in a comment box
_SEVERITY_ICON = {"Error": "🔴", "Warning": "🟠", "Info": "🔵"}


@gc_paused()
def render_markdown(
    document: Mapping[str, Any], *, max_rows: int = MAX_ROWS, max_diagram_nodes: int = MAX_DIAGRAM_NODES
) -> str:
    findings = list(document.get("findings", []))
    open_findings = [f for f in findings if not f.get("waived")]
    waived = [f for f in findings if f.get("waived")]
    drift = [f for f in open_findings if f["section"] in (COVERAGE, DRIFT)]
    others = [f for f in open_findings if f["section"] not in (COVERAGE, DRIFT)]
    names = display_names(document)

    out = _change_section(document.get("change"), names, max_rows)
    out += ["## CoreModels audit of the Airflow estate", "", _summary(document), ""]
    out.append(f"### Findings: {_count_line(open_findings, len(waived))}")
    out.append("")
    if not others:
        out.append("No conformance findings." if not drift else "No conformance findings; drift is below.")
        out.append("")
    teams = document_teams(document)
    if teams is not None and others:  # each team's findings under its name, the most severe first
        for team, group in grouped(sorted(others, key=table_order), teams):
            out.append(f"#### Team {_text(team)} ({len(group)})")
            out.append("")
            out.extend(
                _table(
                    ("Severity", "Code", "Subject", "Detail"),
                    (
                        [
                            _text(f["severity"]),
                            _code(f["code"]),
                            _subject(f, names),
                            _text(f.get("detail") or ""),
                        ]
                        for f in group
                    ),
                    len(group),
                    max_rows,
                )
            )
            out.append("")
        others = []
    by_severity: dict[str, list[dict[str, Any]]] = {}
    for finding in others:
        by_severity.setdefault(finding["severity"], []).append(finding)
    for severity in most_severe_first(by_severity):
        group = by_severity[severity]
        out.append(
            f"#### {_SEVERITY_ICON.get(severity, '')} {_text(severity)} ({len(group)})".replace("  ", " ")
        )
        out.append("")
        out.extend(
            _table(
                ("Code", "Subject", "Detail"),
                ([_code(f["code"]), _subject(f, names), _text(f.get("detail") or "")] for f in group),
                len(group),
                max_rows,
            )
        )
        out.append("")
    if waived:
        out.append(f"<details><summary>Waived ({len(waived)}): reported, never failing the run</summary>")
        out.append("")
        out.extend(
            _table(
                ("Code", "Subject", "Reason", "Expires"),
                (
                    [
                        _code(f["code"]),
                        _subject(f, names),
                        _text(f["waived"].get("reason") or ""),
                        _text(f["waived"].get("expires") or "never"),
                    ]
                    for f in waived
                ),
                len(waived),
                max_rows,
            )
        )
        out.append("")
        out.append("</details>")
        out.append("")
    codes = sorted({f["code"] for f in findings})
    rules = catalogue(document)
    if codes:
        out.append("<details><summary>What the codes mean</summary>")
        out.append("")
        for code in codes:
            rule = rules.get(code)
            message = next(f["message"] for f in findings if f["code"] == code)
            line = f"- {_code(code)}: {_text(message)}"
            if rule and rule.section == POLICY:
                line += f" {_text(rule.help)}"  # the rules file's words: text, never markdown of ours
            elif rule:
                line += f" {rule.help}"  # our own markdown, from the catalogue
            out.append(line)
        out.append("")
        out.append("</details>")
        out.append("")

    out.extend(_drift_section(document, drift, max_rows))
    out.extend(_lineage_section(document, max_diagram_nodes))
    lossiness = document.get("lossiness", [])
    if lossiness:
        out.append(f"### Lossiness ({len(lossiness)})")
        out.append("")
        out.append("What the capture or parse could not represent, declared rather than dropped:")
        out.append("")
        shown = lossiness[:max_rows]
        out.extend(f"- {_code(r['artifact'])}: {_text(r['message'])}" for r in shown)
        if len(lossiness) > len(shown):
            out.append(f"- … and {len(lossiness) - len(shown)} more")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _change_section(change: Any, names: Mapping[str, str], max_rows: int) -> list[str]:
    """A pre-merge check's change, first: its lines, then what it breaks, the findings it opens and
    the DAGs it affects as tables (nothing for a document without a ``change`` part)."""
    if not isinstance(change, dict):
        return []
    out = ["## This change", ""]
    out.extend(f"- {_text(line)}" for line in change_lines(change))
    out.append("")
    breaks = change.get("breaks") or ()
    if breaks:
        out.append(f"### Breaks ({len(breaks)})")
        out.append("")
        rows = (
            [
                _code(b["dependent"]),
                _text(", ".join(b.get("owners") or ()) or "no owner"),
                _text(b["team"]) if b.get("team") else "",
                _code(b["through"]),
                f"{_code(b['finding']['code'])} {_code(b['finding']['subject'])}",
            ]
            for b in breaks
        )
        out.extend(_table(("DAG", "Owners", "Team", "Through", "Finding"), rows, len(breaks), max_rows))
        out.append("")
    opened = sorted(change.get("findingsOpened", ()), key=table_order)
    if opened:
        out.append(f"### Opened ({len(opened)})")
        out.append("")
        rows = (
            [_text(f["severity"]), _code(f["code"]), _subject(f, names), _text(f.get("detail") or "")]
            for f in opened
        )
        out.extend(_table(("Severity", "Code", "Subject", "Detail"), rows, len(opened), max_rows))
        out.append("")
    affected = change.get("affected", ())
    if affected:
        out.append(f"### Affected downstream ({len(affected)})")
        out.append("")
        rows = (
            [
                _code(a["dag"]),
                _text(with_links(a.get("owners") or (), a.get("ownerLinks") or {}) or "no owner"),
                _code(a["through"]),
                "cut" if a.get("cut") else "changed",
            ]
            for a in affected
        )
        out.extend(_table(("DAG", "Owners", "Through", "Edge"), rows, len(affected), max_rows))
        out.append("")
    closed = change.get("findingsClosed", ())
    if closed:
        out.append(f"<details><summary>Closed ({len(closed)})</summary>")
        out.append("")
        rows = ([_text(f["severity"]), _code(f["code"]), _subject(f, names)] for f in closed)
        out.extend(_table(("Severity", "Code", "Subject"), rows, len(closed), max_rows))
        out.append("")
        out.append("</details>")
        out.append("")
    return out


def _summary(document: Mapping[str, Any]) -> str:
    state = document.get("state", {})
    facts, counts = state.get("facts", {}), state.get("counts", {})
    parts = [
        f"**{facts.get('dags', 0)} DAGs** ({facts.get('pausedDags', 0)} paused)",
        f"**{facts.get('assets', 0)} assets**",
        f"**{facts.get('tasks', 0)} tasks**",
        f"**{counts.get('lineageEdges', 0)} lineage edges** "
        f"({counts.get('lineageEdgesSkipped', 0)} external{links_part(document)})",
    ]
    line = " · ".join(parts)
    source = []
    if state.get("airflowVersion"):
        source.append(f"Airflow {_text(state['airflowVersion'])}")
    if state.get("capturedAt"):
        source.append(f"captured {_text(state['capturedAt'])}")
    source.append(f"fingerprint {_code(document.get('fingerprint') or 'none')}")
    extra = "".join(
        f"  \n{_text(as_sentence(said))}"
        for said in (*context_lines(document), freshness_line(document))
        if said
    )
    return f"{line}  \n{', '.join(source)}{extra}"


def _count_line(open_findings: list[dict[str, Any]], waived: int) -> str:
    line = f"{len(open_findings)} open ({severity_counts(open_findings)})" if open_findings else "none open"
    return f"{line}, {waived} waived" if waived else line


def _drift_section(document: Mapping[str, Any], drift: list[dict[str, Any]], max_rows: int) -> list[str]:
    out = ["### Drift since the baseline", ""]
    names = display_names(document)
    baseline = document.get("baseline") or {}
    if not baseline.get("evaluated"):
        out += [_text(as_sentence(baseline_sentence(document.get("baseline")))), ""]
        return out
    against = (
        f"the baseline {_code(baseline['fingerprint'])}" if baseline.get("fingerprint") else "the baseline"
    )
    if not drift:
        return [*out, f"No change against {against}: no new, removed or changed DAGs, assets or tasks.", ""]
    counts = Counter(f["code"] for f in drift)
    out.append(
        f"Against {against}: " + ", ".join(f"{n} {_code(code)}" for code, n in sorted(counts.items())) + "."
    )
    out.append("")
    rows = (
        [_text(f["severity"]), _code(f["code"]), _subject(f, names), _text(f.get("detail") or "")]
        for f in drift
    )
    out.extend(_table(("Severity", "Code", "Subject", "Detail"), rows, len(drift), max_rows))
    out.append("")
    return out


def _lineage_section(document: Mapping[str, Any], max_nodes: int) -> list[str]:
    out = ["### Lineage", ""]
    try:
        graph = LineageGraph.from_document(document)
    except ValueError as exc:
        return [*out, f"No picture: {_text(str(exc))}.", ""]
    if not graph.nodes:
        return [*out, "No asset lineage: no DAG in this estate produces or consumes an asset.", ""]
    if len(graph.nodes) > max_nodes:
        return [
            *out,
            f"The picture has {len(graph.nodes)} nodes, too many for a comment. Draw the neighbourhood "
            "of one DAG or asset with `airflow coremodels lineage --around ID`.",
            "",
        ]
    legend = (
        "Producing DAG → asset → consuming DAG. Dashed grey: paused or external; red border: open findings."
    )
    if any(via.startswith("inferred") for via in graph.via.values()):
        legend += (
            " A dashed arrow labelled `inferred from <dag_id>.<task_id>` was read off that task's SQL or"
            " transfer arguments, not declared (see docs/lineage.md)."
        )
    return [
        *out,
        legend,
        "",
        "```mermaid",
        to_mermaid(graph),
        "```",
        "",
    ]


def _table(header: Iterable[str], rows: Iterable[list[str]], total: int, max_rows: int) -> list[str]:
    header = list(header)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for i, row in enumerate(rows):
        if i == max_rows:
            break
        out.append("| " + " | ".join(row) + " |")
    if total > max_rows:
        out.append(f"\n… and {total - max_rows} more: run the audit with `--format table` for the full list.")
    return out


_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")
#: What GitHub (and GitLab) act on in plain text: an ``@`` mention (and an e-mail address), a URL
#: (``://``), ``www.``, a ``mailto:`` or ``xmpp:`` link, an ``#123`` reference. A word holding one is
#: written as inline code, where none of them is acted on.
_LIVE = re.compile(r"@|://|\bwww\.|\b(?:mailto|xmpp):|#\d", re.IGNORECASE)
#: What stays outside the code span around such a word: the punctuation of the sentence it is in.
_AROUND = re.compile(r"^([(\[{\"']*)(.*?)([)\]}\"'.,;:!?]*)$")


def _text(value: str) -> str:
    """Plain text in a cell or line: control characters escaped, markdown and HTML made inert, one
    line, and each word a comment would act on (a mention, an autolink, a reference) as inline code,
    which copies clean."""
    words = []
    for word in printable(str(value)).split():
        if _LIVE.search(word):
            lead, core, trail = _AROUND.match(word).groups()  # type: ignore[union-attr]  # matches any word
            if not _LIVE.search(core):  # the live part was the punctuation itself (``@`` alone)
                lead, core, trail = "", word, ""
            words.append(_plain(lead) + _code(core) + _plain(trail))
        else:
            words.append(_plain(word))
    return " ".join(words)


def _plain(value: str) -> str:
    """Text with markdown and HTML made inert (no word of it live: ``_text`` saw to that)."""
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", value)


def _subject(finding: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """The subject as code, and a DAG's display name beside it as text, where it has one."""
    shown = subject_text(finding, names)
    subject = str(finding["subject"])
    return _code(subject) + (f" {_text(shown[len(subject) + 1 :])}" if shown != subject else "")


def _code(value: str) -> str:
    """Inline code that survives any backticks or pipes inside it; control characters escaped first."""
    value = " ".join(printable(str(value)).split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"
