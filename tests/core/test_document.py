"""The snapshot document: its keys, the snapshot cap, and reading it back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import artifact_paths, recorded_document

from airflow_provider_coremodels.core import (
    audit,
    build_document,
    for_storage,
    load_document,
    parse_artifacts,
)
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.core.views.render import render_json
from airflow_provider_coremodels.errors import SnapshotDocumentError

TOP_LEVEL_KEYS = [
    "schemaVersion",
    "connector",
    "capabilities",
    "fingerprint",
    "state",
    "datasets",
    "lineage",
    "findings",
    "lossiness",
    "lineageEdgesSkipped",
    "snapshotStored",
]


@pytest.fixture(scope="module")
def real_estate():
    paths = artifact_paths("airflow3")
    return parse_artifacts(*(paths[name].read_bytes() for name in ("dags", "tasks", "datasets")))


@pytest.fixture(scope="module")
def real_document(real_estate):
    return build_document(real_estate, audit(real_estate))


def test_document_has_every_contract_key_in_order(real_document) -> None:
    assert list(real_document)[: len(TOP_LEVEL_KEYS)] == TOP_LEVEL_KEYS
    assert real_document["schemaVersion"] == 2
    assert real_document["connector"] == "airflow"
    assert real_document["capabilities"] == ["import", "audit"]
    assert list(real_document["state"]) == [
        "connectorVersion",
        "airflowVersion",
        "apiVersion",
        "capturedAt",
        "counts",
        "facts",
        "deployment",  # which deployment (contract section 7): null for an offline audit
    ]
    assert real_document["state"]["deployment"] is None
    assert list(real_document["state"]["counts"]) == [
        "datasets",
        "fields",
        "lineageEdges",
        "lineageEdgesSkipped",
    ]
    assert list(real_document["state"]["facts"]) == ["dags", "pausedDags", "assets", "tasks"]
    assert real_document["snapshotStored"] is True


def test_every_dataset_field_and_edge_has_the_contract_keys(real_document) -> None:
    for dataset in real_document["datasets"]:
        assert list(dataset) == [
            "identity",
            "name",
            "materialization",
            "physicalName",
            "description",
            "tags",
            "mapsTo",
            "metadata",
            "fields",
        ]
        assert dataset["mapsTo"] == {"standard": "airflow", "uri": dataset["identity"]}
        for field in dataset["fields"]:
            assert list(field) == ["name", "nativeType", "type", "approximate", "tags", "metadata"]
            assert (field["type"], field["approximate"]) == ("String", True)
    for edge in real_document["lineage"]:
        assert list(edge)[:5] == ["dependent", "dependentKind", "dependsOn", "dependsOnKind", "external"]
        assert list(edge)[5:] in ([], ["via"])
    for finding in real_document["findings"]:
        assert list(finding) == ["section", "severity", "code", "subject", "message", "detail"]


def test_document_lists_are_in_canonical_order(real_document) -> None:
    keys = [(d["materialization"], d["identity"]) for d in real_document["datasets"]]
    assert keys == sorted(keys)
    for dataset in real_document["datasets"]:
        names = [f["name"] for f in dataset["fields"]]
        assert names == sorted(names)
    edges = [(e["dependent"], e["dependsOn"]) for e in real_document["lineage"]]
    assert edges == sorted(edges)


def test_document_says_when_coverage_was_not_evaluated(real_document) -> None:
    assert real_document["baseline"] == {
        "evaluated": False,
        "fingerprint": None,
        "reason": "no baseline given",
    }


# -- the snapshot cap ---------------------------------------------------------------------


def test_over_the_cap_the_document_is_not_stored_whole(real_estate) -> None:
    full_size = len(encode(build_document(real_estate, audit(real_estate))))
    document = build_document(real_estate, audit(real_estate), max_snapshot_bytes=full_size - 1)
    assert document["snapshotStored"] is False
    assert document["lossiness"][-1] == {
        "artifact": "snapshot",
        "message": f"snapshot document is {full_size} bytes, over the {full_size - 1}-byte cap: "
        "stored without datasets and lineage, so it cannot serve as a baseline",
    }
    stored = for_storage(document)
    assert "datasets" not in stored and "lineage" not in stored
    assert stored["findings"] == document["findings"]
    assert stored["state"] == document["state"]
    assert stored["lossiness"] == document["lossiness"]
    assert stored["fingerprint"] == document["fingerprint"]


def test_at_the_cap_the_document_is_stored(real_estate) -> None:
    full_size = len(encode(build_document(real_estate, audit(real_estate))))
    document = build_document(real_estate, audit(real_estate), max_snapshot_bytes=full_size)
    assert document["snapshotStored"] is True
    assert for_storage(document) is document


def test_a_document_stored_over_the_cap_reads_back_without_an_estate(real_estate) -> None:
    document = build_document(real_estate, audit(real_estate), max_snapshot_bytes=100)
    stored = load_document(encode(for_storage(document)))
    assert stored.estate is None
    assert stored.fingerprint == document["fingerprint"]
    result = audit(real_estate, stored.as_baseline())
    assert not result.baseline.evaluated


# -- reading back -------------------------------------------------------------------------


def test_reaudit_of_a_stored_document_gives_the_same_document(real_document) -> None:
    stored = load_document(encode(real_document))
    again = build_document(stored.estate, audit(stored.estate))
    assert again == real_document


def test_edited_document_is_flagged_on_reaudit(real_document) -> None:
    edited = json.loads(encode(real_document))
    edited["datasets"][0]["description"] = "edited by hand"
    stored = load_document(json.dumps(edited))
    [record] = [r for r in stored.estate.lossiness if r.artifact == "snapshot"]
    assert record.message.startswith(f"stored fingerprint {real_document['fingerprint']} does not match")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("{", "snapshot document is not valid JSON", id="invalid-json"),
        pytest.param("[]", "snapshot document is not a JSON object", id="array"),
        pytest.param(
            '{"connector": "dbt", "schemaVersion": 1}',
            'has connector "dbt", expected "airflow"',
            id="other-connector",
        ),
        pytest.param(
            '{"connector": "airflow", "schemaVersion": 9}',
            "has schemaVersion 9; this version reads 1",
            id="future-schema",
        ),
        pytest.param(
            '{"connector": "airflow", "schemaVersion": 1, "datasets": [{"identity": "x"}], "lineage": []}',
            'has an invalid datasets[0].materialization: expected "dag" or "asset"',
            id="bad-dataset",
        ),
        pytest.param(
            '{"connector": "airflow", "schemaVersion": 1, "datasets": [], "lineage": [{"dependent": 1}]}',
            "has an invalid lineage[0].dependent: expected a non-empty string",
            id="bad-edge",
        ),
        pytest.param(
            '{"connector": "airflow", "schemaVersion": 1, "datasets": [{"identity": "d", "name": "d", '
            '"materialization": "dag", "fields": [{"name": "t", "nativeType": "X", "metadata": {"k": 1}}]}], '
            '"lineage": []}',
            "has an invalid datasets[0].fields[0].metadata: expected string values",
            id="bad-metadata",
        ),
    ],
)
def test_unreadable_document_names_the_problem(text: str, problem: str) -> None:
    with pytest.raises(SnapshotDocumentError, match=r"^snapshot document ") as excinfo:
        load_document(text)
    assert problem in str(excinfo.value)


# What a document holds: strings (any code point, lone surrogates aside), ints, bools, null.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(st.characters(exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@given(_JSON)
def test_render_json_writes_exactly_what_json_dumps_would(value) -> None:
    assert render_json(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_render_json_of_a_real_document() -> None:
    document = recorded_document()
    assert render_json(document) == json.dumps(document, indent=2, ensure_ascii=False)


def test_the_core_package_exports_what_its_type_stubs_say() -> None:
    """The lazily loaded names of ``airflow_provider_coremodels.core`` and its type-checking imports agree."""
    import ast
    import inspect

    import airflow_provider_coremodels.core as core

    tree = ast.parse(inspect.getsource(core))
    typed = {
        alias.asname: node.module.removeprefix(core.__name__ + ".")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(core.__name__ + ".")
        for alias in node.names
    }
    assert typed == core._MODULE_OF
    for name in core.__all__:
        assert getattr(core, name) is getattr(
            __import__(f"{core.__name__}.{typed[name]}", fromlist=[name]), name
        )


# -- version 1 documents ----------------------------------------------------------------------


def as_version_1(document: dict[str, Any]) -> dict[str, Any]:
    """A document as version 1 wrote it: edges without kinds, its own fingerprint over them."""
    from airflow_provider_coremodels.core.snapshots.document import fingerprint

    lineage = sorted(
        ({k: e[k] for k in ("dependent", "dependsOn", "external")} for e in document["lineage"]),
        key=lambda e: (e["dependent"], e["dependsOn"]),
    )
    return {
        **document,
        "schemaVersion": 1,
        "lineage": lineage,
        "fingerprint": fingerprint(document["datasets"], lineage),
    }


def test_a_version_1_document_still_reads_with_its_kinds_inferred(real_document) -> None:
    old = as_version_1(real_document)
    stored = load_document(json.dumps(old))
    assert stored.estate is not None and stored.fingerprint == old["fingerprint"]
    assert not any(r.artifact == "snapshot" for r in stored.estate.lossiness)  # not "edited after writing"
    reread = build_document(stored.estate, audit(stored.estate))
    # The kinds version 1 implied; how an edge was learned (via) version 1 never knew.
    assert reread["lineage"] == [{k: v for k, v in e.items() if k != "via"} for e in real_document["lineage"]]
    assert reread["findings"] == real_document["findings"]
    assert reread["fingerprint"] != old["fingerprint"]  # an unchanged estate's fingerprint changes once


def test_a_version_1_baseline_still_diffs(real_document) -> None:
    baseline = load_document(json.dumps(as_version_1(real_document))).as_baseline()
    estate = load_document(json.dumps(real_document)).estate
    assert estate is not None
    result = audit(estate, baseline)
    assert result.baseline.evaluated
    assert [f for f in result.findings if f.section in ("Coverage", "Drift")] == []


def test_a_version_1_edge_that_joins_no_asset_is_lossiness(real_document) -> None:
    old = as_version_1(real_document)
    old["lineage"].append({"dependent": "nowhere", "dependsOn": "nothing", "external": False})
    stored = load_document(json.dumps(old))
    assert stored.estate is not None
    assert any("joins no DAG to an asset" in r.message for r in stored.estate.lossiness)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ({"dependentKind": "table"}, 'lineage[0].dependentKind: expected "dag" or "asset"'),
        ({"dependentKind": "dag", "dependsOnKind": "dag"}, "lineage[0]: an edge joins a DAG and an asset"),
        ({"via": 3}, "lineage[0].via: expected a string or null"),
    ],
)
def test_a_version_2_edge_must_name_its_kinds(real_document, edit: dict[str, Any], problem: str) -> None:
    document = json.loads(json.dumps(real_document))
    document["lineage"][0].update(edit)
    with pytest.raises(SnapshotDocumentError, match=re.escape(problem)):
        load_document(json.dumps(document))


@pytest.mark.parametrize("version", [0, 3, True, "2", None])
def test_a_schema_version_this_version_cannot_read_is_refused(real_document, version: Any) -> None:
    with pytest.raises(SnapshotDocumentError, match="this version reads 1 and 2"):
        load_document(json.dumps({**real_document, "schemaVersion": version}))
