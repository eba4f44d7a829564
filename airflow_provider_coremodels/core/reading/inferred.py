"""Lineage nobody declared, into the estate (contract 10.3).

The datasets artifact of a DAG-folder parse may carry ``"inferred": [{"dag_id", "task_id",
"role", "uri"}]``: the tables and objects a task's SQL or transfer operator reads (``reads``) or
writes (``writes``), read off its code (``capture/lineage_inference.py``). Each URI becomes an
asset, the same one as a declared asset of that URI; each task's DAG produces what it writes and
consumes what it reads, on edges that carry ``via: "inferred"`` and ``source: "<dag_id>.<task_id>"``.
A declared edge of the same key is kept instead: what a DAG says of itself wins.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

from airflow_provider_coremodels.core.estate.model import ASSET, VIA_INFERRED, Dataset, Edge, Lossiness

#: An asset that only inference knows carries this key ("true"), so a reader tells it from a declared one.
INFERRED_KEY = "coremodels.inferred"
_ROLES = ("reads", "writes")


class Lineage(Protocol):
    """What ``read_inferred`` needs of the estate's lineage being built (``parse._Lineage``)."""

    described: set[str]

    def produces(self, dag_id: str, uri: str, via: str | None = None, source: str | None = None) -> None: ...

    def consumes(self, dag_id: str, uri: str, via: str | None = None, source: str | None = None) -> None: ...

    def has_producer(self, dag_id: str, uri: str) -> bool: ...


def rows(raw: Any, records: list[Lossiness]) -> list[tuple[str, str, str, str]]:
    """The well-formed entries as ``(dag_id, task_id, role, uri)``; one record for those skipped."""
    if not isinstance(raw, list):
        records.append(
            Lossiness("datasets", "the datasets artifact's inferred lineage is not a list: ignored")
        )
        return []
    out: list[tuple[str, str, str, str]] = []
    skipped = 0
    for entry in raw:
        fields = (
            [entry.get(k) for k in ("dag_id", "task_id", "role", "uri")] if isinstance(entry, dict) else []
        )
        if len(fields) == 4 and all(isinstance(f, str) and f for f in fields) and fields[2] in _ROLES:
            out.append((str(fields[0]), str(fields[1]), str(fields[2]), str(fields[3])))
        else:
            skipped += 1
    if skipped:
        records.append(
            Lossiness("datasets", f"{skipped} entries of the inferred lineage are misshapen: skipped")
        )
    return sorted(set(out))


def read_inferred(
    raw: Any,
    lineage: Lineage,
    assets: MutableMapping[str, Dataset],
    records: list[Lossiness],
    name_of: Callable[[str], str],
) -> None:
    """Add the inferred assets (those no declaration made) and edges; a DAG reads through an
    inferred edge only what it does not itself write (no DAG -> table -> same DAG loop)."""
    found = [row for row in rows(raw, records) if row[0] in lineage.described]
    for _, _, _, uri in found:
        if uri not in assets:
            assets[uri] = Dataset(
                identity=uri,
                name=name_of(uri),
                materialization=ASSET,
                physical_name=uri,
                metadata={INFERRED_KEY: "true"},
            )
    for dag_id, task_id, role, uri in found:
        if role == "writes":
            lineage.produces(dag_id, uri, via=VIA_INFERRED, source=f"{dag_id}.{task_id}")
    for dag_id, task_id, role, uri in found:
        if role == "reads" and not lineage.has_producer(dag_id, uri):
            lineage.consumes(dag_id, uri, via=VIA_INFERRED, source=f"{dag_id}.{task_id}")


def inferred_note(edges: Any) -> str:
    """``; inferred from <dag_id>.<task_id>, ...`` for the inferred ones among ``edges``, else ""."""
    sources = sorted(
        {
            task
            for edge in edges
            if isinstance(edge, Edge) and edge.inferred
            for task in (edge.source or "").split(", ")
            if task
        }
    )
    return f"; inferred from {', '.join(sources)}" if sources else ""


def is_inferred_only(asset: Dataset) -> bool:
    return asset.metadata.get(INFERRED_KEY) == "true"


__all__ = ["INFERRED_KEY", "inferred_note", "is_inferred_only", "read_inferred", "rows"]
