"""Benchmark 6: how much a capture slows a real Airflow 3 API server's other clients (issue 24).

In Airflow 3 the API server a capture reads also serves the workers' execution API. This
starts a real ``airflow api-server --workers 1`` (SQLite, the simple auth manager, through
``tests/support/airflow_server.py``) on an estate of dynamic DAG files (``bench_vs_client.py``'s
estate, made in a loop from a JSON plan: default 2,000 DAGs of 20 tasks, 40,000 tasks), and
runs a steady probe of the server's other clients beside it: a worker's request
(``GET /execution/health``, unauthenticated) and the cheapest authenticated read of one DAG
(``GET /api/v2/dags/{dag_id}`` with a JWT), each once per ``--probe-interval`` on a kept-alive
connection of its own. It measures the probes' latency while nothing else runs (idle), then
runs captures in turn, interleaved (``--repeat`` rounds, the order alternating): the adaptive one
(``pacing="adaptive"``, at most ``--concurrency`` 16) and the fixed windows of before
(``pacing="fixed"``, ``--fixed 16,8``: today's unthrottled 16 and the default 8), with ``--gap``
seconds of idle probing between runs. It prints, per capture, the probes' p50/p95 during it as a
ratio of their idle p50/p95, its wall time, requests, retries, the window it moved in and the
server's CPU; then the two goals: probe p95 during the adaptive capture at most 1.5x idle, its
wall time at most 1.25x each fixed capture's.

    python benchmarks/bench_polite.py                       # 2,000 DAGs, 3 rounds
    python benchmarks/bench_polite.py --dags 200 --repeat 1 # a quick run (about a minute of start-up)
    python benchmarks/bench_polite.py --dags 20 --tasks-per-dag 3 --repeat 1 --idle 2 --gap 0.5  # CI

Run it with the project's interpreter (Airflow and this provider installed). The server's
start-up (``airflow db migrate``, ``airflow dags reserialize``) takes about a minute at 2,000 DAGs
on 2 cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_offline import load_note, machine  # noqa: E402
from bench_vs_client import (  # noqa: E402
    PASSWORD,
    USERNAME,
    CpuSampler,
    _digest,
    group_pids,
    plan_digest,
    plan_estate,
    server_errors,
    write_dynamic_dag_files,
)
from support.airflow_server import AirflowApiServer  # noqa: E402

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture  # noqa: E402
from airflow_provider_coremodels.capture.pacing import Pacer  # noqa: E402

GOAL_PROBE_P95 = 1.5  # probe p95 during the adaptive capture / idle p95
GOAL_WALL = 1.25  # adaptive capture's wall time / the fixed capture's


@dataclass
class Sample:
    sent: float  # time.monotonic()
    seconds: float
    ok: bool


@dataclass
class Probe:
    """One steady client of the server: the same request every ``interval`` seconds (or as soon as
    the last one answered, if it took longer), on one kept-alive connection."""

    name: str
    url: str
    interval: float
    token: str | None = None
    samples: list[Sample] = field(default_factory=list)

    def run(self, stop: threading.Event) -> None:
        session = requests.Session()
        session.trust_env = False
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        next_at = time.monotonic()
        while not stop.is_set():
            sent = time.monotonic()
            try:
                ok = session.get(self.url, headers=headers, timeout=60).status_code == 200
            except requests.RequestException:
                ok = False
            self.samples.append(Sample(sent, time.monotonic() - sent, ok))
            next_at += self.interval
            stop.wait(max(0.0, next_at - time.monotonic()))
        session.close()

    def within(self, windows: list[tuple[float, float]]) -> list[float]:
        return [s.seconds for s in self.samples if any(a <= s.sent <= b for a, b in windows)]


def probe_process(probe: Probe, stop: Any, out: Any) -> None:
    """A probe in a process of its own, as a worker is: the capture's client work (decoding its
    answers, holding this process's interpreter lock) must not count as the server's slowness.
    ``time.monotonic`` is the system's monotonic clock, the same in every process."""
    probe.run(stop)
    out.put([(s.sent, s.seconds, s.ok) for s in probe.samples])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_capture(
    base_url: str, pacing: str, concurrency: int, settings: dict[str, float] | None = None
) -> dict[str, Any]:
    """One capture; its figures, and the window its pacer moved in. ``settings``: the adaptive
    pacer's ``tolerance`` and ``share`` where they differ from the defaults (an experiment)."""
    wall0, cpu0 = time.monotonic(), time.process_time()
    client = AirflowApiClient(
        ApiSource(base_url, username=USERNAME, password=PASSWORD, concurrency=concurrency, pacing=pacing)
    )
    if settings:
        client.pacer = Pacer(concurrency, adaptive=True, **settings)
    try:
        result = capture(client)
    finally:
        client.close()
    wall1, cpu1 = time.monotonic(), time.process_time()
    lines = [f"dag {dag['dag_id']}" for dag in result.dags["dags"]]
    lines += [f"task {dag_id} {t['task_id']}" for dag_id, body in result.tasks.items() for t in body["tasks"]]
    for asset in result.datasets["assets"]:
        lines.append(f"asset {asset['uri']}")
        lines += [f"produces {asset['uri']} {ref['dag_id']}" for ref in asset.get("producing_tasks", [])]
        lines += [f"schedules {asset['uri']} {ref['dag_id']}" for ref in asset.get("scheduled_dags", [])]
    window = client.pacer.window
    label = "adaptive" + "".join(f" {k}={v:g}" for k, v in (settings or {}).items())
    return {
        "pacing": label if pacing == "adaptive" else f"fixed {concurrency}",
        "started": wall0,
        "ended": wall1,
        "seconds": wall1 - wall0,
        "cpu": cpu1 - cpu0,
        "requests": result.summary.requests,
        "retries": result.summary.retries,
        "lost": len(result.lossiness),
        "digest": _digest(lines),
        "window": f"{window.smallest}-{window.largest}",
        "final": window.size,
        "peak": client.pacer.peak,
        "decreases": window.decreases,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dags", type=int, default=2000, help="DAGs to generate (default 2000)")
    parser.add_argument("--tasks-per-dag", type=int, default=20)
    parser.add_argument("--dags-per-file", type=int, default=250, help="DAGs per dynamic file (default 250)")
    parser.add_argument("--concurrency", type=int, default=16, help="the adaptive window's ceiling (16)")
    parser.add_argument(
        "--fixed", default="16,8", help="the fixed windows to compare with (default 16,8; '' for none)"
    )
    parser.add_argument(
        "--adaptive",
        default="",
        help="adaptive captures besides the default one, ';'-separated, each its pacer's settings "
        "(e.g. 'share=1;share=0.5,tolerance=0.25'); default: none",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every capture (default 3)")
    parser.add_argument("--idle", type=float, default=15.0, help="seconds of idle probing first (default 15)")
    parser.add_argument("--gap", type=float, default=5.0, help="idle seconds between captures (default 5)")
    parser.add_argument("--probe-interval", type=float, default=0.1, help="seconds between probes (0.1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument("--command-timeout", type=float, default=3600.0)
    args = parser.parse_args(argv)
    args.fixeds = [int(c) for c in args.fixed.split(",") if c.strip()]
    args.variants = [{}] + [
        {k.strip(): float(v) for k, v in (pair.split("=") for pair in spec.split(","))}
        for spec in args.adaptive.split(";")
        if spec.strip()
    ]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"machine: {machine()}")
    print(load_note("at start"))
    with tempfile.TemporaryDirectory(prefix="bench-polite-") as tmp_name:
        tmp = Path(tmp_name)
        plan = plan_estate(args.dags, args.tasks_per_dag, args.seed)
        files = write_dynamic_dag_files(plan, tmp / "dags", args.dags_per_file, args.seed)
        print(
            f"estate: {len(plan.dags)} DAGs in {files} dynamic files, {plan.tasks} tasks, "
            f"{len(plan.assets)} assets"
        )
        with AirflowApiServer(
            tmp / "dags",
            username=USERNAME,
            password=PASSWORD,
            home=tmp / "airflow-home",
            extra_env={"AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "600"},
            startup_timeout=args.startup_timeout,
            command_timeout=args.command_timeout,
        ) as server:
            timings = {k: round(v, 1) for k, v in server.timings.items()}
            version = server.get("/api/v2/version").json()["version"]
            print(f"Airflow {version} api-server --workers 1 at {server.base_url}; start-up (s): {timings}")
            assert server._process is not None
            runs, probes, idle = measure(args, server, server._process.pid, plan.dags[0].dag_id)
            home = server.home
            errors = server_errors(sorted(home.glob("api-server*.log"))) if home else []
    print(load_note("at end"))
    want = plan_digest(plan)
    bad = [r for r in runs if r["digest"] != want or r["lost"]]
    if bad:
        print(f"MISMATCH: {len(bad)} capture(s) did not see the planned estate")
    report(args, runs, probes, idle)
    if errors:
        print(f"\nthe api-server logged {len(errors)} error line(s), the last ones:")
        print("\n".join(f"  {line}" for line in errors[-8:]))
    return 1 if bad else 0


def measure(
    args: argparse.Namespace, server: AirflowApiServer, group: int, dag_id: str
) -> tuple[list[dict[str, Any]], list[Probe], list[tuple[float, float]]]:
    """Warm up, probe idle, then the interleaved captures, probing throughout."""
    run_capture(server.base_url, "adaptive", args.concurrency)  # warm-up: imports, caches, not timed
    probes = [
        Probe("worker: GET /execution/health", f"{server.base_url}/execution/health", args.probe_interval),
        Probe(
            "authenticated: GET /api/v2/dags/{id}",
            f"{server.base_url}/api/v2/dags/{dag_id}",
            args.probe_interval,
            token=server.token(),
        ),
    ]
    context = multiprocessing.get_context("spawn")  # no fork of a process running threads
    stop = context.Event()
    outs = [context.Queue() for _ in probes]
    processes = [
        context.Process(target=probe_process, args=(p, stop, out))
        for p, out in zip(probes, outs, strict=True)
    ]
    sampler = CpuSampler(group_pids(group))
    sampler.start()
    for process in processes:
        process.start()
    idle: list[tuple[float, float]] = []
    runs: list[dict[str, Any]] = []
    try:
        start = time.monotonic()
        time.sleep(args.idle)  # the first half warms the probes' endpoints up: not counted
        idle.append((start + args.idle / 2, time.monotonic()))
        for rep in range(args.repeat):
            order: list[tuple[str, int, dict[str, float]]] = [
                ("adaptive", args.concurrency, settings) for settings in args.variants
            ] + [("fixed", c, {}) for c in args.fixeds]
            for pacing, concurrency, settings in order if rep % 2 == 0 else order[::-1]:
                run = run_capture(server.base_url, pacing, concurrency, settings)
                run.update(sampler.window(run["started"], run["ended"]))
                runs.append(run)
                print(
                    f"  round {rep + 1}/{args.repeat} {run['pacing']:<8} {run['seconds']:6.2f} s, "
                    f"{run['requests']} requests, window {run['window']}, server {run['server_mean']:.0%} "
                    "of a core",
                    flush=True,
                )
                gap_start = time.monotonic()
                time.sleep(args.gap)
                idle.append((gap_start + args.gap / 2, time.monotonic()))  # after the last answers drain
    finally:
        stop.set()
        for probe, out, process in zip(probes, outs, processes, strict=True):
            try:  # read before join: a process with queued data does not end until it is read
                probe.samples = [Sample(*sample) for sample in out.get(timeout=70)]
            except queue.Empty:
                print(f"probe {probe.name!r} sent no samples", file=sys.stderr)
            process.join(timeout=10)
        sampler.stop()
    return runs, probes, idle


def report(
    args: argparse.Namespace, runs: list[dict[str, Any]], probes: list[Probe], idle: list[tuple[float, float]]
) -> None:
    print()
    print(f"{args.dags} DAGs, {args.dags * args.tasks_per_dag} tasks; api-server --workers 1; concurrency "
          f"{args.concurrency}; {os.cpu_count()} cores; probes every {args.probe_interval:g} s")  # fmt: skip
    idle_stats = {}
    for probe in probes:
        values = probe.within(idle)
        idle_stats[probe.name] = (percentile(values, 0.5), percentile(values, 0.95))
        print(
            f"idle {probe.name}: p50 {idle_stats[probe.name][0] * 1000:.2f} ms, "
            f"p95 {idle_stats[probe.name][1] * 1000:.2f} ms ({len(values)} probes)"
        )
    header = (
        f"{'capture':<10} {'wall s':>7} {'requests':>8} {'retries':>7} {'window':>7} {'peak':>4} "
        f"{'client CPU s':>12} {'server CPU s':>12} {'server ms/req':>13}"
    )
    for probe in probes:
        header += f" | {probe.name.split(':')[0] + ' p50x':>13} {'p95x':>6}"
    print(header)
    print("-" * len(header))
    summary: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        row = (
            f"{run['pacing']:<10} {run['seconds']:>7.2f} {run['requests']:>8} {run['retries']:>7} "
            f"{run['window']:>7} {run['peak']:>4} {run['cpu']:>12.2f} {run['server_cpu']:>12.2f} "
            f"{run['server_cpu'] / run['requests'] * 1000:>13.2f}"
        )
        mine = summary.setdefault(run["pacing"], {"seconds": []})
        mine["seconds"].append(run["seconds"])
        for probe in probes:
            values = probe.within([(run["started"], run["ended"])])
            p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
            i50, i95 = idle_stats[probe.name]
            row += f" | {p50 / i50:>13.2f} {p95 / i95:>6.2f}"
            mine.setdefault(probe.name, []).extend(values)
        print(row)
    print("pXXx: the probe's latency percentile during the capture over its idle percentile")
    print()
    for label, adaptive in summary.items():
        if not label.startswith("adaptive"):
            continue
        for name, mine in summary.items():
            if name.startswith("fixed"):
                wall = statistics.median(adaptive["seconds"]) / statistics.median(mine["seconds"])
                print(
                    f"{label} / {name} wall time (medians): {wall:.2f} (goal <= {GOAL_WALL}: "
                    f"{'met' if wall <= GOAL_WALL else 'MISSED'})"
                )
    for probe in probes:
        i50, i95 = idle_stats[probe.name]
        for pacing, mine in summary.items():
            values = mine[probe.name]
            p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
            verdict = ""
            if pacing.startswith("adaptive"):
                verdict = (
                    f" (goal p95 <= {GOAL_PROBE_P95}x: {'met' if p95 / i95 <= GOAL_PROBE_P95 else 'MISSED'})"
                )
            print(
                f"{probe.name} during {pacing} captures: p50 {p50 * 1000:.2f} ms = {p50 / i50:.2f}x idle, "
                f"p95 {p95 * 1000:.2f} ms = {p95 / i95:.2f}x idle{verdict}"
            )


if __name__ == "__main__":
    sys.exit(main())
