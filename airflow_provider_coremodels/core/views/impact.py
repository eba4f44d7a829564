"""The ``impact`` command's table and markdown views of an impact answer (``SnapshotQueries.impact``).

The answer is the one the MCP tool ``downstream_impact`` gives (its ``--format json``), computed
once in ``assistant/lineage.py``; this module only lays it out: a head line that says where the walk
started, which way it went and what it reached, then one row per affected DAG or asset, the
nearest first. Every cell from the estate is escaped (``printable`` for a terminal, the markdown
report's escaping for a comment).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.views.markdown import _code, _text

#: Rows a markdown view lists before it says how many more there are (a comment has a size limit).
MAX_MARKDOWN_ROWS = 200


def head_line(answer: Mapping[str, Any]) -> str:
    """``downstream of DAG load_orders (paused): 1 asset, 2 DAGs (1 active, 1 paused), 0 external;
    at most 2 edges away``: what the walk reached, counted over every affected node."""
    start, summary = answer["start"], answer["summary"]
    direction = answer.get("direction", "downstream")
    where = f"{direction} of {_kind_name(start)} {start['identity']}{_state(start, parenthesised=True)}"
    if not answer["affected"]["total"]:
        limit = f" within {answer['depth']} edge{_s(answer['depth'])}" if answer.get("depth") else ""
        return f"{where}: nothing{limit}"
    counts = (
        f"{summary['assets']} asset{_s(summary['assets'])}, {summary['dags']} DAG{_s(summary['dags'])} "
        f"({summary['activeDags']} active, {summary['pausedDags']} paused), "
        f"{summary['externalDags']} external"
    )
    reach = f"at most {summary['maxDistance']} edge{_s(summary['maxDistance'])} away"
    if answer.get("depth"):
        reach += f" (--depth {answer['depth']})"
    return f"{where}: {counts}; {reach}"


def rows(answer: Mapping[str, Any]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The columns and one row per affected node, as the answer lists them (the nearest first)."""
    items: Sequence[Mapping[str, Any]] = answer["affected"]["items"]
    downstream = answer.get("direction", "downstream") == "downstream"
    header = ["distance", "kind", "identity", "state", "owners"]
    with_team = any(item.get("team") for item in items)
    if with_team:
        header.append("team")
    header.append("reached from")
    with_via = any(item.get("via") for item in items)
    if with_via:
        header.append("via")
    if downstream:
        header.append("independent active producers")
    header.append("open findings")
    out = []
    for item in items:
        row = [str(item["distance"]), item["kind"], item["identity"], _state(item)]
        row.append(", ".join(item.get("owners") or ()))
        if with_team:
            row.append(item.get("team") or "")
        row.append(item["reachedFrom"])
        if with_via:
            row.append(item.get("via") or "")
        if downstream:
            row.append(_producers(item))
        row.append(", ".join(item.get("openFindings") or ()))
        out.append(tuple(row))
    return tuple(header), out


def render_impact_table(answer: Mapping[str, Any]) -> str:
    """For a terminal: the head line, then the rows aligned (escaped before widths are measured)."""
    lines = [printable(head_line(answer))]
    header, body = rows(answer)
    if body:
        cells = [tuple(column.upper() for column in header)]
        cells += [tuple(printable(cell) for cell in row) for row in body]
        widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
        lines.append("")
        for row in cells:
            padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def render_impact_markdown(answer: Mapping[str, Any], *, max_rows: int = MAX_MARKDOWN_ROWS) -> str:
    """For a pull-request comment or a ticket: a heading, the head line, a table cut at ``max_rows``."""
    start = answer["start"]
    direction = answer.get("direction", "downstream")
    out = [
        f"## CoreModels: {direction} of {_code(start['identity'])}",
        "",
        _text(head_line(answer)),
        "",
    ]
    header, body = rows(answer)
    if body:
        code_columns = {"identity", "owners", "reached from", "independent active producers", "open findings"}
        out.append("| " + " | ".join(column.capitalize() for column in header) + " |")
        out.append("|" + "---|" * len(header))
        for row in body[:max_rows]:
            cells = [
                _code(cell) if column in code_columns and cell else _text(cell)
                for column, cell in zip(header, row, strict=True)
            ]
            out.append("| " + " | ".join(cells) + " |")
        if len(body) > max_rows:
            out.append(f"\n… and {len(body) - max_rows} more: `impact --format table` lists them all.")
    return "\n".join(out).rstrip() + "\n"


def _kind_name(node: Mapping[str, Any]) -> str:
    return {"dag": "DAG", "asset": "asset"}.get(node["kind"], "external DAG")


def _state(node: Mapping[str, Any], *, parenthesised: bool = False) -> str:
    """``paused``, ``active``, ``external`` (a DAG); ``watched``, ``stale`` (an asset), or nothing."""
    if node["kind"] == "asset":
        words = [word for word, on in (("watched", node.get("watched")), ("stale", node.get("stale"))) if on]
    elif node["kind"] == "external" or node.get("paused") is None:
        words = ["external"] if node["kind"] == "external" else []
    else:
        words = ["paused" if node.get("paused") else "active"]
    text = ", ".join(words)
    return f" ({text})" if parenthesised and text else ("" if parenthesised else text)


def _producers(item: Mapping[str, Any]) -> str:
    """An asset's independent active producers (``a, b and 3 more``); nothing for a DAG."""
    if item["kind"] != "asset":
        return ""
    shown = list(item.get("independentActiveProducers") or ())
    total = int(item.get("independentActiveProducersTotal") or len(shown))
    if not total:
        return "none"
    more = total - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _s(count: int) -> str:
    return "" if count == 1 else "s"
