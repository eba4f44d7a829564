"""The lineage picture's layered layout: grandalf's Sugiyama layout, with edges routed between layers.

Boxes of known sizes and the edges between them in; where each box goes and the path of each
edge out. No drawing here (``core.lineage.to_svg`` draws) and no I/O.

grandalf (pure Python, EPL-1.0 or GPL-2.0) ranks the nodes into layers, breaking cycles, puts
a dummy vertex wherever an edge crosses a layer, orders each layer to reduce crossings and
places the vertices (Brandes and Köpf). The routing here then keeps every edge off every box
but its own two ends, by construction:

- between two layers there is a gap that holds no box: an edge crosses it as one curve whose
  control points lie inside the gap;
- inside a layer an edge runs straight along the slot its dummy vertex was given, a slot of
  the layer's order like a box's, so no box shares it;
- at its ends it runs straight from the box's border to the edge of the box's layer, along
  the box's own slot.

The picture is laid out both ways, left to right and top to bottom, and the one that fits a
page's frame at the larger scale is kept (left to right on a tie: the way Mermaid and DOT
draw it). Connected parts are laid out apart and packed into rows, largest first, so that
many small pipelines make a block rather than one long strip.

The layout's cost grows with what grandalf places: the boxes, and a dummy vertex (a bend) for
every layer an edge passes. A dense graph ranks into dozens of layers, so its bends outnumber
its boxes a hundred to one. ``layered_layout`` refuses more than ``MAX_EDGES`` edges before any
work and more than ``MAX_BENDS`` bends once ranked, before ordering and placing (most of the
cost), raising ``TooDense``: the caller draws less and says so (``core.lineage.picture``).
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from grandalf.graphs import Edge, Vertex, graph_core
from grandalf.layouts import SugiyamaLayout

Direction = Literal["LR", "TB"]
Point = tuple[float, float]

#: The frame a picture should fit: about what the UI page shows without zooming out.
FRAME = (1200.0, 720.0)
#: Space between two boxes of one layer, and between two layers (where the edges cross).
ALONG_GAP = {"LR": 14.0, "TB": 24.0}
ACROSS_GAP = {"LR": 72.0, "TB": 56.0}
#: The slot a dummy vertex (an edge passing through a layer) takes in its layer's order.
EDGE_SLOT = 10.0
#: Space around the picture and between two packed parts.
MARGIN = 16.0
PART_GAP = 32.0
#: Rounds of grandalf's crossing reduction (each sweeps down the layers and back up).
ORDER_ROUNDS = 4
#: The most edges, and the most bends (an edge passing a layer), one layout takes: past them
#: a picture is a thicket no one reads, and its layout takes seconds. At both limits the layout
#: takes well under the 2 s a page may (benchmarks/bench_views.py measures it).
MAX_EDGES = 600
MAX_BENDS = 2000

# grandalf keeps search state on a class attribute (Vertex.ncur) while it breaks cycles, so
# two layouts at once in one process (two page requests) would corrupt each other.
_GRANDALF = threading.Lock()


@dataclass(frozen=True, slots=True)
class Box:
    """Where one node is drawn: its top-left corner and size."""

    x: float
    y: float
    width: float
    height: float

    def moved(self, dx: float, dy: float) -> Box:
        return Box(self.x + dx, self.y + dy, self.width, self.height)


class TooDense(ValueError):
    """A graph with more edges or bends than one layout takes; says how many it has."""

    def __init__(self, edges: int, bends: int | None = None) -> None:
        self.edges, self.bends = edges, bends
        if bends is None:
            said = f"{edges:,} edges, over the {MAX_EDGES:,} one layout takes"
        else:
            said = f"{bends:,} bends (edges passing a layer), over the {MAX_BENDS:,} one layout takes"
        super().__init__(f"the graph is too dense to lay out: {said}")


class _Sugiyama(SugiyamaLayout):  # type: ignore[misc]  # grandalf ships no types
    """grandalf's Sugiyama layout, with its alignment conflicts kept in a set.

    grandalf 0.8 keeps them in a list and tests every candidate alignment against it
    (``vpair not in self.conflicts``), which costs the number of conflicts each time: on a dense
    graph that was four fifths of the layout. A set answers the same, so the layout is the
    same; grandalf only ever tests membership in it.
    """

    def _detect_alignment_conflicts(self) -> None:
        super()._detect_alignment_conflicts()
        self.conflicts: set[tuple[Any, Any]] = set(self.conflicts)


@dataclass(frozen=True, slots=True)
class Layout:
    """Every node's box and every edge's route, in a picture ``width`` by ``height``.

    A route is a list of points from the source's border to the target's. Consecutive
    points are joined by a curve that leaves and arrives along the picture's direction
    (``LR``: horizontally; ``TB``: vertically); two points on one line make a straight run.
    """

    direction: Direction
    width: float
    height: float
    boxes: Mapping[str, Box]
    routes: Mapping[tuple[str, str], tuple[Point, ...]]
    bends: int = 0  # the dummy vertices grandalf placed: what the layout cost, with the boxes


def layered_layout(
    keys: Sequence[str],
    edges: Sequence[tuple[str, str]],
    sizes: Mapping[str, tuple[float, float]],
) -> Layout:
    """Lay out ``keys`` (boxes of ``sizes[key]`` = (width, height)) and ``edges`` between them.

    The same input gives the same layout, in any process: parts, vertices and edges are handed
    to grandalf in the order given, never through a set. More than ``MAX_EDGES`` edges, or
    more than ``MAX_BENDS`` bends once ranked, raise ``TooDense``.
    """
    if len(edges) > MAX_EDGES:
        raise TooDense(len(edges))
    laid: dict[Direction, list[_Part]] = {"LR": [], "TB": []}
    with _GRANDALF:
        ranked = [_rank(part_keys, part_edges) for part_keys, part_edges in _parts(keys, edges)]
        bends = sum(part.bends for part in ranked)
        if bends > MAX_BENDS:
            raise TooDense(len(edges), bends)
        for part in ranked:
            for direction, placed in _layout_part(part, sizes).items():
                laid[direction].append(placed)
    packed = {direction: _pack(laid[direction], direction, bends) for direction in ("LR", "TB")}

    def fit(layout: Layout) -> float:
        return min(1.0, FRAME[0] / max(layout.width, 1.0), FRAME[1] / max(layout.height, 1.0))

    return packed["TB"] if fit(packed["TB"]) > fit(packed["LR"]) else packed["LR"]


def bends(keys: Sequence[str], edges: Sequence[tuple[str, str]]) -> int:
    """The bends ``layered_layout`` would place for this graph: its ranking alone, a small part of
    the layout's cost, so a caller can find what fits before it lays anything out."""
    if len(edges) > MAX_EDGES:
        raise TooDense(len(edges))
    with _GRANDALF:
        return sum(_rank(part_keys, part_edges).bends for part_keys, part_edges in _parts(keys, edges))


# -- the parts ------------------------------------------------------------------------------


def _parts(
    keys: Sequence[str], edges: Sequence[tuple[str, str]]
) -> list[tuple[list[str], list[tuple[str, str]]]]:
    """The connected parts, each with its keys and edges in the order given; largest first."""
    neighbours: dict[str, list[str]] = defaultdict(list)
    for source, target in edges:
        neighbours[source].append(target)
        neighbours[target].append(source)
    part_of: dict[str, int] = {}
    count = 0
    for key in keys:
        if key in part_of:
            continue
        number = part_of[key] = count
        count += 1
        queue = deque([key])
        while queue:
            for other in neighbours[queue.popleft()]:
                if other not in part_of:
                    part_of[other] = number
                    queue.append(other)
    grouped: dict[int, tuple[list[str], list[tuple[str, str]]]] = defaultdict(lambda: ([], []))
    for key in keys:
        grouped[part_of[key]][0].append(key)
    for edge in edges:
        grouped[part_of[edge[0]]][1].append(edge)
    return sorted(grouped.values(), key=lambda part: -len(part[0]))  # stable: ties keep their order


@dataclass
class _Part:
    """One connected part laid out on its own, from (0, 0)."""

    width: float
    height: float
    boxes: dict[str, Box]
    routes: dict[tuple[str, str], tuple[Point, ...]]


class _View:
    """What grandalf reads of a vertex (``w`` along its layer, ``h`` across) and writes (``xy``)."""

    __slots__ = ("h", "w", "xy")

    def __init__(self, w: float, h: float) -> None:
        self.w, self.h = w, h
        self.xy: tuple[float, float] = (0.0, 0.0)


@dataclass
class _Ranked:
    """One connected part, ranked into layers with its dummy vertices, not yet ordered or placed."""

    keys: list[str]
    edges: list[tuple[str, str]]
    sugiyama: Any = None  # None for a part of one box
    vertices: dict[str, Any] = field(default_factory=dict)
    links: list[Any] = field(default_factory=list)
    bends: int = 0


def _rank(keys: list[str], edges: list[tuple[str, str]]) -> _Ranked:
    if len(keys) == 1:
        return _Ranked(keys, edges)
    vertices = {key: Vertex(key) for key in keys}
    for vertex in vertices.values():
        vertex.view = _View(1.0, 1.0)
    links = [Edge(vertices[source], vertices[target]) for source, target in edges]
    sugiyama = _Sugiyama(graph_core(list(vertices.values()), links))
    sugiyama.dw, sugiyama.dh = EDGE_SLOT, 0.0  # the dummies' slot; they add no thickness
    needed = 4 * (len(keys) + len(edges)) + 200  # grandalf recurses along layers and blocks
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)
    sugiyama.init_all(optimize=True)  # sources move up beside what they feed
    bends = sum(len(layer) for layer in sugiyama.layers) - len(keys)
    return _Ranked(keys, edges, sugiyama, vertices, links, bends)


def _layout_part(part: _Ranked, sizes: Mapping[str, tuple[float, float]]) -> dict[Direction, _Part]:
    if part.sugiyama is None:
        key = part.keys[0]
        width, height = sizes[key]
        single = _Part(width, height, {key: Box(0.0, 0.0, width, height)}, {})
        return {"LR": single, "TB": single}
    sugiyama = part.sugiyama
    for _ in range(ORDER_ROUNDS):
        for _step in sugiyama.ordering_step():
            pass
    return {
        direction: _placed(sugiyama, part.vertices, part.links, part.edges, sizes, direction)
        for direction in ("LR", "TB")
    }


def _placed(
    sugiyama: Any,
    vertices: Mapping[str, Any],
    links: Sequence[Any],
    edges: Sequence[tuple[str, str]],
    sizes: Mapping[str, tuple[float, float]],
    direction: Direction,
) -> _Part:
    """The part's boxes and routes in one direction, from grandalf's order of each layer.

    grandalf lays layers out top to bottom: ``w`` is a vertex's extent along its layer and
    ``h`` across it. Left to right, a box's height runs along its layer (a column) and its
    width across it.
    """
    for key, vertex in vertices.items():
        width, height = sizes[key]
        vertex.view.w, vertex.view.h = (height, width) if direction == "LR" else (width, height)
    sugiyama.xspace, sugiyama.yspace = ALONG_GAP[direction], ACROSS_GAP[direction]
    sugiyama.setxy()
    for layer in sugiyama.layers:
        _separate(layer, sugiyama.xspace)

    rank = {key: sugiyama.grx[vertex].rank for key, vertex in vertices.items()}
    layers = sugiyama.layers
    # Each layer's band across: grandalf centres a layer on one line, as thick as its thickest box.
    centre = [layer[0].view.xy[1] for layer in layers]
    half = [max(v.view.h for v in layer) / 2 for layer in layers]
    along_min = min(v.view.xy[0] - v.view.w / 2 for layer in layers for v in layer)

    def point(along: float, across: float) -> Point:
        a, c = along - along_min, across - (centre[0] - half[0])
        return (c, a) if direction == "LR" else (a, c)

    boxes: dict[str, Box] = {}
    for key, vertex in vertices.items():
        x, y = point(vertex.view.xy[0] - vertex.view.w / 2, vertex.view.xy[1] - vertex.view.h / 2)
        width, height = sizes[key]
        boxes[key] = Box(x, y, width, height)

    # Each edge as the dummies it passes, from its lower layer to its higher one.
    passes: dict[tuple[str, str], list[float]] = {}
    for link, edge in zip(links, edges, strict=True):
        low, high = sorted((rank[edge[0]], rank[edge[1]]))
        controls = sugiyama.ctrls.get(link, {})
        passes[edge] = [controls[r].view.xy[0] for r in range(low + 1, high)]

    ports = _ports(vertices, edges, rank, passes)
    routes: dict[tuple[str, str], tuple[Point, ...]] = {}
    for edge in edges:
        low_end, high_end = (edge[0], edge[1]) if rank[edge[0]] < rank[edge[1]] else (edge[1], edge[0])
        r_low, r_high = rank[low_end], rank[high_end]
        v_low, v_high = vertices[low_end], vertices[high_end]
        along_low, along_high = ports[(low_end, edge)], ports[(high_end, edge)]
        points = [
            point(along_low, v_low.view.xy[1] + v_low.view.h / 2),  # the box's border
            point(along_low, centre[r_low] + half[r_low]),  # the end of its layer
        ]
        for offset, along in enumerate(passes[edge], start=1):
            r = r_low + offset
            points += [point(along, centre[r] - half[r]), point(along, centre[r] + half[r])]
        points += [
            point(along_high, centre[r_high] - half[r_high]),
            point(along_high, v_high.view.xy[1] - v_high.view.h / 2),
        ]
        if low_end != edge[0]:  # an edge grandalf turned round to break a cycle
            points.reverse()
        routes[edge] = tuple(_distinct(points))

    # The part's extent holds its routes too: an edge's slot in a layer may lie past every box
    # (a long edge beside the layer's last box), and a part packed next to it must not cover it.
    corners = [(b.x + b.width, b.y + b.height) for b in boxes.values()]
    corners += [point for route in routes.values() for point in route]
    width = max(max(x for x, _ in corners), 0.0)
    height = max(max(y for _, y in corners), 0.0)
    return _Part(width, height, boxes, routes)


def _separate(layer: Sequence[Any], gap: float) -> None:
    """Move a layer's vertices apart where grandalf placed two too close, as little as can be.

    grandalf's coordinates (the mean of Brandes and Köpf's four alignments) can overlap two
    neighbours of a layer. Keeping the layer's order, each vertex must start ``gap`` past the
    end of the one before it; the positions nearest to grandalf's (least squares) that keep
    every such gap are an isotonic regression, found in one pass by pooling adjacent violators.
    """
    if len(layer) < 2:
        return
    # Subtract what each vertex must keep from the first: the constraint becomes "non-decreasing".
    offsets = [0.0]
    for before, after in itertools.pairwise(layer):
        offsets.append(offsets[-1] + (before.view.w + after.view.w) / 2 + gap)
    blocks: list[list[float]] = []  # [sum of values, count]
    for vertex, offset in zip(layer, offsets, strict=True):
        blocks.append([vertex.view.xy[0] - offset, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    index = 0
    for total, count in blocks:
        for _ in range(int(count)):
            vertex = layer[index]
            vertex.view.xy = (total / count + offsets[index], vertex.view.xy[1])
            index += 1


def _ports(
    vertices: Mapping[str, Any],
    edges: Sequence[tuple[str, str]],
    rank: Mapping[str, int],
    passes: Mapping[tuple[str, str], list[float]],
) -> dict[tuple[str, tuple[str, str]], float]:
    """Where along its box each edge meets it: spread over the middle of the side it uses, in
    the order of where the edges go next, so that edges meeting one box do not cross there."""
    sides: dict[tuple[str, int], list[tuple[float, int, tuple[str, str]]]] = defaultdict(list)
    for number, edge in enumerate(edges):
        for end, other in (edge, edge[::-1]):
            toward = 1 if rank[other] > rank[end] else -1
            via = passes[edge]  # where the edge goes next: its first dummy that way, or the other end
            nxt = (via[0] if toward > 0 else via[-1]) if via else vertices[other].view.xy[0]
            sides[(end, toward)].append((nxt, number, edge))
    ports: dict[tuple[str, tuple[str, str]], float] = {}
    for (end, _toward), met in sides.items():
        view = vertices[end].view
        span = view.w * 0.6
        met.sort()
        for i, (_nxt, _number, edge) in enumerate(met):
            ports[(end, edge)] = view.xy[0] - span / 2 + span * (i + 1) / (len(met) + 1)
    return ports


def _distinct(points: Iterable[Point]) -> list[Point]:
    out: list[Point] = []
    for p in points:
        if not out or abs(out[-1][0] - p[0]) > 1e-6 or abs(out[-1][1] - p[1]) > 1e-6:
            out.append(p)
    return out


# -- packing --------------------------------------------------------------------------------


def _pack(parts: Sequence[_Part], direction: Direction, bends: int) -> Layout:
    """Rows of parts, largest first, each row as wide as the frame's shape allows."""
    if not parts:
        return Layout(direction, 2 * MARGIN, 2 * MARGIN, {}, {}, bends)
    area = sum((p.width + PART_GAP) * (p.height + PART_GAP) for p in parts)
    limit = max(max(p.width for p in parts), (area * FRAME[0] / FRAME[1]) ** 0.5)
    boxes: dict[str, Box] = {}
    routes: dict[tuple[str, str], tuple[Point, ...]] = {}
    x = y = row_height = width = 0.0
    for part in parts:
        if x > 0 and x + part.width > limit:
            x, y, row_height = 0.0, y + row_height + PART_GAP, 0.0
        dx, dy = MARGIN + x, MARGIN + y
        boxes.update((key, box.moved(dx, dy)) for key, box in part.boxes.items())
        routes.update(
            (edge, tuple((px + dx, py + dy) for px, py in route)) for edge, route in part.routes.items()
        )
        x += part.width + PART_GAP
        row_height = max(row_height, part.height)
        width = max(width, x - PART_GAP)
    return Layout(direction, width + 2 * MARGIN, y + row_height + 2 * MARGIN, boxes, routes, bends)
