"""The pure core: artifacts -> estate model -> findings -> renderings. No airflow, no I/O."""

from __future__ import annotations

from airflow_provider_coremodels.core.audit import AuditResult, Baseline, audit
from airflow_provider_coremodels.core.document import (
    DEFAULT_MAX_SNAPSHOT_BYTES,
    StoredSnapshot,
    build_document,
    fingerprint,
    for_storage,
    load_document,
)
from airflow_provider_coremodels.core.model import (
    Dataset,
    Edge,
    Estate,
    Field,
    Finding,
    Lossiness,
    Severity,
    State,
)
from airflow_provider_coremodels.core.parse import ABSENT, build_estate, parse_artifacts

__all__ = [
    "ABSENT",
    "DEFAULT_MAX_SNAPSHOT_BYTES",
    "AuditResult",
    "Baseline",
    "Dataset",
    "Edge",
    "Estate",
    "Field",
    "Finding",
    "Lossiness",
    "Severity",
    "State",
    "StoredSnapshot",
    "audit",
    "build_document",
    "build_estate",
    "fingerprint",
    "for_storage",
    "load_document",
    "parse_artifacts",
]
