"""The pre-commit hook this repository ships (``.pre-commit-hooks.yaml``), run as pre-commit runs it:
its ``entry`` and the user's ``args`` on a command line, no server; whether pre-commit runs it at all
for a commit is decided as pre-commit decides it, from the files it lists for that commit in a real
git repository (pre-commit itself is not installed here: it would build the hook's environment,
Airflow included, from the network)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml
from support.helpers import REPO

GOOD = """\
import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG

with DAG("tidy", schedule="@daily", start_date=pendulum.datetime(2026, 1, 1), description="Tidies up",
         default_args={"owner": "ops"}, catchup=False):
    EmptyOperator(task_id="only")
"""


def hook() -> dict[str, object]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["coremodels-dag-folder"]
    return hooks[0]


def run_hook(*args: str) -> subprocess.CompletedProcess[str]:
    """The hook's entry with ``args`` appended, as pre-commit does (``pass_filenames: false``)."""
    entry = shlex.split(str(hook()["entry"]))
    assert entry[:2] == ["python", "-m"]
    command = [sys.executable, *entry[1:], *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)


def listed_for_commit(repo: Path) -> list[str]:
    """The files pre-commit hands its hooks for a commit: the staged ones, deletions left out (the
    ``git diff --staged`` of pre-commit's ``git.get_staged_files``)."""
    names = subprocess.run(
        ["git", "diff", "--staged", "--name-only", "--no-ext-diff", "-z", "--diff-filter=ACMRTUXB"],
        cwd=repo, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [name for name in names.split("\0") if name]


def pre_commit_runs(declared: dict[str, object], files: list[str]) -> bool:
    """Whether pre-commit runs a hook for a commit listing ``files``: ``always_run``, or a file its
    ``files`` pattern takes and ``exclude`` leaves (otherwise: "(no files to check) Skipped")."""
    if declared.get("always_run"):
        return True
    take, leave = str(declared.get("files", "")), str(declared.get("exclude", "^$"))
    return any(re.search(take, name) and not re.search(leave, name) for name in files)


def docs_args() -> list[str]:
    """The hook's ``args`` as docs/premerge.md's pre-commit configuration gives them."""
    text = (REPO / "docs" / "premerge.md").read_text()
    block = next(b for b in text.split("```yaml")[1:] if ".pre-commit-config.yaml" in b.split("\n", 2)[1])
    (configured,) = yaml.safe_load(block.split("```")[0])["repos"][0]["hooks"]
    return [str(arg) for arg in configured["args"]]


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip


def test_the_hook_is_declared_as_pre_commit_reads_it() -> None:
    declared = hook()
    assert declared["language"] == "python" and declared["pass_filenames"] is False
    assert declared["always_run"] is True  # a deletion-only commit lists no file: see below
    assert str(declared["entry"]).endswith("--dag-folder")  # the user's first arg is the folder
    assert "--fail-on-break" in str(declared["entry"]).split()


def test_the_hook_passes_a_clean_folder_and_fails_one_that_breaks(tmp_path: Path) -> None:
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "tidy.py").write_text(GOOD)
    clean = run_hook(str(folder))
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.startswith("This change (bundle dags-folder, no baseline): opens 0 findings")

    (folder / "broken.py").write_text("from airflow.sdk import DAG\nraise ValueError('moved')\n")
    broken = run_hook(str(folder))
    assert broken.returncode == 1  # the change opens an Error: the file does not import
    assert "opens: Error dag-import-error dags-folder/broken.py" in broken.stdout.splitlines()
    assert "Traceback" not in broken.stderr


PRODUCER = """\
import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

with DAG("load_orders", schedule="@daily", start_date=pendulum.datetime(2026, 1, 1), description="Loads",
         default_args={"owner": "ingest"}, catchup=False):
    EmptyOperator(task_id="publish", outlets=[Asset("s3://lake/orders")])
"""
CONSUMER = """\
import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

with DAG("daily_revenue", schedule=[Asset("s3://lake/orders")], start_date=pendulum.datetime(2026, 1, 1),
         description="Sums", default_args={"owner": "finance"}, catchup=False):
    EmptyOperator(task_id="compute")
"""


def test_a_commit_that_only_deletes_a_producer_is_checked_and_fails(tmp_path: Path) -> None:
    """Issue 43 item 4: pre-commit lists no file for a deletion-only commit, so a hook that waits for
    a staged DAG file skips it ("(no files to check) Skipped"); this one runs, and the deletion, which
    starves another team's DAG, fails it."""
    repo = tmp_path / "repo"
    (repo / "dags").mkdir(parents=True)
    (repo / "dags" / "load_orders.py").write_text(PRODUCER)
    (repo / "dags" / "revenue.py").write_text(CONSUMER)
    git(repo, "init", "-q")
    git(repo, "add", "dags")
    git(repo, "commit", "-q", "-m", "deployed")
    baseline = repo / ".coremodels" / "baseline.json"  # where the docs' args read it
    baseline.parent.mkdir()
    running = {**os.environ, "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}
    parsed = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", str(repo / "dags"),
         "--format", "json"],
        capture_output=True, text=True, cwd=REPO, timeout=300, env=running,
    )  # fmt: skip
    assert parsed.returncode == 0, parsed.stderr
    baseline.write_text(parsed.stdout)

    git(repo, "rm", "-q", "dags/load_orders.py")
    assert listed_for_commit(repo) == []  # what pre-commit hands its hooks for this commit
    assert not pre_commit_runs({**hook(), "always_run": False, "files": r"\.py$"}, [])  # a hook that waits
    assert pre_commit_runs(hook(), [])
    entry = [sys.executable, *shlex.split(str(hook()["entry"]))[1:]]
    ran = subprocess.run(
        [*entry, *docs_args()],  # the hook as docs/premerge.md configures it: --base HEAD
        capture_output=True, text=True, cwd=repo, timeout=300, env=running,
    )  # fmt: skip
    assert ran.returncode == 1, ran.stderr
    assert "merge base" in ran.stdout.splitlines()[0] and "0 of 1 files parsed" in ran.stdout.splitlines()[0]
    assert "breaks: daily_revenue (finance) through s3://lake/orders: Warning asset-unproduced" in ran.stdout
