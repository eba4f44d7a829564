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
- Every DAG object: ``next_dagrun_run_after`` and, from Airflow 3.2, ``timetable_partitioned``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from airflow_provider_coremodels.core.model import Freshness


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
        return format_time(parse_time(value))
    except ValueError:
        return None


def parse_time(value: str) -> datetime:
    """An ISO 8601 time with its zone (``Z`` or an offset); a time without one is UTC."""
    when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def format_time(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the document's freshness part ------------------------------------------------------------


def freshness_json(freshness: Freshness) -> dict[str, Any]:
    """The ``freshness`` part of the document (sorted, so that equal facts encode the same)."""
    updates = freshness.asset_updates
    return {
        "assetUpdates": None if updates is None else dict(sorted(updates.items())),
        "updatesSince": freshness.updates_since,
        "assetCreated": dict(sorted(freshness.asset_created.items())),
        "failedLatestRun": None
        if freshness.failed_latest_run is None
        else sorted(freshness.failed_latest_run),
        "nextRunAfter": dict(sorted(freshness.next_run_after.items())),
        "partitioned": sorted(freshness.partitioned),
    }


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
        return {
            k: timestamp(v)
            for k, v in value.items()
            if isinstance(k, str) and (timestamp(v) is not None or (nullable and v is None))
        }

    updates = raw.get("assetUpdates")
    failed = raw.get("failedLatestRun")
    return Freshness(
        asset_updates=times(updates, nullable=True) if isinstance(updates, dict) else None,
        asset_created=times(raw.get("assetCreated")),
        updates_since=timestamp(raw.get("updatesSince")),
        failed_latest_run=frozenset(d for d in failed if isinstance(d, str))
        if isinstance(failed, list)
        else None,
        next_run_after=times(raw.get("nextRunAfter")),
        partitioned=frozenset(d for d in raw.get("partitioned") or () if isinstance(d, str)),
    )
