"""Benchmark 3: capture against a real Airflow 3 API server, versus a sequential official-client crawl.

1. Generates a deterministic estate of Python DAG files (default M = 1,000 DAGs of 20
   ``EmptyOperator`` tasks, chained; one asset per two DAGs, produced by one or two DAGs and
   scheduling zero to three others; about one DAG in ten paused), 50 DAGs per file.
2. Starts a real ``airflow api-server`` on 127.0.0.1 with ``tests/support/airflow_server.py``
   (SQLite, ``airflow db migrate`` + ``airflow dags reserialize``, one API worker process). With
   ``--workers N`` a second api-server with N workers is started on the same database and the
   crawls go there; ``--dag-cache-size`` sets the server's ``[api] dag_cache_size``.
3. Creates a throw-away virtualenv (a temporary folder, or ``--client-venv DIR`` to keep and
   reuse one) with the official ``apache-airflow-client`` and ``requests``, so neither ever enters
   the project's environment, and runs there ``client_crawl.py``, what a user would write with
   it: a JWT from ``POST /auth/token`` (as the client's README does it), the DAG list page by
   page (limit 100), ``get_tasks`` for each DAG, the asset list page by page, one request after
   another (with the same ``order_by`` as the capture, so the server does the same work). The
   crawl times itself
   after its imports, so neither virtualenv creation nor interpreter start-up counts, and prints
   its figures as JSON.
4. Times ``capture(AirflowApiClient(ApiSource(url, username, password, concurrency=C, pacing=P)))``
   in-process against the same server (client creation, version, token and the whole crawl),
   for each C (default 8, 16, and 1 for reference) and each pacing P (``--pacing``: adaptive, the
   default, fixed, or both), interleaved with the client's crawl, after
   one untimed warm-up crawl of each, several repetitions, medians. Before each timed run it
   waits (up to ``--quiet-wait`` s) for other work on the machine to calm down.
5. Checks that every crawler saw the DAGs, tasks, assets and asset producers/schedulers the
   generator planned (counts and a digest over them), then prints the table, the ratio
   (theirs / ours), the phase timings, and where the CPU went during each crawl: the api-server
   process group's CPU seconds and busy share of one core, sampled from ``/proc`` every 0.1 s,
   the crawler's own CPU seconds, and the whole machine's; then the bound this puts on the
   ratio. ``--profile DIR`` also samples the server and the crawler with py-spy (the GIL
   holder only) and prints where their time goes, by layer.

    python benchmarks/bench_vs_client.py                          # M: 1,000 DAGs, 5 repetitions
    python benchmarks/bench_vs_client.py --dags 100 --repeat 2    # a quick run
    python benchmarks/bench_vs_client.py --client-venv /tmp/afc   # keep the client venv for reruns
    python benchmarks/bench_vs_client.py --profile /tmp/prof      # and where the time goes
    python benchmarks/bench_vs_client.py --workers 2 --concurrency 8,16
    python benchmarks/bench_vs_client.py --dags 2000 --dynamic --dags-per-file 250 \
        --concurrency 16 --pacing adaptive,fixed --repeat 2   # the full-size figure (issue 24)

Run it with the project's interpreter (the one with Airflow and this provider installed, e.g.
``.venv/bin/python`` after ``make install``); the client's virtualenv is made from the same
Python. Needs PyPI (or the configured index) for the client's install; ``--profile`` needs
py-spy (beside the interpreter or on PATH) and the right to attach to processes (root, or
ptrace allowed).

Against Airflow 3.3.2 with the default database pool (5 + 10 overflow connections), more than
about 15 requests in flight can stall the one-worker server for the pool's 30 s timeout: the
JWT revocation check runs a synchronous query on the event loop (apache/airflow#66493), so the
loop waits for a connection that only the loop itself can free. Concurrency 16 hits it now and
then (the capture retries the HTTP 500 that follows); 32 hits it every time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))
from bench_offline import load_note, machine  # noqa: E402
from support.airflow_server import AirflowApiServer, free_port  # noqa: E402

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture  # noqa: E402

USERNAME = "admin"
PASSWORD = "bench-vs-client-password"
PAGE_LIMIT = 100
TARGET_RATIO = 2.0
DEFAULT_CLIENT = "apache-airflow-client==3.3.2"  # the client release of the Airflow tested (3.3.x, API v2)

# -- the DAG files --------------------------------------------------------------------------

TEAMS = ("finance", "marketing", "growth", "risk", "payments", "logistics", "crm", "search",
         "billing", "fraud", "supply", "analytics")  # fmt: skip
DOMAINS = ("orders", "customers", "invoices", "sessions", "shipments", "refunds", "ledger",
           "inventory", "clicks", "campaigns", "accounts", "events")  # fmt: skip
VERBS = ("extract", "validate", "transform", "load", "check", "stage", "dedupe", "enrich",
         "aggregate", "merge", "snapshot", "score", "compact", "export", "archive", "notify")  # fmt: skip
TAGS = ("daily", "hourly", "pii", "gold", "silver", "bronze", "sla", "tier-1", "tier-2", "reporting")
CRONS = ("0 5 * * *", "30 2 * * *", "@daily", "@hourly", "15 */4 * * *", None)
BUCKETS = ("lake", "warehouse", "curated", "exports")


@dataclass
class DagPlan:
    dag_id: str
    owner: str | None
    description: str | None
    tags: list[str]
    paused: bool
    cron: str | None
    produces: int | None = None  # the asset its last task publishes
    consumes: list[int] = field(default_factory=list)  # the assets it is scheduled on


@dataclass
class EstatePlan:
    dags: list[DagPlan]
    assets: list[str]  # URIs
    tasks_per_dag: int

    @property
    def tasks(self) -> int:
        return len(self.dags) * self.tasks_per_dag


def plan_estate(n_dags: int, tasks_per_dag: int, seed: int) -> EstatePlan:
    """The same seed gives the same estate: DAG i produces asset i // 2 when i is even, and half the
    odd ones produce it too; every asset schedules zero to three other DAGs."""
    rng = random.Random(seed)
    dags = []
    for i in range(n_dags):
        domain = DOMAINS[i % len(DOMAINS)]
        team = rng.choice(TEAMS)
        dags.append(
            DagPlan(
                dag_id=f"{team}_{domain}_{i:05d}",
                owner=None if rng.random() < 0.05 else f"{team}-team",
                description=None if rng.random() < 0.15 else f"Builds {domain} for the {team} team",
                tags=sorted(rng.sample(TAGS, rng.randint(0, 3))),
                paused=rng.random() < 0.1,
                cron=rng.choice(CRONS),
            )
        )
    n_assets = max(1, n_dags // 2)
    assets = [
        f"s3://{BUCKETS[j % len(BUCKETS)]}/{DOMAINS[(2 * j) % len(DOMAINS)]}/part_{j:05d}.parquet"
        for j in range(n_assets)
    ]
    for j in range(n_assets):
        producers = [2 * j] if 2 * j < n_dags else [0]
        if 2 * j + 1 < n_dags and rng.random() < 0.5:
            producers.append(2 * j + 1)
        for p in producers:
            dags[p].produces = j
        others = [k for k in range(n_dags) if k not in producers]
        for k in rng.sample(others, min(len(others), rng.randint(0, 3))):
            dags[k].consumes.append(j)
    for dag in dags:
        dag.consumes.sort()
    return EstatePlan(dags, assets, tasks_per_dag)


def _dag_source(dag: DagPlan, plan: EstatePlan) -> str:
    task_ids = [f"{VERBS[n % len(VERBS)]}_{n:02d}" for n in range(plan.tasks_per_dag - 1)]
    args = [f"dag_id={dag.dag_id!r}"]
    if dag.description is not None:
        args.append(f"description={dag.description!r}")
    if dag.consumes:
        args.append("schedule=[" + ", ".join(f"Asset({plan.assets[j]!r})" for j in dag.consumes) + "]")
    else:
        args.append(f"schedule={dag.cron!r}")
    args += ["start_date=START", "catchup=False", f"tags={dag.tags!r}"]
    if dag.owner is not None:
        args.append(f"default_args={{'owner': {dag.owner!r}}}")
    if dag.paused:
        args.append("is_paused_upon_creation=True")
    outlets = f", outlets=[Asset({plan.assets[dag.produces]!r})]" if dag.produces is not None else ""
    last = f"publish_{plan.tasks_per_dag - 1:02d}"
    return (
        f"with DAG({', '.join(args)}):\n"
        f"    steps = [EmptyOperator(task_id=task_id) for task_id in {task_ids!r}]\n"
        f"    steps.append(EmptyOperator(task_id={last!r}{outlets}))\n"
        "    chain(*steps)\n"
    )


def write_dag_files(plan: EstatePlan, folder: Path, dags_per_file: int, seed: int) -> int:
    """Write the plan as Python DAG files; returns how many files."""
    folder.mkdir(parents=True, exist_ok=True)
    files = 0
    for start in range(0, len(plan.dags), dags_per_file):
        chunk = plan.dags[start : start + dags_per_file]
        header = (
            f'"""Generated by benchmarks/bench_vs_client.py (seed {seed}): '
            f'DAGs {start} to {start + len(chunk) - 1}."""\n\n'
            "from __future__ import annotations\n\n"
            "from datetime import datetime\n\n"
            "from airflow.providers.standard.operators.empty import EmptyOperator\n"
            "from airflow.sdk import DAG, Asset, chain\n\n"
            "START = datetime(2026, 1, 1)\n"
        )
        body = "\n\n".join(_dag_source(dag, plan) for dag in chunk)
        (folder / f"bench_{start // dags_per_file:05d}.py").write_text(header + "\n\n" + body)
        files += 1
    return files


#: The body of each dynamic DAG file: the DAGs of its slice of ``estate.json``, made in a loop, as a
#: team generating DAGs from configuration writes them. Fewer, smaller sources than one statement
#: per DAG, and the same DAGs, tasks and assets as ``write_dag_files`` writes for the same plan.
DYNAMIC_BODY = """
PLAN = json.loads((Path(__file__).parent / "estate.json").read_text())
ASSETS = PLAN["assets"]

for spec in PLAN["dags"][FIRST:LAST]:
    kwargs = {"tags": spec["tags"]}
    if spec["description"] is not None:
        kwargs["description"] = spec["description"]
    if spec["owner"] is not None:
        kwargs["default_args"] = {"owner": spec["owner"]}
    if spec["paused"]:
        kwargs["is_paused_upon_creation"] = True
    if spec["consumes"]:
        schedule = [Asset(ASSETS[j]) for j in spec["consumes"]]
    else:
        schedule = spec["cron"]
    with DAG(spec["dag_id"], schedule=schedule, start_date=START, catchup=False, **kwargs) as dag:
        steps = [EmptyOperator(task_id=task_id) for task_id in PLAN["task_ids"]]
        outlets = [Asset(ASSETS[spec["produces"]])] if spec["produces"] is not None else []
        steps.append(EmptyOperator(task_id=PLAN["last_task_id"], outlets=outlets))
        chain(*steps)
    globals()[spec["dag_id"]] = dag
"""


def write_dynamic_dag_files(plan: EstatePlan, folder: Path, dags_per_file: int, seed: int) -> int:
    """Write the plan as ``estate.json`` and dynamic DAG files that read it; returns how many files."""
    folder.mkdir(parents=True, exist_ok=True)
    task_ids = [f"{VERBS[n % len(VERBS)]}_{n:02d}" for n in range(plan.tasks_per_dag - 1)]
    document = {
        "dags": [dataclasses.asdict(dag) for dag in plan.dags],
        "assets": plan.assets,
        "task_ids": task_ids,
        "last_task_id": f"publish_{plan.tasks_per_dag - 1:02d}",
    }
    (folder / "estate.json").write_text(json.dumps(document))
    files = 0
    for start in range(0, len(plan.dags), dags_per_file):
        end = min(len(plan.dags), start + dags_per_file)
        header = (
            f'"""Generated by benchmarks/bench_vs_client.py (seed {seed}): the DAGs {start} to {end - 1} '
            'of estate.json, made in a loop."""\n\n'
            "from __future__ import annotations\n\n"
            "import json\n"
            "from datetime import datetime\n"
            "from pathlib import Path\n\n"
            "from airflow.providers.standard.operators.empty import EmptyOperator\n"
            "from airflow.sdk import DAG, Asset, chain\n\n"
            f"START = datetime(2026, 1, 1)\nFIRST, LAST = {start}, {end}\n"
        )
        (folder / f"dynamic_{start // dags_per_file:05d}.py").write_text(header + DYNAMIC_BODY)
        files += 1
    return files


def plan_digest(plan: EstatePlan) -> str:
    lines = []
    for dag in plan.dags:
        lines.append(f"dag {dag.dag_id}")
        task_ids = [f"{VERBS[n % len(VERBS)]}_{n:02d}" for n in range(plan.tasks_per_dag - 1)]
        lines += [f"task {dag.dag_id} {t}" for t in [*task_ids, f"publish_{plan.tasks_per_dag - 1:02d}"]]
        if dag.produces is not None:
            lines.append(f"produces {plan.assets[dag.produces]} {dag.dag_id}")
        lines += [f"schedules {plan.assets[j]} {dag.dag_id}" for j in dag.consumes]
    lines += [f"asset {uri}" for uri in plan.assets]
    return _digest(lines)


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:16]


# -- the official client's crawl (client_crawl.py), run in its own virtualenv ---------------------

CLIENT_CRAWL = HERE / "client_crawl.py"


def client_venv(path: Path, spec: str) -> tuple[Path, float]:
    """A virtualenv with the official client; (its python, seconds spent making it, 0 if reused)."""
    python = path / "bin" / "python"
    marker = path / ".bench-installed"
    if python.exists() and marker.exists() and marker.read_text() == spec:
        return python, 0.0
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec, "requests"],
        check=True,
    )
    marker.write_text(spec)
    return python, time.monotonic() - started


def client_version(python: Path) -> str:
    out = subprocess.run(
        [
            str(python),
            "-c",
            "from importlib.metadata import version; print(version('apache-airflow-client'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def run_client_crawl(python: Path, base_url: str) -> dict[str, Any]:
    """Run client_crawl.py with the client's virtualenv; its figures."""
    env = {**os.environ, "BENCH_USERNAME": USERNAME, "BENCH_PASSWORD": PASSWORD}
    result = subprocess.run(
        [str(python), str(CLIENT_CRAWL), base_url], env=env, capture_output=True, text=True, timeout=3600
    )
    if result.returncode != 0:
        raise RuntimeError(f"the client crawl failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


# -- our capture ------------------------------------------------------------------------------


def run_capture(base_url: str, concurrency: int, pacing: str = "adaptive") -> dict[str, Any]:
    wall0, cpu0 = time.monotonic(), time.process_time()
    client = AirflowApiClient(
        ApiSource(base_url, username=USERNAME, password=PASSWORD, concurrency=concurrency, pacing=pacing)
    )
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
    summary = result.summary
    for record in result.lossiness:  # the check after the runs reports the run as a mismatch
        print(f"    capture at concurrency {concurrency} lost: {record.message}", flush=True)
    return {
        "dags": summary.dags,
        "tasks": summary.tasks,
        "assets": summary.assets,
        "requests": summary.requests,
        "retries": summary.retries,
        "lost": len(result.lossiness),
        "started": wall0,
        "ended": wall1,
        "seconds": wall1 - wall0,
        "cpu": cpu1 - cpu0,
        "digest": _digest(lines),
    }


# -- a server with more workers ---------------------------------------------------------------


@contextlib.contextmanager
def more_workers(server: AirflowApiServer, workers: int, timeout: float) -> Iterator[tuple[str, int]]:
    """A second api-server on the harness's database and settings, with ``--workers N`` (the harness
    always starts one worker); yields its base URL and process group."""
    assert server.home is not None
    base_url = f"http://127.0.0.1:{free_port()}"
    log_path = server.home / f"api-server-{workers}-workers.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "airflow", "api-server", "--host", "127.0.0.1",
             "--port", base_url.rpartition(":")[2], "--workers", str(workers)],
            env={**server.env, "AIRFLOW__API__BASE_URL": base_url},
            cwd=server.home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + timeout
            answered = 0
            while answered < 2 * workers or len(group_pids(process.pid)) <= workers:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"api-server --workers {workers} exited: {log_path.read_text()[-2000:]}"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(f"api-server --workers {workers} did not start within {timeout} s")
                try:
                    with urllib.request.urlopen(f"{base_url}/api/v2/version", timeout=2) as response:
                        answered += response.status == 200
                except OSError:
                    time.sleep(0.2)
            yield base_url, process.pid
        finally:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=15)


# -- CPU sampling -------------------------------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def group_pids(pgid: int) -> list[int]:
    """The processes of a process group (the api-server and any workers it started)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[2]) == pgid:  # state, ppid, pgrp, ...
            pids.append(int(entry))
    return pids


def process_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime + stime


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values[:8])
    return total - idle, total


class CpuSampler(threading.Thread):
    """Samples the server group's CPU time and the machine's every ``interval`` seconds."""

    def __init__(self, pids: list[int], interval: float = 0.1) -> None:
        super().__init__(name="cpu-sampler", daemon=True)
        self.pids = pids
        self.interval = interval
        self.samples: list[tuple[float, int, int, int]] = []
        self._stop_event = threading.Event()
        self._lock = threading.Lock()

    def sample(self) -> tuple[float, int, int, int]:
        busy, total = machine_ticks()
        return time.monotonic(), sum(process_ticks(pid) for pid in self.pids), busy, total

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            s = self.sample()
            with self._lock:
                self.samples.append(s)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def window(self, started: float, ended: float) -> dict[str, float]:
        """Server CPU seconds, its mean and peak (over 1 s) share of one core; the machine's busy CPU
        seconds and cores (everything on it: server, crawler, and any other work)."""
        with self._lock:
            inside = [s for s in self.samples if started - self.interval <= s[0] <= ended + self.interval]
        if len(inside) < 2:
            nan = float("nan")
            return {"server_cpu": nan, "server_mean": nan, "server_peak": nan, "machine_cpu": nan,
                    "machine_cores": nan}  # fmt: skip
        first, last = inside[0], inside[-1]
        span = last[0] - first[0]
        server_cpu = (last[1] - first[1]) / CLOCK_TICKS
        peak = float("nan")  # no 1 s window in a run shorter than that
        j = 0
        for i in range(len(inside)):
            while inside[i][0] - inside[j][0] > 1.0:
                j += 1
            if inside[i][0] - inside[j][0] >= 0.9:
                rate = (inside[i][1] - inside[j][1]) / CLOCK_TICKS / (inside[i][0] - inside[j][0])
                peak = rate if math.isnan(peak) else max(peak, rate)
        machine = (last[2] - first[2]) / max(1, last[3] - first[3]) * (os.cpu_count() or 1)
        return {
            "machine_cpu": machine * span,
            "server_cpu": server_cpu,
            "server_mean": server_cpu / span if span else float("nan"),
            "server_peak": peak,
            "machine_cores": machine,
        }


def wait_quiet(limit: float, max_wait: float) -> float:
    """Wait until the machine's busy cores, over 1 s, are below ``limit`` (other work, between our
    runs), at most ``max_wait`` seconds; returns the busy cores last seen."""
    deadline = time.monotonic() + max_wait
    while True:
        busy0, total0 = machine_ticks()
        time.sleep(1.0)
        busy1, total1 = machine_ticks()
        cores = (busy1 - busy0) / max(1, total1 - total0) * (os.cpu_count() or 1)
        if cores < limit or time.monotonic() > deadline:
            return cores


def server_errors(log_paths: list[Path]) -> list[str]:
    """The api-server log lines that tell of an error (an exception and the lines that name it, an
    HTTP 5xx)."""
    found = []
    for path in log_paths:
        with contextlib.suppress(OSError):
            lines = path.read_text(errors="replace").splitlines()
            for i, line in enumerate(lines):
                # (an access log line of /importErrors names no error)
                if (
                    "Traceback" in line
                    or "Error" in line.replace("importErrors", "")
                    or "status_code=5" in line
                ):
                    found += [
                        f"{path.name}: {text.strip()[:300]}" for text in lines[i : i + 3] if text.strip()
                    ]
    return list(dict.fromkeys(found))


# -- where the server's time goes (py-spy) --------------------------------------------------------


def py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


PROFILE_RATE = 100  # samples per second


def profile(targets: list[tuple[int, Path, bool]], crawl: Any) -> dict[str, Any]:
    """Run ``crawl()`` while py-spy samples, in each target process (and its children, if asked),
    whichever thread holds the GIL; raw stacks written to each target's path."""
    spy = py_spy()
    if spy is None:
        raise RuntimeError("py-spy not found (pip install py-spy)")
    recorders = []
    for pid, out, children in targets:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
        recorders.append(
            subprocess.Popen(
                [spy, "record", "--pid", str(pid), *(["--subprocesses"] if children else []),
                 "--rate", str(PROFILE_RATE), "--gil", "--nonblocking", "--format", "raw",
                 "--output", str(out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )  # fmt: skip
    time.sleep(1.0)  # let py-spy attach
    try:
        run = crawl()
    finally:
        for recorder in recorders:
            recorder.send_signal(signal.SIGINT)  # py-spy writes its output and exits
        errors = [recorder.communicate(timeout=60)[1] for recorder in recorders]
    for (_, out, _), err in zip(targets, errors, strict=True):
        if not out.exists():
            raise RuntimeError(f"py-spy wrote no profile: {err.decode(errors='replace')[-2000:]}")
    return dict(run)


# (layer, path prefixes) in py-spy's short file names; the deepest frame of a known layer takes the
# sample (standard-library frames pass it to their caller, except logging's)
LAYERS = (
    (
        "DAG deserialization (airflow.serialization)",
        ("airflow/serialization/", "airflow/models/serialized_dag", "airflow/task/priority_strategy"),
    ),
    (
        "SQL (SQLAlchemy, sqlite3)",
        ("sqlalchemy/", "sqlite3/", "airflow/utils/orm_event_handlers", "airflow/utils/sqlalchemy",
         "airflow/utils/session"),
    ),
    ("response models (pydantic)", ("pydantic/", "pydantic_core/", "fastapi/_compat", "fastapi/encoders")),
    (
        "authentication (JWT)",
        ("jwt/", "airflow/api_fastapi/auth/", "airflow/api_fastapi/core_api/security"),
    ),
    ("logging", ("structlog/", "logging/", "airflow/_shared/logging/", "airflow/sdk/log")),
    ("JSON decoding (json)", ("json/",)),
    ("coremodels capture (crawl, reduce, retries)", ("airflow_provider_coremodels/",)),
    (
        "HTTP client (requests, urllib3, http.client, socket)",
        ("requests/", "urllib3/", "http/client", "socket.py", "email/", "charset_normalizer/", "idna/"),
    ),
    ("threads (concurrent.futures, threading, queue)", ("concurrent/", "threading.py", "queue.py")),
    ("other Airflow code", ("airflow/",)),
    (
        "HTTP + ASGI (uvicorn, starlette, fastapi, anyio, asyncio)",
        ("uvicorn/", "starlette/", "fastapi/", "anyio/", "asyncio/", "h11/", "httptools/"),
    ),
)  # fmt: skip


def _layer(frame: str) -> str | None:
    where = frame.rpartition(" (")[2]
    for layer, prefixes in LAYERS:
        if where.startswith(prefixes):
            return layer
    return None


def summarize_profile(path: Path, seconds: float, requests: int, top: int = 10) -> list[str]:
    """Where the GIL went: by layer (the deepest frame of a known layer), by route, by function."""
    layers: dict[str, int] = {}
    routes: dict[str, int] = {}
    own: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [f for f in stack.split(";") if not f.startswith("process ")]  # --subprocesses' root
        frames = frames or ["(no Python frame)"]
        layer = next((found for f in reversed(frames) if (found := _layer(f))), "other")
        layers[layer] = layers.get(layer, 0) + count
        route = next(
            (f.partition(" (")[0] for f in frames if "api_fastapi/core_api/routes/" in f),
            "outside the route functions (ASGI, middleware, dependencies: auth, DB session; logging)",
        )
        routes[route] = routes.get(route, 0) + count
        own[frames[-1]] = own.get(frames[-1], 0) + count
    if not total:
        return ["(no samples)"]
    held = total / PROFILE_RATE
    lines = [
        f"a GIL was held {held:.1f} s (all processes) in {seconds:.1f} s ({held / seconds:.0%}), "
        f"{held / requests * 1000:.1f} ms per request; by layer:"
    ]
    lines += [f"  {n / total:6.1%}  {k}" for k, n in sorted(layers.items(), key=lambda kv: -kv[1])]
    if len(routes) > 1:
        lines.append("by route handler:")
        lines += [f"  {n / total:6.1%}  {k}" for k, n in sorted(routes.items(), key=lambda kv: -kv[1])]
    lines.append("functions (self):")
    lines += [f"  {n / total:6.1%}  {k}" for k, n in sorted(own.items(), key=lambda kv: -kv[1])[:top]]
    return lines


# -- the steps of a run -------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dags", type=int, default=1000, help="DAGs to generate (default 1000, M)")
    parser.add_argument("--tasks-per-dag", type=int, default=20)
    parser.add_argument("--dags-per-file", type=int, default=50, help="DAGs in one Python file (default 50)")
    parser.add_argument(
        "--dynamic",
        action="store_true",
        help="write the DAGs as dynamic DAG files (a loop over estate.json) rather than a statement each",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (default 5)")
    parser.add_argument(
        "--concurrency", default="8,16,1", help="capture concurrencies to time (default 8,16,1)"
    )
    parser.add_argument(
        "--pacing",
        default="adaptive",
        help="capture pacings to time at each concurrency: adaptive, fixed or both (default adaptive)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--client", default=DEFAULT_CLIENT, help=f"pip spec (default {DEFAULT_CLIENT})")
    parser.add_argument("--client-venv", type=Path, help="keep the client's virtualenv here and reuse it")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="after the timed runs, sample with py-spy the api-server (and the crawler) during one more "
        "capture (first concurrency) and one more client crawl, and print where the time goes (raw "
        "stacks kept in DIR)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="API worker processes; other than 1 (the harness's), a second api-server is started with "
        "--workers N on the same database and the crawls go there (default 1)",
    )
    parser.add_argument(
        "--dag-cache-size",
        type=int,
        help="the server's [api] dag_cache_size (deserialized DAGs kept; Airflow's default is 64, "
        "0 = no limit); default: Airflow's own",
    )
    parser.add_argument(
        "--quiet",
        type=float,
        default=0.3,
        metavar="CORES",
        help="before each timed run, wait (up to --quiet-wait s) until other work on the machine uses "
        "fewer than this many cores over 1 s (default 0.3; 0 to not wait)",
    )
    parser.add_argument("--quiet-wait", type=float, default=120.0)
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument("--command-timeout", type=float, default=3600.0)
    args = parser.parse_args(argv)
    args.concurrencies = [int(c) for c in args.concurrency.split(",") if c.strip()]
    args.pacings = [p.strip() for p in args.pacing.split(",") if p.strip()]
    return args


Phases = dict[str, float]  # what each step took (s), in order, printed at the end


def write_estate(args: argparse.Namespace, folder: Path, phases: Phases) -> EstatePlan:
    """Plan the estate and write it as Python DAG files into ``folder``."""
    started = time.monotonic()
    plan = plan_estate(args.dags, args.tasks_per_dag, args.seed)
    write = write_dynamic_dag_files if args.dynamic else write_dag_files
    files = write(plan, folder, args.dags_per_file, args.seed)
    phases["generate DAG files"] = time.monotonic() - started
    kind = "dynamic files" if args.dynamic else "files"
    print(
        f"estate: {len(plan.dags)} DAGs in {files} {kind}, {plan.tasks} tasks, "
        f"{len(plan.assets)} assets (seed {args.seed})"
    )
    return plan


def install_client(path: Path, spec: str, phases: Phases) -> Path:
    """The official client's virtualenv at ``path`` (made, or reused); returns its python."""
    python, seconds = client_venv(path, spec)
    phases["client virtualenv + pip install" + (" (reused)" if not seconds else "")] = seconds
    print(f"official client: apache-airflow-client {client_version(python)} in {path}")
    return python


@dataclass
class Server:
    """Where the crawls go."""

    harness: AirflowApiServer  # the harness's server (its home holds the api-server logs)
    base_url: str
    group: int  # the process group of the api-server the crawls go to, and of its workers
    pids: list[int]
    version: str  # Airflow's


@contextlib.contextmanager
def api_server(args: argparse.Namespace, tmp: Path, phases: Phases) -> Iterator[Server]:
    """A real api-server on the DAG files in ``tmp/dags`` (the harness's, one worker); with
    ``--workers N`` other than 1, a second api-server with N workers on its database, where the
    crawls then go."""
    extra_env = {}
    if args.dag_cache_size is not None:
        extra_env["AIRFLOW__API__DAG_CACHE_SIZE"] = str(args.dag_cache_size)
    with (
        AirflowApiServer(
            tmp / "dags",
            username=USERNAME,
            password=PASSWORD,
            home=tmp / "airflow-home",
            extra_env=extra_env,
            startup_timeout=args.startup_timeout,
            command_timeout=args.command_timeout,
        ) as server,
        contextlib.ExitStack() as stack,
    ):
        phases["airflow db migrate"] = server.timings["db_migrate"]
        phases["airflow dags reserialize"] = server.timings["dags_reserialize"]
        phases["api-server until /api/v2/version answers"] = server.timings["api_server"]
        version = server.get("/api/v2/version").json()["version"]
        assert server._process is not None  # the harness starts it in a process group of its own
        base_url, group = server.base_url, server._process.pid
        if args.workers != 1:
            started = time.monotonic()
            base_url, group = stack.enter_context(more_workers(server, args.workers, args.startup_timeout))
            phases[f"api-server --workers {args.workers} until it answers"] = time.monotonic() - started
        pids = group_pids(group)
        cache_size = "default" if args.dag_cache_size is None else args.dag_cache_size
        print(
            f"Airflow {version} api-server at {base_url}: --workers {args.workers}, {len(pids)} "
            f"process(es), dag_cache_size {cache_size}"
        )
        yield Server(server, base_url, group, pids, version)


Run = dict[str, Any]  # one crawl's figures: counts, requests, seconds, CPU, digest (and CPU windows)


@dataclass
class Crawls:
    """Every crawl against the server, and what the server logged meanwhile."""

    version: str  # Airflow's
    crawlers: list[str]  # "client", then "capture-<concurrency>-<pacing>" for each of both
    warm: list[Run]  # the untimed warm-up crawls: a capture, then the client's
    runs: dict[str, list[Run]]  # each crawler's timed runs
    profiles: list[tuple[str, Run, Path]]  # (what was sampled, its run, py-spy's raw stacks)
    errors: list[str]  # the api-server's log lines that tell of an error

    @property
    def theirs(self) -> float:
        """The official client's median seconds: what the ratios divide."""
        return median(self.runs["client"], "seconds")


def label(crawler: str) -> str:
    if crawler == "client":
        return "apache-airflow-client, sequential"
    _, concurrency, pacing = crawler.split("-")
    return f"capture, concurrency {concurrency}, {pacing}"


def crawl_once(crawler: str, server: Server, python: Path) -> Run:
    if crawler == "client":
        return run_client_crawl(python, server.base_url)
    _, concurrency, pacing = crawler.split("-")
    return run_capture(server.base_url, int(concurrency), pacing)


def crawl(args: argparse.Namespace, server: Server, python: Path, phases: Phases) -> Crawls:
    """One warm-up crawl of each kind, the timed runs, and with ``--profile`` the sampled ones,
    while the server's CPU is sampled; then the server's errors from its logs."""
    crawlers = ["client", *[f"capture-{c}-{p}" for c in args.concurrencies for p in args.pacings]]
    sampler = CpuSampler(server.pids)
    sampler.start()
    try:
        warm = warm_up(server, python, args.concurrencies[0], phases)
        sampler.pids = group_pids(server.group)  # all workers are up by now
        runs = timed_runs(args, crawlers, server, python, sampler, phases)
        profiles = []
        if args.profile:
            profiles = profile_crawls(args.profile, args.concurrencies[0], server, python, phases)
    finally:
        sampler.stop()
        home = server.harness.home
        errors = server_errors(sorted(home.glob("api-server*.log")) if home else [])
    return Crawls(server.version, crawlers, warm, runs, profiles, errors)


def warm_up(server: Server, python: Path, concurrency: int, phases: Phases) -> list[Run]:
    """One untimed crawl of each kind: the first requests to each endpoint import and cache things."""
    started = time.monotonic()
    warm = [run_capture(server.base_url, concurrency), run_client_crawl(python, server.base_url)]
    phases["warm-up (one crawl of each, not timed)"] = time.monotonic() - started
    return warm


def timed_runs(
    args: argparse.Namespace,
    crawlers: list[str],
    server: Server,
    python: Path,
    sampler: CpuSampler,
    phases: Phases,
) -> dict[str, list[Run]]:
    """``--repeat`` rounds of every crawler in turn, each once the machine is quiet; each run also
    gets the server's and the machine's CPU over its own window."""
    runs: dict[str, list[Run]] = {name: [] for name in crawlers}
    started = time.monotonic()
    for rep in range(args.repeat):
        for name in crawlers:
            before = wait_quiet(args.quiet, args.quiet_wait) if args.quiet > 0 else float("nan")
            run = crawl_once(name, server, python)
            run.update(sampler.window(run["started"], run["ended"]))
            run["other_cpu"] = run["machine_cpu"] - run["server_cpu"] - run["cpu"]
            runs[name].append(run)
            print(f"  rep {rep + 1}/{args.repeat} {name:<12} {run['seconds']:7.2f} s  "
                  f"server {run['server_mean']:.0%} of a core, other work {run['other_cpu']:.1f} "
                  f"CPU s (machine {before:.2f} cores busy before)", flush=True)  # fmt: skip
    phases[f"timed runs ({args.repeat} repetitions)"] = time.monotonic() - started
    return runs


def profile_crawls(
    out: Path, concurrency: int, server: Server, python: Path, phases: Phases
) -> list[tuple[str, Run, Path]]:
    """One more capture and one more client crawl, sampled with py-spy, raw stacks kept in ``out``."""
    started = time.monotonic()
    capture_label = f"capture, concurrency {concurrency}"
    server_out, crawler_out, client_out = (
        out / "server-capture.txt",
        out / "crawler.txt",
        out / "server-client.txt",
    )
    # the server's workers are children of its first process; the crawler's children include the
    # server (the harness started it), so not those
    run = profile([(server.group, server_out, True), (os.getpid(), crawler_out, False)],
                  lambda: run_capture(server.base_url, concurrency))  # fmt: skip
    profiles = [
        (f"the api-server during one {capture_label} crawl", run, server_out),
        (f"the crawler itself during the same {capture_label} crawl", run, crawler_out),
    ]
    run = profile([(server.group, client_out, True)], lambda: run_client_crawl(python, server.base_url))
    profiles.append(("the api-server during one apache-airflow-client crawl", run, client_out))
    phases["profiled crawls (py-spy, not timed)"] = time.monotonic() - started
    return profiles


# -- the report ---------------------------------------------------------------------------------


def median(runs: list[Run], key: str) -> float:
    return float(statistics.median(r[key] for r in runs))


def check(plan: EstatePlan, crawls: Crawls) -> list[str]:
    """The runs that did not see the planned estate (printed; they stay in the tables)."""
    expected = {"dags": len(plan.dags), "tasks": plan.tasks, "assets": len(plan.assets)}
    want = plan_digest(plan)
    problems = []
    checked = [("warm-up capture", crawls.warm[0]), ("warm-up client", crawls.warm[1])]
    checked += [(crawler, run) for crawler in crawls.crawlers for run in crawls.runs[crawler]]
    for name, run in checked:
        seen = {key: run[key] for key in expected}
        if seen != expected or run["digest"] != want:
            problems.append(f"{name}: saw {seen} digest {run['digest']}, planned {expected} digest {want}")
    if problems:
        print("MISMATCH (these runs did not see the planned estate; they stay in the table):")
        print("\n".join(f"  {problem}" for problem in problems))
    return problems


def print_times(args: argparse.Namespace, crawls: Crawls) -> None:
    """The table: what each crawler saw, its requests and its median seconds; the ratio to the client."""
    print()
    cache = f"dag_cache_size {args.dag_cache_size}" if args.dag_cache_size is not None else "default settings"
    print(
        f"Airflow {crawls.version}, api-server --workers {args.workers}, {cache}, {os.cpu_count()} cores; "
        f"medians of {args.repeat}"
    )
    header = (
        f"{'crawler':<34} {'DAGs':>5} {'tasks':>6} {'assets':>6} {'requests':>8} {'retries':>7} {'lost':>4} "
        f"{'seconds':>8} {'min-max':>12} {'req/s':>6} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for name in crawls.crawlers:
        rs = crawls.runs[name]
        secs = median(rs, "seconds")
        spread = f"{min(r['seconds'] for r in rs):.2f}-{max(r['seconds'] for r in rs):.2f}"
        print(
            f"{label(name):<34} {rs[0]['dags']:>5} {rs[0]['tasks']:>6} {rs[0]['assets']:>6} "
            f"{rs[0]['requests']:>8} {sum(r['retries'] for r in rs):>7} {sum(r['lost'] for r in rs):>4} "
            f"{secs:>8.2f} {spread:>12} "
            f"{rs[0]['requests'] / secs:>6.0f} {crawls.theirs / secs:>6.2f}"
        )
    print("DAGs, tasks, assets, requests: of the first run; retries and lost (tasks responses given up")
    print("on): of all runs; ratio: the client's median seconds / this row's")


def print_cpu(crawls: Crawls) -> None:
    """Where the CPU went during each crawler's runs: the crawler's, the server's, the machine's."""
    print()
    header = (
        f"{'where the CPU went (medians)':<34} {'crawler CPU s':>13} {'crawler ms/req':>14} "
        f"{'server CPU s':>12} {'server ms/req':>13} {'server core':>11} {'peak':>5} {'machine cores':>13} "
        f"{'other CPU s':>11}"
    )
    print(header)
    print("-" * len(header))
    for name in crawls.crawlers:
        rs = crawls.runs[name]
        print(
            f"{label(name):<34} {median(rs, 'cpu'):>13.2f} "
            f"{median(rs, 'cpu') / rs[0]['requests'] * 1000:>14.2f} {median(rs, 'server_cpu'):>12.2f} "
            f"{median(rs, 'server_cpu') / rs[0]['requests'] * 1000:>13.2f} "
            f"{median(rs, 'server_mean'):>11.0%} {median(rs, 'server_peak'):>5.0%} "
            f"{median(rs, 'machine_cores'):>13.2f} {max(0.0, median(rs, 'other_cpu')):>11.2f}"
        )
    print("server core: the api-server group's CPU seconds / wall seconds (100% = one core busy")
    print("throughout); peak: its busiest 1 s; machine cores: CPUs busy on the whole machine (of")
    print(f"{os.cpu_count()}); other CPU s: the machine's busy CPU seconds less the server's and the")
    print("crawler's, i.e. work that is neither (near 0 on a quiet machine).")


def print_verdicts(args: argparse.Namespace, crawls: Crawls) -> None:
    """For each concurrency: the ratio against the target, and the bound the CPU seconds put on it."""
    cores = os.cpu_count() or 1
    print(
        f"bound: a crawl can take no less than the server's CPU seconds over its {args.workers} worker(s) "
        f"(each is one Python process: one core for its Python code, a little more with what SQLite and "
        f"uvloop do outside the GIL, so 'reached' can pass 100%), nor than server + crawler CPU seconds "
        f"over the {cores} cores"
    )
    theirs = crawls.theirs
    for crawler in crawls.crawlers[1:]:
        ours = crawls.runs[crawler]
        secs = median(ours, "seconds")
        server_cpu, client_cpu = median(ours, "server_cpu"), median(ours, "cpu")
        floor = max(server_cpu / min(args.workers, cores), (server_cpu + client_cpu) / cores)
        verdict = "met" if theirs / secs >= TARGET_RATIO else "MISSED"
        print(
            f"{label(crawler)}: {theirs / secs:.2f}x faster than the official client "
            f"(target {TARGET_RATIO:.0f}x: {verdict}); server {server_cpu:.2f} + crawler {client_cpu:.2f} "
            f"CPU s: floor {floor:.2f} s, so at most {theirs / floor:.2f}x; reached {floor / secs:.0%} of it"
        )


def print_server_errors(errors: list[str]) -> None:
    if errors:
        print()
        print(f"the api-server logged {len(errors)} error line(s) (retried by the capture), the last ones:")
        print("\n".join(f"  {line}" for line in errors[-12:]))


def print_profiles(profiles: list[tuple[str, Run, Path]]) -> None:
    for what, run, path in profiles:
        print()
        print(f"where the time goes in {what} ({run['seconds']:.2f} s, {path}):")
        print("\n".join(summarize_profile(path, run["seconds"], run["requests"])))


def print_phases(phases: Phases) -> None:
    print()
    print("phases (s):")
    for step, seconds in phases.items():
        print(f"  {step:<48} {seconds:8.1f}")


# -- the run ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"machine: {machine()}")
    print(load_note("at start"))
    phases: Phases = {}
    with tempfile.TemporaryDirectory(prefix="bench-vs-client-") as tmp_name:
        tmp = Path(tmp_name)
        plan = write_estate(args, tmp / "dags", phases)
        python = install_client(args.client_venv or tmp / "client-venv", args.client, phases)
        with api_server(args, tmp, phases) as server:
            crawls = crawl(args, server, python, phases)
    print(load_note("at end"))

    problems = check(plan, crawls)
    print_times(args, crawls)
    print_cpu(crawls)
    print_verdicts(args, crawls)
    print_server_errors(crawls.errors)
    print_profiles(crawls.profiles)
    print_phases(phases)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
