"""Secrets never leak: canary credentials through every front door, on success and on every failure.

The Airflow API user's password and the CoreModels endpoint's token are canaries: distinctive
strings that must never show up in stdout, stderr, a task log, XCom, any file written (snapshots,
the Airflow home with its database), what the endpoint received (the token belongs in its
Authorization header and nowhere else) or an exception message. Each row of ``CASES`` is one
path, the success or a failure, and goes through four doors:

- ``python -m airflow_provider_coremodels export``: a process of its own, the password from
  ``--password-env``;
- ``airflow coremodels export --conn-id``: a process of its own, connections as ``AIRFLOW_CONN_*`` JSON;
- the operator under ``dag.test()``: one subprocess, one task per row, each with its own connections;
- the library in this process (hooks, sinks, export), with DEBUG logs and the whole exception chain.

The real Airflow server sits behind a proxy that swaps the canary password for the server's own on
``POST /auth/token``: the exporter only ever knows the canary. API failures and the endpoint are
ScriptedServers; "unreachable" is a port bound without listening (connection refused). The
subprocess doors run in a background pool, started by the first test that needs the server, while
the library door runs in this process: that keeps the module short.

The two command-line doors start a few rows (``FRESH``) as a shell does, each in an Airflow home of
its own. The others are forked (``support.airflow_forks``) from one server per door that imported
what the door imports: importing Airflow was 3 of each run's 3.5 s of CPU. A forked row's run has
its own connections, password variable, working directory (its sink), output and exit code; its
door's Airflow home is shared, and searched whole once every run has ended.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import os
import re
import socket
import subprocess
import sys
import traceback
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support import airflow_forks
from support.airflow_forks import AirflowForks
from support.airflow_server import home_env, migrated_home
from support.cli_forks import RUN_MODULE
from support.counting_proxy import CountingProxy
from support.helpers import CLI_GROUP, artifact_paths
from support.hostile_api import HostileApi
from support.local_http import BackgroundHTTPServer, Reply, ScriptedServer, json_reply
from support.secret_shapes import SHAPES, leaks, shape_file

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, capture
from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook
from airflow_provider_coremodels.jobs.export import export, open_sink

needs_server = pytest.mark.airflow_server

# -- the canaries ----------------------------------------------------------------------------------

USER = "admin"  # the session server's user (checked by the rig)
PASSWORD = "cmCanary-ApiPassw0rd-4d1f9e"  # the API user's password, as the exporter is told it
WRONG_PASSWORD = "cmCanary-WrongPassw0rd-82c7aa"  # a password the API refuses
TOKEN = "cmCanary-EndpointT0ken-5b3e60"  # the CoreModels endpoint's bearer token
EXTRA_TOKEN = "cmCanary-ExtraT0ken-19fd04"  # a token inside a malformed connection extra
ASSET_SECRET = "cmCanary-AssetExtra-7a20c3"  # a password inside an asset's extra


def _basic(password: str) -> bytes:
    return base64.b64encode(f"{USER}:{password}".encode())


#: What is searched for: each canary as it is, and the passwords as an HTTP basic-auth value.
CANARIES: dict[str, bytes] = {
    "PASSWORD": PASSWORD.encode(),
    "PASSWORD (basic auth)": _basic(PASSWORD),
    "WRONG_PASSWORD": WRONG_PASSWORD.encode(),
    "WRONG_PASSWORD (basic auth)": _basic(WRONG_PASSWORD),
    "TOKEN": TOKEN.encode(),
    "EXTRA_TOKEN": EXTRA_TOKEN.encode(),
    "ASSET_SECRET": ASSET_SECRET.encode(),
}
PASSWORDS = ("PASSWORD", "PASSWORD (basic auth)", "WRONG_PASSWORD", "WRONG_PASSWORD (basic auth)")

Texts = list[tuple[str, "str | bytes"]]  # (where, what was found there)


def find_canaries(
    texts: Iterable[tuple[str, str | bytes]], canaries: dict[str, bytes] = CANARIES
) -> list[str]:
    """Every place a canary shows up, one line each (``NAME in WHERE: ...context...``); [] when clean."""
    found = []
    for where, content in texts:
        data = content.encode(errors="backslashreplace") if isinstance(content, str) else content
        for name, canary in canaries.items():
            at = data.find(canary)
            if at >= 0:
                context = data[max(0, at - 80) : at + len(canary) + 30].decode(errors="replace")
                found.append(f"{name} in {where} ({data.count(canary)}x): ...{context!r}...")
    return found


def assert_no_canary(texts: Iterable[tuple[str, str | bytes]]) -> None:
    found = find_canaries(texts)
    assert not found, "canary leaked:\n" + "\n".join(found)


def files_under(*roots: Path) -> Texts:
    """Every file under ``roots``, as (path, bytes)."""
    return [
        (str(path), path.read_bytes())
        for root in roots
        if root.exists()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]


def received_texts(server: ScriptedServer, path: str) -> Texts:
    """What the endpoint received at ``path``: request lines, headers but Authorization, unzipped bodies."""
    texts: Texts = []
    for number, request in enumerate(r for r in server.received if r.path.split("?", 1)[0] == path):
        where = f"endpoint request {number} ({request.method} {path})"
        headers = "".join(
            f"{name}: {value}\n" for name, value in request.headers.items() if name.lower() != "authorization"
        )
        body = request.body
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        texts += [(f"{where} line", request.path), (f"{where} headers", headers), (f"{where} body", body)]
    return texts


def exception_texts(error: BaseException) -> Texts:
    """Message, repr and args of each exception in the chain (suppressed context too), and the traceback."""
    texts: Texts = [("traceback", "".join(traceback.format_exception(error)))]
    pending: list[BaseException | None] = [error]
    seen: set[int] = set()
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        name = type(exc).__name__
        texts += [
            (f"{name} message", str(exc)),
            (f"{name} repr", repr(exc)),
            (f"{name} args", repr(exc.args)),
        ]
        pending += [exc.__cause__, exc.__context__]
    return texts


def test_the_canary_search_reports_each_find_and_where() -> None:
    texts: Texts = [
        ("stdout", f"ok {PASSWORD} ok"),
        ("body", b"x" + _basic(WRONG_PASSWORD)),
        ("log", "clean"),
    ]
    found = find_canaries(texts)
    assert len(found) == 2
    assert found[0].startswith("PASSWORD in stdout (1x): ")
    assert found[1].startswith("WRONG_PASSWORD (basic auth) in body (1x): ")
    assert find_canaries([("log", "clean"), ("bytes", b"clean")]) == []


# -- the table of paths ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One path through an export; ``exit`` is the CLI's exit code (0: the export went through)."""

    id: str  # also the dag.test task id, and part of its connection ids
    exit: int
    says: str = ""  # a regex the failure message matches (stderr, the task log, the exception)
    api: str = "live"  # live (the real server) | forbidden (403) | busy (503) | unreachable
    auth: str = "password"  # password | wrong_password | userinfo (user:password@ in the URL)
    endpoint: str = "created"  # created (201) | 400 | 401 | 503 | unreachable
    api_conn: str = "ok"  # ok | undefined | not_json (the whole AIRFLOW_CONN_ value is broken)
    api_extra: dict[str, Any] | str | None = None
    coremodels_conn: bool = True  # False: the coremodels connection is not defined
    coremodels_extra: dict[str, Any] | None = None
    pushes: bool = False  # the export gets as far as the endpoint (so the token must arrive there)

    @property
    def api_from_connection(self) -> bool:
        """``python -m`` reads the API from a connection (not --base-url) when the row is about one."""
        return self.api_conn != "ok" or self.api_extra is not None


REFUSED = r"Connection ?refused|Errno 111"
UNDEFINED = r"is(n't| not) defined"
BAD_API_EXTRA = {"token": EXTRA_TOKEN, "concurrency": "many"}  # a secret beside a bad value
NOT_JSON_EXTRA = '{"token": "' + EXTRA_TOKEN + '", "verify": '  # cut short
BAD_CM_EXTRA = {"verify": "sometimes"}
CASES = [
    Case("success", exit=0, pushes=True),
    Case("base_url_userinfo", exit=0, auth="userinfo", pushes=True),
    Case("base_url_userinfo_api_503", exit=3, says="HTTP 503", api="busy", auth="userinfo"),
    Case("wrong_password", exit=3, says="authentication refused by .*: HTTP 401", auth="wrong_password"),
    Case("api_403", exit=3, says="access denied by .*: HTTP 403", api="forbidden"),
    Case("api_unreachable", exit=3, says=REFUSED, api="unreachable"),
    Case("api_503", exit=3, says="HTTP 503", api="busy"),
    Case("endpoint_400", exit=3, says="refused the snapshot: HTTP 400", endpoint="400", pushes=True),
    Case("endpoint_401", exit=3, says="refused the snapshot: HTTP 401", endpoint="401", pushes=True),
    Case("endpoint_503", exit=3, says="HTTP 503", endpoint="503", pushes=True),
    Case("endpoint_unreachable", exit=3, says=REFUSED, endpoint="unreachable"),
    Case("api_extra_invalid", exit=2, says="is not usable", api_extra=BAD_API_EXTRA),
    # Airflow logs an extra that is not JSON and reads it as {}: the export goes through without it.
    Case("api_extra_not_json", exit=0, api_extra=NOT_JSON_EXTRA, pushes=True),
    Case("api_conn_not_json", exit=2, says=UNDEFINED, api_conn="not_json"),
    Case("api_conn_undefined", exit=2, says=UNDEFINED, api_conn="undefined"),
    Case("coremodels_extra_invalid", exit=2, says="must be true or false", coremodels_extra=BAD_CM_EXTRA),
    Case("coremodels_conn_undefined", exit=2, says=UNDEFINED, coremodels_conn=False),
]

PYTHON_M, AIRFLOW_CLI, DAG_TEST, LIBRARY = "python -m", "airflow coremodels", "dag.test", "library"
SLUG = {PYTHON_M: "python-m", AIRFLOW_CLI: "airflow-cli", DAG_TEST: "dag-test", LIBRARY: "library"}
SUBPROCESS_DOORS = (PYTHON_M, AIRFLOW_CLI, DAG_TEST)

#: Known failures, by (door, case id): leaks go here with their evidence, as strict xfails.
LEAKS: dict[tuple[str, str], str] = {}
#: Not a leak, but not the contract either (exit 2 and one line on stderr): found while writing these tests.
CONTRACT_GAPS: dict[tuple[str, str], str] = {}


def door_cases(doors: Iterable[str], known: dict[tuple[str, str], str]) -> list[Any]:
    """(door, case) parameters; those in ``known`` are strict xfails with their reason."""
    params = []
    for door in doors:
        for case in CASES:
            reason = known.get((door, case.id))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            if door == AIRFLOW_CLI:
                marks.append(CLI_GROUP)
            params.append(pytest.param(door, case, id=f"{SLUG[door]}-{case.id}", marks=marks))
    return params


# --retry-budget of the runs, which also bounds a whole capture. A row whose API never answers
# well fails at the first budget (which keeps those rows short); a row whose capture must go
# through gets the second, so that a loaded machine cannot turn it into a budget failure.
FAILING_BUDGET = 2.0
CAPTURE_BUDGET = 30.0
# dag.test runs every row in one process, with one budget: the busy rows then fail on their
# attempts (six, a second apart), not on the budget.
RUNNER_BUDGET = CAPTURE_BUDGET
# The rows' captures pace fixed, without adaptive pacing's rest after each answer: the budget
# times what the rows do, not the pacing, which tests/capture/test_pacing.py tests. A row with
# extras of its own keeps them.
FIXED_PACING = {"pacing": "fixed"}


def budget(case: Case) -> float:
    """The row's --retry-budget: short where the API fails, long where the capture must finish."""
    return CAPTURE_BUDGET if case.api == "live" else FAILING_BUDGET


def library_retry(case: Case) -> RetryPolicy:
    return RetryPolicy(max_attempts=4, backoff=0.05, max_backoff=0.2, budget=budget(case))


ENDPOINT_REPLIES = {
    "created": json_reply({"id": "snapshot-1"}, status=201),
    "400": json_reply({"detail": "schemaVersion is missing"}, status=400),
    "401": json_reply({"detail": "invalid token"}, status=401),
    "503": json_reply({"detail": "down for maintenance"}, status=503, headers={"Retry-After": "1"}),
}
AIRFLOW = str(Path(sys.executable).with_name("airflow"))


# -- the servers -----------------------------------------------------------------------------------


_ProxyHandler: Any = CountingProxy.handler_class


class _LoginHandler(_ProxyHandler):  # type: ignore[misc]  # the proxy's handler, extended
    def answer(self, body: bytes) -> None:
        if self.command == "POST" and self.path.split("?", 1)[0] == "/auth/token":
            body = body.replace(json.dumps(PASSWORD).encode(), json.dumps(self.owner.real_password).encode())
        super().answer(body)


class LoginProxy(CountingProxy):
    """The real server behind a proxy that accepts the canary PASSWORD for its user.

    A login carrying PASSWORD goes upstream with the server's real password; any other password
    goes as it came (and is refused upstream). Everything else passes through unchanged.
    """

    handler_class = _LoginHandler
    description = "the login proxy"

    def __init__(self, upstream_base_url: str, real_password: str) -> None:
        super().__init__(upstream_base_url)
        self.real_password = real_password


def with_userinfo(url: str, password: str = PASSWORD) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{USER}:{password}@{rest}"


@dataclass
class Rig:
    """The servers every door talks to, and how a row of the table turns into URLs and connections."""

    live: str
    forbidden: str
    busy: str
    unreachable: str
    endpoint: ScriptedServer
    api_servers: list[BackgroundHTTPServer]
    root: Path

    def api_url(self, case: Case) -> str:
        url = {
            "live": self.live,
            "forbidden": self.forbidden,
            "busy": self.busy,
            "unreachable": self.unreachable,
        }
        return url[case.api]

    def endpoint_path(self, door: str, case: Case) -> str:
        return f"/{SLUG[door]}/{case.id}"

    def endpoint_url(self, door: str, case: Case) -> str:
        if case.endpoint == "unreachable":
            return f"{self.unreachable}/snapshots"
        path = self.endpoint_path(door, case)
        self.endpoint.set_default(path, ENDPOINT_REPLIES[case.endpoint])
        return self.endpoint.base_url + path

    def connections(
        self, case: Case, endpoint: str, api_id: str = "api", cm_id: str = "coremodels"
    ) -> dict[str, str]:
        """The ``AIRFLOW_CONN_*`` variables of a row (none for an undefined connection)."""
        env = {}
        if case.api_conn != "undefined":
            api: dict[str, Any] = {"conn_type": "airflow_api"}
            if case.auth == "userinfo":
                api["host"] = with_userinfo(self.api_url(case))
            else:
                password = WRONG_PASSWORD if case.auth == "wrong_password" else PASSWORD
                api.update(host=self.api_url(case), login=USER, password=password)
            api["extra"] = FIXED_PACING if case.api_extra is None else case.api_extra
            text = json.dumps(api)
            env[f"AIRFLOW_CONN_{api_id.upper()}"] = text[:-1] + "," if case.api_conn == "not_json" else text
        if case.coremodels_conn:
            coremodels: dict[str, Any] = {"conn_type": "coremodels", "host": endpoint, "password": TOKEN}
            if case.coremodels_extra is not None:
                coremodels["extra"] = case.coremodels_extra
            env[f"AIRFLOW_CONN_{cm_id.upper()}"] = json.dumps(coremodels)
        return env


@pytest.fixture(scope="module")
def rig(airflow_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    assert airflow_server.username == USER
    token = json_reply({"access_token": "scripted-jwt", "token_type": "bearer"}, status=201)
    version = json_reply({"version": "3.3.2", "git_version": None})
    forbidden = ScriptedServer(
        {
            "/api/v2/version": version,
            "/auth/token": token,
            "/api/v2/dags": json_reply({"detail": "Forbidden"}, status=403),
            "/api/v2/assets": json_reply({"detail": "Forbidden"}, status=403),
        }
    )
    busy = ScriptedServer({"/api/v2/version": Reply(503, b"busy", {"Retry-After": "1"})})
    proxy = LoginProxy(airflow_server.base_url, airflow_server.password)
    endpoint = ScriptedServer()
    # Bound, never listening: connecting is refused, and no other server can take the port meanwhile.
    closed = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    closed.bind(("127.0.0.1", 0))
    with closed, proxy, forbidden, busy, endpoint:
        # The server answers its first request of each endpoint slowly (a second or more while it
        # imports and compiles): one capture first, so that no row's budget is spent on that.
        with AirflowApiClient(ApiSource(proxy.base_url, username=USER, password=PASSWORD)) as client:
            capture(client)
        yield Rig(
            live=proxy.base_url,
            forbidden=forbidden.base_url,
            busy=busy.base_url,
            unreachable=f"http://127.0.0.1:{closed.getsockname()[1]}",
            endpoint=endpoint,
            api_servers=[proxy, forbidden, busy],
            root=tmp_path_factory.mktemp("secrets"),
        )


# -- the subprocess doors --------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one door did with one row: whether it went through, its failure message, what to scan."""

    ok: bool
    message: str
    texts: Texts
    roots: list[Path] = field(default_factory=list)  # every file under these is scanned
    exit: int | None = None


#: Rows the command-line doors start afresh, each in a home of its own: the whole path through, and a
#: connection Airflow cannot parse (an error in whose text Airflow could quote the password).
FRESH = ("success", "api_conn_not_json")
#: What a forked row's environment sets that its door's server does not share (see ``airflow_forks``):
#: its connections, the variable ``--password-env`` names, and pytest's own.
FORKED_PER_RUN = (*airflow_forks.PER_RUN, "CM_API_PASSWORD", "PYTEST_")
#: What each door's fork server imports before its first run.
FORKED_WARM = {PYTHON_M: ("coremodels",), AIRFLOW_CLI: ("cli",)}


def door_env(home: Path) -> dict[str, str]:
    """An Airflow home's environment, without any connection: each row brings its own."""
    env = home_env(home, home.parent / "dags")
    return {k: v for k, v in env.items() if not k.startswith("AIRFLOW_CONN_")}


def forked_home(rig: Rig, door: str) -> Path:
    """The Airflow home a door's forked rows share."""
    return rig.root / "forked" / SLUG[door] / "home"


def cli_command(door: str, case: Case, rig: Rig, where: Path, home: Path) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a CLI run in ``where`` with the Airflow ``home`` (built
    here, so no thread reads os.environ)."""
    endpoint = rig.endpoint_url(door, case)
    env = door_env(home)
    env.update(rig.connections(case, endpoint))
    args = ["export", "--sink", str(where / "sink"), "--sink", endpoint, "--coremodels-conn-id", "coremodels"]
    args += ["--retry-budget", str(budget(case)), "--pacing", "fixed"]
    if door == AIRFLOW_CLI:
        return [AIRFLOW, "coremodels", *args, "--conn-id", "api"], env
    command = [sys.executable, "-m", "airflow_provider_coremodels", *args, "--format", "json"]
    if case.api_from_connection:
        command += ["--conn-id", "api"]
    elif case.auth == "userinfo":
        env.pop("AIRFLOW_CONN_API")
        command += ["--base-url", with_userinfo(rig.api_url(case))]
    else:
        env.pop("AIRFLOW_CONN_API")
        env["CM_API_PASSWORD"] = WRONG_PASSWORD if case.auth == "wrong_password" else PASSWORD
        command += ["--base-url", rig.api_url(case), "--username", USER, "--password-env", "CM_API_PASSWORD"]
    return command, env


def run_cli(command: list[str], env: dict[str, str], where: Path, forks: AirflowForks | None) -> Outcome:
    """One row through a door: started afresh, or forked from the door's server (``forks``)."""
    where.mkdir(parents=True, exist_ok=True)
    if forks is None:
        result = subprocess.run(command, env=env, cwd=where, capture_output=True, text=True, timeout=180)
    else:
        python_m = command[1:3] == ["-m", "airflow_provider_coremodels"]
        request = {"python": RUN_MODULE, "argv": command[3:]} if python_m else {"airflow": command[1:]}
        result = forks.run({**request, "exit_handlers": True}, env=env, timeout=180, args=command, cwd=where)
    return Outcome(
        ok=result.returncode == 0,
        message=result.stderr,
        texts=[("stdout", result.stdout), ("stderr", result.stderr)],
        roots=[where],  # the sink, and a fresh run's AIRFLOW_HOME with whatever Airflow wrote there
        exit=result.returncode,
    )


DAG_FILE = '''"""One export task per row of the secrets table, each with its own two connections."""

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_coremodels.operators.export import CoreModelsExportOperator

SINKS = {sinks!r}

with DAG(dag_id="coremodels_secrets", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    for task_id, sinks in SINKS.items():
        CoreModelsExportOperator(
            task_id=task_id,
            airflow_api_conn_id="api_" + task_id,
            coremodels_conn_id="coremodels_" + task_id,
            sinks=sinks,
        )
'''

# tests/support/dag_test_runner.py, for a DAG of many tasks: one TASK line per task instance.
# The operator has no retry setting, so the runner gives RetryPolicy the CLI runs' fast backoff and
# budget: the unreachable and 503 rows then fail in seconds, not a minute each. Timing only.
RUNNER = """
import json, runpy, sys
from airflow_provider_coremodels.io.transport import RetryPolicy
RetryPolicy.__init__.__defaults__ = (6, 0.05, 0.2, float(sys.argv[2]))
run = runpy.run_path(sys.argv[1])["dag"].test()
for ti in run.get_task_instances():
    print("TASK", ti.task_id, ti.state, json.dumps(ti.xcom_pull(task_ids=ti.task_id)), flush=True)
"""


def task_log(output: str, task_id: str) -> str:
    """One task's part of dag.test()'s output, between its start and end markers."""
    start = output.find(f"[DAG TEST] starting task_id={task_id} ")
    end = output.find(f"[DAG TEST] end task task_id={task_id} ", start)
    assert start >= 0 and end >= 0, f"no log of task {task_id} in the dag.test output:\n{output[-3000:]}"
    return output[start:end]


@dataclass
class DagRun:
    outcomes: dict[str, Outcome]
    whole: Outcome  # all of the run's output and its Airflow home


def run_dag_test(env: dict[str, str], dag_file: Path, home: Path, sinks: dict[str, Path]) -> DagRun:
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, str(dag_file), str(RUNNER_BUDGET)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    whole = Outcome(
        ok=result.returncode == 0,
        message=result.stdout[-3000:] + result.stderr[-3000:],
        texts=[("dag.test stdout", result.stdout), ("dag.test stderr", result.stderr)],
        roots=[home],  # the database (XCom, rendered fields), logs, the DAG file
    )
    tasks = {}
    for line in result.stdout.splitlines():
        if line.startswith("TASK "):
            _, task_id, state, xcom = line.split(" ", 3)
            tasks[task_id] = (state, xcom)
    assert set(tasks) == set(sinks), whole.message
    outcomes = {}
    for task_id, (state, xcom) in tasks.items():
        log = task_log(result.stdout, task_id)
        outcomes[task_id] = Outcome(
            ok=state == "success",
            message=log,
            texts=[("task log", log), ("XCom", xcom)],
            roots=[sinks[task_id]],
        )
    return DagRun(outcomes, whole)


class Runs:
    """The subprocess doors' runs, going on in the background; each test waits for the ones it reads."""

    def __init__(self, cli: dict[tuple[str, str], Future[Outcome]], dag: Future[DagRun]) -> None:
        self.cli = cli
        self.dag = dag

    def outcome(self, door: str, case: Case) -> Outcome:
        if door == DAG_TEST:
            return self.dag.result().outcomes[case.id]
        return self.cli[door, case.id].result()

    def wait_all(self) -> None:
        futures: list[Future[Any]] = [*self.cli.values(), self.dag]
        wait(futures)


@pytest.fixture(scope="module")
def runs(rig: Rig) -> Iterator[Runs]:
    """Start every subprocess run: the CLI runs in a pool of three, the one dag.test() beside them."""
    cli_pool = ThreadPoolExecutor(3, thread_name_prefix="secrets-cli")
    dag_pool = ThreadPoolExecutor(1, thread_name_prefix="secrets-dag")
    forks = {
        door: AirflowForks(door_env(forked_home(rig, door)), warm=warm, per_run=FORKED_PER_RUN)
        for door, warm in FORKED_WARM.items()
    }
    try:
        cli = {}
        for case in sorted(CASES, key=lambda case: case.id not in FRESH):  # the fresh rows first
            for door in (PYTHON_M, AIRFLOW_CLI):
                where = rig.root / SLUG[door] / case.id
                server = None if case.id in FRESH else forks[door]
                home = where / "home" if server is None else forked_home(rig, door)
                command, env = cli_command(door, case, rig, where, home)
                cli[door, case.id] = cli_pool.submit(run_cli, command, env, where, server)

        root = rig.root / SLUG[DAG_TEST]
        dags, home = root / "dags", root / "home"
        sinks = {case.id: root / "sinks" / case.id for case in CASES}
        dags.mkdir(parents=True)
        dag_file = dags / "coremodels_secrets.py"
        dag_file.write_text(
            DAG_FILE.format(
                sinks={case.id: f"{sinks[case.id]},{rig.endpoint_url(DAG_TEST, case)}" for case in CASES}
            )
        )
        env = migrated_home(home, dags)  # while the CLI runs get going
        env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW_CONN_")}
        for case in CASES:
            endpoint = rig.endpoint_url(DAG_TEST, case)
            env.update(
                rig.connections(case, endpoint, api_id=f"api_{case.id}", cm_id=f"coremodels_{case.id}")
            )
        yield Runs(cli, dag_pool.submit(run_dag_test, env, dag_file, home, sinks))
    finally:
        cli_pool.shutdown(wait=True, cancel_futures=True)
        dag_pool.shutdown(wait=True, cancel_futures=True)
        for server in forks.values():
            server.stop()


# -- the library door, in this process -------------------------------------------------------------


def run_library(
    case: Case, rig: Rig, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> Outcome:
    """What the operator does, without Airflow's task runner: every log record and the raw exception."""
    where = rig.root / SLUG[LIBRARY] / case.id
    endpoint = rig.endpoint_url(LIBRARY, case)
    for name in ("AIRFLOW_CONN_API", "AIRFLOW_CONN_COREMODELS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in rig.connections(case, endpoint).items():
        monkeypatch.setenv(name, value)
    caplog.set_level(logging.DEBUG)
    error: Exception | None = None
    try:
        sinks = [
            open_sink(str(where / "sink")),
            open_sink(endpoint, coremodels_conn_id="coremodels", retry=library_retry(case)),
        ]
        with AirflowApiHook("api").get_conn(retry=library_retry(case)) as client:
            export(client, sinks)
    except Exception as exc:  # every failure, Airflow's own included: its message is scanned
        error = exc
    texts: Texts = [("log", caplog.text)]
    texts += [(f"log record of {r.name}", r.getMessage()) for r in caplog.records]
    if error is not None:
        texts += exception_texts(error)
    return Outcome(ok=error is None, message=str(error or ""), texts=texts, roots=[where])


def check_outcome(door: str, case: Case, outcome: Outcome, rig: Rig) -> None:
    """No canary anywhere the door wrote, and the row really took its path (success, or the failure)."""
    endpoint = received_texts(rig.endpoint, rig.endpoint_path(door, case))
    files = files_under(*outcome.roots)
    assert_no_canary([*outcome.texts, *endpoint, *files])
    assert outcome.ok == (case.exit == 0), outcome.message[-3000:]
    if outcome.ok:  # a snapshot was written, and so was searched
        assert any(path.endswith("latest.json") for path, _ in files)
    if case.pushes:  # the token was in play: it reached the endpoint, in the Authorization header
        authorizations = {
            r.headers.get("Authorization")
            for r in rig.endpoint.received
            if r.path == rig.endpoint_path(door, case)
        }
        assert authorizations == {f"Bearer {TOKEN}"}


@needs_server
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_library_leaks_no_canary(
    case: Case, rig: Rig, runs: Runs, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Hooks, sinks and export in this process: logs at DEBUG (urllib3's too) and the exception chain."""
    # ``runs`` is not read here: asking for it starts the subprocess doors, which run meanwhile.
    outcome = run_library(case, rig, monkeypatch, caplog)
    check_outcome(LIBRARY, case, outcome, rig)
    if case.exit:
        assert re.search(case.says, outcome.message), outcome.message
    else:  # the product's log records were captured, and so were searched
        assert "(API v2) at http://127.0.0.1:" in caplog.text


@needs_server
@pytest.mark.parametrize(("door", "case"), door_cases(SUBPROCESS_DOORS, LEAKS))
def test_no_canary_leaks(door: str, case: Case, rig: Rig, runs: Runs) -> None:
    """stdout, stderr, the task log, XCom, every file written and what the endpoint received."""
    check_outcome(door, case, runs.outcome(door, case), rig)


@needs_server
@pytest.mark.parametrize(("door", "case"), door_cases(SUBPROCESS_DOORS, CONTRACT_GAPS))
def test_each_failure_says_why(door: str, case: Case, runs: Runs) -> None:
    """The failure path really happened: the contract's exit code and a message naming the cause."""
    outcome = runs.outcome(door, case)
    if door != DAG_TEST:
        assert outcome.exit == case.exit, outcome.message[-3000:]
        if case.exit:
            assert "Traceback" not in outcome.message, outcome.message[-3000:]
    if case.exit:
        assert re.search(case.says, outcome.message), outcome.message[-3000:]


@needs_server
def test_python_m_json_stdout_is_the_document_alone(runs: Runs) -> None:
    """``--format json`` keeps stdout for the snapshot document (the contract), also with a connection."""
    outcome = runs.outcome(PYTHON_M, CASES[0])
    stdout = str(outcome.texts[0][1])
    assert json.loads(stdout)["schemaVersion"] == 2


@needs_server
def test_the_forked_rows_airflow_homes_hold_no_canary(rig: Rig, runs: Runs) -> None:
    """Every file of the homes the doors' forked rows shared, once all of them have run."""
    runs.wait_all()
    files = files_under(*(forked_home(rig, door) for door in FORKED_WARM))
    assert_no_canary(files)
    assert str(forked_home(rig, AIRFLOW_CLI) / "airflow.cfg") in dict(files)  # Airflow wrote in this home


@needs_server
def test_dag_test_output_and_airflow_home_hold_no_canary(runs: Runs) -> None:
    """All of dag.test()'s output, and every file of its Airflow home: the database, logs, the DAG."""
    whole = runs.dag.result().whole
    files = files_under(*whole.roots)
    assert_no_canary([*whole.texts, *files])
    assert any(path.endswith("airflow.db") for path, _ in files)
    # Airflow masks connection secrets in task logs, but it never had to: no "***" anywhere.
    assert not [where for where, text in whole.texts if "***" in str(text)]


@needs_server
def test_credentials_travel_only_where_they_belong(rig: Rig, runs: Runs) -> None:
    """The password goes only in POST /auth/token bodies; the token only in the endpoint's Authorization."""
    runs.wait_all()
    texts: Texts = []  # where no canary belongs
    login_bodies: Texts = []  # where only a password belongs
    for server in rig.api_servers:
        for number, request in enumerate(server.received):
            where = f"{server.description} request {number} ({request.method} {request.path})"
            headers = "".join(f"{name}: {value}\n" for name, value in request.headers.items())
            texts += [(f"{where} line", request.path), (f"{where} headers", headers)]
            login = request.method == "POST" and request.path == "/auth/token"
            (login_bodies if login else texts).append((f"{where} body", request.body))
    assert_no_canary(texts)
    not_passwords = {name: value for name, value in CANARIES.items() if name not in PASSWORDS}
    assert find_canaries(login_bodies, not_passwords) == []
    logins = {json.loads(body)["password"] for _, body in login_bodies}
    assert {PASSWORD, WRONG_PASSWORD} <= logins  # both passwords were in play

    authorizations = {r.headers.get("Authorization") for r in rig.endpoint.received}
    assert authorizations == {f"Bearer {TOKEN}"}
    paths = sorted({r.path.split("?", 1)[0] for r in rig.endpoint.received})
    assert_no_canary([text for path in paths for text in received_texts(rig.endpoint, path)])


# -- user info in a base URL, and asset extras ------------------------------------------------------


@needs_server
def test_base_url_user_info_is_stripped_before_anything_records_it(
    rig: Rig, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """``--base-url http://user:CANARY@host``: used to log in, never in output, logs or the snapshot state."""
    caplog.set_level(logging.DEBUG)
    argv = ["export", "--base-url", with_userinfo(rig.live), "--sink", str(tmp_path), "--format", "json"]
    code = main([*argv, "--retry-budget", str(CAPTURE_BUDGET), "--pacing", "fixed"])
    out, err = capsys.readouterr()
    assert code == 0, err  # the proxy only lets PASSWORD in: the user info was used to log in
    state = json.loads(out)["state"]
    assert_no_canary([("stdout", out), ("stderr", err), ("log", caplog.text), ("state", json.dumps(state))])
    assert_no_canary(files_under(tmp_path))
    assert f"(API v2) at {rig.live}" in caplog.text  # the URL recorded is the stripped one


def test_asset_extra_is_left_out_of_the_snapshot(tmp_path: Path) -> None:
    """An asset's ``extra`` may hold credentials: ``audit`` leaves it out unless --include-asset-extra."""
    paths = artifact_paths("airflow3")
    datasets = json.loads(paths["datasets"].read_bytes())
    for asset in datasets["assets"]:
        asset["extra"] = {"password": ASSET_SECRET}
    (tmp_path / "datasets.json").write_text(json.dumps(datasets))

    def audit(*extra_args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--format", "json"]
        command += ["--dags", str(paths["dags"]), "--tasks", str(paths["tasks"])]
        command += ["--datasets", str(tmp_path / "datasets.json"), *extra_args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    result = audit()
    assert result.returncode == 0, result.stderr
    assert_no_canary([("stdout", result.stdout), ("stderr", result.stderr)])
    assert json.loads(result.stdout)["state"]["facts"]["assets"] == 4

    # The opt-in carries it, so the search above would have found it had it been there.
    opted_in = audit("--include-asset-extra")
    assert opted_in.returncode == 0, opted_in.stderr
    assets = [d for d in json.loads(opted_in.stdout)["datasets"] if d["materialization"] == "asset"]
    assert [json.loads(d["metadata"]["airflow.extra"]) for d in assets] == [{"password": ASSET_SECRET}] * 4


# -- credentials a server quotes (issue 34) --------------------------------------------------------


def test_credentials_a_server_quotes_reach_no_view_and_no_sink(tmp_path: Path) -> None:
    """A scripted API (``HostileApi("leaky-errors")``) quotes credentials where a server writes code
    or configuration: one import error per shape of ``support/secret_shapes.py``, a DAG description,
    a DAG warning, a refused request's body. ``python -m ... export`` to a file sink prints, logs and
    stores none of them: not in stdout or stderr, ``latest.json``, the history entry, nor in any
    view of the stored snapshot (``audit --snapshot`` in every format, ``lineage``, ``history``).
    Each broken file and its exception type still show."""
    sink = tmp_path / "sink"
    with HostileApi("leaky-errors") as api:
        exported = subprocess.run(
            [
                sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", api.base_url,
                "--username", USER, "--password-env", "CM_PASSWORD", "--sink", str(sink),
            ],
            capture_output=True, text=True, timeout=120, env={**os.environ, "CM_PASSWORD": PASSWORD},
        )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert "password=***" in exported.stderr  # the refused request's log line, scrubbed
    [history] = (sink / "history").iterdir()
    texts: Texts = [("export stdout", exported.stdout), ("export stderr", exported.stderr)]
    texts += files_under(sink)
    for view in (
        *(["audit", "--snapshot", str(sink), "--format", f] for f in ("table", "json", "sarif", "markdown")),
        ["lineage", "--snapshot", str(sink), "--format", "mermaid"],
        ["history", "--sink", str(sink), "--format", "json"],
    ):
        shown = subprocess.run(
            [sys.executable, "-m", "airflow_provider_coremodels", *view],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown.returncode == 0, shown.stderr
        texts += [
            (f"{' '.join(view[:1] + view[-2:])} stdout", shown.stdout),
            (f"{view[0]} stderr", shown.stderr),
        ]
    assert [(where, found) for where, text in texts if (found := leaks(text))] == []

    stored = json.loads((sink / "latest.json").read_bytes())
    assert json.loads(history.read_bytes())["importErrors"] == stored["importErrors"]
    errors = {e["file"]: e["error"] for e in stored["importErrors"]}
    assert [shape.name for shape in SHAPES if not errors[shape_file(shape)].startswith(shape.kept)] == []
    table = texts[0][1]
    assert all(f"{shape_file(shape)} " in table and shape.kept in table for shape in SHAPES)


def test_the_library_logs_and_notifies_no_credential_a_server_quotes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same server through the library, with DEBUG logs: the log records, the result, the
    context a notifier's templates see and the MCP server's answers hold none of the credentials."""
    from airflow_provider_coremodels.core.snapshots.document import encode
    from airflow_provider_coremodels.integrations.assistant import SnapshotQueries
    from airflow_provider_coremodels.jobs.alerts import alert_context
    from airflow_provider_coremodels.sinks.directory import FileSink

    caplog.set_level(logging.DEBUG)
    with (
        HostileApi("leaky-errors") as api,
        AirflowApiClient(ApiSource(api.base_url, username=USER, password=PASSWORD)) as client,
    ):
        result = export(client, [FileSink(tmp_path / "sink")])
    context = alert_context(result, "http://airflow.test/coremodels")
    assert len(context["new_findings"]) > len(SHAPES)  # every import error is a new finding
    queries = SnapshotQueries((tmp_path / "sink" / "latest.json").read_bytes(), source="latest.json")
    answers = [queries.facts(), queries.findings_page(limit=100), queries.dataset("a")]
    texts: Texts = [
        ("log", caplog.text),
        ("result", encode(result.document)),
        ("notifier context", json.dumps(context, default=str)),
        ("mcp", json.dumps(answers, default=str)),
    ]
    assert [(where, found) for where, text in texts if (found := leaks(text))] == []
    details = " ".join(f.get("detail") or "" for f in context["new_findings"])
    assert all(shape.kept in details for shape in SHAPES)
