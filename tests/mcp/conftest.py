"""The snapshots the MCP server's tests serve: the example estate (a document and a file sink's
directory), a baseline that differs from it, and a generated estate of 10,000 DAGs."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.helpers import REPO

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.snapshots.document import encode, fingerprint
from airflow_provider_coremodels.sinks.directory import FileSink

#: The size of the estate the speed requirement is stated for.
LARGE_DAGS = 10_000


@pytest.fixture(scope="session")
def example_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example estate's snapshot document, exactly as ``audit --example --format json`` prints it."""
    run = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--example", "--format", "json"],
        capture_output=True,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    path = tmp_path_factory.mktemp("mcp-example") / "snapshot.json"
    path.write_bytes(run.stdout)
    return path


@pytest.fixture(scope="session")
def example_document(example_snapshot: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(example_snapshot.read_bytes())
    return document


@pytest.fixture(scope="session")
def example_sink(tmp_path_factory: pytest.TempPathFactory, example_document: dict[str, Any]) -> Path:
    """A file sink's directory holding the example snapshot, written by the file sink itself."""
    root = tmp_path_factory.mktemp("mcp-sink") / "coremodels"
    FileSink(root).push(example_document)
    assert (root / "latest.json").is_file()
    return root


@pytest.fixture(scope="session")
def baseline_snapshot(tmp_path_factory: pytest.TempPathFactory, example_document: dict[str, Any]) -> Path:
    """A baseline the example estate has drifted from: legacy_cleanup is new since it, retired_dag and
    one task are gone, and one task changed its operator class. Its fingerprint is its own."""
    document = copy.deepcopy(example_document)
    datasets = [d for d in document["datasets"] if d["identity"] != "legacy_cleanup"]
    retired = copy.deepcopy(next(d for d in datasets if d["identity"] == "sync_crm"))
    retired.update(
        identity="retired_dag", name="retired_dag", mapsTo={"standard": "airflow", "uri": "retired_dag"}
    )
    datasets.append(retired)
    load_orders = next(d for d in datasets if d["identity"] == "load_orders")
    load_orders["fields"][0]["nativeType"] = "PythonOperator"
    load_orders["fields"].append({**load_orders["fields"][0], "name": "zz_archive"})
    datasets.sort(key=lambda d: (d["materialization"], d["identity"]))
    document["datasets"] = datasets
    document["fingerprint"] = fingerprint(datasets, document["lineage"])
    path = tmp_path_factory.mktemp("mcp-baseline") / "baseline.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _generate_estate() -> Any:
    """benchmarks/generate_estate.py, imported from its file (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "generate_estate", REPO / "benchmarks" / "generate_estate.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


@pytest.fixture(scope="session")
def large_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stored snapshot of 10,000 generated DAGs (200,000 tasks, 5,000 assets), built once per session
    as bench_merge.py builds one (about 7 s here, most of it generating and parsing the artifacts)."""
    started = time.perf_counter()
    docs = _generate_estate()(LARGE_DAGS, seed=0)
    estate = parse_artifacts(*(json.dumps(docs[name]).encode() for name in ("dags", "tasks", "datasets")))
    document = build_document(estate, audit(estate), max_snapshot_bytes=1 << 40)
    path = tmp_path_factory.mktemp("mcp-large") / "snapshot.json"
    path.write_bytes(encode(document))
    sys.stderr.write(
        f"\n10,000-DAG snapshot: {path.stat().st_size:,} bytes in {time.perf_counter() - started:.1f} s\n"
    )
    return path
