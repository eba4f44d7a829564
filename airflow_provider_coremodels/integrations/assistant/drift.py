"""Drift: coverage and drift against a baseline, the one given at start-up or one a call names
(read, and its drift worked out, by the shared index)."""

from __future__ import annotations

from collections import Counter

from airflow_provider_coremodels.core.estate.rules import (
    severity_rank,
)
from airflow_provider_coremodels.errors import CoreModelsError
from airflow_provider_coremodels.integrations.assistant.answers import (
    _NO_ESTATE,
    DEFAULT_LIMIT,
    JSON,
    QueryError,
    page,
)
from airflow_provider_coremodels.integrations.assistant.index import (
    SnapshotIndex,
)


class DriftQuestions(SnapshotIndex):
    """``drift``, asked of the shared index."""

    # -- drift ---------------------------------------------------------------------------

    def drift(
        self,
        *,
        baseline: str | None = None,
        code: str | None = None,
        subject: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> JSON:
        """Coverage and drift against a baseline: the one given at start-up, or the one at ``baseline``."""
        if self.estate is None:
            raise QueryError(_NO_ESTATE)
        if baseline:
            try:
                loaded = self._load_baseline(baseline)
            except CoreModelsError as exc:  # a path the assistant gave: its answer, not a crash
                raise QueryError(f"baseline {exc}") from None
        elif self._given_baseline is not None:
            loaded = self._given_baseline
        else:
            raise QueryError(
                "no baseline: give the path of a previous snapshot document (or a file sink's directory) "
                "as baseline, or start the server with --baseline PATH"
            )
        ranks = [severity_rank(f["severity"]) for f in loaded.findings]
        selected = self._filter(loaded.findings, ranks, None, code, subject, None, "include")
        stored = loaded.baseline
        return {
            "baseline": {
                "source": loaded.source,
                "fingerprint": stored.fingerprint,
                "evaluated": stored.estate is not None,
                "reason": None
                if stored.estate is not None
                else "the baseline was stored without datasets (it exceeded the snapshot cap)",
            },
            "fingerprint": self.head.fingerprint,
            "unchanged": stored.fingerprint == self.head.fingerprint,
            "counts": {"byCode": dict(sorted(Counter(f["code"] for f in loaded.findings).items()))},
            "findings": page(selected, offset, limit),
        }
