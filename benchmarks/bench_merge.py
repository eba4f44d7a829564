"""Benchmark 5: merging the snapshots of many deployments, against the floor of the same input.

50 deployments' stored snapshot documents (by default 2,000 DAGs and 40,000 tasks each: 100,000
DAGs and 2,000,000 tasks in all) are generated once (``generate_estate.py``, a seed per
deployment, so their asset URIs partly coincide: lineage crosses deployments) and written as a
file sink would write them.

The pipeline is what ``python -m airflow_provider_coremodels merge D1 ... D50 --format json``
does before it prints (``federation.merge_and_push``): read each document (``load_document``),
``merge``, ``audit`` the merged estate, ``build_document``; then ``encode`` it. The floor is the
least any tool must do with the same input: read the same bytes and ``json.loads`` them. Both
are timed in this process, interleaved, ``--repeat`` times each after a warm-up; medians are
compared. Peak memory (RSS, ``VmHWM``, less the process after its imports) is measured for each
in a fresh subprocess, against holding the 50 decoded documents. Goal: at most 1.0 for each ratio.

    python benchmarks/bench_merge.py                        # 50 x 2,000 DAGs, 3 repetitions
    python benchmarks/bench_merge.py --deployments 10 --dags 500 --repeat 1   # a quick run
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:  # a checkout without the package installed: the core needs only the stdlib
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_offline import _rss, load_note, machine, peak_rss  # noqa: E402
from generate_estate import generate  # noqa: E402

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts  # noqa: E402
from airflow_provider_coremodels.core.estate.collector import gc_paused  # noqa: E402
from airflow_provider_coremodels.core.snapshots.document import encode  # noqa: E402
from airflow_provider_coremodels.jobs.federation import Source, merge_and_push  # noqa: E402


def write_snapshots(directory: Path, deployments: int, dags: int) -> list[Path]:
    """Each deployment's snapshot document, as its file sink would store it (``latest.json``)."""
    paths = []
    for index in range(deployments):
        path = directory / f"d{index:02d}" / "latest.json"
        if not path.exists():
            docs = generate(dags, seed=index)
            estate = parse_artifacts(
                *(json.dumps(docs[name]).encode() for name in ("dags", "tasks", "datasets"))
            )
            document = build_document(estate, audit(estate), max_snapshot_bytes=1 << 40)
            document["state"]["deployment"] = f"d{index:02d}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(encode(document))
        paths.append(path)
    return paths


def floor(paths: list[Path]) -> list[Any]:
    return [json.loads(path.read_bytes()) for path in paths]


def floor_paused(paths: list[Path]) -> list[Any]:
    """The floor with the cyclic collector paused, as the pipeline pauses it: not the goal's floor
    (plain ``json.loads``, as anyone calls it), but printed beside it, so it is plain how much of
    the margin that pause alone buys."""
    with gc_paused():
        return floor(paths)


def pipeline(paths: list[Path]) -> bytes:
    """What ``merge D1 ... D50 --format json`` runs (``federation.merge_and_push``, no sinks), and
    the document encoded, as the command then writes it."""
    # merge d00=PATH ...: the caller names each deployment
    sources = [Source(str(path), path.parent.name) for path in paths]
    result = merge_and_push(sources, [], max_snapshot_bytes=1 << 40)
    return encode(result.document)


def child(kind: str, directory: Path, deployments: int) -> None:
    """Peak memory of one run of ``kind`` in this fresh process; the floor also says what holding
    the decoded documents costs."""
    paths = sorted(directory.glob("d*/latest.json"))[:deployments]
    gc.collect()
    base = _rss()
    out: dict[str, int] = {}
    if kind == "floor":
        docs = floor(paths)
        gc.collect()
        out["held"] = _rss() - base
        del docs
    else:
        pipeline(paths)
    out["peak"] = peak_rss() - base
    print(json.dumps(out))


def memory(kind: str, directory: Path, deployments: int) -> dict[str, int]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        kind,
        str(directory),
        str(deployments),
    ]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--dags", type=int, default=2000, help="DAGs per deployment (20 tasks each)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="generate the snapshots here and keep them")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "DIR", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], Path(args.child[1]), int(args.child[2]))
        return 0

    print(f"machine: {machine()}; {load_note('at the start')}")
    with tempfile.TemporaryDirectory(prefix="coremodels-merge-bench-") as tmp:
        directory = Path(args.keep) if args.keep else Path(tmp)
        started = time.perf_counter()
        paths = write_snapshots(directory, args.deployments, args.dags)
        size = sum(path.stat().st_size for path in paths)
        print(f"{args.deployments} snapshots, {args.deployments * args.dags:,} DAGs, "
              f"{20 * args.deployments * args.dags:,} tasks, {size / 1e6:,.0f} MB "
              f"(written in {time.perf_counter() - started:.0f} s)\n")  # fmt: skip

        merged = json.loads(pipeline(paths))
        crossing = sum(1 for edge in merged["lineage"] if edge.get("crossDeployment"))
        facts = merged["state"]["facts"]
        print(f"merged: {facts['dags']:,} DAGs, {facts['tasks']:,} tasks, {len(merged['lineage']):,} edges "
              f"({crossing:,} across deployments), {len(merged['findings']):,} findings\n")  # fmt: skip
        del merged

        times: dict[str, list[float]] = {"floor": [], "pipeline": [], "paused": []}
        floor(paths)  # warm-up: the files in the page cache for both
        for _ in range(args.repeat):
            for name, run in (("floor", floor), ("pipeline", pipeline), ("paused", floor_paused)):
                gc.collect()
                start = time.perf_counter()
                run(paths)
                times[name].append(time.perf_counter() - start)
        floor_s, pipeline_s, paused_s = (statistics.median(times[n]) for n in ("floor", "pipeline", "paused"))
        floor_mem, pipeline_mem = (
            memory(kind, directory, args.deployments) for kind in ("floor", "pipeline")
        )

    mb = 1 << 20
    print("| measure | floor | merge pipeline | ratio (goal <= 1.0) |")
    print("|---|---:|---:|---:|")
    print(f"| wall time s (median of {args.repeat}) | {floor_s:.2f} | {pipeline_s:.2f} | "
          f"{pipeline_s / floor_s:.2f} |")  # fmt: skip
    print(f"| (beside it) wall time s, json.loads with the collector paused | {paused_s:.2f} | "
          f"{pipeline_s:.2f} | {pipeline_s / paused_s:.2f} |")  # fmt: skip
    print(f"| peak RSS MB / holding the decoded documents | {floor_mem['held'] / mb:,.0f} held "
          f"({floor_mem['peak'] / mb:,.0f} peak) | {pipeline_mem['peak'] / mb:,.0f} | "
          f"{pipeline_mem['peak'] / floor_mem['held']:.2f} |")  # fmt: skip
    print(f"\n{load_note('at the end')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
