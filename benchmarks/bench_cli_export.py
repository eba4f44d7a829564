"""What `python -m airflow_provider_coremodels export` costs with Airflow's metrics off and on.

Run: python benchmarks/bench_cli_export.py [--repeat N]

The command exports the tests' replayed Airflow 2 estate (5 DAGs, `tests/fixtures/airflow2`,
served on 127.0.0.1) to a file sink, as CI or a cron job outside Airflow runs it. With metrics
off (no `[metrics]` option anywhere: Airflow's default) it never imports Airflow; with them on
(`AIRFLOW__METRICS__STATSD_ON=True`, to a UDP port nobody reads) it imports Airflow to send them
through Airflow's `Stats`, as every export did before. A small estate on purpose: the start-up is
what differs, and on a large one the capture's own time would hide it. Prints the median wall and
CPU seconds (the command's process and its children) of each, and their ratios, measured in one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.helpers import FIXTURES  # noqa: E402
from support.replay_server import AirflowV1ReplayServer  # noqa: E402


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One run's wall and CPU seconds."""
    cpu, started = children_cpu(), time.perf_counter()
    subprocess.run(command, env=env, capture_output=True, check=True, timeout=120)
    return time.perf_counter() - started, children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, AirflowV1ReplayServer(FIXTURES / "airflow2") as airflow:
        home = Path(scratch) / "airflow-home"
        home.mkdir()
        base = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
        base.update(AIRFLOW_HOME=str(home), AF_PASSWORD=airflow.password)
        modes = {
            "metrics off (Airflow's default)": base,
            "metrics on (StatsD)": {
                **base,
                "AIRFLOW__METRICS__STATSD_ON": "True",
                "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
                "AIRFLOW__METRICS__STATSD_PORT": "9",  # discard: nobody reads it
            },
        }
        command = [
            sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", airflow.base_url,
            "--username", airflow.username, "--password-env", "AF_PASSWORD",
            "--sink", str(Path(scratch) / "out"),
        ]  # fmt: skip
        for env in modes.values():  # warm the file cache once each
            run_once(command, env)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
        for _ in range(args.repeat):  # interleaved, so a busy moment of the machine hits both
            for name, env in modes.items():
                runs[name].append(run_once(command, env))
    print(f"`export` of a 5-DAG estate to a file sink, median of {args.repeat} runs\n")
    print("| metrics | wall s | CPU s |")
    print("|---|---|---|")
    medians = {}
    for name, values in runs.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        medians[name] = (wall, cpu)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")
    (off_wall, off_cpu), (on_wall, on_cpu) = medians.values()
    print(
        f"\nmetrics off costs {off_wall / on_wall:.2f}x the wall time "
        f"and {off_cpu / on_cpu:.2f}x the CPU of metrics on"
    )


if __name__ == "__main__":
    main()
