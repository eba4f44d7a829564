"""Airflow's commands for the tests, each in a process of its own, forked from one that imported Airflow.

A test's Airflow home runs the same few programs again and again (``airflow dags reserialize``, a
DAG processor pass, the scheduler's asset pass, ``dag.test()`` of an example DAG), and each one
started afresh spends most of its time importing Airflow (about 3 s of CPU here) and, for a DAG run,
generating the in-process execution API's versioned routes (about 5 s more) before doing the few
hundred milliseconds of work the test is about. So a home gets one server, as Airflow's own
executors have theirs: ``python airflow_forks.py --serve [--warm cli,dag_test]`` imports Airflow
with the home's environment, builds what ``--warm`` names, and forks one child per request. The
child takes the request's environment and output files and runs exactly what the program would
have run (the CLI's ``main()`` with the request's argv, the code given, or ``dag_test_runner``'s
run of a DAG file), then exits with its exit code, which the server answers.

``AirflowForks(env, warm=...)`` is the client: ``run(...)`` returns a ``subprocess.CompletedProcess``
(or raises ``subprocess.TimeoutExpired``), as ``subprocess.run`` would; ``spawn(...)`` starts a run
that goes on beside the next ones (``airflow api-server``) and returns a ``Spawned``, whose process
group the caller ends (the server reaps it, at the latest when it stops). Requests may differ from the
server's environment only in what Airflow reads when a run reads it (``PER_RUN``, or the prefixes a
server is given, ``per_run``); the client's callers keep to that, or start a server for the other
environment. The server reads the home's
``airflow.cfg`` once, when it starts (with ``cli`` warm, it writes the file first if it is missing,
as every ``airflow`` command does): a file another process writes later is not seen by its runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import json
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import OrderedDict
from pathlib import Path
from typing import Any

#: What a request's environment may set differently from the server's: connections and variables
#: (read from the environment when a task asks), and the test DAGs' own ``COREMODELS_TEST_*``
#: switches (read when the DAG file is run).
PER_RUN = ("AIRFLOW_CONN_", "AIRFLOW_VAR_", "COREMODELS_TEST_")


def shared(env: dict[str, str], per_run: tuple[str, ...] = PER_RUN) -> dict[str, str]:
    """What of ``env`` a server is started with, and every run it forks must match: all of it but
    the variables named by a prefix in ``per_run``."""
    return {key: value for key, value in env.items() if not key.startswith(per_run)}


HERE = Path(__file__).resolve().parent


# --------------------------------------------------------------------------- the server


def _warm_cli() -> None:
    """What every ``airflow`` command does first: the home's ``airflow.cfg`` written if it is missing
    (with the Fernet key every later command must share), and the parser of every command's
    arguments, the providers' commands among them."""
    from airflow import configuration
    from airflow.cli import cli_parser

    write_default = getattr(configuration, "write_default_airflow_configuration_if_needed", None)
    if write_default is not None:  # Airflow 3.0 writes it when the configuration is imported
        write_default()
    cli_parser.get_parser()


def _warm_dag_test() -> None:
    """Build ``dag.test()``'s in-process execution API once: Airflow makes a new one for every task
    it runs, and the first request to each pays for Cadwyn's route generation. It is paid here, in
    an event loop closed again before any fork (a child has no thread but its own); each child's API
    wraps the ready app, and its transport starts the app's lifespan as a fresh one's would. Where
    this Airflow has no such API (the names moved), the children build their own, as before."""
    import airflow.sdk  # noqa: F401 - what the DAG files import

    try:
        import httpx
        from airflow.api_fastapi.execution_api.app import InProcessExecutionAPI
        from airflow.sdk.execution_time import supervisor
    except ImportError as err:
        print(f"airflow_forks: no in-process execution API to build once ({err})", file=sys.stderr)
        return
    if not hasattr(supervisor, "in_process_api_server"):
        print("airflow_forks: supervisor.in_process_api_server is gone: not built once", file=sys.stderr)
        return
    app = InProcessExecutionAPI().app

    async def first_request() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://in-process.invalid.") as client:
            await client.get("/execution/health")

    asyncio.run(first_request())
    supervisor.in_process_api_server = lambda: InProcessExecutionAPI(app=app)


def _warm_openlineage() -> None:
    """What ``python -m airflow_provider_coremodels`` imports to push to OpenLineage: the command
    line, the sink, the OpenLineage client and Airflow's OpenLineage provider (3 of such a run's
    3.5 s of CPU). Imported only: nothing that reads a setting is called here."""
    import airflow_provider_coremodels.cli.main
    import airflow_provider_coremodels.sinks.openlineage  # noqa: F401


def _warm_coremodels() -> None:
    """What ``python -m airflow_provider_coremodels export --conn-id ...`` imports to read its
    connections: the command line and the provider's hooks. Imported only, as for ``openlineage``."""
    import airflow_provider_coremodels.cli.main
    import airflow_provider_coremodels.hooks.airflow_api
    import airflow_provider_coremodels.hooks.coremodels  # noqa: F401


WARM = {
    "cli": _warm_cli,
    "dag_test": _warm_dag_test,
    "openlineage": _warm_openlineage,
    "coremodels": _warm_coremodels,
}


def _run_request(request: dict[str, Any]) -> None:
    try:
        if "airflow" in request:
            from airflow.__main__ import main

            sys.argv = ["airflow", *request["airflow"]]
            main()
        elif "python" in request:
            sys.argv = ["-c", *request.get("argv", ())]
            exec(compile(request["python"], "<string>", "exec"), {"__name__": "__main__"})
        else:
            import dag_test_runner

            sys.argv = [dag_test_runner.__file__, request["dag_file"]]
            dag_test_runner.run_one(request["dag_file"])
    finally:
        # as the interpreter's exit runs them, which the child's os._exit does not
        if request.get("exit_handlers"):
            atexit._run_exitfuncs()


def _child(request: dict[str, Any], answer_fd: int) -> None:
    """In the forked child: a session of its own, the request's files and environment, the run, and
    an exit that runs none of the server's exit handlers."""
    code = 1
    try:
        os.setsid()
        os.close(answer_fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        from airflow import settings

        engine = getattr(settings, "engine", None)
        if engine is not None:  # the server's pooled connections are not this process's
            engine.dispose(close=False)
        _run_request(request)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(warm: list[str]) -> None:
    # Answers go to a descriptor of their own: fd 1 becomes the server's log, as fd 2 is.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    answers = os.fdopen(answer_fd, "w", buffering=1)
    gc.disable()  # the import and the warm-up make objects that all live on: collecting finds none
    import airflow  # noqa: F401 - the import every request would otherwise pay for

    for name in warm:
        WARM[name]()
    gc.enable()
    gc.collect()
    gc.freeze()  # what the server made stays out of its children's collections, as Airflow's forks do
    answers.write(json.dumps({"ready": os.getpid()}) + "\n")
    detached: set[int] = set()  # spawned runs: reaped by pid once ended, never by waitpid(-1)
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, answer_fd)
        answers.write(json.dumps({"started": pid}) + "\n")
        if request.get("detach"):
            detached.add(pid)
        else:
            _, status = os.waitpid(pid, 0)
            answers.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        for ended in [pid for pid in detached if os.waitpid(pid, os.WNOHANG)[0]]:
            detached.discard(ended)
    for pid in detached:  # the client closed the requests: its spawned runs were ended first
        os.waitpid(pid, 0)


# --------------------------------------------------------------------------- the client


class Spawned:
    """A run started by ``AirflowForks.spawn``: the fork server's child, in a session of its own
    (its process group is ``pid``). It is not this process's child, so its state is read from
    ``/proc``: ended once it is a zombie the server has not reaped yet, or gone."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def ended(self) -> bool:
        from support import processes  # the client's side: the server runs as a script of its own

        return not processes.alive(self.pid)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def wait(self, timeout: float) -> bool:
        """Whether it ended within ``timeout`` seconds."""
        from support import processes

        return processes.left(lambda: [] if self.ended() else [self.pid], timeout) == []


class AirflowForks:
    """One fork server, started at once with ``env`` (its import overlaps the caller's next steps)."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        warm: tuple[str, ...] = (),
        cwd: str | None = None,
        per_run: tuple[str, ...] = PER_RUN,
    ) -> None:
        self.per_run = per_run
        self.env = shared(env, per_run)
        self.cwd = cwd or os.getcwd()
        handle, log = tempfile.mkstemp(prefix="airflow-forks-", suffix=".log")
        self.log = Path(log)
        command = [sys.executable, str(HERE / "airflow_forks.py"), "--serve", ",".join(warm)]
        self.process = subprocess.Popen(
            command,
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=handle,
            start_new_session=True,
        )
        os.close(handle)
        self._lock = threading.Lock()
        self._buffer = b""
        self._ready = False

    def shares(self, env: dict[str, str]) -> bool:
        """Whether a run with ``env`` may be forked from this server."""
        return shared(env, self.per_run) == self.env

    def _answer(self, deadline: float) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the Airflow fork server exited:\n{tail}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def run(
        self,
        request: dict[str, Any],
        *,
        env: dict[str, str],
        timeout: float,
        args: list[str],
        stdout: Path | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Fork one run of ``request``: ``{"airflow": argv}``; ``{"python": code}``, with an optional
        ``"argv"``; or ``{"dag_file": path}``; any of them with ``"exit_handlers": True`` to run the
        exit handlers after it as an interpreter's exit would. ``stdout`` names a file for the whole
        output (stdout and stderr, as a log); else both are returned. ``args`` is what the result
        and a timeout name as the command."""
        with self._lock, tempfile.TemporaryDirectory(prefix="airflow-fork-") as tmp:
            deadline = time.monotonic() + timeout
            out = stdout or Path(tmp) / "stdout"
            err = stdout or Path(tmp) / "stderr"
            started = self._send(request, env, (deadline, timeout), args, out=out, err=err, cwd=cwd)
            answer = self._answer(deadline) if started is not None else None
            if answer is None and started is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(started["started"], signal.SIGKILL)  # the run and what it started
            output = out.read_text(errors="replace") if out.exists() else ""
            errors = "" if stdout is not None else (err.read_text(errors="replace") if err.exists() else "")
            if answer is None:
                self.stop()
                raise subprocess.TimeoutExpired(args, timeout, output=output, stderr=errors)
            return subprocess.CompletedProcess(args, answer["returncode"], output, errors)

    def spawn(
        self,
        request: dict[str, Any],
        *,
        env: dict[str, str],
        timeout: float,
        args: list[str],
        stdout: Path,
        cwd: str | os.PathLike[str] | None = None,
    ) -> Spawned:
        """Fork a run of ``request`` that goes on while later ones run (a server), its whole output
        to ``stdout``; ``timeout`` bounds only the wait for the fork server to start it."""
        with self._lock:
            deadline = time.monotonic() + timeout
            request = {**request, "detach": True}
            started = self._send(request, env, (deadline, timeout), args, out=stdout, err=stdout, cwd=cwd)
            if started is None:
                self.stop()
                raise subprocess.TimeoutExpired(args, timeout)
            return Spawned(started["started"])

    def _send(
        self,
        request: dict[str, Any],
        env: dict[str, str],
        within: tuple[float, float],
        args: list[str],
        *,
        out: Path,
        err: Path,
        cwd: str | os.PathLike[str] | None,
    ) -> dict[str, Any] | None:
        """Send one request once the server is ready; its ``started`` answer (None: not in time).
        ``within``: the request's deadline, and the timeout it was counted from."""
        deadline, timeout = within
        if not self.shares(env):
            raise ValueError(f"this environment differs from the server's beyond {self.per_run}")
        if out == err:
            out.write_bytes(b"")
        if not self._ready:
            if self._answer(deadline) is None:
                self.stop()
                raise subprocess.TimeoutExpired(args, timeout)  # not ready by the deadline
            self._ready = True
        message = {**request, "env": env, "stdout": str(out), "stderr": str(err), "cwd": str(cwd or self.cwd)}
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return self._answer(deadline)

    def stop(self) -> None:
        """End the server. Its spawned runs should have been ended first: it then reaps them as it
        leaves (given a moment), where a killed server would leave them to init."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()  # type: ignore[union-attr]
        self.log.unlink(missing_ok=True)


class KeptServers:
    """Fork servers kept by the environment they serve: a run gets the one its environment shares
    (``shared``, with ``per_run``), started on its first run; at most ``kept`` are kept at once,
    the one used least lately stopped first, and all are stopped when this process exits."""

    def __init__(self, *, warm: tuple[str, ...], kept: int, per_run: tuple[str, ...] = PER_RUN) -> None:
        self.warm, self.kept, self.per_run = warm, kept, per_run
        self._servers: OrderedDict[tuple[tuple[str, str], ...], AirflowForks] = OrderedDict()
        self._lock = threading.Lock()
        atexit.register(self.stop_all)

    def server(self, env: dict[str, str]) -> AirflowForks:
        """The server of ``env``'s settings, started if there is none (or it has exited)."""
        key = tuple(sorted(shared(env, self.per_run).items()))
        with self._lock:
            server = self._servers.pop(key, None)
            if server is None or server.process.poll() is not None:
                server = AirflowForks(env, warm=self.warm, per_run=self.per_run)
            self._servers[key] = server
            while len(self._servers) > self.kept:
                self._servers.popitem(last=False)[1].stop()
            return server

    def stop_all(self) -> None:
        with self._lock:
            while self._servers:
                self._servers.popitem()[1].stop()


if __name__ == "__main__":
    if sys.argv[1:2] != ["--serve"]:
        raise SystemExit(f"usage: airflow_forks.py --serve [{','.join(WARM)}]")
    serve([name for name in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if name])
