"""Where in the work tree each finding a change opens was caused: what SARIF points it at.

The parse of the DAG folder records, by the syntax of each file it parsed, where each DAG is
defined and where it declares its outlets, inlets, asset schedule, triggers, sensors and tasks,
and the line of each import error in the file itself (``capture/dag_folder_worker.py``).
``locate`` reads those against the change: a finding about something the change added or changed
points at its declaration; one about something the change removed, at what still references it
(a consumer's schedule or inlet, a trigger or sensor naming a removed DAG); an import error at its
innermost frame in the DAG file. What has no line in the work tree names its file (a deleted
file's as the baseline knew it) with no line. Pure: the change, both estates and the parse's
records in, locations out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_coremodels.core.estate.model import (
    VIA_INLET,
    VIA_TRIGGER,
    BrokenFile,
    Dataset,
    Edge,
    Estate,
    Finding,
)
from airflow_provider_coremodels.core.estate.rules import BY_CODE
from airflow_provider_coremodels.core.reading.dag_links import owned_links

BUNDLE_KEY = "airflow.bundle"
RELATIVE_FILELOC_KEY = "airflow.relativeFileloc"
NAME_KEY = "airflow.name"
#: Asset findings whose cause lies with the asset's producers (as SARIF places them).
_AT_PRODUCERS = frozenset(("asset-stale", "producer-failing"))


@dataclass(frozen=True, slots=True)
class Spot:
    """A place in a file: ``file`` (its path in ``bundle``), ``line`` (None: the file as a whole),
    what is declared there (``kind``: ``outlet``, ``inlet``, ``schedule``, ``trigger``,
    ``sensor``, ``task``, ``dag``, ``importError``; ``file`` for a file with no line), and the DAG
    it belongs to, where one does."""

    file: str | None
    bundle: str | None
    line: int | None
    kind: str
    dag: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "bundle": self.bundle, "kind": self.kind}
        if self.line is not None:
            out["line"] = self.line
        if self.dag is not None:
            out["dag"] = self.dag
        return out


@dataclass(frozen=True, slots=True)
class Located:
    """Where an opened finding (``code``, ``subject``) was caused, the most telling place first."""

    code: str
    subject: str
    at: tuple[Spot, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "finding": {"code": self.code, "subject": self.subject},
            "at": [spot.as_dict() for spot in self.at],
        }


@dataclass(frozen=True, slots=True)
class Declared:
    """Where one parsed DAG is defined (``line``) and declares each reference: ``refs[kind][name]``
    for kind ``outlets``, ``inlets``, ``schedule`` (by asset URI or name), ``triggers``,
    ``sensors`` (by the dag_id named) and ``tasks``; ``computed[kind]`` is the line of the one
    declaration of that kind no literal names."""

    line: int | None
    refs: Mapping[str, Mapping[str, int]]
    computed: Mapping[str, int]

    @classmethod
    def read(cls, record: Mapping[str, Any]) -> Declared:
        def lines(value: Any) -> dict[str, int]:
            items = value.items() if isinstance(value, Mapping) else ()
            return {str(k): v for k, v in items if isinstance(v, int) and not isinstance(v, bool) and v >= 1}

        line = record.get("line")
        kinds = ("outlets", "inlets", "schedule", "triggers", "sensors", "tasks")
        return cls(
            line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else None,
            {kind: lines(record.get(kind)) for kind in kinds},
            lines(record.get("computed")),
        )

    def find(self, kinds: Iterable[str], names: Iterable[str]) -> tuple[int, str] | None:
        """The line (and kind) of the first of ``kinds`` that names one of ``names``; else of the
        one computed declaration of those kinds."""
        wanted = [n for n in names if n]
        for kind in kinds:
            for name in wanted:
                if name in self.refs.get(kind, {}):
                    return self.refs[kind][name], kind
        for kind in kinds:
            if kind in self.computed:
                return self.computed[kind], kind
        return None


#: The kind a spot says, by the record's kind.
_SINGULAR = {
    "outlets": "outlet",
    "inlets": "inlet",
    "schedule": "schedule",
    "triggers": "trigger",
    "sensors": "sensor",
    "tasks": "task",
}


class _Places:
    """The DAGs of both estates, the parse's records of the parsed ones, and how to place each."""

    def __init__(
        self,
        before: Estate,
        after: Estate,
        declared: Mapping[str, Declared],
        parsed_id: Any,
        owns: Any,
    ) -> None:
        self.before = before
        self.after = after
        self.now = {d.identity: d for d in after.dags()}
        self.then = {d.identity: d for d in before.dags()}
        self.assets = {a.identity: a for a in (*before.assets(), *after.assets())}
        self.declared = declared
        self.parsed_id = parsed_id
        self.owns = owns

    def record(self, identity: str) -> Declared | None:
        dag = self.now.get(identity)
        if dag is None or not self.owns(dag):
            return None
        return self.declared.get(self.parsed_id(identity))

    def file_of(self, identity: str) -> Spot:
        """The DAG's file as a whole: the work tree's, else (a DAG the change removed) the baseline's."""
        dag = self.now.get(identity) or self.then.get(identity)
        if dag is None:
            return Spot(None, None, None, "file", identity)
        return Spot(_relative(dag), dag.metadata.get(BUNDLE_KEY), None, "file", identity)

    def spot(self, identity: str, kinds: Iterable[str] = (), names: Iterable[str] = ()) -> Spot:
        """Where a DAG declares one of ``names`` as one of ``kinds``; else where it is defined;
        else its file."""
        record = self.record(identity)
        dag = self.now.get(identity)
        if record is None or dag is None:
            return self.file_of(identity)
        found = record.find(kinds, names)
        if found is not None:
            return Spot(_relative(dag), dag.metadata.get(BUNDLE_KEY), found[0], _SINGULAR[found[1]], identity)
        if record.line is not None:
            return Spot(_relative(dag), dag.metadata.get(BUNDLE_KEY), record.line, "dag", identity)
        return self.file_of(identity)

    def asset_names(self, uri: str) -> list[str]:
        asset = self.assets.get(uri)
        name = asset.metadata.get(NAME_KEY) if asset is not None else None
        return [uri, name] if name and name != uri else [uri]

    def edge_spot(self, edge: Edge) -> Spot:
        """Where the edge is declared: the outlet, the schedule or inlet, the trigger or sensor."""
        if edge.dag_link:
            kind = "triggers" if edge.via == VIA_TRIGGER else "sensors"
            return self.spot(edge.link_owner, [kind], [self.parsed_id(edge.link_target), edge.link_target])
        if edge.inferred:  # read off a task's code: the task that reads or writes the table
            return self.spot(edge.dag_id, ["tasks"], _source_tasks(edge, self.parsed_id(edge.dag_id)))
        names = self.asset_names(edge.asset)
        if edge.producing:
            return self.spot(edge.dag_id, ["outlets"], names)
        kinds = ["inlets", "schedule"] if edge.via == VIA_INLET else ["schedule", "inlets"]
        return self.spot(edge.dag_id, kinds, names)


def _source_tasks(edge: Edge, dag_id: str) -> list[str]:
    """The task ids an inferred edge's ``source`` names (``<dag_id>.<task_id>``, comma-joined)."""
    prefix = dag_id + "."
    return [s[len(prefix) :] for s in (edge.source or "").split(", ") if s.startswith(prefix)]


def locate(
    opened: Iterable[Finding],
    before: Estate,
    after: Estate,
    *,
    declared: Mapping[str, Mapping[str, Any]],
    error_lines: Mapping[str, int],
    added: Iterable[Edge] = (),
    parsed_id: Any = None,
    owns: Any = None,
) -> tuple[Located, ...]:
    """Where each opened finding was caused (``Located``), in the order given.

    ``declared``: the parse's records by the dag_id the folder gives (``parsed_id`` maps an
    estate's identity to it; ``owns`` says which of ``after``'s DAGs the folder gave);
    ``error_lines``: the line of each broken file's error, by the finding's subject (its file);
    ``added``: the lineage edges the change adds, whose declarations are put first.
    """
    places = _Places(
        before,
        after,
        {dag_id: Declared.read(record) for dag_id, record in declared.items()},
        parsed_id or (lambda identity: identity),
        owns or (lambda dag: True),
    )
    new = {e.key for e in added}
    out = []
    for finding in opened:
        spots = _spots(finding, places, error_lines, new)
        out.append(Located(finding.code, finding.subject, tuple(dict.fromkeys(spots))))
    return tuple(out)


def _about(finding: Finding, places: _Places) -> str:
    rule = BY_CODE.get(finding.code)
    if rule is not None:
        return rule.about
    # a team's own rule is about a DAG or a task
    return "dag" if finding.subject in places.now or finding.subject in places.then else "task"


def _spots(finding: Finding, places: _Places, error_lines: Mapping[str, int], new: set[Any]) -> list[Spot]:
    about = _about(finding, places)
    subject = finding.subject
    if about == "file":
        return _broken(subject, places.after.import_errors, error_lines)
    if about == "edge":
        return _edge(subject, places, new)
    if about == "task":
        return _task(finding, places)
    is_dag = subject in places.now or subject in places.then
    if about == "dag" or (about == "dataset" and is_dag and subject not in places.assets):
        return _dag(subject, places)
    if about in ("asset", "dataset"):
        return _asset(finding, places, new)
    return []  # a waiver, a bundle: nothing in the DAG files


def _broken(subject: str, files: Iterable[BrokenFile], error_lines: Mapping[str, int]) -> list[Spot]:
    for file in files:
        if file.file == subject:
            line = error_lines.get(subject)
            return [Spot(file.path, file.bundle, line, "importError" if line else "file")]
    return []


def _dag(identity: str, places: _Places) -> list[Spot]:
    """A DAG in the work tree: where it is defined. A DAG the change removed: each trigger or
    sensor that still names it, else the file it was in."""
    if identity in places.now:
        return [places.spot(identity)]
    naming = [
        places.edge_spot(edge)
        for edge in places.after.lineage
        if edge.dag_link and edge.link_target == identity and edge.link_owner in places.now
    ]
    return naming or [places.file_of(identity)]


def _asset(finding: Finding, places: _Places, new: set[Any]) -> list[Spot]:
    """An asset's consumers' references (its producers' outlets for a freshness finding), the
    edges the change adds first; an asset no DAG names any more, the DAGs that named it."""
    uri = finding.subject
    edges = [e for e in places.after.lineage if not e.dag_link and e.asset == uri and e.dag_id in places.now]
    consumers = [e for e in edges if not e.producing]
    producers = [e for e in edges if e.producing]
    if finding.code in _AT_PRODUCERS:
        chosen = producers or consumers
    elif finding.code == "asset-unproduced":
        chosen = consumers
    else:
        chosen = consumers + producers
    chosen.sort(key=lambda e: e.key not in new)  # stable: the change's own declarations first
    if chosen:
        return [places.edge_spot(e) for e in chosen]
    named = sorted({e.dag_id for e in places.before.lineage if not e.dag_link and e.asset == uri})
    return [places.spot(dag_id) for dag_id in named]


def _edge(subject: str, places: _Places, new: set[Any]) -> list[Spot]:
    """A lineage edge the change adds: where it is declared; one it removes: its DAG."""
    for edge in places.after.lineage:
        if f"{edge.depends_on} -> {edge.dependent}" == subject:
            return [places.edge_spot(edge)]
    for edge in places.before.lineage:
        if f"{edge.depends_on} -> {edge.dependent}" == subject:
            owner = edge.link_owner if edge.dag_link else edge.dag_id
            return [places.spot(owner)]
    return []


def _task(finding: Finding, places: _Places) -> list[Spot]:
    """A task's declaration; a trigger's or sensor's, where the finding is about its link."""
    subject = finding.subject
    cut = len(subject)
    while (cut := subject.rfind(".", 0, cut)) > 0:
        identity, task_id = subject[:cut], subject[cut + 1 :]
        dag = places.now.get(identity)
        if dag is None:
            if identity in places.then:
                return [places.file_of(identity)]
            continue
        if finding.code.startswith("dag-link-"):
            for task, via, target in owned_links(dag):
                if task == task_id:
                    kind = "triggers" if via == VIA_TRIGGER else "sensors"
                    return [places.spot(identity, [kind, "tasks"], [target, task_id])]
        return [places.spot(identity, ["tasks"], [task_id])]
    return []


def _relative(dag: Dataset) -> str | None:
    relative = dag.metadata.get(RELATIVE_FILELOC_KEY)
    return str(relative) if relative else None
