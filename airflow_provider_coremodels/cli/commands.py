"""The commands behind both CLI front doors: thin glue over the core, returning exit codes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from airflow_provider_coremodels.core import (
    Baseline,
    Estate,
    Lossiness,
    StoredSnapshot,
    build_document,
    load_document,
    parse_artifacts,
)
from airflow_provider_coremodels.core import (
    audit as run_audit,
)
from airflow_provider_coremodels.core.capabilities import require
from airflow_provider_coremodels.core.render import SEVERITY_RANK, render_json, render_table
from airflow_provider_coremodels.errors import (
    DagsArtifactError,
    SnapshotDocumentError,
    UsageError,
)

EXIT_OK = 0
EXIT_FINDINGS = 1

FAIL_ON_RANK = {"never": None, "info": 1, "warning": 2, "error": 3}


def audit(args: argparse.Namespace) -> int:
    """``audit``: parse artifacts (or re-read a snapshot), audit, print, and pick the exit code."""
    if args.snapshot and (args.dags or args.tasks or args.datasets):
        raise UsageError("audit takes either --dags (with --tasks and --datasets) or --snapshot, not both")
    if args.snapshot:
        estate = _stored_estate(args.snapshot)
    elif args.dags:
        estate = _parse_files(args.dags, args.tasks, args.datasets)
    else:
        raise UsageError("audit needs --dags F (with --tasks and --datasets) or --snapshot S")
    baseline = _baseline(args.baseline) if args.baseline else None
    result = run_audit(estate, baseline)
    document = build_document(estate, result, max_snapshot_bytes=args.max_snapshot_bytes)
    emit(render(document, args.format))
    return exit_code(document["findings"], args.fail_on)


def generate(args: argparse.Namespace) -> int:
    """``generate``: always refused by the capability gate, before anything else happens."""
    require("generate")
    return EXIT_OK  # pragma: no cover - the gate always raises


def render(document: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return render_json(document)
    return render_table(document)


def exit_code(findings: list[dict[str, Any]], fail_on: str) -> int:
    """1 when an unwaived finding is at or above ``fail_on``, else 0."""
    threshold = FAIL_ON_RANK[fail_on]
    if threshold is None:
        return EXIT_OK
    for finding in findings:
        if not finding.get("waived") and SEVERITY_RANK.get(finding["severity"], 0) >= threshold:
            return EXIT_FINDINGS
    return EXIT_OK


def emit(text: str) -> None:
    """Print to stdout as UTF-8 whatever the locale says (messages carry an em dash)."""
    try:
        sys.stdout.write(text + "\n")
    except UnicodeEncodeError:
        sys.stdout.flush()
        sys.stdout.buffer.write((text + "\n").encode("utf-8"))
    sys.stdout.flush()


# -- inputs -------------------------------------------------------------------------------


def _parse_files(dags: str, tasks: str | None, datasets: str | None) -> Estate:
    try:
        dags_bytes = Path(dags).read_bytes()
    except OSError as exc:
        raise DagsArtifactError(f"cannot be read: {exc.strerror or exc}", dags) from None
    records: list[Lossiness] = []
    try:
        return parse_artifacts(
            dags_bytes,
            _read_optional("tasks", tasks, records),
            _read_optional("datasets", datasets, records),
            lossiness=records,
        )
    except DagsArtifactError as exc:
        raise exc.with_source(dags) from None


def _read_optional(artifact: str, path: str | None, records: list[Lossiness]) -> bytes | None:
    """Read a tasks or datasets file; an unreadable one is a lossiness record, never a failure."""
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        records.append(
            Lossiness(artifact, f"{artifact} artifact ignored: cannot read {path}: {exc.strerror or exc}")
        )
        return None


def _load(path: str) -> StoredSnapshot:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SnapshotDocumentError(f"cannot be read: {exc.strerror or exc}", path) from None
    try:
        return load_document(data)
    except SnapshotDocumentError as exc:
        raise exc.with_source(path) from None


def _stored_estate(path: str) -> Estate:
    stored = _load(path)
    if stored.estate is None:
        raise SnapshotDocumentError(
            "was stored without datasets and lineage (it exceeded the snapshot cap): "
            "there is nothing to re-audit; audit the artifacts instead",
            path,
        )
    return stored.estate


def _baseline(path: str) -> Baseline:
    return _load(path).as_baseline()
