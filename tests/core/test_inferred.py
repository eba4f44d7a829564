"""Inferred lineage into the estate (contract 10.3): the datasets artifact's ``inferred`` entries
become assets and edges with ``via: "inferred"`` and their source task; they join declared assets of
the same URI, a declared edge wins over an inferred one, a DAG's read of what it writes itself is no
edge, and the edge's source survives a stored document."""

from __future__ import annotations

import json
from typing import Any

from airflow_provider_coremodels.core import audit, parse_artifacts
from airflow_provider_coremodels.core.snapshots.document import build_document, load_document

WRITES = "postgres://<pg>/public/orders"


def dag(dag_id: str) -> dict[str, Any]:
    return {"dag_id": dag_id, "description": "d", "owners": ["team"], "is_paused": False, "tags": []}


def estate(inferred: Any, assets: list[dict[str, Any]] | None = None) -> Any:
    dags = {"dags": [dag("writer"), dag("reader"), dag("declares")]}
    datasets = {"assets": assets or [], "inferred": inferred}
    return parse_artifacts(json.dumps(dags), json.dumps({}), json.dumps(datasets))


def row(dag_id: str, task_id: str, role: str, uri: str = WRITES) -> dict[str, str]:
    return {"dag_id": dag_id, "task_id": task_id, "role": role, "uri": uri}


def test_one_asset_joins_the_dag_that_writes_and_the_one_that_reads() -> None:
    found = estate(
        [row("writer", "load", "writes"), row("writer", "fix", "writes"), row("reader", "use", "reads")]
    )
    edges = {(e.depends_on, e.dependent, e.via, e.source) for e in found.lineage}
    assert edges == {
        ("writer", WRITES, "inferred", "writer.fix, writer.load"),
        (WRITES, "reader", "inferred", "reader.use"),
    }
    (asset,) = [d for d in found.datasets if d.materialization == "asset"]
    assert (asset.identity, asset.name, dict(asset.metadata)) == (
        WRITES,
        "orders",
        {"coremodels.inferred": "true"},
    )


def test_a_declared_asset_and_edge_win() -> None:
    declared = {
        "uri": WRITES,
        "name": "orders",
        "producing_tasks": [{"dag_id": "declares", "task_id": "t"}],
        "scheduled_dags": [],
    }
    found = estate([row("declares", "sql", "writes"), row("reader", "use", "reads")], [declared])
    edges = {(e.depends_on, e.dependent, e.via, e.source) for e in found.lineage}
    assert ("declares", WRITES, None, None) in edges  # the declared one, not the inferred twin
    assert (WRITES, "reader", "inferred", "reader.use") in edges
    (asset,) = [d for d in found.datasets if d.materialization == "asset"]
    assert "coremodels.inferred" not in asset.metadata  # a declared asset stays as declared


def test_a_dag_reading_what_it_writes_is_only_its_producer() -> None:
    found = estate([row("writer", "stage", "writes"), row("writer", "merge", "reads")])
    assert [(e.depends_on, e.dependent) for e in found.lineage] == [("writer", WRITES)]


def test_misshapen_entries_are_said_and_unknown_dags_skipped() -> None:
    found = estate([row("writer", "t", "writes"), {"dag_id": "writer"}, row("ghost", "t", "reads"), 5])
    assert [(e.depends_on, e.dependent) for e in found.lineage] == [("writer", WRITES)]
    assert any("2 entries of the inferred lineage are misshapen" in r.message for r in found.lossiness)


def test_the_source_survives_a_stored_document_and_names_the_finding() -> None:
    found = estate([row("reader", "use", "reads")])
    result = audit(found)
    (unproduced,) = [f for f in result.findings if f.code == "asset-unproduced"]
    assert unproduced.detail == "consumers: reader; inferred from reader.use"
    document = build_document(found, result)
    (edge,) = document["lineage"]
    assert (edge["via"], edge["source"]) == ("inferred", "reader.use")
    again = load_document(json.dumps(document).encode())
    assert again.estate is not None and again.estate.lineage == found.lineage
    assert again.fingerprint == document["fingerprint"]


def test_no_inferred_entries_no_change() -> None:
    """An artifact without ``inferred`` (or with an empty one) gives the estate it always gave."""
    dags = json.dumps({"dags": [dag("writer")]})
    plain = parse_artifacts(dags, "{}", json.dumps({"assets": []}))
    empty = parse_artifacts(dags, "{}", json.dumps({"assets": [], "inferred": []}))
    assert (
        build_document(plain, audit(plain))["fingerprint"]
        == build_document(empty, audit(empty))["fingerprint"]
    )


def test_the_picture_draws_inferred_edges_dashed_naming_the_task_and_says_so() -> None:
    from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_mermaid
    from airflow_provider_coremodels.core.views.markdown import render_markdown

    found = estate([row("writer", "load", "writes"), row("reader", "use", "reads")])
    document = build_document(found, audit(found))
    mermaid = to_mermaid(LineageGraph.from_document(document))
    assert "-.->|inferred from writer.load|" in mermaid and "-.->|inferred from reader.use|" in mermaid
    assert "(2 inferred from SQL or transfer tasks' code, dashed)" in mermaid.splitlines()[1]
    assert "labelled `inferred from <dag_id>.<task_id>`" in render_markdown(document)
