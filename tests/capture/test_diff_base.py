"""The merge base's folder, as ``--base`` lays it out (``capture/diff.py``), and the one parse server
that parses both versions (``capture/dag_folder.ParseServer``).

The base is made from the work tree's tracked files the diff leaves alone and ``git archive`` of the
touched paths alone; it must be, file for file, what ``git archive`` of the whole folder at the
merge base gives, and the work tree must be left as it was (only read: no link to its files).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import processes

from airflow_provider_coremodels.capture import diff
from airflow_provider_coremodels.capture.dag_folder import FolderJob, ParseServer
from airflow_provider_coremodels.capture.sandbox import bwrap_command, probe

DAG = """\
from datetime import datetime
from airflow.sdk import DAG

with DAG(dag_id="{dag_id}", schedule=None, start_date=datetime(2026, 1, 1), description="{text}"):
    pass
"""


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A main branch with DAG files, a helper, data, a link and an ignored file; then a branch that
    changes one, deletes one, renames one, adds one, and leaves one edit and one file uncommitted."""
    repo = tmp_path / "repo"
    dags = repo / "dags"
    write(
        dags,
        {
            "a.py": DAG.format(dag_id="a", text="A"),
            "b.py": DAG.format(dag_id="b", text="B"),
            "sub/c.py": DAG.format(dag_id="c", text="C"),
            "include/helper.py": "NAME = 'x'\n",
            "data.yaml": "rows: 1\n",
            ".gitignore": "generated.py\n",
        },
    )
    (dags / "same_as_a.py").symlink_to("a.py")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "change")
    write(
        dags, {"a.py": DAG.format(dag_id="a", text="A changed"), "new.py": DAG.format(dag_id="n", text="N")}
    )
    (dags / "b.py").unlink()
    git(repo, "mv", "dags/sub/c.py", "dags/sub/d.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    write(dags, {"data.yaml": "rows: 2\n", "untracked.py": "X = 1\n", "generated.py": "Y = 1\n"})
    return repo


def tree_of(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file and link under ``root``: its kind and its bytes (a link: its target)."""
    found = {}
    for directory, dirs, names in os.walk(root):
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(directory, d)))]:
            path = Path(directory) / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path).encode())
            else:
                found[relative] = ("file", path.read_bytes())
    return found


def archived(repo: Path, tmp_path: Path) -> dict[str, tuple[str, bytes]]:
    """``git archive`` of the folder at main, extracted: what the base was laid out as before."""
    out = tmp_path / "archived"
    data = git(repo, "archive", "--format=tar", "main", "--", "dags")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(out, filter="data")
    return tree_of(out / "dags")


def test_the_base_is_the_merge_base_s_folder_and_the_work_tree_is_only_read(
    repo: Path, tmp_path: Path
) -> None:
    dags = repo / "dags"
    before = {p: os.lstat(p) for p in dags.rglob("*")}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    view = diff.from_git(dags, "main", scratch, head=diff.scan(dags))
    assert view.tree is not None  # laid out from the work tree, not written out whole
    assert tree_of(view.folder) == archived(repo, tmp_path)
    assert view.changed == {"a.py", "data.yaml"}
    assert view.deleted == {"b.py"}
    assert view.renamed == {"sub/c.py": "sub/d.py"}
    assert view.added == {"new.py", "untracked.py"}  # the ignored generated.py is nobody's change
    # what to_parse reads of the base is what lies there
    assert view.tree.files == set(tree_of(view.folder))
    for relative, text in view.tree.texts.items():
        assert (view.folder / relative).read_bytes() == text
    # the work tree: the same files, the same inodes, no new link to any of them, untouched
    after = {p: os.lstat(p) for p in dags.rglob("*")}
    assert after.keys() == before.keys()
    for path, was in before.items():
        now = after[path]
        assert (now.st_ino, now.st_nlink, now.st_ctime_ns, now.st_mtime_ns) == (
            was.st_ino,
            was.st_nlink,
            was.st_ctime_ns,
            was.st_mtime_ns,
        ), path


def test_written_out_whole_it_is_the_same_folder(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(diff, "_MAX_DELTA_FILES", 0)  # more touched files than the copy takes
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    view = diff.from_git(repo / "dags", "main", scratch)
    assert view.tree is None
    assert tree_of(view.folder) == archived(repo, tmp_path)


def test_a_folder_the_change_creates_is_empty_at_the_base(repo: Path, tmp_path: Path) -> None:
    write(repo / "fresh", {"one.py": DAG.format(dag_id="one", text="1"), "inc/two.py": "Z = 2\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a new folder")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    view = diff.from_git(repo / "fresh", "main", scratch)
    assert view.added == {"one.py", "inc/two.py"}
    assert tree_of(view.folder) == {}


def test_a_file_the_run_hides_in_the_folder_is_hidden_in_the_base_s_copy_too(tmp_path: Path) -> None:
    head, base = tmp_path / "head", tmp_path / "base"
    for folder in (head, base):
        write(folder, {"baseline.json": "{}", "a.py": "A = 1\n"})
    command = bwrap_command(
        "bwrap",
        python=sys.executable,
        worker="/dev/null",
        folders=[str(head), str(base)],
        hidden=[str(head / "baseline.json")],
    )
    masks = {
        command[i + 2]
        for i, arg in enumerate(command[:-2])
        if command[i : i + 2] == ["--ro-bind", "/dev/null"]
    }
    assert {str(head / "baseline.json"), str(base / "baseline.json")} <= masks
    assert str(base / "a.py") not in masks


def test_one_server_parses_a_folder_filled_after_its_start_and_the_other_after(tmp_path: Path) -> None:
    """The server is started on an empty base folder (bound before it is filled, as ``--base`` lays
    out the merge base while Airflow is imported) and parses each job's folder, in order."""
    head, base = tmp_path / "head", tmp_path / "base"
    write(head, {"a.py": DAG.format(dag_id="a", text="head"), "b.py": DAG.format(dag_id="b", text="head")})
    base.mkdir()
    with ParseServer([head, base], ready=[head], timeout=30, sandbox="auto") as server:
        write(base, {"a.py": DAG.format(dag_id="a", text="base")})
        server.ready(base)
        at_base, at_head = server.parse([FolderJob(base), FolderJob(head, only=["a.py"])])
    assert {d["dag_id"]: d["description"] for d in at_base.dags["dags"]} == {"a": "base"}
    assert {d["dag_id"]: d["description"] for d in at_head.dags["dags"]} == {"a": "head"}
    assert (at_base.files, at_base.listed, at_head.files, at_head.listed) == (1, 1, 1, 2)
    assert server.process is not None and server.process.returncode == 0


def test_a_server_never_asked_to_parse_is_ended(tmp_path: Path) -> None:
    write(tmp_path / "dags", {"a.py": DAG.format(dag_id="a", text="a")})
    server = ParseServer([tmp_path / "dags"], timeout=30)
    with server:
        pass  # the run failed before it said what to parse (no merge base, a bad baseline)
    assert server.process is not None and server.process.poll() is not None
    assert not os.path.exists(server.scratch)


def test_a_sandboxed_server_ended_during_its_start_leaves_no_process(tmp_path: Path) -> None:
    """Ended at every moment of its start (bubblewrap still setting up, or Airflow's import):
    nothing of it remains. Ended within bubblewrap's first milliseconds, its sandbox init, cloned a
    moment before and its parent-death signal not armed yet, outlived it and waited for ever (a
    run that fails at once, with no merge base, left one in a loaded run): about 1 in 15 such ends
    did, with three runs at once, before the server's end stopped bubblewrap's process group first.
    """
    bwrap, why = probe()
    if bwrap is None:
        if os.environ.get("COREMODELS_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"COREMODELS_REQUIRE_SANDBOX=1 but {why}")
        pytest.skip(why)
    write(tmp_path / "dags", {"a.py": DAG.format(dag_id="a", text="a")})

    def end_early(lane: int) -> None:
        for attempt in range(40):
            with ParseServer([tmp_path / "dags"], timeout=30, sandbox="require") as server:
                assert server.process is not None
                time.sleep((attempt * 7 + lane * 3) % 20 / 1000)  # 0 to 19 ms into its start

    def end_later() -> None:
        for attempt in range(10):
            with ParseServer([tmp_path / "dags"], timeout=30, sandbox="require"):
                time.sleep(attempt * 0.1)  # into Airflow's import

    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(end_early, lane) for lane in range(3)] + [pool.submit(end_later)]:
            done.result()
    # what bubblewrap ran names the folder it binds: none of it may be left
    left = processes.left(lambda: processes.with_cmdline(str(tmp_path).encode()))
    assert left == [], [(pid, processes.state(pid)) for pid in left]


WATCHER = """\
import os
from datetime import datetime
from airflow.sdk import DAG

seen = "seen" if os.path.exists(os.path.join("/tmp", "{marker}")) else "unseen"
with DAG(dag_id="watcher", schedule=None, start_date=datetime(2026, 1, 1), description=seen):
    pass
"""
WRITER = """\
import os
from datetime import datetime
from airflow.sdk import DAG

with open(os.path.join("/tmp", "{marker}"), "w") as handle:
    handle.write("the pull request was here")
with DAG(dag_id="writer", schedule=None, start_date=datetime(2026, 1, 1), description="w"):
    pass
"""


def test_the_work_tree_s_code_runs_only_after_the_merge_base_s_parse(tmp_path: Path) -> None:
    """Both versions share one sandbox (and its /tmp): the merge base's files are parsed first, so
    what the pull request's code leaves behind cannot change the parse it is judged against. The
    reverse order shows the channel is real."""
    marker = f"coremodels-marker-{os.getpid()}-{tmp_path.name}"
    head, base = tmp_path / "head", tmp_path / "base"
    write(head, {"writer.py": WRITER.format(marker=marker)})
    write(base, {"watcher.py": WATCHER.format(marker=marker)})
    try:
        for order, expected in (("base first", "unseen"), ("work tree first", "seen")):
            with ParseServer([head, base], timeout=30) as server:
                jobs = [FolderJob(base), FolderJob(head)]
                results = server.parse(jobs if order == "base first" else jobs[::-1])
            at_base = results[0] if order == "base first" else results[1]
            assert [d["description"] for d in at_base.dags["dags"]] == [expected], order
    finally:  # without a sandbox the DAG code wrote the machine's /tmp
        Path("/tmp", marker).unlink(missing_ok=True)
