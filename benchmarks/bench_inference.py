"""Lineage inference (contract 10.3) measured on DAGs nobody here wrote: recall and precision of the
table and object edges, and the parse time with inference against without it.

Run: python benchmarks/bench_inference.py [--repeat 3] [--cache DIR] [--dump]

The corpus is the system-test DAGs that Apache Airflow's SQL and AWS providers ship in their source
distributions on PyPI (each fetched by ``pip download --no-binary :all:`` at a pinned version and
checked against its sha256; nothing of them is committed here). Two collections, each a DAG folder
of its own:

- ``aws``: the amazon provider's Redshift, S3-to-SQL, SQL-to-S3 and Redshift/S3 transfer DAGs;
- ``sql``: the common-sql, postgres, mysql and trino providers' SQL DAGs.

Those files import four helpers of Airflow's own test tree that the distributions do not ship
(``tests_common.test_utils``: ``system_tests.get_test_run``, ``watcher.watcher``,
``version_compat.AIRFLOW_V_3_0_PLUS``, ``api_client_helpers.create_airflow_connection``); the script
writes stand-ins of a line or two each, which only let the files import.

The truth (``benchmarks/data/inference_truth.json``) was written by hand from the DAG files: for
each task, the tables and objects it certainly reads and writes, by name (a table as
``schema.table``, or ``table`` where the statement names no schema, or the default schema
``public``; an object as its ``s3://`` URI). Names the code computes at run time (an XCom, a
variable) are no certain edge and are left out of the truth; an inferred edge that matches none
of the truth counts against precision. Recall: truth edges inferred / truth edges (goal >= 0.8);
precision: inferred edges in the truth / inferred edges (goal >= 0.9); time: the median of
``--repeat`` parses of each folder with inference over the median without it, the two sides
alternating in one run (goal <= 1.3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
TRUTH = HERE / "data" / "inference_truth.json"

#: (distribution, version, sha256 of its sdist, {corpus: [(member path under tests/system, ...)]})
SOURCES = [
    (
        "apache-airflow-providers-amazon",
        "9.38.0",
        "a196ccc0d7921ccf1ae1aeda146b466cc33bae1e94be0e7b0e6e1010d9ece6bd",
        {
            "aws": [
                "amazon/__init__.py",
                "amazon/aws/__init__.py",
                "amazon/aws/utils/__init__.py",
                "amazon/aws/example_redshift.py",
                "amazon/aws/example_redshift_s3_transfers.py",
                "amazon/aws/example_s3_to_sql.py",
                "amazon/aws/example_sql_to_s3.py",
            ]
        },
    ),
    (
        "apache-airflow-providers-common-sql",
        "2.4.0",
        "363f89dab28bdb00e9090a50476a71795b8237adb0b1768c9490b805b1868e0d",
        {
            "sql": [
                "common/sql/example_generic_transfer.py",
                "common/sql/example_sql_execute_query.py",
                "common/sql/example_sql_column_table_check.py",
                "common/sql/example_sql_threshold_check.py",
                "common/sql/example_sql_value_check.py",
            ]
        },
    ),
    (
        "apache-airflow-providers-postgres",
        "7.1.1",
        "ebea35773fdfd97fa404632b3c35ceb846082a6d94ffdf710fcd448b41a58990",
        {"sql": ["postgres/example_postgres.py"]},
    ),
    (
        "apache-airflow-providers-mysql",
        "6.7.1",
        "012f4c7ddfe0d43936e52f4de0259d6f70a75275f6d936902ff30e9732571031",
        {"sql": ["mysql/example_mysql.py"]},
    ),
    (
        "apache-airflow-providers-trino",
        "6.7.1",
        "9abe66200f37fd99d430f0cef40bd12c974ac2d986f11ba6420b16951e8f1ce2",
        {"sql": ["trino/example_trino.py"]},
    ),
]

#: Stand-ins for the two helpers of Airflow's test tree the system tests import (not shipped).
STANDINS = {
    "tests_common/__init__.py": "",
    "tests_common/test_utils/__init__.py": "",
    "tests_common/test_utils/system_tests.py": "def get_test_run(dag):\n    return None\n",
    "tests_common/test_utils/version_compat.py": "AIRFLOW_V_3_0_PLUS = True\n",
    "tests_common/test_utils/api_client_helpers.py": (
        "def create_airflow_connection(connection_id, connection_conf):\n    return None\n"
    ),
    "tests_common/test_utils/watcher.py": (
        "def watcher():\n"
        "    from airflow.providers.standard.operators.empty import EmptyOperator\n\n"
        "    return EmptyOperator(task_id='watcher', trigger_rule='one_failed')\n"
    ),
}


def fetch(cache: Path) -> dict[str, Path]:
    """Each pinned sdist, downloaded once into ``cache`` and checked against its sha256."""
    cache.mkdir(parents=True, exist_ok=True)
    found = {}
    for name, version, digest, _ in SOURCES:
        stem = f"{name.replace('-', '_')}-{version}"
        path = cache / f"{stem}.tar.gz"
        if not path.exists():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                 f"{name}=={version}", "-d", str(cache)],
                check=True, timeout=600,
            )  # fmt: skip
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != digest:
            raise SystemExit(f"{path.name}: sha256 {actual}, expected {digest}")
        found[name] = path
    return found


def build(sdists: dict[str, Path], root: Path) -> dict[str, Path]:
    """The corpus folders: each collection's files laid out as ``system/...`` (their own imports),
    with the stand-ins beside them."""
    folders: dict[str, Path] = {}
    for name, version, _, corpora in SOURCES:
        stem = f"{name.replace('-', '_')}-{version}"
        with tarfile.open(sdists[name]) as archive:
            for corpus, members in corpora.items():
                folder = folders.setdefault(corpus, root / corpus)
                for member in members:
                    data = archive.extractfile(f"{stem}/tests/system/{member}")
                    assert data is not None
                    target = folder / "system" / member
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data.read())
    for folder in folders.values():
        for relative, text in STANDINS.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(text)
        for directory in (folder / "system").rglob("*"):
            if directory.is_dir() and not (directory / "__init__.py").exists():
                (directory / "__init__.py").write_text("")
        (folder / "system" / "__init__.py").write_text("")
    return folders


def name_of(uri: str) -> str:
    """How the truth names what a URI names: an object by its URI; a table as ``schema.table``, the
    default schema ``public`` left out (so ``table``), the database and connection left out."""
    if uri.startswith(("s3://", "gs://")):
        return uri
    parts = [p for p in uri.split("://", 1)[1].split("/")[1:] if p]
    tail = parts[-2:] if len(parts) >= 2 and parts[-2].lower() != "public" else parts[-1:]
    return ".".join(tail).lower()


def edges_of(rows: list[dict[str, str]]) -> set[tuple[str, str, str, str]]:
    return {(r["dag_id"], r["task_id"], r["role"], name_of(r["uri"])) for r in rows}


def truth_edges(truth: dict, corpus: str) -> set[tuple[str, str, str, str]]:
    out = set()
    for dag_id, tasks in truth[corpus].items():
        for task_id, roles in tasks.items():
            for role in ("reads", "writes"):
                out.update((dag_id, task_id, role, name.lower()) for name in roles.get(role, ()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "coremodels-bench-inference"))
    parser.add_argument("--dump", action="store_true", help="print every inferred edge and record")
    args = parser.parse_args()

    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder

    truth = json.loads(TRUTH.read_text())
    sdists = fetch(Path(args.cache))
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-inference-") as scratch:
        folders = build(sdists, Path(scratch))
        total_hit = total_truth = total_inferred = 0
        for corpus, folder in sorted(folders.items()):
            times: dict[bool, list[float]] = {True: [], False: []}
            # the parse server's own work on the files (each file's child, the mapping), without
            # Airflow's import and warm-up, which a folder this small is mostly made of
            work: dict[bool, list[float]] = {True: [], False: []}
            parsed = None
            for _ in range(args.repeat):
                for infer in (False, True):
                    began = time.perf_counter()
                    result = parse_dag_folder(folder, infer=infer, connections=lambda conn: None)
                    times[infer].append(time.perf_counter() - began)
                    work[infer].append(sum(result.timings.get(k, 0.0) for k in ("files", "map")))
                    if infer:
                        parsed = result
            assert parsed is not None
            inferred = edges_of(parsed.datasets.get("inferred") or [])
            expected = truth_edges(truth, corpus)
            hit = inferred & expected
            dags = len(parsed.dags["dags"])
            errors = len(parsed.dags["import_errors"])
            with_it, without = statistics.median(times[True]), statistics.median(times[False])
            print(
                f"{corpus}: {parsed.files} files, {dags} DAGs ({errors} import errors), "
                f"{len(expected)} truth edges, {len(inferred)} inferred; "
                f"recall {len(hit) / max(len(expected), 1):.2f}, "
                f"precision {len(hit) / max(len(inferred), 1):.2f}; parse {without:.2f} s without "
                f"inference, {with_it:.2f} s with: ratio {with_it / without:.2f}; the files' own parse "
                f"{statistics.median(work[False]):.2f} s without, {statistics.median(work[True]):.2f} s "
                f"with: ratio {statistics.median(work[True]) / max(statistics.median(work[False]), 1e-9):.2f}"
            )
            if args.dump:
                for edge in sorted(inferred):
                    print("   ", "ok  " if edge in expected else "FP  ", *edge)
                for edge in sorted(expected - inferred):
                    print("    MISS", *edge)
                for record in parsed.lossiness:
                    if record.subject:
                        print("    record", record.message)
                for error in parsed.dags["import_errors"]:
                    print(
                        "    import error",
                        error["filename"],
                        str(error["stack_trace"]).strip().splitlines()[-1],
                    )
            total_hit += len(hit)
            total_truth += len(expected)
            total_inferred += len(inferred)
        print(
            f"all: recall {total_hit / max(total_truth, 1):.2f} (goal >= 0.8), "
            f"precision {total_hit / max(total_inferred, 1):.2f} (goal >= 0.9)"
        )


if __name__ == "__main__":
    main()
