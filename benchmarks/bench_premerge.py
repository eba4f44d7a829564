"""A pull request's check (``audit --dag-folder --base``) against a ``DagBag`` of the whole folder.

Run: python benchmarks/bench_premerge.py [--files 1500] [--repeat 3] [--full]

Generates, in a git repository, a folder of N DAG files (``bench_dag_folder``'s realistic mix)
plus the example estate, commits it on ``main`` and stores the folder's own parse as the deployed
baseline; then a branch changes three files (two descriptions, and drops the outlet of a producer
another team's DAG waits on, which breaks it). Timed end to end, each in a fresh
interpreter, Airflow's import included, the two sides alternating: the pre-merge check as CI runs
it (``--base main``: the scoped parse of both versions, in the sandbox where there is one, the
audit and the change), and ``DagBag(folder)`` of the whole folder in one process, which is what a
team's own "DAGs import" test runs. Goal: at most 0.15 of the ``DagBag``. ``--full`` also times the
check parsing every file of both versions. ``--phases`` then runs the check once more, in a fresh
interpreter, marking on one clock when each of its steps begins and ends (the judging process's
steps, and the parse server's own: Airflow's import, its warm-up, the listing, each version's files),
which is where the remaining time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dag_folder import DAGBAG, generate

ROOT = Path(__file__).resolve().parents[1]

#: The check run once with each step's start and end marked (``--phases``): functions of the
#: provider wrapped in this process only, the check itself unchanged.
PHASES = """
import sys, time
T0 = time.perf_counter()
marks = []
from airflow_provider_coremodels.capture import dag_folder, diff
from airflow_provider_coremodels.cli import commands, main as cli
from airflow_provider_coremodels.jobs import premerge

def mark(name):
    marks.append((name, time.perf_counter() - T0))

def wrap(module, name, label):
    function = getattr(module, name)
    def wrapped(*args, **kwargs):
        mark(label + " begins")
        try:
            return function(*args, **kwargs)
        finally:
            mark(label + " ends")
    setattr(module, name, wrapped)

wrap(diff, "scan", "reading the work tree's files")
wrap(diff, "from_git", "git: the merge base, the diff, the base laid out")
wrap(premerge, "_stored", "reading the baseline")
wrap(diff, "to_parse", "what the change can alter (one version)")
start = dag_folder.ParseServer.__init__
def started(self, *args, **kwargs):
    mark("the parse server starts")
    start(self, *args, **kwargs)
parse = dag_folder.ParseServer.parse
def parsed(self, jobs):
    mark("what to parse is sent")
    found = parse(self, jobs)
    mark("the parse server has answered")
    for name, seconds in found[0].timings.items():
        print("server", name, f"{seconds:.3f}", file=sys.stderr)
    print("server files of the work tree", f"{found[1].timings.get('files', 0):.3f}", file=sys.stderr)
    return found
dag_folder.ParseServer.__init__ = started
dag_folder.ParseServer.parse = parsed
emit = commands.emit
def emitted(text):
    mark("the audits, the change and the view are made")
    emit(text)
commands.emit = emitted
sys.argv = ["coremodels", *sys.argv[1:]]
try:
    cli.main()
except SystemExit:
    pass
mark("the run ends")
for name, at in marks:
    print("mark", f"{at:.3f}", name, file=sys.stderr)
import resource
used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
cpu = sum(u.ru_utime + u.ru_stime for u in used)
print("server (the judging process's CPU, git's with it)", f"{cpu:.3f}", file=sys.stderr)
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


#: CPU seconds (user and system) of each timed run and every process it waited for, by side (a
#: sandbox's processes are not among them: the parse server reports its own, ``--phases``)
CPU: dict[str, list[float]] = {}


def timed(command: list[str], cwd: Path, side: str = "") -> tuple[float, str]:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(side, []).append(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"failed: {' '.join(command[:6])}...: {done.stderr.strip()[-500:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full", action="store_true", help="also time --full (every file of both versions)")
    parser.add_argument("--phases", action="store_true", help="then mark when each step of one check runs")
    args = parser.parse_args()
    # the DAGs run (as in a deployment that unpaused them): a consumer that loses its producer is a break
    os.environ["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "False"
    audit = [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", "dags"]
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-premerge-") as scratch:
        repo = Path(scratch) / "repo"
        folder = repo / "dags"
        generate(folder, args.files)
        shutil.copytree(ROOT / "example_dags" / "estate", folder / "estate")
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "deployed")
        _, deployed = timed([*audit, "--format", "json"], repo)
        (repo / "baseline.json").write_text(deployed)
        git(repo, "checkout", "-q", "-b", "change")
        described = [p for p in sorted(folder.glob("team_1/dag_*.py")) if "Loads batch" in p.read_text()]
        for path in described[:2]:
            path.write_text(path.read_text().replace("Loads batch", "Loads the batch"))
        producer = folder / "team_3" / "dag_0010.py"  # consumer_19, another team's, waits on its asset
        producer.write_text(
            producer.read_text().replace('outlets=[Asset("s3://bench/classic/10")]', "outlets=[]")
        )
        git(repo, "commit", "-q", "-am", "three files")
        check = [*audit, "--baseline", "baseline.json", "--base", "main", "--format", "json"]
        load = os.getloadavg()[0]
        bag_times, check_times, full_times = [], [], []
        change: dict = {}
        for round_number in range(args.repeat):
            sides = ["bag", "check", *(["full"] if args.full else [])]
            for side in sides if round_number % 2 == 0 else sides[::-1]:
                if side == "bag":
                    bag_times.append(timed([sys.executable, "-c", DAGBAG, str(folder)], repo, side)[0])
                elif side == "check":
                    elapsed, out = timed(check, repo, side)
                    check_times.append(elapsed)
                    change = json.loads(out)["change"]
                else:
                    full_times.append(timed([*check, "--full"], repo, side)[0])
        bag, ours = statistics.median(bag_times), statistics.median(check_times)
        base = change["base"]
        print(
            f"{args.files} generated files and the example estate ({base['filesListed']} DAG files), "
            f"{os.cpu_count()} cores; a change to {len(base['changed'])} files, "
            f"{base['filesParsed']} parsed; isolation: {change.get('isolation')}; "
            f"breaks: {[b['dependent'] for b in change['breaks']]}"
        )
        print(f"load average at the start and the end: {load:.1f}, {os.getloadavg()[0]:.1f}")
        print("| side | median s |")
        print("|---|---|")
        print(
            "| DagBag(folder), the whole folder in one process, Airflow's import included "
            f"| {bag:.2f} (CPU {statistics.median(CPU['bag']):.2f}) |"
        )
        print(f"| audit --dag-folder --base main (both versions' scoped parse, the audit) | {ours:.2f} |")
        if full_times:
            print(f"| ... --full (every file of both versions) | {statistics.median(full_times):.2f} |")
        print(f"ratio pull-request check / DagBag: {ours / bag:.2f} (goal <= 0.15)")
        if args.phases:
            phases(check, repo)


def phases(check: list[str], repo: Path) -> None:
    """One more check, each step marked on one clock from the interpreter's start of the script."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PHASES, *check[3:]], cwd=repo, capture_output=True, text=True, check=False
    )
    print(f"\nOne check, marked (its own run: {time.perf_counter() - started:.2f} s end to end):\n")
    print("| s since the script started | step |")
    print("|---:|---|")
    server = []
    for line in done.stderr.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "mark":
            at, _, name = rest.partition(" ")
            print(f"| {at} | {name} |")
        elif kind == "server":
            server.append(rest.rsplit(" ", 1))
    print("\n| the parse server's own steps (wall), and CPU seconds | s |")
    print("|---|---:|")
    for name, seconds in server:
        print(f"| {name} | {seconds} |")


if __name__ == "__main__":
    main()
