"""Render a snapshot document for people: a findings table with a summary, for terminals and task logs."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from airflow_provider_coremodels.core.audit import SEVERITY_RANK


def render_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)


def summary_line(document: dict[str, Any]) -> str:
    """One line of facts: what was audited and its fingerprint."""
    state = document["state"]
    facts, counts = state["facts"], state["counts"]
    parts = [
        f"{facts['dags']} DAGs ({facts['pausedDags']} paused)",
        f"{facts['assets']} assets",
        f"{facts['tasks']} tasks",
        f"{counts['lineageEdges']} lineage edges ({counts['lineageEdgesSkipped']} external)",
        f"fingerprint {document['fingerprint']}",
    ]
    return " · ".join(parts)


def findings_count_line(findings: list[dict[str, Any]]) -> str:
    if not findings:
        return "findings: none"
    by_severity = Counter(f["severity"] for f in findings)
    ordered = sorted(by_severity, key=lambda s: -SEVERITY_RANK.get(s, 0))
    return f"findings: {len(findings)} (" + ", ".join(f"{by_severity[s]} {s}" for s in ordered) + ")"


def finding_line(finding: dict[str, Any]) -> str:
    """A finding on one line, as it appears in a task log."""
    line = f"{finding['severity']} {finding['code']} {finding['subject']}: {finding['message']}"
    return f"{line} ({finding['detail']})" if finding.get("detail") else line


def render_table(document: dict[str, Any]) -> str:
    findings = sorted(
        document["findings"],
        key=lambda f: (-SEVERITY_RANK.get(f["severity"], 0), f["section"], f["code"], f["subject"]),
    )
    lines = [summary_line(document), _baseline_line(document), findings_count_line(findings)]
    if findings:
        rows = [("SEVERITY", "SECTION", "CODE", "SUBJECT", "DETAIL")]
        rows += [
            (f["severity"], f["section"], f["code"], f["subject"], f.get("detail") or "") for f in findings
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines.append("")
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append("  ".join([*cells, row[4]]).rstrip())
        lines.append("")
        messages = {f["code"]: f["message"] for f in findings}
        width = max(len(code) for code in messages)
        lines.extend(f"{code.ljust(width)}  {message}" for code, message in sorted(messages.items()))
    lossiness = document["lossiness"]
    if lossiness:
        lines.append("")
        lines.append(f"lossiness: {len(lossiness)} record{'s' if len(lossiness) != 1 else ''}")
        lines.extend(f"  {r['artifact']}: {r['message']}" for r in lossiness)
    return "\n".join(lines)


def _baseline_line(document: dict[str, Any]) -> str:
    baseline = document.get("baseline") or {}
    if baseline.get("evaluated"):
        fingerprint = baseline.get("fingerprint") or "(no fingerprint)"
        return f"coverage and drift: evaluated against baseline {fingerprint}"
    return f"coverage and drift: not evaluated ({baseline.get('reason') or 'no baseline given'})"
