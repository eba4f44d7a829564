"""The snapshot read once and indexed once, shared by every question: its document (the head and
the estate), datasets by identity, the lineage graph's adjacency both ways, findings by the dataset
they are about, the names an identity may be asked by, and the baselines it is compared with (each
read, and its drift worked out, once per file)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import msgspec

from airflow_provider_coremodels.core import Baseline, Estate, audit, load_document
from airflow_provider_coremodels.core.checks.audit import drift
from airflow_provider_coremodels.core.checks.policy import Policy, policy_json
from airflow_provider_coremodels.core.checks.waivers import WAIVER_EXPIRED, Waiver, apply_waivers
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.model import ASSET, DAG, Dataset
from airflow_provider_coremodels.core.estate.rules import (
    catalogue,
    severity_rank,
)
from airflow_provider_coremodels.core.estate.suggest import NameIndex
from airflow_provider_coremodels.core.estate.text import cut
from airflow_provider_coremodels.core.snapshots.document import (
    decode_stored,
    edge_json,
    finding_json,
)
from airflow_provider_coremodels.core.views.lineage import LineageGraph, Node
from airflow_provider_coremodels.errors import SnapshotDocumentError
from airflow_provider_coremodels.integrations.assistant.answers import (
    _NO_ESTATE,
    _SEVERITIES,
    JSON,
    MAX_TEXT,
    Kind,
    QueryError,
    WaivedFilter,
    _close,
    _key,
    _quoted,
    shown_text,
)


class _Head(msgspec.Struct, rename="camel"):
    """What the queries need of a document beyond its estate: its findings and how it was made.

    Decoded apart from the estate (``load_document``), skipping the datasets and lineage.
    """

    fingerprint: str | None = None
    schema_version: int | None = None
    state: dict[str, Any] = {}
    findings: list[dict[str, Any]] = []
    lossiness: list[dict[str, Any]] = []
    snapshot_stored: bool = True
    freshness: Any = None  # read as leniently as the re-audit reads it
    policy: Any = None  # the team's rules the findings were checked against (core/checks/policy.py)


def read_source(path: str) -> bytes:
    """A snapshot document's bytes: the file itself, or the ``latest.json`` of a file sink's directory,
    through the one bounded reader of stored documents (``input_files.read_stored``).

    Anything that cannot be read is a ``SnapshotDocumentError`` naming the path (exit 2).
    """
    from airflow_provider_coremodels.io.input_files import read_stored

    return read_stored(path)


def read_baseline(path: str) -> Baseline:
    """A baseline document (a file or a file sink's directory), read and checked."""
    try:
        return load_document(read_source(path)).as_baseline()
    except SnapshotDocumentError as exc:
        raise exc.with_source(exc.source or path) from None


def _head(data: bytes) -> _Head:
    """The head of a document ``load_document`` accepted, read by the same rule: the typed pass
    first, and where that refuses the JSON (``NaN`` in a key the audit ignores, say), the one
    decoding every reader of a stored document uses (``decode_stored``)."""
    try:
        try:
            head = msgspec.json.decode(data, type=_Head)
        except msgspec.DecodeError:
            head = msgspec.convert(decode_stored(data), type=_Head)
    except msgspec.ValidationError as exc:
        raise SnapshotDocumentError(f"has an invalid shape: {exc}") from None
    head.findings = [_stored_finding(finding, i) for i, finding in enumerate(head.findings)]
    return head


def _stored_finding(finding: dict[str, Any], i: int) -> JSON:
    """A stored finding as a finding is written (``finding_json``): its keys, each of its type."""
    for key in ("section", "severity", "code", "subject", "message"):
        if not isinstance(finding.get(key), str):
            raise SnapshotDocumentError(f"has an invalid findings[{i}].{key}: expected a string")
    if not isinstance(finding.get("detail"), (str, type(None))):
        raise SnapshotDocumentError(f"has an invalid findings[{i}].detail: expected a string or null")
    out = {key: finding[key] for key in ("section", "severity", "code", "subject", "message")}
    out["detail"] = finding.get("detail")
    waived = finding.get("waived")
    if waived:
        if not isinstance(waived, dict) or not all(
            isinstance(waived.get(key), (str, type(None))) for key in ("reason", "expires")
        ):
            raise SnapshotDocumentError(
                f"has an invalid findings[{i}].waived: expected an object with a reason and an expiry"
            )
        out["waived"] = {"reason": waived.get("reason"), "expires": waived.get("expires")}
    team = finding.get("team")
    if team is not None:
        if not isinstance(team, list) or not all(isinstance(name, str) for name in team):
            raise SnapshotDocumentError(f"has an invalid findings[{i}].team: expected a list of team names")
        out["team"] = list(team)
    return out


# -- the index ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LoadedBaseline:
    source: str
    baseline: Baseline
    findings: list[JSON]
    #: The file read and its identity when it was read: ``(realpath, st_dev, st_ino, size, mtime_ns)``.
    key: tuple[Any, ...] | None = None


def _file_key(path: str) -> tuple[Any, ...] | None:
    """The file a baseline path names (a file sink directory: its ``latest.json``) and its identity,
    whatever spelling names it (``./x``, ``././x``, a symlink); None when it cannot be looked at."""
    try:
        resolved = os.path.realpath(os.path.expanduser(path))
        if os.path.isdir(resolved):
            resolved = os.path.join(resolved, "latest.json")
        info = os.stat(resolved)
    except (OSError, ValueError):
        return None
    return (resolved, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class SnapshotIndex:
    """One snapshot, read once and indexed once: what the questions (``facts.py``, ``lineage.py``,
    ``drift.py``) are asked of."""

    def __init__(
        self,
        data: bytes,
        *,
        source: str,
        waivers: Sequence[Waiver] = (),
        waivers_source: str | None = None,
        baseline: str | None = None,
        today: dt.date | None = None,
        baseline_reader: Callable[[str], Baseline] = read_baseline,
        policy: Policy | None = None,
    ) -> None:
        """Read the document ``data`` (from ``source``); with ``waivers``, re-audit it under them.

        Without waivers the findings are served as stored (with the waivers the export applied);
        with them, the stored estate is audited again as ``audit --snapshot S --waivers W`` does,
        checked against the team's rules ``policy`` when given (``--rules``).
        ``baseline`` is read now, and its drift worked out once.
        """
        with gc_paused():
            try:
                stored = load_document(data)
                head = _head(data)
            except SnapshotDocumentError as exc:
                raise exc.with_source(source) from None
            self.source = source
            self.head = head
            self.estate: Estate | None = stored.estate
            self._waivers = tuple(waivers)
            self._today = today
            self._read_baseline = baseline_reader
            #: The one baseline a call named last (besides --baseline): a call naming another file,
            #: or the same file changed, replaces it, so memory holds at most two baselines.
            self._named_baseline: _LoadedBaseline | None = None
            self._given_baseline: _LoadedBaseline | None = None
            if waivers or policy is not None:
                if self.estate is None:
                    raise SnapshotDocumentError(
                        "was stored without datasets and lineage (it exceeded the snapshot cap): "
                        f"it cannot be audited again under {'--waivers' if waivers else '--rules'}",
                        source,
                    )
                result = audit(self.estate, waivers=waivers, today=today, policy=policy)
                self.findings = [finding_json(f) for f in result.findings]
                if result.policy is not None:
                    self.head.policy = policy_json(result.policy)
                elif isinstance(self.head.policy, dict):
                    self.head.policy = None  # the stored rules' findings are gone with the re-audit
                self.findings_source = (
                    f"re-audited under the waivers of {waivers_source or 'the waiver file'}"
                    if waivers
                    else "re-audited"
                ) + (f" and the rules {policy.digest}" if policy is not None else "")
            else:
                self.findings = head.findings
                self.findings_source = "as stored in the snapshot"
            self._index()
            if baseline:
                self._given_baseline = self._load_baseline(baseline, named=False)

    # -- indexes, built once ----------------------------------------------------------------

    def _index(self) -> None:
        self._rules = catalogue({"policy": self.head.policy})
        self._ranks = [severity_rank(f["severity"]) for f in self.findings]
        self._datasets: dict[str, dict[str, Dataset]] = defaultdict(dict)
        self.graph: LineageGraph | None = None
        self._out: dict[str, list[str]] = defaultdict(list)
        self._in: dict[str, list[str]] = defaultdict(list)
        self._about: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._spelled = NameIndex(())
        self._by_name: dict[str, list[str]] = defaultdict(list)
        self._aliases: dict[str, str] = {}
        if self.estate is None:
            return
        for dataset in self.estate.datasets:
            self._datasets[dataset.identity][dataset.materialization] = dataset
        document = {
            "datasets": [
                {"identity": d.identity, "materialization": d.materialization, "metadata": d.metadata}
                for d in self.estate.datasets
            ],
            "lineage": [edge_json(e) for e in self.estate.lineage],
            "findings": self.findings,
        }
        self.graph = LineageGraph.from_document(document)
        for source, target in self.graph.edges:
            self._out[source].append(target)
            self._in[target].append(source)
        for i, finding in enumerate(self.findings):
            for key in self._subjects(finding):
                self._about[key].append(i)
        names = set(self._datasets)
        names.update(node.id for node in self.graph.nodes)
        self._spelled = NameIndex(names)
        for name in self._spelled.names:  # a name served escaped or cut is asked for as it was served
            shown = shown_text(name)
            if shown != name:
                self._aliases.setdefault(shown, name)
        for dataset in self.estate.datasets:
            for name in {dataset.name, dataset.metadata.get("airflow.name", "")}:
                if name and name != dataset.identity:
                    self._by_name[name.lower()].append(dataset.identity)

    def _subjects(self, finding: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
        """The datasets, as (kind, identity), a finding is about; a task's finding is about its DAG."""
        rule = self._rules.get(finding["code"])
        subject = finding["subject"]
        about = rule.about if rule else "dataset"
        if about in ("dag", "dataset") and DAG in self._datasets.get(subject, {}):
            yield (DAG, subject)
        if about in ("asset", "dataset") and ASSET in self._datasets.get(subject, {}):
            yield (ASSET, subject)
        if about == "task":
            # dag_id.task_id, where a dag_id may itself hold dots: the longest DAG that fits
            cut = subject.rfind(".")
            while cut > 0:
                if DAG in self._datasets.get(subject[:cut], {}):
                    yield (DAG, subject[:cut])
                    return
                cut = subject.rfind(".", 0, cut)

    def _filter(
        self,
        findings: Sequence[JSON],
        ranks: Sequence[int],
        severity: str | None,
        code: str | None,
        subject: str | None,
        section: str | None,
        waived: WaivedFilter,
    ) -> list[JSON]:
        least = 0
        if severity:
            canonical = _SEVERITIES.get(severity.strip().lower())
            if canonical is None:
                raise QueryError(
                    f"unknown severity {_quoted(severity)}; expected one of {', '.join(_SEVERITIES.values())}"
                )
            least = severity_rank(canonical)
        if code:
            known = set(self._rules) | {f["code"] for f in findings}
            if code not in known:
                raise QueryError(f"unknown finding code {_quoted(code)}{_close(code, sorted(known))}")
        if section:
            known_sections = {rule.section for rule in self._rules.values()}
            known_sections |= {f["section"] for f in findings}
            matched = {s for s in known_sections if s.lower() == section.strip().lower()}
            if not matched:
                listed = ", ".join(cut(s, 100) for s in sorted(known_sections)[:20])
                raise QueryError(f"unknown section {_quoted(section)}; expected one of {listed}")
            section = matched.pop()
        if waived not in ("include", "exclude", "only"):
            raise QueryError(f"waived must be include, exclude or only, got {_quoted(str(waived))}")
        out = []
        for finding, rank in zip(findings, ranks, strict=True):
            if rank < least or (code and finding["code"] != code):
                continue
            if section and finding["section"] != section:
                continue
            if (waived == "exclude" and finding.get("waived")) or (
                waived == "only" and not finding.get("waived")
            ):
                continue
            if subject and not fnmatchcase(finding["subject"], subject):
                continue
            out.append(finding)
        return out

    def _load_baseline(self, path: str, *, named: bool = True) -> _LoadedBaseline:
        """A baseline and its drift, worked out once per file: read again only when the file the path
        names (resolved, whatever its spelling) is another or has changed (device, inode, size,
        modification time). One is kept besides the start-up baseline."""
        key = _file_key(path)
        for loaded in (self._given_baseline, self._named_baseline):
            if key is not None and loaded is not None and loaded.key == key:
                return loaded if loaded.source == path else dataclasses.replace(loaded, source=path)
        if named:
            self._named_baseline = None  # the old one goes before the next is read
        baseline = self._read_baseline(path)
        findings: list[JSON] = []
        if baseline.estate is not None and self.estate is not None:
            found = list(drift(self.estate, baseline.estate))
            if self._waivers:
                today = self._today or dt.datetime.now(dt.timezone.utc).date()
                found = [f for f in apply_waivers(found, self._waivers, today) if f.code != WAIVER_EXPIRED]
            found.sort(key=lambda f: (f.section, f.code, f.subject, f.detail or ""))
            findings = [finding_json(f) for f in found]
        loaded = _LoadedBaseline(path, baseline, findings, key)
        if named:
            self._named_baseline = loaded
        return loaded

    # -- identities -------------------------------------------------------------------------

    def _graph(self) -> LineageGraph:
        if self.graph is None:
            raise QueryError(_NO_ESTATE)
        return self.graph

    def _nodes(self) -> Mapping[str, Node]:
        return self._graph()._index

    def _resolve(self, identity: str, kind: Kind | None) -> str:
        """The kind of the one dataset ``identity`` names: ``dag``, ``asset`` or ``external``."""
        self._graph()
        if kind not in (None, DAG, ASSET):
            raise QueryError(f"kind must be dag or asset, got {_quoted(str(kind))}")
        kinds = [k for k in (DAG, ASSET) if k in self._datasets.get(identity, {}) and kind in (None, k)]
        if len(kinds) == 1:
            return kinds[0]
        if len(kinds) == 2:
            raise QueryError(
                f"{_quoted(identity)} names both a DAG and an asset (Airflow 3's @asset makes both): "
                "give kind dag or asset"
            )
        if kind in (None, DAG) and _key("dag", identity) in self._nodes():
            return "external"
        raise self._unknown(identity, kind)

    def _canonical(self, identity: str) -> str:
        """The identity a served (escaped or cut) spelling stands for; any other as it is."""
        if identity in self._datasets:
            return identity
        return self._aliases.get(identity, identity)

    def _unknown(self, identity: str, kind: Kind | None) -> QueryError:
        what = {None: "DAG or asset", DAG: "DAG", ASSET: "asset"}[kind]
        return QueryError(f"no {what} {_quoted(identity)} in this snapshot{self._suggest(identity)}")

    def _suggest(self, wanted: str) -> str:
        """``; did you mean ...``: assets by name, then what the shared index suggests (names equal
        but for case, containing it, spelled alike: ``core/estate/suggest.py``), at a bounded cost."""
        if len(wanted) > MAX_TEXT:
            return ""
        found = [*self._by_name.get(wanted.lower(), []), *self._spelled.suggest(wanted, limit=5, cutoff=0.75)]
        unique = list(dict.fromkeys(n for n in found if n != wanted))[:5]
        return f"; did you mean {', '.join(_quoted(n) for n in unique)}?" if unique else ""
