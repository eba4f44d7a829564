"""A change judged in the estate it lands in: one bundle's DAGs, parsed from a pull request's files,
put in place of that bundle's DAGs in a stored snapshot, and what that does.

``splice`` takes the baseline's estate (a deployment's snapshot, or a merged one) and the estate
the DAG folder parses to, and gives the estate a capture would give once the change is deployed:
every other bundle, and in a merged baseline every other deployment, stays as stored; a file of
the bundle that no longer imports keeps its DAGs as last parsed, as Airflow does. ``describe``
says what the change does: the findings it opens and closes, the lineage edges and DAGs it adds
and removes, and every DAG downstream of what changed, with its owners. Pure: estates in, a
change out.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_coremodels.core.checks.teams import UNOWNED, Teams
from airflow_provider_coremodels.core.comparing.changes import finding_key, opened_and_closed
from airflow_provider_coremodels.core.comparing.locations import Located
from airflow_provider_coremodels.core.estate.model import (
    DAG,
    VIA_ALIAS,
    VIA_REF,
    WARNINGS_KEY,
    BrokenFile,
    Dataset,
    Edge,
    Estate,
    Finding,
    Freshness,
    Lossiness,
    State,
)
from airflow_provider_coremodels.core.estate.rules import severity_rank
from airflow_provider_coremodels.core.reading.broken import read_import_errors
from airflow_provider_coremodels.core.reading.dag_links import owned_links
from airflow_provider_coremodels.core.reading.merge import (
    CONSUMED_IN_KEY,
    DEPLOYMENT_KEY,
    PRODUCED_IN_KEY,
    across_deployments,
    merged_asset,
    merged_id,
    renamed_edge,
)
from airflow_provider_coremodels.core.reading.owner_links import owner_links
from airflow_provider_coremodels.core.reading.parse import build_estate
from airflow_provider_coremodels.core.reading.references import DEPENDENCIES
from airflow_provider_coremodels.core.snapshots.document import dataset_json, edge_json, finding_json

BUNDLE_KEY = "airflow.bundle"
RELATIVE_FILELOC_KEY = "airflow.relativeFileloc"
PAUSED_KEY = "airflow.paused"
OWNERS_KEY = "airflow.owners"
CONFLICT_KEY = "airflow.assetConflict"
#: What Airflow reports of a DAG once it runs (its DAG warnings): the deployment's, not the code's.
_SERVER_KEYS = (WARNINGS_KEY, CONFLICT_KEY)
#: The DAG folder a new bundle is read from by default: Airflow's own name for ``[core] dags_folder``.
DEFAULT_BUNDLE = "dags-folder"


@dataclass(frozen=True, slots=True)
class Target:
    """Which DAGs of the baseline the parsed folder stands for: ``bundle``, in ``deployment`` for a
    merged baseline (None for one deployment's snapshot)."""

    bundle: str
    deployment: str | None = None

    def owns(self, dag: Dataset) -> bool:
        if dag.metadata.get(BUNDLE_KEY) != self.bundle:
            return False
        return self.deployment is None or dag.metadata.get(DEPLOYMENT_KEY) == self.deployment

    def owns_file(self, file: BrokenFile) -> bool:
        if file.bundle != self.bundle:
            return False
        if self.deployment is None:
            return True
        return file.file.startswith(f"{self.deployment}/")

    def dag_id(self, parsed: str) -> str:
        """A parsed DAG's identity in the baseline's estate."""
        return parsed if self.deployment is None else merged_id(self.deployment, parsed)

    def parsed_id(self, identity: str) -> str:
        """A baseline DAG's dag_id as the folder names it."""
        if self.deployment is None:
            return identity
        return identity.removeprefix(f"{self.deployment}/")


@dataclass(frozen=True, slots=True)
class Scope:
    """The part of the bundle a change can alter (``--base``): its ``files`` (paths in the bundle)
    and the DAGs parsed from them at the merge base (``dags``, as the folder names them). A DAG or
    broken file of the bundle outside it stays as the baseline has it."""

    files: frozenset[str]
    dags: frozenset[str] = frozenset()

    def holds(self, path: str | None) -> bool:
        """Whether a file of the bundle (its path in the bundle; Airflow 3.0's absolute one) is in it."""
        if not path:
            return False
        return any(
            path == f or path.startswith(f + "/") or (path.startswith("/") and path.endswith("/" + f))
            for f in self.files
        )


# -- the baseline's view of the folder: what the parse needs from it -------------------------


@dataclass(frozen=True, slots=True)
class Deployed:
    """What the baseline knows of the bundle that the code cannot show: where the deployment keeps
    its files (``root``, the prefix of its DAGs' ``fileloc``), which DAGs are paused there, and
    how Airflow names its files (``files``: dag_id -> relative path)."""

    root: str | None
    paused: Mapping[str, bool]
    files: Mapping[str, str]
    known: bool  # whether the baseline has any DAG of the bundle


def deployed(baseline: Estate, target: Target) -> Deployed:
    """What the parse of ``target``'s folder takes from the baseline: the bundle's root, its DAGs'
    paused flags (by dag_id as the folder names them) and files."""
    roots: dict[str, int] = defaultdict(int)
    paused: dict[str, bool] = {}
    files: dict[str, str] = {}
    for dag in baseline.dags():
        if not target.owns(dag):
            continue
        dag_id = target.parsed_id(dag.identity)
        flag = dag.metadata.get(PAUSED_KEY)
        if flag in ("true", "false"):
            paused[dag_id] = flag == "true"
        relative = dag.metadata.get(RELATIVE_FILELOC_KEY)
        if relative:
            files[dag_id] = relative
        if relative and dag.physical_name and dag.physical_name.endswith(relative):
            roots[dag.physical_name[: -len(relative)].rstrip("/")] += 1
    root = max(sorted(roots), key=lambda r: roots[r]) if roots else None
    return Deployed(root, paused, files, known=bool(files or paused))


def bundles_of(baseline: Estate, deployment: str | None = None) -> list[str]:
    """The bundles the baseline's DAGs come from (of one deployment, for a merged baseline)."""
    return sorted(
        {
            bundle
            for dag in baseline.dags()
            if (bundle := dag.metadata.get(BUNDLE_KEY))
            and (deployment is None or dag.metadata.get(DEPLOYMENT_KEY) == deployment)
        }
    )


# -- the parsed bundle ----------------------------------------------------------------------------


def parsed_bundle(
    dags: Any, tasks: Any, datasets: Any, *, state: State, lossiness: Iterable[Lossiness] = ()
) -> Estate:
    """The estate of a parsed DAG folder: ``build_estate`` of its artifacts, as of a capture's,
    except that a folder in which no file defines a DAG (every one broken, say) is an estate of
    its import errors alone, not an unusable dags artifact: it is the change, not the input, that
    is broken."""
    entries = dags.get("dags") if isinstance(dags, dict) else None
    if entries:
        return build_estate(dags, tasks, datasets, state=state, lossiness=lossiness)
    records = list(lossiness)
    broken, _ = read_import_errors(dags, {}, records)
    return Estate(datasets=(), lineage=(), state=state, lossiness=tuple(records), import_errors=tuple(broken))


# -- the splice --------------------------------------------------------------------------------


def alias_uses(datasets: Any) -> dict[str, set[str]]:
    """Which aliases each DAG writes or waits on, read off the dependency graph the parse gives
    (``asset-alias:<name>`` nodes): the code names an alias, only run time its assets."""
    graph = datasets.get(DEPENDENCIES) if isinstance(datasets, dict) else None
    edges = graph.get("edges") if isinstance(graph, dict) else None
    uses: dict[str, set[str]] = defaultdict(set)
    for edge in edges if isinstance(edges, list) else ():
        if not isinstance(edge, dict):
            continue
        ends = (edge.get("source_id"), edge.get("target_id"))
        if not all(isinstance(end, str) for end in ends):
            continue
        dags = [str(end)[len("dag:") :] for end in ends if str(end).startswith("dag:")]
        aliases = [str(end)[len(_ALIAS_NODE) :] for end in ends if str(end).startswith(_ALIAS_NODE)]
        for dag_id in dags:
            uses[dag_id].update(aliases)
    return dict(uses)


_ALIAS_NODE = "asset-alias:"


def _learned_at_run_time(
    baseline: Estate, parsed: Estate, target: Target, replaced: set[str], aliases: Mapping[str, set[str]]
) -> tuple[list[Edge], set[str], set[str]]:
    """The baseline's edges of the bundle's DAGs that only run time resolves, where the code still
    makes the reference: an edge through an alias the DAG still writes or waits on (the alias's
    assets are known from asset events alone), and a schedule on ``Asset.ref`` that the parse could
    not resolve to an asset of the code (one such an alias created). Returns those edges, the
    aliases they resolve and the DAGs whose references they resolve."""
    present = {target.dag_id(d.identity) for d in parsed.dags()}
    declared = {a.identity for a in parsed.assets()}
    unresolved_refs = {
        target.dag_id(r.subject)
        for r in parsed.lossiness
        if r.artifact == "datasets" and r.subject and "Asset.ref(" in r.message
    }
    kept: list[Edge] = []
    resolved_aliases: set[str] = set()
    resolved_refs: set[str] = set()
    for edge in baseline.lineage:
        if (
            edge.dag_link
            or edge.dag_id not in replaced
            or edge.dag_id not in present
            or edge.asset in declared
        ):
            continue
        if edge.via == VIA_REF and edge.dag_id in unresolved_refs:
            kept.append(edge)
            resolved_refs.add(edge.dag_id)
        elif edge.via and edge.via.startswith(VIA_ALIAS):
            names = set(edge.via[len(VIA_ALIAS) :].split(","))
            used = names & aliases.get(target.parsed_id(edge.dag_id), set())
            if used:
                kept.append(edge)
                resolved_aliases.update(used)
    return kept, resolved_aliases, resolved_refs


def splice(
    baseline: Estate,
    parsed: Estate,
    target: Target,
    *,
    aliases: Mapping[str, set[str]] | None = None,
    scope: Scope | None = None,
) -> Estate:
    """The baseline's estate with ``target``'s DAGs replaced by the parsed ones.

    - Every DAG of another bundle (or deployment) stays as stored, with its edges and broken files.
    - A file of the bundle that does not import keeps the DAGs that last parsed from it in the
      baseline, as Airflow does (they are listed, stale, and run nowhere); its edges are dropped,
      but not the assets they named: Airflow keeps the references, so it keeps the assets.
    - An asset stays while some DAG still names it (or a broken file's DAGs last named it), or
      when the baseline shows no DAG of the bundle naming it; one that only the bundle's replaced
      DAGs named goes, as Airflow orphans it.
    - DAG warnings are the deployment's: a parsed DAG the baseline knows keeps its stored ones.
    - What only run time resolves (an alias's assets, an ``Asset.ref`` to an asset an alias made)
      stays as the baseline has it while the code still makes the reference (``aliases``: the
      aliases each parsed DAG writes or waits on, ``alias_uses``).
    - Freshness (asset updates, latest runs, next runs) is the baseline's, judged when it was.
    - With a ``scope`` (a parse scoped to a change), only the bundle's DAGs and broken files in it
      are replaced; the rest of the bundle stays as stored too.
    """
    merged = target.deployment is not None
    base_dags = {d.identity: d for d in baseline.dags()}
    replaced = {
        identity
        for identity, dag in base_dags.items()
        if target.owns(dag)
        and (
            scope is None
            or scope.holds(dag.metadata.get(RELATIVE_FILELOC_KEY))
            or target.parsed_id(identity) in scope.dags
        )
    }
    by_file: dict[str, list[str]] = defaultdict(list)
    for identity in sorted(replaced):
        relative = base_dags[identity].metadata.get(RELATIVE_FILELOC_KEY)
        if relative:
            by_file[relative].append(identity)

    broken: list[BrokenFile] = [
        f
        for f in baseline.import_errors
        if not target.owns_file(f) or (scope is not None and not scope.holds(f.path))
    ]
    if scope is not None:  # what the parse read beyond the scope (--full) stays as deployed
        parsed = _within_scope(parsed, scope)
    last_parsed: set[str] = set()
    for file in parsed.import_errors:
        held = tuple(by_file.get(file.path, ()))
        last_parsed.update(held)
        name = f"{target.deployment}/{file.file.lstrip('/')}" if merged else file.file
        broken.append(dataclasses.replace(file, file=name, dags=held, outlets=()))

    dags: dict[str, Dataset] = {i: d for i, d in base_dags.items() if i not in replaced or i in last_parsed}
    for dag in parsed.dags():
        identity = target.dag_id(dag.identity)
        if identity in dags:  # a DAG id another file of the bundle (last parsed) still holds
            continue
        dags[identity] = _placed(dag, identity, base_dags.get(identity), target)

    running_edges = [
        e for e in baseline.lineage if (e.link_owner if e.dag_link else e.dag_id) not in replaced
    ]
    at_run_time, resolved_aliases, resolved_refs = _learned_at_run_time(
        baseline, parsed, target, replaced, aliases or {}
    )
    running_edges.extend(at_run_time)
    running_edges.extend(_renamed(e, target) for e in parsed.lineage)
    lineage = _resolved(running_edges, dags.keys())

    named = {edge.asset for edge in lineage if not edge.dag_link}
    base_named: dict[str, set[str]] = defaultdict(set)
    for edge in baseline.lineage:
        if not edge.dag_link:
            base_named[edge.asset].add(edge.dag_id)
            if edge.dag_id in last_parsed:  # Airflow keeps a broken file's references, and so the asset
                named.add(edge.asset)
    parsed_assets = {a.identity: a for a in parsed.assets()}
    assets: dict[str, Dataset] = {}
    for asset in baseline.assets():
        uri = asset.identity
        only_ours = bool(base_named.get(uri)) and base_named[uri] <= replaced
        if uri in parsed_assets:
            assets[uri] = parsed_assets[uri] if only_ours else merged_asset(asset, parsed_assets[uri])
        elif uri in named or not only_ours:
            assets[uri] = asset
    for uri, asset in parsed_assets.items():
        assets.setdefault(uri, asset)
    if merged:
        assets = {uri: _unattributed(asset) for uri, asset in assets.items()}
        lineage = across_deployments(lineage, assets)

    lossiness = [r for r in baseline.lossiness if not _about(r.subject, replaced)]
    for record in parsed.lossiness:
        if record.artifact == "datasets" and (
            (record.subject in resolved_aliases)
            or (
                record.subject
                and target.dag_id(record.subject) in resolved_refs
                and "Asset.ref(" in record.message
            )
        ):
            continue  # resolved by the baseline, as the deployment resolves it
        lossiness.append(_renamed_record(record, target))
    lossiness.extend(
        Lossiness(
            "datasets",
            f"alias '{alias}': the assets written through it are the baseline's, from asset events "
            "the code cannot show",
            alias,
        )
        for alias in sorted(resolved_aliases)
    )
    datasets = sorted([*dags.values(), *assets.values()], key=lambda d: (d.materialization, d.identity))
    return Estate(
        datasets=tuple(datasets),
        lineage=tuple(sorted(lineage, key=lambda e: e.key)),
        state=baseline.state,
        lossiness=tuple(sorted(set(lossiness), key=lambda r: (r.artifact, r.subject or "", r.message))),
        freshness=_freshness(baseline.freshness, replaced - dags.keys()),
        import_errors=tuple(sorted(broken, key=lambda f: f.file)),
    )


def _within_scope(parsed: Estate, scope: Scope) -> Estate:
    """The parsed bundle less what lies outside ``scope``: DAGs of other files, their edges, the
    assets only they name, and other files' import errors."""
    kept = {d.identity for d in parsed.dags() if scope.holds(d.metadata.get(RELATIVE_FILELOC_KEY))}
    lineage = tuple(e for e in parsed.lineage if (e.link_owner if e.dag_link else e.dag_id) in kept)
    named = {e.asset for e in lineage if not e.dag_link}
    datasets = tuple(
        d
        for d in parsed.datasets
        if (d.identity in kept if d.materialization == "dag" else d.identity in named)
    )
    errors = tuple(f for f in parsed.import_errors if scope.holds(f.path))
    return dataclasses.replace(parsed, datasets=datasets, lineage=lineage, import_errors=errors)


def _about(subject: str | None, dags: set[str]) -> bool:
    """Whether a record's subject is one of ``dags`` or one of their tasks (``dag_id.task_id``; a
    dag_id may hold dots itself, so every split is tried)."""
    if subject is None:
        return False
    if subject in dags:
        return True
    cut = subject.rfind(".")
    while cut > 0:
        if subject[:cut] in dags:
            return True
        cut = subject.rfind(".", 0, cut)
    return False


def _placed(dag: Dataset, identity: str, before: Dataset | None, target: Target) -> Dataset:
    """A parsed DAG as the baseline's estate holds it: renamed for a merged baseline, its DAG
    warnings the stored ones."""
    metadata = {k: v for k, v in dag.metadata.items() if k not in _SERVER_KEYS}
    if before is not None:
        metadata.update({k: before.metadata[k] for k in _SERVER_KEYS if k in before.metadata})
    if target.deployment is not None:
        metadata[DEPLOYMENT_KEY] = target.deployment
    return dataclasses.replace(
        dag,
        identity=identity,
        metadata=dict(sorted(metadata.items())),
        maps_to=dag.identity if target.deployment is not None else dag.maps_to,
    )


def _renamed(edge: Edge, target: Target) -> Edge:
    return edge if target.deployment is None else renamed_edge(target.deployment, edge)


def _renamed_record(record: Lossiness, target: Target) -> Lossiness:
    if target.deployment is None:
        return record
    return Lossiness(
        record.artifact,
        f"deployment {target.deployment}: {record.message}",
        target.dag_id(record.subject) if record.subject else None,
    )


def _resolved(edges: Iterable[Edge], dags: Iterable[str]) -> list[Edge]:
    """The edges, one per key, each ``external`` as the DAGs now say (a DAG link's about the DAG
    its task names) and none yet crossing deployments (``across_deployments`` says which do)."""
    known = set(dags)
    unique: dict[tuple[str, str, str, str], Edge] = {}
    for edge in edges:
        far = edge.link_target if edge.dag_link else edge.dag_id
        unique.setdefault(
            edge.key, dataclasses.replace(edge, external=far not in known, cross_deployment=False)
        )
    return list(unique.values())


def _unattributed(asset: Dataset) -> Dataset:
    """A merged baseline's asset without what ``across_deployments`` says of it, to be said anew."""
    if PRODUCED_IN_KEY not in asset.metadata and CONSUMED_IN_KEY not in asset.metadata:
        return asset
    kept = {k: v for k, v in asset.metadata.items() if k not in (PRODUCED_IN_KEY, CONSUMED_IN_KEY)}
    return dataclasses.replace(asset, metadata=kept)


def _freshness(stored: Freshness, gone: set[str]) -> Freshness:
    """The baseline's freshness, less the DAGs the change removes."""
    if not gone:
        return stored
    failed = stored.failed_latest_run
    return dataclasses.replace(
        stored,
        failed_latest_run=None if failed is None else frozenset(failed - gone),
        next_run_after={k: v for k, v in stored.next_run_after.items() if k not in gone},
        partitioned=frozenset(stored.partitioned - gone),
    )


# -- what the change does ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Affected:
    """A DAG downstream of what changed: ``through`` is the changed DAG or asset it is reached from;
    ``cut`` whether that is a cut (an edge removed, a DAG removed, paused or no longer importing)
    rather than a change that cuts nothing (an edge or a DAG added, a DAG back)."""

    dag: str
    owners: tuple[str, ...]
    through: str
    #: How to reach the owners (Airflow's ``owner_links``), where the capture read them.
    owner_links: tuple[tuple[str, str], ...] = ()
    #: The DAG's team where the rules file names teams (``unowned``: none of them); else None.
    team: str | None = None
    cut: bool = False

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dag": self.dag,
            "owners": list(self.owners),
            "through": self.through,
            "cut": self.cut,
        }
        if self.owner_links:
            out["ownerLinks"] = dict(self.owner_links)
        if self.team is not None:
            out["team"] = self.team
        return out


@dataclass(frozen=True, slots=True)
class Break:
    """A dependency the change cuts: ``dependent`` loses the asset or DAG ``through``, as the opened
    finding (``code``, ``subject``) says. ``dependent`` is a DAG the change does not touch, except
    for a trigger or sensor to a DAG that does not exist, which breaks the DAG making it."""

    code: str
    subject: str
    dependent: str
    owners: tuple[str, ...]
    through: str
    #: The dependent's team where the rules file names teams (``unowned``: none of them); else None.
    team: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "finding": {"code": self.code, "subject": self.subject},
            "dependent": self.dependent,
            "owners": list(self.owners),
            "team": self.team,
            "through": self.through,
        }


@dataclass(frozen=True, slots=True)
class Change:
    """What a change does to the estate it lands in (``describe``)."""

    bundle: str | None
    baseline: str | None
    opened: tuple[Finding, ...]
    closed: tuple[Finding, ...]
    lineage_added: tuple[Edge, ...]
    lineage_removed: tuple[Edge, ...]
    dags_added: tuple[str, ...]
    dags_removed: tuple[str, ...]
    dags_changed: tuple[str, ...]
    affected: tuple[Affected, ...]
    #: Where each parsed DAG is defined (its file and line): what SARIF points opened findings at.
    lines: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: Where the rules file names teams: every team the change touches (its added, removed or
    #: changed DAGs', an opened or closed finding's, an affected DAG's), in file order, ``unowned``
    #: last; else None.
    teams: tuple[str, ...] | None = None
    #: Each dependency the change cuts (``Break``), the most severe finding's first.
    breaks: tuple[Break, ...] = ()
    #: Where in the work tree each opened finding was caused (``locations.locate``): what SARIF
    #: points it at.
    locations: tuple[Located, ...] = ()

    @property
    def empty(self) -> bool:
        parts = (self.opened, self.closed, self.lineage_added, self.lineage_removed)
        return not any((*parts, self.dags_added, self.dags_removed, self.dags_changed))


def describe(
    before: Estate,
    after: Estate,
    findings_before: Sequence[Finding],
    findings_after: Sequence[Finding],
    *,
    bundle: str | None = None,
    baseline: str | None = None,
    lines: Mapping[str, int] | None = None,
    teams: Teams | None = None,
) -> Change:
    """What changed from ``before`` to ``after``: findings by (code, subject), DAGs by identity,
    edges by key, the dependencies the change cuts (``breaks``), and every DAG downstream of a cut
    or changed edge (in either estate's lineage: a removed edge harms the consumers the old lineage
    reached). A DAG is changed when its dataset (less where its file lies), its own edges or whether
    its file imports differ: a task renamed changes its DAG and reaches nobody downstream."""
    opened, closed = opened_and_closed(
        findings_before, findings_after, lambda f: finding_key(f.code, f.subject)
    )
    dags_then = {d.identity: d for d in before.dags()}
    dags_now = {d.identity: d for d in after.dags()}
    added = sorted(dags_now.keys() - dags_then.keys())
    removed = sorted(dags_then.keys() - dags_now.keys())
    broken_then, broken_now = before.broken_dags(), after.broken_dags()
    own_then, own_now = _own_edges(before.lineage), _own_edges(after.lineage)
    changed = sorted(
        identity
        for identity in dags_now.keys() & dags_then.keys()
        if _compared(dags_now[identity]) != _compared(dags_then[identity])
        or own_now.get(identity) != own_then.get(identity)
        or (identity in broken_then) != (identity in broken_now)
    )
    edges_then = {e.key: e for e in before.lineage}
    edges_now = {e.key: e for e in after.lineage}
    lineage_added = tuple(edges_now[k] for k in sorted(edges_now.keys() - edges_then.keys()))
    lineage_removed = tuple(edges_then[k] for k in sorted(edges_then.keys() - edges_now.keys()))

    # What starts a walk downstream, cuts first: a DAG gone, paused or broken, an edge removed;
    # then what cuts nothing: a DAG added or back, an edge added. A DAG changed in itself alone
    # (its tasks, its description) reaches nobody.
    stopped = {i for i in changed if i in broken_now and i not in broken_then}
    stopped |= {i for i in changed if dags_now[i].paused and not dags_then[i].paused}
    started = {i for i in changed if i in broken_then and i not in broken_now}
    started |= {i for i in changed if dags_then[i].paused and not dags_now[i].paused}
    seeds: list[_Seed] = [(DAG, identity, None, True) for identity in (*removed, *sorted(stopped))]
    seeds.extend((e.dependent_kind, e.dependent, e.depends_on, True) for e in lineage_removed)
    seeds.extend((DAG, identity, None, False) for identity in (*added, *sorted(started)))
    seeds.extend((e.dependent_kind, e.dependent, e.depends_on, False) for e in lineage_added)
    touched = {*added, *removed, *changed}
    affected = _downstream(
        seeds, (*before.lineage, *after.lineage), dags_now, dags_then, set(removed), touched
    )
    breaks = _breaks(opened, before, after, dags_now, touched)
    touched_teams = None
    if teams is not None:
        affected = tuple(
            dataclasses.replace(a, team=teams.team_of(dags_now.get(a.dag) or dags_then[a.dag]) or UNOWNED)
            for a in affected
        )
        breaks = tuple(
            dataclasses.replace(b, team=teams.team_of(dags_now[b.dependent]) or UNOWNED) for b in breaks
        )
        named = {t for f in (*opened, *closed) for t in (f.team or (UNOWNED,))} | {a.team for a in affected}
        named |= {b.team for b in breaks}
        for identity in (*added, *removed, *changed):  # the change's own DAGs: their teams wrote it
            named.add(teams.team_of(dags_now.get(identity) or dags_then[identity]) or UNOWNED)
        touched_teams = tuple(name for name in (*teams.names, UNOWNED) if name in named)
    return Change(
        bundle,
        baseline,
        tuple(opened),
        tuple(closed),
        lineage_added,
        lineage_removed,
        tuple(added),
        tuple(removed),
        tuple(changed),
        affected,
        dict(lines or {}),
        touched_teams,
        breaks,
    )


#: Where a DAG's file lies: a file moved to another folder, its DAGs as they were, changes none.
_LOCATION_KEYS = frozenset({RELATIVE_FILELOC_KEY})


def _compared(dag: Dataset) -> dict[str, Any]:
    """A DAG as ``describe`` compares it: as the document spells it, less where its file lies."""
    out = dataset_json(dag)
    out["physicalName"] = None
    out["metadata"] = {k: v for k, v in dag.metadata.items() if k not in _LOCATION_KEYS}
    return out


def _own_edges(lineage: Iterable[Edge]) -> dict[str, set[tuple[str, str, str, str]]]:
    """Each DAG's own edges, by key: its outlets, its schedule and inlets, the links its tasks make."""
    out: dict[str, set[tuple[str, str, str, str]]] = defaultdict(set)
    for edge in lineage:
        out[edge.link_owner if edge.dag_link else edge.dag_id].add(edge.key)
    return dict(out)


#: Where a walk downstream starts: the node's kind and name, the DAG or asset it is reached
#: through when the node is itself a DAG harmed (a changed edge's far end), and whether it is a cut.
_Seed = tuple[str, str, str | None, bool]


def _downstream(
    seeds: Sequence[_Seed],
    lineage: Iterable[Edge],
    dags_now: Mapping[str, Dataset],
    dags_then: Mapping[str, Dataset],
    removed: set[str],
    touched: set[str],
) -> tuple[Affected, ...]:
    """Every DAG that depends, at one remove or more, on a seed; each reached from the first seed
    (in the seeds' order, cuts first) that reaches it. A seed that is the dependent end of a changed
    edge is itself reached, through the edge's other end, unless the change touches it (its own edge
    changed). Breadth first, each node once: linear in the lineage."""
    dependents: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for edge in lineage:
        dependents[(edge.depends_on_kind, edge.depends_on)].add((edge.dependent_kind, edge.dependent))
    reached: dict[str, tuple[str, bool]] = {}
    seen: set[tuple[str, str]] = set()
    for kind, name, via, cut in dict.fromkeys(seeds):
        if via is not None and kind == DAG and name not in touched:
            reached.setdefault(name, (via, cut))
        seed = (kind, name)
        if seed in seen:
            continue
        seen.add(seed)
        queue = deque([seed])
        while queue:
            node = queue.popleft()
            for nxt in sorted(dependents.get(node, ())):
                if nxt[0] == DAG and nxt[1] not in removed:
                    reached.setdefault(nxt[1], (name, cut))
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
    out = []
    for dag_id in sorted(reached):
        dag = dags_now.get(dag_id) or dags_then.get(dag_id)
        if dag is None:  # an external DAG (a trigger's missing target): not in the estate to harm
            continue
        through, cut = reached[dag_id]
        links = tuple(sorted(owner_links(dag.metadata).items()))
        out.append(Affected(dag_id, _owners(dag), through, links, cut=cut))
    return tuple(out)


def _owners(dag: Dataset) -> tuple[str, ...]:
    return tuple(o for o in dag.metadata.get(OWNERS_KEY, "").split(",") if o)


def _breaks(
    opened: Iterable[Finding], before: Estate, after: Estate, dags: Mapping[str, Dataset], touched: set[str]
) -> tuple[Break, ...]:
    """Each dependency an unwaived opened finding says is cut, once (by its most severe finding):
    an asset left with no producer, for each active DAG that consumes it; a file that stops
    importing, for each DAG that consumes an asset its DAGs made, or is triggered by or waits on
    one of them; a trigger or sensor to a DAG the estate does not have, for the DAG making it.
    ``dags``: ``after``'s DAGs by identity; ``touched``: the DAGs the change adds, removes or changes."""
    consumers: dict[str, set[str]] = defaultdict(set)
    for edge in after.lineage:
        if not edge.dag_link and not edge.producing:
            consumers[edge.asset].add(edge.dag_id)

    def harmed(names: Iterable[str]) -> list[str]:
        return sorted(n for n in set(names) if n in dags and n not in touched and not dags[n].paused)

    files = {f.file: f for f in after.import_errors}
    out: dict[tuple[str, str], Break] = {}
    for finding in sorted(opened, key=lambda f: (-severity_rank(f.severity), f.code, f.subject)):
        if finding.waived:
            continue
        cuts: list[tuple[str, str]] = []  # (dependent, through)
        if finding.code == "asset-unproduced":
            cuts = [(dag_id, finding.subject) for dag_id in harmed(consumers.get(finding.subject, ()))]
        elif finding.code == "dag-import-error" and finding.subject in files:
            held = set(files[finding.subject].dags)
            for edge in before.lineage:
                if edge.depends_on not in held:
                    continue
                if edge.dag_link:
                    cuts.extend((dag_id, edge.depends_on) for dag_id in harmed([edge.dependent]))
                else:
                    cuts.extend((dag_id, edge.asset) for dag_id in harmed(consumers.get(edge.asset, ())))
        elif finding.code == "dag-link-missing":
            cuts = _missing_link(finding.subject, dags)
        for dependent, through in sorted(cuts):
            key = (dependent, through)
            if key not in out:
                out[key] = Break(finding.code, finding.subject, dependent, _owners(dags[dependent]), through)
    return tuple(out.values())


def _missing_link(subject: str, dags: Mapping[str, Dataset]) -> list[tuple[str, str]]:
    """The DAG making the trigger or sensor ``subject`` (``dag_id.task_id``, a dag_id may hold
    dots) and the DAG it names, which the estate does not have."""
    cut = len(subject)
    while (cut := subject.rfind(".", 0, cut)) > 0:
        dag = dags.get(subject[:cut])
        if dag is None:
            continue
        named = dag.maps_to or dag.identity  # a merged estate's <deployment>/ before the dag_id
        prefix = dag.identity[: len(dag.identity) - len(named)] if dag.identity.endswith(named) else ""
        task_id = subject[cut + 1 :]
        return [(dag.identity, prefix + target) for task, _, target in owned_links(dag) if task == task_id][
            :1
        ]
    return []


def change_json(change: Change) -> dict[str, Any]:
    """The document's ``change`` part."""
    return {
        "bundle": change.bundle,
        "baseline": change.baseline,
        "findingsOpened": [finding_json(f) for f in change.opened],
        "findingsClosed": [finding_json(f) for f in change.closed],
        "lineageAdded": [edge_json(e) for e in change.lineage_added],
        "lineageRemoved": [edge_json(e) for e in change.lineage_removed],
        "dagsAdded": list(change.dags_added),
        "dagsRemoved": list(change.dags_removed),
        "dagsChanged": list(change.dags_changed),
        "affected": [a.as_dict() for a in change.affected],
        "breaks": [b.as_dict() for b in change.breaks],
        "lines": dict(sorted(change.lines.items())),
        "locations": [located.as_dict() for located in change.locations],
        **({"teamsAffected": list(change.teams)} if change.teams is not None else {}),
    }
