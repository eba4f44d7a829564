"""The lineage picture: the graph read off a document, neighbourhoods, and the three drawings."""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from support.helpers import document_for, recorded_document

from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.views.lineage import LineageGraph, layout, to_dot, to_mermaid, to_svg


def graph(**kwargs: Any) -> LineageGraph:
    return LineageGraph.from_document(recorded_document(**kwargs))


def keys(g: LineageGraph) -> list[str]:
    return [n.key for n in g.nodes]


def test_recorded_estate_reads_producer_to_asset_to_consumer() -> None:
    g = graph()
    assert ("dag:load_orders", "asset:s3://lake/orders.parquet") in g.edges
    assert ("asset:s3://lake/orders.parquet", "dag:daily_revenue") in g.edges
    assert len(g.edges) == 7
    assert g.hidden_dags == ("legacy_cleanup",)  # no asset lineage: counted, not drawn
    assert "dag:legacy_cleanup" not in keys(g)
    assert g.node("dag:load_orders").paused
    assert not g.node("dag:daily_revenue").paused
    assert g.node("asset:s3://lake/orders.parquet").findings == ("paused-producer",)
    assert g.node("asset:s3://lake/orders.parquet").severity == "Warning"
    assert g.summary() == "5 DAGs, 0 external DAGs, 4 assets, 7 edges; 1 DAG without asset lineage not shown"


def test_waived_findings_do_not_mark_a_node() -> None:
    waiver = Waiver("paused-producer", "*", "migration", dt.date(2999, 1, 1))
    assert graph(waivers=(waiver,)).node("asset:s3://lake/orders.parquet").findings == ()


def lineage_document() -> dict[str, Any]:
    """A feeds x, x feeds B; B, an external DAG and the DAG "orders" feed y; B reads the asset "orders"."""
    dags = [
        {"dag_id": "A", "is_paused": True, "owners": ["t"], "description": "d"},
        {"dag_id": "B", "is_paused": False, "owners": ["t"], "description": "d"},
        {"dag_id": "orders", "is_paused": False, "owners": ["t"], "description": "d"},
    ]
    assets = {
        "assets": [
            {
                "uri": "x",
                "producing_tasks": [{"dag_id": "A", "task_id": "t"}],
                "scheduled_dags": [{"dag_id": "B"}],
            },
            {
                "uri": "y",
                "producing_tasks": [
                    {"dag_id": "B", "task_id": "t"},
                    {"dag_id": "elsewhere", "task_id": "t"},
                    {"dag_id": "orders", "task_id": "t"},
                ],
            },
            {"uri": "orders", "scheduled_dags": [{"dag_id": "B"}]},
        ]
    }
    return document_for(dags, None, assets)


def test_external_dags_and_shared_names_are_told_apart() -> None:
    g = LineageGraph.from_document(lineage_document())
    assert g.node("dag:elsewhere").kind == "external"
    assert ("dag:elsewhere", "asset:y") in g.edges
    assert ("asset:orders", "dag:B") in g.edges
    assert ("dag:orders", "asset:y") in g.edges
    assert g.node("asset:orders").findings == ("asset-unproduced",)  # the finding names "orders":
    assert g.node("dag:orders").findings == ()  # the asset's, not the DAG's


@pytest.mark.parametrize(
    ("center", "depth", "expected"),
    [
        ("A", 0, ["dag:A"]),
        ("A", 1, ["dag:A", "asset:x"]),
        ("A", 2, ["dag:A", "dag:B", "asset:x"]),
        ("x", 1, ["dag:A", "dag:B", "asset:x"]),
        ("y", 1, ["dag:B", "dag:orders", "dag:elsewhere", "asset:y"]),
        ("orders", 1, ["dag:B", "dag:orders", "asset:orders", "asset:y"]),  # both of that name are centres
    ],
)
def test_neighbourhood(center: str, depth: int, expected: list[str]) -> None:
    g = LineageGraph.from_document(lineage_document()).neighbourhood(center, depth)
    assert keys(g) == expected
    assert all(s in expected and t in expected for s, t in g.edges)


def test_a_kind_picks_one_centre_where_a_dag_and_an_asset_share_the_name() -> None:
    g = LineageGraph.from_document(lineage_document())
    assert keys(g.neighbourhood("orders", 1, kind="asset")) == ["dag:B", "asset:orders"]
    assert keys(g.neighbourhood("orders", 1, kind="dag")) == ["dag:orders", "asset:y"]
    # asked again of the same graph (its adjacency now worked out), both centres as before
    assert keys(g.neighbourhood("orders", 1)) == ["dag:B", "dag:orders", "asset:orders", "asset:y"]
    with pytest.raises(ValueError, match="no DAG or asset named 'x'"):
        g.neighbourhood("x", 1, kind="dag")


def test_neighbourhood_of_unknown_or_unlinked() -> None:
    g = graph()
    with pytest.raises(ValueError, match="no DAG or asset named 'nope' in the lineage"):
        g.neighbourhood("nope")
    assert keys(g.neighbourhood("legacy_cleanup")) == ["dag:legacy_cleanup"]


def test_a_document_over_the_cap_has_no_picture() -> None:
    document = recorded_document()
    del document["datasets"], document["lineage"]
    with pytest.raises(ValueError, match="stored without datasets and lineage"):
        LineageGraph.from_document(document)


def test_mermaid_marks_paused_external_and_findings_in_words_and_classes() -> None:
    text = to_mermaid(LineageGraph.from_document(lineage_document()))
    assert text.startswith("flowchart LR\n")
    ids = dict(re.findall(r'^  (n\d+)[\[(]+"([^"]+)"', text, re.M))
    by_label = {label: node for node, label in ids.items()}
    assert by_label["A (paused)"] and by_label["elsewhere (external)"] and by_label["orders (1 finding)"]
    assert f"{by_label['A (paused)']} --> {by_label['x (1 finding)']}" in text  # x: paused-producer
    assert re.search(rf"^  class {by_label['A (paused)']} paused$", text, re.M)
    with_findings = f"{by_label['orders (1 finding)']},{by_label['x (1 finding)']}"
    assert re.search(rf"^  class {with_findings} finding$", text, re.M)
    assert f'{by_label["orders (1 finding)"]}[("orders (1 finding)")]' in text  # assets are cylinders
    assert f'{by_label["orders"]}["orders"]' in text


def test_mermaid_and_dot_escape_hostile_names() -> None:
    hostile = 'evil"]; click n0 "javascript:alert(1)" #x <b>'
    document = document_for(
        [{"dag_id": hostile, "owners": ["t"], "description": "d"}],
        None,
        {"assets": [{"uri": "s3://a", "scheduled_dags": [{"dag_id": hostile}]}]},
    )
    g = LineageGraph.from_document(document)
    mermaid = to_mermaid(g)
    label_line = next(line for line in mermaid.splitlines() if "evil" in line)
    assert label_line == '  n0["evil#quot;]; click n0 #quot;javascript:alert(1)#quot; #35;x #lt;b#gt;"]'
    dot = to_dot(g)
    assert '"dag:evil\\"]; click n0 \\"javascript:alert(1)\\" #x <b>"' in dot


def test_svg_is_well_formed_escaped_and_marks_nodes() -> None:
    g = LineageGraph.from_document(lineage_document())
    svg = to_svg(g)
    root = ET.fromstring(svg)
    ns = {"s": "http://www.w3.org/2000/svg"}
    nodes = root.findall("s:g", ns)
    assert [n.get("data-id") for n in nodes] == [n.id for n in g.nodes]
    classes = {n.get("data-id"): n.get("class", "").split() for n in nodes}
    assert "paused" in classes["A"] and "dag" in classes["A"]
    assert "external" in classes["elsewhere"]
    assert "has-findings" in classes["orders"] or "has-findings" in [
        c
        for n in nodes
        if n.get("data-kind") == "asset" and n.get("data-id") == "orders"
        for c in n.get("class").split()
    ]
    assert len(root.findall("s:path", ns)) == len(g.edges)

    hostile = document_for(
        [{"dag_id": "<script>alert(1)</script>&", "owners": ["t"], "description": "d"}],
        None,
        {"assets": [{"uri": "s3://a", "scheduled_dags": [{"dag_id": "<script>alert(1)</script>&"}]}]},
    )
    svg = to_svg(LineageGraph.from_document(hostile))
    assert "<script>" not in svg
    ET.fromstring(svg)


def test_layout_puts_producers_left_of_consumers_and_survives_cycles() -> None:
    g = LineageGraph.from_document(lineage_document())
    laid = layout(g)
    assert laid.direction == "LR"
    for source, target in g.edges:
        assert laid.boxes[source].x + laid.boxes[source].width < laid.boxes[target].x
    # A cycle: A feeds x, x feeds B, B feeds y, y feeds A.
    dags = [{"dag_id": d, "owners": ["t"], "description": "d"} for d in ("A", "B")]
    assets = {
        "assets": [
            {
                "uri": "x",
                "producing_tasks": [{"dag_id": "A", "task_id": "t"}],
                "scheduled_dags": [{"dag_id": "B"}],
            },
            {
                "uri": "y",
                "producing_tasks": [{"dag_id": "B", "task_id": "t"}],
                "scheduled_dags": [{"dag_id": "A"}],
            },
        ]
    }
    cyclic = LineageGraph.from_document(document_for(dags, None, assets))
    boxes = layout(cyclic).boxes
    assert set(boxes) == {n.key for n in cyclic.nodes}
    assert len({(b.x, b.y) for b in boxes.values()}) == len(boxes)  # no two nodes on one spot
    ET.fromstring(to_svg(cyclic))


def test_an_empty_picture_still_draws() -> None:
    g = LineageGraph.from_document(document_for([{"dag_id": "solo", "owners": ["t"], "description": "d"}]))
    assert g.nodes == () and g.hidden_dags == ("solo",)
    assert to_mermaid(g).startswith("flowchart LR")
    ET.fromstring(to_svg(g))
    assert to_dot(g).endswith("}")


def test_the_asset_estate_marks_how_edges_were_learned_and_watched_assets() -> None:
    g = LineageGraph.from_document(recorded_document("airflow3_assets"))
    export = "asset:s3://lake/exports/2026-01-01"
    assert g.via == {
        ("dag:exports_producer", export): "alias:daily_exports",
        (export, "dag:exports_consumer"): "alias:daily_exports",
        (export, "dag:export_by_name_ref"): "ref",
        ("asset:s3://lake/orders_sync", "dag:orders_by_name_ref"): "ref",
        ("asset:s3://lake/orders_sync", "dag:orders_by_uri_ref"): "ref",
        ("asset:s3://lake/orders_sync", "dag:orders_audit"): "inlet",
    }
    inbox = g.node("asset:file:///tmp/coremodels-inbox/orders.csv")
    assert inbox.watched and inbox.label() == "file:///tmp/coremodels-inbox/orders.csv (watched)"
    # the @asset chain: DAG raw_orders -> asset raw_orders -> DAG clean_orders -> asset clean_orders
    assert ("dag:raw_orders", "asset:s3://lake/raw_orders") in g.edges
    assert ("asset:s3://lake/raw_orders", "dag:clean_orders") in g.edges
    near = g.neighbourhood("s3://lake/orders_sync", 1)
    assert near.via == {k: v for k, v in g.via.items() if "orders_sync" in k[0]}

    mermaid = to_mermaid(g)
    assert re.search(r"n\d+ -\.->\|alias:daily_exports\| n\d+", mermaid)
    assert re.search(r"n\d+ -\.->\|inlet\| n\d+", mermaid)
    assert '[("file:///tmp/coremodels-inbox/orders.csv (watched)")]' in mermaid
    dot = to_dot(g)
    assert f'"{export}" -> "dag:exports_consumer" [style=dashed, label="alias:daily_exports"];' in dot
    assert '"dag:orders_sync" -> "asset:s3://lake/orders_sync";' in dot
    svg = ET.fromstring(to_svg(g))
    ns = "{http://www.w3.org/2000/svg}"
    dashed = [p for p in svg.iter(f"{ns}path") if "via" in p.get("class", "").split()]
    assert sorted(p.find(f"{ns}title").text for p in dashed) == sorted(g.via.values())
    inbox_box = next(
        e for e in svg.iter(f"{ns}g") if e.get("data-id") == "file:///tmp/coremodels-inbox/orders.csv"
    )
    assert "watched" in "".join(inbox_box.itertext())


def test_a_version_1_document_draws_as_version_1_read_it() -> None:
    """The UI page draws whatever latest.json holds, which may be a version 1 document."""
    document = recorded_document()
    old = {
        **document,
        "lineage": [{k: e[k] for k in ("dependent", "dependsOn", "external")} for e in document["lineage"]],
    }
    assert LineageGraph.from_document(old).edges == LineageGraph.from_document(document).edges
