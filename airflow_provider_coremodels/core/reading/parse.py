"""Parse the three Airflow artifacts (dags, tasks, datasets) into an :class:`Estate`.

The parse is open-world. Only the dags artifact can fail it (missing, not JSON, an
unrecognized shape, no DAGs); everything else that cannot be represented becomes a
:class:`Lossiness` record and the parse carries on with what it has. Every value read from
an artifact is type-checked here, so arbitrary JSON never raises anything but
:class:`DagsArtifactError`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypedDict
from urllib.parse import urlsplit

import msgspec

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.model import (
    ASSET,
    DAG,
    DAG_LINKS_KEY,
    DEADLINE_KEY,
    DISPLAY_NAME_KEY,
    DOC_MD_KEY,
    MAX_ACTIVE_RUNS_KEY,
    OWNER_LINKS_KEY,
    RETRIES_KEY,
    STALE_TOLERANCE_KEY,
    VIA_ALIAS,
    VIA_INLET,
    VIA_REF,
    WARNINGS_KEY,
    Dataset,
    Edge,
    Estate,
    Field,
    Lossiness,
    State,
)
from airflow_provider_coremodels.core.estate.text import quoted_some as _some
from airflow_provider_coremodels.core.estate.text import utf8_safe as _clean
from airflow_provider_coremodels.core.estate.text import warning_label, warning_text
from airflow_provider_coremodels.core.reading.blind_spots import (
    unseen_asset_inputs,
    unseen_inlets,
    unseen_watchers,
)
from airflow_provider_coremodels.core.reading.broken import (
    INCLUDES_STALE,
    is_stale,
    read_import_errors,
    with_outlets,
)
from airflow_provider_coremodels.core.reading.conditions import (
    AssetIndex,
    ConditionError,
    Leaf,
    leaves,
    read_expression,
)
from airflow_provider_coremodels.core.reading.conditions import to_text as condition_text
from airflow_provider_coremodels.core.reading.conflicts import ASSET_CONFLICT, read_conflicts, refused_twins
from airflow_provider_coremodels.core.reading.dag_links import no_graph as _no_graph
from airflow_provider_coremodels.core.reading.dag_links import read_links
from airflow_provider_coremodels.core.reading.deadlines import deadline_text
from airflow_provider_coremodels.core.reading.freshness import positive_number, read_freshness
from airflow_provider_coremodels.core.reading.inferred import read_inferred
from airflow_provider_coremodels.core.reading.owner_links import owner_links_text
from airflow_provider_coremodels.core.reading.references import (
    UNCHECKED,
    DeclaredEdges,
    inlets_record,
    outlived,
    outlived_records,
    read_graph,
    unchecked_record,
)
from airflow_provider_coremodels.errors import DagsArtifactError
from airflow_provider_coremodels.redaction import scrub_credentials

log = logging.getLogger(__name__)


class _Absent:
    """Marks an artifact that was not provided at all (as opposed to a JSON ``null``)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()

# The keys an asset lists the DAGs scheduled on it under, across API versions; and all its consumers.
_SCHEDULE_KEYS = ("consuming_dags", "scheduled_dags")
_CONSUMER_KEYS = (*_SCHEDULE_KEYS, "consuming_tasks")
#: Airflow 3's default asset group, left out of the metadata.
_DEFAULT_GROUP = "asset"
#: An asset's own freshness tolerance: ``Asset(uri, extra={"coremodels_stale_tolerance": 7})``,
#: kept as the metadata key STALE_TOLERANCE_KEY (configuration, so governed).
STALE_TOLERANCE_EXTRA = "coremodels_stale_tolerance"
_ARTIFACT_ORDER = {"dags": 0, "tasks": 1, "datasets": 2, "snapshot": 3}


# -- decoding ---------------------------------------------------------------------------------
#
# The artifacts carry far more than the parse reads (a task response has ~30 keys; the parse
# needs 4). The fast path decodes bytes straight into dicts holding only the keys the parse
# reads, with msgspec and the typed shapes below: several times faster than json.loads and a
# fraction of its memory. Every value stays ``Any``, so the parse's own type checks still
# decide what a value means. Whatever the fast path cannot type (a wrong shape, a value
# msgspec reads differently, invalid JSON) is decoded again in full by ``decode``, so the
# outcome does not depend on which path ran (the property tests compare the two on every case),
# with one exception: valid JSON that Python's json refuses (nesting deeper than its recursion
# limit, an integer of over 4,300 digits) can still be read by the fast path, instead of
# failing the artifact.


class _Ref(TypedDict, total=False):
    dag_id: Any


class _Dag(TypedDict, total=False):
    dag_id: Any
    description: Any
    fileloc: Any
    tags: Any
    owners: Any
    is_paused: Any
    schedule_interval: Any
    timetable_summary: Any
    timetable_description: Any  # with the summary: whether the DAG is scheduled on assets
    bundle_name: Any  # Airflow 3: the DAG bundle and the file's path inside it
    relative_fileloc: Any
    asset_expression: Any  # from /dags/{dag_id}/details, for DAGs scheduled on assets
    dataset_expression: Any  # Airflow 2's name for it
    doc_md: Any  # from /dags/{dag_id}/details, for DAGs without a description
    dag_display_name: Any
    max_active_runs: Any  # read by the team's rules (core/checks/policy.py)
    owner_links: Any  # from /dags/{dag_id}/details, where the capture asks for them
    deadline_alerts: Any  # from /ui/dags/{dag_id}/deadlineAlerts (Airflow 3.3+, core/reading/deadlines.py)
    is_stale: Any  # a stale DAG (core/reading/broken.py); these two also tell the API generation apart
    is_active: Any
    has_import_errors: Any
    # volatile, read by the freshness rules only (core/reading/freshness.py), never fingerprinted
    next_dagrun_run_after: Any
    timetable_partitioned: Any


class _DagWarning(TypedDict, total=False):
    dag_id: Any
    warning_type: Any
    message: Any


class _ImportError(TypedDict, total=False):
    filename: Any
    bundle_name: Any
    stack_trace: Any


class _Dags(TypedDict, total=False):
    dags: list[_Dag]
    dag_warnings: list[_DagWarning]  # GET /dagWarnings, riding along in the dags artifact
    # riding along too, for the freshness rules: when the capture ran, and the DAGs whose
    # latest run failed (GET /dags?last_dag_run_state=failed)
    captured_at: Any
    failed_latest_run: Any
    import_errors: list[_ImportError]  # GET /importErrors (core/reading/broken.py)
    includes_stale: Any
    lossiness: Any  # what the capture itself could not get, so an offline audit says it too


class _ClassRef(msgspec.Struct, gc=False):
    class_name: Any = None


class _Task(msgspec.Struct, gc=False):
    """A task as the offline parse decodes it: a struct the collector does not track, not a dict, as
    there are 200,000 of them at 10,000 DAGs, decoded in one pass (about a tenth of the pipeline's
    time less than keeping each DAG's entry as bytes first and decoding it on its own: benchmarks/
    README.md). ``build_estate`` takes dicts too (a capture's answers, and the full decode of what
    the typed one refuses)."""

    task_id: Any = None
    operator_name: Any = None
    owner: Any = None
    retries: Any = None  # read by the team's rules (core/checks/policy.py)
    class_ref: _ClassRef | None = None  # anything else: the artifact is decoded in full


class _TaskResponse(TypedDict, total=False):
    tasks: list[_Task]


class _DagTasks(TypedDict, total=False):
    dag_id: Any
    tasks: list[_Task]


class _Named(TypedDict, total=False):
    name: Any


class _AssetSettings(TypedDict, total=False):
    """The one key of an asset's ``extra`` the parse reads without ``--include-asset-extra``: a
    setting of this package's, not the user's data (an extra may hold credentials)."""

    coremodels_stale_tolerance: Any


class _AssetBase(TypedDict, total=False):
    id: Any  # what the dependency graph names an asset by (references.py)
    uri: Any
    name: Any
    group: Any
    producing_tasks: list[_Ref]
    consuming_dags: list[_Ref]
    scheduled_dags: list[_Ref]
    consuming_tasks: list[_Ref]
    aliases: list[_Named]
    watchers: list[_Named]
    created_at: Any  # volatile, for the freshness rules: when it was registered, its newest event
    last_asset_event: Any


class _Asset(_AssetBase, total=False):
    extra: _AssetSettings | None


class _AssetWithExtra(_AssetBase, total=False):
    extra: Any


class _AssetEvent(TypedDict, total=False):
    uri: Any
    source_dag_id: Any


# Riding along in the datasets artifact: GET /assets/aliases, and the asset events that name
# who writes through an alias.
class _Assets(TypedDict, total=False):
    assets: list[_Asset]
    datasets: list[_Asset]
    asset_aliases: list[_Named]
    asset_events: list[_AssetEvent]
    recent_events: Any  # before Airflow 3.1: the newest events, within a window (freshness.py)
    inactive_assets: list[_Asset]  # refused twins, before the scheduler warns (conflicts.py)
    dependencies: Any  # GET /ui/dependencies: what the DAGs' code declares (references.py)
    inferred: Any  # a DAG-folder parse's lineage read off operators' code (inferred.py)


class _AssetsWithExtra(TypedDict, total=False):
    assets: list[_AssetWithExtra]
    datasets: list[_AssetWithExtra]
    asset_aliases: list[_Named]
    asset_events: list[_AssetEvent]
    recent_events: Any
    inactive_assets: list[_Asset]
    dependencies: Any
    inferred: Any


class _DagId(TypedDict, total=False):
    dag_id: Any


class _DagIdsPage(TypedDict, total=False):
    dags: list[_DagId]
    total_entries: Any


_DAGS_DECODER = msgspec.json.Decoder(_Dags | list[_Dag])
_DAG_IDS_DECODER = msgspec.json.Decoder(_DagIdsPage)
_TASKS_DECODER = msgspec.json.Decoder(dict[str, _TaskResponse | list[_Task]] | list[_DagTasks])
_ASSETS_DECODER = msgspec.json.Decoder(_Assets | list[_Asset])
_ASSETS_EXTRA_DECODER = msgspec.json.Decoder(_AssetsWithExtra | list[_AssetWithExtra])


def _decode_reduced(decoder: msgspec.json.Decoder[Any], data: bytes | str, keys: tuple[str, ...]) -> Any:
    """The fast path, on a stack of its own (see ``_on_fresh_stack``)."""
    return _on_fresh_stack(_decode_reduced_here, decoder, data, keys)


def _decode_reduced_here(decoder: msgspec.json.Decoder[Any], data: bytes | str, keys: tuple[str, ...]) -> Any:
    """The fast path: only the keys the parse reads; anything it cannot type is decoded in full.

    ``keys``: a top-level object must hold one of these (the wrappers), else it is decoded
    again in full so that an error can name the keys it does have.
    """
    if isinstance(data, bytes) and not data.isascii():
        try:  # msgspec skips the keys it does not read without checking their bytes: check them all
            data.decode("utf-8")
        except UnicodeDecodeError:
            return decode(data)
    try:
        value = decoder.decode(data)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # ValueError: a str with lone surrogates
        return decode(data)
    if isinstance(value, dict) and keys and not any(key in value for key in keys):
        return decode(data)
    return value


def _on_fresh_stack(func: Callable[..., Any], *args: Any) -> Any:
    """Run a decoder on a short-lived thread of its own, and return or raise what it did.

    Python's recursion limit counts the caller's frames as well as the nesting the decoders
    descend, so how deep a document may nest would otherwise depend on who calls the parse:
    the same bytes must always give the same estate.
    """
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, func(*args)))
        except BaseException as exc:  # handed to the caller, which raises it
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="coremodels-decode", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _decode_tasks(data: bytes | str) -> _Owned:
    """The tasks artifact, each task a ``_Task`` (the full decode of JSON the typed one refuses)."""
    return _Owned(_decode_reduced(_TASKS_DECODER, data, ()))


@dataclass(slots=True)
class _Owned:
    """An artifact decoded here, which no caller holds: its parse takes it apart as it reads it,
    each DAG's tasks freed once they are fields (10,000 DAGs: 30 MB less at the peak, and 6% less
    time for the decode and fields together, as the freed memory is reused while it is in the
    caches; at 40,000, 16%)."""

    value: Any


def decode_dag_ids_page(data: bytes) -> Any:
    """A page of the DAG list read for its dag_ids alone (a filtered list whose DAGs the capture
    already has): a page of 200,000 DAGs costs their ids, not their objects."""
    return _decode_reduced(_DAG_IDS_DECODER, data, ("dags",))


def decode(data: bytes | str) -> Any:
    """Decode one artifact's bytes; raises ValueError with a short reason on bad input.

    JSON between systems is UTF-8 (RFC 8259): bytes are decoded strictly as UTF-8 (a byte-order
    mark is tolerated), rather than letting ``json.loads`` guess UTF-16 or UTF-32, or pass
    encoded surrogates through.
    """
    try:
        if isinstance(data, bytes):
            data = data.decode("utf-8-sig")
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise ValueError(_first_line(str(exc))) from None


@gc_paused()
def parse_artifacts(
    dags: bytes | str | None,
    tasks: bytes | str | None = None,
    datasets: bytes | str | None = None,
    *,
    state: State | None = None,
    lossiness: Iterable[Lossiness] = (),
    include_asset_extra: bool = False,
) -> Estate:
    """Parse raw artifact bytes (None: not provided) into an estate.

    ``lossiness`` carries records the caller already has, such as an artifact file it could
    not read: an artifact with a record of its own is not reported again as not provided.
    """
    records = list(lossiness)
    dags_doc = decode_artifact("dags", dags, records)
    tasks_doc = decode_artifact("tasks", tasks, records)
    datasets_doc = decode_artifact("datasets", datasets, records, include_asset_extra=include_asset_extra)
    return build_estate(
        dags_doc,
        tasks_doc,
        datasets_doc,
        state=state,
        lossiness=records,
        include_asset_extra=include_asset_extra,
    )


def decode_artifact(
    artifact: str, data: bytes | str | None, records: list[Lossiness], *, include_asset_extra: bool = False
) -> Any:
    """One artifact's bytes (None: not provided) decoded as ``parse_artifacts`` decodes them, for
    ``build_estate``: a caller that reads the artifacts one at a time lets each one's bytes go once
    decoded, rather than holding all three until the estate is built (the tasks artifact is most
    of the input: 180 of 200 MB at 10,000 DAGs). The dags artifact fails with
    ``DagsArtifactError``; another that is not JSON is a record in ``records``, and ``ABSENT``."""
    if artifact == "dags":
        if data is None:
            raise DagsArtifactError("is missing")
        try:
            return _decode_reduced(_DAGS_DECODER, data, ("dags",))
        except ValueError as exc:
            raise DagsArtifactError(f"is not valid JSON: {exc}") from None
    if artifact == "tasks":
        return _decode_optional("tasks", data, records, _decode_tasks)
    assets_decoder = _ASSETS_EXTRA_DECODER if include_asset_extra else _ASSETS_DECODER
    return _decode_optional(
        "datasets", data, records, lambda data: _decode_reduced(assets_decoder, data, ("assets", "datasets"))
    )


@gc_paused()
def build_estate(
    dags: Any,
    tasks: Any = ABSENT,
    datasets: Any = ABSENT,
    *,
    state: State | None = None,
    lossiness: Iterable[Lossiness] = (),
    include_asset_extra: bool = False,
) -> Estate:
    """Build an estate from decoded artifacts; ``ABSENT`` marks one that was not provided.

    An asset's ``extra`` may carry credentials, so it reaches the estate (as the metadata key
    ``airflow.extra``, canonical JSON) only with ``include_asset_extra``.
    """
    records = list(lossiness)
    raw_dags = _dag_entries(dags)
    records.extend(_capture_records(dags, records))
    listed = _parse_dags(raw_dags, records)
    broken, broken_of = read_import_errors(dags, listed, records)
    # A stale DAG whose file does not import is kept as last parsed; any other stale DAG is gone.
    gone = {dag_id for dag_id, raw in listed.items() if is_stale(raw) and dag_id not in broken_of}
    dag_raws = {dag_id: raw for dag_id, raw in listed.items() if dag_id not in gone}
    if not dag_raws:
        raise DagsArtifactError(f"has no DAGs that Airflow still runs: all {len(listed)} are stale")
    dag_fields: dict[str, dict[str, Field]] = {dag_id: {} for dag_id in dag_raws}

    if tasks is not ABSENT:
        _parse_tasks(tasks, dag_fields, records, gone)
    elif not any(r.artifact == "tasks" for r in records):
        records.append(Lossiness("tasks", "tasks artifact not provided: DAGs carry no fields"))

    lineage = _Lineage(dag_raws.keys(), withheld={**dict.fromkeys(gone), **broken_of})
    assets: dict[str, Dataset] = {}
    usable = False  # whether the datasets artifact could be read: else no schedule can resolve
    if datasets is not ABSENT:
        usable = _parse_datasets(datasets, lineage, assets, records, include_asset_extra)
    elif not any(r.artifact == "datasets" for r in records):
        records.append(Lossiness("datasets", "datasets artifact not provided: no asset lineage"))
    running = {dag_id: raw for dag_id, raw in dag_raws.items() if dag_id not in broken_of}
    conditions = _parse_conditions(dag_raws, assets, lineage, records, usable, broken_of)
    twins = refused_twins(_asset_entries(datasets) or (), _inactive_entries(datasets)) if usable else {}
    conflicts = _asset_conflicts(dags, dag_raws.keys(), records, twins)
    if isinstance(datasets, dict) and datasets.get("inferred"):
        read_inferred(datasets["inferred"], lineage, assets, records, asset_name)
    records.extend(lineage.withheld_records())
    entries = (_asset_entries(datasets) or []) if usable else []
    api = state.api_version if state is not None else _infer_api(raw_dags, datasets)
    if api != "v1":  # Airflow 2 has no watchers
        paused = {dag_id: raw.get("is_paused") is True for dag_id, raw in running.items()}
        records.extend(unseen_watchers(entries, assets, lineage.edges(), paused))
    records.extend(unseen_inlets(entries))
    graph = read_graph(datasets) if usable else None
    records.extend(inlets_record(dag_id) for dag_id in _unconfirmed_inlets(lineage.edges(), running, graph))
    records.extend(unseen_asset_inputs(dag_fields))
    links, owned, link_records = read_links(
        datasets if usable else None,
        dag_fields,
        running.keys(),
        dag_raws.keys(),
        why_none=_no_graph(api, usable),
    )
    records.extend(link_records)
    if lineage.has_external() and not (gone or broken_of or _includes_stale(dags)):
        records.append(
            Lossiness(
                "dags",
                "the dags artifact does not say whether it lists stale DAGs (GET /dags?exclude_stale=false, "
                "or only_active=false on Airflow 2): an external DAG may be one of this deployment's, "
                "deleted or broken",
            )
        )

    warned = _dag_warnings(dags, dag_raws.keys(), records)
    dag_datasets = [
        _dag_dataset(
            dag_id,
            raw,
            dag_fields[dag_id],
            conditions.get(dag_id),
            conflicts.get(dag_id),
            warned.get(dag_id),
            owned.get(dag_id),
        )
        for dag_id, raw in dag_raws.items()
    ]
    all_datasets = sorted([*assets.values(), *dag_datasets], key=lambda d: (d.materialization, d.identity))
    records.sort(key=lambda r: (_ARTIFACT_ORDER.get(r.artifact, 9), r.subject or "", r.message))
    return Estate(
        datasets=tuple(all_datasets),
        lineage=tuple(sorted((*lineage.edges(), *links), key=lambda e: e.key)) if links else lineage.edges(),
        state=state
        or State(
            connector_version=__version__,
            api_version=_infer_api(raw_dags, datasets),
            captured_at=_text(dags.get("captured_at")) if isinstance(dags, dict) else None,
        ),
        lossiness=tuple(records),
        freshness=read_freshness(dags, running, _asset_entries(datasets) if usable else None, datasets),
        import_errors=with_outlets(broken, lineage.dropped_outlets()),
    )


def _unconfirmed_inlets(
    edges: Iterable[Edge], dags: Mapping[str, Mapping[str, Any]], graph: DeclaredEdges | None
) -> list[str]:
    """The DAGs whose inlets only Airflow's references tell: those whose file shows no outlet or
    schedule of its own in the dependency graph, where Airflow may not have refreshed them."""
    readers = {edge.dag_id for edge in edges if edge.via == VIA_INLET and not edge.external}
    if not readers or graph is None:
        return sorted(readers)

    def file_of(dag_id: str) -> tuple[str | None, str]:
        raw = dags.get(dag_id, {})
        place = _text(raw.get("relative_fileloc")) or _text(raw.get("fileloc")) or dag_id
        return (_text(raw.get("bundle_name")), place)

    refreshed = {file_of(node[len("dag:") :]) for node in graph.dags_with_assets}
    return sorted(dag_id for dag_id in readers if file_of(dag_id) not in refreshed)


def _inactive_entries(doc: Any) -> list[Any]:
    """The inactive assets riding in the datasets artifact (``GET /assets?only_active=false``, less
    the active ones): where a refused twin shows before the scheduler warns of it."""
    entries = doc.get("inactive_assets") if isinstance(doc, dict) else None
    return entries if isinstance(entries, list) else []


def _capture_records(doc: Any, held: list[Lossiness]) -> list[Lossiness]:
    """The records the capture itself wrote into the dags artifact (what it could not get), so that
    an offline audit of captured files says what the export said; those the caller already has
    are not repeated."""
    raw = doc.get("lossiness") if isinstance(doc, dict) else None
    if not isinstance(raw, list):
        return []
    known = set(held)
    found = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        artifact, message = _text(item.get("artifact")), _text(item.get("message"))
        subject = _text(item.get("subject")) or None
        # the capture's own records, which may quote what a server answered
        record = Lossiness(artifact, scrub_credentials(message), subject) if artifact and message else None
        if record is not None and record not in known:
            known.add(record)
            found.append(record)
    return found


def _includes_stale(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get(INCLUDES_STALE) is True


# -- dags ---------------------------------------------------------------------------------


def _dag_entries(doc: Any) -> list[Any]:
    entries = doc.get("dags") if isinstance(doc, dict) else doc
    if not isinstance(entries, list):
        raise DagsArtifactError(
            'has an unrecognized shape: expected {"dags": [...]} or a JSON array, got ' + _describe(doc)
        )
    if not entries:
        raise DagsArtifactError("has no DAGs")
    return entries


def _parse_dags(entries: list[Any], records: list[Lossiness]) -> dict[str, Mapping[str, Any]]:
    """Return the usable DAG objects by dag_id, first occurrence winning (pages may overlap)."""
    dags: dict[str, Mapping[str, Any]] = {}
    skipped: list[str] = []
    for index, raw in enumerate(entries):
        if not isinstance(raw, dict):
            skipped.append(f"entry {index} is {_json_type(raw)}, not a DAG object")
            continue
        dag_id = _text(raw.get("dag_id"))
        if not dag_id:
            skipped.append(f"entry {index} has no dag_id")
            continue
        dags.setdefault(dag_id, raw)
    if not dags:
        raise DagsArtifactError(f"has no usable DAGs: all {len(entries)} entries were skipped ({skipped[0]})")
    records.extend(Lossiness("dags", f"dags artifact {reason}; skipped") for reason in skipped)
    return dags


def _dag_dataset(
    dag_id: str,
    raw: Mapping[str, Any],
    fields: Mapping[str, Field],
    condition: str | None,
    conflicts: str | None,
    warnings: str | None = None,
    links: str | None = None,
) -> Dataset:
    """A DAG as a dataset; ``condition`` is its asset condition as text, ``conflicts`` its asset
    conflict warning, ``warnings`` its other DAG warnings (all three read by the audit)."""
    metadata: dict[str, str] = {}
    paused = raw.get("is_paused")
    if isinstance(paused, bool):
        metadata["airflow.paused"] = "true" if paused else "false"
    owners = _owners(raw.get("owners"))
    if owners is not None:
        metadata["airflow.owners"] = owners
    schedule = _schedule(raw)
    if schedule is not None:
        metadata["airflow.schedule"] = schedule
    # Where the DAG's file lives inside its bundle (Airflow 3): what SARIF locates findings at.
    bundle, relative = _text(raw.get("bundle_name")), _text(raw.get("relative_fileloc"))
    if bundle:
        metadata["airflow.bundle"] = bundle
    if relative:
        metadata["airflow.relativeFileloc"] = relative
    if condition:
        metadata["airflow.assetCondition"] = condition
    if conflicts:
        metadata["airflow.assetConflict"] = conflicts
    display = _text(raw.get("dag_display_name"))
    if display and display != dag_id:
        metadata[DISPLAY_NAME_KEY] = display
    doc = raw.get("doc_md")
    if isinstance(doc, str) and doc.strip():
        metadata[DOC_MD_KEY] = "true"  # documented: the text itself stays in Airflow
    runs = _whole(raw.get("max_active_runs"))
    if runs is not None:
        metadata[MAX_ACTIVE_RUNS_KEY] = runs
    if warnings:
        metadata[WARNINGS_KEY] = warnings
    if links:
        metadata[DAG_LINKS_KEY] = links
    if owner_links := owner_links_text(raw.get("owner_links")):
        metadata[OWNER_LINKS_KEY] = owner_links
    if (deadline := deadline_text(raw.get("deadline_alerts"))) is not None:
        metadata[DEADLINE_KEY] = deadline
    return Dataset(
        identity=dag_id,
        name=dag_id,
        materialization=DAG,
        physical_name=_text(raw.get("fileloc")),
        description=_description(raw.get("description")),
        tags=_tags(raw.get("tags")),
        metadata=metadata,
        fields=tuple([fields[name] for name in sorted(fields)]),  # keyed by name
    )


def _description(value: Any) -> str | None:
    """A DAG's description, scrubbed of credentials: a description can quote code or configuration
    (a connection URI, a token), and it reaches every view, the sinks and the fingerprint. The
    scrub is deterministic, so an unchanged estate keeps its fingerprint."""
    text = _text(value)
    return scrub_credentials(text) if text else text


def _owners(value: Any) -> str | None:
    """Owners stripped of surrounding spaces (Airflow 2 keeps them), empties dropped, comma-joined.

    Sorted too: Airflow derives a DAG's owners from a set of its task owners, so their order
    changes from one DAG-processor run to the next, and the fingerprint must not.
    """
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return None
    owners = (_text(owner) for owner in value)
    return ",".join(sorted(owner.strip() for owner in owners if owner and owner.strip()))


def _schedule(raw: Mapping[str, Any]) -> str | None:
    """The schedule in any of the API's shapes: a string, a typed object, or a summary field."""
    for key in ("schedule_interval", "timetable_summary"):
        value = raw.get(key)
        if isinstance(value, dict):
            value = _text(value.get("value")) or _text(value.get("__type"))
        else:
            value = _text(value)
        if value and value.strip():
            return value
    return None


def _tags(value: Any) -> tuple[str, ...]:
    """Tags given as plain strings (Airflow 3 may) or ``{"name": ...}`` objects, sorted."""
    if not isinstance(value, list):
        return ()
    tags = set()
    for tag in value:
        name = _text(tag.get("name")) if isinstance(tag, dict) else _text(tag)
        if name:
            tags.add(name)
    return tuple(sorted(tags))


# -- tasks --------------------------------------------------------------------------------


def _parse_tasks(
    doc: Any, dag_fields: dict[str, dict[str, Field]], records: list[Lossiness], gone: Iterable[str] = ()
) -> None:
    seen: set[str] = set()
    undescribed: set[str] = set(gone)  # a stale DAG's tasks are skipped without a word: it is gone
    for dag_id, tasks in _task_groups(doc, records):
        if dag_id not in dag_fields:
            if dag_id not in undescribed:
                undescribed.add(dag_id)
                records.append(
                    Lossiness(
                        "tasks",
                        f"tasks artifact lists DAG '{dag_id}', which is not in the dags artifact; "
                        "its tasks were skipped",
                        subject=dag_id,
                    )
                )
            continue
        seen.add(dag_id)
        fields = dag_fields[dag_id]
        for index, raw in enumerate(tasks):
            task = _field(raw)
            if task is None:
                records.append(
                    Lossiness(
                        "tasks",
                        f"task entry {index} of DAG '{dag_id}' has no task_id; skipped",
                        subject=dag_id,
                    )
                )
            else:
                fields.setdefault(task.name, task)
    reported = {r.subject for r in records if r.artifact == "tasks"}
    if None in reported:
        return  # the artifact as a whole was unusable: that record already covers every DAG
    for dag_id in dag_fields.keys() - seen - reported:
        records.append(
            Lossiness(
                "tasks",
                f"tasks artifact has no entry for DAG '{dag_id}': its fields are unknown",
                subject=dag_id,
            )
        )


def _task_groups(doc: Any, records: list[Lossiness]) -> Iterator[tuple[str, list[Any]]]:
    """Yield (dag_id, task list) from either accepted shape of the tasks artifact."""
    owned = isinstance(doc, _Owned)
    if owned:
        doc = doc.value
    if isinstance(doc, dict):
        for dag_id in list(doc) if owned else doc:
            response = doc.pop(dag_id) if owned else doc[dag_id]
            tasks = _task_list(response)
            if tasks is None:
                records.append(
                    Lossiness(
                        "tasks",
                        f"tasks artifact entry for DAG '{_clean(dag_id)}' ignored: expected "
                        f'{{"tasks": [...]}} or a list, got {_json_type(response)}',
                        subject=_clean(dag_id),
                    )
                )
            else:
                yield _clean(dag_id), tasks
    elif isinstance(doc, list):
        for index, item in enumerate(doc):
            if owned:
                doc[index] = None
            dag_id = _text(item.get("dag_id")) if isinstance(item, dict) else None
            tasks = _task_list(item) if dag_id else None
            if dag_id and tasks is not None:
                yield dag_id, tasks
            else:
                # Without a dag_id the item could belong to any DAG: no DAG's fields are certain.
                records.append(
                    Lossiness(
                        "tasks",
                        f"tasks artifact item {index} ignored: expected "
                        '{"dag_id": ..., "tasks": [...]}, got ' + _json_type(item),
                        subject=dag_id,
                    )
                )
    else:
        records.append(
            Lossiness(
                "tasks",
                "tasks artifact ignored: unrecognized shape: expected "
                '{"<dag_id>": {"tasks": [...]}} or [{"dag_id": ..., "tasks": [...]}], '
                f"got {_json_type(doc)}",
            )
        )


def _task_list(value: Any) -> list[Any] | None:
    if isinstance(value, dict):
        value = value.get("tasks")
    return value if isinstance(value, list) else None


def _field(raw: Any) -> Field | None:
    """A task as its DAG's field; None for an entry that is not an object with a task_id.

    Once per task (200,000 at 10,000 DAGs, the parse's hottest loop): ``_text`` written out inline
    for the values the API sends (ASCII strings), with the same answers for any value.
    """
    if type(raw) is _Task:
        task_id, operator_name, owner, retries = raw.task_id, raw.operator_name, raw.owner, raw.retries
        class_name = raw.class_ref.class_name if raw.class_ref is not None else None
    elif isinstance(raw, dict):
        task_id, operator_name = raw.get("task_id"), raw.get("operator_name")
        owner, retries = raw.get("owner"), raw.get("retries")
        class_ref = raw.get("class_ref")
        class_name = class_ref.get("class_name") if isinstance(class_ref, dict) else None
    else:
        return None
    if not isinstance(task_id, str) or not task_id:
        return None
    if not task_id.isascii():
        task_id = _clean(task_id)
    native_type = class_name
    if not isinstance(native_type, str) or not native_type:
        native_type = operator_name
        if not isinstance(native_type, str) or not native_type:
            native_type = "task"
    if not native_type.isascii():
        native_type = _clean(native_type)
    metadata: dict[str, str] = {}
    if isinstance(owner, str):
        owner = owner.strip()
        if owner:
            metadata["airflow.owner"] = owner if owner.isascii() else _clean(owner)
    retries = _whole(retries)
    if retries is not None:
        metadata[RETRIES_KEY] = retries
    return Field(name=task_id, native_type=native_type, metadata=metadata)


_SMALL_WHOLES = {float(number): str(number) for number in range(100)}


def _whole(value: Any) -> str | None:
    """A whole number of the API as text (Airflow 3 sends ``retries`` as ``0.0``); None for anything
    else: a bool, a fraction, a negative number, a float too large to be exact."""
    kind = type(value)
    if kind is float:
        text = _SMALL_WHOLES.get(value)  # the usual retries, as one string each
        if text is not None:
            return text
        return str(int(value)) if value.is_integer() and 0 <= value < 2**53 else None
    if kind is int:
        return str(value) if value >= 0 else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return _whole(float(value) if isinstance(value, float) else int(value))  # a subclass: as its base


# -- datasets / assets and their lineage ---------------------------------------------------


class _Lineage:
    """The edges of an estate, unique per ``Edge.key``. An edge learned twice keeps the most
    direct source: a plain producing task or schedule before ``Asset.ref``, an alias or an inlet.

    ``withheld``: the DAGs whose references Airflow lists but which do not run, each with the file
    that does not import (a broken DAG) or None (a stale one, gone): their edges are not lineage;
    what they were is kept to be said (``withheld_records``, ``dropped_outlets``).
    """

    def __init__(self, described: Iterable[str], withheld: Mapping[str, str | None] | None = None) -> None:
        self.described = set(described)
        self.withheld = dict(withheld or {})
        self._edges: dict[tuple[str, str, str, str], Edge] = {}
        self._dropped: dict[str, dict[str, set[str]]] = {}  # dag_id -> role -> asset URIs
        self._sorted: tuple[Edge, ...] | None = None  # edges(), until an edge is added

    def produces(self, dag_id: str, uri: str, via: str | None = None, source: str | None = None) -> None:
        if dag_id in self.withheld:
            self._drop(dag_id, "producer", uri)
        else:
            external = dag_id not in self.described
            self._add(Edge.produces(dag_id, uri, external=external, via=via, source=source))

    def consumes(self, dag_id: str, uri: str, via: str | None = None, source: str | None = None) -> None:
        if dag_id in self.withheld:
            self._drop(dag_id, "inlet" if via == VIA_INLET else "consumer", uri)
        else:
            external = dag_id not in self.described
            self._add(Edge.consumes(dag_id, uri, external=external, via=via, source=source))

    def has_producer(self, dag_id: str, uri: str) -> bool:
        return (uri, ASSET, dag_id, DAG) in self._edges or uri in self._dropped.get(dag_id, {}).get(
            "producer", ()
        )

    def has_external(self) -> bool:
        return any(edge.external for edge in self._edges.values())

    def _add(self, edge: Edge) -> None:
        held = self._edges.get(edge.key)
        if held is None or _directness(edge) < _directness(held):
            self._edges[edge.key] = edge
            self._sorted = None
        elif held.inferred and edge.inferred and edge.source and edge.source != held.source:
            # one edge inferred from several tasks of the DAG names each of them
            tasks = sorted({*(held.source or "").split(", "), *edge.source.split(", ")} - {""})
            self._edges[edge.key] = dataclasses.replace(held, source=", ".join(tasks))
            self._sorted = None

    def _drop(self, dag_id: str, role: str, uri: str) -> None:
        self._dropped.setdefault(dag_id, {}).setdefault(role, set()).add(uri)

    def edges(self) -> tuple[Edge, ...]:
        """Every edge, in ``Edge.key`` order; sorted once until the next edge is learned."""
        if self._sorted is None:
            self._sorted = tuple([self._edges[key] for key in sorted(self._edges)])
        return self._sorted

    def dropped_outlets(self) -> dict[str, set[str]]:
        """The assets each withheld DAG is still listed as producing."""
        return {dag_id: roles["producer"] for dag_id, roles in self._dropped.items() if "producer" in roles}

    def withheld_records(self) -> list[Lossiness]:
        """One record per withheld DAG that Airflow still names in the lineage, saying what was dropped."""
        records = []
        for dag_id in sorted(self._dropped):
            roles = self._dropped[dag_id]
            listed = "; ".join(
                f"{role} of {_some(roles[role])}"
                for role in ("producer", "consumer", "inlet")
                if role in roles
            )
            file = self.withheld[dag_id]
            if file is not None:
                why = (
                    f"last parsed from {file}, which does not import: Airflow still lists it as {listed}, "
                    "which is not counted as lineage until the file imports again"
                )
            else:
                why = (
                    "is stale (Airflow no longer finds it in its bundle: its file was deleted, or no "
                    f"longer defines it), yet Airflow still lists it as {listed}: dropped from the lineage"
                )
            records.append(Lossiness("datasets", f"DAG '{dag_id}' {why}", dag_id))
        return records


def _directness(edge: Edge) -> tuple[bool, bool, str]:
    """Declared before inferred: what the DAG says of itself wins over what its code suggests."""
    return (edge.inferred, edge.via is not None, edge.via or "")


def _parse_datasets(
    doc: Any,
    lineage: _Lineage,
    assets: dict[str, Dataset],
    records: list[Lossiness],
    include_extra: bool = False,
) -> bool:
    """Read the assets and their lineage; False when the artifact's shape is not one we know."""
    entries = _asset_entries(doc)
    if entries is None:
        records.append(
            Lossiness(
                "datasets",
                "datasets artifact ignored: unrecognized shape: expected "
                '{"assets": [...]}, {"datasets": [...]} or a JSON array, got ' + _describe(doc),
            )
        )
        return False
    aliased: dict[str, tuple[str, ...]] = {}  # asset URI -> the aliases it was written through
    graph = read_graph(doc)
    asset_ids = {
        raw["uri"]: raw["id"]
        for raw in entries
        if isinstance(raw, dict) and isinstance(raw.get("uri"), str) and isinstance(raw.get("id"), int)
    }
    outlived_refs: dict[str, dict[str, set[str]]] = {}
    referenced = 0  # producing and scheduling references of DAGs that run: what the graph checks

    def declared(dag_id: str, uri: str, producing: bool) -> bool:
        """Whether the DAG's code still declares the reference (true where nothing can say)."""
        nonlocal referenced
        if dag_id not in lineage.described or dag_id in lineage.withheld:
            return True  # an external DAG's code is unknown; a withheld one is dropped anyway
        referenced += 1
        if graph is None or not outlived(graph, asset_ids, dag_id, uri, producing=producing):
            return True
        role = "producer" if producing else "consumer"
        outlived_refs.setdefault(dag_id, {}).setdefault(role, set()).add(uri)
        return False

    for index, raw in enumerate(entries):
        uri = _text(raw.get("uri")) if isinstance(raw, dict) else None
        if not uri:
            records.append(Lossiness("datasets", f"datasets artifact entry {index} has no uri; skipped"))
            continue
        if uri not in assets:
            assets[uri] = _asset_dataset(uri, raw, include_extra)
            aliases = _names(raw.get("aliases"))
            if aliases:
                aliased[uri] = aliases
        for dag_id in _dag_refs(raw, "producing_tasks", uri, records):
            if declared(dag_id, uri, True):
                lineage.produces(dag_id, uri)
        for key in _SCHEDULE_KEYS:
            for dag_id in _dag_refs(raw, key, uri, records):
                if declared(dag_id, uri, False):
                    lineage.consumes(dag_id, uri)
        for dag_id in _dag_refs(raw, "consuming_tasks", uri, records):
            # A task that reads what its own DAG writes (a state store) is its producer, not a reader
            # of someone else's data: no DAG -> asset -> same DAG loop.
            if not lineage.has_producer(dag_id, uri):
                lineage.consumes(dag_id, uri, via=VIA_INLET)
    riding = doc if isinstance(doc, dict) else {}  # a bare array carries no aliases or events
    waiting = _written_not_active(riding, assets, aliased, include_extra)
    _alias_writers(riding, aliased, lineage, records)
    records.extend(_not_active_records(waiting))
    _unresolved_aliases(riding, aliased, records)
    records.extend(outlived_records(outlived_refs))
    said = any(r.artifact == "datasets" and r.message.startswith(UNCHECKED) for r in records)
    # Airflow 2 deletes a reference its code dropped; Airflow 3 may not (references.py)
    airflow2 = isinstance(doc, dict) and "datasets" in doc and "assets" not in doc
    if graph is None and referenced and not said and not airflow2:
        records.append(
            unchecked_record("the datasets artifact carries no dependency graph, GET /ui/dependencies")
        )
    return True


def _asset_dataset(uri: str, raw: Mapping[str, Any], include_extra: bool) -> Dataset:
    """An asset: identity and physical name are its URI; Airflow 3's name, group, watchers and
    aliases ride as metadata (``airflow.group`` only where it is not the default)."""
    metadata: dict[str, str] = {}
    name, group = _text(raw.get("name")), _text(raw.get("group"))
    if name:
        metadata["airflow.name"] = name
    if group and group != _DEFAULT_GROUP:
        metadata["airflow.group"] = group
    if isinstance(raw.get("watchers"), list) and raw["watchers"]:
        metadata["airflow.watched"] = "true"
    aliases = _names(raw.get("aliases"))
    if aliases:
        metadata["airflow.aliases"] = ",".join(aliases)
    extra = raw.get("extra")
    tolerance = extra.get(STALE_TOLERANCE_EXTRA) if isinstance(extra, dict) else None
    if (own := positive_number(tolerance)) is not None:
        metadata[STALE_TOLERANCE_KEY] = f"{own:g}"
    if include_extra and isinstance(extra, dict) and extra:
        metadata["airflow.extra"] = _canonical(extra)
    return Dataset(
        identity=uri,
        name=asset_name(uri),
        materialization=ASSET,
        physical_name=uri,
        metadata=metadata,
    )


def _alias_writers(
    doc: Mapping[str, Any],
    aliased: Mapping[str, tuple[str, ...]],
    lineage: _Lineage,
    records: list[Lossiness],
) -> None:
    """Who writes through an alias: the DAGs that asset events name for an asset reached through it.

    No declaration says so (an alias outlet names no asset until it runs), so the events are the
    only witness; an aliased asset no event names a DAG for has writers nobody can name, which
    the audit must not take for "every producer is paused".
    """
    events = doc.get("asset_events")
    writers: dict[str, set[str]] = {}
    if isinstance(events, list):
        for event in events:
            if isinstance(event, dict):
                uri, dag_id = _text(event.get("uri")), _text(event.get("source_dag_id"))
                if uri and uri in aliased and dag_id and not lineage.has_producer(dag_id, uri):
                    writers.setdefault(uri, set()).add(dag_id)
    told = {r.subject for r in records if r.artifact == "datasets"}  # once, not per aliased asset
    for uri, aliases in aliased.items():
        via = VIA_ALIAS + ",".join(aliases)
        for dag_id in sorted(writers.get(uri, ())):
            lineage.produces(dag_id, uri, via=via)
        if uri not in writers and uri not in told:
            why = "no asset events were captured" if events is None else "no asset event names a DAG for it"
            records.append(
                Lossiness(
                    "datasets",
                    f"asset '{uri}' is written through alias {_quoted(aliases)}, "
                    f"but by whom is unknown: {why}",
                    uri,
                )
            )


def _written_not_active(
    doc: Mapping[str, Any],
    assets: dict[str, Dataset],
    aliased: dict[str, tuple[str, ...]],
    include_extra: bool,
) -> dict[str, list[tuple[str, str | None]]]:
    """The assets written through an alias that Airflow does not list as active yet, made known.

    An asset an alias outlet creates at run time is inactive until the scheduler's next asset pass
    activates it: ``GET /assets`` lacks it, ``GET /assets?only_active=false`` (``inactive_assets``)
    has it with its aliases, and its events name who wrote it. Each becomes an asset here, read
    through its aliases only (its writers from the events, its consumers from the alias schedules).
    Returns, per alias, each such asset's URI and why it is not active: None for "not yet", or the
    active asset holding its name, which Airflow will not activate it beside.
    """
    names = {
        metadata_name: uri for uri, d in assets.items() if (metadata_name := d.metadata.get("airflow.name"))
    }
    waiting: dict[str, list[tuple[str, str | None]]] = {}
    for raw in _inactive_entries(doc):
        uri = _text(raw.get("uri")) if isinstance(raw, dict) else None
        aliases = _names(raw.get("aliases")) if uri else ()
        if not uri or not aliases or uri in assets:  # a URI an active asset holds: that one is the lineage
            continue
        name = _text(raw.get("name"))
        holder = names.get(name) if name else None
        assets[uri] = _asset_dataset(uri, raw, include_extra)
        aliased[uri] = aliases
        for alias in aliases:
            waiting.setdefault(alias, []).append((uri, holder))
    return waiting


def _not_active_records(waiting: Mapping[str, list[tuple[str, str | None]]]) -> list[Lossiness]:
    """One record per alias whose written assets Airflow does not list as active, saying why."""
    records = []
    for alias in sorted(waiting):
        written = sorted(waiting[alias])
        message = (
            f"alias '{alias}' has been written through, to {_some(uri for uri, _ in written)}, which "
            "GET /assets does not list yet (only GET /assets?only_active=false does): Airflow activates "
            "an asset an alias created at the scheduler's next asset pass; its lineage here is read from "
            "the alias and the asset events"
        )
        refused = [(uri, holder) for uri, holder in written if holder is not None]
        if refused:
            message += "; " + "; ".join(
                f"'{uri}' will not be activated while its name belongs to the active asset '{holder}'"
                for uri, holder in refused
            )
        records.append(Lossiness("datasets", message, alias))
    return records


def _unresolved_aliases(
    doc: Mapping[str, Any], aliased: Mapping[str, tuple[str, ...]], records: list[Lossiness]
) -> None:
    resolved = {alias for aliases in aliased.values() for alias in aliases}
    # Airflow 3 lists an asset an alias created only once the scheduler activates it: without the
    # inactive assets, "nothing written yet" is one cause of two (a bare array or Airflow 2 says neither)
    unlisted = "assets" in doc and "inactive_assets" not in doc
    for alias in _names(doc.get("asset_aliases")):
        if alias not in resolved:
            records.append(Lossiness("datasets", _unresolved_alias(alias, inactive_unknown=unlisted), alias))


def _unresolved_alias(alias: str, *, inactive_unknown: bool = False) -> str:
    if inactive_unknown:
        return (
            f"alias '{alias}' resolves to no asset in the datasets artifact, which does not list the "
            "inactive assets (GET /assets?only_active=false): nothing may have been written through it "
            "yet, or what was written waits for the scheduler to activate it, so what is written "
            "through it, and what its consumers read, is unknown"
        )
    return (
        f"alias '{alias}' resolves to no asset in the datasets artifact: nothing has been written "
        "through it yet (or, on Airflow 2, the API does not say), so what is written through it, "
        "and what its consumers read, is unknown"
    )


def _asset_entries(doc: Any) -> list[Any] | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in ("assets", "datasets"):
            if isinstance(doc.get(key), list):
                entries: list[Any] = doc[key]
                return entries
    return None


def _dag_refs(raw: Mapping[str, Any], key: str, uri: str, records: list[Lossiness]) -> Iterator[str]:
    refs = raw.get(key)
    if refs is None:
        return
    if not isinstance(refs, list):
        records.append(
            Lossiness("datasets", f"{key} of asset '{uri}' is {_json_type(refs)}, not a list; ignored", uri)
        )
        return
    for ref in refs:
        dag_id = _text(ref.get("dag_id")) if isinstance(ref, dict) else None
        if dag_id:
            yield dag_id
        else:
            records.append(
                Lossiness("datasets", f"an entry of {key} of asset '{uri}' has no dag_id; ignored", uri)
            )


def _names(value: Any) -> tuple[str, ...]:
    """The sorted, distinct ``name``s of a list of objects (aliases, watchers)."""
    if not isinstance(value, list):
        return ()
    return tuple(
        sorted({name for item in value if isinstance(item, dict) and (name := _text(item.get("name")))})
    )


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


# -- asset conditions: what a DAG scheduled on assets waits for ------------------------------


def _parse_conditions(
    dag_raws: Mapping[str, Mapping[str, Any]],
    assets: Mapping[str, Dataset],
    lineage: _Lineage,
    records: list[Lossiness],
    have_assets: bool,
    broken: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Each asset-scheduled DAG's condition, as text, with an edge for every input it resolves.

    The datasets artifact lists a DAG scheduled on an asset directly; only the DAG's condition
    (``asset_expression`` from its details) tells of schedules on ``Asset.ref`` and on aliases.
    What a condition names but cannot be resolved is a lossiness record.
    """
    index = AssetIndex((uri, asset.metadata) for uri, asset in assets.items())
    known = {r.subject for r in records if r.artifact == "datasets"}
    # worked out once, not per DAG: a record list and a DAG list can both be long
    told = {r.subject for r in records if r.artifact == "dags"}
    conditions: dict[str, str] = {}
    for dag_id, raw in dag_raws.items():
        key = "asset_expression" if "asset_expression" in raw else "dataset_expression"
        if key not in raw:
            if (
                scheduled_on_assets(raw)
                and dag_id not in (broken or {})  # its file does not import: it waits on nothing
                and dag_id not in told
            ):
                records.append(
                    Lossiness(
                        "dags",
                        f"DAG '{dag_id}' is scheduled on assets, but the dags artifact lacks its condition "
                        f"(asset_expression from GET /dags/{dag_id}/details): the references, aliases "
                        "and alternatives it waits on are unknown",
                        dag_id,
                    )
                )
            continue
        try:
            condition = read_expression(raw[key])
        except ConditionError as exc:
            records.append(
                Lossiness("dags", f"the {key} of DAG '{dag_id}' was not understood: {exc}", dag_id)
            )
            continue
        if condition is None:
            continue
        conditions[dag_id] = condition_text(condition)
        if not have_assets:
            continue
        for leaf in dict.fromkeys(leaves(condition)):
            uris = index.resolve(leaf)
            via = {"asset": None, "alias": VIA_ALIAS + leaf.value}.get(leaf.kind, VIA_REF)
            for uri in uris:
                lineage.consumes(dag_id, uri, via=via)
            if not uris and leaf.kind != "alias":
                records.append(Lossiness("datasets", _unresolved(dag_id, leaf, assets), dag_id))
            elif not uris and leaf.value not in known:  # one record per alias, however many wait on it
                records.append(Lossiness("datasets", _unresolved(dag_id, leaf, assets), leaf.value))
                known.add(leaf.value)
    return conditions


def _unresolved(dag_id: str, leaf: Leaf, assets: Mapping[str, Dataset]) -> str:
    if leaf.kind == "alias":
        return _unresolved_alias(leaf.value)
    if leaf.kind == "asset":
        return (
            f"DAG '{dag_id}' is scheduled on asset '{leaf.value}', which the datasets artifact does not list"
        )
    what = f"Asset.ref({leaf.kind}='{leaf.value}')"
    hint = ""
    if leaf.kind == "uri" and leaf.value.rstrip("/") in assets:
        stored = leaf.value.rstrip("/")
        hint = f" (Airflow stores the asset as '{stored}' and matches a reference's URI as written)"
    return f"DAG '{dag_id}' is scheduled on {what}, which matches no asset{hint}: it never runs on it"


def scheduled_on_assets(raw: Mapping[str, Any]) -> bool:
    """Whether the DAG list says a DAG is scheduled on assets (then only its details say on which)."""
    summary, description = raw.get("timetable_summary"), raw.get("timetable_description")
    if isinstance(summary, str) and (
        summary in ("Asset", "Partitioned Asset", "Dataset")
        or summary.startswith(("Asset or ", "Dataset or "))
    ):
        return True
    return isinstance(description, str) and description.startswith(
        ("Triggered by assets", "Triggered by datasets")
    )


# -- asset conflicts ---------------------------------------------------------------------------


def _asset_conflicts(
    doc: Any, described: Iterable[str], records: list[Lossiness], twins: Mapping[str, list[str]] | None = None
) -> dict[str, str]:
    """The ``asset conflict`` DAG warnings riding in the dags artifact, by DAG: kept as Airflow
    worded them, one line per refused asset, for the audit to read; with the lines ``twins`` words
    for refused assets the scheduler has not yet warned of (``conflicts.refused_twins``)."""
    warnings = doc.get("dag_warnings") if isinstance(doc, dict) else None
    described = set(described)
    found: dict[str, list[str]] = {
        dag_id: list(lines) for dag_id, lines in (twins or {}).items() if dag_id in described
    }
    for warning in warnings if isinstance(warnings, list) else ():
        if not isinstance(warning, dict) or warning.get("warning_type") != ASSET_CONFLICT:
            continue
        dag_id, message = _text(warning.get("dag_id")), _text(warning.get("message"))
        if not dag_id or not message:
            continue
        conflicts, unreadable = read_conflicts(message)
        for line in unreadable:
            records.append(
                Lossiness(
                    "dags",
                    f"an asset conflict warning of DAG '{dag_id}' was not understood: "
                    f"{scrub_credentials(line)}",
                    dag_id,
                )
            )
        if dag_id not in described:
            records.append(
                Lossiness(
                    "dags",
                    f"an asset conflict warning names DAG '{dag_id}', which is not in the dags artifact",
                    dag_id,
                )
            )
        elif conflicts:
            unread = set(unreadable)  # a set: a long warning's lines are not each checked against a list
            found.setdefault(dag_id, []).extend(line for line in message.splitlines() if line not in unread)
    return {dag_id: "\n".join(sorted(set(lines))) for dag_id, lines in found.items()}


#: The most DAG warnings kept per DAG: Airflow keeps one per warning type, and knows three types.
MAX_WARNINGS_PER_DAG = 10


def _dag_warnings(doc: Any, described: Iterable[str], records: list[Lossiness]) -> dict[str, str]:
    """The DAG warnings riding in the dags artifact other than asset conflicts (``non-existent
    pool``, ``runtime varying value``), by DAG: canonical JSON of ``{type: message}``, each message
    scrubbed of credentials in URLs and cut to a line (``warning_text``)."""
    warnings = doc.get("dag_warnings") if isinstance(doc, dict) else None
    described = set(described)
    found: dict[str, dict[str, str]] = {}
    dropped: dict[str, int] = {}
    for warning in warnings if isinstance(warnings, list) else ():
        if not isinstance(warning, dict):
            continue
        kind = _text(warning.get("warning_type"))
        dag_id, message = _text(warning.get("dag_id")), _text(warning.get("message"))
        if not kind or not kind.strip() or kind == ASSET_CONFLICT or not dag_id:
            continue
        if dag_id not in described:
            said = f"a {warning_label(kind)} DAG warning names DAG '{dag_id}', which is not in the estate"
            records.append(Lossiness("dags", said, dag_id))
            continue
        kept = found.setdefault(dag_id, {})
        label = warning_label(kind)
        if label in kept:
            continue  # the same warning twice (a page boundary moved): Airflow keeps one per type
        if len(kept) >= MAX_WARNINGS_PER_DAG:
            dropped[dag_id] = dropped.get(dag_id, 0) + 1
            continue
        kept[label] = warning_text(message or "")
    for dag_id, count in sorted(dropped.items()):
        said = f"DAG '{dag_id}' has {count} more DAG warnings than the {MAX_WARNINGS_PER_DAG} kept"
        records.append(Lossiness("dags", said, dag_id))
    return {dag_id: _canonical(kept) for dag_id, kept in found.items() if kept}


def asset_name(uri: str) -> str:
    """The display name of an asset: the last non-empty path segment of its URI, else the URI."""
    try:
        path = urlsplit(uri).path
    except ValueError:  # e.g. a malformed IPv6 authority
        path = uri.split("://", 1)[-1].partition("/")[2]
    segments = [segment for segment in path.split("/") if segment]
    return segments[-1] if segments else uri


# -- reduction: what a capture keeps of each object when it keeps no raw responses -----------

# The same keys as the typed decode reads (one list to keep up to date), less class_ref (cut
# down below).
_DAG_KEYS = tuple(_Dag.__annotations__)
_TASK_KEYS: tuple[str, ...] = tuple(key for key in _Task.__struct_fields__ if key != "class_ref")


def reduce_dag(raw: Any) -> Any:
    """A DAG object cut down to the keys the parse reads; the parse of the result is unchanged."""
    if not isinstance(raw, dict):
        return raw
    return {key: raw[key] for key in _DAG_KEYS if key in raw}


def reduce_task(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw
    reduced = {key: raw[key] for key in _TASK_KEYS if key in raw}
    class_ref = raw.get("class_ref")
    if isinstance(class_ref, dict) and "class_name" in class_ref:
        reduced["class_ref"] = {"class_name": class_ref["class_name"]}
    elif "class_ref" in raw:
        reduced["class_ref"] = class_ref
    return reduced


def reduce_asset(raw: Any, *, keep_extra: bool = False) -> Any:
    """An asset cut down to the keys the parse reads, and its ``id``."""
    if not isinstance(raw, dict):
        return raw
    reduced = {
        key: raw[key] for key in ("uri", "name", "group", "created_at", "last_asset_event") if key in raw
    }
    if keep_extra and "extra" in raw:
        reduced["extra"] = raw["extra"]
    elif isinstance(raw.get("extra"), dict) and STALE_TOLERANCE_EXTRA in raw["extra"]:
        reduced["extra"] = {STALE_TOLERANCE_EXTRA: raw["extra"][STALE_TOLERANCE_EXTRA]}
    for key, keep in (
        ("producing_tasks", "dag_id"),
        *((k, "dag_id") for k in _CONSUMER_KEYS),
        ("aliases", "name"),
        ("watchers", "name"),
    ):
        refs = raw.get(key)
        if isinstance(refs, list):
            reduced[key] = [{keep: ref.get(keep)} if isinstance(ref, dict) else ref for ref in refs]
        elif key in raw:
            reduced[key] = refs
    if "id" in raw:  # the capture asks for an aliased asset's events by id, and tells twins apart by it
        reduced["id"] = raw["id"]
    return reduced


def reduce_event(raw: Any) -> Any:
    """An asset event cut down to what names a writer: the asset's URI and the source DAG."""
    if not isinstance(raw, dict):
        return raw
    return {key: raw[key] for key in _AssetEvent.__annotations__ if key in raw}


def reduce_warning(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw
    return {key: raw[key] for key in _DagWarning.__annotations__ if key in raw}


# -- helpers ------------------------------------------------------------------------------


def _decode_optional(
    artifact: str, data: bytes | str | None, records: list[Lossiness], decoder: Callable[[bytes | str], Any]
) -> Any:
    if data is None:
        return ABSENT
    try:
        return decoder(data)
    except ValueError as exc:
        records.append(_not_json(artifact, exc))
        return ABSENT


def _not_json(artifact: str, exc: ValueError) -> Lossiness:
    return Lossiness(artifact, f"{artifact} artifact ignored: not valid JSON ({exc})")


def _infer_api(raw_dags: list[Any], datasets: Any) -> str | None:
    """Tell the API generation from the shapes: what an offline audit can know of its source."""
    if isinstance(datasets, dict):
        if isinstance(datasets.get("assets"), list):
            return "v2"
        if isinstance(datasets.get("datasets"), list):
            return "v1"
    for raw in raw_dags:
        if isinstance(raw, dict):
            if "bundle_name" in raw or "is_stale" in raw or "timetable_summary" in raw:
                return "v2"
            if "is_active" in raw or "schedule_interval" in raw:
                return "v1"
    return None


def _canonical(value: Any) -> str:
    """A JSON value as one canonical string (sorted keys, no whitespace), safe to encode as UTF-8."""
    try:
        return _clean(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    except (TypeError, ValueError):  # NaN is fine for json.dumps; only exotic values land here
        return _clean(repr(value))


def _text(value: Any) -> str | None:
    """A string value (empty ones too), made safe to encode as UTF-8; None for anything else."""
    return _clean(value) if isinstance(value, str) else None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(json.dumps(_clean(str(k))) for k in list(value)[:10])
        return f"an object with keys [{keys}{', ...' if len(value) > 10 else ''}]"
    return _json_type(value)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else "unreadable"
