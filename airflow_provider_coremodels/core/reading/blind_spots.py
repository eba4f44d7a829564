"""What the API cannot see, said once per blind spot rather than guessed.

Each function reads what a parse already has (the asset objects, the lineage, the DAGs) and
returns its lossiness records; where a finding depends on what is unseen, the estate says so on
the dataset concerned (``airflow.watched`` = ``unknown``) and the finding's detail repeats it.

- Watchers (event-driven triggers that update an asset): ``GET /assets`` lists them from Airflow
  3.2, and even then only while some DAG scheduled on the asset is unpaused (Airflow registers an
  asset's watchers with its first unpaused scheduled DAG).
- Task inlets: ``consuming_tasks`` appears in Airflow 3.1; Airflow 2 and 3.0 do not list them.
- An ``@asset`` function's inputs are its parameters, read by name at run time (``Asset.ref``
  inlets): no endpoint lists them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

from airflow_provider_coremodels.core.estate.model import (
    VIA_INFERRED,
    VIA_INLET,
    WATCHED_KEY,
    WATCHED_UNKNOWN,
    Dataset,
    Edge,
    Field,
    Lossiness,
)
from airflow_provider_coremodels.core.estate.text import quoted_some as _some

_NATIVE_TYPE = attrgetter("native_type")

#: The task class behind an ``@asset`` function (``airflow.sdk``): its DAG is named after the asset.
ASSET_FUNCTION_CLASS = "_AssetMainOperator"


_READS = (VIA_INLET, VIA_INFERRED)


def unseen_watchers(
    entries: list[Any],
    assets: dict[str, Dataset],
    edges: Iterable[Edge],
    paused: Mapping[str, bool],
) -> list[Lossiness]:
    """Mark the assets whose watchers the API cannot tell (in ``assets``, in place), and say so.

    Only an asset some DAG is scheduled on can have a watcher at work. Where the asset objects
    carry ``watchers`` (Airflow 3.2+), an asset whose scheduled DAGs are all paused has none
    registered, whatever its code declares; where they do not, no asset's are known. Call it for
    Airflow 3 only: Airflow 2 has no watchers.
    """
    scheduled: dict[str, list[str]] = {}
    for edge in edges:
        # a task inlet or an inferred read schedules nothing, so no watcher works for it
        if not edge.dag_link and not edge.producing and edge.via not in _READS and not edge.external:
            scheduled.setdefault(edge.asset, []).append(edge.dag_id)
    listed = any("watchers" in raw for raw in entries if isinstance(raw, dict))
    unknown = []
    for uri, dag_ids in scheduled.items():
        asset = assets.get(uri)
        if asset is None or asset.metadata.get(WATCHED_KEY) == "true":
            continue
        if not listed or all(paused.get(dag_id, False) for dag_id in dag_ids):
            assets[uri] = dataclasses.replace(
                asset, metadata={**asset.metadata, WATCHED_KEY: WATCHED_UNKNOWN}
            )
            unknown.append(uri)
    if not unknown:
        return []
    if not listed:
        why = (
            "this Airflow's API lists no asset watchers (GET /assets has them from Airflow 3.2), so an "
            "asset an event-driven trigger updates may be reported as having no producer or as stale"
        )
    else:
        why = (
            "every DAG scheduled on them is paused, and Airflow registers an asset's watchers only "
            "while a DAG scheduled on it is unpaused"
        )
    return [Lossiness("datasets", f"watchers of {_count(unknown, 'asset')} unknown: {why}: {_some(unknown)}")]


def unseen_inlets(entries: list[Any]) -> list[Lossiness]:
    """Task inlets, where the asset objects do not list them (Airflow 2 and 3.0)."""
    assets = [raw for raw in entries if isinstance(raw, dict)]
    if not assets or any("consuming_tasks" in raw for raw in assets):
        return []
    return [
        Lossiness(
            "datasets",
            "task inlets unknown: this Airflow's API lists no consuming_tasks (they appear in Airflow 3.1), "
            "so a DAG that reads an asset only through a task inlet is not among its consumers",
        )
    ]


def unseen_asset_inputs(dag_fields: Mapping[str, Mapping[str, Field]]) -> list[Lossiness]:
    """The ``@asset`` functions, whose inputs (their parameters, read by name) no endpoint lists."""
    functions = sorted(
        dag_id
        for dag_id, fields in dag_fields.items()
        if ASSET_FUNCTION_CLASS in map(_NATIVE_TYPE, fields.values())  # every task: kept in C
    )
    if not functions:
        return []
    return [
        Lossiness(
            "dags",
            "the inputs of @asset functions (their parameters, read by name at run time) appear in no "
            f"endpoint: what {_some(functions)} read is unknown",
        )
    ]


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"
