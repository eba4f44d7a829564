"""Federation: many deployments' snapshots merged into one estate and pushed, as one job.

Each deployment is exported on its own (a mapped task per deployment, or one ``export`` per
deployment in CI) into a sink of its own; this reads each one's stored ``latest.json`` back,
merges them (``core/reading/merge.py``), audits the whole against the sinks' stored merged baseline, and
pushes the merged document. A deployment whose export failed this time keeps its last good
snapshot in the merge, named stale with its age; one that never stored a snapshot is a
lossiness record. Neither drops anything from the estate nor wipes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core import Lossiness, audit, build_document, load_document
from airflow_provider_coremodels.core.checks.policy import Policy
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.reading.freshness import format_time, parse_time
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.core.snapshots.document import Document
from airflow_provider_coremodels.errors import SnapshotDocumentError, UsageError
from airflow_provider_coremodels.io.input_files import read_stored
from airflow_provider_coremodels.jobs.export import (
    baseline_of,
    failed_sinks,
    open_by_severity,
    open_sink,
    push_all,
    raise_for_sinks,
    sinks_said,
)
from airflow_provider_coremodels.sinks import Sink, SinkResult
from airflow_provider_coremodels.sinks.layout import HISTORY, LATEST


@dataclass(frozen=True)
class Source:
    """Where one deployment's snapshot is read: a document, a file sink's directory, or any sink
    URI that keeps a ``latest.json`` (object storage). ``name`` names the deployment where its
    document does not."""

    location: str
    name: str | None = None

    @classmethod
    def parse(cls, given: str) -> Source:
        """``NAME=LOCATION`` or ``LOCATION`` (a name holds no ``/``, ``:`` or ``=``)."""
        name, separator, location = given.partition("=")
        if separator and name and not any(c in name for c in "/:"):
            return cls(location, name)
        return cls(given)


@dataclass(frozen=True)
class MergeResult:
    document: Document
    sinks: list[SinkResult]
    deployments: list[str]
    stale: list[str]

    @property
    def failed(self) -> list[SinkResult]:
        """The sinks the merged document could not be pushed to (the others were)."""
        return failed_sinks(self.sinks)

    def summary(self) -> dict[str, Any]:
        """A compact, JSON-safe summary: what the merge operator returns to XCom."""
        return {
            "fingerprint": self.document["fingerprint"],
            "deployments": self.deployments,
            "stale": self.stale,
            "facts": dict(self.document["state"]["facts"]),
            "findings": open_by_severity(self.document),
            "unchanged": bool(self.sinks) and all(r.unchanged for r in self.sinks),
            "sinks": [r.as_dict() for r in self.sinks],
        }

    def summary_line(self) -> str:
        stale = f" ({len(self.stale)} stale: {', '.join(self.stale)})" if self.stale else ""
        return (
            f"merge: {len(self.deployments)} deployments{stale}, fingerprint "
            f"{self.document['fingerprint']}; {sinks_said(self.sinks)}"
        )


def read_parts(
    sources: Sequence[Source],
    *,
    stale_before: datetime | None = None,
    fresh: Collection[str] | None = None,
    sink_conn_id: str | None = None,
) -> tuple[list[Part], list[Lossiness]]:
    """Each source's stored snapshot as a part of the merge, and what could not be read at all.

    A part is stale (merged all the same, named with its age) when it was captured before
    ``stale_before``, or when ``fresh`` (the deployments exported in this run) does not name it.
    """
    parts: list[Part] = []
    missing: list[Lossiness] = []
    for source in sources:
        data = _stored(source, sink_conn_id)
        if data is None:
            who = source.name or source.location
            missing.append(
                Lossiness("snapshot", f"deployment {who}: no snapshot stored at {source.location} yet", who)
            )
            continue
        try:
            stored = load_document(data)
        except SnapshotDocumentError as exc:
            raise exc.with_source(source.location) from None
        if stored.estate is None:
            raise SnapshotDocumentError(
                "was stored without datasets and lineage (it exceeded the snapshot cap): it cannot be merged",
                source.location,
            )
        # The name comes from the caller: NAME=PATH, else the source's own location. A document
        # is someone else's word, and one naming itself as another deployment must not take over
        # that deployment's place (or make the merge refuse both).
        deployment = source.name or location_name(source.location)
        claimed = stored.state.deployment
        if claimed and claimed != deployment:
            missing.append(
                Lossiness(
                    "snapshot",
                    f"deployment {deployment}: the snapshot at {source.location} names itself {claimed!r} "
                    f"(state.deployment); merged as {deployment!r}, the name its source gives (NAME=PATH "
                    "chooses it)",
                )
            )
        parts.append(
            Part(
                deployment,
                stored.estate,
                _why_stale(stored.state.captured_at, deployment, stale_before, fresh),
            )
        )
    return parts, missing


def location_name(location: str) -> str:
    """A deployment's name from where its snapshot is read: the last part of the path (a file's
    name without ``.json``), or the bucket of an object-storage URI that has no path. A file a sink
    wrote is named after its sink: ``a/latest.json`` and ``a/history/<entry>.json`` are ``a``'s
    (every sink's newest document is a ``latest.json``, so its own name tells nothing)."""
    if "://" in location:
        parts = urlsplit(location)
        segments = [segment for segment in parts.path.split("/") if segment]
        segments = _sink_of(segments)
        name = segments[-1] if segments else parts.netloc
    else:
        path = Path(location).expanduser()
        if path.is_dir() or path.suffix != ".json":
            name = path.name
        else:
            full = list(path.absolute().parts)
            sink = _sink_of(full)
            name = sink[-1] if sink != full and sink[-1] != path.anchor else path.stem
    name = "".join("_" if c in "/:=" else c for c in name).strip()
    return name or "deployment"


def _sink_of(segments: list[str]) -> list[str]:
    """The path segments of the sink a stored file belongs to: without ``latest.json``, or without
    ``history/<entry>.json``; the segments as they are for any other file."""
    if segments and segments[-1] == LATEST:
        return segments[:-1]
    if len(segments) >= 2 and segments[-2] == HISTORY and segments[-1].endswith(".json"):
        return segments[:-2]
    return segments


def _why_stale(
    captured: str | None, deployment: str, stale_before: datetime | None, fresh: Collection[str] | None
) -> str | None:
    if fresh is not None and deployment not in fresh:
        return "its export did not succeed in this run"
    if stale_before is not None and (captured is None or parse_time(captured) < stale_before):
        return f"not captured since {format_time(stale_before)}"
    return None


def _stored(source: Source, sink_conn_id: str | None) -> bytes | None:
    """The stored document's bytes: a document file as it is, a sink's ``latest.json`` otherwise
    (None when that sink has stored nothing yet)."""
    location = source.location
    if location.lower().startswith(("http://", "https://")):
        raise UsageError(f"{location}: an HTTP endpoint keeps no snapshot to read back")
    if location.lower().startswith("openlineage:"):
        raise UsageError(f"{location}: an OpenLineage sink keeps no snapshot to read back")
    if "://" not in location:  # a document, or a file sink's directory: read as every command reads one
        if Path(location).is_dir() and not (Path(location) / LATEST).exists():
            return None
        return read_stored(location)
    return open_sink(location, sink_conn_id=sink_conn_id).read_baseline()


def merge_and_push(
    sources: Sequence[Source],
    sinks: Sequence[Sink],
    *,
    stale_before: datetime | None = None,
    fresh: Collection[str] | None = None,
    sink_conn_id: str | None = None,
    waivers: Sequence[Waiver] = (),
    now: datetime | None = None,
    stale_tolerance: float | None = None,
    max_snapshot_bytes: int = defaults.MAX_SNAPSHOT_BYTES,
    policy: Policy | None = None,
) -> MergeResult:
    """Read every deployment's snapshot, merge, audit against the sinks' merged baseline, push.

    ``policy``: the team's rules, run on the merged estate (a DAG's subject is its merged identity).

    One pause of the cyclic collector for all of it: each stage pauses it anyway, and pausing once
    spares a collection between stages over the millions of objects the previous one left.
    """
    with gc_paused():
        return _merge_and_push(
            sources,
            sinks,
            stale_before=stale_before,
            fresh=fresh,
            sink_conn_id=sink_conn_id,
            waivers=waivers,
            now=now,
            stale_tolerance=stale_tolerance,
            max_snapshot_bytes=max_snapshot_bytes,
            policy=policy,
        )


def _merge_and_push(
    sources: Sequence[Source],
    sinks: Sequence[Sink],
    *,
    stale_before: datetime | None,
    fresh: Collection[str] | None,
    sink_conn_id: str | None,
    waivers: Sequence[Waiver],
    now: datetime | None,
    stale_tolerance: float | None,
    max_snapshot_bytes: int,
    policy: Policy | None = None,
) -> MergeResult:
    parts, missing = read_parts(sources, stale_before=stale_before, fresh=fresh, sink_conn_id=sink_conn_id)
    if not parts:
        raise UsageError(
            "no deployment has a snapshot to merge yet: " + "; ".join(r.message for r in missing)
        )
    estate = merge(parts, now=now, clock=datetime.now(timezone.utc))
    if missing:
        estate = dataclasses.replace(estate, lossiness=(*estate.lossiness, *missing))
    baseline, estate, reason = baseline_of(sinks, estate)
    result = audit(
        estate,
        baseline,
        no_baseline=reason,
        waivers=waivers,
        now=now,
        tolerance=stale_tolerance,
        policy=policy,
    )
    # lean: the merged document is only written out (printed, pushed), never read field by field
    document = build_document(estate, result, max_snapshot_bytes=max_snapshot_bytes, lean=True)
    pushed = push_all(sinks, document)
    stale = sorted(part.deployment for part in parts if part.stale)
    merged = MergeResult(document, pushed, [part.deployment for part in parts], stale)
    raise_for_sinks(merged)
    return merged
