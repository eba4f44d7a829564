"""The pre-commit hook this repository ships (``.pre-commit-hooks.yaml``), run as pre-commit runs it:
its ``entry`` and the user's ``args`` on a command line, no server, no baseline."""

from __future__ import annotations

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


def test_the_hook_is_declared_as_pre_commit_reads_it() -> None:
    declared = hook()
    assert declared["language"] == "python" and declared["pass_filenames"] is False
    assert str(declared["entry"]).endswith("--dag-folder")  # the user's first arg is the folder


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
