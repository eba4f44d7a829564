"""Benchmark 7: the MCP server's tools on large snapshots, against ``json.loads`` of the same bytes.

A snapshot of N generated DAGs (``generate_estate.py``; 20 tasks each) is stored as ``export``
stores one, and served by ``python -m airflow_provider_coremodels mcp --snapshot S --baseline S``
as an assistant starts it: a subprocess speaking JSON-RPC over stdio, driven by the MCP SDK's own
client. Each tool call is timed around the client's call (the whole round trip: the request, the
query, the answer encoded and decoded), ``--repeat`` times after one warm-up call; the median is
compared with the median time of ``json.loads`` of the snapshot's bytes, measured in this process
in the same run. A ratio well under 1 means the call does not re-read or re-scan the snapshot:
the server answers from indexes built once at start-up. ``n -> 4n`` is each call's time at the
larger size over its time at the smaller: at most 4.4 for a call whose answer grows with the
estate (a paged answer should stay near 1).

Needs the ``mcp`` extra (``pip install 'airflow-provider-coremodels[mcp]'``; the dev install has it).

    python benchmarks/bench_mcp.py                      # 2,500 and 10,000 DAGs, 5 repetitions
    python benchmarks/bench_mcp.py --sizes 200 --repeat 1   # the smoke run (seconds)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_offline import load_note, machine  # noqa: E402
from generate_estate import generate  # noqa: E402

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts  # noqa: E402
from airflow_provider_coremodels.core.snapshots.document import encode  # noqa: E402

#: The goal for a call's ratio to json.loads of the snapshot, and for its growth from n to 4n.
RATIO_GOAL = 1.0
SCALING_GOAL = 4.4


def write_snapshot(directory: Path, dags: int) -> Path:
    docs = generate(dags, seed=0)
    estate = parse_artifacts(*(json.dumps(docs[name]).encode() for name in ("dags", "tasks", "datasets")))
    path = directory / f"snapshot-{dags}.json"
    path.write_bytes(encode(build_document(estate, audit(estate), max_snapshot_bytes=1 << 40)))
    return path


def floor_seconds(path: Path, repeat: int) -> float:
    data = path.read_bytes()
    json.loads(data)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        json.loads(data)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def the_calls(path: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """The questions, chosen from the snapshot: a producing DAG, the busiest asset, the last page."""
    document = json.loads(path.read_bytes())
    producing = [edge for edge in document["lineage"] if edge["dependentKind"] == "asset"]
    dag = producing[0]["dependsOn"]
    busiest = Counter(
        edge["dependent"] if edge["dependentKind"] == "asset" else edge["dependsOn"]
        for edge in document["lineage"]
    )
    hub = busiest.most_common(1)[0][0]
    findings = len(document["findings"])
    return [
        ("snapshot_facts", "snapshot_facts", {}),
        ("list_findings, first page", "list_findings", {"limit": 500}),
        ("list_findings, last page", "list_findings", {"offset": max(findings - 10, 0), "limit": 500}),
        ("list_findings, filtered", "list_findings", {"severity": "warning", "subject": "*_0*"}),
        ("describe_dataset, a DAG", "describe_dataset", {"identity": dag, "limit": 500}),
        ("describe_dataset, the busiest asset", "describe_dataset", {"identity": hub}),
        ("lineage_around, depth 2", "lineage_around", {"identity": hub, "include_mermaid": True}),
        ("lineage_around, depth 50", "lineage_around", {"identity": hub, "depth": 50, "limit": 500}),
        ("downstream_impact, the busiest asset", "downstream_impact", {"identity": hub, "limit": 500}),
        ("drift_from_baseline", "drift_from_baseline", {"limit": 500}),
        ("describe_dataset, unknown (did you mean)", "describe_dataset", {"identity": dag + "_typo"}),
    ]


def serve_and_time(path: Path, repeat: int) -> tuple[float, dict[str, float]]:
    """The server's start-up (until it answers ``initialize``) and each call's median seconds."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    calls = the_calls(path)
    env = {key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "PYTHONPATH")}
    env.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "airflow_provider_coremodels", "mcp", "--snapshot", str(path), "--baseline", str(path)],
        env=env,
    )

    async def main() -> tuple[float, dict[str, float]]:
        medians: dict[str, float] = {}
        with open(os.devnull, "w") as quiet:
            started = time.perf_counter()
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                start_up = time.perf_counter() - started
                for label, tool, arguments in calls:
                    await session.call_tool(tool, arguments)  # warm-up: first-call caches
                    times = []
                    for _ in range(repeat):
                        began = time.perf_counter()
                        result = await session.call_tool(tool, arguments)
                        times.append(time.perf_counter() - began)
                    expect_error = label.endswith("(did you mean)")
                    if bool(result.is_error) != expect_error:
                        raise SystemExit(f"{label}: unexpected answer: {result.content}")
                    medians[label] = statistics.median(times)
        return start_up, medians

    return anyio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="2500,10000", help="DAG counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    print(
        "# Benchmark 7: MCP tools against json.loads of the snapshot\n\n"
        f"{machine()}; {load_note('at the start')}\n"
    )
    results: dict[int, tuple[float, float, dict[str, float], int]] = {}
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-mcp-") as tmp:
        for size in sizes:
            path = write_snapshot(Path(tmp), size)
            floor = floor_seconds(path, max(args.repeat, 3))
            start_up, medians = serve_and_time(path, args.repeat)
            results[size] = (floor, start_up, medians, path.stat().st_size)
    for size, (floor, start_up, medians, nbytes) in results.items():
        print(f"## {size:,} DAGs: snapshot {nbytes / 1e6:.1f} MB, json.loads {floor * 1000:.0f} ms, "
              f"server start-up {start_up:.2f} s\n")  # fmt: skip
        print("| call | median | / json.loads | goal | |")
        print("|---|---:|---:|---:|---|")
        for label, seconds in medians.items():
            ratio = seconds / floor
            met = "met" if ratio <= RATIO_GOAL else "MISSED"
            print(f"| {label} | {seconds * 1000:.1f} ms | {ratio:.3f} | ≤ {RATIO_GOAL} | {met} |")
        print()
    print(load_note("at the end") + "\n")
    pairs = [(small, large) for small in sizes for large in sizes if large == 4 * small]
    for small, large in pairs:
        print(f"## {small:,} -> {large:,} DAGs (4x)\n")
        print("| call | growth | goal | |")
        print("|---|---:|---:|---|")
        for label, seconds in results[large][2].items():
            growth = seconds / results[small][2][label]
            met = "met" if growth <= SCALING_GOAL else "MISSED"
            print(f"| {label} | {growth:.2f}x | ≤ {SCALING_GOAL}x | {met} |")
        print()


if __name__ == "__main__":
    main()
