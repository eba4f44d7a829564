"""Freshness: the volatile facts of an estate, read from the artifacts and kept in the document.

When each asset was last updated, which DAGs' latest run failed and when each DAG runs next
change with every run, not with the estate: they live in the document's own ``freshness`` part,
outside datasets, lineage and the fingerprint, and the rules judge them at a given time (the
capture's, unless told otherwise), so a stored snapshot re-audits to the same answer.

What each Airflow version tells:

- Airflow 3.1+: every asset in ``GET /assets`` carries ``last_asset_event`` (None: never updated).
- Airflow 3.0 and 2.x: no such key; the capture lists the newest events, newest first, back to
  a point in time, riding along in the datasets artifact as ``recent_events``
  (``{"since": T, "events": [{"uri": ..., "timestamp": ...}]}``): an asset with no event there
  was not updated since ``T``, which judges it only when that alone is already too old.
- Airflow 3.0+: the DAGs whose latest run failed, from ``GET /dags?last_dag_run_state=failed``,
  ride along in the dags artifact as ``failed_latest_run`` (a list of dag_ids).
- Every DAG object: ``next_dagrun_run_after`` and, from Airflow 3.2, ``timetable_partitioned``
  (with ``timetable_summary`` its cadence where the timetable states one: a ``CronPartitionTimetable``'s
  summary is its cron, presets expanded, ``0 * * * *``; a ``PartitionedAssetTimetable``'s is
  ``Partitioned Asset``, no cadence).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.estate.model import (
    ASSET,
    STALE_TOLERANCE_KEY,
    VIA_ALIAS,
    Dataset,
    Estate,
    Finding,
    Freshness,
)
from airflow_provider_coremodels.core.estate.rules import make_finding
from airflow_provider_coremodels.core.reading.cadence import Cadence, allowed_age, cadence, format_duration


def read_freshness(
    dags_doc: Any,
    dags: Mapping[str, Mapping[str, Any]],
    asset_entries: Iterable[Any] | None,
    datasets_doc: Any,
) -> Freshness:
    """The volatile facts of decoded artifacts; what they do not tell stays unknown (None)."""
    next_runs: dict[str, str] = {}
    partitioned = set()
    for dag_id, raw in dags.items():
        when = timestamp(raw.get("next_dagrun_run_after"))
        if when is not None:
            next_runs[dag_id] = when
        if raw.get("timetable_partitioned") is True:
            partitioned.add(dag_id)
    failed = dags_doc.get("failed_latest_run") if isinstance(dags_doc, dict) else None
    failed_latest_run = (
        frozenset(d for d in failed if isinstance(d, str) and d in dags) if isinstance(failed, list) else None
    )
    updates, created, since = _asset_updates(asset_entries, datasets_doc)
    return Freshness(
        asset_updates=updates,
        asset_created=created,
        updates_since=since,
        failed_latest_run=failed_latest_run,
        next_run_after=next_runs,
        partitioned=frozenset(partitioned),
    )


def _asset_updates(
    entries: Iterable[Any] | None, datasets_doc: Any
) -> tuple[dict[str, str | None] | None, dict[str, str], str | None]:
    """(last update per asset or None when untold, registration times, the window's start)."""
    if entries is None:
        return None, {}, None
    updates: dict[str, str | None] = {}
    created: dict[str, str] = {}
    told = True  # every asset carries last_asset_event (Airflow 3.1+)
    for raw in entries:
        if not isinstance(raw, dict) or not isinstance(raw.get("uri"), str):
            continue
        uri = raw["uri"]
        registered = timestamp(raw.get("created_at"))
        if registered is not None:
            created.setdefault(uri, registered)
        if "last_asset_event" not in raw:
            told = False
            continue
        event = raw["last_asset_event"]
        newest = timestamp(event.get("timestamp")) if isinstance(event, dict) else None
        updates[uri] = _newer(updates.get(uri), newest)
    if told and updates:
        return updates, created, None
    recent = datasets_doc.get("recent_events") if isinstance(datasets_doc, dict) else None
    if not isinstance(recent, dict) or not isinstance(recent.get("events"), list):
        return None, created, None
    since = timestamp(recent.get("since"))
    if since is None:
        return None, created, None
    window: dict[str, str | None] = {}
    for event in recent["events"]:
        if isinstance(event, dict) and isinstance(event.get("uri"), str):
            window[event["uri"]] = _newer(window.get(event["uri"]), timestamp(event.get("timestamp")))
    return window, created, since


def _newer(a: str | None, b: str | None) -> str | None:
    """The later of two document times (their one format sorts as text)."""
    if a is None or b is None:
        return a or b
    return max(a, b)


def timestamp(value: Any) -> str | None:
    """An API time as the document writes it (``2026-12-01T06:00:00Z``), or None if it is none."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = parse_time(value)
    except ValueError:
        return None
    # Most times already are in that form (every one a stored document holds): kept as they are,
    # once known to be real times, rather than written again.
    return value if _DOCUMENT_TIME.fullmatch(value) else format_time(when)


_DOCUMENT_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


_SHORT_YEAR = re.compile(r"(\d{1,3})(-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


def parse_time(value: str) -> datetime:
    """An ISO 8601 time with its zone (``Z`` or an offset); a time without one is UTC. Its year
    has four digits (``0999-06-01T00:00:00Z``); a time whose UTC falls outside years 1 to 9999
    (``0001-01-01T00:00:00+05:00``) is a ``ValueError`` like any other unreadable time."""
    short = _SHORT_YEAR.fullmatch(value)
    if short:  # written by a version whose format_time wrote year 999 as "999": read as meant
        value = f"{int(short.group(1)):04d}{short.group(2)}"
    when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    try:
        return when.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(f"{value} is outside the years 1 to 9999 in UTC") from None


def format_time(when: datetime) -> str:
    """A time as the document writes it, in UTC, its year always four digits (``0999-06-01T00:00:00Z``):
    ``strftime("%Y")`` writes year 999 as ``999``, which no reader takes back."""
    utc = when.astimezone(timezone.utc).replace(tzinfo=None, microsecond=0)
    return utc.isoformat(timespec="seconds") + "Z"


# -- the document's freshness part ------------------------------------------------------------


def freshness_json(freshness: Freshness, status: FreshnessStatus | None = None) -> dict[str, Any]:
    """The ``freshness`` part of the document: how the rules judged (``status``), then the facts
    they judged, sorted so that equal facts encode the same."""
    updates = freshness.asset_updates
    judgement = {} if status is None else status_json(status)
    return {
        **judgement,
        "assetUpdates": None if updates is None else dict(sorted(updates.items())),
        "updatesSince": freshness.updates_since,
        "assetCreated": dict(sorted(freshness.asset_created.items())),
        "failedLatestRun": None
        if freshness.failed_latest_run is None
        else sorted(freshness.failed_latest_run),
        "nextRunAfter": dict(sorted(freshness.next_run_after.items())),
        "partitioned": sorted(freshness.partitioned),
    }


def status_json(status: FreshnessStatus) -> dict[str, Any]:
    return {
        "judgedAt": status.judged_at,
        "tolerance": status.tolerance,
        "judged": status.judged,
        "partitionedJudged": status.partitioned_judged,
        "notJudged": dict(status.unjudged),
        "reason": status.reason,
    }


def positive_number(value: Any) -> float | None:
    """A finite number above zero (a tolerance), else None; booleans are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def read_freshness_json(raw: Any) -> Freshness:
    """The ``freshness`` part read back; a document without one (or a malformed one) knows nothing.

    Lenient on purpose: these facts judge nothing of the governed content, so a damaged part
    costs the freshness findings of that re-audit, never the whole document.
    """
    if not isinstance(raw, dict):
        return Freshness()

    def times(value: Any, *, nullable: bool = False) -> dict[str, Any]:
        if not isinstance(value, dict):
            return {}
        read = ((k, v, timestamp(v)) for k, v in value.items() if isinstance(k, str))
        return {k: when for k, v, when in read if when is not None or (nullable and v is None)}

    updates = raw.get("assetUpdates")
    failed = raw.get("failedLatestRun")
    return Freshness(
        judged_at=timestamp(raw.get("judgedAt")),
        tolerance=positive_number(raw.get("tolerance")),
        asset_updates=times(updates, nullable=True) if isinstance(updates, dict) else None,
        asset_created=times(raw.get("assetCreated")),
        updates_since=timestamp(raw.get("updatesSince")),
        failed_latest_run=frozenset(d for d in failed if isinstance(d, str))
        if isinstance(failed, list)
        else None,
        next_run_after=times(raw.get("nextRunAfter")),
        partitioned=frozenset(d for d in raw.get("partitioned") or () if isinstance(d, str)),
    )


# -- the rules: asset-stale and producer-failing -----------------------------------------------

#: How many cadences old an asset may grow before it is stale (``--stale-tolerance``).
DEFAULT_TOLERANCE = defaults.STALE_TOLERANCE
#: A DAG tag that sets the tolerance for the assets that DAG produces: ``coremodels:stale-tolerance=3``.
TOLERANCE_TAG = "coremodels:stale-tolerance="

#: What an asset-stale detail says when a producer is partitioned: the age is the asset's, not a partition's.
_PER_ASSET = "judged per asset (its newest event), not per partition"

#: How far past its due time an unpaused DAG's next run is "well past" when its cadence is unknown.
_OVERDUE_WITHOUT_CADENCE = 3600.0


@dataclass(frozen=True, slots=True)
class FreshnessStatus:
    """How the freshness rules went: when they judged, with what tolerance, and what they could not.

    ``judged_at`` is None when nothing was judged (``reason`` says why); ``unjudged`` counts the
    assets with active consumers the rules could not judge, by reason; ``partitioned_judged``
    counts the judged assets with a partitioned producer, judged as a whole (the asset's newest
    event, whichever partition it was of), never per partition.
    """

    judged_at: str | None
    tolerance: float = DEFAULT_TOLERANCE
    judged: int = 0
    unjudged: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None
    partitioned_judged: int = 0


@dataclass(frozen=True, slots=True)
class _Producer:
    dag_id: str
    cadence: Cadence
    allowed: float | None  # seconds, tolerance included; None: its cadence is unknown
    tolerance: float


def judge(
    estate: Estate,
    sides: Mapping[str, Any],
    dags: Mapping[str, Dataset],
    *,
    now: datetime | None,
    tolerance: float | None = None,
    note: Callable[[str, list[str]], str] = lambda uri, consumers: "",
) -> tuple[list[Finding], FreshnessStatus]:
    """``asset-stale`` and ``producer-failing`` over every asset with active consumers, at ``now``.

    ``sides`` maps an asset URI to its producing and consuming edges (``audit.Sides``); ``note``
    adds what the other rules add to a detail (which consumers can run without the asset).
    ``now`` and ``tolerance`` default to how a stored document was judged, then to the capture
    time and ``DEFAULT_TOLERANCE``: a re-audit gives the stored answer.
    """
    facts = estate.freshness
    if now is None and facts.judged_at is not None:
        now = parse_time(facts.judged_at)
    pace = tolerance or facts.tolerance or DEFAULT_TOLERANCE
    if now is None:
        return [], FreshnessStatus(None, pace, reason="no capture time to judge at; give --now")
    if not facts.known:
        return [], FreshnessStatus(
            None, pace, reason="the capture did not say when assets were updated or how runs ended"
        )
    findings: list[Finding] = []
    judged = partitioned_judged = 0
    unjudged: dict[str, int] = {}
    for asset in estate.datasets:
        if asset.materialization != ASSET or asset.metadata.get("airflow.watched") == "true":
            continue
        edges = sides.get(asset.identity)
        if edges is None:
            continue
        consumers = sorted(c for c in edges.consumer_ids() if c in dags and not dags[c].paused)
        producer_ids = edges.producer_ids()
        active = sorted(p for p in producer_ids if p in dags and not dags[p].paused)
        if not consumers or not active:
            continue  # nobody reads it, or paused-producer / asset-unproduced speak for it
        failing = _producer_failing(asset, edges, active, consumers, dags, facts, note)
        if failing is not None:
            findings.append(failing)
        stale, why_not = _asset_stale(asset, active, consumers, dags, facts, now, pace, note)
        if stale is not None:
            findings.append(stale)
        if why_not is None:
            judged += 1
            partitioned_judged += any(p in facts.partitioned for p in active)
        else:
            unjudged[why_not] = unjudged.get(why_not, 0) + 1
    return findings, FreshnessStatus(
        format_time(now), pace, judged, dict(sorted(unjudged.items())), partitioned_judged=partitioned_judged
    )


def _producer_failing(
    asset: Dataset,
    edges: Any,
    active: list[str],
    consumers: list[str],
    dags: Mapping[str, Dataset],
    facts: Freshness,
    note: Callable[[str, list[str]], str],
) -> Finding | None:
    """Every active producer's latest run failed. Producers outside the estate, or writers through
    an alias nobody named, could be the ones that succeed: then the rule claims nothing."""
    failed = facts.failed_latest_run
    if failed is None or any(p not in failed for p in active):
        return None
    if any(p not in dags for p in edges.producer_ids()):
        return None  # an external producer: its runs are unknown
    if asset.metadata.get("airflow.aliases") and not any(
        (e.via or "").startswith(VIA_ALIAS) for e in edges.producers
    ):
        return None
    detail = f"producers: {', '.join(active)}; active consumers: {', '.join(consumers)}"
    return make_finding("producer-failing", asset.identity, detail + note(asset.identity, consumers))


def _asset_stale(
    asset: Dataset,
    active: list[str],
    consumers: list[str],
    dags: Mapping[str, Dataset],
    facts: Freshness,
    now: datetime,
    tolerance: float,
    note: Callable[[str, list[str]], str],
) -> tuple[Finding | None, str | None]:
    """The finding, or None; and why the asset could not be judged (None when it was).

    A partitioned producer (``CronPartitionTimetable``: its summary is its cron) is weighed by its
    cadence like any other, against the asset's newest event, whichever partition that was of: the
    judgement is of the asset as a whole, never per partition, and the detail says so. One whose
    timetable states no cadence (``Partitioned Asset``) leaves the asset "partitioned producer"
    when no other active producer has one.
    """
    partitioned = [p for p in active if p in facts.partitioned]
    own = positive_number(_number_or_none(asset.metadata.get(STALE_TOLERANCE_KEY)))
    producers = [_producer(dags[p], tolerance, own) for p in active]
    known = [p for p in producers if p.allowed is not None]
    if not known:
        return None, "partitioned producer" if partitioned else "cadence unknown"
    bound = min(known, key=lambda p: p.allowed or 0.0)  # the most frequent producer sets the pace
    allowed = bound.allowed or 0.0
    updates = facts.asset_updates
    if updates is None:
        return None, "last update unknown"
    uri = asset.identity
    if uri in updates:
        last = updates[uri]
        if last is None:  # never updated: as old as the asset itself
            created = facts.asset_created.get(uri)
            if created is None:
                return None, "last update unknown"
            age = (now - parse_time(created)).total_seconds()
            said = f"never updated (registered {format_duration(age)} ago)"
        else:
            age = (now - parse_time(last)).total_seconds()
            said = f"last update {format_duration(age)} ago ({last})"
    elif facts.updates_since is not None:  # not among the recent events: not updated since then
        created = facts.asset_created.get(uri)
        if created is not None and created >= facts.updates_since:  # registered since: never updated
            age = (now - parse_time(created)).total_seconds()
            said = f"never updated (registered {format_duration(age)} ago)"
        else:
            age = (now - parse_time(facts.updates_since)).total_seconds()
            if age <= allowed:
                return None, "last update older than the events read"
            said = f"not updated since {facts.updates_since} ({format_duration(age)} ago)"
    else:
        return None, "last update unknown"
    if age <= allowed:
        return None, None
    pace = f"{bound.dag_id} runs {bound.cadence.text}, tolerance {_number(bound.tolerance)}"
    whole = f"{_PER_ASSET} (partitioned: {', '.join(partitioned)}); " if partitioned else ""
    detail = (
        f"{said}; allowed {format_duration(allowed)} ({pace}); {whole}"
        f"producers: {', '.join(active)}; active consumers: {', '.join(consumers)}"
    )
    overdue = _overdue(producers, facts, now)
    if overdue:
        detail += "; overdue: " + ", ".join(overdue)
    return make_finding("asset-stale", uri, detail + note(uri, consumers)), None


def _producer(dag: Dataset, tolerance: float, asset_tolerance: float | None) -> _Producer:
    """A producer's pace: the asset's own tolerance wins, then the DAG's tag, then the run's."""
    chosen = asset_tolerance or _tag_tolerance(dag.tags) or tolerance
    pace = cadence(dag.metadata.get("airflow.schedule"))
    return _Producer(dag.identity, pace, allowed_age(pace, chosen), chosen)


def _number_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _tag_tolerance(tags: Iterable[str]) -> float | None:
    """The tolerance a ``coremodels:stale-tolerance=N`` tag sets; a malformed one is ignored."""
    for tag in tags:
        if tag.startswith(TOLERANCE_TAG):
            value = positive_number(_number_or_none(tag[len(TOLERANCE_TAG) :]))
            if value is not None:
                return value
    return None


def _overdue(producers: list[_Producer], facts: Freshness, now: datetime) -> list[str]:
    """Unpaused producers whose next run is well past due: where to look first."""
    late = []
    for producer in producers:
        due = facts.next_run_after.get(producer.dag_id)
        if due is None:
            continue
        past = (now - parse_time(due)).total_seconds()
        if past > (producer.cadence.seconds or _OVERDUE_WITHOUT_CADENCE):
            late.append(f"{producer.dag_id} (next run due {format_duration(past)} ago)")
    return late


def _number(value: float) -> str:
    return f"{value:g}"
