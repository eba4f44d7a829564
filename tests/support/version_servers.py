"""Start a real Airflow server of any line the provider claims (2.11, 3.0 to 3.3), from its own venv.

Usage::

    from support.version_servers import VersionServer

    with VersionServer("/work/venvs/af-3.1.8", "example_dags/estate") as server:
        server.get(f"{server.api}/dags", limit=100).json()
        server.dag_processor_pass()
        server.scheduler_asset_pass()

Unlike ``airflow_server.AirflowApiServer`` (the dev venv's Airflow, 3.x only), every ``airflow``
command here runs with ``<venv>/bin/python -m airflow``, so one test process can drive servers of
several lines. The venvs are those ``dev/versions/make_venvs.sh`` builds.

What differs by line (found on the real servers, see ``dev/versions/API_FACTS.md``):

* 3.x: ``airflow api-server`` with the simple auth manager (users from a passwords file), REST
  at ``/api/v2``, a bearer token from ``POST /auth/token``; the UI's ``/ui/...`` endpoints take
  the same token. A DAG-processor pass is ``airflow dag-processor -n 1``; the scheduler's asset
  pass is ``SchedulerJobRunner._update_asset_orphanage`` (same name on 3.0 to 3.3).
* 2.11: ``airflow webserver`` (gunicorn, ``--workers 1``) with the FAB auth manager, REST at
  ``/api/v1`` with HTTP basic auth (``[api] auth_backends`` set to basic_auth + session), a user
  from ``airflow users create``. The webserver's ``/object/...`` views need a login session, which
  ``ui_get`` makes (``POST /login/`` with the form's CSRF token). SQLite forces the
  SequentialExecutor, and the standalone ``airflow dag-processor`` refuses SQLite, so a
  DAG-processor pass is a scheduler with ``num_times_parse_dags=1`` (it parses every file once,
  then stops and deactivates the DAGs it did not see; ``airflow scheduler -n 1`` bounds loops
  instead and can exit before parsing). Keep DAGs unscheduled or dataset-scheduled so it runs
  nothing. The asset pass is
  ``SchedulerJobRunner._orphan_unreferenced_datasets``.

Both lines get ``min_file_process_interval=0`` and ``min_serialized_dag_update_interval=0``:
otherwise a DAG file changed within 30 s of its last parse is silently not rewritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

try:
    from .airflow_server import AUTH_MANAGER, AirflowServerError, _tail, free_port, home_env
except ImportError:  # run as a script, or imported with tests/ not a package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support.airflow_server import AUTH_MANAGER, AirflowServerError, _tail, free_port, home_env

DEFAULT_PASSWORD = "coremodels-test-password"

#: The scheduler's periodic asset pass, by line, without running a scheduler.
_SCHEDULER_PASS_3 = """
from airflow.jobs.job import Job
from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

SchedulerJobRunner(job=Job())._update_asset_orphanage()
"""
#: 2.x: a scheduler that parses every DAG file once and stops (the processor agent's max_runs=1),
#: then deactivates the DAGs it did not see, as `airflow scheduler` does on exit. The CLI's
#: `-n 1` bounds scheduler loops instead, and may exit before a file is parsed, deactivating it.
_DAG_PROCESSOR_PASS_2 = """
from airflow.jobs.job import Job, run_job
from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

job = Job()
run_job(job=job, execute_callable=SchedulerJobRunner(job=job, num_times_parse_dags=1)._execute)
"""
_SCHEDULER_PASS_2 = """
from airflow.jobs.job import Job
from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

SchedulerJobRunner(job=Job())._orphan_unreferenced_datasets()
"""


def venv_airflow_version(venv: str | os.PathLike[str]) -> str:
    """The ``apache-airflow`` version installed in ``venv`` (read from its metadata, no import)."""
    result = subprocess.run(
        [
            str(Path(venv) / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('apache-airflow'))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


class VersionServer:
    """A real Airflow server of ``venv``'s Airflow on 127.0.0.1, SQLite-backed, for any line.

    ``dags_folder=None`` uses an empty folder (for ``load_examples=True`` alone). ``home=None``
    uses a temporary AIRFLOW_HOME removed on ``stop()``. ``extra_env`` is applied last.
    """

    def __init__(
        self,
        venv: str | os.PathLike[str],
        dags_folder: str | os.PathLike[str] | None = None,
        *,
        load_examples: bool = False,
        home: str | os.PathLike[str] | None = None,
        port: int | None = None,
        username: str = "admin",
        password: str = DEFAULT_PASSWORD,
        extra_env: dict[str, str] | None = None,
        startup_timeout: float = 180.0,
        command_timeout: float = 600.0,
    ) -> None:
        self.venv = Path(venv).resolve()
        self.python = str(self.venv / "bin" / "python")
        self.version = venv_airflow_version(self.venv)
        self.major = int(self.version.split(".")[0])
        self.api = "/api/v1" if self.major == 2 else "/api/v2"
        self._dags_arg = Path(dags_folder).resolve() if dags_folder is not None else None
        self.load_examples = load_examples
        self._home_arg = Path(home) if home is not None else None
        self.port = port
        self.username = username
        self.password = password
        self.extra_env = dict(extra_env or {})
        self.startup_timeout = startup_timeout
        self.command_timeout = command_timeout

        self.home: Path | None = None
        self.dags_folder: Path | None = None
        self.env: dict[str, str] = {}
        self.base_url = ""
        self.timings: dict[str, float] = {}
        self._own_home = False
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None
        self._token: str | None = None
        self._ui_session: requests.Session | None = None
        self._http = requests.Session()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> VersionServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        try:
            self._prepare_home()
            self.cli("db", "migrate", timing="db_migrate")
            if self.major == 2:
                self.cli(
                    "users", "create", "--username", self.username, "--password", self.password,
                    "--role", "Admin", "--firstname", "Core", "--lastname", "Models",
                    "--email", "admin@example.invalid", timing="users_create",
                )  # fmt: skip
            self.cli("dags", "reserialize", timing="dags_reserialize")
            self._start_server()
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = time.monotonic() - started

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            self._signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._signal_group(process, signal.SIGKILL)
                process.wait(timeout=15)
        if process is not None:
            self._signal_group(process, signal.SIGKILL)  # gunicorn/uvicorn workers too
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._own_home and self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self._own_home = False

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)

    # ------------------------------------------------------------------ set-up
    def _prepare_home(self) -> None:
        if self._home_arg is None:
            self.home = Path(tempfile.mkdtemp(prefix=f"airflow-{self.version}-"))
            self._own_home = True
        else:
            self.home = self._home_arg.resolve()
            self.home.mkdir(parents=True, exist_ok=True)
        if self._dags_arg is None:
            self.dags_folder = self.home / "empty-dags"
            self.dags_folder.mkdir(exist_ok=True)
        else:
            self.dags_folder = self._dags_arg
        if not self.dags_folder.is_dir():
            raise AirflowServerError(f"DAGs folder not found: {self.dags_folder}")
        if self.port is None:
            self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"

        env = home_env(self.home, self.dags_folder)
        env.update(
            {
                "AIRFLOW__CORE__LOAD_EXAMPLES": str(self.load_examples),
                # Re-parse and re-write on every pass, however soon after the last one.
                "AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": "0",
                "AIRFLOW__API__SECRET_KEY": "coremodels-test-api-secret-key",
                "AIRFLOW__WEBSERVER__SECRET_KEY": "coremodels-test-api-secret-key",
            }
        )
        if self.major == 2:
            env.update(
                {
                    "AIRFLOW__CORE__EXECUTOR": "SequentialExecutor",  # the only one SQLite allows
                    "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "0",
                    "AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL": "0",
                    "AIRFLOW__API__AUTH_BACKENDS": (
                        "airflow.api.auth.backend.basic_auth,airflow.api.auth.backend.session"
                    ),
                    "AIRFLOW__WEBSERVER__WORKERS": "1",
                    "AIRFLOW__WEBSERVER__BASE_URL": self.base_url,
                    "AIRFLOW__WEBSERVER__WEB_SERVER_PORT": str(self.port),
                }
            )
        else:
            passwords_file = self.home / "simple_auth_manager_passwords.json"
            passwords_file.write_text(json.dumps({self.username: self.password}))
            env.update(
                {
                    "AIRFLOW__CORE__AUTH_MANAGER": AUTH_MANAGER,
                    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{self.username}:admin",
                    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords_file),
                    "AIRFLOW__API_AUTH__JWT_SECRET": "coremodels-test-jwt-secret-" + "0123456789abcdef" * 4,
                    "AIRFLOW__API__BASE_URL": self.base_url,
                    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "0",
                }
            )
        env.update(self.extra_env)
        self.env = env

    def cli(self, *args: str, timing: str | None = None, check: bool = True) -> int:
        """Run ``airflow ARGS`` with this server's environment (its database); log in the home."""
        return self._run(["-m", "airflow", *args], timing=timing or "_".join(args[:2]), check=check)

    def run_python(self, code: str, *, timing: str, check: bool = True) -> int:
        """Run Python ``code`` in the venv with this server's environment."""
        return self._run(["-c", code], timing=timing, check=check)

    def _run(self, args: list[str], *, timing: str, check: bool) -> int:
        assert self.home is not None
        timing = re.sub(r"[^A-Za-z0-9_.-]+", "_", timing)
        log_path = self.home / f"{timing}.log"
        what = " ".join(args)
        started = time.monotonic()
        with open(log_path, "ab") as log:
            log.write(f"\n===== {time.strftime('%H:%M:%S')} {what}\n".encode())
            log.flush()
            try:
                result = subprocess.run(
                    [self.python, *args],
                    env=self.env,
                    cwd=self.home,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    timeout=self.command_timeout,
                    start_new_session=True,
                )
            except subprocess.TimeoutExpired as err:
                raise AirflowServerError(f"{what} timed out:\n{_tail(log_path)}") from err
        self.timings[timing] = self.timings.get(timing, 0.0) + time.monotonic() - started
        if check and result.returncode != 0:
            raise AirflowServerError(f"{what} exited {result.returncode}:\n{_tail(log_path)}")
        return result.returncode

    def _start_server(self) -> None:
        assert self.home is not None
        started = time.monotonic()
        log_path = self.home / "server.log"
        self._log_file = open(log_path, "wb")  # noqa: SIM115 - held open for the server's lifetime
        if self.major == 2:
            command = ["webserver", "--hostname", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        else:
            command = ["api-server", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        self._process = subprocess.Popen(
            [self.python, "-m", "airflow", *command],
            env=self.env,
            cwd=self.home,  # gunicorn (2.11) writes its control socket into the working folder
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = started + self.startup_timeout
        last_problem = "no answer yet"
        while True:
            if self._process.poll() is not None:
                raise AirflowServerError(
                    f"server exited with code {self._process.returncode}:\n{_tail(log_path)}"
                )
            try:
                response = requests.get(f"{self.base_url}{self.api}/version", timeout=3, auth=self._basic())
                if response.status_code == 200:
                    break
                last_problem = f"HTTP {response.status_code}"
            except requests.RequestException as err:
                last_problem = type(err).__name__
            if time.monotonic() > deadline:
                raise AirflowServerError(
                    f"server did not answer {self.api}/version within {self.startup_timeout} s "
                    f"({last_problem}):\n{_tail(log_path)}"
                )
            time.sleep(0.3)
        self.timings["server"] = time.monotonic() - started

    # ------------------------------------------------------------------ passes
    def dag_processor_pass(self) -> None:
        """Parse the DAG folder once, as the DAG processor does (deleted files' DAGs go stale)."""
        if self.major == 2:
            # `airflow dag-processor` refuses SQLite on 2.x: a scheduler parses every file once.
            self.run_python(_DAG_PROCESSOR_PASS_2, timing="dag_processor_pass")
        else:
            self.cli("dag-processor", "-n", "1", timing="dag_processor_pass")

    def scheduler_asset_pass(self) -> None:
        """What a scheduler does every [scheduler] parsing_cleanup_interval to assets/datasets."""
        self.run_python(_SCHEDULER_PASS_2 if self.major == 2 else _SCHEDULER_PASS_3, timing="scheduler_pass")

    # ------------------------------------------------------------------ HTTP
    def _basic(self) -> tuple[str, str] | None:
        return (self.username, self.password) if self.major == 2 else None

    def token(self) -> str:
        """3.x: a JWT access token (POST /auth/token)."""
        response = requests.post(
            f"{self.base_url}/auth/token",
            json={"username": self.username, "password": self.password},
            timeout=30,
        )
        if response.status_code not in (200, 201):
            raise AirflowServerError(f"POST /auth/token -> HTTP {response.status_code}: {response.text}")
        return response.json()["access_token"]

    def _auth_kwargs(self) -> dict[str, Any]:
        if self.major == 2:
            return {"auth": (self.username, self.password)}
        if self._token is None:
            self._token = self.token()
        return {"headers": {"Authorization": f"Bearer {self._token}"}}

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """An authenticated request to ``path`` (e.g. ``/api/v2/dags``)."""
        kwargs.setdefault("timeout", 60)
        return self._http.request(method, f"{self.base_url}{path}", **self._auth_kwargs(), **kwargs)

    def get(self, path: str, **params: Any) -> requests.Response:
        """Authenticated GET (bearer token on 3.x, basic auth on 2.11); kwargs are query params."""
        return self.request("GET", path, params=params or None)

    def patch(self, path: str, body: dict[str, Any], **params: Any) -> requests.Response:
        return self.request("PATCH", path, json=body, params=params or None)

    def ui_get(self, path: str, **params: Any) -> requests.Response:
        """GET a UI endpoint: 3.x ``/ui/...`` with the bearer token; 2.11 ``/object/...`` with a
        login session (those views refuse basic auth with a redirect to the login page)."""
        if self.major != 2:
            return self.get(path, **params)
        if self._ui_session is None:
            session = requests.Session()
            page = session.get(f"{self.base_url}/login/", timeout=30)
            match = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page.text)
            form = {"username": self.username, "password": self.password}
            if match:
                form["csrf_token"] = match.group(1)
            session.post(f"{self.base_url}/login/", data=form, timeout=30)
            self._ui_session = session
        return self._ui_session.get(
            f"{self.base_url}{path}", params=params or None, timeout=60, allow_redirects=False
        )


if __name__ == "__main__":
    venv = sys.argv[1] if len(sys.argv) > 1 else sys.prefix
    folder = sys.argv[2] if len(sys.argv) > 2 else None
    with VersionServer(venv, folder) as server:
        version = server.get(f"{server.api}/version").json()
        dags = server.get(f"{server.api}/dags", limit=100).json()
        print(f"Airflow {version['version']} at {server.base_url}: {dags['total_entries']} DAGs")
        server.dag_processor_pass()
        server.scheduler_asset_pass()
        print("timings (s):", {key: round(value, 2) for key, value in server.timings.items()})
