"""Benchmark 4: the views of a snapshot (SARIF, markdown, the lineage picture) against the audit.

A view should cost little next to the audit that produced its document: a platform team runs
``audit --format sarif`` in CI and the UI page draws the picture on every request. For each
size the audit (``parse_artifacts`` + ``audit`` + ``build_document``) and each view of its
document are timed side by side in this one process, interleaved, ``--repeat`` times each
after one warm-up; medians are compared. Ratios below 1 mean the view costs less than the
audit; the figure to watch is how they scale from M to L (linear: about 10x the time for
10x the DAGs).

    python benchmarks/bench_views.py                   # S, M and L, 3 repetitions
    python benchmarks/bench_views.py --sizes S --repeat 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent))

from generate_estate import write_estate  # noqa: E402

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts  # noqa: E402
from airflow_provider_coremodels.core.lineage import LineageGraph, to_dot, to_mermaid, to_svg  # noqa: E402
from airflow_provider_coremodels.core.markdown import render_markdown  # noqa: E402
from airflow_provider_coremodels.core.render import render_json, render_table  # noqa: E402
from airflow_provider_coremodels.core.sarif import render_sarif  # noqa: E402


def views(document: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    return {
        "table": lambda: render_table(document),
        "json": lambda: render_json(document),
        "sarif": lambda: render_sarif(document, tool_version="bench"),
        "markdown": lambda: render_markdown(document),
        "lineage mermaid": lambda: to_mermaid(LineageGraph.from_document(document)),
        "lineage dot": lambda: to_dot(LineageGraph.from_document(document)),
        "lineage svg": lambda: to_svg(LineageGraph.from_document(document)),
    }


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="S,M,L")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-views-") as tmp:
        for size in args.sizes.split(","):
            paths = write_estate(Path(tmp) / size, size)
            data = [paths[name].read_bytes() for name in ("dags", "tasks", "datasets")]

            def run_audit(data: list[bytes] = data) -> dict[str, Any]:
                estate = parse_artifacts(*data)
                return build_document(estate, audit(estate))

            document = run_audit()
            timings = {"audit": median_seconds(run_audit, args.repeat)}
            for name, view in views(document).items():
                timings[name] = median_seconds(view, args.repeat)
            results[size] = timings
            dags = document["state"]["facts"]["dags"]
            findings = len(document["findings"])
            print(f"\n{size}: {dags:,} DAGs, {findings:,} findings; audit {timings['audit']:.3f} s")
            print(f"  {'view':<16} {'seconds':>9} {'x audit':>8}")
            for name, seconds in timings.items():
                if name != "audit":
                    print(f"  {name:<16} {seconds:>9.3f} {seconds / timings['audit']:>8.2f}")
    if "M" in results and "L" in results:
        print("\nM -> L (10x the DAGs): time ratio per step")
        for name in results["L"]:
            print(f"  {name:<16} {results['L'][name] / results['M'][name]:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
