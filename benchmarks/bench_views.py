"""Benchmark 4: the views of a snapshot (SARIF, markdown, the lineage picture) against the audit.

A view should cost little next to the audit that produced its document: a platform team runs
``audit --format sarif`` in CI and the UI page draws the picture on every request. For each
size the audit (``parse_artifacts`` + ``audit`` + ``build_document``) and each view of its
document are timed side by side in this one process, interleaved, ``--repeat`` times each
after one warm-up; medians are compared. Ratios below 1 mean the view costs less than the
audit; the figure to watch is how they scale from M to L (linear: about 10x the time for
10x the DAGs).

The lineage picture (the UI page's, ``lineage --format svg``) is then timed on its own, step
by step: reading the graph off the document, and for the whole estate (over 300 nodes: drawn
around its focus) and one DAG's neighbourhood at depths 2, 6 and 50 (cut at 300 nodes),
finding what to draw and drawing it. Its figure to watch is the opposite of linear: a
neighbourhood should cost about the same at 10,000 DAGs as at 1,000, since what it costs is
what it draws, never more than 300 nodes; only reading the graph grows with the estate.

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
from airflow_provider_coremodels.core.lineage import (  # noqa: E402
    MAX_NODES,
    LineageGraph,
    picture,
    to_dot,
    to_mermaid,
    to_svg,
)
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
        "lineage svg": lambda: picture(LineageGraph.from_document(document)).svg,
    }


def picture_steps(document: dict[str, Any]) -> dict[str, tuple[Callable[[], Any], int]]:
    """The lineage picture's steps, each with the number of nodes it draws: reading the graph off
    the document; then, for the whole estate (drawn around its focus when over the cap) and one
    DAG's neighbourhood at depths 2, 6 and 50 (cut at the cap), finding what to draw and drawing
    it (layout and SVG). The first DAG with lineage is the centre."""
    graph = LineageGraph.from_document(document)
    centre = next(node.id for node in graph.nodes if node.kind == "dag")
    steps: dict[str, tuple[Callable[[], Any], int]] = {
        "graph": (lambda: LineageGraph.from_document(document), len(graph.nodes)),
    }

    def whole() -> LineageGraph:  # as picture() finds it
        if len(graph.nodes) <= MAX_NODES:
            return graph
        focus = graph.focus()
        assert focus is not None
        return graph.neighbourhood(
            focus.id, 2, kind="asset" if focus.kind == "asset" else "dag", max_nodes=MAX_NODES
        )

    cases: dict[str, Callable[[], LineageGraph]] = {
        "whole estate": whole,
        "depth 2": lambda: graph.neighbourhood(centre, 2, max_nodes=MAX_NODES),
        "depth 6": lambda: graph.neighbourhood(centre, 6, max_nodes=MAX_NODES),
        "depth 50 (cut)": lambda: graph.neighbourhood(centre, 50, max_nodes=MAX_NODES),
    }
    for name, find in cases.items():
        shown = find()
        size = len(shown.nodes)
        steps[f"{name}: find"] = (find, size)
        steps[f"{name}: draw"] = ((lambda shown=shown: to_svg(shown)), size)
    return steps


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
    pictures: dict[str, dict[str, float]] = {}
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
            steps = {}
            print(f"  {'lineage picture':<24} {'nodes':>7} {'ms':>9}")
            for name, (step, nodes) in picture_steps(document).items():
                steps[name] = median_seconds(step, args.repeat)
                print(f"  {name:<24} {nodes:>7,} {steps[name] * 1000:>9.2f}")
            pictures[size] = steps
    if "M" in results and "L" in results:
        print("\nM -> L (10x the DAGs): time ratio per step")
        for name in results["L"]:
            print(f"  {name:<16} {results['L'][name] / results['M'][name]:>6.1f}x")
        print("\nM -> L: the lineage picture's time ratio per step (1.0x: the same cost at 10x the DAGs)")
        for name in pictures["L"]:
            print(f"  {name:<24} {pictures['L'][name] / pictures['M'][name]:>6.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
