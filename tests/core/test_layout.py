"""The lineage picture's geometry, read back from the SVG it draws: what a person sees.

Every edge is checked against every box along its whole path (its curves flattened into short
segments), boxes against each other, the picture's size against its number of nodes, and a
10,000-DAG estate's neighbourhoods against the node cap. The graphs are the recorded estates,
random ones (Hypothesis: cycles, hubs, many small parts, long names) and neighbourhoods of a
generated estate of 10,000 DAGs.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import REPO, recorded_document

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.layout import FRAME
from airflow_provider_coremodels.core.lineage import (
    MAX_NODES,
    LineageGraph,
    Node,
    picture,
    to_svg,
)

SVG = "{http://www.w3.org/2000/svg}"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Rect) -> bool:
        return (
            self.x < other.x + other.w
            and other.x < self.x + self.w
            and self.y < other.y + other.h
            and other.y < self.y + self.h
        )


@dataclass(frozen=True)
class Drawn:
    width: float
    height: float
    direction: str
    boxes: dict[str, Rect]  # by node key
    edges: list[tuple[str, str, list[tuple[float, float]]]]  # source, target, the path flattened


def read_svg(svg: str) -> Drawn:
    root = ET.fromstring(svg)
    boxes = {}
    for group in root.iter(f"{SVG}g"):
        rect = group.find(f"{SVG}rect")
        kind = "asset" if group.get("data-kind") == "asset" else "dag"
        boxes[f"{kind}:{group.get('data-id')}"] = Rect(
            *(float(rect.get(name)) for name in ("x", "y", "width", "height"))
        )
    edges = []
    for path in root.findall(f"{SVG}path"):
        edges.append((path.get("data-source"), path.get("data-target"), flatten(path.get("d"))))
    return Drawn(
        float(root.get("width")), float(root.get("height")), root.get("data-direction"), boxes, edges
    )


def flatten(d: str) -> list[tuple[float, float]]:
    """An ``M x,y C ... C ...`` path as a polyline of 32 points per curve."""
    numbers = [float(n) for n in NUMBER.findall(d)]
    assert d.startswith("M") and (len(numbers) - 2) % 6 == 0, d
    points = [(numbers[0], numbers[1])]
    for i in range(2, len(numbers), 6):
        p0, (c1, c2, p3) = points[-1], zip(numbers[i : i + 6 : 2], numbers[i + 1 : i + 6 : 2], strict=True)
        for step in range(1, 33):
            t = step / 32
            u = 1 - t
            points.append(
                (
                    u**3 * p0[0] + 3 * u * u * t * c1[0] + 3 * u * t * t * c2[0] + t**3 * p3[0],
                    u**3 * p0[1] + 3 * u * u * t * c1[1] + 3 * u * t * t * c2[1] + t**3 * p3[1],
                )
            )
    return points


def crosses(a: tuple[float, float], b: tuple[float, float], box: Rect, inset: float = 0.5) -> bool:
    """Whether the segment a-b enters the box's inside (its border, ``inset`` deep, excluded)."""
    x0, y0, x1, y1 = box.x + inset, box.y + inset, box.x + box.w - inset, box.y + box.h - inset
    t0, t1 = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
        else:
            r = q / p
            if p < 0:
                t0 = max(t0, r)
            else:
                t1 = min(t1, r)
            if t0 > t1:
                return False
    return True


def on_border(point: tuple[float, float], box: Rect) -> bool:
    x, y = point
    inside_x, inside_y = box.x - 0.2 <= x <= box.x + box.w + 0.2, box.y - 0.2 <= y <= box.y + box.h + 0.2
    near = min(abs(x - box.x), abs(x - box.x - box.w), abs(y - box.y), abs(y - box.y - box.h))
    return inside_x and inside_y and near <= 0.2


def check_geometry(graph: LineageGraph, svg: str) -> Drawn:
    """The properties every picture holds; the picture read back, for more checks."""
    drawn = read_svg(svg)
    assert set(drawn.boxes) == {node.key for node in graph.nodes}
    assert sorted((s, t) for s, t, _ in drawn.edges) == sorted(graph.edges)
    boxes = list(drawn.boxes.items())
    for i, (key, box) in enumerate(boxes):
        assert box.x >= 0 and box.y >= 0, key
        assert box.x + box.w <= drawn.width and box.y + box.h <= drawn.height, key
        for other, second in boxes[i + 1 :]:
            assert not box.overlaps(second), f"{key} overlaps {other}"
    for source, target, points in drawn.edges:
        assert on_border(points[0], drawn.boxes[source]), (source, points[0])
        assert on_border(points[-1], drawn.boxes[target]), (target, points[-1])
        for key, box in boxes:  # its own two ends too: an edge leaves and enters at the border
            for a, b in itertools.pairwise(points):
                assert not crosses(a, b, box), f"edge {source} -> {target} passes through {key}"
    return drawn


def node(key: str, **kwargs: Any) -> Node:
    kind, _, identity = key.partition(":")
    return Node(identity, "asset" if kind == "asset" else "dag", **kwargs)


def graph_of(edges: list[tuple[str, str]], extra: tuple[str, ...] = ()) -> LineageGraph:
    keys = sorted({*(k for e in edges for k in e), *extra}, key=lambda k: (k.startswith("asset:"), k))
    return LineageGraph(tuple(node(k) for k in keys), tuple(sorted(set(edges))))


# -- the recorded estates -------------------------------------------------------------------


@pytest.mark.parametrize("generation", ["airflow3", "airflow3_assets", "airflow2"])
def test_recorded_estates_draw_with_no_edge_through_a_box(generation: str) -> None:
    graph = LineageGraph.from_document(recorded_document(generation))
    drawn = check_geometry(graph, to_svg(graph))
    forward = [
        (drawn.boxes[s], drawn.boxes[t]) for s, t, _ in drawn.edges
    ]  # no cycles here: every edge goes the picture's way
    if drawn.direction == "LR":
        assert all(a.x + a.w < b.x for a, b in forward)
    else:
        assert all(a.y + a.h < b.y for a, b in forward)


def test_an_edge_into_one_dag_never_runs_behind_another() -> None:
    """The reported picture: a long edge (an asset nobody produces, read three layers on) used to
    run straight through the boxes between; now it passes them in a lane of its own."""
    edges = [
        ("dag:a", "asset:x"), ("asset:x", "dag:b"), ("dag:b", "asset:y"), ("asset:y", "dag:c"),
        ("dag:c", "asset:z"), ("asset:z", "dag:d"), ("dag:a", "asset:far"), ("asset:far", "dag:d"),
        ("dag:e", "asset:y"), ("asset:unproduced", "dag:d"), ("asset:unproduced", "dag:b"),
    ]  # fmt: skip
    graph = graph_of(edges)
    check_geometry(graph, to_svg(graph))


def test_a_part_packed_beside_another_never_covers_its_edges() -> None:
    """Found by the random graphs below: two long edges into d1 take slots past the last box of
    their middle layer, and the part packed below (lake/1 -> d0) was placed by the boxes alone, so
    d0 sat over those edges. A part's extent now holds its routes too."""
    edges = [
        ("asset:s3://lake/0", "dag:d1"), ("asset:s3://lake/0", "dag:d2"), ("asset:s3://lake/0", "dag:d4"),
        ("asset:s3://lake/1", "dag:d0"), ("asset:s3://lake/2", "dag:d1"), ("asset:s3://lake/2", "dag:d2"),
        ("asset:s3://lake/2", "dag:d3"), ("asset:s3://lake/3", "dag:d1"), ("asset:s3://lake/3", "dag:d4"),
        ("dag:d3", "asset:s3://lake/3"),
    ]  # fmt: skip
    graph = graph_of(edges)
    check_geometry(graph, to_svg(graph))


# -- random graphs ----------------------------------------------------------------------------


@st.composite
def lineage_graphs(draw: st.DrawFn) -> LineageGraph:
    dags = [f"dag:{'d' * draw(st.integers(1, 3))}{i}" for i in range(draw(st.integers(1, 14)))]
    assets = [
        f"asset:s3://lake/{'long_name_' * draw(st.integers(0, 5))}{i}"
        for i in range(draw(st.integers(1, 14)))
    ]
    edges = set()
    for _ in range(draw(st.integers(1, 40))):
        dag, asset = draw(st.sampled_from(dags)), draw(st.sampled_from(assets))
        edges.add((dag, asset) if draw(st.booleans()) else (asset, dag))  # cycles come for free
    return graph_of(sorted(edges), extra=tuple(draw(st.lists(st.sampled_from(dags), max_size=3))))


@settings(max_examples=int(os.environ.get("COREMODELS_LAYOUT_EXAMPLES", "80")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(lineage_graphs())
def test_random_graphs_draw_with_no_edge_through_a_box_and_no_box_over_another(graph: LineageGraph) -> None:
    check_geometry(graph, to_svg(graph))


def test_the_same_graph_draws_the_same_bytes_in_another_process() -> None:
    """The page and the command line draw in different processes: the layout may depend on
    nothing but the graph (grandalf's own sets and object ids included)."""
    graph = LineageGraph.from_document(recorded_document("airflow3_assets"))
    script = (
        "import sys; sys.path.insert(0, 'tests'); from support.helpers import recorded_document;"
        "from airflow_provider_coremodels.core.lineage import LineageGraph, to_svg;"
        "sys.stdout.write(to_svg(LineageGraph.from_document(recorded_document('airflow3_assets'))))"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == to_svg(graph)


# -- size ---------------------------------------------------------------------------------------


def chain(length: int) -> LineageGraph:
    """DAG 0 -> asset 0 -> DAG 1 -> ... : the deep pipeline that used to make one long strip."""
    edges = []
    for i in range(length):
        edges += [
            (f"dag:step_{i:02}", f"asset:s3://lake/step_{i:02}"),
            (f"asset:s3://lake/step_{i:02}", f"dag:step_{i + 1:02}"),
        ]
    return graph_of(edges)


def test_the_picture_grows_with_its_nodes_and_keeps_a_shape_a_frame_can_show() -> None:
    """Many small pipelines pack into a block, a deep one turns to run top to bottom: no strip."""
    areas = []
    for parts in (1, 4, 16, 64):
        edges = [
            e for i in range(parts) for e in ((f"dag:p{i}", f"asset:a{i}"), (f"asset:a{i}", f"dag:c{i}"))
        ]
        drawn = read_svg(to_svg(graph_of(edges)))
        areas.append(drawn.width * drawn.height)
        assert (drawn.width / drawn.height < 4 and drawn.height / drawn.width < 4) or parts == 1
    assert areas == sorted(areas)
    per_node = [area / (3 * parts) for area, parts in zip(areas, (1, 4, 16, 64), strict=True)]
    assert max(per_node[1:]) < 3 * min(per_node[1:])  # about linear in the nodes: no empty bands

    deep = read_svg(to_svg(chain(14)))
    assert deep.direction == "TB"  # left to right it would be a strip over 9,000 px wide
    assert deep.width <= FRAME[0] * 1.5 and deep.height <= 3000
    shallow = read_svg(to_svg(chain(2)))
    assert shallow.direction == "LR" and shallow.width <= FRAME[0]


# -- a 10,000-DAG estate --------------------------------------------------------------------------


def _generate() -> Any:
    spec = importlib.util.spec_from_file_location(
        "generate_estate", REPO / "benchmarks" / "generate_estate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


@pytest.fixture(scope="module")
def large_graph() -> LineageGraph:
    """The lineage of the generated 10,000-DAG estate (benchmarks/generate_estate.py, size L)."""
    docs = _generate()("L", seed=0)
    estate = parse_artifacts(json.dumps(docs["dags"]).encode(), None, json.dumps(docs["datasets"]).encode())
    return LineageGraph.from_document(build_document(estate, audit(estate), max_snapshot_bytes=1 << 40))


def test_a_10000_dag_estate_is_drawn_around_one_node_within_the_cap(large_graph: LineageGraph) -> None:
    assert len(large_graph.nodes) > 10_000
    whole = picture(large_graph)
    assert 0 < len(whole.graph.nodes) <= MAX_NODES
    assert whole.note and whole.note.startswith(f"The whole estate has {len(large_graph.nodes):,} nodes")
    centre = next(n for n in whole.graph.nodes if n.key in whole.graph.centre)
    assert centre.findings  # the focus: a node with open findings
    assert whole.caption.startswith(f"Around {centre.id!r}, depth 2:")
    check_geometry(whole.graph, whole.svg)


@pytest.mark.parametrize("depth", [2, 6, 12, 50])
def test_a_10000_dag_estate_neighbourhood_is_bounded_and_says_where_it_was_cut(
    large_graph: LineageGraph, depth: int
) -> None:
    centre = next(n.id for n in large_graph.nodes if n.kind == "dag")
    drawn = picture(large_graph, centre, depth)
    uncut = large_graph.neighbourhood(centre, depth)
    assert len(drawn.graph.nodes) == min(len(uncut.nodes), MAX_NODES)
    if len(uncut.nodes) > MAX_NODES:
        assert drawn.graph.cut is not None and drawn.note and "+N" in drawn.note
        assert sum(drawn.graph.beyond.values()) > 0  # the boxes that lead on say so
        assert re.search(r">[^<]*\+\d+</text>", drawn.svg)
    else:
        assert drawn.graph.cut is None and drawn.note is None
    # nearer nodes come first: nothing drawn lies farther than a node left out
    assert {n.key for n in drawn.graph.nodes} <= {n.key for n in uncut.nodes}
    check_geometry(drawn.graph, drawn.svg)


def test_a_hub_too_big_for_one_picture_shows_some_of_each_branch() -> None:
    """An asset read by 1,000 DAGs: its neighbourhood is cut at the cap, and the note says so."""
    edges = [("dag:producer", "asset:hub")] + [("asset:hub", f"dag:consumer_{i:04}") for i in range(1000)]
    graph = graph_of(edges)
    drawn = picture(graph, "hub", 1)
    assert len(drawn.graph.nodes) == MAX_NODES
    assert drawn.graph.cut is not None and (drawn.graph.cut.drawn, drawn.graph.cut.found) == (
        MAX_NODES - 1,
        1001,
    )
    assert drawn.graph.beyond == {"asset:hub": 1001 - (MAX_NODES - 1)}
    assert "drawn are 299 of the 1,001 at distance 1" in (drawn.note or "")
    check_geometry(drawn.graph, drawn.svg)
