"""Parse a folder of DAG files into the three artifacts a capture of a deployment serving it saves.

DAG files are code: parsing runs it, as Airflow's dag-processor does. The parse runs in a fresh
Python process (``dag_folder_worker``, the parse server) started with a cleaned environment (the
provider's own secrets withheld, nothing of this process's memory passed on), which imports
Airflow once and forks one child per file, as the dag-processor does, each under a deadline and
an address-space limit: a file that hangs, exits, crashes its interpreter or exhausts memory is
an import error of that file, and every other file is still parsed. No metadata database, no
deployment and no network are involved; Airflow's own code does the parse (``DagBag``), the
serialization, the asset collection, the task responses and the dependency graph.

What the code cannot show (paused flags, asset events and so aliases' assets, runs, the DAG
warnings the dag-processor and scheduler write) is named in :attr:`FolderArtifacts.lossiness`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.capture.lineage_resolve import Lookup, attach
from airflow_provider_coremodels.capture.sandbox import (
    AIRFLOW_HOME_INSIDE,
    Isolation,
    bwrap_command,
    choose,
    parse_environment,
)
from airflow_provider_coremodels.core import Lossiness
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.reading.parse import scheduled_on_assets
from airflow_provider_coremodels.errors import InputError
from airflow_provider_coremodels.io.input_files import Unreadable, read_bounded
from airflow_provider_coremodels.redaction import scrub

#: The parse server, run as a script: ``python -m`` would import this package (and ``requests``)
#: into the process that runs the DAG code, a quarter of a second of its start and state it needs not.
WORKER = Path(__file__).with_name("dag_folder_worker.py")
DEFAULT_BUNDLE = "dags-folder"
#: The whole parse's default deadline (``--parse-deadline``): the listing, every file, the mapping.
DEFAULT_DEADLINE = 600.0


class DagFolderError(InputError):
    """The DAG folder cannot be parsed at all (missing, or the parse server failed)."""

    what = "DAG folder"


@dataclass(frozen=True)
class FolderArtifacts:
    """The three artifacts a capture would save of a deployment serving the folder, and more."""

    dags: dict[str, Any]  # as dags.json: "dags", "import_errors", "includes_stale", "dag_warnings", ...
    tasks: dict[str, Any]  # as tasks.json: {dag_id: {"tasks": [...]}}
    datasets: dict[str, Any]  # as datasets.json: "assets", "asset_aliases", "inactive_assets", "dependencies"
    airflow_version: str
    files: int  # DAG files parsed (those that failed included)
    listed: int  # DAG files in the folder (more than ``files`` for a parse scoped to a change)
    lines: Mapping[str, int]  # dag_id -> the line of its DAG(...) call or @dag function; best effort
    lossiness: tuple[Lossiness, ...]  # what the code shows that no API does, or lacks
    #: where the parse server's seconds went: its start (Airflow's import), warm-up, files, mapping
    timings: dict[str, float] = field(default_factory=dict)
    #: the isolation the DAG code had (a sandbox, or a process only, and why)
    isolation: Isolation = field(default_factory=lambda: Isolation("process", "not said"))
    #: dag_id -> where it is defined and declares its outlets, inlets, asset schedule, triggers,
    #: sensors and tasks, read from its file during the parse (``dag_folder_worker.declarations``)
    declared: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: a broken file's path in the folder -> the line of its error in the file itself
    error_lines: Mapping[str, int] = field(default_factory=dict)


def parse_dag_folder(
    folder: str | os.PathLike[str],
    *,
    bundle: str = DEFAULT_BUNDLE,
    timeout: float | None = None,
    workers: int | None = None,
    deployed_root: str | None = None,
    paused: Mapping[str, bool] | None = None,
    paused_at_creation: bool | None = None,
    withheld_env: Iterable[str] = (),
    memory: int | None = None,
    python: str | None = None,
    sandbox: str | Isolation = "auto",
    deadline: float | None = None,
    passed_env: Iterable[str] = (),
    hidden: Iterable[str] = (),
    limits: ParseLimits | None = None,
    only: Iterable[str] | None = None,
    infer: bool = True,
    connections: Lookup | None = None,
) -> FolderArtifacts:
    """Parse the DAG files under ``folder`` as the dag-processor would, each file isolated.

    ``timeout``: seconds per file (default ``[core] dagbag_import_timeout``); ``workers``: files
    parsed at once (default: the machine's cores); ``deployed_root``: the bundle's path on the
    deployment, so each ``fileloc`` is what the deployment shows (default: the local path);
    ``paused``: the paused flags a baseline knows, a DAG it lacks paused as
    ``paused_at_creation`` (default ``[core] dags_are_paused_at_creation``) or its own
    ``is_paused_upon_creation`` say; ``memory``: the address space (bytes) a file's parse may
    add before its allocations fail (default 4 GiB); ``python``: the interpreter (default this one).

    ``sandbox``: ``auto``, ``require`` or ``off`` (``sandbox.choose``), or an isolation already
    chosen; ``deadline``: seconds the whole parse may take, the listing included (default
    :data:`DEFAULT_DEADLINE`); ``passed_env``: variables the DAG code is given beside the
    allow list (``--parse-env``), less those in ``withheld_env``; ``hidden``: what the run reads
    or writes, which must not exist in the sandbox (the working directory is always hidden);
    ``only``: the files (paths relative to ``folder``) to parse, of those Airflow lists (a parse
    scoped to a change); ``files`` then counts those, ``listed`` all. ``infer``: read the tables
    SQL and transfer operators read and write (``lineage_inference``), their connections resolved
    by ``connections`` (default: ``AIRFLOW_CONN_*``, then Airflow's lookup; ``lineage_resolve``).
    """
    root = Path(folder)
    job = FolderJob(root, only=only, deployed_root=deployed_root, paused=paused)
    with ParseServer(
        [root],
        infer=infer,
        connections=connections,
        bundle=bundle,
        timeout=timeout,
        workers=workers,
        paused_at_creation=paused_at_creation,
        withheld_env=withheld_env,
        memory=memory,
        python=python,
        sandbox=sandbox,
        deadline=deadline,
        passed_env=passed_env,
        hidden=hidden,
        limits=limits,
    ) as server:
        return server.parse([job])[0]


@dataclass(frozen=True)
class FolderJob:
    """One folder's parse in a :class:`ParseServer`: the folder, the files to parse of those Airflow
    lists there (all when None), the bundle's path on the deployment, the paused flags known."""

    folder: Path
    only: Iterable[str] | None = None
    deployed_root: str | None = None
    paused: Mapping[str, bool] | None = None


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid``, parents before their children, as ``/proc`` shows them now."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    parent = int(handle.read().rpartition(b")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(0), ()):
            found.append(child)
            todo.append(child)
    return found


class ParseServer:
    """A parse server started before its folders are ready to be parsed (``parse_dag_folder``'s).

    ``folders``: every folder it will parse, bound (read-only) into its sandbox at the start; each
    must exist then, though a folder not named in ``ready`` may still be filled until
    :meth:`ready` says it is (a pull request's merge base, laid out while Airflow is imported).
    :meth:`parse` then parses the jobs, one after the other, and gives each job's artifacts. The
    deadline counts from the start. Used as a context manager: a server never asked to parse (the
    run failed first) is ended on the way out. The other arguments are ``parse_dag_folder``'s.
    """

    def __init__(
        self,
        folders: Iterable[str | os.PathLike[str]],
        *,
        bundle: str = DEFAULT_BUNDLE,
        timeout: float | None = None,
        workers: int | None = None,
        paused_at_creation: bool | None = None,
        withheld_env: Iterable[str] = (),
        memory: int | None = None,
        python: str | None = None,
        sandbox: str | Isolation = "auto",
        deadline: float | None = None,
        passed_env: Iterable[str] = (),
        hidden: Iterable[str] = (),
        limits: ParseLimits | None = None,
        ready: Iterable[str | os.PathLike[str]] | None = None,
        infer: bool = True,
        connections: Lookup | None = None,
    ) -> None:
        self.started = time.monotonic()
        self.connections = connections
        roots = []
        for folder in folders:
            if not Path(folder).is_dir():
                raise DagFolderError("is not a directory", os.fspath(folder))
            roots.append(Path(folder).resolve())
        self.roots = roots
        self.isolation = sandbox if isinstance(sandbox, Isolation) else choose(sandbox)
        self.limits = limits or ParseLimits()
        self.seconds = DEFAULT_DEADLINE if deadline is None else float(deadline)
        withheld = set(withheld_env)
        python = python or sys.executable
        inside = self.isolation.kind == "sandbox"
        self.process: subprocess.Popen[bytes] | None = None
        self.scratch = tempfile.mkdtemp(prefix="coremodels-dag-folder-")
        try:
            home = AIRFLOW_HOME_INSIDE if inside else os.path.join(self.scratch, "airflow")
            if not inside:
                os.mkdir(home)
            env = parse_environment(os.environ, [n for n in passed_env if n not in withheld], home=home)
            # Airflow's INFO lines of each file's parse would go nowhere (a child's output is
            # discarded) and cost a tenth of its time
            env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "WARNING"
            if timeout is not None:  # Airflow's own per-file timeout (SIGALRM) agrees with the deadline
                env["AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT"] = f"{float(timeout):g}"
            if inside:
                assert self.isolation.bwrap is not None
                hide = [os.getcwd(), self.scratch, *hidden, *_ci_files(os.environ)]
                command = bwrap_command(
                    self.isolation.bwrap,
                    python=python,
                    worker=str(WORKER),
                    folders=[str(root) for root in roots],
                    hidden=hide,
                )
            else:
                command = [python, str(WORKER)]
            self.answer = open(os.path.join(self.scratch, "answer"), "w+b")  # noqa: SIM115
            self.errors_path = os.path.join(self.scratch, "stderr")
            with open(self.errors_path, "w+b") as errors:
                self.process = subprocess.Popen(  # our own worker, in bwrap or a plain process
                    command,
                    stdin=subprocess.PIPE,
                    stdout=errors,
                    stderr=errors,
                    env=env,
                    cwd=self.scratch,
                    pass_fds=(self.answer.fileno(),),
                    # bubblewrap in a process group of its own, which close() ends whole: its
                    # --die-with-parent ends it with this process, as before
                    start_new_session=inside,
                )
            assert self.process.stdin is not None
            os.set_blocking(self.process.stdin.fileno(), False)
            listed_now = roots if ready is None else [Path(f).resolve() for f in ready]
            self._send(
                {
                    "bundle": bundle,
                    "timeout": timeout,
                    "workers": workers or os.cpu_count() or 1,
                    "paused_at_creation": paused_at_creation,
                    "memory": 4 << 30 if memory is None else memory,
                    "sandboxed": inside,
                    "answer_fd": self.answer.fileno(),
                    "list": [str(root) for root in listed_now],
                    "infer": infer,
                    **self.limits.request(),
                }
            )
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> ParseServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def _deadline_error(self) -> DagFolderError:
        return DagFolderError(
            f"was not parsed within its deadline of {self.seconds:g} s (--parse-deadline)", str(self.roots[0])
        )

    def _send(self, message: dict[str, Any]) -> None:
        """One line of JSON to the server, within the deadline (it reads once Airflow is imported)."""
        assert self.process is not None and self.process.stdin is not None
        fd = self.process.stdin.fileno()
        view = memoryview(json.dumps(message).encode() + b"\n")
        while view:
            left = self._left()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise self._deadline_error()
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:  # the server ended early: what it said is read by parse()
                return

    def ready(self, folder: str | os.PathLike[str]) -> None:
        """``folder`` is laid out: the server lists it while the run prepares the rest."""
        self._send({"list": [str(Path(folder).resolve())]})

    def parse(self, jobs: Iterable[FolderJob]) -> list[FolderArtifacts]:
        """Parse each job's folder (in this order: no file of a job runs before every file of the
        jobs before it has ended), and give each its artifacts."""
        jobs = list(jobs)
        assert self.process is not None and self.process.stdin is not None
        if self._left() <= 0:
            raise DagFolderError(
                f"was not parsed within --parse-deadline ({self.seconds:g} s)", str(self.roots[0])
            )
        self._send(
            {
                "jobs": [
                    {
                        "folder": str(Path(job.folder).resolve()),
                        "deployed_root": job.deployed_root.rstrip("/") if job.deployed_root else None,
                        "paused": dict(job.paused or {}),
                        "only": None if job.only is None else sorted(job.only),
                    }
                    for job in jobs
                ]
            }
        )
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            code = self.process.wait(timeout=max(0.0, self._left()))
        except subprocess.TimeoutExpired:
            raise self._deadline_error() from None
        root = str(self.roots[0])
        if code != 0:  # killed from inside, or failed: never a clean result
            raise DagFolderError(f"could not be parsed: {_tail(self.errors_path, code)}", root)
        try:
            data = read_bounded(
                self.answer.name, self.limits.answer_bytes * len(jobs), limit_name="the parse's answer"
            )
            result = json.loads(data)
        except (Unreadable, ValueError) as exc:
            raise DagFolderError(f"could not be parsed: the parse server's answer {exc}", root) from None
        if not isinstance(result, dict):
            raise DagFolderError("could not be parsed: the parse server's answer is not an object", root)
        if "error" in result:
            lines = str(result["error"]).strip().splitlines()
            why = scrub(lines[-1]) if lines else "no error text"
            raise DagFolderError(f"could not be parsed: {why}", root)
        results = result.get("results")
        if not isinstance(results, list) or len(results) != len(jobs):
            raise DagFolderError("gave an answer that is not a parse (not one result a folder)", root)
        return [self._artifacts(job, one) for job, one in zip(jobs, results, strict=True)]

    def _artifacts(self, job: FolderJob, result: Any) -> FolderArtifacts:
        from airflow_provider_coremodels.capture.crawl import reduce_import_error

        try:
            dags = result["dags"]
            dags["dags"] = [_as_captured(entry) for entry in dags["dags"]]
            dags["import_errors"] = [reduce_import_error(entry) for entry in dags["import_errors"]]
            dags["lossiness"] = []
            inferred, inference_records = attach(
                result.get("inferred") or {}, result.get("inference"), self.connections
            )
            if inferred:
                result["datasets"]["inferred"] = inferred
            return FolderArtifacts(
                dags=dags,
                tasks=result["tasks"],
                datasets=result["datasets"],
                airflow_version=result["airflow_version"],
                files=int(result["files"]),
                listed=int(result.get("listed", result["files"])),
                lines={
                    str(k): v
                    for k, v in result["lines"].items()
                    if isinstance(v, int) and not isinstance(v, bool)
                },
                lossiness=(*_records(result, job.paused is not None), *inference_records),
                timings=dict(result.get("timings") or {}),
                isolation=self.isolation,
                declared={
                    str(k): v for k, v in (result.get("declared") or {}).items() if isinstance(v, dict)
                },
                error_lines={
                    str(k): v
                    for k, v in (result.get("error_lines") or {}).items()
                    if isinstance(v, int) and not isinstance(v, bool)
                },
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise DagFolderError(
                f"gave an answer that is not a parse ({type(exc).__name__})", str(job.folder)
            ) from None

    def close(self) -> None:
        """End the server if it still runs (a run that failed before asking it to parse), and
        remove its scratch directory."""
        if self.process is not None:
            if self.process.poll() is None:
                # Ended during its start, bubblewrap's sandbox init would outlive it, waiting for
                # ever: one cloned a moment before (still in bubblewrap's process group, its
                # parent-death signal not armed yet), or one already in a session of its own. So
                # the group is stopped first (nothing in it starts anything more), then what runs
                # under bubblewrap is killed deepest first (each still held by its living parent,
                # so no number is reused), then the group.
                group = self.process.pid if self.isolation.kind == "sandbox" else None
                if group is not None:
                    with contextlib.suppress(OSError):
                        os.killpg(group, signal.SIGSTOP)
                for pid in reversed(_descendants(self.process.pid)):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                if group is not None:
                    with contextlib.suppress(OSError):
                        os.killpg(group, signal.SIGKILL)
                self.process.kill()  # the process this object started, by its own handle
                self.process.wait()
            if self.process.stdin is not None:
                with contextlib.suppress(OSError):
                    self.process.stdin.close()
        if hasattr(self, "answer"):
            self.answer.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _tail(errors_path: str, code: int) -> str:
    """The last line the parse server wrote, scrubbed and escaped, and how it ended."""
    if code < 0:
        ended = f"killed by signal {-code}"
    elif code > 128:  # bwrap reports a death by signal as 128 + the signal
        ended = f"exit {code}: killed by signal {code - 128}"
    else:
        ended = f"exit {code}"
    try:
        with open(errors_path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(errors_path) - 2000))
            said = handle.read().decode(errors="replace").strip().splitlines()
    except OSError:
        said = []
    last = printable(scrub(said[-1]))[:300] if said else "no output"
    return f"the parse server ended ({ended}): {last}"


def _ci_files(environ: Mapping[str, str]) -> list[str]:
    """The files a CI step writes its results and settings through: never the DAG code's to see."""
    names = (
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_OUTPUT",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_WORKSPACE",
    )
    return [environ[name] for name in names if environ.get(name)]


def _user_processes() -> int:
    """How many processes (threads count, as ``RLIMIT_NPROC`` counts them) this user runs now."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count


@dataclass(frozen=True)
class ParseLimits:
    """What a parse may produce: each file's answer, all answers held, a DAG file's size, what a
    file's code may write to one file, and the processes it may run."""

    file_answer_bytes: int = 32 << 20
    run_answer_bytes: int = 256 << 20
    file_bytes: int = defaults.MAX_DAG_FILE_BYTES
    written_bytes: int = 64 << 20
    #: processes the DAG code may add to what the user runs already (``RLIMIT_NPROC``, which
    #: counts a user's processes machine-wide; the kernel exempts root from it)
    processes: int = 256

    def request(self) -> dict[str, int]:
        return {
            "max_answer": self.file_answer_bytes,
            "max_answers": self.run_answer_bytes,
            "max_file": self.file_bytes,
            "max_written": self.written_bytes,
            "processes": _user_processes() + self.processes if self.processes and os.getuid() else 0,
        }

    @property
    def answer_bytes(self) -> int:
        """The parse server's whole answer: every file's, and the mapping around them."""
        return 2 * self.run_answer_bytes + (16 << 20)


def _as_captured(entry: dict[str, Any]) -> dict[str, Any]:
    """A DAG with what the capture adds from its details, where the capture asks for them: the
    condition of a DAG scheduled on assets, the ``doc_md`` of one without a description, and the
    ``owner_links`` of either (the details carry them, asked for or not)."""
    detailed = ("asset_expression", "doc_md", "owner_links")
    dag = {key: value for key, value in entry.items() if key not in detailed}
    on_assets = scheduled_on_assets(entry)
    if on_assets:
        dag["asset_expression"] = entry.get("asset_expression")
    description = entry.get("description")
    undescribed = not (isinstance(description, str) and description.strip())
    if undescribed:
        dag["doc_md"] = entry.get("doc_md")
    links = entry.get("owner_links")
    if (on_assets or undescribed) and isinstance(links, dict) and links:
        dag["owner_links"] = links
    return dag


#: What no parse knows: a baseline gives it (``premerge.py`` says so instead, where one is given).
NOT_IN_CODE = (
    "parsed from the DAG folder: no runs, asset events or DAG warnings (the dag-processor's and "
    "scheduler's) are known, so freshness, producer-failing and airflow-warning are not judged"
)


def _records(result: Mapping[str, Any], baseline_paused: bool) -> list[Lossiness]:
    """What the code shows that no API does, or lacks, one record each."""
    records = []
    defaulted = result.get("defaulted_paused") or []
    if defaulted:
        at_creation = "paused" if result.get("paused_at_creation") else "not paused"
        whose = "the baseline does not know" if baseline_paused else "no deployment says"
        records.append(
            Lossiness(
                "dags",
                f"paused flags of {len(defaulted)} DAGs {whose}: taken as the DAG's is_paused_upon_creation "
                f"or [core] dags_are_paused_at_creation ({at_creation})",
            )
        )
    records.append(Lossiness("dags", NOT_IN_CODE))
    from airflow_provider_coremodels.capture.crawl import unseen_deadlines

    if (unseen := unseen_deadlines(result.get("airflow_version"))) is not None:
        records.append(unseen)  # as a capture of a deployment of this line says
    for alias in result.get("aliases") or []:
        records.append(
            Lossiness(
                "datasets",
                f"asset alias '{alias}' reaches its assets only through asset events, which no parse has",
                alias,
            )
        )
    for refused in result.get("refused") or []:
        records.append(
            Lossiness(
                "datasets",
                f"asset {refused} shares a name or URI with another: Airflow activates whichever it parses "
                "first, taken here as the first in file order",
            )
        )
    for name in result.get("refused_files") or []:
        records.append(
            Lossiness(
                "dags",
                f"{name}: its parse gave more than a file may (or than the run may hold), refused before "
                "it was held; it reads as an import error",
                name,
            )
        )
    for duplicate in result.get("duplicates") or []:
        records.append(
            Lossiness("dags", f"DAG {duplicate} is defined twice: the first in file order is kept")
        )
    return records
