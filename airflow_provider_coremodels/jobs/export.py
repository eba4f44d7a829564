"""Export, the job the operator and ``airflow coremodels export`` run: capture, audit, push.

Every sink is opened (its scheme, package and connection checked) before the capture, so a
sink that cannot work fails the run before it costs anything. The sinks' stored baseline (the
first sink that has one) is read before anything is written, so coverage and drift compare
against the previous export; then every sink gets the document, each on its own: one that
fails is reported (``SinkResult.error``) and costs the others nothing.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.capture import AirflowApiClient, CaptureSummary, capture
from airflow_provider_coremodels.capture.crawl import Capture, ProgressCallback
from airflow_provider_coremodels.capture.lineage_resolve import NEEDS_FOLDER, is_inference_record
from airflow_provider_coremodels.core import (
    Baseline,
    Estate,
    Lossiness,
    audit,
    build_document,
    load_document,
)
from airflow_provider_coremodels.core.checks.policy import Policy
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.comparing.changes import (
    FindingChanges,
    finding_changes,
    stored_findings,
)
from airflow_provider_coremodels.core.estate.rules import FAIL_ON
from airflow_provider_coremodels.core.reading.freshness import positive_number
from airflow_provider_coremodels.core.snapshots.document import Document
from airflow_provider_coremodels.errors import (
    ConnectionConfigError,
    SinkError,
    SinksFailed,
    SnapshotDocumentError,
    UsageError,
)
from airflow_provider_coremodels.io.transport import RetryPolicy, redact_url
from airflow_provider_coremodels.sinks import FileSink, ObjectStorageSink, Sink, SinkResult
from airflow_provider_coremodels.sinks.history import Retention


@dataclass(frozen=True)
class ExportResult:
    document: Document
    capture: CaptureSummary
    sinks: list[SinkResult]
    #: The open findings beside the previous stored snapshot's: what is new, what was resolved.
    changes: FindingChanges = dataclasses.field(
        default_factory=lambda: FindingChanges((), (), (), first=True)
    )

    @property
    def unchanged(self) -> bool:
        """True when every sink already held this fingerprint and these findings."""
        return bool(self.sinks) and all(result.unchanged for result in self.sinks)

    @property
    def findings_changed(self) -> bool:
        """True when a sink held this fingerprint with other findings, and stored the new ones."""
        return any(result.findings_changed for result in self.sinks)

    @property
    def failed(self) -> list[SinkResult]:
        """The sinks the document could not be pushed to (the others were)."""
        return failed_sinks(self.sinks)

    def summary(self) -> dict[str, Any]:
        """A compact, JSON-safe summary: what the operator returns to XCom."""
        return {
            "fingerprint": self.document["fingerprint"],
            "deployment": self.document["state"].get("deployment"),
            "facts": dict(self.document["state"]["facts"]),
            "findings": open_by_severity(self.document),
            "newFindings": len(self.changes.new),
            "resolvedFindings": len(self.changes.resolved),
            "waivedFindings": len(self.changes.waived),
            "lineageEdgesSkipped": self.document["lineageEdgesSkipped"],
            "snapshotStored": self.document["snapshotStored"],
            "unchanged": self.unchanged,
            "findingsChanged": self.findings_changed,
            "sinks": [result.as_dict() for result in self.sinks],
        }

    def summary_line(self) -> str:
        sinks = sinks_said(self.sinks)
        if self.unchanged:
            state = "unchanged"
        elif self.findings_changed:
            state = "unchanged, findings changed"
        else:
            state = "changed"
        return f"export: fingerprint {self.document['fingerprint']} {state}; {sinks}"


@dataclass(frozen=True)
class ExportSettings:
    """What one export is told, whichever door it came in by.

    The command line builds it from its arguments and the operator from its own; every value is
    checked here, once, before anything is captured, and a bad one is a ``UsageError`` naming the
    setting (exit 2 on the command line, a failed task in Airflow). The defaults are
    ``defaults.py``'s. ``sinks`` may be one string of comma-separated URIs (a templated operator
    argument) or a sequence of them.
    """

    sinks: Sequence[str] = ()  # a str is one too: its URIs separated by commas
    sink_conn_id: str | None = None
    coremodels_conn_id: str | None = None
    fail_on: str = defaults.FAIL_ON
    max_snapshot_bytes: int = defaults.MAX_SNAPSHOT_BYTES
    include_asset_extra: bool = False
    waivers: Sequence[Waiver] = ()
    policy: Policy | None = None
    now: datetime | None = None
    stale_tolerance: float = defaults.STALE_TOLERANCE
    deployment: str | None = None
    history_keep: int = 0
    history_max_age_days: float | None = None
    openlineage_events: str | None = None
    openlineage_namespaces: Sequence[str] = ()
    #: the deployment's DAG folder: lineage nobody declared is inferred from it (docs/lineage.md)
    dag_folder: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sinks", tuple(uri_list(self.sinks)))
        object.__setattr__(self, "waivers", tuple(self.waivers))
        object.__setattr__(self, "openlineage_namespaces", tuple(self.openlineage_namespaces))
        checked_fail_on(self.fail_on)
        if positive_number(self.stale_tolerance) is None:
            raise UsageError(f"stale_tolerance must be a positive number, got {self.stale_tolerance!r}")
        size = self.max_snapshot_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
            raise UsageError(f"max_snapshot_bytes must be a positive whole number, got {size!r}")
        checked_retention(self.history_keep, self.history_max_age_days)

    @property
    def retention(self) -> Retention:
        return Retention(self.history_keep, self.history_max_age_days)

    def open_sinks(self, retry: RetryPolicy | None = None) -> list[Sink]:
        """Every sink, opened and checked (scheme, package, connection) before the capture."""
        return open_sinks(
            self.sinks,
            sink_conn_id=self.sink_conn_id,
            coremodels_conn_id=self.coremodels_conn_id,
            retry=retry,
            openlineage_events=self.openlineage_events,
            openlineage_namespaces=self.openlineage_namespaces,
            retention=self.retention,
        )

    def run(
        self, client: AirflowApiClient, sinks: Sequence[Sink], progress: ProgressCallback | None = None
    ) -> ExportResult:
        """``export`` with these settings (``SinksFailed`` when a sink could not be written)."""
        return export(
            client,
            sinks,
            max_snapshot_bytes=self.max_snapshot_bytes,
            include_asset_extra=self.include_asset_extra,
            waivers=self.waivers,
            now=self.now,
            stale_tolerance=self.stale_tolerance,
            deployment=self.deployment,
            progress=progress,
            policy=self.policy,
            dag_folder=self.dag_folder,
        )


def uri_list(value: Sequence[str]) -> list[str]:
    """The URIs of a setting (sinks, sources): a sequence, or one string of them separated by commas."""
    items = value.split(",") if isinstance(value, str) else list(value)
    return [item.strip() for item in items if item and item.strip()]


def checked_fail_on(value: str) -> str:
    if value not in FAIL_ON:
        raise UsageError(f"fail_on must be one of {', '.join(FAIL_ON)}, got {value!r}")
    return value


def checked_retention(keep: int, max_age_days: float | None) -> Retention:
    """``history_keep`` and ``history_max_age_days`` as a rule, or a ``UsageError`` naming the bad one."""
    try:
        return Retention(keep, max_age_days)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def open_by_severity(document: Document) -> dict[str, int]:
    """How many open (unwaived) findings a document has, by severity: what XCom summaries say."""
    counts = Counter(f["severity"] for f in document["findings"] if not f.get("waived"))
    return dict(sorted(counts.items()))


def sinks_said(results: Sequence[SinkResult]) -> str:
    """``<sink> (written), <sink> (unchanged), openlineage:// (sent 6 events)``, or ``no sink``: the
    end of a summary line."""
    return ", ".join(f"{r.sink} ({r.said()})" for r in results) or "no sink"


def failed_sinks(results: Sequence[SinkResult]) -> list[SinkResult]:
    return [result for result in results if result.error is not None]


def push_all(sinks: Sequence[Sink], document: Document) -> list[SinkResult]:
    """Push ``document`` to every sink in turn; one that fails is a failed result, not the end
    (``raise_for_sinks`` then raises, once every sink was tried)."""
    results = []
    for sink in sinks:
        try:
            results.append(sink.push(document))
        except SinkError as exc:
            results.append(SinkResult.failed(sink.uri, str(exc)))
    return results


def raise_for_sinks(result: Any) -> None:
    """``SinksFailed`` carrying ``result`` when any of its sinks failed: the exit code 3 (a failed
    task) once everything that could be written was."""
    failed = failed_sinks(result.sinks)
    if failed:
        raise SinksFailed(result, [str(r.error) for r in failed])


def open_sinks(
    uris: Sequence[str],
    *,
    sink_conn_id: str | None = None,
    coremodels_conn_id: str | None = None,
    retry: RetryPolicy | None = None,
    openlineage_events: str | None = None,
    openlineage_namespaces: Sequence[str] = (),
    retention: Retention | None = None,
) -> list[Sink]:
    """The sinks the URIs name, for the CLI and the operator alike."""
    return [
        open_sink(
            uri,
            sink_conn_id=sink_conn_id,
            coremodels_conn_id=coremodels_conn_id,
            retry=retry,
            openlineage_events=openlineage_events,
            openlineage_namespaces=openlineage_namespaces,
            retention=retention,
        )
        for uri in uris
    ]


def open_sink(
    uri: str,
    *,
    sink_conn_id: str | None = None,
    coremodels_conn_id: str | None = None,
    retry: RetryPolicy | None = None,
    openlineage_events: str | None = None,
    openlineage_namespaces: Sequence[str] = (),
    retention: Retention | None = None,
) -> Sink:
    """The sink a URI names: a path or ``file://``, an ``http(s)://`` endpoint, object storage, or
    ``openlineage://`` (the OpenLineage client as configured; ``openlineage_events`` and
    ``openlineage_namespaces`` are the command's defaults for its event kind and job namespaces).
    ``retention`` applies to the sinks that keep a history (a directory, object storage)."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme == OPENLINEAGE:
        return open_openlineage_sink(uri, openlineage_events, openlineage_namespaces, retry)
    if scheme in ("http", "https"):
        if coremodels_conn_id:
            from airflow_provider_coremodels.hooks.coremodels import CoreModelsHook

            return CoreModelsHook(coremodels_conn_id).get_sink(uri, retry=retry)
        from airflow_provider_coremodels.sinks.endpoint import EndpointSink

        return EndpointSink(uri, retry=retry)
    if scheme == "file":
        parts = urlsplit(uri)
        if parts.netloc and parts.netloc.lower() != "localhost":  # never a local path by another name
            host = f"***@{parts.netloc.rpartition('@')[2]}" if "@" in parts.netloc else parts.netloc
            raise UsageError(
                f"sink {redact_url(uri)}: a file:// URI must name a local path (file:///path),"
                f" not the host {host!r}"
            )
        path = parts.path
        if not path:
            raise UsageError(f"sink {uri}: a file:// URI needs a path")
        return FileSink(path, uri, retention=retention)
    if not scheme or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return FileSink(uri, retention=retention)
    package = OBJECT_STORAGE.get(scheme)
    if package is None:
        schemes = ", ".join(f"{s}://" for s in sorted(OBJECT_STORAGE))
        raise UsageError(
            f"sink {redact_url(uri)}: unknown scheme {scheme!r}: a sink is a path or file:// URI, "
            f"an http(s):// endpoint, object storage ({schemes}), or openlineage://"
        )
    return open_object_storage(uri, sink_conn_id, retention=retention)


def open_object_storage(
    uri: str,
    conn_id: str | None,
    *,
    label: str | None = None,
    conn_option: str = "--sink-conn-id",
    retention: Retention | None = None,
) -> ObjectStorageSink:
    """The object-storage sink at ``uri``, its connection found and its filesystem resolved now.

    Without this a missing filesystem package (s3fs, gcsfs, adlfs) or provider would surface only
    when the sink is first read, after the capture; and a connection id nobody defined would be
    passed over in silence by the store's client, which falls back to anonymous access; so would
    one kept in the metadata database, when this runs outside a task (``share_with_other_hooks``).
    ``label`` begins each error (default ``sink <uri>``); ``conn_option`` names where the
    connection id was given.
    """
    scheme = urlsplit(uri).scheme.lower()
    package = OBJECT_STORAGE[scheme]
    label = label or f"sink {redact_url(uri)}"
    if conn_id:
        from airflow_provider_coremodels.compat import BaseHook
        from airflow_provider_coremodels.hooks.connection_fields import share_with_other_hooks

        try:
            share_with_other_hooks(BaseHook, conn_id)
        except ConnectionConfigError as exc:
            raise UsageError(f"{label}: {conn_option}: {exc}") from None
    try:
        sink = ObjectStorageSink(uri, conn_id=conn_id, retention=retention)
        sink.resolve()
    except (ImportError, ValueError, TypeError) as exc:  # no provider for the scheme, or no package
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"{label}: {scheme}:// needs {package}: pip install '{package}' ({reason})"
        ) from None
    return sink


#: The scheme of the OpenLineage sink, and what it needs installed.
OPENLINEAGE = "openlineage"
OPENLINEAGE_EXTRA = "pip install 'airflow-provider-coremodels[openlineage]'"


def open_openlineage_sink(
    uri: str, events: str | None, namespaces: Sequence[str], retry: RetryPolicy | None
) -> Sink:
    """``openlineage://[?events=run|job&namespace=[DEPLOYMENT=]NAMESPACE]``: the client as configured."""
    try:
        from airflow_provider_coremodels.integrations.openlineage import Options
        from airflow_provider_coremodels.sinks.openlineage import OpenLineageSink
    except ImportError as exc:
        if (exc.name or "").startswith("airflow_provider_coremodels"):
            raise
        raise UsageError(f"sink {uri} needs the openlineage extra: {OPENLINEAGE_EXTRA} ({exc})") from None
    options = Options.parse(events, namespaces)
    return OpenLineageSink(uri, options, budget=(retry or RetryPolicy()).budget)


#: The object-storage schemes a sink takes, and the package whose filesystem serves each.
OBJECT_STORAGE = {
    **dict.fromkeys(("s3", "s3a"), "apache-airflow-providers-amazon[s3fs]"),
    **dict.fromkeys(("gs", "gcs"), "apache-airflow-providers-google"),
    **dict.fromkeys(
        ("abfs", "abfss", "az", "adl", "wasb", "wasbs"), "apache-airflow-providers-microsoft-azure"
    ),
}


def export(
    client: AirflowApiClient,
    sinks: Sequence[Sink],
    *,
    max_snapshot_bytes: int = defaults.MAX_SNAPSHOT_BYTES,
    include_asset_extra: bool = False,
    waivers: Sequence[Waiver] = (),
    now: datetime | None = None,
    stale_tolerance: float | None = None,
    deployment: str | None = None,
    progress: ProgressCallback | None = None,
    policy: Policy | None = None,
    dag_folder: str | None = None,
) -> ExportResult:
    """Capture the estate behind ``client``, audit it against the sinks' baseline, push to every sink.

    Freshness is judged at ``now`` (default: the capture time) with ``stale_tolerance`` (default 2).
    ``deployment`` names the deployment in the document's state. When a sink fails, every other
    sink is still written, then ``SinksFailed`` is raised, carrying the result. ``policy`` is the
    team's rules. ``dag_folder``: the deployment's DAG folder, from which the tables its SQL and
    transfer operators read and write are inferred (a parse in the sandbox, ``infer_from_folder``).
    """
    captured = capture(client, keep_asset_extra=include_asset_extra, progress=progress)
    infer_from_folder(captured, dag_folder)
    estate = captured.estate(include_asset_extra=include_asset_extra)
    if deployment:
        estate = dataclasses.replace(estate, state=dataclasses.replace(estate.state, deployment=deployment))
    stored = stored_baseline(sinks, estate)
    result = audit(
        stored.estate,
        stored.baseline,
        no_baseline=stored.reason,
        waivers=waivers,
        now=now,
        tolerance=stale_tolerance,
        policy=policy,
    )
    # lean, as the command line's audit: pushed and summarised, never read field by field
    document = build_document(stored.estate, result, max_snapshot_bytes=max_snapshot_bytes, lean=True)
    previous = stored_findings(stored.data) if stored.data is not None else None
    changes = finding_changes(document["findings"], previous)
    exported = ExportResult(document, captured.summary, push_all(sinks, document), changes)
    raise_for_sinks(exported)
    return exported


def infer_from_folder(captured: Capture, dag_folder: str | None, *, sandbox: str = "auto") -> None:
    """Add to the capture the lineage inferred from the deployment's DAG folder (contract 10.3): the
    folder parsed as ``audit --dag-folder`` parses it, in the sandbox, and only its inferred part
    kept (the REST API stays the truth of DAGs, tasks and declared assets). Without a folder, or
    where the capture has no assets to add to, one lossiness record says what is missing."""
    records = captured.dags.setdefault("lossiness", [])
    if not dag_folder:
        records.append({"artifact": "datasets", "message": NEEDS_FOLDER})
        return
    if not isinstance(captured.datasets, dict):
        records.append(
            {"artifact": "datasets", "message": "the assets could not be captured: no lineage is inferred"}
        )
        return
    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder

    parsed = parse_dag_folder(dag_folder, sandbox=sandbox)
    inferred = parsed.datasets.get("inferred")
    if inferred:
        captured.datasets["inferred"] = inferred
    for record in parsed.lossiness:  # the inference's own records; the parse's others are no capture's
        if is_inference_record(record):
            records.append(
                {"artifact": record.artifact, "message": record.message, "subject": record.subject}
            )


@dataclass(frozen=True)
class StoredBaseline:
    """The baseline the sinks hold: ``data`` (its bytes) is None when there is none, and ``reason``
    says why; ``estate`` is the estate given, with a record for each sink that could not be read."""

    baseline: Baseline | None
    estate: Estate
    reason: str
    data: bytes | None = None


def baseline_of(sinks: Sequence[Sink], estate: Estate) -> tuple[Baseline | None, Estate, str]:
    """The first stored baseline among the sinks (``stored_baseline``), as the audit takes it."""
    stored = stored_baseline(sinks, estate)
    return stored.baseline, stored.estate, stored.reason


def stored_baseline(sinks: Sequence[Sink], estate: Estate) -> StoredBaseline:
    """The first stored baseline among the sinks; an unreadable one becomes a lossiness record.

    A sink whose store cannot be read at all (unreachable, refused) is passed over with a record,
    and the next sink's baseline is used: its push will fail on its own, not everyone's.
    """
    for sink in sinks:
        try:
            data = sink.read_baseline()
        except SinkError as exc:
            record = Lossiness("baseline", f"the baseline could not be read: {exc}")
            estate = dataclasses.replace(estate, lossiness=(*estate.lossiness, record))
            continue
        if data is None:
            continue
        try:
            return StoredBaseline(load_document(data).as_baseline(), estate, "", data)
        except SnapshotDocumentError as exc:
            record = Lossiness(
                "baseline", f"the baseline at {sink.uri} is unusable ({exc}); it will be replaced"
            )
            estate = dataclasses.replace(estate, lossiness=(*estate.lossiness, record))
            return StoredBaseline(None, estate, f"the baseline at {sink.uri} is unusable")
    reason = "no baseline stored at the sinks yet" if sinks else "no sink to keep a baseline"
    return StoredBaseline(None, estate, reason)
