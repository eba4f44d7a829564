"""Start a real Airflow 3 API server on 127.0.0.1, backed by SQLite, for tests and demos.

Usage::

    from support.airflow_server import AirflowApiServer

    with AirflowApiServer("example_dags/estate") as server:
        response = server.get("/api/v2/dags", limit=100)
        response.raise_for_status()

Start-up runs ``airflow db migrate`` (once per test process, into a template each home copies)
and ``airflow dags reserialize`` (which parses the DAG folder and writes DAGs, tags, owners, paused
state and asset rows to the database), then starts ``airflow api-server`` in its own process group
and waits until ``/api/v2/version`` answers. The commands after the migration, the server among them,
are forked from one process of the home's that imported Airflow (``support.airflow_forks``).
The server is always stopped on exit, also on exceptions and KeyboardInterrupt.

Runnable as a script to time a start-up: ``python tests/support/airflow_server.py [DAGS_FOLDER]``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from support.airflow_forks import AirflowForks, Spawned

DEFAULT_PASSWORD = "coremodels-test-password"
#: A second user with the simple auth manager's least role (read-only): what the docs tell
#: people the capture needs, and the tests capture with.
VIEWER = ("viewer", "coremodels-viewer-password")
AUTH_MANAGER = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"


# What a scheduler does every [scheduler] parsing_cleanup_interval, without running one: activate
# the assets DAGs reference (an asset an alias created is inactive until then) and write an
# "asset conflict" DAG warning for every asset whose name or URI is already taken.
_SCHEDULER_PASS = """
from airflow.jobs.job import Job
from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

SchedulerJobRunner(job=Job())._update_asset_orphanage()
"""


#: What a test that changes DAG files needs: Airflow otherwise skips a file parsed, or a DAG
#: written, less than 30 s before ([dag_processor] min_file_process_interval,
#: [core] min_serialized_dag_update_interval), and a change would silently not be seen; and it
#: looks for DAGs that left their file once a minute ([scheduler] parsing_cleanup_interval), marking
#: one stale once it was last parsed 50 s before its file ([dag_processor] stale_dag_threshold):
#: every pass here, and 2 s, so a test's steps must be more than 2 s apart (``reparse`` sees to it).
REPARSE_AT_ONCE = {
    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "0",
    "AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": "0",
    "AIRFLOW__SCHEDULER__PARSING_CLEANUP_INTERVAL": "0",
    "AIRFLOW__DAG_PROCESSOR__STALE_DAG_THRESHOLD": "2",
}
#: The least time between two ``reparse`` passes: more than the stale threshold above.
_REPARSE_GAP = 3.0


class AirflowServerError(RuntimeError):
    """The Airflow API server (or one of its set-up commands) failed."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 60) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def home_env(home: Path, dags_folder: str | os.PathLike[str]) -> dict[str, str]:
    """The environment of an Airflow with its home, SQLite database and DAG folder, and no examples.

    Everything ``AIRFLOW__*`` from the calling environment is dropped, so a developer's own
    Airflow settings never leak into a test.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AIRFLOW__") and key not in ("AIRFLOW_HOME", "AIRFLOW_CONFIG")
    }
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{Path(home) / 'airflow.db'}",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(Path(home) / "logs"),
            # DAG owners are ", ".join(set(task owners)): a fixed hash seed makes their order
            # (and so the recorded fixtures) reproducible.
            "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


#: Settings that shape what ``airflow db migrate`` writes (the log templates it records): an
#: environment that sets one gets a migration of its own rather than the shared one.
_MIGRATION_SETTINGS = (
    "AIRFLOW__DATABASE__",
    "AIRFLOW__LOGGING__",
    "AIRFLOW__ELASTICSEARCH__",
    "AIRFLOW__OPENSEARCH__",
)
#: Those every home sets to its own paths (home_env): they do not change what is written.
_PER_HOME = ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__LOGGING__BASE_LOG_FOLDER")
_migrated_template: Path | None = None


def _migrate(env: dict[str, str], home: Path, *, timeout: float) -> None:
    """``airflow db migrate`` into ``home``'s SQLite database.

    The migration is the same for every home of this interpreter (the tables, the pool, the log
    templates: nothing of the DAG folder or the port), and it is the slowest step of a start-up,
    so this process runs it once, for real, into a template of its own, and each home gets a copy.
    A home whose environment sets a database or logging option is migrated on its own.
    """
    global _migrated_template
    if any(key.startswith(_MIGRATION_SETTINGS) for key in env if key not in _PER_HOME):
        _run_migrate(env, timeout=timeout)
        return
    if _migrated_template is None:
        template_home = Path(tempfile.mkdtemp(prefix="airflow-migrated-"))
        atexit.register(shutil.rmtree, template_home, True)
        template_env = dict(env)
        template_env["AIRFLOW_HOME"] = str(template_home)
        template_env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{template_home / 'airflow.db'}"
        _run_migrate(template_env, timeout=timeout)
        _migrated_template = template_home / "airflow.db"
    shutil.copyfile(_migrated_template, home / "airflow.db")


def _run_migrate(env: dict[str, str], *, timeout: float) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        cwd=env["AIRFLOW_HOME"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    if result.returncode != 0:
        raise AirflowServerError(f"airflow db migrate failed:\n{result.stderr[-3000:]}")


def migrated_home(home: Path, dags_folder: str | os.PathLike[str]) -> dict[str, str]:
    """An Airflow home with a migrated SQLite database (no server): where ``dag.test()`` can run."""
    home.mkdir(parents=True, exist_ok=True)
    env = home_env(home, dags_folder)
    _migrate(env, home, timeout=300)
    return env


class AirflowApiServer:
    """A real ``airflow api-server`` on 127.0.0.1 with a throw-away SQLite database.

    ``port=None`` picks a free port; ``extra_env`` is applied last (it can override anything,
    e.g. ``{"AIRFLOW__API__MAXIMUM_PAGE_LIMIT": "2"}``); ``home=None`` uses a temporary
    AIRFLOW_HOME that is removed on exit (a given ``home`` is kept). ``run_dags`` are run once
    with ``airflow dags test`` before the server starts (an alias producer must have run for its
    alias to resolve), ``failing_dags`` likewise, their failure expected (a producer whose latest
    run failed), and ``scheduler_pass`` then does the scheduler's asset pass (activation
    and asset-conflict warnings), since no scheduler runs here. After start-up, ``env`` is
    the environment used, so ``airflow`` CLI commands can run against the same database, and
    ``timings`` holds the seconds each start-up step took.
    """

    def __init__(
        self,
        dags_folder: str | os.PathLike[str],
        *,
        port: int | None = None,
        extra_env: dict[str, str] | None = None,
        username: str = "admin",
        password: str = DEFAULT_PASSWORD,
        home: str | os.PathLike[str] | None = None,
        allow_import_errors: bool = False,
        startup_timeout: float = 120.0,
        command_timeout: float = 300.0,
        run_dags: tuple[str, ...] = (),
        failing_dags: tuple[str, ...] = (),
        scheduler_pass: bool = False,
    ) -> None:
        self.dags_folder = Path(dags_folder).resolve()
        self.port = port
        self.extra_env = dict(extra_env or {})
        self.username = username
        self.password = password
        self._home_arg = Path(home) if home is not None else None
        self.allow_import_errors = allow_import_errors
        self.startup_timeout = startup_timeout
        self.command_timeout = command_timeout
        self.run_dags = run_dags
        self.failing_dags = failing_dags
        self.scheduler_pass = scheduler_pass

        self.home: Path | None = None
        self.env: dict[str, str] = {}
        self.base_url = ""
        self.log_path: Path | None = None
        self.timings: dict[str, float] = {}
        self._own_home = False
        self._process: Spawned | None = None
        self._token: str | None = None
        self._forks: AirflowForks | None = None
        self._last_reparse = time.monotonic()  # start-up parsed the DAG folder

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> AirflowApiServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        if not self.dags_folder.is_dir():
            raise AirflowServerError(f"DAGs folder not found: {self.dags_folder}")
        started = time.monotonic()
        try:
            self._prepare_home()
            migrating = time.monotonic()
            assert self.home is not None
            _migrate(self.env, self.home, timeout=self.command_timeout)
            self.timings["db_migrate"] = time.monotonic() - migrating
            # Airflow's commands below are forked from one process that imported Airflow
            # (support.airflow_forks): each is then its work, not an import. It starts after the
            # migration, which may write the home's airflow.cfg (its Fernet key) in a process of
            # its own: the server must read that file, or write it first, never race it.
            warm = ("cli", "dag_test") if self.run_dags or self.failing_dags else ("cli",)
            self._forks = AirflowForks(self.env, warm=warm, cwd=str(self.home))
            self._run_cli("dags", "reserialize", timing="dags_reserialize")
            for dag_id in self.run_dags:
                self._run_cli("dags", "test", dag_id, timing=f"dags_test_{dag_id}")
            for dag_id in self.failing_dags:
                self._run(
                    ["-m", "airflow", "dags", "test", dag_id],
                    timing=f"dags_test_{dag_id}",
                    what=f"`airflow dags test {dag_id}`",
                    check=False,
                )
            if self.scheduler_pass:
                self._run_python(_SCHEDULER_PASS, timing="scheduler_pass")
            self._check_database()
            self._start_server()
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = time.monotonic() - started

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if not process.ended():
                process.signal_group(signal.SIGTERM)
                if not process.wait(timeout=15):
                    process.signal_group(signal.SIGKILL)
                    process.wait(timeout=15)
            # Workers may outlive the main process: make sure the whole group is gone.
            process.signal_group(signal.SIGKILL)
        forks, self._forks = self._forks, None
        if forks is not None:  # after the server: it reaps the server as it leaves
            forks.stop()
        if self._own_home and self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self._own_home = False

    # ------------------------------------------------------------------ set-up steps
    def _prepare_home(self) -> None:
        if self._home_arg is None:
            self.home = Path(tempfile.mkdtemp(prefix="airflow-home-"))
            self._own_home = True
        else:
            self.home = self._home_arg.resolve()
            self.home.mkdir(parents=True, exist_ok=True)
        if self.port is None:
            self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.home / "api-server.log"

        passwords_file = self.home / "simple_auth_manager_passwords.json"
        passwords_file.write_text(json.dumps({self.username: self.password, VIEWER[0]: VIEWER[1]}))

        env = home_env(self.home, self.dags_folder)
        env.update(
            {
                "AIRFLOW__CORE__AUTH_MANAGER": AUTH_MANAGER,
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{self.username}:admin,{VIEWER[0]}:viewer",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
                "AIRFLOW__API__SECRET_KEY": "coremodels-test-api-secret-key",
                "AIRFLOW__API_AUTH__JWT_SECRET": "coremodels-test-jwt-secret-" + "0123456789abcdef" * 4,
                "AIRFLOW__API__BASE_URL": self.base_url,
            }
        )
        env.update(self.extra_env)
        self.env = env

    def _run_python(self, code: str, *, timing: str) -> None:
        self._run(["-c", code], timing=timing, what="the scheduler's asset pass")

    def run_python(self, code: str, *, what: str) -> None:
        """Run ``code`` with Airflow's environment (its metadata database) while the server runs:
        a test's way to set state no API call can, such as an old asset event."""
        self._run(["-c", code], timing=what.replace(" ", "_"), what=what)

    def reparse(self) -> None:
        """One pass of the DAG processor over the bundles, as a running deployment's would do: new
        and changed files parsed, a deleted file's DAGs marked stale, import errors recorded. Start
        the server with ``REPARSE_AT_ONCE`` in ``extra_env`` for a change to be written at once."""
        wait = self._last_reparse + _REPARSE_GAP - time.monotonic()
        if wait > 0:  # a DAG that left its file turns stale only once its last parse is that old
            time.sleep(wait)
        self._run_cli("dag-processor", "--num-runs", "1", timing="dag_processor")
        self._last_reparse = time.monotonic()

    def scheduler_pass_now(self) -> None:
        """The scheduler's asset pass (activation, orphans, asset-conflict warnings) while running."""
        self._run_python(_SCHEDULER_PASS, timing="scheduler_pass")

    def patch(self, path: str, body: dict[str, Any]) -> requests.Response:
        """PATCH ``path`` with a JSON body and a bearer token (``/api/v2/dags/x`` to pause, say)."""
        if self._token is None:
            self._token = self.token()
        return requests.patch(
            f"{self.base_url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=30,
        )

    def _run_cli(self, *args: str, timing: str) -> None:
        self._run(["-m", "airflow", *args], timing=timing, what=f"`airflow {' '.join(args)}`")

    def _run(self, args: list[str], *, timing: str, what: str, check: bool = True) -> None:
        """``python ARGS`` (``-m airflow ...`` or ``-c CODE``) with the server's environment, forked
        from the home's fork server; its output is the step's log."""
        assert self.home is not None and self._forks is not None
        log_path = self.home / f"{timing}.log"
        started = time.monotonic()
        request = {"airflow": args[2:]} if args[:2] == ["-m", "airflow"] else {"python": args[1]}
        try:
            result = self._forks.run(
                request,
                env=self.env,
                timeout=self.command_timeout,
                args=[sys.executable, *args],
                stdout=log_path,
                cwd=self.home,
            )
        except subprocess.TimeoutExpired as err:
            raise AirflowServerError(
                f"{what} timed out after {self.command_timeout} s:\n{_tail(log_path)}"
            ) from err
        self.timings[timing] = time.monotonic() - started
        if check and result.returncode != 0:
            raise AirflowServerError(f"{what} failed with exit code {result.returncode}:\n{_tail(log_path)}")

    def _check_database(self) -> None:
        """Fail early if parsing left no DAGs, or import errors (unless allow_import_errors)."""
        assert self.home is not None
        with sqlite3.connect(self.home / "airflow.db") as db:
            errors = db.execute("SELECT filename, stacktrace FROM import_error").fetchall()
            dag_count = db.execute("SELECT count(*) FROM dag").fetchone()[0]
        if errors and not self.allow_import_errors:
            details = "\n".join(f"{name}:\n{trace}" for name, trace in errors)
            raise AirflowServerError(f"DAG import errors in {self.dags_folder}:\n{details}")
        if dag_count == 0 and any(self.dags_folder.glob("*.py")):
            raise AirflowServerError(
                f"`airflow dags reserialize` stored no DAGs from {self.dags_folder}:\n"
                f"{_tail(self.home / 'dags_reserialize.log')}"
            )

    def _start_server(self) -> None:
        """``airflow api-server --host 127.0.0.1 --port P --workers 1``, forked (a session of its own,
        so stop() can end its workers too), and the wait for its first answer."""
        assert self.home is not None and self.log_path is not None and self._forks is not None
        started = time.monotonic()
        argv = ["api-server", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        try:
            self._process = self._forks.spawn(
                {"airflow": argv},
                env=self.env,
                timeout=self.startup_timeout,
                args=[sys.executable, "-m", "airflow", *argv],
                stdout=self.log_path,
                cwd=self.home,
            )
        except subprocess.TimeoutExpired as err:
            raise AirflowServerError(f"api-server was not started within {self.startup_timeout} s") from err
        deadline = started + self.startup_timeout
        last_problem = "no answer yet"
        while True:
            if self._process.ended():
                raise AirflowServerError(f"api-server exited:\n{_tail(self.log_path)}")
            try:
                response = requests.get(f"{self.base_url}/api/v2/version", timeout=2)
                if response.status_code == 200:
                    break
                last_problem = f"HTTP {response.status_code}"
            except requests.RequestException as err:
                last_problem = type(err).__name__
            if time.monotonic() > deadline:
                raise AirflowServerError(
                    f"api-server did not answer /api/v2/version within {self.startup_timeout} s "
                    f"({last_problem}):\n{_tail(self.log_path)}"
                )
            time.sleep(0.2)
        self.timings["api_server"] = time.monotonic() - started

    # ------------------------------------------------------------------ API helpers
    def token(self) -> str:
        """A JWT access token for ``username``/``password`` (POST /auth/token)."""
        response = requests.post(
            f"{self.base_url}/auth/token",
            json={"username": self.username, "password": self.password},
            timeout=30,
        )
        if response.status_code not in (200, 201):
            raise AirflowServerError(f"POST /auth/token -> HTTP {response.status_code}: {response.text}")
        return response.json()["access_token"]

    def get(self, path: str, **params: Any) -> requests.Response:
        """GET ``path`` (e.g. ``/api/v2/dags``) with a bearer token; keyword args become query params."""
        if self._token is None:
            self._token = self.token()
        return requests.get(
            f"{self.base_url}{path}",
            params=params or None,
            headers={"Authorization": f"Bearer {self._token}"},
            timeout=30,
        )


if __name__ == "__main__":
    folder = (
        sys.argv[1]
        if len(sys.argv) > 1
        else str(Path(__file__).resolve().parents[2] / "example_dags" / "estate")
    )
    with AirflowApiServer(folder) as server:
        version = server.get("/api/v2/version").json()
        dags = server.get("/api/v2/dags", limit=100).json()
        print(f"Airflow {version['version']} at {server.base_url}: {dags['total_entries']} DAGs")
        print("timings (s):", {key: round(value, 2) for key, value in server.timings.items()})
