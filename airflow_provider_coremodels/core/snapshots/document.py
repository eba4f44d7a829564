"""The snapshot document: the estate, its audit and its fingerprint as camelCase JSON.

This is the interface outside tools read (documented in docs/snapshot.md). ``build_document`` writes
it, ``load_document`` reads one back for a re-audit or as a baseline, and ``fingerprint``
hashes the governed content only, so an unchanged estate always hashes the same.
"""

from __future__ import annotations

import codecs
import dataclasses
import hashlib
import json
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.checks.audit import AuditResult, Baseline
from airflow_provider_coremodels.core.checks.policy import policy_json
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.model import (
    ASSET,
    CAPABILITIES,
    CONNECTOR,
    DAG,
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    BrokenFile,
    Dataset,
    Edge,
    Estate,
    Field,
    Finding,
    Lossiness,
    Materialization,
    NonEmptyText,
    State,
    joins,
)
from airflow_provider_coremodels.core.estate.rules import FRESHNESS
from airflow_provider_coremodels.core.reading.freshness import freshness_json, read_freshness_json
from airflow_provider_coremodels.errors import SnapshotDocumentError
from airflow_provider_coremodels.redaction import scrub_credentials

Document = dict[str, Any]


# -- writing ------------------------------------------------------------------------------


def fields_json(fields: tuple[Field, ...]) -> list[dict[str, Any]]:
    """Fields as the document spells them (``name``, ``nativeType``, ``type``, ``approximate``,
    ``tags``, ``metadata``): the structs' own encoding as built-ins, in one call for all of them
    (a merged estate has millions), with lists for tags as everywhere else in a document."""
    out: list[dict[str, Any]] = list(msgspec.to_builtins(fields))
    for field in out:
        field["tags"] = list(field["tags"])
    return out


def dataset_json(dataset: Dataset, *, fields: Any = None) -> dict[str, Any]:
    """A dataset as the document spells it; ``fields`` replaces its fields' built-in form (the
    ``Field`` structs themselves, which encode to the same bytes, where only encoding follows)."""
    return {
        "identity": dataset.identity,
        "name": dataset.name,
        "materialization": dataset.materialization,
        "physicalName": dataset.physical_name,
        "description": dataset.description,
        "tags": list(dataset.tags),
        "mapsTo": {"standard": CONNECTOR, "uri": dataset.maps_to or dataset.identity},
        "metadata": dict(dataset.metadata),
        "fields": fields_json(dataset.fields) if fields is None else fields,
    }


def governed_fingerprint(datasets: Iterable[Dataset], lineage: Iterable[Edge]) -> str:
    """``fingerprint`` of the model itself, without building the document's field dicts."""
    return fingerprint([dataset_json(d, fields=d.fields) for d in datasets], [edge_json(e) for e in lineage])


def edge_json(edge: Edge) -> dict[str, Any]:
    out: dict[str, Any] = {
        "dependent": edge.dependent,
        "dependentKind": edge.dependent_kind,
        "dependsOn": edge.depends_on,
        "dependsOnKind": edge.depends_on_kind,
        "external": edge.external,
    }
    if edge.via is not None:
        out["via"] = edge.via
    if edge.cross_deployment:
        out["crossDeployment"] = True
    if edge.source is not None:
        out["source"] = edge.source
    return out


def edge_json_v1(edge: Edge) -> dict[str, Any]:
    """An edge as version 1 documents wrote it (no kinds): to check their stored fingerprints."""
    return {"dependent": edge.dependent, "dependsOn": edge.depends_on, "external": edge.external}


def finding_json(finding: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {
        "section": finding.section,
        "severity": finding.severity.value,
        "code": finding.code,
        "subject": finding.subject,
        "message": finding.message,
        "detail": finding.detail,
    }
    if finding.waived is not None:
        out["waived"] = {"reason": finding.waived.reason, "expires": finding.waived.expires}
    if finding.team is not None:
        out["team"] = list(finding.team)
    return out


def import_error_json(broken: BrokenFile) -> dict[str, Any]:
    outlets: dict[str, list[str]] = {}
    for dag_id, uri in broken.outlets:
        outlets.setdefault(dag_id, []).append(uri)
    return {
        "file": broken.file,
        "bundle": broken.bundle,
        "path": broken.path,
        "error": broken.error,
        "dags": list(broken.dags),
        "outlets": outlets,
    }


def lossiness_json(record: Lossiness) -> dict[str, Any]:
    out = {"artifact": record.artifact, "message": record.message}
    if record.subject is not None:
        out["subject"] = record.subject
    return out


def canonical_json(value: Any) -> bytes:
    """Keys sorted, no whitespace, UTF-8 with non-ASCII kept: the fingerprint's byte form.

    msgspec writes exactly what ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` would (tests/core/test_fingerprint.py checks it), several times faster.
    """
    return msgspec.json.encode(value, order="sorted")


def fingerprint(datasets: list[dict[str, Any]], lineage: list[dict[str, Any]]) -> str:
    """First 16 hex digits of SHA-256 over the canonical JSON of the governed content."""
    return _governed(datasets, lineage)[0]


#: Datasets encoded at a time for the fingerprint: its canonical bytes are hashed as they come,
#: never held whole (for a merge of fifty deployments they are hundreds of megabytes).
_HASH_CHUNK = 2000


def _governed(datasets: Sequence[dict[str, Any]], lineage: Sequence[dict[str, Any]]) -> tuple[str, int]:
    """The fingerprint, and how many bytes the two arrays take in any compact encoding.

    Exactly the SHA-256 of ``canonical_json({"datasets": datasets, "lineage": lineage})``, fed a
    chunk of datasets at a time. A JSON object's length does not depend on the order of its keys,
    so the canonical bytes also measure the document's, and the cap needs no second encoding of
    what is most of it.
    """
    digest = hashlib.sha256(b'{"datasets":[')
    size = 2
    for start in range(0, len(datasets), _HASH_CHUNK):
        chunk = canonical_json(datasets[start : start + _HASH_CHUNK])[1:-1]
        digest.update(b"," + chunk if start else chunk)
        size += len(chunk) + (1 if start else 0)
    edges = canonical_json(lineage)
    digest.update(b'],"lineage":' + edges + b"}")
    return digest.hexdigest()[:16], size + len(edges)


def findings_digest(findings: list[dict[str, Any]], lossiness: list[dict[str, Any]] | None = None) -> str:
    """First 16 hex digits of SHA-256 over the canonical JSON of what the audit said: the findings
    (waivers included) and which lossiness records there are (artifact and subject).

    Beside the fingerprint, what a sink compares to decide whether a document is new: an
    unchanged estate whose findings changed (a waiver added or expired, an asset gone stale), or
    that gained or lost a record (a deployment of a merge gone stale, or back), is stored again,
    so what is stored never says what no longer holds. A freshness finding counts by its
    verdict, not its detail, and a record by what it is about, not its message: an age that
    grows at every run while nothing else changes is no news.
    """
    verdicts = [_verdict(f) if f.get("section") == FRESHNESS else f for f in findings]
    about = sorted(
        {
            (str(r.get("artifact")), str(r.get("subject") or ""))
            for r in lossiness or ()
            if isinstance(r, dict)
        }
    )
    said: Any = {"findings": verdicts, "lossiness": [list(pair) for pair in about]} if about else verdicts
    return hashlib.sha256(canonical_json(said)).hexdigest()[:16]


def _verdict(finding: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in finding.items() if key != "detail"}


def stored_version(document: Document) -> str:
    """``<fingerprint>-<findings digest>``: what identifies a stored document's content."""
    digest = findings_digest(document.get("findings") or [], document.get("lossiness") or [])
    return f"{document['fingerprint']}-{digest}"


def encode(document: Document) -> bytes:
    """The stored byte form (compact UTF-8 JSON, keys in document order), which the cap measures."""
    return msgspec.json.encode(document)


def build_document(
    estate: Estate,
    result: AuditResult,
    *,
    max_snapshot_bytes: int = defaults.MAX_SNAPSHOT_BYTES,
    lean: bool = False,
) -> Document:
    """Assemble the snapshot document and apply the snapshot cap to ``snapshotStored``.

    The document is JSON built-ins (dicts, lists, strings, numbers). ``lean`` keeps each dataset's
    fields as the model's ``Field`` structs instead, which ``encode`` and ``render_json`` write
    as exactly the same JSON: for a document that is only written out, never read field by field,
    it spares a dict per task (a merge of fifty deployments has millions; ``federation.py``).
    """
    with gc_paused():
        return _build_document(estate, result, max_snapshot_bytes, lean)


def _build_document(estate: Estate, result: AuditResult, max_snapshot_bytes: int, lean: bool) -> Document:
    datasets = [dataset_json(d, fields=d.fields if lean else None) for d in estate.datasets]
    lineage = [edge_json(e) for e in estate.lineage]
    governed_fingerprint, governed_bytes = _governed(datasets, lineage)
    state = estate.state
    document: Document = {
        "schemaVersion": SCHEMA_VERSION,
        "connector": CONNECTOR,
        "capabilities": list(CAPABILITIES),
        "fingerprint": governed_fingerprint,
        "state": {
            "connectorVersion": state.connector_version,
            "airflowVersion": state.airflow_version,
            "apiVersion": state.api_version,
            "capturedAt": state.captured_at,
            "counts": estate.counts(),
            "facts": estate.facts(),
            "deployment": state.deployment,
            **({"deployments": list(state.deployments)} if state.deployments else {}),
        },
        "datasets": datasets,
        "lineage": lineage,
        "findings": [finding_json(f) for f in result.findings],
        "lossiness": [lossiness_json(r) for r in estate.lossiness],
        "lineageEdgesSkipped": estate.lineage_edges_skipped,
        "snapshotStored": True,
        "baseline": {
            "evaluated": result.baseline.evaluated,
            "fingerprint": result.baseline.fingerprint,
            "reason": result.baseline.reason,
        },
        # volatile: judged by the freshness rules, outside the fingerprint (core/reading/freshness.py)
        "freshness": freshness_json(estate.freshness, result.freshness),
        # the files that do not import, as the audit judged them (core/reading/broken.py): outside the
        # fingerprint, like an error's wording; what they change in the lineage is inside it
        "importErrors": [import_error_json(b) for b in result.import_errors or estate.import_errors],
    }
    if result.policy is not None:
        # the team's rules as they ran (core/checks/policy.py): what each is, for every view; outside the
        # fingerprint, like the waivers: the estate is the same whichever rules judge it
        document["policy"] = policy_json(result.policy)
    # len(encode(document)), without encoding the datasets and lineage once more
    size = len(encode({**document, "datasets": [], "lineage": []})) - len(b"[][]") + governed_bytes
    if size > max_snapshot_bytes:
        document["snapshotStored"] = False
        document["lossiness"].append(
            {
                "artifact": "snapshot",
                "message": (
                    f"snapshot document is {size} bytes, over the {max_snapshot_bytes}-byte cap: "
                    "stored without datasets and lineage, so it cannot serve as a baseline"
                ),
            }
        )
    return document


def for_storage(document: Document) -> Document:
    """What a sink stores: the document itself, or without datasets and lineage when over the cap."""
    if document.get("snapshotStored", True):
        return document
    return {k: v for k, v in document.items() if k not in ("datasets", "lineage")}


# -- reading ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredSnapshot:
    """A snapshot document read back; ``estate`` is None when it was stored without datasets."""

    fingerprint: str | None
    state: State
    estate: Estate | None
    #: The digest of the team's rules the stored findings were checked against, if any.
    policy_digest: str | None = None

    def as_baseline(self) -> Baseline:
        return Baseline(self.fingerprint, self.estate)


def load_document(data: bytes | str) -> StoredSnapshot:
    """Read a snapshot document back into the model; errors name the offending key.

    A well-formed version 2 document (what this version writes) is decoded in one typed pass
    straight into the model (``_read_typed``): several times faster than ``json.loads`` and a
    fraction of its memory, which is what lets ``merge`` read fifty deployments' documents. Any
    document that pass refuses, a version 1 one or a damaged one, is read again key by key
    (``_Reader``), which accepts what it accepts and names exactly what is wrong.
    """
    with gc_paused():
        typed = _read_typed(data)
        return typed if typed is not None else _read_checked(data)


def decode_stored(data: bytes | str) -> dict[str, Any]:
    """A stored document's JSON, by the one rule every reader of a stored document uses (``--snapshot``,
    ``--baseline``, ``merge``, ``mcp``, a sink's ``latest.json``, the UI page).

    The offline parse's decoding (strict UTF-8, a byte-order mark tolerated, nesting bounded;
    ``NaN`` and ``Infinity`` read as Python's json reads them, as a re-audit always has), then:
    an object, and no lone surrogate anywhere (``"\\ud800"``, text that UTF-8 cannot carry, which
    no document this provider writes holds). Anything else is a ``SnapshotDocumentError`` saying
    what is wrong with the file.
    """
    from airflow_provider_coremodels.core.reading.parse import decode

    try:
        doc = decode(data)
    except ValueError as exc:
        raise SnapshotDocumentError(f"is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise SnapshotDocumentError("is not a JSON object")
    if _may_hold_surrogates(data):
        found = _lone_surrogate(doc)
        if found is not None:
            where, char = found
            raise SnapshotDocumentError(
                f"holds a lone surrogate (\\u{ord(char):04x}) in {where}, which UTF-8 cannot encode "
                "(no document this provider writes holds one: it was written or edited elsewhere)"
            )
    return doc


#: A ``\\uD800``-``\\uDFFF`` escape: the only way a lone surrogate gets into text decoded as strict
#: UTF-8. Its absence (the common case) spares the walk over every value. A backslash that is
#: itself escaped (``\\\\ud800``, the text ``\\ud800``) starts no escape: the ``u`` must follow an
#: odd run of backslashes.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _may_hold_surrogates(data: bytes | str) -> bool:
    if isinstance(data, str):
        return _SURROGATE.search(data) is not None or _escapes_surrogate(data.encode())
    return _escapes_surrogate(data)


def _escapes_surrogate(data: bytes) -> bool:
    """Whether ``data`` holds an escape of a surrogate: a ``\\uD800``-``\\uDFFF`` whose backslash
    ends an odd run of them. Looked for as a plain pattern, each hit's backslashes then counted
    (one pattern with a look-behind tried at every byte took half a second on a 14 MB baseline)."""
    if b"\\u" not in data:
        return False
    for hit in _SURROGATE_ESCAPE.finditer(data):
        before = hit.start() - 1
        while before >= 0 and data[before] == 0x5C:  # the backslashes just before this one
            before -= 1
        if (hit.start() - 1 - before) % 2 == 0:
            return True
    return False


def _lone_surrogate(doc: Any) -> tuple[str, str] | None:
    """Where the first string (a value or a key) holding a lone surrogate is, and that surrogate."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            found = _SURROGATE.search(value)
            if found:
                return where or "the document", found.group()
        elif isinstance(value, dict):
            children = []
            for key, item in value.items():
                key = str(key)
                found = _SURROGATE.search(key)
                if found:
                    return f"a key of {where or 'the document'}", found.group()
                children.append((item, f"{where}.{key[:80]}" if where else key[:80]))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in reversed(list(enumerate(value))))
    return None


def _read_checked(data: bytes | str) -> StoredSnapshot:
    doc = decode_stored(data)
    reader = _Reader()
    if doc.get("connector") != CONNECTOR:
        raise SnapshotDocumentError(f'has connector {json.dumps(doc.get("connector"))}, expected "airflow"')
    version = doc.get("schemaVersion")
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        readable = " and ".join(str(v) for v in READABLE_SCHEMA_VERSIONS)
        raise SnapshotDocumentError(f"has schemaVersion {json.dumps(version)}; this version reads {readable}")
    raw_state = reader.obj(doc.get("state", {}), "state")
    state = State(
        connector_version=reader.opt_str(raw_state, "connectorVersion", "state") or "unknown",
        airflow_version=reader.opt_str(raw_state, "airflowVersion", "state"),
        api_version=reader.opt_str(raw_state, "apiVersion", "state"),
        captured_at=reader.opt_str(raw_state, "capturedAt", "state"),
        deployment=reader.opt_str(raw_state, "deployment", "state"),
        deployments=reader.strings(raw_state, "deployments", "state"),
    )
    stored_fingerprint = reader.opt_str(doc, "fingerprint", "document")
    if "datasets" not in doc or "lineage" not in doc:
        return StoredSnapshot(stored_fingerprint, state, None)

    datasets = [
        reader.dataset(raw, f"datasets[{i}]") for i, raw in enumerate(reader.arr(doc["datasets"], "datasets"))
    ]
    lossiness = _as_read(
        reader.lossiness(raw, f"lossiness[{i}]")
        for i, raw in enumerate(reader.arr(doc.get("lossiness", []), "lossiness"))
    )
    raw_lineage = reader.arr(doc["lineage"], "lineage")
    if version == 1:
        lineage = _v1_edges(raw_lineage, datasets, reader, lossiness)
    else:
        lineage = [reader.edge(raw, f"lineage[{i}]") for i, raw in enumerate(raw_lineage)]
    broken = tuple(
        reader.broken_file(raw, f"importErrors[{i}]")
        for i, raw in enumerate(reader.arr(doc.get("importErrors", []), "importErrors"))
    )
    stored = _stored(
        stored_fingerprint, state, datasets, lineage, lossiness, doc.get("freshness"), version, broken
    )
    return dataclasses.replace(stored, policy_digest=_policy_digest(doc.get("policy")))


def _as_read(records: Iterable[Lossiness]) -> list[Lossiness]:
    """A stored document's records, less its cap records: they describe how that document was
    stored; the next document decides its own."""
    return [r for r in records if r.artifact != "snapshot"]


def _stored(
    stored_fingerprint: str | None,
    state: State,
    datasets: list[Dataset],
    lineage: list[Edge],
    lossiness: list[Lossiness],
    freshness: Any,
    version: int,
    broken: tuple[BrokenFile, ...] = (),
) -> StoredSnapshot:
    """The estate read back, in the model's order, its stored fingerprint checked against it."""
    datasets.sort(key=lambda d: (d.materialization, d.identity))
    if version == 1:
        lineage.sort(key=lambda e: (e.dependent, e.depends_on))
        actual = fingerprint(
            [dataset_json(d, fields=d.fields) for d in datasets], [edge_json_v1(e) for e in lineage]
        )
    else:
        lineage.sort(key=lambda e: e.key)
        actual = governed_fingerprint(datasets, lineage)
    if stored_fingerprint is not None and stored_fingerprint != actual:
        lossiness.append(
            Lossiness(
                "snapshot",
                f"stored fingerprint {stored_fingerprint} does not match the stored content ({actual}): "
                "the document was edited after it was written",
            )
        )
    lineage.sort(key=lambda e: e.key)
    estate = Estate(
        tuple(datasets), tuple(lineage), state, tuple(lossiness), read_freshness_json(freshness), broken
    )
    return StoredSnapshot(stored_fingerprint, state, estate)


# -- the typed pass: a version 2 document straight into the model ---------------------------


class _MapsTo(msgspec.Struct, gc=False):
    uri: NonEmptyText | None = None


class _StoredDataset(msgspec.Struct, rename="camel", gc=False):
    identity: NonEmptyText
    name: NonEmptyText
    materialization: Materialization
    physical_name: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    maps_to: _MapsTo | None = None
    metadata: dict[str, str] = {}
    fields: tuple[Field, ...] = ()


class _StoredEdge(msgspec.Struct, rename="camel", gc=False):
    dependent: NonEmptyText
    dependent_kind: Materialization
    depends_on: NonEmptyText
    depends_on_kind: Materialization
    external: bool = False
    via: str | None = None
    cross_deployment: bool = False
    source: str | None = None


class _StoredLossiness(msgspec.Struct, gc=False):
    artifact: NonEmptyText
    message: NonEmptyText
    subject: str | None = None


class _StoredState(msgspec.Struct, rename="camel", gc=False):
    connector_version: str | None = None
    airflow_version: str | None = None
    api_version: str | None = None
    captured_at: str | None = None
    deployment: str | None = None
    deployments: tuple[str, ...] = ()


class _StoredBrokenFile(msgspec.Struct, gc=False):
    file: NonEmptyText
    path: NonEmptyText
    error: str
    bundle: str | None = None
    dags: tuple[str, ...] = ()
    outlets: dict[str, tuple[str, ...]] = {}


class _StoredDocument(msgspec.Struct, rename="camel"):
    connector: Literal["airflow"]
    schema_version: Literal[2]
    fingerprint: str | None = None
    state: _StoredState = msgspec.field(default_factory=_StoredState)
    datasets: list[_StoredDataset] | msgspec.UnsetType = msgspec.UNSET
    lineage: list[_StoredEdge] | msgspec.UnsetType = msgspec.UNSET
    lossiness: list[_StoredLossiness] = []
    freshness: Any = None
    import_errors: list[_StoredBrokenFile] = []
    policy: Any = None


_DECODER = msgspec.json.Decoder(_StoredDocument)
#: How much of a document one step of the UTF-8 check decodes: its memory, whatever the document's size.
_UTF8_CHUNK = 1 << 20


def _is_utf8(data: bytes | bytearray) -> bool:
    """Whether ``data`` is strict UTF-8 (surrogates refused, as Python's codec refuses them)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    view = memoryview(data)
    try:
        for start in range(0, len(view), _UTF8_CHUNK):
            decoder.decode(view[start : start + _UTF8_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


_BY_NAME = operator.attrgetter("name")


def _read_typed(data: bytes | str) -> StoredSnapshot | None:
    """The document through ``_StoredDocument``, or None where that pass refuses it (anything but a
    well-formed version 2 document) or cannot judge it: the checked reader then reads it, or says
    what is wrong.

    msgspec checks neither the UTF-8 nor the escapes of the values a struct skips (and before 0.23,
    Airflow 3.0's, not all of those it decodes), so a document that is not UTF-8, or that escapes a
    surrogate (``\\ud800``, a lone one or half of a pair), goes to the checked reader, which holds
    every reader to one rule. Both checks are scans in C, without a copy of the document.
    """
    if isinstance(data, (bytes, bytearray)) and not data.isascii() and not _is_utf8(data):
        return None
    if _may_hold_surrogates(data):
        return None
    try:
        doc = _DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeError):
        return None
    raw = doc.state
    state = State(
        connector_version=raw.connector_version or "unknown",
        airflow_version=raw.airflow_version,
        api_version=raw.api_version,
        captured_at=raw.captured_at,
        deployment=raw.deployment,
        deployments=raw.deployments,
    )
    if doc.datasets is msgspec.UNSET or doc.lineage is msgspec.UNSET:
        return StoredSnapshot(doc.fingerprint, state, None)
    if not all(joins(edge.dependent_kind, edge.depends_on_kind, edge.via) for edge in doc.lineage):
        return None  # the checked reader names the edge
    if not all(field.approximate for d in doc.datasets for field in d.fields):
        # ``approximate`` is a constant (contract: always true), which the checked reader does not
        # read; the typed struct would keep a false one (msgspec before 0.22 has no Literal[True])
        return None
    datasets = [
        Dataset(
            identity=d.identity,
            name=d.name,
            materialization=d.materialization,
            physical_name=d.physical_name,
            description=d.description,
            tags=d.tags,
            metadata=d.metadata,
            fields=d.fields if len(d.fields) < 2 else tuple(sorted(d.fields, key=_BY_NAME)),
            maps_to=None if d.maps_to is None or d.maps_to.uri == d.identity else d.maps_to.uri,
        )
        for d in doc.datasets
    ]
    lineage = [
        Edge(
            e.dependent,
            e.dependent_kind,
            e.depends_on,
            e.depends_on_kind,
            e.external,
            e.via,
            e.cross_deployment,
            e.source,
        )
        for e in doc.lineage
    ]
    lossiness = _as_read(Lossiness(r.artifact, r.message, r.subject) for r in doc.lossiness)
    broken = tuple(
        BrokenFile(
            b.file,
            b.path,
            scrub_credentials(b.error),  # a document stored before import errors were scrubbed
            b.bundle,
            tuple(sorted(b.dags)),
            _outlet_pairs(b.outlets),
        )
        for b in doc.import_errors
    )
    stored = _stored(doc.fingerprint, state, datasets, lineage, lossiness, doc.freshness, 2, broken)
    return dataclasses.replace(stored, policy_digest=_policy_digest(doc.policy))


def _policy_digest(part: Any) -> str | None:
    digest = part.get("digest") if isinstance(part, dict) else None
    return digest if isinstance(digest, str) and digest else None


def _outlet_pairs(outlets: Mapping[str, Iterable[str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({(dag_id, uri) for dag_id, uris in outlets.items() for uri in uris}))


def _v1_edges(
    raw_lineage: list[Any], datasets: list[Dataset], reader: _Reader, lossiness: list[Lossiness]
) -> list[Edge]:
    """Version 1 edges named no kinds: read them as version 1 did. The asset end is the one that
    is an asset while the other is a described DAG or the edge is external; an edge whose two
    ends are both names of both kinds is read as producing, as version 1 read it."""
    assets = {d.identity for d in datasets if d.materialization == ASSET}
    dags = {d.identity for d in datasets if d.materialization == DAG}
    edges = []
    for i, raw in enumerate(raw_lineage):
        where = f"lineage[{i}]"
        raw = reader.obj(raw, where)
        dependent, depends_on = reader.text(raw, "dependent", where), reader.text(raw, "dependsOn", where)
        external = reader.flag(raw, "external", where)
        if dependent in assets and (external or depends_on in dags):
            edges.append(Edge.produces(depends_on, dependent, external=external))
        elif depends_on in assets and (external or dependent in dags):
            edges.append(Edge.consumes(dependent, depends_on, external=external))
        else:
            lossiness.append(
                Lossiness("snapshot", f"{where} joins no DAG to an asset of the document; skipped")
            )
    return edges


class _Reader:
    """Type-checked access to a parsed document, raising errors that name the key path."""

    def fail(self, where: str, problem: str) -> SnapshotDocumentError:
        return SnapshotDocumentError(f"has an invalid {where}: {problem}")

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, "expected an object")
        return value

    def arr(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, "expected an array")
        return value

    def text(self, raw: dict[str, Any], key: str, where: str) -> str:
        value = raw.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(f"{where}.{key}", "expected a non-empty string")
        return value

    def opt_str(self, raw: dict[str, Any], key: str, where: str) -> str | None:
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(f"{where}.{key}", "expected a string or null")
        return value

    def strings(self, raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        values = self.arr(raw.get(key, []), f"{where}.{key}")
        if not all(isinstance(v, str) for v in values):
            raise self.fail(f"{where}.{key}", "expected an array of strings")
        return tuple(values)

    def metadata(self, raw: dict[str, Any], where: str) -> dict[str, str]:
        values = self.obj(raw.get("metadata", {}), f"{where}.metadata")
        if not all(isinstance(v, str) for v in values.values()):
            raise self.fail(f"{where}.metadata", "expected string values")
        return values

    def dataset(self, raw: Any, where: str) -> Dataset:
        raw = self.obj(raw, where)
        materialization = raw.get("materialization")
        if materialization not in ("dag", "asset"):
            raise self.fail(f"{where}.materialization", 'expected "dag" or "asset"')
        fields = self.arr(raw.get("fields", []), f"{where}.fields")
        return Dataset(
            identity=self.text(raw, "identity", where),
            name=self.text(raw, "name", where),
            materialization=materialization,
            physical_name=self.opt_str(raw, "physicalName", where),
            description=self.opt_str(raw, "description", where),
            tags=self.strings(raw, "tags", where),
            metadata=self.metadata(raw, where),
            maps_to=self.maps_to(raw, where),
            fields=tuple(
                sorted(
                    (self.field(f, f"{where}.fields[{i}]") for i, f in enumerate(fields)),
                    key=lambda f: f.name,
                )
            ),
        )

    def maps_to(self, raw: dict[str, Any], where: str) -> str | None:
        """``mapsTo.uri`` where it is not the identity (a merged estate's DAG), else None."""
        maps = raw.get("mapsTo")
        uri = maps.get("uri") if isinstance(maps, dict) else None
        if uri is None or uri == raw.get("identity"):
            return None
        if not isinstance(uri, str) or not uri:
            raise self.fail(f"{where}.mapsTo.uri", "expected a non-empty string")
        return uri

    def field(self, raw: Any, where: str) -> Field:
        raw = self.obj(raw, where)
        return Field(
            name=self.text(raw, "name", where),
            native_type=self.text(raw, "nativeType", where),
            metadata=self.metadata(raw, where),
            tags=self.strings(raw, "tags", where),
        )

    def flag(self, raw: dict[str, Any], key: str, where: str) -> bool:
        value = raw.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(f"{where}.{key}", "expected true or false")
        return value

    def kind(self, raw: dict[str, Any], key: str, where: str) -> Materialization:
        value = raw.get(key)
        if value == DAG:
            return DAG
        if value == ASSET:
            return ASSET
        raise self.fail(f"{where}.{key}", 'expected "dag" or "asset"')

    def edge(self, raw: Any, where: str) -> Edge:
        raw = self.obj(raw, where)
        dependent_kind = self.kind(raw, "dependentKind", where)
        depends_on_kind = self.kind(raw, "dependsOnKind", where)
        via = self.opt_str(raw, "via", where)
        if not joins(dependent_kind, depends_on_kind, via):
            raise self.fail(
                where, 'an edge joins a DAG and an asset, or two DAGs "via" "trigger" or "sensor"'
            )
        return Edge(
            self.text(raw, "dependent", where),
            dependent_kind,
            self.text(raw, "dependsOn", where),
            depends_on_kind,
            self.flag(raw, "external", where),
            via,
            self.flag(raw, "crossDeployment", where),
            self.opt_str(raw, "source", where),
        )

    def broken_file(self, raw: Any, where: str) -> BrokenFile:
        raw = self.obj(raw, where)
        outlets = self.obj(raw.get("outlets", {}), f"{where}.outlets")
        for dag_id, uris in outlets.items():
            if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
                raise self.fail(f"{where}.outlets.{dag_id}", "expected an array of strings")
        return BrokenFile(
            file=self.text(raw, "file", where),
            path=self.text(raw, "path", where),
            # scrubbed again: a document stored before import errors were scrubbed may quote a credential
            error=scrub_credentials(self.opt_str(raw, "error", where) or ""),
            bundle=self.opt_str(raw, "bundle", where),
            dags=tuple(sorted(self.strings(raw, "dags", where))),
            outlets=_outlet_pairs(outlets),
        )

    def lossiness(self, raw: Any, where: str) -> Lossiness:
        raw = self.obj(raw, where)
        return Lossiness(
            self.text(raw, "artifact", where),
            self.text(raw, "message", where),
            self.opt_str(raw, "subject", where),
        )
