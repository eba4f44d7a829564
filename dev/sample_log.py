"""The README's sample task log ("What you will see"), made from the demo, so that it cannot drift.

    python dev/sample_log.py [--sink DIR] [--check README.md]

It does what ``make demo`` does up to the export DAG's log: a real Airflow 3 API server serving
example_dags/ (the alias producer and the orders loader run once, the vendor feed fails once, the
scheduler's asset pass runs), ``airflow coremodels export`` into the sink, then ``airflow dags test
coremodels_export`` with Airflow's own INFO lines left out (the demo's ``QUIET_DAGS_TEST``). It
prints the lines of that task log the README shows, as a fenced block: the capture's summary, the
estate and asset-model lines, the freshness line, the findings count, the paused producer's
finding and the export line, with ``...`` where lines are left out. The sink (a temporary
directory unless ``--sink``) is written ``<checkout>/coremodels-out``, the demo's.

``--check README.md`` compares instead: exit 1, saying which line differs, when the README's block
is not what the demo logs. Figures that differ from run to run (durations, times, the fingerprint,
which names the checkout's path through each DAG's file) are compared by their shape alone
(``tests/test_sample_log.py`` runs this).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the harness: tests/support/
sys.path.insert(0, str(Path(__file__).resolve().parent))  # demo.py beside this file

from demo import QUIET_DAGS_TEST, export_env
from support.airflow_server import AirflowApiServer

REPO = Path(__file__).resolve().parents[1]
SHOWN_SINK = "<checkout>/coremodels-out"

#: The lines the README shows, by how each begins, in the order the task logs them; ``...`` marks
#: lines left out between two shown ones.
SHOWN = (
    "captured ",
    "DAGs (",
    "asset model: ",
    "freshness at ",
    "findings: ",
    "...",
    "Warning paused-producer ",
    "...",
    "export: ",
)

#: What differs from run to run, and so is compared by its shape: a duration, a time, a fingerprint.
VOLATILE = (
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "N s"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "TIME"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "FINGERPRINT"),
    (re.compile(r"\b\d+-\d+ in flight"), "N-N in flight"),
)


def task_log(sink: Path) -> list[str]:
    """The export DAG's task log as the demo shows it: its messages, one per line."""
    with AirflowApiServer(
        REPO / "example_dags",
        run_dags=("exports_producer", "orders_loader"),
        failing_dags=("broken_feed",),
        scheduler_pass=True,
    ) as server:
        env = export_env(server, sink)
        airflow = str(Path(sys.executable).with_name("airflow"))
        subprocess.run(
            [airflow, "coremodels", "export", "--sink", str(sink)],
            env=env, check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        run = subprocess.run(
            [airflow, "dags", "test", "coremodels_export"],
            env={**env, **QUIET_DAGS_TEST}, check=True, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    return [message(line).replace(str(sink), SHOWN_SINK) for line in (run.stdout + run.stderr).splitlines()]


def message(line: str) -> str:
    """A log line's message, without the time, level and logger Airflow's handlers put around it."""
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)  # a terminal's colours
    for pattern in (
        r"^\S+ \[\w+\s*\] (.*?)(?:\s+\[[\w.]+\])?(?:\s+\w+=\S+)*$",  # structlog's console form
        r"^\[[^\]]+\] \{[^}]+\} \w+ - (.*)$",  # the classic "[time] {file:line} LEVEL - message"
    ):
        found = re.match(pattern, line)
        if found:
            return found.group(1).rstrip()
    return line.rstrip()


def sample(lines: list[str]) -> list[str]:
    """The README's block: the first line starting as each of ``SHOWN`` does, in order."""
    out: list[str] = []
    at = 0
    for start in SHOWN:
        if start == "...":
            out.append("...")
            continue
        for index in range(at, len(lines)):
            text = lines[index]
            if text.startswith(start) or (start == "DAGs (" and re.match(r"\d+ DAGs \(", text)):
                out.append(text)
                at = index + 1
                break
        else:
            raise SystemExit(f"sample_log: the task log has no line starting {start!r} after line {at}")
    return out


def readme_block(readme: str) -> list[str]:
    """The README's sample log: the fenced block after "The task log of `make demo`"."""
    found = re.search(r"The task log of `make\s+demo`[^\n]*\n(?:[^\n]*\n)*?```\n(.*?)```", readme, re.S)
    if not found:
        raise SystemExit("sample_log: README.md has no fenced block after 'The task log of `make demo`'")
    return found.group(1).splitlines()


def shape(line: str) -> str:
    for pattern, stands_for in VOLATILE:
        line = pattern.sub(stands_for, line)
    return line


def differences(readme: list[str], logged: list[str]) -> list[str]:
    said = []
    if len(readme) != len(logged):
        said.append(f"README shows {len(readme)} lines, the demo's log gives {len(logged)}")
    for number, (shown, real) in enumerate(zip(readme, logged, strict=False), 1):
        if shape(shown) != shape(real):
            said.append(f"line {number}: README shows\n  {shown}\nthe demo logs\n  {real}")
    return said


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sink", type=Path, help="the sink directory (default: a temporary one)")
    parser.add_argument("--check", type=Path, help="compare with this README instead of printing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coremodels-sample-log-") as scratch:
        logged = sample(task_log(args.sink or Path(scratch) / "sink"))
    if args.check:
        said = differences(readme_block(args.check.read_text(encoding="utf-8")), logged)
        for line in said:
            print(f"sample_log: {line}", file=sys.stderr)
        return 1 if said else 0
    print("```\n" + "\n".join(logged) + "\n```")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
