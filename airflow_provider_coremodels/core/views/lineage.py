"""The lineage picture: the DAG -> asset -> DAG graph of a snapshot document, drawn three ways.

``LineageGraph.from_document`` reads the graph off a snapshot document (so the CLI, the
markdown report and the UI page all draw the same thing), ``neighbourhood`` cuts it down to
what surrounds one DAG or asset, and ``to_mermaid``, ``to_dot`` and ``to_svg`` draw it.
Arrows follow the data: producing DAG -> asset -> consuming DAG.

Every drawing marks paused DAGs, external DAGs (named by an edge, absent from the dags
artifact) and nodes with open findings, in words as well as in colour, so the marks survive
a renderer without styles. DAGs with no asset lineage are left out of the picture and
counted instead: in an estate of thousands of DAGs most have none.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from html import escape
from typing import Any, Literal

from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.estate.rules import catalogue, severity_rank
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.views.layout import (
    FRAME,
    MARGIN,
    MAX_BENDS,
    MAX_EDGES,
    Box,
    Layout,
    Point,
    TooDense,
    bends,
    layered_layout,
)

NodeKind = Literal["dag", "asset", "external"]
_KIND_ORDER = {"dag": 0, "external": 1, "asset": 2}
# The nodes a finding can be about, by what its rule's subject names.
_NODE_KINDS = {"dag": ("dag",), "asset": ("asset",), "dataset": ("dag", "asset")}
#: The label of an edge from a DAG whose file does not import to an asset it last produced.
BROKEN_VIA = "last produced; does not import"
#: The labels of links between two DAGs (a trigger, a sensor): drawn in a style of their own.
LINK_VIAS = ("trigger", "sensor")
#: An edge read off a SQL or transfer task's code (the model's ``VIA_INFERRED``), drawn dashed.
VIA_INFERRED = "inferred"
_LINK_COLOUR = "#bf8700"
#: The findings that mark an asset stale in every picture.
_STALE_CODES = frozenset(("asset-stale", "producer-failing"))


@dataclass(frozen=True, slots=True)
class Node:
    """A DAG, an asset or an external DAG; ``key`` tells a DAG and an asset of the same name apart."""

    id: str
    kind: NodeKind
    paused: bool = False
    findings: tuple[str, ...] = ()  # open (unwaived) finding codes about this node
    severity: str | None = None  # the highest of them
    watched: bool = False  # an asset a watcher (an event-driven trigger) updates from outside
    deployment: str | None = None  # a merged estate's DAG: the deployment it runs in
    display: str | None = None  # a DAG's dag_display_name, where it is not its id
    broken: bool = False  # a DAG whose file does not import: it does not run

    @property
    def stale(self) -> bool:
        """An asset the freshness rules found stale, or whose every active producer failed."""
        return any(code in _STALE_CODES for code in self.findings)

    @property
    def key(self) -> str:
        return _key(self.kind, self.id)

    def label(self) -> str:
        marks = []
        if self.display:
            marks.append(f"“{self.display}”")
        if self.broken:
            marks.append("does not import")
        if self.paused:
            marks.append("paused")
        if self.kind == "external":
            marks.append("external")
        if self.watched:
            marks.append("watched")
        if self.stale:
            marks.append("stale")
        if self.findings:
            count = len(self.findings)
            marks.append(f"{count} finding{'s' if count != 1 else ''}")
        return f"{self.id} ({', '.join(marks)})" if marks else self.id


@dataclass(frozen=True, slots=True)
class Cut:
    """Where a neighbourhood's cap stopped it: of the ``found`` nodes at ``distance`` (of the
    ``depth`` asked for), ``drawn`` are drawn; everything nearer is drawn whole. ``limit`` names
    the cap: ``nodes``, ``edges``, or ``bends`` (the layout's, ``core.layout.MAX_BENDS``)."""

    depth: int
    distance: int
    drawn: int
    found: int
    limit: Literal["nodes", "edges", "bends"] = "nodes"


@dataclass(frozen=True, slots=True)
class LineageGraph:
    """Nodes in (kind, id) order and edges as (source key, target key) in the direction of the data.

    ``via`` says how an edge was learned where it was not a plain producing task or schedule
    (an alias, an ``Asset.ref``, a task inlet): the drawings dash such edges and label them.
    ``crossing`` holds a merged estate's edges whose asset joins deployments: drawn thick.
    """

    nodes: tuple[Node, ...]
    edges: tuple[tuple[str, str], ...]
    hidden_dags: tuple[str, ...] = ()  # described DAGs with no asset lineage, not drawn
    via: Mapping[tuple[str, str], str] = field(default_factory=dict)
    crossing: frozenset[tuple[str, str]] = frozenset()
    # A neighbourhood's: its centre, how many of each node's links lead to nodes not drawn, and
    # where its cap cut it short (None when it holds all that lies within its depth).
    centre: frozenset[str] = frozenset()
    beyond: Mapping[str, int] = field(default_factory=dict)
    cut: Cut | None = None
    _index: dict[str, Node] = field(default_factory=dict, compare=False, repr=False)
    # Worked out at the first neighbourhood asked for (an assistant's server asks many of one
    # graph), so that each costs what it draws, not what the estate holds: every node's
    # neighbours either way, its place in ``nodes``, and the places in ``edges`` of its edges out.
    _adjacent: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)
    _order: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    _edges_out: dict[str, list[int]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update((node.key, node) for node in self.nodes)

    def node(self, key: str) -> Node:
        return self._index[key]

    @classmethod
    @gc_paused()
    def from_document(cls, document: Mapping[str, Any]) -> LineageGraph:
        """Build the graph of a snapshot document; one stored without lineage has no picture."""
        if "datasets" not in document or "lineage" not in document:
            raise ValueError(
                "the snapshot was stored without datasets and lineage (it exceeded the snapshot cap), "
                "so it has no lineage to draw"
            )
        # Open findings by the node they are about. A DAG and an asset may share a name, so
        # the rule says which; a code this version does not know may be about either.
        open_findings: dict[str, list[dict[str, Any]]] = defaultdict(list)
        rules = catalogue(document)
        for finding in document.get("findings", []):
            if not finding.get("waived"):
                rule = rules.get(finding["code"])
                for kind in _NODE_KINDS.get(rule.about if rule else "dataset", ()):
                    open_findings[_key(kind, finding["subject"])].append(finding)

        # A merged estate's DAGs (and external DAGs) are <deployment>/<dag_id>: grouped by it.
        deployments = set((document.get("state") or {}).get("deployments") or ())

        def deployment_of(dag_id: str) -> str | None:
            name = dag_id.partition("/")[0]
            return name if name in deployments and name != dag_id else None

        # A DAG whose file does not import runs nothing, but what it produced is what its break
        # starves: drawn from the DAG to those assets, dashed and labelled.
        broken_outlets: list[tuple[str, str]] = []
        for file in document.get("importErrors") or ():
            outlets = file.get("outlets") if isinstance(file, Mapping) else None
            for dag_id, uris in outlets.items() if isinstance(outlets, Mapping) else ():
                broken_outlets.extend((dag_id, uri) for uri in uris if isinstance(uri, str))
        broken_dags = {
            dag_id
            for file in document.get("importErrors") or ()
            if isinstance(file, Mapping)
            for dag_id in file.get("dags") or ()
        }

        described: dict[str, Node] = {}
        assets: dict[str, Node] = {}
        for dataset in document["datasets"]:
            identity = dataset["identity"]
            if dataset["materialization"] == "asset":
                watched = dataset.get("metadata", {}).get("airflow.watched") == "true"
                assets[identity] = _node(identity, "asset", False, open_findings, watched=watched)
            else:
                metadata = dataset.get("metadata", {})
                described[identity] = _node(
                    identity,
                    "dag",
                    metadata.get("airflow.paused") == "true",
                    open_findings,
                    deployment=deployment_of(identity),
                    display=metadata.get("airflow.displayName"),
                    broken=identity in broken_dags,
                )

        externals: dict[str, Node] = {}
        edges: set[tuple[str, str]] = set()
        vias: dict[tuple[str, str], str] = {}
        crossing: set[tuple[str, str]] = set()
        for edge in document["lineage"]:
            if edge.get("dependentKind") == "dag" and edge.get("dependsOnKind") == "dag":
                if edge.get("via") not in LINK_VIAS:
                    continue  # no other edge joins two DAGs: nothing the picture can place
                for end in (edge["dependent"], edge["dependsOn"]):
                    if end not in described and end not in externals:
                        externals[end] = _node(
                            end, "external", False, open_findings, deployment=deployment_of(end)
                        )
                pair = (_key("dag", edge["dependsOn"]), _key("dag", edge["dependent"]))  # as runs follow
                edges.add(pair)
                vias[pair] = str(edge["via"])
                continue
            sides = _edge_sides(edge, assets, described)
            if sides is None:
                continue  # neither end is an asset: nothing the picture can place
            dag_id, asset_id, producing = sides
            if dag_id not in described and dag_id not in externals:
                externals[dag_id] = _node(
                    dag_id, "external", False, open_findings, deployment=deployment_of(dag_id)
                )
            dag_key, asset_key = _key("dag", dag_id), _key("asset", asset_id)
            pair = (dag_key, asset_key) if producing else (asset_key, dag_key)
            edges.add(pair)
            if edge.get("via") == VIA_INFERRED and isinstance(edge.get("source"), str):
                vias[pair] = f"{VIA_INFERRED} from {edge['source']}"  # the task, where the reader looks
            elif edge.get("via"):
                vias[pair] = str(edge["via"])
            if edge.get("crossDeployment") is True:
                crossing.add(pair)

        for dag_id, uri in broken_outlets:
            if dag_id in described and uri in assets:
                pair = (_key("dag", dag_id), _key("asset", uri))
                edges.add(pair)
                vias[pair] = BROKEN_VIA
        linked = {key for edge in edges for key in edge}
        nodes = [n for n in described.values() if n.key in linked]
        nodes += [*externals.values(), *assets.values()]
        hidden = sorted(dag_id for dag_id, n in described.items() if n.key not in linked)
        return cls(_sorted(nodes), tuple(sorted(edges)), tuple(hidden), vias, frozenset(crossing))

    def neighbourhood(
        self,
        center: str,
        depth: int = 2,
        *,
        kind: str | None = None,
        max_nodes: int | None = None,
        max_edges: int | None = None,
    ) -> LineageGraph:
        """What lies within ``depth`` edges of the DAG or asset ``center``, in either direction.

        Depth 2 from a DAG shows its assets and the DAGs on their other side; from an asset,
        its producers and consumers and their other assets. ``kind`` (``dag`` or ``asset``) picks
        one where a DAG and an asset share the name; by default both are the centre.

        With ``max_nodes``, a neighbourhood that would hold more stops at the last whole ring
        (the nodes at one distance) that fits, and fills what room is left from the next ring,
        a few nodes for each node that leads to it in turn; ``cut`` says where. Either way,
        ``beyond`` counts each drawn node's links to nodes that are not drawn.

        With ``max_edges``, likewise for the edges between the nodes kept: the next ring's nodes
        are taken in the same turns while the edges they bring fit, and the first that does not
        fit stops it (a dense estate's picture is bounded by its edges, not only its boxes).
        """
        if depth < 0:
            raise ValueError(f"depth must be 0 or more, got {depth}")
        kinds = ("dag", "asset") if kind is None else (kind,)
        starts = [key for key in (_key(k, center) for k in kinds) if key in self._index]
        if not starts:
            if center in self.hidden_dags and kind in (None, "dag"):
                return LineageGraph(
                    (_node(center, "dag", False, {}),), (), centre=frozenset([_key("dag", center)])
                )
            raise ValueError(f"no DAG or asset named {center!r} in the lineage")
        if not self._order:
            adjacent: dict[str, list[str]] = defaultdict(list)
            edges_out: dict[str, list[int]] = defaultdict(list)
            for number, (source, target) in enumerate(self.edges):
                adjacent[source].append(target)
                adjacent[target].append(source)
                edges_out[source].append(number)
            # each whole, in one step, _order last (it is what is checked): two threads agree
            self._adjacent.update(adjacent)
            self._edges_out.update(edges_out)
            self._order.update((node.key, i) for i, node in enumerate(self.nodes))
        kept: dict[str, int] = {}
        edges_kept = 0  # the edges between the nodes kept (counted only with max_edges)
        for key in starts:
            edges_kept += self._links(key, kept)
            kept[key] = 0
        ring = list(starts)
        cut: Cut | None = None
        for distance in range(1, depth + 1):
            found: dict[str, str] = {}  # each node of the next ring, and the first node leading to it
            for key in ring:
                for other in self._adjacent.get(key, ()):
                    if other not in kept and other not in found:
                        found[other] = key
            if not found:
                break
            ring_edges = 0
            if max_edges is not None:  # to the nodes kept, and within the ring (met at both ends)
                ring_edges = sum(self._links(key, kept) for key in found)
                ring_edges += sum(self._links(key, found) for key in found) // 2
            over_nodes = max_nodes is not None and len(kept) + len(found) > max_nodes
            if over_nodes or (max_edges is not None and edges_kept + ring_edges > max_edges):
                room = len(found) if max_nodes is None else max(max_nodes - len(kept), 0)
                chosen = 0
                limit: Literal["nodes", "edges", "bends"] = "nodes"
                for key in _round_robin(found, room):
                    gain = self._links(key, kept) if max_edges is not None else 0
                    if max_edges is not None and edges_kept + gain > max_edges:
                        limit = "edges"
                        break
                    kept[key] = distance
                    edges_kept += gain
                    chosen += 1
                cut = Cut(depth, distance, chosen, len(found), limit)
                break
            kept.update(dict.fromkeys(found, distance))
            edges_kept += ring_edges
            ring = list(found)
        nodes = tuple(self._index[key] for key in sorted(kept, key=self._order.__getitem__))
        inside = sorted(n for key in kept for n in self._edges_out.get(key, ()) if self.edges[n][1] in kept)
        edges = tuple(self.edges[n] for n in inside)
        beyond = {}
        for key in kept:
            outside = sum(1 for other in self._adjacent.get(key, ()) if other not in kept)
            if outside:
                beyond[key] = outside
        return LineageGraph(
            nodes,
            edges,
            via={e: self.via[e] for e in edges if e in self.via},
            crossing=frozenset(e for e in edges if e in self.crossing),
            centre=frozenset(starts),
            beyond=beyond,
            cut=cut,
        )

    def _links(self, key: str, among: Mapping[str, object]) -> int:
        """The edges between ``key`` and the nodes ``among`` (an edge each way is two)."""
        return sum(1 for other in self._adjacent.get(key, ()) if other in among)

    def names(self) -> list[str]:
        """Every DAG id and asset URI a neighbourhood can be asked for, in order."""
        return sorted({*(node.id for node in self.nodes), *self.hidden_dags})

    def focus(self) -> Node | None:
        """The node a picture of an estate too large to draw whole is centred on: the one with the
        most severe open findings (the most of them, then the most links), else the most linked."""
        degree: dict[str, int] = defaultdict(int)
        for source, target in self.edges:
            degree[source] += 1
            degree[target] += 1
        return min(
            self.nodes,
            key=lambda n: (-severity_rank(n.severity or ""), -len(n.findings), -degree[n.key], n.key),
            default=None,
        )

    def summary(self) -> str:
        counts: dict[str, int] = defaultdict(int)
        for node in self.nodes:
            counts[node.kind] += 1
        parts = [
            _plural(counts["dag"], "DAG"),
            _plural(counts["external"], "external DAG"),
            _plural(counts["asset"], "asset"),
            _plural(len(self.edges), "edge"),
        ]
        if self.crossing:
            parts[-1] += f" ({len(self.crossing)} across deployments)"
        links = sum(1 for edge in self.edges if self.via.get(edge) in LINK_VIAS)
        if links:
            parts[-1] += f" ({_plural(links, 'trigger or sensor link')})"
        inferred = sum(1 for edge in self.edges if self.via.get(edge, "").startswith(VIA_INFERRED))
        if inferred:  # the legend every drawing carries: these were read off code, not declared
            parts[-1] += f" ({inferred} inferred from SQL or transfer tasks' code, dashed)"
        line = ", ".join(parts)
        if self.hidden_dags:
            line += f"; {_plural(len(self.hidden_dags), 'DAG')} without asset lineage not shown"
        return line


def _round_robin(found: Mapping[str, str], room: int) -> list[str]:
    """Up to ``room`` of ``found`` (node -> the node leading to it), one for each leading node in
    turn, so that every branch of a cut neighbourhood shows some of what lies beyond it."""
    by_parent: dict[str, deque[str]] = defaultdict(deque)
    for key, parent in found.items():
        by_parent[parent].append(key)
    queues = list(by_parent.values())
    chosen: list[str] = []
    while len(chosen) < room and queues:
        for queue in queues:
            if len(chosen) < room and queue:
                chosen.append(queue.popleft())
        queues = [queue for queue in queues if queue]
    return chosen


def _edge_sides(
    edge: Mapping[str, Any], assets: Mapping[str, Node], described: Mapping[str, Node]
) -> tuple[str, str, bool] | None:
    """(dag_id, asset URI, producing) of a document's edge, or None when it joins no asset.

    A version 2 edge names the kind of each end. A version 1 edge (a stored snapshot read by
    the UI page) is read as version 1 did: the asset end is the one that is an asset while the
    other end is a described or an external DAG.
    """
    dependent, depends_on = edge["dependent"], edge["dependsOn"]
    kind = edge.get("dependentKind")
    if kind == "asset" and dependent in assets:
        return depends_on, dependent, True
    if kind == "dag" and depends_on in assets:
        return dependent, depends_on, False
    if kind is not None:
        return None
    external = edge.get("external", False)
    if dependent in assets and (external or depends_on in described):
        return depends_on, dependent, True
    if depends_on in assets and (external or dependent in described):
        return dependent, depends_on, False
    return None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _key(kind: str, identity: str) -> str:
    """A node's key: external DAGs share the ``dag:`` space, since an edge names either kind alike."""
    return f"{'asset' if kind == 'asset' else 'dag'}:{identity}"


def _node(
    identity: str,
    kind: NodeKind,
    paused: bool,
    findings: Mapping[str, list[dict[str, Any]]],
    *,
    watched: bool = False,
    deployment: str | None = None,
    display: str | None = None,
    broken: bool = False,
) -> Node:
    about = findings.get(_key(kind, identity), [])
    codes = tuple(sorted({f["code"] for f in about}))
    severity = max((f["severity"] for f in about), key=severity_rank, default=None)
    return Node(identity, kind, paused, codes, severity, watched, deployment, display, broken)


def _groups(graph: LineageGraph) -> dict[str | None, list[Node]]:
    """The nodes by deployment (a merged estate's DAGs), None for the rest: assets, which join
    deployments, and every node of one deployment's estate. Deployments in name order."""
    groups: dict[str | None, list[Node]] = defaultdict(list)
    for node in graph.nodes:
        groups[node.deployment].append(node)
    return {name: groups[name] for name in sorted(groups, key=lambda n: (n is not None, n or ""))}


def _sorted(nodes: Iterable[Node]) -> tuple[Node, ...]:
    return tuple(sorted(nodes, key=lambda n: (_KIND_ORDER[n.kind], n.id)))


# -- Mermaid --------------------------------------------------------------------------------

_MERMAID_CLASSES = (
    "classDef dag fill:#e8f1fb,stroke:#1f6feb,color:#0b2e59",
    "classDef asset fill:#eaf6ec,stroke:#2da44e,color:#0f3d1c",
    "classDef external fill:#ffffff,stroke:#8c959f,stroke-dasharray:3 3,color:#57606a",
    "classDef paused fill:#eeeeee,stroke:#8c959f,stroke-dasharray:6 3,color:#57606a",
    "classDef stale fill:#fff1e5,stroke:#bc4c00,color:#3d1300",
    "classDef finding stroke:#d1242f,stroke-width:3px",
)


@gc_paused()
def to_mermaid(graph: LineageGraph) -> str:
    """A Mermaid flowchart, left to right: renders in GitHub and GitLab markdown as it is."""
    ids = {node.key: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = ["flowchart LR", f"  %% {graph.summary()}"]
    links: dict[str, list[str]] = defaultdict(list)  # a trigger's and a sensor's edges, by number
    for number, (deployment, nodes) in enumerate(_groups(graph).items()):
        indent = "  "
        if deployment is not None:  # a merged estate: each deployment's DAGs in a box of its own
            lines.append(f'  subgraph d{number}["deployment {_mermaid_text(deployment)}"]')
            indent = "    "
        for node in nodes:
            text = _mermaid_text(node.label())
            shape = f'[("{text}")]' if node.kind == "asset" else f'["{text}"]'
            lines.append(f"{indent}{ids[node.key]}{shape}")
        if deployment is not None:
            lines.append("  end")
    for number, (source, target) in enumerate(graph.edges):
        via = graph.via.get((source, target))
        if via in LINK_VIAS:
            links[via].append(str(number))
        line = (
            "==>"
            if (source, target) in graph.crossing
            else ("-.->" if via and via not in LINK_VIAS else "-->")
        )
        arrow = f"{line}|{_mermaid_text(via).replace('|', '#124;')}|" if via else line
        lines.append(f"  {ids[source]} {arrow} {ids[target]}")
    for via in LINK_VIAS:  # a trigger solid, a sensor dashed, both in the links' colour
        if links[via]:
            dash = ",stroke-dasharray:6 3" if via == "sensor" else ""
            lines.append(f"  linkStyle {','.join(links[via])} stroke:{_LINK_COLOUR},stroke-width:2px{dash}")
    lines.extend(f"  {line}" for line in _MERMAID_CLASSES)
    for cls, members in _classes(graph).items():
        if members:
            lines.append(f"  class {','.join(ids[key] for key in members)} {cls}")
    return "\n".join(lines)


def _mermaid_text(text: str) -> str:
    """Escape a label for a quoted Mermaid node: control characters as visible escapes (a line
    break would end the statement), entity codes for what would end or format it."""
    text = printable(text)
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("`", "#96;")):
        text = text.replace(char, code)
    return " ".join(text.split())


def _classes(graph: LineageGraph) -> dict[str, list[str]]:
    """Which nodes carry each style class; later classes win where Mermaid and CSS apply several."""
    classes: dict[str, list[str]] = {
        "dag": [],
        "asset": [],
        "external": [],
        "paused": [],
        "stale": [],
        "finding": [],
    }
    for node in graph.nodes:
        classes[node.kind].append(node.key)
        if node.paused:
            classes["paused"].append(node.key)
        if node.stale:
            classes["stale"].append(node.key)
        if node.findings:
            classes["finding"].append(node.key)
    return classes


# -- Graphviz DOT ---------------------------------------------------------------------------


@gc_paused()
def to_dot(graph: LineageGraph) -> str:
    """A Graphviz digraph (``dot -Tsvg``), left to right, node ids quoted as the identities."""
    lines = [
        "digraph lineage {",
        f"  // {graph.summary()}",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=11, shape=box, style="rounded,filled", '
        'fillcolor="#e8f1fb", color="#1f6feb"];',
        '  edge [color="#57606a"];',
    ]
    for number, (deployment, nodes) in enumerate(_groups(graph).items()):
        indent = "  "
        if deployment is not None:  # a merged estate: each deployment's DAGs in a cluster of its own
            lines.append(f"  subgraph cluster_{number} {{")
            lines.append(
                f'    label={_dot_string(f"deployment {deployment}")}; style="rounded,dashed"; '
                'color="#8250df"; fontname="Helvetica";'
            )
            indent = "    "
        lines.extend(f"{indent}{_dot_node(node)}" for node in nodes)
        if deployment is not None:
            lines.append("  }")
    for source, target in graph.edges:
        via = graph.via.get((source, target))
        if via in LINK_VIAS:
            dash = "bold,dashed" if via == "sensor" else "bold"
            style = [f'style="{dash}", color="{_LINK_COLOUR}", label={_dot_string(via)}']
        else:
            style = [f"style=dashed, label={_dot_string(via)}"] if via else []
        if (source, target) in graph.crossing:
            style.append('penwidth=2.5, color="#8250df"')
        edge_attrs = f" [{', '.join(style)}]" if style else ""
        lines.append(f"  {_dot_string(source)} -> {_dot_string(target)}{edge_attrs};")
    lines.append("}")
    return "\n".join(lines)


def _dot_node(node: Node) -> str:
    """A node statement: its label, and its shape and colours by kind and state."""
    attrs = {"label": node.label()}
    style = ["rounded", "filled"]
    if node.kind == "asset":
        attrs.update(shape="cylinder", fillcolor="#eaf6ec", color="#2da44e")
        style = ["filled"]
    elif node.kind == "external":
        attrs.update(fillcolor="#ffffff", color="#8c959f")
        style.append("dashed")
    if node.paused:
        attrs.update(fillcolor="#eeeeee", color="#8c959f", fontcolor="#57606a")
        style.append("dashed")
    if node.stale:
        attrs.update(fillcolor="#fff1e5")
    if node.findings:
        attrs.update(color="#d1242f", penwidth="2.5")
    attrs["style"] = ",".join(style)
    rendered = ", ".join(f"{name}={_dot_string(value)}" for name, value in attrs.items())
    return f"{_dot_string(node.key)} [{rendered}];"


def _dot_string(text: str) -> str:
    """A quoted DOT string: control characters as visible escapes (no raw line break), then
    backslashes and quotes escaped, so Graphviz shows ``\\n`` as written rather than breaking the label."""
    escaped = printable(text).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


# -- SVG ------------------------------------------------------------------------------------

_NODE_HEIGHT = 34.0
_CHAR_WIDTH = 7.0
_MAX_LABEL = 36

_SVG_STYLE = """
.coremodels-lineage text { font: 12px system-ui, -apple-system, "Segoe UI", sans-serif; fill: #1f2328; }
.coremodels-lineage .edge { fill: none; stroke: #8c959f; stroke-width: 1.4; }
.coremodels-lineage .edge.via { stroke-dasharray: 5 3; }
.coremodels-lineage .edge.cross { stroke: #8250df; stroke-width: 2.5; }
.coremodels-lineage .edge.trigger, .coremodels-lineage .edge.sensor { stroke: #bf8700; stroke-width: 2; }
.coremodels-lineage .edge.sensor { stroke-dasharray: 6 3; }
.coremodels-lineage .node rect { stroke-width: 1.5; }
.coremodels-lineage .dag rect { fill: #e8f1fb; stroke: #1f6feb; }
.coremodels-lineage .asset rect { fill: #eaf6ec; stroke: #2da44e; }
.coremodels-lineage .external rect { fill: #ffffff; stroke: #8c959f; stroke-dasharray: 3 3; }
.coremodels-lineage .paused rect { fill: #eeeeee; stroke: #8c959f; stroke-dasharray: 6 3; }
.coremodels-lineage .paused text, .coremodels-lineage .external text { fill: #57606a; }
.coremodels-lineage .stale rect { fill: #fff1e5; }
.coremodels-lineage .has-findings rect { stroke: #d1242f; stroke-width: 2.5; }
.coremodels-lineage .mark { font-size: 10px; fill: #57606a; }
.coremodels-lineage .has-findings .mark { fill: #d1242f; font-weight: 600; }
.coremodels-lineage .centre rect { stroke-width: 3; }
.coremodels-lineage .caption { fill: #57606a; font-style: italic; }
"""


def _node_size(node: Node) -> tuple[float, float]:
    return (max(90.0, min(len(printable(node.id)), _MAX_LABEL) * _CHAR_WIDTH + 24), _NODE_HEIGHT)


def layout(graph: LineageGraph) -> Layout:
    """The picture's layered layout: boxes sized to their labels, edges routed between layers."""
    keys = [node.key for node in graph.nodes]
    return layered_layout(keys, graph.edges, {node.key: _node_size(node) for node in graph.nodes})


def _short(text: str) -> str:
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "…"


def _path(route: tuple[Point, ...], direction: str) -> str:
    """A route as SVG path data: each step a curve that leaves and arrives along the direction."""
    (x, y), *rest = route
    out = [f"M{x:.1f},{y:.1f}"]
    for nx, ny in rest:
        if direction == "LR":
            bend = (nx - x) / 2
            out.append(f"C{x + bend:.1f},{y:.1f} {nx - bend:.1f},{ny:.1f} {nx:.1f},{ny:.1f}")
        else:
            bend = (ny - y) / 2
            out.append(f"C{x:.1f},{y + bend:.1f} {nx:.1f},{ny - bend:.1f} {nx:.1f},{ny:.1f}")
        x, y = nx, ny
    return " ".join(out)


def to_svg(graph: LineageGraph, note: str | None = None) -> str:
    """A self-contained inline ``<svg>``: styles included, every label escaped.

    Each node is a ``<g class="node <kind> [paused] [stale] [has-findings] [centre]" data-id=...>``
    with a ``<title>`` giving its full name and marks (long names are shortened on the box).
    Edges come first, so boxes are drawn over them, though the layout never routes an edge
    through a box that is not one of its ends. A node with links that are not drawn (outside
    a neighbourhood, or past its cap) says how many: ``+N``. A ``note`` (what the picture leaves
    out) is written above the drawing, in ``<text class="caption">`` lines.

    A graph denser than one layout takes raises ``core.layout.TooDense``: ``picture`` draws less.
    """
    return _svg(graph, layout(graph), note)


#: The caption's lines: their height, and about how wide a character of them is.
_CAPTION_LINE = 16.0
_CAPTION_CHAR = 6.4


@gc_paused()
def _svg(graph: LineageGraph, laid: Layout, note: str | None) -> str:
    # The page fits a picture to its frame when it opens: a caption as large as the picture is
    # over the frame (up to 4x) stays as legible as the labels at their own size.
    k = min(4.0, max(1.0, laid.width / FRAME[0], laid.height / FRAME[1]))
    chars = max(60, int((laid.width - 2 * MARGIN) / (_CAPTION_CHAR * k)))
    lines = _wrap(printable(note), chars) if note else []
    top = len(lines) * _CAPTION_LINE * k + (8.0 if lines else 0.0)
    if top:
        laid = _moved(laid, top)
    width = max([laid.width] + [2 * MARGIN + len(line) * _CAPTION_CHAR * k for line in lines])
    height = laid.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="coremodels-lineage" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" data-direction="{laid.direction}" '
        f'role="img" aria-label="{escape(printable(graph.summary()))}">',
        f"<style>{_SVG_STYLE}</style>",
        '<defs><marker id="coremodels-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#8c959f"/></marker></defs>',
    ]
    for i, line in enumerate(lines):
        y = MARGIN + (i + 0.75) * _CAPTION_LINE * k
        size = f' style="font-size: {12 * k:.1f}px"' if k > 1 else ""
        out.append(f'<text class="caption" x="{MARGIN:.0f}" y="{y:.1f}"{size}>{escape(line)}</text>')
    for source, target in graph.edges:
        via = graph.via.get((source, target))
        path = (
            f'd="{_path(laid.routes[(source, target)], laid.direction)}" marker-end="url(#coremodels-arrow)"'
        )
        kind = "edge" + (f" {via}" if via in LINK_VIAS else " via" if via else "")
        kind += " cross" if (source, target) in graph.crossing else ""
        ends = f'data-source="{escape(source)}" data-target="{escape(target)}"'
        if via:
            out.append(f'<path class="{kind}" {ends} {path}><title>{escape(printable(via))}</title></path>')
        else:
            out.append(f'<path class="{kind}" {ends} {path}/>')
    for node in graph.nodes:
        out.append(
            _svg_node(node, laid.boxes[node.key], graph.beyond.get(node.key, 0), node.key in graph.centre)
        )
    out.append("</svg>")
    return "\n".join(out)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken between words."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _moved(laid: Layout, dy: float) -> Layout:
    """The layout ``dy`` lower, in a picture ``dy`` taller (room for the caption above it)."""
    return replace(
        laid,
        height=laid.height + dy,
        boxes={key: box.moved(0.0, dy) for key, box in laid.boxes.items()},
        routes={edge: tuple((x, y + dy) for x, y in route) for edge, route in laid.routes.items()},
    )


def _svg_node(node: Node, box: Box, beyond: int, centre: bool) -> str:
    classes = ["node", node.kind]
    if node.paused:
        classes.append("paused")
    if node.stale:
        classes.append("stale")
    if node.findings:
        classes.append("has-findings")
    if centre:
        classes.append("centre")
    title = node.label() + (f": {', '.join(node.findings)}" if node.findings else "")
    if beyond:
        title += f" ({_plural(beyond, 'linked node')} not drawn)"
    flags = (
        ("paused", node.paused),
        ("external", node.kind == "external"),
        ("watched", node.watched),
        ("stale", node.stale),
    )
    marks = [mark for mark, on in flags if on]
    if node.findings:
        marks.append(f"⚠ {len(node.findings)}")
    if beyond:
        marks.append(f"+{beyond}")
    radius = 14 if node.kind == "asset" else 4
    shown = _short(printable(node.id))
    x, y = box.x, box.y
    parts = [
        f'<g class="{" ".join(classes)}" data-id="{escape(node.id)}" data-kind="{node.kind}">',
        f"<title>{escape(printable(title))}</title>",
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{box.width:.1f}" height="{box.height:.0f}" rx="{radius}"/>',
        f'<text x="{x + 10:.1f}" y="{y + (15 if marks else 21):.1f}">{escape(shown)}</text>',
    ]
    if marks:
        mark_text = escape(" · ".join(marks))
        parts.append(f'<text class="mark" x="{x + 10:.1f}" y="{y + 28:.1f}">{mark_text}</text>')
    parts.append("</g>")
    return "".join(parts)


# -- the picture the page draws and `lineage --format svg` writes -----------------------------

#: The most nodes one picture draws: past a few hundred boxes a picture is unreadable (and its
#: layout takes seconds), whatever the estate's size. A larger neighbourhood is cut to its
#: nearest nodes (``LineageGraph.neighbourhood``), and an estate larger than this is drawn
#: around its ``focus``.
MAX_NODES = 300
DEFAULT_DEPTH = 2


@dataclass(frozen=True, slots=True)
class Picture:
    """What one picture draws: the graph, its SVG, a caption, and a note when the picture is not
    all that was asked for (a neighbourhood cut at a cap, an estate drawn around a focus). The
    note is drawn on the picture too, above it."""

    graph: LineageGraph
    svg: str
    caption: str
    note: str | None = None


def picture(
    graph: LineageGraph, around: str | None = None, depth: int = DEFAULT_DEPTH, *, max_nodes: int = MAX_NODES
) -> Picture:
    """The picture of ``graph``, or of the neighbourhood of ``around`` within ``depth`` edges.

    The UI page and ``lineage --format svg`` both draw this, so they draw the same bytes. An
    unknown ``around`` raises ValueError (as ``neighbourhood`` does).

    It is bounded by boxes, edges and bends (``max_nodes``, ``core.layout.MAX_EDGES`` and
    ``MAX_BENDS``), so that it draws in well under two seconds whatever the estate's density: a
    whole estate over any of them is drawn around its ``focus``, and a neighbourhood over them is
    cut (first at ``max_nodes`` and ``MAX_EDGES``, then to fewer nodes until its layout's bends
    fit); the note says what was left out.
    """
    note = None
    kind: str | None = None
    laid: Layout | None = None
    shown = graph
    if around is None:
        over = _over(graph, max_nodes)
        if over is None:
            try:
                laid, shown = layout(graph), graph
            except TooDense as exc:
                over = _too_dense(exc)
        if over is not None:
            focus = graph.focus()
            assert focus is not None  # there are nodes
            why = "the node with the most severe open findings" if focus.findings else "the most linked node"
            note = (
                f"{over}: this is the neighbourhood of {printable(focus.id)!r} ({why}) at depth {depth}. "
                "Pick a DAG or asset to draw what surrounds it."
            )
            around, kind = focus.id, _kind_of(focus)
    cap = max_nodes
    if laid is None:
        assert around is not None
        shown, cap = _fitted(graph, around, depth, kind, max_nodes)
        laid = layout(shown)
    if shown.cut is not None:
        if cap < max_nodes and shown.cut.limit == "nodes":  # cut to fit the layout's bends
            shown = replace(shown, cut=replace(shown.cut, limit="bends"))
        assert shown.cut is not None
        note = " ".join(filter(None, (note, cut_note(shown.cut, around or "", max_nodes))))
    caption = (
        f"Around {printable(around)!r}, depth {depth}: " if around is not None else ""
    ) + shown.summary()
    return Picture(shown, _svg(shown, laid, note), caption, note)


#: Rankings (a small part of a layout's cost) spent looking for the most nodes whose bends fit.
_FIT_STEPS = 2


def _fitted(
    graph: LineageGraph, around: str, depth: int, kind: str | None, max_nodes: int
) -> tuple[LineageGraph, int]:
    """The neighbourhood to draw, and the node cap that made it: cut at ``max_nodes`` and
    ``MAX_EDGES``, then, while its layout would place more than ``MAX_BENDS`` bends, at fewer
    nodes. Bends grow about as the square of the nodes, which guesses the next cap; a few more
    rankings then move it up between the largest cap that fits and the smallest that does not."""

    def cut(cap: int) -> tuple[LineageGraph, int]:
        shown = graph.neighbourhood(around, depth, kind=kind, max_nodes=cap, max_edges=MAX_EDGES)
        return shown, bends([node.key for node in shown.nodes], shown.edges)

    cap = max_nodes
    shown, count = cut(cap)
    over: int | None = None  # the smallest cap known to be too dense
    while count > MAX_BENDS:  # at one node there are none: this ends
        over = min(cap, len(shown.nodes))
        cap = max(1, min(int(len(shown.nodes) * 0.9 * (MAX_BENDS / count) ** 0.5), over - 1))
        shown, count = cut(cap)
    best = (shown, cap)
    for _ in range(_FIT_STEPS):
        if over is None or len(shown.nodes) < cap or over - cap <= max(2, over // 20):
            break  # nothing was cut for bends, the neighbourhood is all there is, or close enough
        middle = (cap + over) // 2
        shown, count = cut(middle)
        if count > MAX_BENDS:
            over = middle
        else:
            cap, best = middle, (shown, middle)
        shown = best[0]
    return best


def _over(graph: LineageGraph, max_nodes: int) -> str | None:
    """What a whole estate has over one picture's nodes or edges, or None when it fits."""
    if len(graph.nodes) > max_nodes:
        return f"The whole estate has {len(graph.nodes):,} nodes, over the {max_nodes} one picture draws"
    if len(graph.edges) > MAX_EDGES:
        return f"The whole estate has {len(graph.edges):,} edges, over the {MAX_EDGES} one picture draws"
    return None


def _too_dense(exc: TooDense) -> str:
    return (
        f"The whole estate's edges bend through {exc.bends or 0:,} layers in all, over the "
        f"{MAX_BENDS:,} one picture draws"
    )


def cut_note(cut: Cut, around: str, max_nodes: int) -> str:
    """What a neighbourhood cut at a cap leaves out, in a sentence."""
    nearer = f"all within depth {cut.distance - 1} and " if cut.distance > 1 else ""
    holds = {
        "nodes": f"holds more than the {max_nodes} nodes one picture draws",
        "edges": f"has more than the {MAX_EDGES} edges one picture draws",
        "bends": (
            f"is too dense for one picture (its edges would bend through more than {MAX_BENDS:,} "
            "layers in all)"
        ),
    }[cut.limit]
    return (
        f"The neighbourhood of {printable(around)!r} at depth {cut.depth} {holds}: drawn are {nearer}"
        f"{cut.drawn:,} of the {cut.found:,} at distance {cut.distance}; a box marked +N has N "
        "links to nodes not drawn."
    )


def _kind_of(node: Node) -> str:
    return "asset" if node.kind == "asset" else "dag"
