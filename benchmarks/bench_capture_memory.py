"""Benchmark: a capture's peak memory against the number of DAGs that send large answers (issue 44).

A fake Airflow 3.3 on 127.0.0.1 (``tests/support/large_answers.py``) serves ``--dags`` DAGs whose
tasks, or whose deadline alerts, each come in one answer of about 60 MB (under the 64 MiB cap on
one answer). ``python -m airflow_provider_coremodels export`` (and ``capture --out``) runs against
it as a user runs it, each in a fresh subprocess whose own peak RSS (``VmHWM``) is measured, beside
the same command against small answers (the interpreter, the imports and the estate). With
``--before PATH`` the same commands run a second package (another checkout, e.g. the main branch
before this change) in the same run, so before and after are measured under the same load.

    python benchmarks/bench_capture_memory.py                        # 1, 3 and 6 DAGs
    python benchmarks/bench_capture_memory.py --dags 3 --before /path/to/old/checkout

The answer of the issue: ``export``'s peak is the small answers' peak plus a few MB, whatever the
number of DAGs; before, every answer was decoded whole and every item kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from support.large_answers import ANSWER_BYTES, LargeAnswers  # noqa: E402
from support.measured import run_measured  # noqa: E402

PASSWORD = "bench-password"


def run(server: LargeAnswers, command: str, root: Path) -> tuple[float, float, int]:
    """``command`` (export or capture) against ``server`` with the package at ``root``: peak RSS
    in MB, seconds, exit code."""
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-") as tmp:
        where = (
            ["--sink", tmp, "--max-snapshot-bytes", "100000000"] if command == "export" else ["--out", tmp]
        )
        measured = run_measured(
            command,
            "--base-url",
            server.base_url,
            "--username",
            "admin",
            "--password-env",
            "BENCH_PASSWORD",
            *where,
            env={"BENCH_PASSWORD": PASSWORD, "PYTHONPATH": str(root)},
            cwd=root,
            timeout=1800,
        )  # fmt: skip (cwd: python -c puts the working directory first on the path)
    return measured.peak_rss_mb, measured.seconds, measured.code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dags", default="1,3,6", help="comma-separated DAG counts (default 1,3,6)")
    parser.add_argument("--kinds", default="tasks,alerts", help="which answers are large (default both)")
    parser.add_argument("--commands", default="export,capture", help="export, capture (capture --out)")
    parser.add_argument("--before", help="another checkout of the package, measured beside this one")
    parser.add_argument("--answer-mb", type=float, default=ANSWER_BYTES / 1e6, help="each large answer (60)")
    parser.add_argument("--json", help="also write the raw results to this file")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.dags.split(",")]
    roots = {"this": REPO} | ({"before": Path(args.before).resolve()} if args.before else {})
    load = os.getloadavg()[0]
    size = int(args.answer_mb * 1e6)
    print(f"answers of {size / 1e6:.0f} MB each; load average at the start {load:.2f} on "
          f"{os.cpu_count()} cores\n")  # fmt: skip
    print(
        "| command | large | DAGs | package | peak RSS MB | small answers, MB | over small, MB | s | exit |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    results = []
    for command in args.commands.split(","):
        for kind in args.kinds.split(","):
            if command == "capture" and kind == "alerts":
                continue  # capture --out and export read alerts alike
            for dags in counts:
                for name, root in roots.items():
                    with LargeAnswers(dags, None) as server:
                        small = run(server, command, root)[0]
                    with LargeAnswers(dags, kind, size) as server:
                        peak, seconds, code = run(server, command, root)
                    row = {"command": command, "kind": kind, "dags": dags, "package": name}
                    results.append({**row, "peak": peak, "small": small, "seconds": seconds, "code": code})
                    print(f"| {command} | {kind} | {dags} | {name} | {peak:,.0f} | {small:,.0f} "
                          f"| {peak - small:,.0f} | {seconds:.1f} | {code} |", flush=True)  # fmt: skip
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
