"""The lineage picture's geometry, read back from the SVG it draws: what a person sees.

Every edge is checked against every box along its whole path (its curves flattened into short
segments), boxes against each other, the picture's size against its number of nodes, and a
10,000-DAG estate's neighbourhoods against the node cap. The graphs are the recorded estates,
random ones (Hypothesis: cycles, hubs, many small parts, long names), neighbourhoods of a
generated estate of 10,000 DAGs, and dense estates (benchmarks/dense_estate.py: few nodes, many
edges), whose pictures are bounded by edges and bends too, and say so on the picture.
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
from support.helpers import REPO, dense_artifacts, document_for, recorded_document

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.views.layout import (
    FRAME,
    MAX_BENDS,
    MAX_EDGES,
    TooDense,
    layered_layout,
)
from airflow_provider_coremodels.core.views.lineage import (
    MAX_NODES,
    Cut,
    LineageGraph,
    Node,
    layout,
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
        # Curve by curve (32 segments each): only a box that meets the curve's bounding box can
        # have a segment of it pass through, so the others are not tested segment by segment.
        for start in range(0, len(points) - 1, 32):
            curve = points[start : start + 33]
            xs, ys = [x for x, _ in curve], [y for _, y in curve]
            near = [
                (key, box)
                for key, box in boxes  # its own two ends too: an edge leaves and enters at the border
                if box.x <= max(xs)
                and min(xs) <= box.x + box.w
                and box.y <= max(ys)
                and min(ys) <= box.y + box.h
            ]
            for key, box in near:
                for a, b in itertools.pairwise(curve):
                    assert not crosses(a, b, box), f"edge {source} -> {target} passes through {key}"
    return drawn


def caption(svg: str) -> str:
    """The picture's caption: its lines above the drawing, joined."""
    root = ET.fromstring(svg)
    return " ".join(text.text or "" for text in root.findall(f"{SVG}text") if text.get("class") == "caption")


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
        "from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_svg;"
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


# -- dense estates: bounded by edges and bends (issue 34) ---------------------------------------


def dense_graph(case: str) -> LineageGraph:
    docs = dense_artifacts(case)
    return LineageGraph.from_document(document_for(docs["dags"], None, docs["datasets"]))


@pytest.fixture(scope="module", params=["assets", "1600", "3000"])
def dense(request: pytest.FixtureRequest) -> LineageGraph:
    """The dense estates of issue 34: 300 DAGs and 150 assets with 20 producers and 20 consumers
    each (6,000 edges); 200 nodes and 1,600 edges; 300 nodes and 3,000 edges."""
    return dense_graph(request.param)


def test_a_dense_estate_is_drawn_within_every_limit_and_says_what_it_left_out(dense: LineageGraph) -> None:
    """The pictures that took minutes to lay out: the layout receives at most MAX_EDGES edges and
    places at most MAX_BENDS bends, the note says which limit cut the picture and how, the picture
    says it too, and no edge runs behind a box."""
    assert len(dense.edges) > MAX_EDGES  # so the whole estate is never drawn
    drawn = picture(dense)
    assert len(drawn.graph.nodes) <= MAX_NODES and len(drawn.graph.edges) <= MAX_EDGES
    assert layout(drawn.graph).bends <= MAX_BENDS
    assert drawn.note and drawn.note.startswith("The whole estate has ")
    assert "Pick a DAG or asset to draw what surrounds it." in drawn.note
    assert drawn.graph.cut is not None and drawn.graph.cut.limit == "bends"
    assert "is too dense for one picture (its edges would bend through more than" in drawn.note
    assert f"and {drawn.graph.cut.drawn:,} of the {drawn.graph.cut.found:,} at distance 2" in drawn.note
    assert caption(drawn.svg) == drawn.note  # on the picture, word for word
    assert sum(drawn.graph.beyond.values()) > 0 and re.search(r">[^<]*\+\d+</text>", drawn.svg)
    check_geometry(drawn.graph, drawn.svg)


def test_a_dense_neighbourhood_asked_for_is_cut_to_fit_and_says_so(dense: LineageGraph) -> None:
    """Depth 6 (the page's deepest) from a DAG reaches the whole estate: cut to fit, nearest first."""
    centre = next(n.id for n in dense.nodes if n.kind == "dag")
    drawn = picture(dense, centre, 6)
    assert len(drawn.graph.edges) <= MAX_EDGES and layout(drawn.graph).bends <= MAX_BENDS
    assert drawn.graph.cut is not None and drawn.note
    assert drawn.note.startswith(f"The neighbourhood of {centre!r} at depth 6 ")
    assert caption(drawn.svg) == drawn.note
    nearer = dense.neighbourhood(centre, drawn.graph.cut.distance).nodes  # nothing past the cut ring
    assert {n.key for n in drawn.graph.nodes} <= {n.key for n in nearer}
    check_geometry(drawn.graph, drawn.svg)


def test_a_whole_estate_over_the_edge_limit_is_drawn_around_its_focus() -> None:
    """Under the node cap but over the edge limit: one producer of 20 assets, each read by the same
    40 DAGs (61 nodes, 820 edges). Around the first asset (41 links): its 41 neighbours whole, then
    13 of the other 19 assets (41 edges each: 574 edges; a fourteenth would make 615)."""
    edges = [(f"asset:a{j:02}", f"dag:d{i:02}") for i in range(40) for j in range(20)]
    edges += [("dag:producer", f"asset:a{j:02}") for j in range(20)]
    graph = graph_of(edges)
    assert len(graph.nodes) <= MAX_NODES and len(graph.edges) > MAX_EDGES
    drawn = picture(graph)
    assert drawn.note and drawn.note.startswith(
        f"The whole estate has 820 edges, over the {MAX_EDGES} one picture draws: "
        "this is the neighbourhood of 'a00' (the most linked node) at depth 2."
    )
    assert len(drawn.graph.edges) == 574
    assert drawn.graph.cut == Cut(depth=2, distance=2, drawn=13, found=19, limit="edges")
    assert (
        f"has more than the {MAX_EDGES} edges one picture draws: drawn are all within depth 1 and 13 of "
        "the 19 at distance 2" in drawn.note
    )
    assert caption(drawn.svg) == drawn.note
    check_geometry(drawn.graph, drawn.svg)


def test_a_neighbourhood_takes_nodes_in_turn_while_their_edges_fit() -> None:
    """c produces a and b; d1 reads both, d2 reads a, d3 reads b. At four edges: a and b whole
    (two edges), then in turn d1 (two more: four), and d3 would make five, so it stops there."""
    graph = graph_of(
        [("dag:c", "asset:a"), ("dag:c", "asset:b"), ("asset:a", "dag:d1"), ("asset:b", "dag:d1"),
         ("asset:a", "dag:d2"), ("asset:b", "dag:d3")]
    )  # fmt: skip
    cut = graph.neighbourhood("c", 2, max_edges=4)
    assert {n.key for n in cut.nodes} == {"dag:c", "asset:a", "asset:b", "dag:d1"}
    assert len(cut.edges) == 4
    assert cut.cut == Cut(depth=2, distance=2, drawn=1, found=3, limit="edges")
    assert cut.beyond == {"asset:a": 1, "asset:b": 1}
    whole = graph.neighbourhood("c", 2, max_edges=6)  # exactly its edges: nothing cut
    assert len(whole.edges) == 6 and whole.cut is None


@pytest.mark.parametrize("max_edges", [1, 37, 150, MAX_EDGES - 1])
def test_a_dense_neighbourhood_never_holds_more_edges_than_its_limit(max_edges: int) -> None:
    graph = dense_graph("3000")
    centre = next(n.id for n in graph.nodes if n.kind == "dag")
    cut = graph.neighbourhood(centre, 3, max_edges=max_edges)
    assert len(cut.edges) <= max_edges
    assert cut.cut is not None and cut.cut.limit == "edges"
    # as many as fit: a node of the ring brings at most its links, so the cut stops short by less
    most_links = max(sum(1 for e in graph.edges if key in e) for key in {n.key for n in graph.nodes})
    assert len(cut.edges) > max_edges - most_links


def test_the_layout_refuses_more_edges_than_it_takes_before_any_work() -> None:
    keys = [f"dag:d{i}" for i in range(40)] + [f"asset:a{j}" for j in range(40)]
    edges = [(f"dag:d{i}", f"asset:a{j}") for i in range(40) for j in range(40)]
    with pytest.raises(TooDense) as refused:
        layered_layout(keys, edges, dict.fromkeys(keys, (90.0, 34.0)))
    assert (refused.value.edges, refused.value.bends) == (1600, None)  # None: not even ranked
    assert (
        str(refused.value) == "the graph is too dense to lay out: 1,600 edges, over the 600 one layout takes"
    )


def test_the_layout_refuses_more_bends_than_it_takes_once_ranked() -> None:
    """A chain of 200 with an edge from its head to every link: 397 edges, each of the long ones
    passing every layer between, about 19,000 bends."""
    keys = [f"n{i:03}" for i in range(200)]
    edges = list(itertools.pairwise(keys)) + [(keys[0], key) for key in keys[2:]]
    assert len(edges) <= MAX_EDGES
    with pytest.raises(TooDense) as refused:
        layered_layout(keys, edges, dict.fromkeys(keys, (90.0, 34.0)))
    assert refused.value.bends is not None and refused.value.bends > MAX_BENDS
    short = keys[:40]  # the same shape at 40: 741 bends, within the limit, and counted
    laid = layered_layout(short, [e for e in edges if e[1] in short], dict.fromkeys(short, (90.0, 34.0)))
    assert laid.bends == sum(range(1, 39))


def test_a_picture_that_leaves_nothing_out_has_no_caption_and_a_note_fits_its_width() -> None:
    graph = chain(2)
    assert caption(to_svg(graph)) == "" and 'class="caption"' not in to_svg(graph)
    note = "A note of many words, " * 12
    svg = to_svg(graph, note)
    assert caption(svg) == " ".join(note.split())
    root = ET.fromstring(svg)
    width = float(root.get("width") or 0)
    for line in (t for t in root.findall(f"{SVG}text") if t.get("class") == "caption"):
        assert 16 + len(line.text or "") * 6.4 <= width
    check_geometry(graph, svg)  # the drawing moved down below the caption, still whole
