"""The fork server the Airflow tests run their commands through (``tests/support/airflow_forks.py``).

Each run must be what a fresh process would be: the request's environment and nothing of the
run before, its own output and exit code, the server's settings refused where they differ, a run
that overstays its timeout ended with everything it started, and a spawned run (the API server)
going on beside the next ones until its group is ended. A real server (Airflow imported,
the CLI's parser built), in an Airflow home with a migrated database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import processes
from support.airflow_forks import AirflowForks, shared
from support.airflow_server import migrated_home

pytestmark = pytest.mark.slow

ARGS = [sys.executable, "-c", "..."]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("forks")
    (root / "dags").mkdir()
    return migrated_home(root / "home", root / "dags")


@pytest.fixture(scope="module")
def forks(home: dict[str, str]) -> Iterator[AirflowForks]:
    server = AirflowForks(home, warm=("cli",))
    yield server
    server.stop()


def python(forks: AirflowForks, env: dict[str, str], code: str, timeout: float = 120):
    return forks.run({"python": code}, env=env, timeout=timeout, args=ARGS)


def test_each_run_has_the_request_s_environment_and_nothing_of_the_run_before(forks, home) -> None:
    code = (
        "import os\n"
        "from airflow.models import Variable\n"
        "print(Variable.get('colour', default_var='none'), os.environ.get('AIRFLOW_CONN_X', 'no conn'))\n"
        "os.environ['AIRFLOW_VAR_COLOUR'] = 'left behind'\n"
    )
    first = python(forks, {**home, "AIRFLOW_VAR_COLOUR": "red", "AIRFLOW_CONN_X": "http://h"}, code)
    second = python(forks, home, code)
    # the last line: Airflow may log before it (a secret too short to mask, say)
    assert (first.returncode, first.stdout.splitlines()[-1]) == (0, "red http://h"), first.stderr
    assert (second.returncode, second.stdout.splitlines()[-1]) == (0, "none no conn"), second.stderr


def test_a_run_s_output_and_exit_code_are_its_own(forks, home) -> None:
    failed = python(forks, home, "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    raised = python(forks, home, "raise RuntimeError('boom')")
    assert (failed.returncode, failed.stdout, failed.stderr) == (3, "out\n", "err\n")
    assert raised.returncode == 1
    assert "RuntimeError: boom" in raised.stderr and raised.stdout == ""


def test_a_python_run_gets_its_arguments_and_runs_its_exit_handlers_when_asked(forks, home) -> None:
    code = (
        "import atexit, sys\natexit.register(lambda: print('exit handler ran'))\nprint(sys.argv)\nsys.exit(4)"
    )
    asked = forks.run(
        {"python": code, "argv": ["a", "b"], "exit_handlers": True}, env=home, timeout=120, args=ARGS
    )
    not_asked = forks.run({"python": code}, env=home, timeout=120, args=ARGS)
    assert (asked.returncode, asked.stdout) == (4, "['-c', 'a', 'b']\nexit handler ran\n"), asked.stderr
    assert (not_asked.returncode, not_asked.stdout) == (4, "['-c']\n"), not_asked.stderr


def test_an_airflow_command_runs_as_the_cli_runs_it(forks, home, tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = forks.run({"airflow": ["variables", "list"]}, env=home, timeout=120, args=ARGS, stdout=log)
    assert done.returncode == 0, log.read_text()
    bad = forks.run({"airflow": ["no-such-command"]}, env=home, timeout=120, args=ARGS, stdout=log)
    assert bad.returncode == 2  # argparse's usage error, as `airflow no-such-command` exits
    assert "invalid choice" in log.read_text()


def test_settings_beyond_connections_and_variables_are_refused(forks, home) -> None:
    with pytest.raises(ValueError, match="differs from the server's"):
        python(forks, {**home, "AIRFLOW__CORE__PARALLELISM": "3"}, "pass")
    # a server given other prefixes (support.cli_forks's) lets those differ instead
    assert shared({"A": "1", "OPENLINEAGE_URL": "u", "AIRFLOW_CONN_X": "c"}, ("OPENLINEAGE_URL",)) == {
        "A": "1",
        "AIRFLOW_CONN_X": "c",
    }


def test_a_run_past_its_timeout_is_ended_with_what_it_started(home, tmp_path: Path) -> None:
    """The run and its own child are killed, the server stopped, and the timeout raised."""
    server = AirflowForks(home)
    marker = tmp_path / "pid"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )
    try:
        python(server, home, "pass")  # the server is up: the timeout below is the run's alone
        started = time.monotonic()
        with pytest.raises(subprocess.TimeoutExpired):
            python(server, home, code, timeout=3)
        assert time.monotonic() - started < 10
        assert server.process.poll() is not None
        child = int(marker.read_text())
        assert processes.left(lambda: [child] if processes.alive(child) else []) == []
    finally:
        server.stop()


def test_a_spawned_run_goes_on_beside_the_next_and_is_reaped_when_the_server_stops(
    home, tmp_path: Path
) -> None:
    """``spawn`` (how the API server starts): the server answers other runs while it lives, its
    group ends with a signal, and no zombie of it outlives the server."""
    server = AirflowForks(home)
    log = tmp_path / "spawned.log"
    code = "import time\nprint('up', flush=True)\ntime.sleep(600)\n"
    try:
        spawned = server.spawn({"python": code}, env=home, timeout=120, args=ARGS, stdout=log)
        for _ in range(100):
            if log.read_text() == "up\n":
                break
            time.sleep(0.1)
        assert log.read_text() == "up\n" and not spawned.ended()
        assert python(server, home, "print('beside')").stdout == "beside\n"  # not held up by it
        with pytest.raises(ValueError, match="differs from the server's"):
            server.spawn({"python": "pass"}, env={**home, "AIRFLOW__CORE__PARALLELISM": "3"}, timeout=120,
                         args=ARGS, stdout=log)  # fmt: skip
        spawned.signal_group(signal.SIGTERM)
        assert spawned.wait(timeout=10)
        assert processes.alive(spawned.pid) is False
        assert os.path.exists(f"/proc/{spawned.pid}")  # a zombie until the server reaps it
    finally:
        server.stop()
    assert not os.path.exists(f"/proc/{spawned.pid}")
