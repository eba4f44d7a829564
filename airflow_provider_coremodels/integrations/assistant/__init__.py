"""The questions an assistant asks of one snapshot: facts, findings, a dataset, lineage, impact, drift.

The MCP server (``mcp_server.py``) is a thin layer over this package, which imports no MCP SDK:
plain functions over the estate model and the stored findings, fast to test on their own. A
snapshot is read once (``SnapshotQueries.open``) and indexed once (``index.py``: datasets by
identity, the lineage graph's adjacency both ways, findings by the dataset they are about), so each
answer costs what it returns, not what the estate holds. The questions read on their own, each
group in its module over that one index: ``facts.py`` (the snapshot, its findings, a dataset),
``lineage.py`` (a neighbourhood, the impact of a change), ``drift.py`` (against a baseline);
``answers.py`` holds what every answer shares (pages, limits, the strings as served).

Every answer is JSON-safe. Every list in it is a page: ``items``, ``total``, ``offset``,
``limit``, ``truncated`` (more items follow) and ``nextOffset``, so a cut list is never taken
for the whole. A question that cannot be answered as asked (an unknown identity, a filter that
names nothing) is a ``QueryError`` naming what was asked and, where it can, what was meant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.integrations.assistant.answers import (
    DEFAULT_LIMIT,
    MAX_DEPTH,
    MAX_LIMIT,
    MAX_TEXT,
    UNTRUSTED,
    QueryError,
    page,
    served,
    shown_text,
)
from airflow_provider_coremodels.integrations.assistant.drift import DriftQuestions
from airflow_provider_coremodels.integrations.assistant.facts import FactsQuestions
from airflow_provider_coremodels.integrations.assistant.index import read_baseline, read_source
from airflow_provider_coremodels.integrations.assistant.lineage import LineageQuestions


class SnapshotQueries(FactsQuestions, LineageQuestions, DriftQuestions):
    """One snapshot, read once and indexed once, and the questions asked of it."""

    @classmethod
    def open(
        cls, path: str, *, waivers: Sequence[Waiver] = (), waivers_source: str | None = None, **kwargs: Any
    ) -> SnapshotQueries:
        """Read the snapshot at ``path`` (a document, or a file sink's directory)."""
        return cls(read_source(path), source=path, waivers=waivers, waivers_source=waivers_source, **kwargs)


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_DEPTH",
    "MAX_LIMIT",
    "MAX_TEXT",
    "UNTRUSTED",
    "QueryError",
    "SnapshotQueries",
    "page",
    "read_baseline",
    "read_source",
    "served",
    "shown_text",
]
