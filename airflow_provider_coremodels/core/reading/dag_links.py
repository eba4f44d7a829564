"""Links between DAGs beyond assets: triggers (``TriggerDagRunOperator``) and sensors
(``ExternalTaskSensor``, deferrable or not), read from Airflow's dependency graph.

The graph (``GET /ui/dependencies``, Airflow 3.0 and later, riding in the datasets artifact as
``dependencies``; the DAG-folder parse gives the same shape from the serialized DAGs'
``dag_dependencies``) names each such task by a node between two DAG nodes:
``trigger:<triggering dag>:<triggered dag>:<task_id>`` and ``sensor:<dag waited for>:<waiting
dag>:<task_id>``. Airflow writes the target as the code gives it, before any template is rendered:
a target that is no DAG id (``{{ params.target }}``) is known only at run time, and is one
lossiness record naming the task, never an edge. A trigger or sensor task (by its operator class)
that no graph node names is one record too: the graph hides it (a mapped target; on Airflow 3.3 a
DAG the capture user may not read, which a DAG that does not exist is to it) or there is no graph.

A known target is an edge between two DAGs (the triggered or waiting DAG depends on the other), and
the DAG that owns the task keeps, in its metadata (``DAG_LINKS_KEY``), which task links where, so
that the audit can name the task in ``dag-link-missing`` and ``dag-link-paused``, on a stored
snapshot as on a fresh capture.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from airflow_provider_coremodels.core.estate.findings import Finding
from airflow_provider_coremodels.core.estate.model import (
    DAG,
    DAG_LINKS_KEY,
    VIA_SENSOR,
    VIA_TRIGGER,
    Dataset,
    Edge,
    Field,
    Lossiness,
)
from airflow_provider_coremodels.core.estate.rules import make_finding
from airflow_provider_coremodels.core.estate.text import cut, printable, utf8_safe

#: The graph's node kinds for links between DAGs.
LINK_PREFIXES = ("trigger:", "sensor:")
#: The operator classes whose link the graph should show: a task of one that no node names is unseen.
_LINK_CLASSES = {
    "TriggerDagRunOperator": VIA_TRIGGER,
    "ExternalTaskSensor": VIA_SENSOR,
    "ExternalTaskSensorAsync": VIA_SENSOR,
}
#: What Airflow accepts as a DAG id (``KEY_REGEX``): anything else is a template or no id at all.
_DAG_ID = re.compile(r"[\w.-]{1,250}")
_ROLE = {VIA_TRIGGER: "trigger", VIA_SENSOR: "sensor"}


@dataclass(frozen=True, slots=True)
class Link:
    """One trigger or sensor task: the DAG that owns it, its task id, and the DAG it names."""

    via: str
    dag_id: str
    task_id: str
    target: str

    @property
    def task(self) -> str:
        return f"{self.dag_id}.{self.task_id}"

    def edge(self, *, external: bool) -> Edge:
        if self.via == VIA_TRIGGER:  # the triggered DAG depends on the triggering one
            return Edge.link(self.target, self.dag_id, VIA_TRIGGER, external=external)
        return Edge.link(self.dag_id, self.target, VIA_SENSOR, external=external)  # waits on target


def link_of(node: str) -> Link | None:
    """The link a graph node names, or None for another kind of node (or one that cannot be read).

    The task id and the owning DAG's id hold no colon (Airflow refuses one), so what is left between
    them is the target exactly as the code wrote it, colons and all.
    """
    kind, _, rest = node.partition(":")
    via = VIA_TRIGGER if kind == "trigger" else VIA_SENSOR if kind == "sensor" else None
    head, _, task_id = rest.rpartition(":")
    if via is None or not head or not task_id:
        return None
    if via == VIA_TRIGGER:
        dag_id, _, target = head.partition(":")
    else:
        target, _, dag_id = head.rpartition(":")
    if not dag_id or not target:
        return None
    return Link(via, dag_id, task_id, target)


def graph_links(doc: object) -> list[Link] | None:
    """Every trigger and sensor node of the dependency graph in a datasets artifact (None: no graph)."""
    graph = doc.get("dependencies") if isinstance(doc, dict) else None
    edges = graph.get("edges") if isinstance(graph, dict) else None
    if not isinstance(edges, list):
        return None
    nodes = set()
    for edge in edges:
        if isinstance(edge, dict):
            for end in (edge.get("source_id"), edge.get("target_id")):
                if isinstance(end, str) and end.startswith(LINK_PREFIXES):
                    nodes.add(end)
    return [link for node in sorted(nodes) if (link := link_of(node)) is not None]


def read_links(
    doc: object,
    fields: Mapping[str, Mapping[str, Field]],
    running: Collection[str],
    dag_ids: Collection[str],
    *,
    why_none: str,
) -> tuple[list[Edge], dict[str, str], list[Lossiness]]:
    """The edges of the graph's links whose target is a DAG id, the ``DAG_LINKS_KEY`` text of each
    DAG that owns one, and one record per trigger or sensor task whose target is not known.

    ``fields`` are the DAGs' tasks, ``running`` the DAGs that run (a link of a broken or gone DAG
    does not fire, and is left out), ``dag_ids`` every DAG the estate has (a target outside it is
    an external edge, and ``dag-link-missing``); ``why_none`` says why there is no graph, if none.
    """
    links = graph_links(doc)
    edges: dict[tuple[str, str, str, str], Edge] = {}
    owned: dict[str, list[dict[str, str]]] = {}
    records: list[Lossiness] = []
    seen: set[tuple[str, str]] = set()
    for link in links or ():
        if link.dag_id not in running:
            continue
        seen.add((link.dag_id, link.task_id))
        if not _DAG_ID.fullmatch(link.target):
            records.append(_templated(link))
            continue
        if link.target == link.dag_id:
            continue  # a sensor on the DAG's own earlier run: no link between two DAGs
        edge = link.edge(external=link.target not in dag_ids)
        edges.setdefault(edge.key, edge)  # a sensor and a trigger of one pair: one edge, the first
        owned.setdefault(link.dag_id, []).append({"dag": link.target, "task": link.task_id, "via": link.via})
    for dag_id in sorted(running):
        for name, task in sorted(fields.get(dag_id, {}).items()):
            via = _LINK_CLASSES.get(task.native_type)
            if via is not None and (dag_id, name) not in seen:
                records.append(
                    _unseen(
                        via,
                        dag_id,
                        name,
                        "no dependency graph was read: " + why_none if links is None else None,
                    )
                )
    metadata = {
        dag_id: utf8_safe(
            json.dumps(
                sorted(found, key=lambda x: (x["task"], x["via"], x["dag"])),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            )
        )
        for dag_id, found in owned.items()
    }
    return [edges[key] for key in sorted(edges)], metadata, records


def no_graph(api: str | None, usable: bool) -> str:
    """Why a datasets artifact gives no dependency graph to read the links from."""
    if api == "v1":
        return "Airflow 2 serves none, so triggers and sensors are unseen there"
    if not usable:
        return "the datasets artifact was not read"
    return "the datasets artifact carries none (GET /ui/dependencies)"


def _templated(link: Link) -> Lossiness:
    return Lossiness(
        "datasets",
        f"the {_ROLE[link.via]} task '{link.task}' names its DAG by a template or a value that is no DAG "
        f"id ({printable(cut(link.target, 200))!r}): it is known only when the task runs, so no lineage "
        "edge is drawn for it",
        link.task,
    )


def _unseen(via: str, dag_id: str, task_id: str, why: str | None) -> Lossiness:
    because = why or (
        "the dependency graph does not show it (a mapped or templated target, or, on Airflow 3.3, "
        "a DAG the capture user may not read, as a DAG that does not exist is to it)"
    )
    return Lossiness(
        "datasets",
        f"the DAG the {_ROLE[via]} task '{dag_id}.{task_id}' links to is not known: {because}; "
        "no lineage edge is drawn for it",
        f"{dag_id}.{task_id}",
    )


def owned_links(dag: Dataset) -> list[tuple[str, str, str]]:
    """A DAG's trigger and sensor tasks with a known target: (task_id, via, target dag_id)."""
    text = dag.metadata.get(DAG_LINKS_KEY)
    if not text:
        return []
    try:
        found = json.loads(text)
    except ValueError:
        return []  # a hand-edited document: nothing this version can read
    if not isinstance(found, list):
        return []
    return [
        (item["task"], item["via"], item["dag"])
        for item in found
        if isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("task", "via", "dag"))
    ]


def _prefix(dag: Dataset) -> str:
    """What a merged estate puts before a dag_id (``<deployment>/``); empty for one deployment."""
    if dag.maps_to and dag.identity.endswith(dag.maps_to):
        return dag.identity[: len(dag.identity) - len(dag.maps_to)]
    return ""


def link_findings(dags: Mapping[str, Dataset], skipped: Iterable[str] = ()) -> Iterator[Finding]:
    """``dag-link-missing`` and ``dag-link-paused`` for the DAGs' triggers and sensors; ``dags`` by
    identity, ``skipped`` the DAGs whose code is not the team's (Airflow's examples)."""
    skip = set(skipped)
    for identity in sorted(dags):
        dag = dags[identity]
        if identity in skip:
            continue
        for task_id, via, target in owned_links(dag):
            subject = f"{identity}.{task_id}"
            other = dags.get(_prefix(dag) + target)
            verb = "triggers" if via == VIA_TRIGGER else "waits on"
            if other is None or other.materialization != DAG:
                yield make_finding(
                    "dag-link-missing", subject, f"{verb} DAG {target}, which the estate does not have"
                )
            elif other.paused and dag.metadata.get("airflow.paused") == "false":
                yield make_finding("dag-link-paused", subject, f"{verb} DAG {target}, which is paused")


def describe(edge: Edge) -> str:
    """A link between two DAGs in words, for the views (``edge.dag_link`` only)."""
    if edge.via == VIA_TRIGGER:
        return f"DAG {edge.depends_on} triggers DAG {edge.dependent}"
    return f"DAG {edge.dependent} waits on DAG {edge.depends_on} (sensor)"
