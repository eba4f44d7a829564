"""Merge: the snapshots of several deployments as one estate, joined on asset URIs.

Organisations run one Airflow per team and environment, and their data crosses those lines: an
asset produced in one deployment is consumed in another. Audited one deployment at a time, that
asset is "unproduced" where it is read, and a paused producer in one deployment starving
consumers in another is never found. In the merged estate:

- a DAG's identity is ``<deployment>/<dag_id>`` (same dag_id in two deployments: two DAGs), its
  ``mapsTo`` stays the dag_id, and ``airflow.deployment`` in its metadata names the deployment;
- an asset's identity stays its URI, the join key: one asset, whichever deployments touch it;
- an edge of an asset whose lineage spans deployments says ``cross_deployment``;
- every rule then runs on the merged estate as on one deployment's.

A part whose snapshot is an old one (its deployment could not be captured this time) is kept,
never dropped, and a lossiness record names it with its age. Pure: documents in, estate out.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.model import (
    DAG,
    BrokenFile,
    Dataset,
    Edge,
    Estate,
    Freshness,
    Lossiness,
    State,
)
from airflow_provider_coremodels.core.reading.cadence import format_duration
from airflow_provider_coremodels.core.reading.freshness import format_time, parse_time
from airflow_provider_coremodels.errors import UsageError

#: The metadata key naming a merged DAG's deployment.
DEPLOYMENT_KEY = "airflow.deployment"


@dataclass(frozen=True, slots=True)
class Part:
    """One deployment's snapshot, read back (``load_document``), for a merge.

    ``stale`` says why this is an old snapshot (its deployment was not captured this time); it
    is merged all the same, and a lossiness record names it and its age.
    """

    deployment: str
    estate: Estate
    stale: str | None = None


@gc_paused()
def merge(parts: Sequence[Part], *, now: datetime | None = None, clock: datetime | None = None) -> Estate:
    """The merged estate of ``parts``; ``now`` ages a stale part (default: the newest capture).

    ``clock`` is the merge's own time (the real one: it reads no clock itself): no part's capture
    time, nor any time it reports, is taken as later than it."""
    if not parts:
        raise UsageError("merge needs at least one snapshot")
    names = [part.deployment for part in parts]
    for name in names:
        if not name or "/" in name:
            raise UsageError(f"deployment name {name!r} cannot be merged: it must be non-empty, without '/'")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UsageError(
            f"deployment {twice[0]} is given twice: name each snapshot's deployment as NAME=PATH"
        )
    parts = sorted(parts, key=lambda part: part.deployment)
    lossiness: list[Lossiness] = []
    captured = _capture_times(parts, clock, lossiness)
    newest = max(captured.values(), key=parse_time) if captured else None
    reference = now or (parse_time(newest) if newest else None)

    dags: list[Dataset] = []
    assets: dict[str, Dataset] = {}
    edges: list[Edge] = []
    broken: list[BrokenFile] = []
    for part in parts:
        name = part.deployment
        for dataset in part.estate.datasets:
            if dataset.materialization == DAG:
                dags.append(_merged_dag(name, dataset))
            else:
                assets[dataset.identity] = merged_asset(assets.get(dataset.identity), dataset)
        edges.extend(renamed_edge(name, edge) for edge in part.estate.lineage)
        lossiness.extend(_prefixed(name, record) for record in part.estate.lossiness)
        broken.extend(_renamed_file(name, file) for file in part.estate.import_errors)
        if part.stale is not None:
            lossiness.append(_stale_record(part, captured.get(part.deployment), reference))

    edges = across_deployments(edges, assets)
    unique = {edge.key: edge for edge in edges}  # a DAG may name an asset twice only within its deployment

    datasets = sorted([*dags, *assets.values()], key=lambda d: (d.materialization, d.identity))
    versions = {part.estate.state.airflow_version for part in parts}
    apis = {part.estate.state.api_version for part in parts}
    state = State(
        connector_version=__version__,
        airflow_version=versions.pop() if len(versions) == 1 else None,
        api_version=apis.pop() if len(apis) == 1 else None,
        captured_at=newest,
        deployments=tuple(part.deployment for part in parts),
    )
    bound = format_time(clock) if clock is not None else None  # for a part with no capture time
    freshness = _merged_freshness(parts, captured, bound, lossiness)  # its records first, then the sort
    lossiness.sort(key=lambda r: (r.artifact, r.subject or "", r.message))
    return Estate(
        datasets=tuple(datasets),
        lineage=tuple(sorted(unique.values(), key=lambda e: e.key)),
        state=state,
        lossiness=tuple(lossiness),
        freshness=freshness,
        import_errors=tuple(sorted(broken, key=lambda file: file.file)),
    )


def merged_id(deployment: str, dag_id: str) -> str:
    return f"{deployment}/{dag_id}"


def _deployment_of(merged: str) -> str:
    return merged.partition("/")[0]


#: Where a merged asset's producers and consumers run, when its lineage spans deployments.
PRODUCED_IN_KEY = "airflow.producedIn"
CONSUMED_IN_KEY = "airflow.consumedIn"


def _capture_times(
    parts: Sequence[Part], clock: datetime | None, lossiness: list[Lossiness]
) -> dict[str, str]:
    """Each part's capture time, never after the merge's own ``clock``: a part is a document
    someone else wrote, and a capture time in the future would move the whole merged estate's
    judging time (and its freshness) there. One clamped is a lossiness record naming it."""
    times: dict[str, str] = {}
    for part in parts:
        claimed = part.estate.state.captured_at
        try:
            when = parse_time(claimed) if claimed else None
        except ValueError:
            when = None
        if when is None:
            continue
        if clock is not None and when > clock:
            lossiness.append(
                Lossiness(
                    "snapshot",
                    f"deployment {part.deployment}: its snapshot says it was captured at {claimed}, after "
                    f"the merge's clock ({format_time(clock)}): taken as captured then",
                )
            )
            when = clock
        times[part.deployment] = format_time(when)
    return times


def across_deployments(edges: list[Edge], assets: dict[str, Dataset]) -> list[Edge]:
    """The edges, those of an asset whose lineage spans deployments marked ``cross_deployment``; and
    each such asset in ``assets`` (replaced there) saying where its producers and consumers run."""
    sides: dict[str, dict[bool, set[str]]] = defaultdict(lambda: {True: set(), False: set()})
    for edge in edges:
        if not edge.dag_link:  # a trigger or sensor joins two DAGs of one deployment
            sides[edge.asset][edge.producing].add(_deployment_of(edge.dag_id))
    crossing = {asset for asset, by in sides.items() if len(by[True] | by[False]) > 1}
    for uri in crossing & assets.keys():  # who claims what, across deployments, said on the asset
        assets[uri] = _attributed(assets[uri], sides[uri][True], sides[uri][False])
    return [_crossing(edge) if not edge.dag_link and edge.asset in crossing else edge for edge in edges]


def _attributed(asset: Dataset, producers: set[str], consumers: set[str]) -> Dataset:
    metadata = dict(asset.metadata)
    if producers:
        metadata[PRODUCED_IN_KEY] = ",".join(sorted(producers))
    if consumers:
        metadata[CONSUMED_IN_KEY] = ",".join(sorted(consumers))
    return dataclasses.replace(asset, metadata=metadata)


def _merged_dag(deployment: str, dag: Dataset) -> Dataset:
    """The DAG renamed, its fields shared with the part's (never copied: there are millions).

    Built field by field rather than with ``dataclasses.replace``, which costs several times as
    much, and this runs once per DAG of every deployment."""
    return Dataset(
        merged_id(deployment, dag.identity),
        dag.name,
        dag.materialization,
        dag.physical_name,
        dag.description,
        dag.tags,
        {**dag.metadata, DEPLOYMENT_KEY: deployment},
        dag.fields,
        dag.maps_to or dag.identity,
    )


def merged_asset(seen: Dataset | None, asset: Dataset) -> Dataset:
    """One asset from every deployment that knows its URI: the first (by deployment name) gives
    its name and metadata; a watcher anywhere makes it watched; aliases are united."""
    if seen is None:
        return asset
    metadata = {**asset.metadata, **seen.metadata}
    if "true" in (asset.metadata.get("airflow.watched"), seen.metadata.get("airflow.watched")):
        metadata["airflow.watched"] = "true"
    aliases = {
        alias
        for source in (seen, asset)
        for alias in source.metadata.get("airflow.aliases", "").split(",")
        if alias
    }
    if aliases:
        metadata["airflow.aliases"] = ",".join(sorted(aliases))
    return dataclasses.replace(seen, metadata=metadata, tags=tuple(sorted({*seen.tags, *asset.tags})))


def renamed_edge(deployment: str, edge: Edge) -> Edge:
    """The edge with its DAG end named ``<deployment>/<dag_id>``; the asset end is the join key. A
    trigger or sensor joins two DAGs of the deployment, both renamed: the REST API shows no link to
    another deployment's DAG."""
    if edge.dag_link:
        return Edge.link(
            merged_id(deployment, edge.dependent),
            merged_id(deployment, edge.depends_on),
            edge.via or "",
            external=edge.external,
        )
    if edge.producing:
        return Edge.produces(
            merged_id(deployment, edge.depends_on),
            edge.dependent,
            external=edge.external,
            via=edge.via,
            source=edge.source,
        )
    return Edge.consumes(
        merged_id(deployment, edge.dependent),
        edge.depends_on,
        external=edge.external,
        via=edge.via,
        source=edge.source,
    )


def _renamed_file(deployment: str, file: BrokenFile) -> BrokenFile:
    """A broken file of a deployment: ``<deployment>/<bundle>/<path>``, its DAGs renamed too."""
    return BrokenFile(
        f"{deployment}/{file.file.lstrip('/')}",
        file.path,
        file.error,
        file.bundle,
        tuple(merged_id(deployment, dag_id) for dag_id in file.dags),
        tuple((merged_id(deployment, dag_id), uri) for dag_id, uri in file.outlets),
    )


def _crossing(edge: Edge) -> Edge:
    return Edge(
        edge.dependent,
        edge.dependent_kind,
        edge.depends_on,
        edge.depends_on_kind,
        edge.external,
        edge.via,
        True,
        edge.source,
    )


def _prefixed(deployment: str, record: Lossiness) -> Lossiness:
    return dataclasses.replace(record, message=f"deployment {deployment}: {record.message}")


def _stale_record(part: Part, captured: str | None, reference: datetime | None) -> Lossiness:
    age = ""
    if captured and reference is not None:
        age = f", {format_duration((reference - parse_time(captured)).total_seconds())} old"
    when = f"from {captured}{age}" if captured else "of unknown age"
    return Lossiness(
        "snapshot",
        f"deployment {part.deployment}: {part.stale}; its last good snapshot ({when}) stands in for it",
        part.deployment,
    )


def _merged_freshness(
    parts: Sequence[Part], captured: Mapping[str, str], bound: str | None, lossiness: list[Lossiness]
) -> Freshness:
    """Each deployment's facts, its DAGs renamed; what one deployment does not know stays unknown
    for its own assets and DAGs only. An asset update or registration a part dates after its own
    capture cannot have been seen by it: it is taken as at that capture (a record says so); a part
    with no capture time is held to ``bound``, the merge's clock. So no asset's last update is
    ever later than the merge's clock; an update a part dates earlier is taken at its word, and
    may make another deployment's stale asset look fresh (docs/federation.md says so)."""
    updates: dict[str, str | None] = {}
    told = False
    created: dict[str, str] = {}
    failed: set[str] = set()
    failed_told = False
    next_runs: dict[str, str] = {}
    partitioned: set[str] = set()
    since: list[str] = []
    for part in parts:
        facts = part.estate.freshness
        rename = functools.partial(merged_id, part.deployment)
        ceiling = captured.get(part.deployment)
        limit = "its capture" if ceiling else "the merge's clock"
        ceiling = ceiling or bound
        clamp = functools.partial(_at_most, ceiling)
        future = sum(
            1
            for when in (*(facts.asset_updates or {}).values(), *facts.asset_created.values())
            if when is not None and clamp(when) != when
        )
        if future:
            lossiness.append(
                Lossiness(
                    "snapshot",
                    f"deployment {part.deployment}: {future} asset time{'s' if future != 1 else ''} dated "
                    f"after {limit} ({ceiling}) taken as at {limit}",
                )
            )
        if facts.asset_updates is not None:
            told = True
            for uri, when in facts.asset_updates.items():
                newest = [t for t in (updates.get(uri), clamp(when) if when else None) if t]
                updates[uri] = max(newest, key=parse_time) if newest else None
        if facts.updates_since:
            since.append(clamp(facts.updates_since))
        for uri, when in facts.asset_created.items():
            when = clamp(when)
            created[uri] = min(created.get(uri, when), when, key=parse_time)
        if facts.failed_latest_run is not None:
            failed_told = True
            failed.update(rename(dag_id) for dag_id in facts.failed_latest_run)
        next_runs.update({rename(dag_id): when for dag_id, when in facts.next_run_after.items()})
        partitioned.update(rename(dag_id) for dag_id in facts.partitioned)
    return Freshness(
        asset_updates=updates if told else None,
        updates_since=max(since, key=parse_time) if since else None,
        asset_created=created,
        failed_latest_run=frozenset(failed) if failed_told else None,
        next_run_after=next_runs,
        partitioned=frozenset(partitioned),
    )


def _at_most(ceiling: str | None, when: str) -> str:
    """``when``, or ``ceiling`` where ``when`` is later (or unreadable): times a part cannot know."""
    if ceiling is None:
        return when
    try:
        return when if parse_time(when) <= parse_time(ceiling) else ceiling
    except ValueError:
        return ceiling
