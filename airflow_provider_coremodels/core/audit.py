"""The audit: conformance rules over one estate, coverage and drift against a baseline.

Every rule is a pure function of the parsed estate (no live Airflow is consulted), so an
audit gives the same answer in a task, in CI, and in a re-audit of a stored snapshot. The
whole audit runs in time linear in the estate.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from airflow_provider_coremodels.core.collector import gc_paused
from airflow_provider_coremodels.core.model import ASSET, DAG, Dataset, Estate, Finding
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


@gc_paused()
def audit(
    estate: Estate,
    baseline: Baseline | None = None,
    *,
    no_baseline: str = "no baseline given",
    waivers: Sequence[Waiver] = (),
    today: dt.date | None = None,
) -> AuditResult:
    """Run every rule, apply the waivers; findings come back sorted by (section, code, subject).

    ``no_baseline`` is the reason recorded when there is no baseline to compare against.
    ``today`` decides which waivers have expired (default: today's date in UTC).
    """
    findings = list(conformance(estate))
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
    return AuditResult(tuple(findings), status)


# -- conformance --------------------------------------------------------------------------


def conformance(estate: Estate) -> Iterator[Finding]:
    dags = {d.identity: d for d in estate.datasets if d.materialization == DAG}
    for dag in dags.values():
        if finding := dag_no_description(dag):
            yield finding
        if finding := dag_no_owner(dag):
            yield finding
    producers, consumers = lineage_sides(estate)
    for asset in estate.datasets:
        if asset.materialization != ASSET:
            continue
        asset_producers = producers.get(asset.identity, [])
        asset_consumers = consumers.get(asset.identity, [])
        if finding := asset_unproduced(asset.identity, asset_producers, asset_consumers, dags):
            yield finding
        if finding := paused_producer(asset.identity, asset_producers, asset_consumers, dags):
            yield finding


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
    uri: str, producers: list[str], consumers: list[str], dags: Mapping[str, Dataset]
) -> Finding | None:
    """Consumed by a described DAG, yet no producing edge at all (external producers count)."""
    described = sorted(c for c in consumers if c in dags)
    if producers or not described:
        return None
    return make_finding("asset-unproduced", uri, "consumers: " + ", ".join(described))


def paused_producer(
    uri: str, producers: list[str], consumers: list[str], dags: Mapping[str, Dataset]
) -> Finding | None:
    """Every producer paused, some consumer active. External DAGs are unknown: never assumed either."""
    if not producers or not all(p in dags and dags[p].paused for p in producers):
        return None
    active = sorted(c for c in consumers if c in dags and not dags[c].paused)
    if not active:
        return None
    detail = f"producers: {', '.join(sorted(producers))}; active consumers: {', '.join(active)}"
    return make_finding("paused-producer", uri, detail)


def lineage_sides(estate: Estate) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Map each asset URI to its producing and consuming dag_ids, read off the lineage edges.

    An edge names two identities and its direction says which end is the asset: a producing
    edge is (asset, DAG), a consuming one (DAG, asset), where the DAG end is a described DAG
    or marked external. That tells the two apart even when an asset's URI is also a dag_id
    (``Asset("orders")`` beside a DAG ``orders``); only an edge whose two ends are both names
    of both kinds stays ambiguous, and is read as producing.
    """
    assets = {d.identity for d in estate.datasets if d.materialization == ASSET}
    dags = {d.identity for d in estate.datasets if d.materialization == DAG}
    producers: dict[str, list[str]] = defaultdict(list)
    consumers: dict[str, list[str]] = defaultdict(list)
    for edge in estate.lineage:
        if edge.dependent in assets and (edge.external or edge.depends_on in dags):
            producers[edge.dependent].append(edge.depends_on)  # the asset depends on its producer
        elif edge.depends_on in assets and (edge.external or edge.dependent in dags):
            consumers[edge.depends_on].append(edge.dependent)  # the DAG depends on what it consumes
    return producers, consumers


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
