"""What the DAG-folder parse server's start costs with Python's cyclic collector on and off.

Run: python benchmarks/bench_parse_start.py [--repeat N]

Every `audit --dag-folder` starts a parse server (`capture/dag_folder_worker.py`), and its start is
imports: Airflow and what a DAG file's parse needs, tens of thousands of objects that all live on.
The collections they set off find almost nothing. The server turns collection off until its
imports and warm-up are done, and on again before it forks the first file's child. This measures
that start on its own: a fresh interpreter doing the server's imports, as `_serve` does them, with
collection on (as before) and off (as now), interleaved. A fixed cost on purpose, whatever the
folder: on a large folder the files' own parses dwarf it. Prints the median CPU seconds and peak
RSS of each, and their ratios, measured in one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

#: What the parse server imports before it serves (``dag_folder_worker._serve``), and an operator
#: of the kind its warm-up DAG imports.
IMPORTS = """
import airflow
from airflow.configuration import conf
from airflow.api_fastapi.core_api.datamodels.dags import DAGResponse
from airflow.api_fastapi.core_api.datamodels.tasks import TaskResponse
from airflow.dag_processing.collection import AssetModelOperation
from airflow.dag_processing.dagbag import DagBag
from airflow.providers.standard.operators.empty import EmptyOperator
import resource, sys
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def run_once(collect: bool, env: dict[str, str]) -> tuple[float, float]:
    """One start's CPU seconds and peak RSS (MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = ("" if collect else "import gc\ngc.disable()\n") + IMPORTS
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, int(done.stdout.split()[-1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-parse-start-") as home:
        env = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
        run_once(True, env)  # the first start writes airflow.cfg and warms the page cache
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.repeat):
            for collect in (True, False):
                runs[collect].append(run_once(collect, env))
    cpu = {k: statistics.median(c for c, _ in v) for k, v in runs.items()}
    rss = {k: statistics.median(r for _, r in v) for k, v in runs.items()}
    print(f"## The parse server's start: its imports, {args.repeat} starts each, interleaved\n")
    print("| collection during the start | CPU s (median) | peak RSS MB (median) |")
    print("|---|---|---|")
    print(f"| on (before) | {cpu[True]:.2f} | {rss[True]:.0f} |")
    print(f"| off (now) | {cpu[False]:.2f} | {rss[False]:.0f} |")
    print(f"\nCPU off/on: {cpu[False] / cpu[True]:.2f}; peak RSS off/on: {rss[False] / rss[True]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
