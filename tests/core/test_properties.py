"""Property-based tests of the pure core: the parse fails only with DagsArtifactError, and the
rest of the pipeline (audit, document, encoding, renderings, read-back) never raises on what
the parse returns and keeps the document's invariants.

The example budget per test is ``COREMODELS_FUZZ_EXAMPLES`` (default 200).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.helpers import EXAMPLE_ESTATE, FIXTURES

from airflow_provider_coremodels.core import (
    audit,
    build_document,
    for_storage,
    load_document,
    parse_artifacts,
)
from airflow_provider_coremodels.core.checks.audit import Baseline
from airflow_provider_coremodels.core.checks.policy import rules_from_value
from airflow_provider_coremodels.core.estate.model import Estate
from airflow_provider_coremodels.core.reading import parse as parse_module
from airflow_provider_coremodels.core.snapshots.document import _read_checked, _read_typed, encode
from airflow_provider_coremodels.core.views.render import render_json, render_table
from airflow_provider_coremodels.errors import DagsArtifactError, SnapshotDocumentError

EXAMPLES = int(os.environ.get("COREMODELS_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

Blob = bytes | str  # what the parse accepts for one artifact
ARTIFACTS = ("dags", "tasks", "datasets")
# The recorded estates: Airflow 3 (v2 API), Airflow 2 (v1 API), and Airflow 2 with list-shaped tasks.
REAL_FILES = {
    "airflow3": (
        EXAMPLE_ESTATE / "dags.json",
        EXAMPLE_ESTATE / "tasks.json",
        EXAMPLE_ESTATE / "datasets.json",
    ),
    "airflow2": ("airflow2/dags.json", "airflow2/tasks.json", "airflow2/datasets.json"),
    "airflow2-list": ("airflow2/dags.json", "airflow2/tasks_list_shape.json", "airflow2/datasets.json"),
}
REAL: dict[str, dict[str, bytes]] = {
    version: {name: (FIXTURES / path).read_bytes() for name, path in zip(ARTIFACTS, paths, strict=True)}
    for version, paths in REAL_FILES.items()
}
FIXTURE_DAG_IDS = sorted({d["dag_id"] for v in REAL.values() for d in json.loads(v["dags"])["dags"]})
FIXTURE_URIS = sorted(
    {a["uri"] for v in REAL.values() for a in next(iter(json.loads(v["datasets"]).values()))}
)

HEX16 = re.compile(r"[0-9a-f]{16}")
SECTIONS = {"Conformance", "Coverage", "Drift"}
SEVERITIES = {"Info", "Warning", "Error"}
LOSSINESS_ARTIFACTS = {"dags", "tasks", "datasets", "snapshot"}

# -- strategies ---------------------------------------------------------------------------


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


# Keys and values the parse looks for (every key of the recorded artifacts, the envelopes,
# the DAG ids and URIs, awkward strings), so that arbitrary JSON reaches past the shape checks.
VOCABULARY = [
    *sorted(set().union(*(_keys(json.loads(blob)) for v in REAL.values() for blob in v.values()))),
    *("dags", "assets", "datasets", "consuming_dags", "", " ", "airflow", "s3://lake/", "\u00e9t\u00e9"),
    *("\ud800", "a\udfffb"),
    *FIXTURE_DAG_IDS,
    *FIXTURE_URIS,
]

lone_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])
texts = st.one_of(
    st.sampled_from(VOCABULARY),
    st.text(max_size=12),
    st.text(alphabet=st.one_of(st.characters(), lone_surrogates), max_size=6),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(texts, children, max_size=5),
    ),
    max_leaves=20,
)
# Smaller values for the slots of shaped artifacts, which hold many of them.
slot_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=4,
)


def to_json_bytes(value: Any, ascii_only: bool = True) -> bytes:
    """Valid JSON text (NaN and Infinity allowed, as json.loads accepts them).

    With ``ascii_only`` lone surrogates become ``\\ud800`` escapes; without it they are written
    as raw (CESU-style) bytes, which the strict UTF-8 decode of the parse rejects.
    """
    return json.dumps(value, allow_nan=True, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def json_artifacts(draw: st.DrawFn, values: st.SearchStrategy[Any] = json_values) -> Blob:
    """A JSON value as the parse may receive it: escaped bytes, raw bytes, or a str."""
    value = draw(values)
    form = draw(st.sampled_from(["escaped", "raw", "str"]))
    if form == "str":
        return json.dumps(value, allow_nan=True, ensure_ascii=False)
    return to_json_bytes(value, ascii_only=form == "escaped")


def maybe(typical: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually a value of the type the API gives, sometimes any JSON value."""
    return st.one_of(typical, typical, typical, slot_values)


def entries(
    required: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[list[Any]]:
    """A list of API-like objects with arbitrary extra keys, mixed with arbitrary values."""
    extra = st.dictionaries(texts, slot_values, max_size=2)
    objects = st.tuples(st.fixed_dictionaries(required, optional=optional), extra).map(
        lambda pair: {**pair[1], **pair[0]}
    )
    return st.lists(st.one_of(objects, objects, objects, slot_values), min_size=1, max_size=5) | st.just([])


dag_ids = st.one_of(st.sampled_from(FIXTURE_DAG_IDS), st.sampled_from(FIXTURE_DAG_IDS), texts)
uris = st.one_of(st.sampled_from(FIXTURE_URIS), st.sampled_from(FIXTURE_URIS), texts)
refs = maybe(st.lists(maybe(st.fixed_dictionaries({"dag_id": maybe(dag_ids)})), max_size=4))
dag_entries = entries(
    {"dag_id": maybe(dag_ids)},
    {
        "description": maybe(texts),
        "is_paused": maybe(st.booleans()),
        "owners": maybe(st.lists(maybe(texts), max_size=3)),
        "tags": maybe(
            st.lists(maybe(st.one_of(texts, st.fixed_dictionaries({"name": maybe(texts)}))), max_size=3)
        ),
        "fileloc": maybe(texts),
        "schedule_interval": maybe(
            st.fixed_dictionaries({}, optional={"__type": maybe(texts), "value": maybe(texts)})
        ),
        "timetable_summary": maybe(texts),
        "bundle_name": texts,
        "is_active": st.booleans(),
    },
)
task_entries = entries(
    {"task_id": maybe(texts)},
    {
        "owner": maybe(texts),
        "class_ref": maybe(st.fixed_dictionaries({}, optional={"class_name": maybe(texts)})),
        "operator_name": maybe(texts),
    },
)
asset_entries = entries(
    {"uri": maybe(uris)},
    {key: refs for key in ("producing_tasks", "scheduled_dags", "consuming_dags", "consuming_tasks")},
)

# Artifacts in the accepted envelopes, with API-like entries holding arbitrary values.
shaped = {
    "dags": st.one_of(dag_entries.map(lambda e: {"dags": e}), dag_entries),
    "tasks": st.one_of(
        st.dictionaries(
            dag_ids, maybe(st.one_of(task_entries.map(lambda e: {"tasks": e}), task_entries)), max_size=5
        ),
        st.lists(
            maybe(st.fixed_dictionaries({"dag_id": maybe(dag_ids), "tasks": maybe(task_entries)})), max_size=5
        ),
    ),
    "datasets": st.one_of(
        asset_entries.map(lambda e: {"assets": e}),
        asset_entries.map(lambda e: {"datasets": e}),
        asset_entries,
    ),
}


@st.composite
def mangled_bytes(draw: st.DrawFn, artifact: str) -> bytes:
    """A recorded artifact with bytes truncated, inserted, overwritten or deleted somewhere."""
    data = bytearray(REAL[draw(st.sampled_from(sorted(REAL)))][artifact])
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["truncate", "insert", "overwrite", "delete"]))
        if op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "overwrite":
            patch = draw(st.binary(min_size=1, max_size=8))
            data[at : at + len(patch)] = patch
        else:
            del data[at : at + draw(st.integers(1, 64))]
    return bytes(data)


# -- the pipeline and its invariants ------------------------------------------------------

BASELINE_ESTATE = parse_artifacts(*REAL["airflow3"].values())


def parse_or_reject(dags: Blob, tasks: Blob | None, datasets: Blob | None) -> Estate | None:
    """Parse; a DagsArtifactError (the only allowed failure) is checked and turned into None.

    Every case is parsed twice: through the fast typed decode and through the full decode
    alone. The two must agree to the letter: same estate, or the same error.
    """
    fast, fast_error = _parse(dags, tasks, datasets)
    with _full_decode_only():
        full, full_error = _parse(dags, tasks, datasets)
    if fast_error is None and full_error is not None and _PYTHON_JSON_LIMIT.search(full_error):
        return fast  # valid JSON that only Python's json refuses: the fast path may read it
    assert (fast, fast_error) == (full, full_error)
    if fast_error is not None:
        assert fast_error.startswith("dags artifact "), fast_error
    return fast


#: The full decode's own limits (recursion depth, digits of an int), beyond JSON's.
_PYTHON_JSON_LIMIT = re.compile(r"nested too deeply|Exceeds the limit .* for integer string conversion")


def _parse(dags: Blob, tasks: Blob | None, datasets: Blob | None) -> tuple[Estate | None, str | None]:
    try:
        return parse_artifacts(dags, tasks, datasets), None
    except DagsArtifactError as exc:
        return None, str(exc)


@contextlib.contextmanager
def _full_decode_only() -> Iterator[None]:
    """The parse with its fast path switched off: every artifact decoded in full by json.loads."""
    original = parse_module._decode_reduced
    parse_module._decode_reduced = lambda decoder, data, keys: parse_module._on_fresh_stack(
        parse_module.decode, data
    )
    try:
        yield
    finally:
        parse_module._decode_reduced = original


def independent_fingerprint(document: dict[str, Any]) -> str:
    governed = {"datasets": document["datasets"], "lineage": document["lineage"]}
    canonical = json.dumps(governed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def assert_document_invariants(doc: dict[str, Any]) -> None:
    datasets, lineage, state = doc["datasets"], doc["lineage"], doc["state"]

    assert HEX16.fullmatch(doc["fingerprint"]), doc["fingerprint"]
    assert doc["fingerprint"] == independent_fingerprint(doc)

    keys = [(d["materialization"], d["identity"]) for d in datasets]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for d in datasets:
        assert isinstance(d["identity"], str) and d["identity"], d
        assert isinstance(d["name"], str) and d["name"], d
        assert d["materialization"] in ("dag", "asset")
        assert d["mapsTo"] == {"standard": "airflow", "uri": d["identity"]}
        assert d["tags"] == sorted(set(d["tags"])) and all(d["tags"])
        assert all(isinstance(v, str) for v in d["metadata"].values())
        if d["materialization"] == "asset":
            assert d["physicalName"] == d["identity"] and d["fields"] == []
        else:
            assert d["name"] == d["identity"]
            assert d["metadata"].get("airflow.paused", "false") in ("true", "false")
        names = [f["name"] for f in d["fields"]]
        assert names == sorted(set(names)) and all(names)
        for f in d["fields"]:
            assert f["nativeType"] and f["type"] == "String" and f["approximate"] is True

    keys = [(e["dependent"], e["dependentKind"], e["dependsOn"], e["dependsOnKind"]) for e in lineage]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys), "edges must be unique per (dependent, kind, dependsOn, kind)"
    assets = {d["identity"] for d in datasets if d["materialization"] == "asset"}
    dags = [d for d in datasets if d["materialization"] == "dag"]
    dag_ids = {d["identity"] for d in dags}
    for e in lineage:
        assert e["dependent"] and e["dependsOn"] and isinstance(e["external"], bool)
        assert {e["dependentKind"], e["dependsOnKind"]} == {"dag", "asset"}, e
        asset, dag = (
            (e["dependent"], e["dependsOn"])
            if e["dependentKind"] == "asset"
            else (e["dependsOn"], e["dependent"])
        )
        assert asset in assets, e
        assert (dag in dag_ids) != e["external"], e
        assert e.get("via", "ref") in ("ref", "inlet") or e["via"].startswith("alias:"), e

    external = sum(e["external"] for e in lineage)
    assert state["counts"] == {
        "datasets": len(datasets),
        "fields": sum(len(d["fields"]) for d in datasets),
        "lineageEdges": len(lineage),
        "lineageEdgesSkipped": external,
    }
    assert doc["lineageEdgesSkipped"] == external
    assert state["facts"] == {
        "dags": len(dags),
        "pausedDags": sum(d["metadata"].get("airflow.paused") == "true" for d in dags),
        "assets": len(assets),
        "tasks": sum(len(d["fields"]) for d in dags),
    }

    findings = doc["findings"]
    order = [(f["section"], f["code"], f["subject"]) for f in findings]
    assert order == sorted(order), "findings must be sorted by (section, code, subject)"
    for f in findings:
        assert f["section"] in SECTIONS and f["severity"] in SEVERITIES and f["subject"] and f["message"]

    for record in doc["lossiness"]:
        assert record["artifact"] in LOSSINESS_ARTIFACTS and record["message"], record


def check_pipeline(estate: Estate, dags: Blob, tasks: Blob | None, datasets: Blob | None) -> dict[str, Any]:
    """Run everything downstream of the parse on ``estate`` and check what comes out."""
    doc = build_document(estate, audit(estate))
    assert_document_invariants(doc)

    # Reproducible: the same bytes parse to the same document, fingerprint included.
    again = parse_artifacts(dags, tasks, datasets)
    assert build_document(again, audit(again)) == doc

    encoded = encode(doc)
    assert json.loads(encoded) == doc
    assert encode(build_document(estate, audit(estate), lean=True)) == encoded  # the same JSON, leaner
    assert json.loads(render_json(doc)) == doc
    table = render_table(doc)
    assert doc["fingerprint"] in table

    # Read back: the same governed content, and no "edited after writing" record; the typed pass
    # takes every document this version writes, and reads it as the checked reader does.
    stored = load_document(encoded)
    assert _read_typed(encoded) == _read_checked(encoded) == stored
    assert stored.fingerprint == doc["fingerprint"] and stored.estate is not None
    assert not any(r.artifact == "snapshot" for r in stored.estate.lossiness)
    reread = build_document(stored.estate, audit(stored.estate))
    assert reread["fingerprint"] == doc["fingerprint"]
    assert (reread["datasets"], reread["lineage"], reread["findings"]) == (
        doc["datasets"],
        doc["lineage"],
        doc["findings"],
    )

    # Against itself as the baseline there is neither coverage nor drift.
    result = audit(estate, stored.as_baseline())
    assert result.baseline.evaluated
    assert [f for f in result.findings if f.section != "Conformance"] == []

    # With teams (each owner of the estate a team of its own): the same findings, each naming its
    # teams, the same fingerprint, and the views group them (core/checks/teams.py, issue 36).
    owned = sorted(
        {o.strip() for d in estate.dags() for o in d.metadata.get("airflow.owners", "").split(",")}
    )
    named = {f"t{i}": {"owners": [o]} for i, o in enumerate(o for o in owned if o)}
    teamed = build_document(
        estate, audit(estate, policy=rules_from_value({"teams": named or {"t": {"tags": ["x"]}}}))
    )
    assert teamed["fingerprint"] == doc["fingerprint"]
    assert [(f["code"], f["subject"]) for f in teamed["findings"]] == [
        (f["code"], f["subject"]) for f in doc["findings"]
    ]
    assert all(isinstance(f["team"], list) and set(f["team"]) <= set(named) for f in teamed["findings"])
    render_table(teamed)

    # Against another estate the drift rules run, and their findings stay sorted.
    other = build_document(estate, audit(estate, Baseline("0" * 16, BASELINE_ESTATE)))
    assert_document_invariants(other)
    render_table(other)

    # The cap measures the document exactly: at its size it is stored, a byte less and it is not.
    assert build_document(estate, audit(estate), max_snapshot_bytes=len(encoded))["snapshotStored"]
    assert not build_document(estate, audit(estate), max_snapshot_bytes=len(encoded) - 1)["snapshotStored"]

    # Over the cap: stored without datasets and lineage, and read back as no baseline.
    capped = build_document(estate, audit(estate), max_snapshot_bytes=0)
    assert capped["snapshotStored"] is False and capped["lossiness"][-1]["artifact"] == "snapshot"
    stored_capped = load_document(encode(for_storage(capped)))
    assert stored_capped.estate is None and stored_capped.fingerprint == doc["fingerprint"]
    render_table(capped)
    return doc


def run(dags: Blob, tasks: Blob | None, datasets: Blob | None, *, dags_must_parse: bool = False) -> None:
    estate = parse_or_reject(dags, tasks, datasets)
    if estate is None:
        assert not dags_must_parse, "the recorded dags artifact was rejected"
        event("dags artifact rejected")
        return
    doc = check_pipeline(estate, dags, tasks, datasets)
    event("parsed")  # what the examples reached, for --hypothesis-show-statistics
    event(f"fields: {'some' if doc['state']['counts']['fields'] else 'none'}")
    event(f"edges: {'some' if doc['lineage'] else 'none'}")
    event(f"external edges: {'some' if doc['lineageEdgesSkipped'] else 'none'}")
    event(f"findings: {'some' if doc['findings'] else 'none'}")


def with_slot(artifact: str, blob: Blob, version: str = "airflow3") -> tuple[Blob, ...]:
    """The recorded artifacts of ``version`` with ``blob`` in the ``artifact`` slot."""
    real = dict(REAL[version])
    real[artifact] = blob
    return real["dags"], real["tasks"], real["datasets"]


# -- (a) arbitrary bytes ------------------------------------------------------------------


@pytest.mark.parametrize("artifact", ARTIFACTS)
@FUZZ
@given(blob=st.one_of(st.binary(max_size=512), st.binary(max_size=8).map(lambda b: b"{" + b)))
def test_arbitrary_bytes(artifact: str, blob: bytes) -> None:
    """Arbitrary bytes in any artifact slot raise nothing but DagsArtifactError, and only for dags."""
    run(*with_slot(artifact, blob), dags_must_parse=artifact != "dags")


@pytest.mark.parametrize("artifact", ARTIFACTS)
@FUZZ
@given(data=st.data())
def test_mangled_recorded_bytes(artifact: str, data: st.DataObject) -> None:
    """A recorded artifact with bytes truncated, inserted, overwritten or deleted keeps the same guarantee."""
    version = data.draw(st.sampled_from(sorted(REAL)))
    run(*with_slot(artifact, data.draw(mangled_bytes(artifact)), version), dags_must_parse=artifact != "dags")


# -- (b) arbitrary JSON values ------------------------------------------------------------


@pytest.mark.parametrize("artifact", ARTIFACTS)
@FUZZ
@given(blob=json_artifacts())
def test_arbitrary_json(artifact: str, blob: Blob) -> None:
    """Any JSON value in any artifact slot raises nothing but DagsArtifactError, and only for dags."""
    run(*with_slot(artifact, blob), dags_must_parse=artifact != "dags")


@pytest.mark.parametrize("artifact", ARTIFACTS)
@FUZZ
@given(data=st.data())
def test_arbitrary_json_in_the_accepted_shapes(artifact: str, data: st.DataObject) -> None:
    """API-like envelopes and entries holding arbitrary values keep the guarantee past the shape checks."""
    blob = data.draw(json_artifacts(shaped[artifact]))
    version = data.draw(st.sampled_from(sorted(REAL)))
    run(*with_slot(artifact, blob, version), dags_must_parse=artifact != "dags")


@FUZZ
@given(
    dags=json_artifacts(shaped["dags"]),
    tasks=json_artifacts(shaped["tasks"]),
    datasets=json_artifacts(shaped["datasets"]),
)
def test_all_three_arbitrary(dags: Blob, tasks: Blob, datasets: Blob) -> None:
    """All three artifacts arbitrary at once (shaped envelopes, arbitrary content): same guarantee."""
    run(dags, tasks, datasets)


@FUZZ
@given(dags=json_artifacts(shaped["dags"]))
def test_dags_alone(dags: Blob) -> None:
    """A dags artifact without tasks or datasets: not-provided records, and the same guarantee."""
    estate = parse_or_reject(dags, None, None)
    if estate is not None:
        assert {r.artifact for r in estate.lossiness} >= {"tasks", "datasets"}
        check_pipeline(estate, dags, None, None)


# -- (c) mutations of the recorded artifacts ----------------------------------------------

Path_ = tuple[Any, ...]


def all_paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path (keys and indexes) to a node of a decoded JSON document, the root included."""
    paths = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            paths.extend(all_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            paths.extend(all_paths(child, (*prefix, index)))
    return paths


def get(doc: Any, path: Path_) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def mutate(doc: Any, data: st.DataObject) -> Any:
    """Apply one random mutation at one random node; returns the (possibly new) root."""
    paths = all_paths(doc)
    path = data.draw(st.sampled_from(paths), label="path")
    op = data.draw(st.sampled_from(["replace", "delete", "wrap", "duplicate"]), label="op")
    if op == "duplicate":
        # Duplicate an array element (a DAG, a task, an asset, a reference...) in place.
        in_list = [p for p in paths if p and isinstance(get(doc, p[:-1]), list)]
        if not in_list:
            return doc
        path = data.draw(st.sampled_from(in_list), label="element")
        parent = get(doc, path[:-1])
        parent.insert(data.draw(st.integers(0, len(parent))), copy.deepcopy(parent[path[-1]]))
        return doc
    if op == "replace":
        new = data.draw(json_values, label="value")
    elif op == "wrap":
        new = [get(doc, path)]
    else:  # delete
        if not path:
            return doc
        del get(doc, path[:-1])[path[-1]]
        return doc
    if not path:
        return new
    get(doc, path[:-1])[path[-1]] = new
    return doc


@FUZZ
@given(data=st.data())
def test_mutated_recorded_artifacts(data: st.DataObject) -> None:
    """The real artifacts with values replaced, keys deleted, values wrapped or entries duplicated."""
    version = data.draw(st.sampled_from(sorted(REAL)), label="version")
    docs = {name: json.loads(blob) for name, blob in REAL[version].items()}
    touched = data.draw(st.lists(st.sampled_from(ARTIFACTS), min_size=1, max_size=5), label="artifacts")
    for name in touched:
        docs[name] = mutate(docs[name], data)
    ascii_only = data.draw(st.booleans(), label="ascii_only")
    blobs = {name: to_json_bytes(doc, ascii_only) for name, doc in docs.items()}
    run(blobs["dags"], blobs["tasks"], blobs["datasets"], dags_must_parse="dags" not in touched)


# -- (d) deep nesting and bytes that are not UTF-8 ----------------------------------------

DEPTH = 100_000
UNUSABLE: dict[str, Callable[[str], bytes]] = {
    "deep-arrays": lambda _: b"[" * DEPTH + b"]" * DEPTH,
    "deep-objects": lambda _: b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
    "deep-inside-envelope": lambda name: (
        b'{"' + name.encode() + b'": [' + b"[" * DEPTH + b"]" * DEPTH + b"]}"
    ),
    "deep-unclosed": lambda _: b"[" * DEPTH,
    "latin-1": lambda name: (
        REAL["airflow3"][name].decode().replace('"', '"\u00e9t\u00e9', 1).encode("latin-1")
    ),
    "stray-continuation-byte": lambda name: REAL["airflow3"][name].replace(b'"', b'"\x80', 1),
    "truncated-sequence": lambda name: REAL["airflow3"][name].replace(b'"', b'"\xc3', 1),
    "overlong-slash": lambda name: REAL["airflow3"][name].replace(b'"', b'"\xc0\xaf', 1),
    "invalid-byte-ff": lambda _: b'{"dags": [{"dag_id": "\xff"}]}',
    # Not UTF-8, though json.loads on bytes would sniff them as UTF-16/32 or pass surrogates through.
    "utf-16-bom": lambda name: REAL["airflow3"][name].decode().encode("utf-16"),
    "utf-16-le": lambda name: REAL["airflow3"][name].decode().encode("utf-16-le"),
    "utf-32": lambda name: REAL["airflow3"][name].decode().encode("utf-32"),
    "encoded-surrogate": lambda name: REAL["airflow3"][name].replace(b'"', b'"\xed\xa0\x80', 1),
}
NON_UTF8_CASES = [pytest.param(make, id=case) for case, make in UNUSABLE.items()]


@pytest.mark.parametrize("make", NON_UTF8_CASES)
def test_unusable_dags_artifact_is_an_error(make: Callable[[str], bytes]) -> None:
    """Deep nesting or non-UTF-8 bytes in the dags artifact give DagsArtifactError, naming the artifact."""
    with pytest.raises(DagsArtifactError, match=r"^dags artifact is not valid JSON: \S"):
        parse_artifacts(make("dags"), REAL["airflow3"]["tasks"], REAL["airflow3"]["datasets"])


@pytest.mark.parametrize("artifact", ["tasks", "datasets"])
@pytest.mark.parametrize("make", NON_UTF8_CASES)
def test_unusable_optional_artifact_is_a_lossiness_record(
    artifact: str, make: Callable[[str], bytes]
) -> None:
    """Deep nesting or non-UTF-8 bytes in tasks or datasets give one 'ignored' record; the DAGs stay."""
    dags, tasks, datasets = with_slot(artifact, make(artifact))
    estate = parse_artifacts(dags, tasks, datasets)
    records = [r for r in estate.lossiness if r.artifact == artifact]
    assert len(records) == 1, records
    assert records[0].message.startswith(f"{artifact} artifact ignored: not valid JSON (")
    assert records[0].subject is None
    assert len(estate.dags()) == 6
    check_pipeline(estate, dags, tasks, datasets)


@FUZZ
@given(depth=st.integers(1, 200_000), bracket=st.sampled_from([(b"[", b"]"), (b'{"k":', b"}")]))
def test_any_nesting_depth(depth: int, bracket: tuple[bytes, bytes]) -> None:
    """A value nested to any depth inside a DAG either parses and is ignored or is a clean error."""
    opening, closing = bracket
    nested = opening * depth + b"null" + closing * depth
    dags = b'{"dags": [{"dag_id": "deep", "description": ' + nested + b', "tags": ' + nested + b"}]}"
    estate = parse_or_reject(dags, nested, nested)
    if estate is not None:
        (dag,) = estate.dags()
        assert dag.identity == "deep" and dag.description is None and dag.tags == ()
        check_pipeline(estate, dags, nested, nested)


def test_lone_surrogates_are_replaced_not_raised() -> None:
    """Escaped lone surrogates in every text slot come out as encodable text."""
    s = "\ud800x\udfff"
    dags = {
        "dags": [
            {
                "dag_id": s,
                "description": s,
                "owners": [s],
                "tags": [s, {"name": s}],
                "fileloc": s,
                "timetable_summary": s,
            }
        ]
    }
    tasks = {s: {"tasks": [{"task_id": s, "owner": s, "class_ref": {"class_name": s}}]}}
    datasets = {"assets": [{"uri": s, "producing_tasks": [{"dag_id": s}], "scheduled_dags": [{"dag_id": s}]}]}
    blobs = [to_json_bytes(v) for v in (dags, tasks, datasets)]
    estate = parse_artifacts(*blobs)
    doc = check_pipeline(estate, *blobs)
    assert {d["identity"] for d in doc["datasets"]} == {"?x?"}
    # A DAG and an asset of one name: its producing and its consuming edge stay two edges.
    assert doc["lineage"] == [
        {
            "dependent": "?x?",
            "dependentKind": "asset",
            "dependsOn": "?x?",
            "dependsOnKind": "dag",
            "external": False,
        },
        {
            "dependent": "?x?",
            "dependentKind": "dag",
            "dependsOn": "?x?",
            "dependsOnKind": "asset",
            "external": False,
        },
    ]


# -- found by probing past the fuzzing ----------------------------------------------------


def test_asset_uri_equal_to_a_dag_id_keeps_the_asset_unproduced_findings() -> None:
    """An asset whose URI equals a dag_id is still reported unproduced when nobody produces it."""
    dags = {"dags": [{"dag_id": d, "description": "d", "owners": ["team"]} for d in ("orders", "report")]}
    datasets = {
        "assets": [
            {"uri": "orders", "scheduled_dags": [{"dag_id": "report"}], "producing_tasks": []},
            {"uri": "raw", "scheduled_dags": [{"dag_id": "orders"}], "producing_tasks": []},
        ]
    }
    blobs = [to_json_bytes(v) for v in (dags, {"orders": [], "report": []}, datasets)]
    doc = check_pipeline(parse_artifacts(*blobs), *blobs)
    unproduced = {f["subject"] for f in doc["findings"] if f["code"] == "asset-unproduced"}
    assert unproduced == {"orders", "raw"}


def test_an_unread_huge_integer_does_not_fail_an_artifact() -> None:
    """Valid JSON that Python's json refuses (a 5,000-digit integer) in an unread key is skipped."""
    dags = b'{"dags": [{"dag_id": "x", "n": ' + b"9" * 5000 + b"}]}"
    estate = parse_artifacts(dags, REAL["airflow3"]["tasks"], REAL["airflow3"]["datasets"])
    assert [d.identity for d in estate.dags()] == ["x"]


# -- (e) stored documents: the typed pass and the checked reader agree ---------------------

STORED_DOCUMENT = encode(
    build_document(*(lambda e: (e, audit(e)))(parse_artifacts(*(REAL["airflow3"][n] for n in ARTIFACTS))))
)


@FUZZ
@given(data=st.data())
def test_a_mutated_stored_document_reads_the_same_through_either_reader(data: st.DataObject) -> None:
    """``load_document`` tries a typed pass first and falls back to the checked reader. The typed
    pass may refuse more than the checked reader, never accept what it refuses or read otherwise."""
    document = mutate(json.loads(STORED_DOCUMENT), data)
    blob = to_json_bytes(document, data.draw(st.booleans(), label="ascii_only"))
    typed = _read_typed(blob)
    try:
        checked = _read_checked(blob)
    except SnapshotDocumentError:
        assert typed is None, "the typed pass accepted a document the checked reader refuses"
        event("refused")
        return
    event("typed pass refused" if typed is None else "both read it")
    assert typed is None or typed == checked


def test_a_field_stored_as_not_approximate_reads_as_the_contract_says_through_either_reader() -> None:
    """``approximate`` is always true (CONTRACT.md): a document that says false (edited by
    hand, or by another writer) reads as true through both readers. Found by the test above."""
    document = json.loads(STORED_DOCUMENT)
    [dataset] = [d for d in document["datasets"] if d["fields"]][:1]
    dataset["fields"][0]["approximate"] = False
    blob = json.dumps(document).encode()
    assert _read_typed(blob) is None  # the typed pass leaves it to the checked reader
    stored = _read_checked(blob)
    assert stored.estate is not None
    assert all(f.approximate for d in stored.estate.datasets for f in d.fields)
    assert _read_typed(STORED_DOCUMENT) == _read_checked(STORED_DOCUMENT)  # the untouched document
