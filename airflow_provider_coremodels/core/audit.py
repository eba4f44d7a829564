"""The audit: conformance rules over one estate, coverage and drift against a baseline.

Every rule is a pure function of the parsed estate (no live Airflow is consulted), so an
audit gives the same answer in a task, in CI, and in a re-audit of a stored snapshot. The
whole audit runs in time linear in the estate.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from airflow_provider_coremodels.core.collector import gc_paused
from airflow_provider_coremodels.core.conditions import AssetIndex, ConditionError, from_text
from airflow_provider_coremodels.core.conflicts import AssetConflict, read_conflicts
from airflow_provider_coremodels.core.freshness import FreshnessStatus, judge, parse_time
from airflow_provider_coremodels.core.model import ASSET, DAG, VIA_ALIAS, Dataset, Edge, Estate, Finding
from airflow_provider_coremodels.core.rules import make_finding
from airflow_provider_coremodels.core.waivers import Waiver, apply_waivers

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
) -> AuditResult:
    """Run every rule, apply the waivers; findings come back sorted by (section, code, subject).

    ``no_baseline`` is the reason recorded when there is no baseline to compare against.
    ``today`` decides which waivers have expired (default: today's date in UTC). ``now`` is
    when freshness is judged and ``tolerance`` how many cadences old an asset may grow (default:
    as a stored document was judged, else the capture time and 2), so a re-audit gives the same
    answer.
    """
    dags = {d.identity: d for d in estate.datasets if d.materialization == DAG}
    sides = lineage_sides(estate)
    alternatives = alternative_inputs(estate)
    findings = list(conformance(estate, dags, sides, alternatives))
    fresh, freshness_status = judge(
        estate,
        sides,
        dags,
        now=now or (None if estate.freshness.judged_at else capture_time(estate)),
        tolerance=tolerance,
        note=functools.partial(_alternative_note, alternatives=alternatives),
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
    return AuditResult(tuple(findings), status, freshness_status)


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
    alternatives: Mapping[str, set[str]],
) -> Iterator[Finding]:
    """The conformance rules; ``dags``, ``sides`` and ``alternatives`` are the estate's DAGs by id,
    ``lineage_sides`` and ``alternative_inputs``, worked out once for every rule."""
    examples = sorted(dag_id for dag_id, dag in dags.items() if is_airflow_example(dag))
    for dag_id, dag in dags.items():
        if dag_id in examples:
            continue  # Airflow's code, not the team's: one examples-loaded finding says so
        if finding := dag_no_description(dag):
            yield finding
        if finding := dag_no_owner(dag):
            yield finding
    if examples:
        yield examples_loaded(examples)
    for asset in estate.datasets:
        if asset.materialization != ASSET:
            continue
        asset_sides = sides.get(asset.identity, Sides())
        if finding := asset_unproduced(asset, asset_sides, dags, alternatives):
            yield finding
        if finding := paused_producer(asset, asset_sides, dags, alternatives):
            yield finding
    yield from asset_conflicts(dags)


def is_airflow_example(dag: Dataset) -> bool:
    bundle = dag.metadata.get("airflow.bundle")
    if bundle is not None:
        return bundle == EXAMPLES_BUNDLE
    return _AIRFLOW2_EXAMPLES in (dag.physical_name or "")


def examples_loaded(dag_ids: list[str]) -> Finding:
    shown = ", ".join(dag_ids[:5]) + (", ..." if len(dag_ids) > 5 else "")
    count = f"{len(dag_ids)} example DAG{'s' if len(dag_ids) != 1 else ''}"
    return make_finding("examples-loaded", EXAMPLES_BUNDLE, f"{count}: {shown}")


def dag_no_description(dag: Dataset) -> Finding | None:
    if dag.description and dag.description.strip():
        return None
    return make_finding("dag-no-description", dag.identity, None)


def dag_no_owner(dag: Dataset) -> Finding | None:
    """No owner, or exactly the default ``airflow``: a default owner is nobody accountable."""
    owners = dag.metadata.get("airflow.owners", "")
    if owners and owners != DEFAULT_OWNER:
        return None
    detail = f"owners: {owners}" if owners else "owners: none"
    return make_finding("dag-no-owner", dag.identity, detail)


def asset_unproduced(
    asset: Dataset, sides: Sides, dags: Mapping[str, Dataset], alternatives: Mapping[str, set[str]]
) -> Finding | None:
    """Consumed by a described DAG, and nothing can update it: no producing edge (external
    producers count), no watcher, no alias that a DAG writes through."""
    described = sorted(c for c in sides.consumer_ids() if c in dags)
    if sides.producers or not described or _updated_from_outside(asset) or _aliases(asset):
        return None
    detail = "consumers: " + ", ".join(described) + _alternative_note(asset.identity, described, alternatives)
    return make_finding("asset-unproduced", asset.identity, detail)


def paused_producer(
    asset: Dataset, sides: Sides, dags: Mapping[str, Dataset], alternatives: Mapping[str, set[str]]
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
    return make_finding(
        "paused-producer", asset.identity, detail + _alternative_note(asset.identity, active, alternatives)
    )


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
    return asset.metadata.get("airflow.watched") == "true"


def _aliases(asset: Dataset) -> list[str]:
    return [alias for alias in asset.metadata.get("airflow.aliases", "").split(",") if alias]


def _alternative_note(uri: str, consumers: list[str], alternatives: Mapping[str, set[str]]) -> str:
    """Which of these consumers have the asset as one alternative among others: they still run
    without it. The rest require it (a schedule on it alone, or on it and others with ``&``)."""
    optional = [dag_id for dag_id in consumers if uri in alternatives.get(dag_id, ())]
    return f"; only an alternative input of: {', '.join(optional)}" if optional else ""


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
