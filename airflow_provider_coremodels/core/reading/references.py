"""Airflow's asset references, checked against what the DAGs' code declares now.

``GET /assets`` names each asset's producers (``producing_tasks``), the DAGs scheduled on it
(``scheduled_dags``) and its task inlets (``consuming_tasks``) from reference rows that the DAG
processor updates when it parses a file, but only when the file declares some asset: a DAG that
loses its only outlet, or a schedule on assets, keeps the old reference indefinitely, and its
consumers would seem to have a producer nobody runs.

The dependency graph Airflow's UI draws (``GET /ui/dependencies``, Airflow 3.0 and later) is read
from the serialized DAGs, which every parse rewrites: an edge from a DAG to an asset is an outlet
its code declares, one from an asset to a DAG a schedule. The capture reads it once (one request),
riding in the datasets artifact as ``dependencies``; a producing or scheduling reference of a DAG
that runs, with no such edge, outlived the code and is not counted. Task inlets appear in no
graph, so they cannot be checked directly: but Airflow refreshes every reference of a file whose
DAGs declare some asset, so an inlet of a DAG whose file shows an outlet or a schedule in the
graph is current; the others rest on Airflow's references alone, and a record says so. Where
there is no graph (a hand-made artifact, a server that refused it), nothing can be checked, and a
record says that. Airflow 2 deletes a reference its code dropped (dev/versions/API_FACTS.md), so
it needs no check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_coremodels.core.estate.model import INLETS_UNCONFIRMED, Lossiness

#: What the capture adds to the datasets artifact: ``GET /ui/dependencies``, its edges.
DEPENDENCIES = "dependencies"
#: The graph's node kinds the check reads; triggers and sensors join DAG to DAG (``dag_links.py``).
_ASSET_PREFIXES = ("dag:", "asset:", "asset-alias:", "asset-name-ref:", "asset-uri-ref:")
_LINK_PREFIXES = ("trigger:", "sensor:")
_READ_PREFIXES = (*_ASSET_PREFIXES, *_LINK_PREFIXES)


class DeclaredEdges:
    """The graph's DAG-asset edges, by asset id: outlets (DAG to asset) and schedules (asset to
    DAG), directly or through one alias or reference node between them."""

    def __init__(self, edges: Iterable[tuple[str, str]]) -> None:
        forward: dict[str, set[str]] = {}
        for source, target in edges:
            forward.setdefault(source, set()).add(target)
        self._forward = forward
        #: The DAGs whose code declares some outlet or schedule (on an asset, alias or reference).
        self.dags_with_assets: set[str] = set()
        for source, targets in forward.items():
            if not source.startswith("dag:"):
                self.dags_with_assets.update(t for t in targets if t.startswith("dag:"))
            elif any(not t.startswith("dag:") for t in targets):
                self.dags_with_assets.add(source)

    def declares(self, source: str, target: str) -> bool:
        """Whether the graph leads from ``source`` to ``target`` in one step, or two through a node
        that is neither a DAG nor an asset (an alias, an ``Asset.ref``)."""
        following = self._forward.get(source, set())
        if target in following:
            return True
        return any(
            target in self._forward.get(middle, ())
            for middle in following
            if not middle.startswith(("dag:", "asset:"))
        )


def read_graph(doc: Any) -> DeclaredEdges | None:
    """The dependency graph riding in the datasets artifact, or None where there is none to read."""
    graph = doc.get(DEPENDENCIES) if isinstance(doc, dict) else None
    edges = graph.get("edges") if isinstance(graph, dict) else None
    if not isinstance(edges, list):
        return None
    pairs = []
    for edge in edges:
        if isinstance(edge, dict):
            source, target = edge.get("source_id"), edge.get("target_id")
            if (
                isinstance(source, str)
                and isinstance(target, str)
                and not (source.startswith(_LINK_PREFIXES) or target.startswith(_LINK_PREFIXES))
            ):
                pairs.append((source, target))
    return DeclaredEdges(pairs)


def reduce_graph(body: Any) -> Any:
    """The graph as the capture keeps it: its edges between DAGs, assets, aliases, references,
    triggers and sensors."""
    edges = body.get("edges") if isinstance(body, dict) else None
    if not isinstance(edges, list):
        return body
    return {
        "edges": [
            {"source_id": e["source_id"], "target_id": e["target_id"]}
            for e in edges
            if isinstance(e, dict)
            and str(e.get("source_id")).startswith(_READ_PREFIXES)
            and str(e.get("target_id")).startswith(_READ_PREFIXES)
        ]
    }


def outlived(
    graph: DeclaredEdges, asset_ids: Mapping[str, Any], dag_id: str, uri: str, *, producing: bool
) -> bool:
    """Whether a producing (or scheduling) reference of a DAG that runs is absent from its code."""
    asset_id = asset_ids.get(uri)
    if asset_id is None:
        return False  # no id to look the asset up by: nothing to say
    dag, asset = f"dag:{dag_id}", f"asset:{asset_id}"
    return not (graph.declares(dag, asset) if producing else graph.declares(asset, dag))


def outlived_records(dropped: Mapping[str, Mapping[str, set[str]]]) -> list[Lossiness]:
    """One record per DAG whose references outlived its code, naming what was not counted."""
    records = []
    for dag_id in sorted(dropped):
        roles = dropped[dag_id]
        said = "; ".join(
            f"{role} of {', '.join(repr(uri) for uri in sorted(roles[role]))}"
            for role in ("producer", "consumer")
            if role in roles
        )
        records.append(
            Lossiness(
                "datasets",
                f"Airflow lists DAG '{dag_id}' as {said}, but its code no longer declares it (the "
                "dependency graph, drawn from the serialized DAGs, has no such edge): a reference that "
                "outlived the code, not counted as lineage",
                dag_id,
            )
        )
    return records


#: How the record that nothing was checked begins (the capture writes one saying why).
UNCHECKED = "asset references not checked against the DAGs' code"


def unchecked_record(why: str) -> Lossiness:
    return Lossiness(
        "datasets",
        f"{UNCHECKED} ({why}): Airflow keeps a producing or "
        "scheduling reference after the code drops it when the file declares no other asset, so a "
        "producer here may no longer produce",
    )


def inlets_record(dag_id: str) -> Lossiness:
    """An inlet of a DAG whose file shows no outlet or schedule in the graph (or with no graph)."""
    return Lossiness(
        "datasets",
        f"{INLETS_UNCONFIRMED}: DAG '{dag_id}' declares no other asset, and Airflow keeps an inlet "
        "reference after the code drops it when the file declares no other asset; no endpoint shows "
        "a DAG's current inlets",
        dag_id,
    )
