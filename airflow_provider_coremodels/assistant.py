"""The questions an assistant asks of one snapshot: facts, findings, a dataset, lineage, impact, drift.

The MCP server (``mcp_server.py``) is a thin layer over this module, which imports no MCP SDK:
plain functions over the estate model and the stored findings, fast to test on their own. A
snapshot is read once (``SnapshotQueries.open``) and indexed once (datasets by identity, the
lineage graph's adjacency both ways, findings by the dataset they are about), so each answer
costs what it returns, not what the estate holds.

Every answer is JSON-safe. Every list in it is a page: ``items``, ``total``, ``offset``,
``limit``, ``truncated`` (more items follow) and ``nextOffset``, so a cut list is never taken
for the whole. A question that cannot be answered as asked (an unknown identity, a filter that
names nothing) is a ``QueryError`` naming what was asked and, where it can, what was meant.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal, TypeVar

import msgspec

from airflow_provider_coremodels.core import Baseline, Estate, audit, load_document
from airflow_provider_coremodels.core.audit import drift
from airflow_provider_coremodels.core.collector import gc_paused
from airflow_provider_coremodels.core.document import dataset_json, edge_json, finding_json
from airflow_provider_coremodels.core.lineage import LineageGraph, Node, to_mermaid
from airflow_provider_coremodels.core.model import ASSET, DAG, FIELD_TYPE, Dataset, Field
from airflow_provider_coremodels.core.policy import Policy, policy_json
from airflow_provider_coremodels.core.rules import SEVERITY_ORDER, catalogue, most_severe_first, severity_rank
from airflow_provider_coremodels.core.waivers import WAIVER_EXPIRED, Waiver, apply_waivers
from airflow_provider_coremodels.errors import CoreModelsError, SnapshotDocumentError

JSON = dict[str, Any]
T = TypeVar("T")
Kind = Literal["dag", "asset"]
WaivedFilter = Literal["include", "exclude", "only"]

#: A page holds this many items unless the caller asks for another number, and never more than MAX_LIMIT.
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
#: The deepest ``lineage`` neighbourhood (as ``lineage --depth``).
MAX_DEPTH = 50
#: A Mermaid drawing of more nodes than this is left out (it would not render, nor be read).
MERMAID_MAX_NODES = 300
#: Lists inside one item (the independent producers of an affected asset) are cut at this many.
INNER_LIMIT = 10

_KIND_ORDER = {"dag": 0, "external": 1, "asset": 2}
_SEVERITIES = {severity.value.lower(): severity.value for severity in SEVERITY_ORDER}
_NO_ESTATE = (
    "this snapshot was stored without datasets and lineage (it exceeded the snapshot cap when it was "
    "written): only its facts and findings can be served"
)


class QueryError(CoreModelsError):
    """A question the snapshot cannot answer as asked: an unknown identity, a filter naming nothing."""


# -- pages ----------------------------------------------------------------------------------


def page(items: Sequence[T], offset: int, limit: int, convert: Callable[[T], Any] | None = None) -> JSON:
    """One page of ``items``: those from ``offset``, at most ``limit`` (capped at ``MAX_LIMIT``).

    ``truncated`` is true when more items follow this page; ``nextOffset`` is where they start.
    Only the items on the page are converted.
    """
    if offset < 0:
        raise QueryError(f"offset must be 0 or more, got {offset}")
    if limit < 1:
        raise QueryError(f"limit must be 1 or more, got {limit}")
    limit = min(limit, MAX_LIMIT)
    chunk = items[offset : offset + limit]
    end = offset + len(chunk)
    more = end < len(items)
    return {
        "items": [convert(item) for item in chunk] if convert else list(chunk),
        "total": len(items),
        "offset": offset,
        "limit": limit,
        "truncated": more,
        "nextOffset": end if more else None,
    }


# -- reading the snapshot -------------------------------------------------------------------


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
    policy: Any = None  # the team's rules the findings were checked against (core/policy.py)


def read_source(path: str) -> bytes:
    """A snapshot document's bytes: the file itself, or the ``latest.json`` of a file sink's directory,
    through the one bounded reader of stored documents (``input_files.read_stored``).

    Anything that cannot be read is a ``SnapshotDocumentError`` naming the path (exit 2).
    """
    from airflow_provider_coremodels.input_files import read_stored

    return read_stored(path)


def read_baseline(path: str) -> Baseline:
    """A baseline document (a file or a file sink's directory), read and checked."""
    try:
        return load_document(read_source(path)).as_baseline()
    except SnapshotDocumentError as exc:
        raise exc.with_source(exc.source or path) from None


def _head(data: bytes) -> _Head:
    try:
        head = msgspec.json.decode(data, type=_Head)
    except msgspec.ValidationError as exc:
        raise SnapshotDocumentError(f"has an invalid shape: {exc}") from None
    for i, finding in enumerate(head.findings):
        for key in ("section", "severity", "code", "subject", "message"):
            if not isinstance(finding.get(key), str):
                raise SnapshotDocumentError(f"has an invalid findings[{i}].{key}: expected a string")
    return head


# -- the queries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _LoadedBaseline:
    source: str
    baseline: Baseline
    findings: list[JSON]


class SnapshotQueries:
    """One snapshot, read once and indexed once, and the questions asked of it."""

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
            self._baselines: dict[str, tuple[tuple[int, int, int], _LoadedBaseline]] = {}
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
            self._given_baseline = self._load_baseline(baseline) if baseline else None

    @classmethod
    def open(
        cls, path: str, *, waivers: Sequence[Waiver] = (), waivers_source: str | None = None, **kwargs: Any
    ) -> SnapshotQueries:
        """Read the snapshot at ``path`` (a document, or a file sink's directory)."""
        return cls(read_source(path), source=path, waivers=waivers, waivers_source=waivers_source, **kwargs)

    # -- indexes, built once ----------------------------------------------------------------

    def _index(self) -> None:
        self._rules = catalogue({"policy": self.head.policy})
        self._ranks = [severity_rank(f["severity"]) for f in self.findings]
        self._datasets: dict[str, dict[str, Dataset]] = defaultdict(dict)
        self.graph: LineageGraph | None = None
        self._out: dict[str, list[str]] = defaultdict(list)
        self._in: dict[str, list[str]] = defaultdict(list)
        self._about: dict[tuple[str, str], list[int]] = defaultdict(list)
        self._names: list[str] = []
        self._lowered: list[str] = []
        self._by_name: dict[str, list[str]] = defaultdict(list)
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
        self._names = sorted(names)
        self._lowered = [name.lower() for name in self._names]
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

    # -- 1. facts ---------------------------------------------------------------------------

    def facts(self, *, lossiness_offset: int = 0, lossiness_limit: int = 20) -> JSON:
        """What the snapshot is: where it came from, its counts and facts, and what its audit found."""
        state = self.head.state
        by_severity: dict[str, dict[str, int]] = {}
        for severity in most_severe_first(f["severity"] for f in self.findings):
            by_severity[severity] = {"open": 0, "waived": 0}
        codes: Counter[str] = Counter()
        for finding in self.findings:
            by_severity[finding["severity"]]["waived" if finding.get("waived") else "open"] += 1
            if not finding.get("waived"):
                codes[finding["code"]] += 1
        # As stored, and what reading it found (a fingerprint that does not match the content)
        lossiness = list(self.head.lossiness)
        stored = {(r.get("artifact"), r.get("message")) for r in lossiness}
        for record in self.estate.lossiness if self.estate is not None else ():
            if (record.artifact, record.message) not in stored:
                lossiness.append({"artifact": record.artifact, "message": record.message})
        freshness = self.head.freshness if isinstance(self.head.freshness, dict) else {}
        baseline = self._given_baseline
        return {
            "source": self.source,
            "fingerprint": self.head.fingerprint,
            "schemaVersion": self.head.schema_version,
            "connectorVersion": state.get("connectorVersion"),
            "airflowVersion": state.get("airflowVersion"),
            "apiVersion": state.get("apiVersion"),
            "capturedAt": state.get("capturedAt"),
            "deployment": state.get("deployment"),
            "deployments": list(state.get("deployments") or []),
            "counts": state.get("counts"),
            "facts": state.get("facts"),
            "snapshotStored": self.head.snapshot_stored,
            "hasLineage": self.estate is not None,
            "freshness": {"judgedAt": freshness.get("judgedAt"), "tolerance": freshness.get("tolerance")},
            "findings": {
                "total": len(self.findings),
                "open": sum(1 for f in self.findings if not f.get("waived")),
                "waived": sum(1 for f in self.findings if f.get("waived")),
                "bySeverity": by_severity,
                "openByCode": dict(sorted(codes.items())),
                "source": self.findings_source,
            },
            "baseline": (
                {"source": baseline.source, "fingerprint": baseline.baseline.fingerprint}
                if baseline
                else None
            ),
            "lossiness": {
                "byArtifact": dict(sorted(Counter(str(r.get("artifact")) for r in lossiness).items())),
                **page(lossiness, lossiness_offset, lossiness_limit),
            },
        }

    # -- 2. findings ------------------------------------------------------------------------

    def findings_page(
        self,
        *,
        severity: str | None = None,
        code: str | None = None,
        subject: str | None = None,
        section: str | None = None,
        waived: WaivedFilter = "include",
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """The findings at or above ``severity``, of ``code``, whose subject matches the glob ``subject``."""
        selected = self._filter(self.findings, self._ranks, severity, code, subject, section, waived)
        return {
            "filters": {
                "severity": severity,
                "code": code,
                "subject": subject,
                "section": section,
                "waived": waived,
            },
            "source": self.findings_source,
            "counts": _counts(selected),
            "findings": page(selected, offset, limit),
        }

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
                    f"unknown severity {severity!r}; expected one of {', '.join(_SEVERITIES.values())}"
                )
            least = severity_rank(canonical)
        if code:
            known = set(self._rules) | {f["code"] for f in findings}
            if code not in known:
                raise QueryError(f"unknown finding code {code!r}{_close(code, sorted(known))}")
        if section:
            known_sections = {rule.section for rule in self._rules.values()}
            known_sections |= {f["section"] for f in findings}
            matched = {s for s in known_sections if s.lower() == section.strip().lower()}
            if not matched:
                raise QueryError(
                    f"unknown section {section!r}; expected one of {', '.join(sorted(known_sections))}"
                )
            section = matched.pop()
        if waived not in ("include", "exclude", "only"):
            raise QueryError(f"waived must be include, exclude or only, got {waived!r}")
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

    # -- 3. a dataset -----------------------------------------------------------------------

    def dataset(
        self, identity: str, *, kind: Kind | None = None, offset: int = 0, limit: int = DEFAULT_LIMIT
    ) -> JSON:
        """One DAG or asset: its metadata, a page of its fields (tasks), its neighbours and findings."""
        graph = self._graph()
        found = self._resolve(identity, kind)
        if found == "external":
            node = graph.node(_key("dag", identity))
            dataset: JSON = {
                "identity": identity,
                "materialization": "external",
                "note": "a DAG named by lineage but absent from the capture (another deployment, or "
                "a DAG that failed to import): nothing else is known of it",
            }
            fields: Sequence[Any] = ()
            key = node.key
        else:
            described = self._datasets[identity][found]
            dataset = dataset_json(described)
            del dataset["fields"]
            if found == DAG:
                dataset["paused"] = described.paused
            fields = described.fields
            key = _key(found, identity)
        dataset["fields"] = page(fields, offset, limit, _field_json)
        about = (
            [self.findings[i] for i in self._about.get((found, identity), ())] if found != "external" else []
        )
        first = min(limit, MAX_LIMIT)
        return {
            "dataset": dataset,
            "upstream": page(self._neighbours(self._in.get(key, ()), key, upstream=True), 0, first),
            "downstream": page(self._neighbours(self._out.get(key, ()), key, upstream=False), 0, first),
            "findings": page(about, 0, first),
        }

    def _neighbours(self, keys: Iterable[str], center: str, *, upstream: bool) -> list[JSON]:
        graph = self._graph()
        out = []
        for key in keys:
            node = graph.node(key)
            item = _node_json(node)
            via = graph.via.get((key, center) if upstream else (center, key))
            if via:
                item["via"] = via
            out.append(item)
        out.sort(key=lambda n: (_KIND_ORDER[n["kind"]], n["identity"]))
        return out

    # -- 4. lineage -------------------------------------------------------------------------

    def lineage(
        self,
        identity: str,
        *,
        depth: int = 2,
        kind: Kind | None = None,
        mermaid: bool = False,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """The neighbourhood of a DAG or asset within ``depth`` edges, as ``lineage --around`` draws it."""
        around = self.neighbourhood(identity, depth, kind=kind)
        graph = self._graph()
        kinds = {node.key: node.kind for node in around.nodes}
        answer: JSON = {
            "center": identity,
            "depth": depth,
            "summary": around.summary(),
            "nodes": page(around.nodes, offset, limit, _node_json),
            "edges": page(
                around.edges,
                offset,
                limit,
                lambda edge: _edge_json(edge, kinds, graph),
            ),
        }
        if mermaid:
            if len(around.nodes) > MERMAID_MAX_NODES:
                answer["mermaid"] = None
                answer["mermaidOmitted"] = (
                    f"{len(around.nodes)} nodes, over the {MERMAID_MAX_NODES} a drawing can show: "
                    "ask for a smaller depth"
                )
            else:
                answer["mermaid"] = to_mermaid(around)
        return answer

    def neighbourhood(self, identity: str, depth: int = 2, *, kind: Kind | None = None) -> LineageGraph:
        """``LineageGraph.neighbourhood``, with an unknown identity answered as a ``QueryError``."""
        graph = self._graph()
        if not 0 <= depth <= MAX_DEPTH:
            raise QueryError(f"depth must be 0 to {MAX_DEPTH}, got {depth}")
        known = any(
            (kind is None or kind == of) and key in self._nodes()
            for key, of in ((_key("dag", identity), DAG), (_key("asset", identity), ASSET))
        )
        if not known and not (identity in graph.hidden_dags and kind in (None, DAG)):
            raise self._unknown(identity, kind)
        return graph.neighbourhood(identity, depth, kind=kind)

    # -- 5. impact --------------------------------------------------------------------------

    def impact(
        self,
        identity: str,
        *,
        kind: Kind | None = None,
        depth: int | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """Everything downstream of a DAG or asset, transitively: the assets it feeds, the DAGs that
        consume those, and on; each with its distance and whether it is paused."""
        graph = self._graph()
        if depth is not None and depth < 1:
            raise QueryError(f"depth must be 1 or more (or left out for no limit), got {depth}")
        found = self._resolve(identity, kind)
        start = _key(DAG if found == "external" else found, identity)
        start_node = graph.node(start) if start in self._nodes() else None
        reached: dict[str, tuple[int, str]] = {start: (0, "")}
        queue = deque([start])
        while queue:
            key = queue.popleft()
            distance = reached[key][0]
            if depth is not None and distance == depth:
                continue
            for target in self._out.get(key, ()):
                if target not in reached:
                    reached[target] = (distance + 1, key)
                    queue.append(target)
        del reached[start]
        affected = sorted(
            (graph.node(key) for key in reached), key=lambda n: (reached[n.key][0], _KIND_ORDER[n.kind], n.id)
        )
        chain = set(reached) | {start}
        kinds = Counter(node.kind for node in affected)
        dags = [node for node in affected if node.kind == "dag"]

        def item(node: Node) -> JSON:
            distance, came_from = reached[node.key]
            out = _node_json(node)
            out["distance"] = distance
            out["reachedFrom"] = graph.node(came_from).id
            if node.kind == "asset":
                independent = sorted(
                    graph.node(p).id
                    for p in self._in.get(node.key, ())
                    if p not in chain and graph.node(p).kind == "dag" and not graph.node(p).paused
                )
                out["independentActiveProducers"] = independent[:INNER_LIMIT]
                out["independentActiveProducersTotal"] = len(independent)
            return out

        if start_node is not None:
            start_json = _node_json(start_node)
        else:  # a DAG without asset lineage: nothing lies downstream of it
            start_json = {"identity": identity, "kind": found, "paused": self._paused(identity, found)}
        return {
            "start": start_json,
            "depth": depth,
            "summary": {
                "assets": kinds["asset"],
                "dags": kinds["dag"],
                "activeDags": sum(1 for node in dags if not node.paused),
                "pausedDags": sum(1 for node in dags if node.paused),
                "externalDags": kinds["external"],
                "maxDistance": max((reached[n.key][0] for n in affected), default=0),
            },
            "affected": page(affected, offset, limit, item),
        }

    def _paused(self, identity: str, kind: str) -> bool:
        dataset = self._datasets.get(identity, {}).get(kind)
        return bool(dataset and dataset.paused)

    # -- 6. drift ---------------------------------------------------------------------------

    def drift(
        self,
        *,
        baseline: str | None = None,
        code: str | None = None,
        subject: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """Coverage and drift against a baseline: the one given at start-up, or the one at ``baseline``."""
        if self.estate is None:
            raise QueryError(_NO_ESTATE)
        if baseline:
            try:
                loaded = self._load_baseline(baseline)
            except CoreModelsError as exc:  # a path the assistant gave: its answer, not a crash
                raise QueryError(f"baseline {exc}") from None
        elif self._given_baseline is not None:
            loaded = self._given_baseline
        else:
            raise QueryError(
                "no baseline: give the path of a previous snapshot document (or a file sink's directory) "
                "as baseline, or start the server with --baseline PATH"
            )
        ranks = [severity_rank(f["severity"]) for f in loaded.findings]
        selected = self._filter(loaded.findings, ranks, None, code, subject, None, "include")
        stored = loaded.baseline
        return {
            "baseline": {
                "source": loaded.source,
                "fingerprint": stored.fingerprint,
                "evaluated": stored.estate is not None,
                "reason": None
                if stored.estate is not None
                else "the baseline was stored without datasets (it exceeded the snapshot cap)",
            },
            "fingerprint": self.head.fingerprint,
            "unchanged": stored.fingerprint == self.head.fingerprint,
            "counts": {"byCode": dict(sorted(Counter(f["code"] for f in loaded.findings).items()))},
            "findings": page(selected, offset, limit),
        }

    def _load_baseline(self, path: str) -> _LoadedBaseline:
        """Read a baseline and work out its drift once; read again only when the file changes."""
        try:
            info = os.stat(os.path.expanduser(path))
        except OSError:
            stamp = (0, 0, 0)
        else:
            stamp = (info.st_ino, info.st_size, info.st_mtime_ns)
        cached = self._baselines.get(path)
        if cached and cached[0] == stamp and stamp != (0, 0, 0):
            return cached[1]
        baseline = self._read_baseline(path)
        findings: list[JSON] = []
        if baseline.estate is not None and self.estate is not None:
            found = list(drift(self.estate, baseline.estate))
            if self._waivers:
                today = self._today or dt.datetime.now(dt.timezone.utc).date()
                found = [f for f in apply_waivers(found, self._waivers, today) if f.code != WAIVER_EXPIRED]
            found.sort(key=lambda f: (f.section, f.code, f.subject, f.detail or ""))
            findings = [finding_json(f) for f in found]
        loaded = _LoadedBaseline(path, baseline, findings)
        self._baselines[path] = (stamp, loaded)
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
            raise QueryError(f"kind must be dag or asset, got {kind!r}")
        kinds = [k for k in (DAG, ASSET) if k in self._datasets.get(identity, {}) and kind in (None, k)]
        if len(kinds) == 1:
            return kinds[0]
        if len(kinds) == 2:
            raise QueryError(
                f"{identity!r} names both a DAG and an asset (Airflow 3's @asset makes both): "
                "give kind dag or asset"
            )
        if kind in (None, DAG) and _key("dag", identity) in self._nodes():
            return "external"
        raise self._unknown(identity, kind)

    def _unknown(self, identity: str, kind: Kind | None) -> QueryError:
        what = {None: "DAG or asset", DAG: "DAG", ASSET: "asset"}[kind]
        return QueryError(f"no {what} {identity!r} in this snapshot{self._suggest(identity)}")

    def _suggest(self, wanted: str) -> str:
        """``; did you mean ...``: identities equal but for case, assets by name, then names alike."""
        low = wanted.lower()
        found: list[str] = []
        found += [name for name, lowered in zip(self._names, self._lowered, strict=True) if lowered == low]
        found += self._by_name.get(low, [])
        if len(found) < 3 and len(low) >= 3:
            found += [
                name for name, lowered in zip(self._names, self._lowered, strict=True) if low in lowered
            ][:5]
        if len(found) < 3:
            found += _close_names(wanted, self._names)
        unique = list(dict.fromkeys(n for n in found if n != wanted))[:5]
        return f"; did you mean {', '.join(repr(n) for n in unique)}?" if unique else ""


def _close(wanted: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(wanted, known, n=3, cutoff=0.6)
    if close:
        return f"; did you mean {', '.join(repr(c) for c in close)}?"
    return f"; known codes: {', '.join(known)}"


def _close_names(wanted: str, names: Sequence[str]) -> list[str]:
    """Up to three names like ``wanted``, looked for among names of about its length only (the
    estate may hold tens of thousands)."""
    size = len(wanted)
    pool = [name for name in names if abs(len(name) - size) <= max(3, size // 4)]
    return difflib.get_close_matches(wanted, pool, n=3, cutoff=0.75)


def _field_json(field: Field) -> JSON:
    """A task as the document spells a field."""
    return {
        "name": field.name,
        "nativeType": field.native_type,
        "type": FIELD_TYPE,
        "approximate": True,
        "tags": list(field.tags),
        "metadata": dict(field.metadata),
    }


def _key(kind: str, identity: str) -> str:
    return f"{'asset' if kind == ASSET else 'dag'}:{identity}"


def _node_json(node: Node) -> JSON:
    """A node of the lineage: a DAG says whether it is paused (an external DAG: null, unknown), an
    asset whether a watcher updates it and whether it is stale; each its open findings."""
    out: JSON = {"identity": node.id, "kind": node.kind}
    if node.kind == "asset":
        out.update(watched=node.watched, stale=node.stale)
    else:
        out["paused"] = node.paused if node.kind == "dag" else None
    out.update(openFindings=list(node.findings), severity=node.severity)
    return out


def _edge_json(edge: tuple[str, str], kinds: Mapping[str, str], graph: LineageGraph) -> JSON:
    source, target = edge
    return {
        "from": source.partition(":")[2],
        "fromKind": kinds[source],
        "to": target.partition(":")[2],
        "toKind": kinds[target],
        "via": graph.via.get(edge),
        "crossDeployment": edge in graph.crossing,
    }


def _counts(findings: Sequence[JSON]) -> JSON:
    by_severity: Counter[str] = Counter(f["severity"] for f in findings)
    return {
        "bySeverity": {s: by_severity[s] for s in most_severe_first(by_severity)},
        "waived": sum(1 for f in findings if f.get("waived")),
    }


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "QueryError",
    "SnapshotQueries",
    "page",
    "read_baseline",
    "read_source",
]
