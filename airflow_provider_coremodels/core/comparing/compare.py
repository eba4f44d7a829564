"""Two stored snapshots compared: which findings opened and closed, and what of the estate came
and went (DAGs and assets, tasks, lineage edges).

Pure: each snapshot's bytes in (``read_side``), a ``Comparison`` out, and its three views (a
table for terminals, markdown for a pull-request comment, JSON for scripts). A finding is known
by its code and subject, as waivers know it; a finding is open when it is not waived. The estate
is compared in full: a DAG that came brings its tasks and edges along, each listed (an audit's
drift findings name such a change once, by its DAG). What the documents cannot tell is never
called a change: the tasks of a DAG whose task list a capture could not read completely are not
"removed", nor is lineage that was not read at all; ``not_compared`` says what was left out.
One team's view (``compare(..., team=...)``) keeps its findings and the drift of its DAGs alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from airflow_provider_coremodels.core.checks.audit import _edge_detail, edge_subject
from airflow_provider_coremodels.core.checks.teams import (
    UNOWNED,
    Teams,
    document_teams,
    finding_teams,
    teams_from_json,
)
from airflow_provider_coremodels.core.comparing.change import Change, change_json, describe
from airflow_provider_coremodels.core.comparing.changes import FindingKey, finding_key, opened_and_closed
from airflow_provider_coremodels.core.estate.model import DAG, Dataset, Edge, Estate, Materialization
from airflow_provider_coremodels.core.estate.rules import failing_findings, severity_rank
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.snapshots.document import edge_json, load_document
from airflow_provider_coremodels.core.views.markdown import _code, _text
from airflow_provider_coremodels.core.views.render import severity_counts
from airflow_provider_coremodels.errors import SnapshotDocumentError

#: Rows per section in the markdown view: a comment box has room for so much.
MAX_MARKDOWN_ROWS = 50


# -- the two sides --------------------------------------------------------------------------


class StoredFinding(msgspec.Struct, frozen=True):
    """A finding as a stored document holds it."""

    section: str
    severity: str
    code: str
    subject: str
    message: str = ""
    detail: str | None = None
    waived: Any = None
    team: Any = None  # the teams it belongs to, where the rules file named teams


class _Findings(msgspec.Struct, rename="camel"):
    findings: list[StoredFinding] = []
    snapshot_stored: bool = True
    policy: Any = None


_FINDINGS = msgspec.json.Decoder(_Findings)


@dataclass(frozen=True, slots=True)
class Side:
    """One snapshot of a comparison: ``source`` as the user named it, ``location`` where it was
    read; ``estate`` is None when it was stored without datasets and lineage (over the cap)."""

    source: str
    location: str
    fingerprint: str | None
    captured_at: str | None
    estate: Estate | None
    findings: tuple[StoredFinding, ...]
    #: The teams the snapshot was audited with (None: none), names and what makes a DAG each's.
    teams: tuple[str, ...] | None = None
    team_rules: Teams | None = None

    def of_team(self, team: str) -> Side:
        """The side as one team sees it: only its findings (``compare``'s ``of_team`` then keeps
        the drift of its DAGs)."""
        mine = tuple(f for f in self.findings if team in finding_teams({"team": f.team}))
        return dataclasses.replace(self, findings=mine)

    @property
    def open(self) -> list[StoredFinding]:
        return [f for f in self.findings if not f.waived]

    def as_dict(self) -> dict[str, Any]:
        open_findings = self.open
        return {
            "source": self.source,
            "location": self.location,
            "fingerprint": self.fingerprint,
            "capturedAt": self.captured_at,
            "snapshotStored": self.estate is not None,
            "open": dict(_by_severity(open_findings)),
            "waived": len(self.findings) - len(open_findings),
        }


def read_side(source: str, location: str, data: bytes) -> Side:
    """A stored document's bytes as one side; ``SnapshotDocumentError`` (naming ``location``)
    when they are no snapshot document or its findings are malformed."""
    try:
        stored = load_document(data)
        try:
            parts = _FINDINGS.decode(data)
        except msgspec.ValidationError as exc:
            raise SnapshotDocumentError(f"has invalid findings: {exc}") from None
    except SnapshotDocumentError as exc:
        raise exc.with_source(location) from None
    return Side(
        source,
        location,
        stored.fingerprint,
        stored.state.captured_at,
        stored.estate if parts.snapshot_stored else None,
        tuple(parts.findings),
        document_teams({"policy": parts.policy}),
        teams_from_json(parts.policy.get("teams")) if isinstance(parts.policy, dict) else None,
    )


# -- the comparison -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FindingChange:
    """A finding that opened (``how``: ``new``, or ``unwaived`` when its waiver went) or closed
    (``how``: ``resolved``, or ``waived``)."""

    finding: StoredFinding
    how: str

    def as_dict(self) -> dict[str, Any]:
        f = self.finding
        return {
            "section": f.section,
            "severity": f.severity,
            "code": f.code,
            "subject": f.subject,
            "message": f.message,
            "detail": f.detail,
            "how": self.how,
            **({"team": f.team} if f.team is not None else {}),
        }


@dataclass(frozen=True, slots=True)
class FieldChange:
    """A task added, removed, or whose operator class changed (``was`` the old one)."""

    dataset: str
    name: str
    native_type: str
    was: str | None = None

    @property
    def subject(self) -> str:
        """As findings name a task: ``dag_id.task_id``."""
        return f"{self.dataset}.{self.name}"

    def as_dict(self) -> dict[str, Any]:
        out = {
            "subject": self.subject,
            "dataset": self.dataset,
            "name": self.name,
            "nativeType": self.native_type,
        }
        if self.was is not None:
            out["was"] = self.was
        return out


@dataclass(frozen=True, slots=True)
class Comparison:
    old: Side
    new: Side
    opened: tuple[FindingChange, ...]
    closed: tuple[FindingChange, ...]
    datasets_added: tuple[tuple[str, str], ...]  # (materialization, identity)
    datasets_removed: tuple[tuple[str, str], ...]
    fields_added: tuple[FieldChange, ...]
    fields_removed: tuple[FieldChange, ...]
    fields_changed: tuple[FieldChange, ...]
    edges_added: tuple[Edge, ...]
    edges_removed: tuple[Edge, ...]
    not_compared: tuple[str, ...]
    #: What ``audit --dag-folder`` calls the change (``core/comparing/change.py``), the findings aside: the
    #: DAGs that came, went or changed, and every DAG downstream of what changed; None when a side
    #: was stored without its estate.
    change: Change | None = None
    #: The team whose view this is (``compare --team``): its findings, and the drift of its DAGs.
    team: str | None = None

    @property
    def unchanged(self) -> bool:
        """Nothing opened or closed, and nothing of the estate came, went or changed."""
        return not any(
            (
                self.opened,
                self.closed,
                self.datasets_added,
                self.datasets_removed,
                self.fields_added,
                self.fields_removed,
                self.fields_changed,
                self.edges_added,
                self.edges_removed,
            )
        )

    def failing(self, fail_on: str) -> list[dict[str, Any]]:
        """The findings opened at or above ``fail_on``: what fails a ``compare --fail-on`` run."""
        return failing_findings([change.as_dict() for change in self.opened], fail_on)

    def counts(self) -> dict[str, dict[str, int]]:
        return {
            "findings": {"opened": len(self.opened), "closed": len(self.closed)},
            "datasets": {"added": len(self.datasets_added), "removed": len(self.datasets_removed)},
            "fields": {
                "added": len(self.fields_added),
                "removed": len(self.fields_removed),
                "changed": len(self.fields_changed),
            },
            "lineage": {"added": len(self.edges_added), "removed": len(self.edges_removed)},
        }


def compare(old: Side, new: Side, *, team: str | None = None, teams: Teams | None = None) -> Comparison:
    """What changed from ``old`` to ``new``: findings by (code, subject), the estate in full; with
    ``team``, as that team sees it (``of_team``)."""
    if team is not None:
        return of_team(compare(old.of_team(team), new.of_team(team)), team, teams)
    opened, closed = _finding_changes(old, new)
    not_compared: list[str] = []
    datasets_added: list[tuple[str, str]] = []
    datasets_removed: list[tuple[str, str]] = []
    fields: tuple[list[FieldChange], list[FieldChange], list[FieldChange]] = ([], [], [])
    edges_added: list[Edge] = []
    edges_removed: list[Edge] = []
    missing = [side for side in (old, new) if side.estate is None]
    if missing:
        which = " and ".join(f"{'OLD' if side is old else 'NEW'} ({side.source})" for side in missing)
        not_compared.append(
            f"datasets, fields and lineage: {which} was stored without datasets and lineage "
            "(it exceeded the snapshot cap)"
        )
    else:
        assert old.estate is not None and new.estate is not None
        then = {(d.materialization, d.identity): d for d in old.estate.datasets}
        now = {(d.materialization, d.identity): d for d in new.estate.datasets}
        datasets_added = sorted(now.keys() - then.keys())
        datasets_removed = sorted(then.keys() - now.keys())
        fields = _field_changes(old.estate, new.estate, then, now, not_compared)
        if old.estate.lineage_known() and new.estate.lineage_known():
            edges_then = {e.key: e for e in old.estate.lineage}
            edges_now = {e.key: e for e in new.estate.lineage}
            edges_added = [edges_now[k] for k in sorted(edges_now.keys() - edges_then.keys())]
            edges_removed = [edges_then[k] for k in sorted(edges_then.keys() - edges_now.keys())]
        else:
            unread = [
                "OLD" if side is old else "NEW"
                for side, estate in ((old, old.estate), (new, new.estate))
                if not estate.lineage_known()
            ]
            not_compared.append(
                f"lineage: the datasets artifact of {' and '.join(unread)} was not read, "
                "so its edges are unknown"
            )
    fields_added, fields_removed, fields_changed = fields
    change = None
    if old.estate is not None and new.estate is not None:
        change = describe(old.estate, new.estate, (), (), baseline=old.fingerprint)
    return Comparison(
        old,
        new,
        tuple(opened),
        tuple(closed),
        tuple(datasets_added),
        tuple(datasets_removed),
        tuple(fields_added),
        tuple(fields_removed),
        tuple(fields_changed),
        tuple(edges_added),
        tuple(edges_removed),
        tuple(not_compared),
        change,
    )


class _TeamView:
    """Which DAGs, assets and edges of two estates are one team's. A DAG is the team's when its
    team is, in the newer estate, or for a DAG gone, in the older one (a DAG that moved between
    teams is in both teams' views); a DAG of neither estate (an external one) is of no team. An
    edge is the team's when one of its DAG ends is; an asset, when one of the team's DAGs produces
    or consumes it in either estate (an asset no DAG touches is of no team)."""

    def __init__(self, team: str, old: Side, new: Side, teams: Teams | None) -> None:
        assert old.estate is not None and new.estate is not None
        self.team = team
        then_teams = teams or old.team_rules or new.team_rules
        now_teams = teams or new.team_rules or old.team_rules
        self.names: dict[str, set[str]] = {}
        for estate, rules in ((new.estate, now_teams), (old.estate, then_teams)):
            for dag in estate.dags():
                found = rules.team_of(dag) if rules is not None else None
                self.names.setdefault(dag.identity, set()).add(found or UNOWNED)
        self.assets: dict[str, set[str]] = {}
        for estate in (old.estate, new.estate):
            for edge in estate.lineage:
                if edge.dag_link:
                    continue
                self.assets.setdefault(edge.asset, set()).update(self.names.get(edge.dag_id, {UNOWNED}))

    def dag(self, identity: str) -> bool:
        return self.team in self.names.get(identity, {UNOWNED})

    def edge(self, edge: Edge) -> bool:
        ends = [(edge.dependent_kind, edge.dependent), (edge.depends_on_kind, edge.depends_on)]
        return any(self.dag(name) for kind, name in ends if kind == DAG)

    def dataset(self, key: tuple[str, str]) -> bool:
        kind, identity = key
        if kind == DAG:
            return self.dag(identity)
        return self.team in self.assets.get(identity, {UNOWNED})


def of_team(c: Comparison, team: str, teams: Teams | None = None) -> Comparison:
    """The comparison as ``team`` sees it (``unowned``: the DAGs of no team): the drift of its DAGs
    alone (``_TeamView``), their tasks, the edges touching them, the assets they touch, and in
    ``change`` its DAGs added, removed, changed and affected downstream. Each DAG's team is as
    ``teams`` (the rules file given) says, else as each side's own recorded teams say. The
    findings are the sides' (filter them with ``Side.of_team`` first, as ``compare`` does)."""
    if c.old.estate is None or c.new.estate is None:
        return dataclasses.replace(c, team=team)
    view = _TeamView(team, c.old, c.new, teams)
    change = c.change
    if change is not None:
        change = dataclasses.replace(
            change,
            lineage_added=tuple(e for e in change.lineage_added if view.edge(e)),
            lineage_removed=tuple(e for e in change.lineage_removed if view.edge(e)),
            dags_added=tuple(d for d in change.dags_added if view.dag(d)),
            dags_removed=tuple(d for d in change.dags_removed if view.dag(d)),
            dags_changed=tuple(d for d in change.dags_changed if view.dag(d)),
            affected=tuple(a for a in change.affected if view.dag(a.dag)),
        )
    return dataclasses.replace(
        c,
        datasets_added=tuple(k for k in c.datasets_added if view.dataset(k)),
        datasets_removed=tuple(k for k in c.datasets_removed if view.dataset(k)),
        fields_added=tuple(f for f in c.fields_added if view.dag(f.dataset)),
        fields_removed=tuple(f for f in c.fields_removed if view.dag(f.dataset)),
        fields_changed=tuple(f for f in c.fields_changed if view.dag(f.dataset)),
        edges_added=tuple(e for e in c.edges_added if view.edge(e)),
        edges_removed=tuple(e for e in c.edges_removed if view.edge(e)),
        change=change,
        team=team,
    )


def _finding_changes(old: Side, new: Side) -> tuple[list[FindingChange], list[FindingChange]]:
    """Opened and closed as alerts count new and resolved (``opened_and_closed``); a finding
    present but waived on the other side was unwaived or waived rather than new or resolved."""
    opened, closed = opened_and_closed(old.open, new.open, _key)
    all_then, all_now = {_key(f) for f in old.findings}, {_key(f) for f in new.findings}
    opened_how = [FindingChange(f, "unwaived" if _key(f) in all_then else "new") for f in opened]
    closed_how = [FindingChange(f, "waived" if _key(f) in all_now else "resolved") for f in closed]
    return _most_severe_first(opened_how), _most_severe_first(closed_how)


def _key(finding: StoredFinding) -> FindingKey:
    return finding_key(finding.code, finding.subject)


def _most_severe_first(changes: list[FindingChange]) -> list[FindingChange]:
    return sorted(
        changes,
        key=lambda c: (
            -severity_rank(c.finding.severity),
            c.finding.section,
            c.finding.code,
            c.finding.subject,
        ),
    )


def _field_changes(
    old: Estate,
    new: Estate,
    then: Mapping[tuple[Materialization, str], Dataset],
    now: Mapping[tuple[Materialization, str], Dataset],
    not_compared: list[str],
) -> tuple[list[FieldChange], list[FieldChange], list[FieldChange]]:
    """Tasks added, removed and changed. A task list a capture could not read whole (a tasks
    lossiness record) tells no task's absence: a DAG's tasks are "added" only where OLD saw its
    whole list, "removed" only where NEW did."""
    unknown_then, unknown_now = old.fields_unknown(), new.fields_unknown()

    def known(unknown: set[str] | None, dag_id: str) -> bool:
        return unknown is not None and dag_id not in unknown

    added: list[FieldChange] = []
    removed: list[FieldChange] = []
    changed: list[FieldChange] = []
    unsure = 0
    for key in sorted(then.keys() | now.keys()):
        if key[0] != DAG:
            continue
        dag_id = key[1]
        before = {f.name: f for f in then[key].fields} if key in then else None
        after = {f.name: f for f in now[key].fields} if key in now else None
        if before is not None and after is not None:
            sure_added, sure_removed = known(unknown_then, dag_id), known(unknown_now, dag_id)
            unsure += not (sure_added and sure_removed)
            if sure_added:
                added += [FieldChange(dag_id, n, f.native_type) for n, f in after.items() if n not in before]
            if sure_removed:
                removed += [
                    FieldChange(dag_id, n, f.native_type) for n, f in before.items() if n not in after
                ]
            changed += [
                FieldChange(dag_id, n, f.native_type, was=before[n].native_type)
                for n, f in after.items()
                if n in before and before[n].native_type != f.native_type
            ]
        elif after is not None:  # a new DAG: every task it has is new
            added += [FieldChange(dag_id, n, f.native_type) for n, f in after.items()]
        elif before is not None:  # a DAG gone: every task it had is gone
            removed += [FieldChange(dag_id, n, f.native_type) for n, f in before.items()]
    if unsure:
        not_compared.append(
            f"tasks of {unsure} DAG{'s' if unsure != 1 else ''}: a capture could not read the whole task "
            "list (see its lossiness), so tasks missing from it are not called added or removed"
        )
    return added, removed, changed


# -- the views ------------------------------------------------------------------------------


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    c = comparison
    return {
        **({"team": c.team} if c.team is not None else {}),
        "old": c.old.as_dict(),
        "new": c.new.as_dict(),
        "unchanged": c.unchanged,
        "counts": c.counts(),
        "findings": {
            "opened": [change.as_dict() for change in c.opened],
            "closed": [change.as_dict() for change in c.closed],
        },
        "datasets": {
            "added": [{"materialization": m, "identity": i} for m, i in c.datasets_added],
            "removed": [{"materialization": m, "identity": i} for m, i in c.datasets_removed],
        },
        "fields": {
            "added": [f.as_dict() for f in c.fields_added],
            "removed": [f.as_dict() for f in c.fields_removed],
            "changed": [f.as_dict() for f in c.fields_changed],
        },
        "lineage": {
            "added": [edge_json(e) for e in c.edges_added],
            "removed": [edge_json(e) for e in c.edges_removed],
        },
        "notCompared": list(c.not_compared),
        **({"change": _change_part(c)} if c.change is not None else {}),
    }


def _change_part(c: Comparison) -> dict[str, Any]:
    """The ``change`` part an ``audit --dag-folder`` document has, for these two snapshots."""
    assert c.change is not None
    part = change_json(c.change)
    part["findingsOpened"] = [change.as_dict() for change in c.opened]
    part["findingsClosed"] = [change.as_dict() for change in c.closed]
    del part["bundle"], part["lines"], part["locations"]
    return part


def _team_line(team: str) -> str:
    """What a team's view says first, so that it is never read as the whole estate's."""
    return (
        f"team {team}: its findings, and the changes of its DAGs, their tasks and lineage edges, "
        "only (the fingerprints are the whole estate's)"
    )


def _side_line(label: str, side: Side) -> str:
    open_findings = side.open
    counted = f"{len(open_findings)} ({severity_counts(_dicts(open_findings))})" if open_findings else "none"
    stored = "" if side.estate is not None else " · stored without datasets and lineage (over the cap)"
    return printable(
        f"{label}: {side.location} · fingerprint {side.fingerprint or 'none'} · captured "
        f"{side.captured_at or 'at an unknown time'} · open findings: {counted}{stored}"
    )


def _counts_line(c: Comparison) -> str:
    n = c.counts()
    return (
        f"findings: {n['findings']['opened']} opened, {n['findings']['closed']} closed · "
        f"datasets: {n['datasets']['added']} added, {n['datasets']['removed']} removed · "
        f"fields: {n['fields']['added']} added, {n['fields']['removed']} removed, "
        f"{n['fields']['changed']} changed · "
        f"lineage edges: {n['lineage']['added']} added, {n['lineage']['removed']} removed"
    )


def _sections(c: Comparison) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """Each non-empty section: its title, its column names, its rows (raw text)."""

    def finding_rows(changes: Sequence[FindingChange]) -> list[tuple[str, ...]]:
        return [
            (ch.finding.severity, ch.finding.code, ch.finding.subject, ch.how, ch.finding.detail or "")
            for ch in changes
        ]

    def edge_rows(edges: Sequence[Edge]) -> list[tuple[str, ...]]:
        return [
            (edge_subject(e), _edge_detail(e) + (f" (via {e.via})" if e.via and not e.dag_link else ""))
            for e in edges
        ]

    finding_columns = ("severity", "code", "subject", "how", "detail")
    sections: list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]] = [
        ("findings opened", finding_columns, finding_rows(c.opened)),
        ("findings closed", finding_columns, finding_rows(c.closed)),
        ("datasets added", ("kind", "identity"), [(m, i) for m, i in c.datasets_added]),
        ("datasets removed", ("kind", "identity"), [(m, i) for m, i in c.datasets_removed]),
        ("fields added", ("task", "operator"), [(f.subject, f.native_type) for f in c.fields_added]),
        ("fields removed", ("task", "operator"), [(f.subject, f.native_type) for f in c.fields_removed]),
        (
            "fields changed",
            ("task", "operator"),
            [(f.subject, f"{f.was} -> {f.native_type}") for f in c.fields_changed],
        ),
        ("lineage edges added", ("edge", "what"), edge_rows(c.edges_added)),
        ("lineage edges removed", ("edge", "what"), edge_rows(c.edges_removed)),
        (
            "DAGs affected downstream",
            ("dag", "owners", "through"),
            [(a.dag, ", ".join(a.owners) or "no owner", a.through) for a in c.change.affected]
            if c.change is not None
            else [],
        ),
    ]
    return [section for section in sections if section[2]]


def render_comparison_table(c: Comparison) -> str:
    """For a terminal: the two sides, the counts, then each change, aligned (control characters
    escaped before the widths are measured)."""
    lines = [
        *([printable(_team_line(c.team))] if c.team is not None else []),
        _side_line("old", c.old),
        _side_line("new", c.new),
        "unchanged: the same open findings and the same estate" if c.unchanged else _counts_line(c),
    ]
    for title, columns, rows in _sections(c):
        cells = [tuple(printable(cell) for cell in row) for row in rows]
        header = tuple(column.upper() for column in columns)
        widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(columns) - 1)]
        lines += ["", f"{title} ({len(rows)})"]
        for row in [header, *cells]:
            padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append(("  " + "  ".join([*padded, row[-1]])).rstrip())
    for note in c.not_compared:
        lines += ["", printable(f"not compared: {note}")]
    return "\n".join(lines)


def render_comparison_markdown(c: Comparison, *, max_rows: int = MAX_MARKDOWN_ROWS) -> str:
    """For a pull-request comment: the sides, the counts, a table per section (cut at ``max_rows``)."""

    def side(label: str, s: Side) -> str:
        open_findings = s.open
        counted = (
            f"{len(open_findings)} open ({severity_counts(_dicts(open_findings))})"
            if open_findings
            else "none open"
        )
        return (
            f"- **{label}**: {_code(s.location)}, fingerprint {_code(s.fingerprint or 'none')}, captured "
            f"{_text(s.captured_at or 'at an unknown time')}; findings: {_text(counted)}"
            + ("" if s.estate is not None else "; stored without datasets and lineage (over the cap)")
        )

    out = [
        "## CoreModels: what changed between two snapshots",
        "",
        *([f"_{_text(_team_line(c.team))}_", ""] if c.team is not None else []),
        side("Old", c.old),
        side("New", c.new),
        "",
    ]
    if c.unchanged:
        out += ["No change: the same open findings and the same estate.", ""]
    else:
        out += [_text(_counts_line(c)), ""]
    code_columns = {"code", "subject", "identity", "task", "edge", "dag", "through"}
    for title, columns, rows in _sections(c):
        out += [f"### {title[:1].upper()}{title[1:]} ({len(rows)})", ""]
        out.append("| " + " | ".join(column.capitalize() for column in columns) + " |")
        out.append("|" + "---|" * len(columns))
        for row in rows[:max_rows]:
            cells = [
                _code(cell) if col in code_columns else _text(cell)
                for col, cell in zip(columns, row, strict=True)
            ]
            out.append("| " + " | ".join(cells) + " |")
        if len(rows) > max_rows:
            out.append(f"\n… and {len(rows) - max_rows} more: `compare --format table` lists them all.")
        out.append("")
    for note in c.not_compared:
        out += [f"_Not compared_: {_text(note)}", ""]
    return "\n".join(out).rstrip() + "\n"


def _by_severity(findings: Iterable[StoredFinding]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    return sorted(counts.items(), key=lambda item: (-severity_rank(item[0]), item[0]))


def _dicts(findings: Iterable[StoredFinding]) -> list[dict[str, Any]]:
    return [{"severity": f.severity} for f in findings]
