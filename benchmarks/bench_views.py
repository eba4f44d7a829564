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

Last, dense estates (``dense_estate.py``: 300 DAGs and 150 assets with 20 producers and 20
consumers each; 200 nodes and 1,600 edges; 300 nodes and 3,000 edges), where the layout's cost
is its edges' bends, not its boxes. For each, three graphs: the whole estate; the picture as it
was before the edge bound (the focus's neighbourhood cut at 300 nodes only); and the picture
drawn now (bounded by nodes, edges and bends). Each is laid out by grandalf 0.8 as it ships,
by grandalf with its alignment conflicts in a set (``core.layout``, what the picture uses) and
by igraph's compiled Sugiyama layout (``igraph``, when installed: ``pip install igraph``), the
layered layout alone in each (ranking, ``ORDER_ROUNDS`` rounds of crossing reduction, one
placement), each in a process of its own stopped after ``--dense-timeout`` seconds; then the
whole picture as the page draws it (``picture``: find, lay out, route, SVG), the figure the
2-second bound is about.

    python benchmarks/bench_views.py                   # S, M and L, 3 repetitions
    python benchmarks/bench_views.py --sizes S --repeat 1 --dense-timeout 5
    python benchmarks/bench_views.py --sizes none      # the dense estates only
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:
    sys.path.insert(0, str(HERE.parent))

from dense_estate import CASES, TITLES, dense_artifacts  # noqa: E402
from generate_estate import write_estate  # noqa: E402

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts  # noqa: E402
from airflow_provider_coremodels.core.views import layout as core_layout  # noqa: E402
from airflow_provider_coremodels.core.views.lineage import (  # noqa: E402
    MAX_NODES,
    LineageGraph,
    picture,
    to_dot,
    to_mermaid,
    to_svg,
)
from airflow_provider_coremodels.core.views.markdown import render_markdown  # noqa: E402
from airflow_provider_coremodels.core.views.render import render_json, render_table  # noqa: E402
from airflow_provider_coremodels.core.views.sarif import render_sarif  # noqa: E402


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


# -- dense estates: grandalf against igraph ---------------------------------------------------

ENGINES = ("grandalf 0.8", "grandalf, set", "igraph")


def _lay_out(engine: str, keys: Sequence[str], edges: Sequence[tuple[str, str]]) -> int:
    """The layered layout alone, by one engine: ranking, crossing reduction, one placement.
    Returns the bends (dummy vertices) it placed."""
    if engine == "igraph":
        import igraph

        index = {key: i for i, key in enumerate(keys)}
        graph = igraph.Graph(n=len(keys), edges=[(index[s], index[t]) for s, t in edges], directed=True)
        laid = graph.layout_sugiyama(maxiter=core_layout.ORDER_ROUNDS)
        return len(laid.coords) - len(keys) + sum(len(route) for route in laid.edge_routing)
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    vertices = {key: Vertex(key) for key in keys}
    for vertex in vertices.values():
        vertex.view = core_layout._View(100.0, 34.0)
    links = [Edge(vertices[s], vertices[t]) for s, t in edges]
    kind = core_layout._Sugiyama if engine == "grandalf, set" else SugiyamaLayout
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * (len(keys) + len(edges)) + 200))
    bends = 0
    for component in Graph(list(vertices.values()), links).C:  # each connected part apart, as core.layout
        if len(component.sV) < 2:
            continue
        sugiyama = kind(component)
        sugiyama.dw, sugiyama.dh = core_layout.EDGE_SLOT, 0.0
        sugiyama.init_all(optimize=True)
        for _ in range(core_layout.ORDER_ROUNDS):
            for _step in sugiyama.ordering_step():
                pass
        sugiyama.setxy()
        bends += sum(len(layer) for layer in sugiyama.layers) - len(component.sV)
    return bends


def _timed(engine: str, keys: list[str], edges: list[tuple[str, str]], out: Any) -> None:
    start = time.perf_counter()
    bends = _lay_out(engine, keys, edges)
    out.put((time.perf_counter() - start, bends))


def layout_seconds(
    engine: str, keys: list[str], edges: list[tuple[str, str]], timeout: float
) -> tuple[float | None, int | None]:
    """(seconds, bends) of one engine's layout in a process of its own; (None, None) past ``timeout``."""
    # fork where there is one: the child starts at once, with the graph and the modules already there
    methods = multiprocessing.get_all_start_methods()
    forked = "fork" in methods
    context = multiprocessing.get_context("fork" if forked else "spawn")
    queue = context.Queue()
    process = context.Process(target=_timed, args=(engine, keys, edges, queue), daemon=True)
    process.start()
    try:
        seconds, bends = queue.get(timeout=timeout + (0.5 if forked else 5.0))  # and its start-up
    except Exception:  # queue.Empty: still laying out
        seconds = bends = None
    process.kill()
    process.join()
    if seconds is not None and seconds > timeout:
        return None, None
    return seconds, bends


def core_layout_bends(graph: LineageGraph) -> int:
    from airflow_provider_coremodels.core.views.lineage import layout

    return layout(graph).bends


def dense_graph(case: str) -> LineageGraph:
    docs = dense_artifacts(case)
    estate = parse_artifacts(json.dumps(docs["dags"]).encode(), None, json.dumps(docs["datasets"]).encode())
    return LineageGraph.from_document(build_document(estate, audit(estate), max_snapshot_bytes=1 << 40))


def dense(repeat: int, timeout: float) -> None:
    try:
        import igraph

        have_igraph = f"igraph {igraph.__version__}"
    except ImportError:
        have_igraph = ""
    print(
        f"\nDense estates: the layered layout alone, each engine in a process of its own (stopped after "
        f"{timeout:g} s), then the picture as the page draws it (median of {repeat}); "
        f"limits {MAX_NODES} nodes, {core_layout.MAX_EDGES} edges, {core_layout.MAX_BENDS:,} bends"
    )
    if not have_igraph:
        print("  (igraph is not installed: pip install igraph; its column is left empty)")
    engines = [e for e in ENGINES if e != "igraph" or have_igraph]

    def show(seconds: float | None) -> str:
        return f"{seconds:.2f}" if seconds is not None else f"> {timeout:g}"

    header = "  ".join(f"{e + ' s':>13}" for e in engines)
    print(f"  {'graph':<38} {'nodes':>5} {'edges':>5} {'bends':>6}  {header}  {'grandalf/igraph':>15}")
    for case in CASES:
        graph = dense_graph(case)
        focus = graph.focus()
        assert focus is not None
        kind = "asset" if focus.kind == "asset" else "dag"
        drawn = picture(graph)
        graphs = {
            "whole estate": graph,
            "before: cut at 300 nodes only": graph.neighbourhood(focus.id, 2, kind=kind, max_nodes=MAX_NODES),
            "now: the picture drawn": drawn.graph,
        }
        print(f"  {TITLES[case]}")
        for name, shown in graphs.items():
            keys = [node.key for node in shown.nodes]
            edges = list(shown.edges)
            times: dict[str, float | None] = {}
            bends: int | None = None
            for engine in engines:
                times[engine], counted = layout_seconds(engine, keys, edges, timeout)
                if engine == "grandalf, set" and counted is not None:
                    bends = counted
            ratio = ""
            if have_igraph and times.get("igraph"):
                base = times["grandalf, set"]
                ratio = f"{base / times['igraph']:.1f}x" if base else f"> {timeout / times['igraph']:.0f}x"
            cells = "  ".join(f"{show(times[e]):>13}" for e in engines)
            shown_bends = f"{bends:,}" if bends is not None else "?"
            print(f"    {name:<36} {len(keys):>5} {len(edges):>5} {shown_bends:>6}  {cells}  {ratio:>15}")
        wall, cpu = wall_and_cpu(lambda graph=graph: picture(graph), repeat)
        print(
            f"    the page's picture (picture(), all of it): {wall:.2f} s ({cpu:.2f} s of CPU), "
            f"{len(drawn.graph.nodes)} nodes, {len(drawn.graph.edges)} edges, "
            f"{core_layout_bends(drawn.graph):,} bends; its note: {drawn.note}"
        )
        centre = next(node.id for node in graph.nodes if node.kind == "dag")
        deep = picture(graph, centre, 6)  # the page's deepest: the whole estate within reach
        wall, cpu = wall_and_cpu(lambda graph=graph, centre=centre: picture(graph, centre, 6), repeat)
        print(
            f"    around {centre}, depth 6: {wall:.2f} s ({cpu:.2f} s of CPU), "
            f"{len(deep.graph.nodes)} nodes, {len(deep.graph.edges)} edges, "
            f"{core_layout_bends(deep.graph):,} bends"
        )


def wall_and_cpu(run: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds (the CPU time says what a shared machine's load hides)."""
    run()  # warm-up
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


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
    parser.add_argument(
        "--dense-timeout", type=float, default=60.0, help="seconds one dense layout may take (default 60)"
    )
    parser.add_argument("--no-dense", action="store_true", help="leave the dense estates out")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    pictures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-views-") as tmp:
        for size in [size for size in args.sizes.split(",") if size != "none"]:
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
    if not args.no_dense:
        dense(args.repeat, args.dense_timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
