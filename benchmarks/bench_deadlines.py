"""Benchmark: what reading deadline alerts costs a capture of a real Airflow 3.3 API server.

Airflow 3.3 serves a DAG's deadline alerts only through its UI's ``GET /ui/dags/{dag_id}/deadlineAlerts``,
one DAG per request, so the capture asks once per DAG, beside the tasks request it already makes
per DAG. This starts a real server (``tests/support/airflow_server.py``) on a generated folder of
``--dags`` DAGs (one in ten with a ``DeadlineAlert``), then, in ``--repeat`` alternating rounds,
times every DAG's tasks request and every DAG's deadline-alerts request, one at a time through the
capture's own client, and prints the server's time per request of each and their ratio; then one
full capture, its request count and how many of them were for deadline alerts.

    python benchmarks/bench_deadlines.py                 # 200 DAGs, 3 rounds
    python benchmarks/bench_deadlines.py --dags 500 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))

from support.airflow_server import AirflowApiServer  # noqa: E402

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture  # noqa: E402
from airflow_provider_coremodels.capture.client import NotFound  # noqa: E402

FILE = """
from datetime import timedelta

import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, AsyncCallback
from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference


async def late(**kwargs):
    pass


for i in range({first}, {last}):
    extra = {{}}
    if i % 10 == 0:
        extra["deadline"] = DeadlineAlert(
            reference=DeadlineReference.DAGRUN_QUEUED_AT, interval=timedelta(hours=1),
            callback=AsyncCallback(late), name=f"late-{{i}}",
        )
    with DAG(f"dag_{{i:04d}}", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             description="generated", **extra):
        EmptyOperator(task_id="a") >> EmptyOperator(task_id="b")
"""


def write_folder(folder: Path, dags: int, per_file: int = 50) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, first in enumerate(range(0, dags, per_file)):
        last = min(dags, first + per_file)
        (folder / f"generated_{n:03d}.py").write_text(FILE.format(first=first, last=last))


def timed(client: AirflowApiClient, paths: list[str], under_api: bool) -> float:
    """Seconds per request, one request at a time."""
    started = time.perf_counter()
    for path in paths:
        client.get_json(path, None if under_api else {"limit": 100}, under_api=under_api)
    return (time.perf_counter() - started) / len(paths)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dags", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coremodels-deadlines-bench-") as tmp:
        folder = Path(tmp) / "dags"
        write_folder(folder, args.dags)
        with AirflowApiServer(folder, command_timeout=900) as server:
            source = ApiSource(server.base_url, username=server.username, password=server.password)
            with AirflowApiClient(source) as client:
                client.connect()
                ids = [d["dag_id"] for d in client.get_json("/dags", {"limit": 100})["dags"]]
                ids = ids[: args.dags]
                tasks = [f"/dags/{quote(i, safe='')}/tasks" for i in ids]
                alerts = [f"/ui/dags/{quote(i, safe='')}/deadlineAlerts" for i in ids]
                timed(client, tasks[:10], True), timed(client, alerts[:10], False)  # warm-up
                try:  # the runs' route takes '~' for every DAG: does the alerts' route?
                    client.get_json("/ui/dags/~/deadlineAlerts", under_api=False)
                    every = "answered"
                except NotFound:
                    every = "HTTP 404"
                per_tasks, per_alerts = [], []
                for round_ in range(args.repeat):
                    order = [(per_tasks, tasks, True), (per_alerts, alerts, False)]
                    for out, paths, under_api in order if round_ % 2 == 0 else reversed(order):
                        out.append(timed(client, paths, under_api))
            with AirflowApiClient(source) as client:
                started = time.perf_counter()
                result = capture(client)
                wall = time.perf_counter() - started
    t, a = statistics.median(per_tasks), statistics.median(per_alerts)
    print(f"{len(ids)} DAGs timed (of {args.dags}), {args.repeat} alternating rounds, one request at a time")

    def ms(rounds: list[float]) -> str:
        return ", ".join(f"{x * 1000:.2f}" for x in rounds)

    print(f"  tasks request:           {t * 1000:6.2f} ms median (rounds: {ms(per_tasks)})")
    print(f"  deadline-alerts request: {a * 1000:6.2f} ms median (rounds: {ms(per_alerts)})")
    print(f"  ratio deadline/tasks:    {a / t:6.2f}")
    print(f"GET /ui/dags/~/deadlineAlerts (every DAG at once): {every}")
    s = result.summary
    print(
        f"full capture: {s.requests} requests, {s.deadlines} for deadline alerts "
        f"({s.deadlines / s.requests:.0%}), {wall:.1f} s; {s.line()}"
    )
    with_alert = sum(
        1 for d in result.estate().dags() if d.metadata.get("airflow.deadline") not in (None, "[]")
    )
    print(f"DAGs with a deadline alert read: {with_alert} (expected {len(range(0, args.dags, 10))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
