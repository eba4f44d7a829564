"""The audit: conformance rules over one estate, coverage and drift against a baseline.

Every rule is a pure function of the parsed estate (no live Airflow is consulted), so an
audit gives the same answer in a task, in CI, and in a re-audit of a stored snapshot. The
whole audit runs in time linear in the estate.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass

from airflow_provider_coremodels.core.checks.policy import Policy, PolicyStatus, check_policy
from airflow_provider_coremodels.core.checks.teams import TeamIndex, with_teams
from airflow_provider_coremodels.core.checks.waivers import Waiver, apply_waivers
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.model import (
    ASSET,
    DAG,
    DOC_MD_KEY,
    VIA_ALIAS,
    VIA_INLET,
    WARNINGS_KEY,
    WATCHED_KEY,
    WATCHED_UNKNOWN,
    BrokenFile,
    Dataset,
    Edge,
    Estate,
    Finding,
    Materialization,
)
from airflow_provider_coremodels.core.estate.rules import make_finding
from airflow_provider_coremodels.core.reading.broken import with_outlets
from airflow_provider_coremodels.core.reading.conditions import AssetIndex, ConditionError, from_text
from airflow_provider_coremodels.core.reading.conflicts import AssetConflict, read_conflicts
from airflow_provider_coremodels.core.reading.dag_links import describe as describe_link
from airflow_provider_coremodels.core.reading.dag_links import link_findings
from airflow_provider_coremodels.core.reading.freshness import FreshnessStatus, judge, parse_time
from airflow_provider_coremodels.core.reading.inferred import inferred_note

DEFAULT_OWNER = "airflow"


@dataclass(frozen=True, slots=True)
class Baseline:
    """A previous snapshot to compare against; ``estate`` is None when it was stored over the cap."""

    fingerprint: str | None
    estate: Estate | None


@dataclass(frozen=True, slots=True)
class BaselineStatus:
    """Whether coverage and drift were evaluated, and if not, why."""

    evaluated: bool
    fingerprint: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class AuditResult:
    findings: tuple[Finding, ...]
    baseline: BaselineStatus
    freshness: FreshnessStatus = dataclasses.field(
        default_factory=lambda: FreshnessStatus(None, reason="not judged")
    )
    #: The estate's broken files as judged: with the assets their DAGs produced in the baseline
    #: (what the document stores, so a re-audit without that baseline says the same).
    import_errors: tuple[BrokenFile, ...] = ()
    #: How the team's rules ran (``policy.py``); None when no rules were given and none are missed.
    policy: PolicyStatus | None = None


@gc_paused()
def audit(
    estate: Estate,
    baseline: Baseline | None = None,
    *,
    no_baseline: str = "no baseline given",
    waivers: Sequence[Waiver] = (),
    today: dt.date | None = None,
    now: dt.datetime | None = None,
    tolerance: float | None = None,
    policy: Policy | None = None,
    no_policy: str | None = None,
) -> AuditResult:
    """Run every rule, apply the waivers; findings come back sorted by (section, code, subject).

    ``no_baseline`` is the reason recorded when there is no baseline to compare against.
    ``policy`` is the team's rules (a rules file, ``policy.py``), run on the team's DAGs; without
    it, ``no_policy`` says why none ran where that is worth saying (a snapshot checked before).
    ``today`` decides which waivers have expired (default: today's date in UTC). ``now`` is
    when freshness is judged and ``tolerance`` how many cadences old an asset may grow (default:
    as a stored document was judged, else the capture time and 2), so a re-audit gives the same
    answer.
    """
    dags = {d.identity: d for d in estate.datasets if d.materialization == DAG}
    sides = lineage_sides(estate)
    notes = Notes(alternative_inputs(estate), estate.unconfirmed_inlets(), sides, assets_by_uri(estate))
    broken = recall_outlets(estate.import_errors, baseline.estate if baseline is not None else None)
    findings = list(conformance(estate, dags, sides, notes, broken))
    policy_status = PolicyStatus(None, reason=no_policy) if no_policy else None
    if policy is not None:
        team = (dag for dag in dags.values() if example_bundle(dag) is None)
        said, policy_status = check_policy(team, policy, estate.state.deployment)
        findings.extend(said)
    fresh, freshness_status = judge(
        estate,
        sides,
        dags,
        now=now or (None if estate.freshness.judged_at else capture_time(estate)),
        tolerance=tolerance,
        note=notes,
    )
    findings.extend(fresh)
    if baseline is None:
        status = BaselineStatus(False, reason=no_baseline)
    elif baseline.estate is None:
        status = BaselineStatus(
            False,
            fingerprint=baseline.fingerprint,
            reason="the baseline was stored without datasets (it exceeded the snapshot cap)",
        )
    else:
        status = BaselineStatus(True, fingerprint=baseline.fingerprint)
        findings.extend(drift(estate, baseline.estate))
    if waivers:
        findings = apply_waivers(findings, waivers, today or dt.datetime.now(dt.timezone.utc).date())
    findings.sort(key=lambda f: (f.section, f.code, f.subject, f.detail or ""))
    if policy is not None and policy.teams is not None:  # each finding told whose it is
        index = TeamIndex(policy.teams, estate, baseline.estate if baseline is not None else None, broken)
        findings = with_teams(findings, index)
    return AuditResult(tuple(findings), status, freshness_status, broken, policy_status)


def capture_time(estate: Estate) -> dt.datetime | None:
    """When the estate was captured, which freshness is judged at unless told otherwise."""
    captured = estate.state.captured_at
    try:
        return parse_time(captured) if captured else None
    except ValueError:
        return None


# -- conformance --------------------------------------------------------------------------

#: Airflow 3 loads its own example DAGs (``[core] load_examples``) as a bundle of this name;
#: Airflow 2 from its package's example_dags folder.
EXAMPLES_BUNDLE = "example_dags"
#: Airflow 3.3 also loads each installed provider's example DAGs, as ``<distribution>-example-dags``.
PROVIDER_EXAMPLES_SUFFIX = "-example-dags"
_AIRFLOW2_EXAMPLES = "/airflow/example_dags/"


@dataclass(frozen=True, slots=True)
class Sides:
    """An asset's producing and consuming edges."""

    producers: list[Edge] = dataclasses.field(default_factory=list)
    consumers: list[Edge] = dataclasses.field(default_factory=list)

    def producer_ids(self) -> set[str]:
        return {edge.dag_id for edge in self.producers}

    def consumer_ids(self) -> set[str]:
        return {edge.dag_id for edge in self.consumers}


def conformance(
    estate: Estate,
    dags: Mapping[str, Dataset],
    sides: Mapping[str, Sides],
    notes: Notes,
    broken: tuple[BrokenFile, ...] = (),
) -> Iterator[Finding]:
    """The conformance rules; ``dags`` and ``sides`` are the estate's DAGs by id and
    ``lineage_sides``, ``notes`` what a finding says of an asset's consumers, worked out once for
    every rule; ``broken`` the estate's broken files, knowing what their DAGs produced
    (``recall_outlets``)."""
    examples: dict[str, list[str]] = defaultdict(list)
    for dag_id, dag in dags.items():
        bundle = example_bundle(dag)
        if bundle is not None:
            examples[bundle].append(dag_id)
            continue  # Airflow's code, not the team's: one examples-loaded finding per bundle says so
        if finding := dag_no_description(dag):
            yield finding
        if finding := dag_no_owner(dag):
            yield finding
        if WARNINGS_KEY in dag.metadata:
            yield from airflow_warnings(dag)
    for bundle in sorted(examples):
        yield examples_loaded(bundle, sorted(examples[bundle]))
    yield from link_findings(dags, (dag_id for ids in examples.values() for dag_id in ids))
    starved_by = _starved_by(broken, sides)
    for file in broken:
        yield dag_import_error(file, sides, dags)
    for asset in estate.datasets:
        if asset.materialization != ASSET:
            continue
        asset_sides = sides.get(asset.identity, Sides())
        if finding := asset_unproduced(asset, asset_sides, dags, notes, starved_by.get(asset.identity)):
            yield finding
        if finding := paused_producer(asset, asset_sides, dags, notes):
            yield finding
    yield from asset_conflicts(dags)


def example_bundle(dag: Dataset) -> str | None:
    """The example bundle a DAG comes from, or None for the team's own DAGs: Airflow's own
    (``example_dags``) and, from Airflow 3.3, each provider's (``<distribution>-example-dags``);
    on Airflow 2, which has no bundles, a file in Airflow's own ``example_dags`` folder."""
    bundle = dag.metadata.get("airflow.bundle")
    if bundle is not None:
        return bundle if bundle == EXAMPLES_BUNDLE or bundle.endswith(PROVIDER_EXAMPLES_SUFFIX) else None
    return EXAMPLES_BUNDLE if _AIRFLOW2_EXAMPLES in (dag.physical_name or "") else None


def examples_loaded(bundle: str, dag_ids: list[str]) -> Finding:
    shown = ", ".join(dag_ids[:5]) + (", ..." if len(dag_ids) > 5 else "")
    count = f"{len(dag_ids)} example DAG{'s' if len(dag_ids) != 1 else ''}"
    return make_finding("examples-loaded", bundle, f"{count}: {shown}")


def recall_outlets(broken: tuple[BrokenFile, ...], baseline: Estate | None) -> tuple[BrokenFile, ...]:
    """The broken files, each knowing the assets its DAGs produced in the baseline as well.

    Airflow clears a stale DAG's references once any DAG file is deleted, so whether the API
    still names what a broken DAG produced depends on the deployment's history; the baseline
    does not: captured while the file imported, its lineage says; captured while it was already
    broken, its own broken files do.
    """
    if not broken or baseline is None:
        return broken
    outlets: dict[str, set[str]] = defaultdict(set)
    for edge in baseline.lineage:
        if edge.producing and not edge.dag_link:
            outlets[edge.dag_id].add(edge.asset)
    for file in baseline.import_errors:  # a file already broken then: what it was known to produce
        for dag_id, uri in file.outlets:
            outlets[dag_id].add(uri)
    return with_outlets(broken, outlets)


def _starved_by(
    broken: tuple[BrokenFile, ...], sides: Mapping[str, Sides]
) -> dict[str, list[tuple[BrokenFile, list[str]]]]:
    """The assets a broken file leaves with no producer (nothing else produces them), each with the
    files and the DAGs of each that produced it: one pass over each file's outlets (a file of
    generated DAGs may hold thousands, each starving an asset of its own)."""
    starved: dict[str, list[tuple[BrokenFile, list[str]]]] = defaultdict(list)
    for file in broken:
        producers: dict[str, list[str]] = defaultdict(list)
        for dag_id, uri in file.outlets:
            producers[uri].append(dag_id)
        for uri in sorted(producers):
            if not sides.get(uri, Sides()).producers:
                starved[uri].append((file, producers[uri]))
    return starved


def dag_import_error(file: BrokenFile, sides: Mapping[str, Sides], dags: Mapping[str, Dataset]) -> Finding:
    """A file that does not import: the DAGs it held, the error, the consumers left waiting on what
    only those DAGs produced, and last the owners of its DAGs, who must fix it (as they last parsed;
    left out when none is known). The contract fixes the message, and the detail's naming of the
    DAGs and the error; the owners ride at the detail's end."""
    detail = f"dags: {', '.join(file.dags) if file.dags else 'none'}; {file.error}"
    starving = []
    for uri in file.assets():
        asset_sides = sides.get(uri, Sides())
        consumers = sorted(c for c in asset_sides.consumer_ids() if c in dags)
        if consumers and not asset_sides.producers:
            starving.append(f"{', '.join(consumers)} (through {uri})")
    if starving:
        detail += "; starves: " + "; ".join(starving)
    if owners := broken_owners(file, dags):
        detail += f"; owners: {', '.join(owners)}"
    return make_finding("dag-import-error", file.file, detail)


def broken_owners(file: BrokenFile, dags: Mapping[str, Dataset]) -> list[str]:
    """The owners of the DAGs a broken file last held, each once, sorted."""
    owners: set[str] = set()
    for dag_id in file.dags:
        dag = dags.get(dag_id)
        if dag is not None:
            owners.update(o for o in dag.metadata.get("airflow.owners", "").split(",") if o)
    return sorted(owners)


def dag_no_description(dag: Dataset) -> Finding | None:
    """No description, or only white space; a ``doc_md`` (Airflow's own documentation field) counts."""
    if (dag.description and dag.description.strip()) or dag.metadata.get(DOC_MD_KEY) == "true":
        return None
    return make_finding("dag-no-description", dag.identity, None)


def dag_no_owner(dag: Dataset) -> Finding | None:
    """No owner, or exactly the default ``airflow``: a default owner is nobody accountable."""
    owners = dag.metadata.get("airflow.owners", "")
    if owners and owners != DEFAULT_OWNER:
        return None
    detail = f"owners: {owners}" if owners else "owners: none"
    return make_finding("dag-no-owner", dag.identity, detail)


def airflow_warnings(dag: Dataset) -> Iterator[Finding]:
    """One finding per DAG warning Airflow reports on the DAG (asset conflicts aside: they have
    their own rule), its detail the warning's type and message as the parse kept them."""
    for kind, message in read_warnings(dag.metadata.get(WARNINGS_KEY, "")):
        yield make_finding("airflow-warning", dag.identity, f"{kind}: {message}" if message else kind)


def read_warnings(text: str) -> list[tuple[str, str]]:
    """``WARNINGS_KEY``'s value read back, sorted by type; anything but ``{type: message}`` reads as none
    (a hand-edited document)."""
    try:
        value = json.loads(text)
    except ValueError:
        return []
    if not isinstance(value, dict):
        return []
    return sorted((k, v) for k, v in value.items() if isinstance(k, str) and k and isinstance(v, str))


def asset_unproduced(
    asset: Dataset,
    sides: Sides,
    dags: Mapping[str, Dataset],
    notes: Notes,
    broken: list[tuple[BrokenFile, list[str]]] | None = None,
) -> Finding | None:
    """Consumed by a described DAG, and nothing can update it: no producing edge (external
    producers count), no watcher, no alias that a DAG writes through. ``broken``: the files that
    do not import whose DAGs produced it, each with those DAGs, named in the detail (the cause,
    and its fix)."""
    described = sorted(c for c in sides.consumer_ids() if c in dags)
    if sides.producers or not described or _updated_from_outside(asset) or _aliases(asset):
        return None
    detail = "consumers: " + ", ".join(described) + notes.on_consumers(asset.identity, described)
    for file, producers in broken or ():
        detail += f"; its producer {', '.join(producers)} does not import ({file.file})"
    detail += inferred_note(sides.consumers)
    return make_finding("asset-unproduced", asset.identity, detail + watchers_note(asset))


def paused_producer(
    asset: Dataset, sides: Sides, dags: Mapping[str, Dataset], notes: Notes
) -> Finding | None:
    """Every producer paused, some consumer active.

    External DAGs are unknown: never assumed paused or active. A watcher keeps the asset fresh
    whatever its DAGs do. A producer that writes through an alias counts as a producer; where
    nothing names who writes through the asset's aliases (the parse's lossiness says so), the
    rule cannot know that every producer is paused, and does not claim it.
    """
    producers = sides.producer_ids()
    if not producers or _updated_from_outside(asset):
        return None
    if _aliases(asset) and not any((e.via or "").startswith(VIA_ALIAS) for e in sides.producers):
        return None
    if not all(p in dags and dags[p].paused for p in producers):
        return None
    active = sorted(c for c in sides.consumer_ids() if c in dags and not dags[c].paused)
    if not active:
        return None
    detail = f"producers: {', '.join(sorted(producers))}; active consumers: {', '.join(active)}"
    said = detail + notes(asset.identity, active) + inferred_note([*sides.producers, *sides.consumers])
    return make_finding("paused-producer", asset.identity, said)


def asset_conflicts(dags: Mapping[str, Dataset]) -> Iterator[Finding]:
    """One finding per asset Airflow refused, read off its own DAG warnings on the DAGs that name it."""
    by_conflict: dict[AssetConflict, set[str]] = defaultdict(set)
    for dag_id, dag in dags.items():
        conflicts, _ = read_conflicts(dag.metadata.get("airflow.assetConflict", ""))
        for conflict in conflicts:
            by_conflict[conflict].add(dag_id)
    for conflict, dag_ids in by_conflict.items():
        detail = f"{conflict.describe()}; DAGs naming it: {', '.join(sorted(dag_ids))}"
        yield make_finding("asset-conflict", conflict.uri, detail)


def _updated_from_outside(asset: Dataset) -> bool:
    """A watcher (an event-driven trigger) updates the asset from outside Airflow's DAGs."""
    return asset.metadata.get(WATCHED_KEY) == "true"


def watchers_note(asset: Dataset) -> str:
    """What a finding that assumes no watcher must say where the API could not tell (the parse's
    lossiness says why: Airflow before 3.2 lists no watchers; 3.2 and later list an asset's only
    while a DAG scheduled on it is unpaused)."""
    if asset.metadata.get(WATCHED_KEY) != WATCHED_UNKNOWN:
        return ""
    return "; watchers unknown: an event-driven trigger Airflow does not list may update it"


def _aliases(asset: Dataset) -> list[str]:
    return [alias for alias in asset.metadata.get("airflow.aliases", "").split(",") if alias]


def assets_by_uri(estate: Estate) -> dict[str, Dataset]:
    return {d.identity: d for d in estate.datasets if d.materialization == ASSET}


@dataclass(frozen=True, slots=True)
class Notes:
    """What a finding that names an asset's consumers adds: those that run without it (it is one
    alternative among others), those that read it only through a task inlet only Airflow's
    references tell (``Estate.unconfirmed_inlets``), and watchers the API cannot see. Called as
    ``notes(uri, consumers)``: all of it, the form the freshness rules take."""

    alternatives: Mapping[str, set[str]]
    unconfirmed: set[str]
    sides: Mapping[str, Sides]
    assets: Mapping[str, Dataset]

    def __call__(self, uri: str, consumers: list[str]) -> str:
        asset = self.assets.get(uri)
        return self.on_consumers(uri, consumers) + (watchers_note(asset) if asset else "")

    def on_consumers(self, uri: str, consumers: list[str]) -> str:
        note = ""
        optional = [dag_id for dag_id in consumers if uri in self.alternatives.get(dag_id, ())]
        if optional:
            note += f"; only an alternative input of: {', '.join(optional)}"
        if self.unconfirmed:
            only_inlet = inlet_only_readers(self.sides.get(uri, Sides()))  # once, not per consumer
            doubtful = [c for c in consumers if c in self.unconfirmed and c in only_inlet]
            if doubtful:
                note += (
                    "; read only through a task inlet Airflow may keep after the code drops it: "
                    + ", ".join(doubtful)
                )
        return note


def inlet_only_readers(sides: Sides) -> set[str]:
    """The DAGs that read the asset only through a task inlet (no schedule on it)."""
    through_inlet = {e.dag_id for e in sides.consumers if e.via == VIA_INLET}
    return through_inlet - {e.dag_id for e in sides.consumers if e.via != VIA_INLET}


def alternative_inputs(estate: Estate) -> dict[str, set[str]]:
    """For each DAG scheduled on a condition, the assets it names only as alternatives (``|``)."""
    index = AssetIndex((d.identity, d.metadata) for d in estate.datasets if d.materialization == ASSET)
    alternatives: dict[str, set[str]] = {}
    for dag in estate.datasets:
        text = dag.metadata.get("airflow.assetCondition") if dag.materialization == DAG else None
        if not text:
            continue
        try:
            condition = from_text(text)
        except ConditionError:
            continue  # a hand-edited document: the condition says nothing this version can read
        if optional := index.alternatives(condition):
            alternatives[dag.identity] = optional
    return alternatives


def lineage_sides(estate: Estate) -> dict[str, Sides]:
    """Each asset's producing and consuming edges: every edge names which of its ends is the asset."""
    sides: dict[str, Sides] = defaultdict(Sides)
    for edge in estate.lineage:
        if edge.dag_link:
            continue  # a trigger or a sensor: no asset has a side in it
        side = sides[edge.asset]
        (side.producers if edge.producing else side.consumers).append(edge)
    return sides


# -- coverage and drift -------------------------------------------------------------------

_KIND = {DAG: "DAG", ASSET: "asset"}
_A_KIND = {DAG: "a DAG", ASSET: "an asset"}


def drift(estate: Estate, baseline: Estate) -> Iterator[Finding]:
    """Compare against a baseline estate: new and removed datasets, tasks and operator classes."""
    current = {(d.materialization, d.identity): d for d in estate.datasets}
    previous = {(d.materialization, d.identity): d for d in baseline.datasets}
    unknown_now = estate.fields_unknown()
    unknown_then = baseline.fields_unknown()
    for key, dataset in current.items():
        before = previous.get(key)
        if before is None:
            yield make_finding(
                "dataset-unmapped",
                dataset.identity,
                f"new {_KIND[dataset.materialization]}",
            )
        elif dataset.materialization == DAG:
            yield from _field_drift(
                dataset,
                before,
                known_now=unknown_now is not None and dataset.identity not in unknown_now,
                known_then=unknown_then is not None and dataset.identity not in unknown_then,
            )
    for key, dataset in previous.items():
        if key not in current:
            yield make_finding(
                "dataset-removed",
                dataset.identity,
                f"was {_A_KIND[dataset.materialization]}",
            )
    if estate.lineage_known() and baseline.lineage_known():
        yield from lineage_drift(estate, baseline, current.keys() & previous.keys())


def lineage_drift(
    estate: Estate, baseline: Estate, both: Set[tuple[Materialization, str]]
) -> Iterator[Finding]:
    """Edges added and removed between two datasets that are in both snapshots.

    An edge whose DAG or asset is new or gone is the dataset finding's to tell, and one whose DAG
    does not import the import error's: each is said once, where its cause is.
    """
    broken = estate.broken_dags().keys() | baseline.broken_dags().keys()

    def comparable(edge: Edge) -> bool:
        if edge.dag_link:
            ends = {edge.dependent, edge.depends_on}
            return all((DAG, end) in both for end in ends) and not ends & broken
        dag_end, asset_end = (DAG, edge.dag_id), (ASSET, edge.asset)
        return dag_end in both and asset_end in both and edge.dag_id not in broken

    now = {edge.key: edge for edge in estate.lineage if comparable(edge)}
    then = {edge.key: edge for edge in baseline.lineage if comparable(edge)}
    for key in now.keys() - then.keys():
        yield make_finding("lineage-added", edge_subject(now[key]), _edge_detail(now[key]))
    for key in then.keys() - now.keys():
        yield make_finding("lineage-removed", edge_subject(then[key]), _edge_detail(then[key]))


def edge_subject(edge: Edge) -> str:
    """How a lineage finding names its edge: ``<dependsOn> -> <dependent>``, the way data flows."""
    return f"{edge.depends_on} -> {edge.dependent}"


def _edge_detail(edge: Edge) -> str:
    if edge.dag_link:
        return describe_link(edge)
    role = "produces" if edge.producing else ("reads (task inlet)" if edge.via == VIA_INLET else "consumes")
    return f"DAG {edge.dag_id} {role} asset {edge.asset}" + inferred_note([edge])


def _field_drift(dag: Dataset, before: Dataset, *, known_now: bool, known_then: bool) -> Iterator[Finding]:
    now = {f.name: f for f in dag.fields}
    then = {f.name: f for f in before.fields}
    for name, field in now.items():
        subject = f"{dag.identity}.{name}"
        old = then.get(name)
        if old is None:
            if known_then:
                yield make_finding("field-unmapped", subject, None)
        elif old.native_type != field.native_type:
            detail = f"was {old.native_type}; now {field.native_type}"
            yield make_finding("field-type-drift", subject, detail)
    if known_now:
        for name in then.keys() - now.keys():
            yield make_finding("field-removed", f"{dag.identity}.{name}", None)
