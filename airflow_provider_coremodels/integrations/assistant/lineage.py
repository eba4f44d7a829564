"""Lineage and impact: the neighbourhood of a DAG or asset (as ``lineage --around`` draws it), and
everything downstream (or upstream) of one, transitively, as ``impact`` and ``downstream_impact`` answer."""

from __future__ import annotations

from collections import Counter, deque

from airflow_provider_coremodels.core.checks.teams import UNOWNED, owners, teams_from_json
from airflow_provider_coremodels.core.estate.model import ASSET, DAG
from airflow_provider_coremodels.core.views.lineage import LINK_VIAS, LineageGraph, Node, to_mermaid
from airflow_provider_coremodels.integrations.assistant.answers import (
    _KIND_ORDER,
    DEFAULT_LIMIT,
    INNER_LIMIT,
    JSON,
    MAX_DEPTH,
    MERMAID_MAX_CHARS,
    MERMAID_MAX_NODES,
    Kind,
    QueryError,
    _edge_json,
    _key,
    _node_json,
    page,
)
from airflow_provider_coremodels.integrations.assistant.index import (
    SnapshotIndex,
)


class LineageQuestions(SnapshotIndex):
    """``lineage``, ``neighbourhood`` and ``impact``, asked of the shared index."""

    # -- lineage -------------------------------------------------------------------------

    def lineage(
        self,
        identity: str,
        *,
        depth: int = 2,
        kind: Kind | None = None,
        mermaid: bool = False,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """The neighbourhood of a DAG or asset within ``depth`` edges, as ``lineage --around`` draws it."""
        identity = self._canonical(identity)
        around = self.neighbourhood(identity, depth, kind=kind)
        graph = self._graph()
        kinds = {node.key: node.kind for node in around.nodes}
        answer: JSON = {
            "center": identity,
            "depth": depth,
            "summary": around.summary(),
            "nodes": page(around.nodes, offset, limit, _node_json),
            "edges": page(
                around.edges,
                offset,
                limit,
                lambda edge: _edge_json(edge, kinds, graph),
            ),
        }
        if mermaid:
            if len(around.nodes) > MERMAID_MAX_NODES:
                answer["mermaid"] = None
                answer["mermaidOmitted"] = (
                    f"{len(around.nodes)} nodes, over the {MERMAID_MAX_NODES} a drawing can show: "
                    "ask for a smaller depth"
                )
            else:
                drawn = to_mermaid(around)
                answer["mermaid"] = drawn if len(drawn) <= MERMAID_MAX_CHARS else None
                if answer["mermaid"] is None:
                    answer["mermaidOmitted"] = (
                        f"{len(drawn):,} characters, over the {MERMAID_MAX_CHARS:,} a drawing may hold"
                    )
        return answer

    def neighbourhood(self, identity: str, depth: int = 2, *, kind: Kind | None = None) -> LineageGraph:
        """``LineageGraph.neighbourhood``, with an unknown identity answered as a ``QueryError``."""
        graph = self._graph()
        if not 0 <= depth <= MAX_DEPTH:
            raise QueryError(f"depth must be 0 to {MAX_DEPTH}, got {depth}")
        known = any(
            (kind is None or kind == of) and key in self._nodes()
            for key, of in ((_key("dag", identity), DAG), (_key("asset", identity), ASSET))
        )
        if not known and not (identity in graph.hidden_dags and kind in (None, DAG)):
            raise self._unknown(identity, kind)
        return graph.neighbourhood(identity, depth, kind=kind)

    # -- impact --------------------------------------------------------------------------

    def impact(
        self,
        identity: str,
        *,
        kind: Kind | None = None,
        depth: int | None = None,
        offset: int = 0,
        limit: int | None = DEFAULT_LIMIT,
        upstream: bool = False,
    ) -> JSON:
        """Everything downstream of a DAG or asset, transitively: the assets it feeds, the DAGs that
        consume those, the DAGs it triggers or that wait on it (``via``), and on; each with its
        distance and whether it is paused. What the MCP tool ``downstream_impact`` answers and the
        ``impact`` command prints.

        ``upstream`` walks the other way, against the data: what it depends on (the assets it
        reads, the DAGs that produce them, the DAG it waits on or is triggered by, and on), with
        no independent producers (every producer upstream is in the walk). ``limit=None`` puts
        every affected node on the one page (the command line's answer, never an assistant's).
        """
        graph = self._graph()
        identity = self._canonical(identity)
        if depth is not None and depth < 1:
            raise QueryError(f"depth must be 1 or more (or left out for no limit), got {depth}")
        found = self._resolve(identity, kind)
        start = _key(DAG if found == "external" else found, identity)
        start_node = graph.node(start) if start in self._nodes() else None
        reached: dict[str, tuple[int, str]] = {start: (0, "")}
        queue = deque([start])
        while queue:
            key = queue.popleft()
            distance = reached[key][0]
            if depth is not None and distance == depth:
                continue
            for target in (self._in if upstream else self._out).get(key, ()):
                if target not in reached:
                    reached[target] = (distance + 1, key)
                    queue.append(target)
        del reached[start]
        affected = sorted(
            (graph.node(key) for key in reached), key=lambda n: (reached[n.key][0], _KIND_ORDER[n.kind], n.id)
        )
        chain = set(reached) | {start}
        kinds = Counter(node.kind for node in affected)
        dags = [node for node in affected if node.kind == "dag"]
        policy = self.head.policy
        teams = teams_from_json(policy.get("teams")) if isinstance(policy, dict) else None

        def whose(out: JSON) -> JSON:
            """A DAG the estate describes: its owners, and its team where the rules name teams."""
            dataset = self._datasets.get(out["identity"], {}).get(DAG) if out["kind"] == "dag" else None
            if dataset is not None:
                out["owners"] = owners(dataset)
                out["team"] = (teams.team_of(dataset) or UNOWNED) if teams is not None else None
            return out

        def item(node: Node) -> JSON:
            distance, came_from = reached[node.key]
            out = whose(_node_json(node))
            out["distance"] = distance
            out["reachedFrom"] = graph.node(came_from).id
            edge = (node.key, came_from) if upstream else (came_from, node.key)  # as the data runs
            if (link := graph.via.get(edge)) in LINK_VIAS:
                out["via"] = link  # triggered by, or waiting on, the DAG it was reached from
            if node.kind == "asset" and not upstream:
                independent = sorted(
                    graph.node(p).id
                    for p in self._in.get(node.key, ())
                    if p not in chain and graph.node(p).kind == "dag" and not graph.node(p).paused
                )
                out["independentActiveProducers"] = independent[:INNER_LIMIT]
                out["independentActiveProducersTotal"] = len(independent)
            return out

        if start_node is not None:
            start_json = whose(_node_json(start_node))
        else:  # a DAG without asset lineage: nothing lies downstream of it
            start_json = whose({"identity": identity, "kind": found, "paused": self._paused(identity, found)})
        return {
            "start": start_json,
            "direction": "upstream" if upstream else "downstream",
            "depth": depth,
            "summary": {
                "assets": kinds["asset"],
                "dags": kinds["dag"],
                "activeDags": sum(1 for node in dags if not node.paused),
                "pausedDags": sum(1 for node in dags if node.paused),
                "externalDags": kinds["external"],
                "maxDistance": max((reached[n.key][0] for n in affected), default=0),
            },
            "affected": page(affected, offset, limit, item)
            if limit is not None
            else page(affected, 0, max(len(affected), 1), item, most=None),
        }

    def _paused(self, identity: str, kind: str) -> bool:
        dataset = self._datasets.get(identity, {}).get(kind)
        return bool(dataset and dataset.paused)
