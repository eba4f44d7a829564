"""Render a snapshot document for people: a findings table with a summary, for terminals and task logs.

Every line these functions return passes the estate's text through ``printable``: a control
character in a DAG id, an asset URI or a message is written as a visible escape (``\\x1b``,
``\\n``), so it can neither drive the terminal nor break a line. ``render_json`` is data and
stays exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from airflow_provider_coremodels.core.checks.teams import document_teams, grouped
from airflow_provider_coremodels.core.estate.model import DISPLAY_NAME_KEY
from airflow_provider_coremodels.core.estate.rules import POLICY, catalogue, most_severe_first, severity_rank
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.reading.owner_links import with_links


def render_json(document: dict[str, Any]) -> str:
    """The document, indented: exactly ``json.dumps(document, indent=2, ensure_ascii=False)``.

    msgspec writes the same bytes (tests/core/test_document.py checks it on arbitrary values)
    about seven times faster: at 10,000 DAGs ``json.dumps`` took as long as the audit itself.
    """
    return render_json_bytes(document).decode("utf-8")


def render_json_bytes(document: Any) -> bytes:
    """``render_json``'s text as UTF-8 bytes, which is what a command prints: a large document
    (80 MB at 10,000 DAGs) is then never also held as text, nor copied to add a newline."""
    return msgspec.json.format(msgspec.json.encode(document), indent=2)


def summary_line(document: dict[str, Any]) -> str:
    """One line of facts: what was audited and its fingerprint (control characters escaped)."""
    state = document["state"]
    facts, counts = state["facts"], state["counts"]
    parts = [
        f"{facts['dags']} DAGs ({facts['pausedDags']} paused)",
        f"{facts['assets']} assets",
        f"{facts['tasks']} tasks",
        f"{counts['lineageEdges']} lineage edges "
        f"({counts['lineageEdgesSkipped']} external{links_part(document)})",
        f"fingerprint {document['fingerprint']}",
    ]
    return printable(" · ".join(parts))


def dag_links_count(document: Mapping[str, Any]) -> int:
    """How many of a document's edges join two DAGs (a trigger or a sensor)."""
    lineage = document.get("lineage")
    if not isinstance(lineage, list):
        return 0
    return sum(
        1
        for e in lineage
        if isinstance(e, Mapping) and e.get("dependentKind") == e.get("dependsOnKind") == "dag"
    )


def links_part(document: Mapping[str, Any]) -> str:
    """``, N between DAGs`` for the counts line's parenthesis, where a trigger or sensor links two."""
    count = dag_links_count(document)
    return f", {count} between DAGs (trigger or sensor)" if count else ""


def findings_count_line(findings: list[dict[str, Any]]) -> str:
    """How many findings by severity; waived ones are counted apart, since they never fail a run."""
    open_findings = [f for f in findings if not f.get("waived")]
    waived = len(findings) - len(open_findings)
    line = (
        f"findings: {len(open_findings)} ({severity_counts(open_findings)})"
        if open_findings
        else "findings: none"
    )
    return f"{line}; {waived} waived" if waived else line


def severity_breakdown(findings: Iterable[Mapping[str, Any]]) -> list[tuple[str, int]]:
    """How many findings of each severity, the most severe first: every view's breakdown."""
    by_severity = Counter(str(f["severity"]) for f in findings)
    return [(severity, by_severity[severity]) for severity in most_severe_first(by_severity)]


def severity_counts(findings: Iterable[Mapping[str, Any]]) -> str:
    """``3 Warning, 1 Info``: the breakdown as text (control characters escaped)."""
    return printable(", ".join(f"{count} {severity}" for severity, count in severity_breakdown(findings)))


def baseline_sentence(baseline: Any) -> str:
    """Whether coverage and drift were compared with a baseline, and if not, why (the document's
    ``baseline`` object): the same words in the table, the markdown report and the UI page, with
    control characters escaped."""
    if not isinstance(baseline, Mapping):
        return "coverage and drift: this snapshot does not say whether a baseline was compared"
    if baseline.get("evaluated"):
        return printable(
            f"coverage and drift: evaluated against baseline {baseline.get('fingerprint') or '(unknown)'}"
        )
    return printable(f"coverage and drift: not evaluated ({baseline.get('reason') or 'no baseline given'})")


def deployments_line(document: Mapping[str, Any]) -> str | None:
    """A merged document's deployments, and which of them stand in with an old snapshot; None
    for one deployment's document."""
    state = document.get("state")
    names = state.get("deployments") if isinstance(state, Mapping) else None
    if not isinstance(names, list) or not names:
        return None
    records = document.get("lossiness")
    stale = sorted(
        str(r["subject"])
        for r in (records if isinstance(records, list) else [])
        if isinstance(r, Mapping) and r.get("artifact") == "snapshot" and r.get("subject") in names
    )
    line = f"deployments: {len(names)} merged ({', '.join(str(n) for n in names)})"
    joins = []  # who claims what across deployments (core/reading/merge.py attributes each joining asset)
    for dataset in document.get("datasets") or ():
        metadata = dataset.get("metadata") if isinstance(dataset, Mapping) else None
        if isinstance(metadata, Mapping) and (
            "airflow.producedIn" in metadata or "airflow.consumedIn" in metadata
        ):
            joins.append(
                f"{dataset.get('identity')} (produced in {metadata.get('airflow.producedIn') or 'none'}, "
                f"read in {metadata.get('airflow.consumedIn') or 'none'})"
            )
    if joins:
        shown = "; ".join(sorted(joins)[:3]) + ("; ..." if len(joins) > 3 else "")
        line += f"; {len(joins)} asset{'s' if len(joins) != 1 else ''} across them: {shown}"
    return printable(line + (f"; stale: {', '.join(stale)}" if stale else ""))


def import_errors_line(document: Mapping[str, Any]) -> str | None:
    """The files that do not import and how many DAGs they hold (the document's ``importErrors``);
    None when every file imports. Each file has its ``dag-import-error`` finding besides."""
    files = document.get("importErrors")
    broken = [f for f in files if isinstance(f, Mapping)] if isinstance(files, list) else []
    if not broken:
        return None
    dags = sum(len(f["dags"]) for f in broken if isinstance(f.get("dags"), list))
    files_word = "file" if len(broken) == 1 else "files"
    dags_word = "DAG" if dags == 1 else "DAGs"
    return f"import errors: {len(broken)} {files_word} not importing, {dags} {dags_word} not running"


def context_lines(document: Mapping[str, Any]) -> list[str]:
    """The lines every view shows under the summary, where they apply: the merged deployments, the
    files that do not import, what the asset model added, and how the team's rules ran."""
    return [
        line
        for line in (
            deployments_line(document),
            import_errors_line(document),
            asset_model_line(document),
            policy_line(document),
        )
        if line
    ]


def policy_line(document: Mapping[str, Any]) -> str | None:
    """How the team's rules ran (the document's ``policy`` part): how many, which (their digest),
    what they found and what they could not check; None where no rules were given."""
    part = document.get("policy")
    if not isinstance(part, Mapping):
        return None
    if not part.get("digest"):
        return printable(f"policy: not checked ({part.get('reason') or 'no rules given'})")
    rules = part.get("rules")
    count = len(rules) if isinstance(rules, list) else 0
    findings = document.get("findings")
    found = sum(
        1
        for f in (findings if isinstance(findings, list) else [])
        if isinstance(f, Mapping) and f.get("section") == POLICY
    )
    line = (
        f"policy: {count} rule{'' if count == 1 else 's'} (digest {part['digest']}), "
        f"{found} finding{'' if found == 1 else 's'}"
    )
    unchecked = part.get("notChecked")
    if isinstance(unchecked, Mapping) and unchecked:
        counted = [(str(why), n) for why, n in unchecked.items() if isinstance(n, int)]
        total = sum(n for _, n in counted)
        line += f"; {total} not checked (" + ", ".join(f"{why}: {n}" for why, n in counted) + ")"
    if (teams := document_teams(document)) is not None:
        line += f"; teams: {', '.join(teams)}"
    return printable(line)


def freshness_line(document: Mapping[str, Any]) -> str | None:
    """How the freshness rules judged (the document's ``freshness`` part): when, how strictly, how
    many assets were stale or had failing producers, and what could not be judged and why. None
    for a document from before them. Counts and this package's own reasons only."""
    part = document.get("freshness")
    if not isinstance(part, Mapping) or "judgedAt" not in part:
        return None
    if not part.get("judgedAt"):
        return printable(f"freshness: not judged ({part.get('reason') or 'no reason given'})")
    findings = document.get("findings")
    codes = Counter(
        f.get("code") for f in (findings if isinstance(findings, list) else []) if isinstance(f, Mapping)
    )
    judged = part.get("judged") if isinstance(part.get("judged"), int) else 0
    partitioned = part.get("partitionedJudged")
    whole = (
        f" ({partitioned} with partitioned producers: per asset, not per partition)"
        if isinstance(partitioned, int) and not isinstance(partitioned, bool) and partitioned > 0
        else ""
    )
    tolerance = part.get("tolerance")
    line = (
        f"freshness at {part['judgedAt']}"
        + (f" (tolerance {tolerance:g})" if isinstance(tolerance, (int, float)) else "")
        + f": {judged} asset{'' if judged == 1 else 's'} judged{whole}, "
        f"{codes['asset-stale']} stale, {codes['producer-failing']} with failing producers"
    )
    unjudged = part.get("notJudged")
    if isinstance(unjudged, Mapping) and unjudged:
        counted = [(str(why), n) for why, n in unjudged.items() if isinstance(n, int)]
        total = sum(n for _, n in counted)
        line += f"; {total} not judged (" + ", ".join(f"{why}: {n}" for why, n in counted) + ")"
    return printable(line)


def asset_model_line(document: Mapping[str, Any]) -> str | None:
    """What Airflow 3's asset model added to the lineage: edges through ``Asset.ref``, aliases and
    inlets, watched assets, conflicts; None where none of it occurs (every view shows the same).
    Only counts: no text from the estate reaches it."""

    def items(key: str) -> list[Mapping[str, Any]]:  # a damaged document (the UI page's) never raises
        value = document.get(key)
        return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []

    vias = Counter(
        "alias" if str(e.get("via")).startswith("alias:") else str(e.get("via"))
        for e in items("lineage")
        if e.get("via")
    )
    watched = sum(
        d.get("materialization") == "asset"
        and isinstance(d.get("metadata"), Mapping)
        and d["metadata"].get("airflow.watched") == "true"
        for d in items("datasets")
    )
    conflicts = sum(f.get("code") == "asset-conflict" for f in items("findings"))
    counts = (
        (vias["ref"], "edge through Asset.ref", "edges through Asset.ref"),
        (vias["alias"], "edge through an alias", "edges through aliases"),
        (vias["inlet"], "edge from a task inlet", "edges from task inlets"),
        (watched, "watched asset", "watched assets"),
        (conflicts, "asset conflict", "asset conflicts"),
    )
    parts = [f"{count} {one if count == 1 else many}" for count, one, many in counts if count]
    return f"asset model: {', '.join(parts)}" if parts else None


def as_sentence(line: str) -> str:
    """A summary line as a sentence of prose (capitalised, with a full stop), for the report and the page."""
    return line[:1].upper() + line[1:] + "."


def display_names(document: Mapping[str, Any]) -> dict[str, str]:
    """The DAGs Airflow's UI names otherwise than by their dag_id (``dag_display_name``), by identity."""
    datasets = document.get("datasets")
    names = {}
    for dataset in datasets if isinstance(datasets, list) else ():
        metadata = dataset.get("metadata") if isinstance(dataset, Mapping) else None
        name = metadata.get(DISPLAY_NAME_KEY) if isinstance(metadata, Mapping) else None
        if isinstance(name, str) and name and dataset.get("materialization") == "dag":
            names[str(dataset.get("identity"))] = name
    return names


def subject_text(
    finding: Mapping[str, Any], names: Mapping[str, str], rules: Mapping[str, Any] | None = None
) -> str:
    """A finding's subject as people read it: a DAG's display name beside its dag_id, where it has one.

    ``rules`` is the document's ``catalogue`` (default: the built-in rules; a code it does not know
    may name a DAG)."""
    subject = str(finding["subject"])
    rule = (rules if rules is not None else _BUILT_IN).get(str(finding.get("code")))
    shown = names.get(subject) if rule is None or rule.about in ("dag", "dataset") else None
    return f"{subject} “{shown}”" if shown else subject


_BUILT_IN = catalogue()


def finding_line(finding: dict[str, Any], names: Mapping[str, str] | None = None) -> str:
    """A finding on one line, as it appears in a task log: control characters escaped, so it is one line."""
    subject = subject_text(finding, names or {})
    line = f"{finding['severity']} {finding['code']} {subject}: {finding['message']}"
    if finding.get("detail"):
        line += f" ({finding['detail']})"
    return printable(f"{line} [{waived_text(finding['waived'])}]" if finding.get("waived") else line)


def waived_text(waived: dict[str, Any]) -> str:
    text = f"waived: {waived.get('reason') or 'no reason given'}"
    return f"{text}, until {waived['expires']}" if waived.get("expires") else text


def table_order(finding: Mapping[str, Any]) -> tuple[int, str, str, str]:
    """The order people read findings in (the table, the UI page): the most severe first, then
    section, code and subject. The document itself lists them by section, code and subject."""
    return (
        -severity_rank(str(finding.get("severity") or "")),
        str(finding.get("section") or ""),
        str(finding.get("code") or ""),
        str(finding.get("subject") or ""),
    )


#: How many opened findings and affected DAGs the change's lines name before "and N more".
CHANGE_NAMES = 5


def change_lines(change: Mapping[str, Any], names_shown: int = CHANGE_NAMES) -> list[str]:
    """A change (the document's ``change`` part) in three lines, then what it opens: what it does
    in counts, what it breaks (each dependency it cuts for another DAG: the DAG, its owners, what it
    is reached through and the finding that says so, the most severe first), and whom it affects
    (each DAG downstream of a cut or changed edge, with its owners); then the findings it opens.
    Plain text, not yet escaped."""
    opened = sorted(change.get("findingsOpened", ()), key=table_order)
    closed = change.get("findingsClosed", ())
    baseline = change.get("baseline")
    where = f"bundle {change.get('bundle')}" + (
        f", against baseline {baseline}" if baseline else ", no baseline"
    )
    base = change.get("base")
    if isinstance(base, dict):  # --base: the pull request's own diff, in the deployed estate
        commit = base.get("commit")
        judged = (
            f"merge base {str(commit)[:12]} of {base.get('ref')}"
            if commit
            else f"base folder {base.get('ref')}"
        )
        where = (
            f"bundle {change.get('bundle')}, {judged} applied to deployed baseline {baseline}; "
            f"{base.get('filesParsed')} of {base.get('filesListed')} files parsed"
            + (" (--full)" if base.get("full") else "")
        )
    parts = [
        f"opens {len(opened)} finding{_s(len(opened))}"
        + (f" ({severity_counts([f for f in opened if not f.get('waived')])})" if opened else ""),
        f"closes {len(closed)}",
    ]
    for key, verb in (("dagsAdded", "added"), ("dagsRemoved", "removed"), ("dagsChanged", "changed")):
        count = len(change.get(key, ()))
        if count:
            parts.append(f"{count} DAG{_s(count)} {verb}")
    added, removed = len(change.get("lineageAdded", ())), len(change.get("lineageRemoved", ()))
    if added or removed:
        parts.append(f"lineage +{added} -{removed}")
    if not any(
        (
            opened,
            closed,
            added,
            removed,
            *(change.get(k) for k in ("dagsAdded", "dagsRemoved", "dagsChanged")),
        )
    ):
        return [
            f"This change ({where}): no change: the folder parses to the estate the baseline holds",
            *isolation_line(change),
        ]
    severity = {(f.get("code"), f.get("subject")): f.get("severity") for f in opened}
    breaks = []
    for cut in change.get("breaks", ()):
        code, subject = cut["finding"]["code"], cut["finding"]["subject"]
        said = f"{severity.get((code, subject), '')} {code}".lstrip()
        breaks.append(
            f"{cut['dependent']} ({', '.join(cut.get('owners') or ()) or 'no owner'}) through "
            f"{cut['through']}: {said}" + ("" if subject == cut["through"] else f" {subject}")
        )
    affected = [
        f"{a['dag']} ({with_links(a.get('owners') or (), a.get('ownerLinks') or {}) or 'no owner'}) "
        f"through {a['through']}"
        for a in change.get("affected", ())
    ]
    out = [
        f"This change ({where}): {', '.join(parts)}",
        *isolation_line(change),
        "breaks: "
        + (
            _named(breaks, names_shown)
            if breaks
            else "nothing (no other DAG loses an asset or a DAG it depends on)"
        ),
        "affects: "
        + (_named(affected, names_shown) if affected else "no DAG downstream of a cut or changed edge"),
    ]
    if opened:
        out.append(
            "opens: "
            + _named(
                [
                    f"{f['severity']} {f['code']} {f['subject']}" + (" (waived)" if f.get("waived") else "")
                    for f in opened
                ],
                names_shown,
            )
        )
    if isinstance(change.get("teamsAffected"), list):
        out.append("teams: " + (", ".join(map(str, change["teamsAffected"])) or "none"))
    return out


def isolation_line(change: Mapping[str, Any]) -> list[str]:
    """How the DAG code of a pre-merge run was isolated, said second in every view: a sandbox, or
    a process only (and why); nothing for a change that ran no DAG code (``compare``)."""
    kind, detail = change.get("isolation"), change.get("isolationDetail")
    if kind == "sandbox":
        return [f"isolation: the DAG code ran in a sandbox ({detail})"]
    if kind == "process":
        return [f"isolation: the DAG code ran in a process only, not a sandbox ({detail})"]
    return []


def _named(items: list[str], shown: int) -> str:
    text = "; ".join(items[:shown])
    return f"{text}; and {len(items) - shown} more" if len(items) > shown else text


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def render_table(document: dict[str, Any]) -> str:
    """The summary lines, a findings table and what the codes mean, then the lossiness records.
    A pre-merge check's document (with a ``change`` part) says first what the change does.

    Every cell and line from the estate is escaped (``printable``) before the column widths are
    measured, so a control character can neither drive the terminal nor break a row.
    """
    findings = sorted(document["findings"], key=table_order)
    change = document.get("change")
    lines = [printable(line) for line in change_lines(change)] + [""] if isinstance(change, dict) else []
    lines += [
        summary_line(document),
        *context_lines(document),
        baseline_sentence(document.get("baseline")),
        *filter(None, [freshness_line(document)]),
        findings_count_line(findings),
    ]
    if findings:
        names = display_names(document)
        rules = catalogue(document)

        def row(f: Mapping[str, Any]) -> tuple[str, ...]:
            detail = "; ".join(
                p for p in (f.get("detail"), f.get("waived") and waived_text(f["waived"])) if p
            )
            subject = subject_text(f, names, rules)
            return tuple(printable(str(c)) for c in (f["severity"], f["section"], f["code"], subject, detail))

        header = ("SEVERITY", "SECTION", "CODE", "SUBJECT", "DETAIL")
        teams = document_teams(document)
        # with teams, each team's findings under its name (a finding of two teams under both)
        groups = list(grouped(findings, teams)) if teams is not None else [("", findings)]
        table = [(name, [row(f) for f in group]) for name, group in groups]
        rows = [header, *(r for _, group_rows in table for r in group_rows)]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]

        def line(r: tuple[str, ...]) -> str:
            cells = [cell.ljust(width) for cell, width in zip(r, widths, strict=False)]
            return "  ".join([*cells, r[4]]).rstrip()

        lines.append("")
        lines.append(line(header))
        for name, group_rows in table:
            if name:
                lines.append(printable(f"team {name}: {len(group_rows)} finding{_s(len(group_rows))}"))
            lines.extend(line(r) for r in group_rows)
        lines.append("")
        messages = {printable(f["code"]): printable(f["message"]) for f in findings}
        width = max(len(code) for code in messages)
        lines.extend(f"{code.ljust(width)}  {message}" for code, message in sorted(messages.items()))
    lossiness = document["lossiness"]
    if lossiness:
        lines.append("")
        lines.append(f"lossiness: {len(lossiness)} record{'s' if len(lossiness) != 1 else ''}")
        lines.extend(printable(f"  {r['artifact']}: {r['message']}") for r in lossiness)
    return "\n".join(lines)
