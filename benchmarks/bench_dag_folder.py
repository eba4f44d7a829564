"""The DAG-folder parse (``parse_dag_folder``) against Airflow's single-process ``DagBag`` of the same files.

Run: python benchmarks/bench_dag_folder.py [--files 500] [--repeat 3] [--workers N] [--tables T]

Generates a folder of N DAG files, a realistic mix: most build their tasks from
``airflow.providers.standard`` operators (Bash, Python, Empty), a fifth use TaskFlow (``@task``),
a tenth are scheduled on the assets others produce, and a third import a helper package under
``include/``; with ``--tables T`` each classic DAG also loads T tables (a task group of two
tasks per table, as config-driven DAGs are written), so a file's own parse weighs more against
Airflow's import, which both sides pay. Both sides run end to end in a fresh interpreter,
Airflow's import included: the DagBag as ``python -c "DagBag(folder)"`` (its parse alone,
without the import, is printed too), and ``parse_dag_folder`` as the provider runs it (its parse
server, forked children, the serialization and the mapping to the REST shapes, which the DagBag
does not do). Medians of ``--repeat`` rounds, the two sides alternating; the goal on 2 cores:
a ratio of at most 0.8.

Then, in one process after a warm-up, each stage of a child's work on a file, in CPU ms per
file: the DagBag's parse, Airflow's serialization (its JSON-schema check within it), the DAG's
REST shape, the tasks' (``TaskResponse`` over the deserialized DAG), the asset references. Their
sum against the parse alone is how much more work a file costs the parse than the DagBag: on N
cores the files' part can at best take that much over N of the DagBag's parse.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CLASSIC = """\
from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Asset, TaskGroup
{helper_import}

TABLES = [f"table_{{i}}" for i in range({tables})]


def _transform(**context):
    return {n}


with DAG(
    dag_id="classic_{n}",
    description="Loads batch {n}",
    schedule="{minute} * * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={{"owner": "team-{team}", "retries": 1}},
    tags=["generated", "team-{team}"],
):
    start = EmptyOperator(task_id="start")
    extract = BashOperator(task_id="extract", bash_command="echo extract {n}")
    transform = PythonOperator(task_id="transform", python_callable=_transform)
    load = BashOperator(task_id="load", bash_command="echo load", outlets=[Asset({asset})])
    start >> extract >> transform >> load
    for table in TABLES:  # a config-driven DAG: one group per table it loads
        with TaskGroup(group_id=table):
            copy = BashOperator(task_id="copy", bash_command="echo {{{{ ds }}}} " + table)
            check = PythonOperator(task_id="check", python_callable=_transform, op_kwargs={{"table": table}})
            load >> copy >> check
"""

TASKFLOW = """\
from datetime import datetime

from airflow.sdk import Asset, dag, task


@dag(
    dag_id="taskflow_{n}",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={{"owner": "team-{team}"}},
    tags=["generated"],
)
def pipeline():
    @task
    def fetch() -> list[int]:
        return list(range(3))

    @task(outlets=[Asset("s3://bench/taskflow/{n}")])
    def store(rows: list[int]) -> int:
        return len(rows)

    store(fetch())


pipeline()
"""

CONSUMER = """\
from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

with DAG(
    dag_id="consumer_{n}",
    schedule=[Asset("s3://bench/classic/{upstream}")],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    default_args={{"owner": "team-{team}"}},
):
    EmptyOperator(task_id="report")
"""

HELPER = '''\
"""Naming shared by the generated DAGs."""


def table_uri(n: int) -> str:
    return f"s3://bench/classic/{n}"
'''


def generate(folder: Path, files: int, tables: int = 0) -> None:
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "__init__.py").write_text("")
    (folder / "include" / "naming.py").write_text(HELPER)
    for n in range(files):
        team = n % 7
        if n % 10 == 9:
            text = CONSUMER.format(n=n, upstream=max(0, n - 9), team=team)
        elif n % 5 == 3:
            text = TASKFLOW.format(n=n, team=team)
        elif n % 3 == 0:
            text = CLASSIC.format(
                n=n,
                team=team,
                minute=n % 60,
                helper_import="from include.naming import table_uri",
                asset=f"table_uri({n})",
                tables=tables,
            )
        else:
            text = CLASSIC.format(
                n=n,
                team=team,
                minute=n % 60,
                helper_import="",
                asset=f'"s3://bench/classic/{n}"',
                tables=tables,
            )
        sub = folder / f"team_{team}"
        sub.mkdir(exist_ok=True)
        (sub / f"dag_{n:04d}.py").write_text(text)


DAGBAG = textwrap.dedent(
    """
    import sys, time
    started = time.perf_counter()
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:
        from airflow.models.dagbag import DagBag
    imported = time.perf_counter()
    sys.path.insert(0, sys.argv[1])  # as Airflow puts the DAG folder on the path: include/ imports
    old = "include_examples" in DagBag.__init__.__code__.co_varnames  # Airflow 3.0
    bag = DagBag(sys.argv[1], include_examples=False) if old else DagBag(sys.argv[1])
    done = time.perf_counter()
    try:  # what the dag-processor adds to each file's parse: every DAG serialized (not timed above)
        from airflow.serialization.serialized_objects import DagSerialization as serializer
    except ImportError:
        from airflow.serialization.serialized_objects import SerializedDAG as serializer
    for dag in bag.dags.values():
        serializer.to_dict(dag)
    serialized = time.perf_counter()
    print(len(bag.dags), len(bag.import_errors), done - imported, serialized - done)
    """
)

FOLDER = textwrap.dedent(
    """
    import sys
    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder
    workers = int(sys.argv[2]) or None
    result = parse_dag_folder(sys.argv[1], workers=workers, sandbox=sys.argv[3])
    assert result.isolation.kind == {"off": "process", "require": "sandbox"}[sys.argv[3]]
    t = result.timings
    phases = (t["start"], t["warm_up"], t["files"], t["map"])
    print(len(result.dags["dags"]), len(result.dags["import_errors"]), *phases)
    """
)


STAGES = textwrap.dedent(
    """
    import importlib.util, logging, sys, tempfile, time
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("dag_folder_worker", sys.argv[2])
    worker = sys.modules["dag_folder_worker"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    from airflow.configuration import conf
    folder = Path(sys.argv[1])
    files = sorted(str(p) for p in folder.rglob("*.py") if "include" not in p.relative_to(folder).parts)
    files = files[: int(sys.argv[3])]
    sys.path.insert(0, str(folder))
    request = {"folder": str(folder), "bundle": "dags-folder", "safe_mode": True}
    worker._cache_cron_locales()
    with tempfile.TemporaryDirectory() as scratch:
        worker._warm_up(scratch, request)
    worker._parse_file(files[0], request)  # the first file of a process pays its lazy imports
    logging.disable(logging.CRITICAL)
    serializer = worker._serializer()
    validate = serializer.validate_schema.__func__
    spent = dict.fromkeys(("parse", "serialize", "validate", "dag", "tasks", "assets"), 0.0)
    def timed_validate(cls, data):
        began = time.process_time()
        try:
            return validate(cls, data)
        finally:
            spent["validate"] += time.process_time() - began
    serializer.validate_schema = classmethod(timed_validate)
    bag_class = worker._dag_bag_class()
    for path in files[1:]:
        began = time.process_time()
        bag = bag_class(**worker._kwargs_for(
            bag_class.__init__, dag_folder=path, bundle_path=folder, bundle_name="dags-folder",
            include_examples=False, load_op_links=False, safe_mode=True,
        ))
        now = time.process_time(); spent["parse"] += now - began; began = now
        lazy_dags = {}
        for dag in bag.dags.values():
            data = serializer.to_dict(dag)
            now = time.process_time(); spent["serialize"] += now - began; began = now
            lazy = worker._Lazy(data)
            worker._dag_entry(lazy, data, "dags-folder", conf)
            now = time.process_time(); spent["dag"] += now - began; began = now
            worker._tasks(lazy, data)
            now = time.process_time(); spent["tasks"] += now - began; began = now
            lazy_dags[dag.dag_id] = lazy
        worker._references(lazy_dags)
        spent["assets"] += time.process_time() - began
    count = max(1, len(files) - 1)
    print(*(f"{spent[key] * 1000 / count:.3f}" for key in spent))
    """
)

WORKER = (
    Path(__file__).resolve().parents[1] / "airflow_provider_coremodels" / "capture" / "dag_folder_worker.py"
)


def _sandbox_works() -> bool:
    from airflow_provider_coremodels.capture.sandbox import probe

    return probe()[0] is not None


def _mechanisms() -> dict[str, list[str]]:
    """What each mechanism costs to start, with the namespaces the parse asks for (bwrap's filesystem
    view is a handful of binds; util-linux unshare builds none, which is why bwrap is the one)."""
    view = ["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib"]
    view += ["--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    found = {"bwrap": ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", *view, "true"]}
    found["util-linux unshare (no filesystem view)"] = ["unshare", "-Upnimuf", "--mount-proc", "true"]
    return found


def _started(command: list[str]) -> float:
    times = []
    for _ in range(20):
        started = time.perf_counter()
        if subprocess.run(command, capture_output=True, check=False).returncode != 0:
            return float("nan")
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(code: str, *args: str) -> tuple[float, list[str]]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    lines = result.stdout.strip().splitlines()  # Airflow logs to stdout too: the figures are the last line
    return time.perf_counter() - started, lines[-1].split() if lines else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="parse_dag_folder's workers (0: the cores)")
    parser.add_argument(
        "--tables",
        type=int,
        default=0,
        help="each classic DAG also loads this many tables, a task group of two tasks each (0: 4 tasks)",
    )
    parser.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="parse as a process only, and skip the sandbox's cost (default: sandboxed where bwrap works)",
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="coremodels-bench-dags-") as home,
        tempfile.TemporaryDirectory(prefix="coremodels-bench-folder-") as scratch,
    ):
        os.environ.setdefault("AIRFLOW_HOME", home)
        os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
        folder = Path(scratch) / "dags"
        generate(folder, args.files, args.tables)
        run(DAGBAG, str(folder))  # warm the file cache and Python's bytecode caches of both sides
        bag_times, bag_parse, bag_serialize, folder_times, phases = [], [], [], [], []
        process_times: list[float] = []
        sandboxed = args.sandbox and _sandbox_works()
        for round_number in range(args.repeat):
            order = ("bag", "folder", "process") if round_number % 2 == 0 else ("process", "folder", "bag")
            for side in order:
                if side == "process":
                    if sandboxed:
                        elapsed, out = run(FOLDER, str(folder), str(args.workers), "off")
                        process_times.append(elapsed)
                    continue
                if side == "bag":
                    elapsed, out = run(DAGBAG, str(folder))
                    bag_times.append(elapsed)
                    bag_parse.append(float(out[2]))
                    bag_serialize.append(float(out[3]))
                    bag_counts = out[:2]
                else:
                    mode = "require" if sandboxed else "off"
                    elapsed, out = run(FOLDER, str(folder), str(args.workers), mode)
                    folder_times.append(elapsed)
                    folder_counts = out[:2]
                    phases.append([float(x) for x in out[2:6]])
        assert bag_counts == folder_counts, (
            f"the two parses differ: DagBag {bag_counts}, folder {folder_counts}"
        )
        bag, parse, ours = (statistics.median(t) for t in (bag_times, bag_parse, folder_times))
        serialize = statistics.median(bag_serialize)
        cores = os.cpu_count()
        print(
            f"{args.files} files, {bag_counts[0]} DAGs, {bag_counts[1]} import errors; {cores} cores; "
            f"{args.tables} tables a classic DAG"
        )
        print("| side | median s |")
        print("|---|---|")
        print(
            "| DagBag(folder), one process, Airflow's import included (not its serialization) | "
            f"{bag - serialize:.2f} |"
        )
        print(f"| DagBag(folder), its parse alone | {parse:.2f} |")
        print(
            "| ... and every DAG serialized after it, as the dag-processor does (one process) | "
            f"{serialize:.2f} |"
        )
        print(f"| parse_dag_folder (parse server, forked children, REST shapes) | {ours:.2f} |")
        start, warm, files, mapping = (statistics.median(p[i] for p in phases) for i in range(4))
        print(
            f"| ... of which the parse server's start (Airflow's import) {start:.2f}, warm-up {warm:.2f}, "
            f"files {files:.2f}, mapping {mapping:.2f} | |"
        )
        print(f"ratio parse_dag_folder / DagBag: {ours / (bag - serialize):.2f} (goal <= 0.8 on 2 cores)")
        print(f"ratio parse_dag_folder / DagBag and serialization: {ours / bag:.2f}")
        if sandboxed:
            process = statistics.median(process_times)
            print(
                f"| parse_dag_folder with --sandbox off (a process only) | {process:.2f} |\n"
                f"ratio sandboxed / process-only parse: {ours / process:.2f} (goal <= 1.2)"
            )
            for name, command in _mechanisms().items():
                cost = _started(command)
                print(f"| starting an empty {name} sandbox, once a run (median of 20) | {cost:.4f} |")
        else:
            print("(no sandbox here, or --no-sandbox: the parse above ran as a process only)")
        _, out = run(STAGES, str(folder), str(WORKER), str(min(args.files, 200)))
        parse_ms, serialize_ms, validate_ms, dag_ms, tasks_ms, assets_ms = (float(x) for x in out)
        work = parse_ms + serialize_ms + dag_ms + tasks_ms + assets_ms
        print("| a child's work on a file, one process (CPU ms a file) | ms |")
        print("|---|---|")
        print(f"| the DagBag's parse | {parse_ms:.2f} |")
        print(
            f"| Airflow's serialization (of which its JSON-schema check {validate_ms:.2f}) "
            f"| {serialize_ms:.2f} |"
        )
        print(f"| the DAG's REST shape | {dag_ms:.2f} |")
        print(f"| the tasks' (TaskResponse over the deserialized DAG) | {tasks_ms:.2f} |")
        print(f"| the asset references | {assets_ms:.2f} |")
        print(
            f"work a file against the DagBag's parse: {work / parse_ms:.2f} "
            f"(the serialization alone {serialize_ms / parse_ms:.2f}); on {cores} cores the files' part "
            f"takes at best {work / parse_ms / (cores or 1):.2f} of the DagBag's parse"
        )
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
