"""The parse server: run as ``python .../capture/dag_folder_worker.py`` (a script, not ``-m``).

Started by :func:`~airflow_provider_coremodels.capture.dag_folder.parse_dag_folder` in a fresh
process with a cleaned environment; it reads one request (JSON) on stdin, imports Airflow once,
lists the folder's DAG files as the dag-processor does, and forks one child per file (at most
``workers`` at a time), each parsing its file with Airflow's ``DagBag`` under an address-space
limit and writing its serialized DAGs (or its import error) to a file of its own. A child that
hangs past the deadline is killed; one that exits or dies is an import error of its file. Then
it maps everything to the REST shapes (tasks through the API's own ``TaskResponse``, assets
through ``AssetModelOperation.collect``, the dependency graph through Airflow's own resolver)
and writes the result, as JSON, to the path the request names.

It imports nothing of the package, so the DAG code it runs
meets no state of the provider.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: What a child may add to the parse server's address space before an allocation fails.
DEFAULT_MEMORY = 4 << 30


def _kwargs_for(func: Any, **wanted: Any) -> dict[str, Any]:
    import inspect

    accepted = inspect.signature(func).parameters
    return {key: value for key, value in wanted.items() if key in accepted}


def _dag_bag_class() -> Any:
    try:  # Airflow 3.1+
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.0
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef,unused-ignore]
    return DagBag


def _serializer() -> Any:
    try:  # Airflow 3.2+
        from airflow.serialization.serialized_objects import DagSerialization

        return DagSerialization
    except ImportError:  # Airflow 3.0, 3.1
        from airflow.serialization import serialized_objects

        return serialized_objects.SerializedDAG  # type: ignore[attr-defined,unused-ignore]


def _pre_import(files: list[str]) -> None:
    """Import, once in the parse server, the Airflow modules the files import, so each forked child
    starts with them (the dag-processor's ``[dag_processor] parsing_pre_import_modules``)."""
    import importlib

    try:
        from airflow.utils.file import iter_airflow_imports
    except ImportError:
        return
    seen: set[str] = set()
    for path in files:
        if not path.endswith(".py"):
            continue
        try:
            modules = list(iter_airflow_imports(path))
        except Exception:  # a file that does not compile: its child says so
            continue
        for module in modules:
            if module in seen:
                continue
            seen.add(module)
            with contextlib.suppress(BaseException):  # a module that fails is the file's import error
                importlib.import_module(module)


# -- the child: one file -------------------------------------------------------------------------


def _dag_entry(dag: Any, data: dict[str, Any], bundle: str, conf: Any) -> dict[str, Any]:
    """A DAG as ``GET /dags`` answers: the API's own ``DAGResponse`` over the fields
    ``DagModelOperation.update_dags`` writes, and what ``/details`` adds (the asset condition, its
    ids filled in later, ``doc_md`` and ``owner_links``). The next run is left unknown: only the
    freshness rules read it, which a parse does not judge (with a baseline, its next runs are the
    baseline's), and computing it cost a fifth of each file's parse (a deserialized DAG and its
    timetable's cron, for every DAG)."""
    from airflow.api_fastapi.core_api.datamodels.dags import DAGResponse

    timetable = dag.timetable

    def configured(value: Any, key: str) -> Any:
        return conf.getint("core", key) if value is None else value

    tasks_limited = getattr(dag, "has_task_concurrency_limits", None)
    if tasks_limited is None:
        tasks_limited = any(
            t.max_active_tis_per_dag is not None or t.max_active_tis_per_dagrun is not None for t in dag.tasks
        )
    display = getattr(dag, "_dag_display_property_value", None) or getattr(dag, "dag_display_name", None)
    display = display or dag.dag_id
    row = {
        "dag_id": dag.dag_id,
        "dag_display_name": display,
        "is_paused": False,  # the parse server sets it: the baseline's, or as at creation
        "is_stale": False,
        "last_parsed_time": None,
        "last_parse_duration": None,
        "last_expired": None,
        "bundle_name": bundle,
        "bundle_version": None,
        "relative_fileloc": dag.relative_fileloc,
        "fileloc": dag.fileloc,
        "description": dag.description,
        "timetable_summary": timetable.summary,
        "timetable_description": timetable.description,
        "timetable_partitioned": getattr(timetable, "partitioned", False),
        "timetable_periodic": getattr(timetable, "periodic", False),
        # a tag row, and the DAG it belongs to (DagTagResponse reads its display name from there)
        "tags": [
            {"name": tag, "dag_id": dag.dag_id, "dag": {"dag_display_name": display}}
            for tag in sorted(dag.tags or ())
        ],
        "max_active_tasks": configured(dag.max_active_tasks, "max_active_tasks_per_dag"),
        "max_active_runs": configured(dag.max_active_runs, "max_active_runs_per_dag"),
        "max_consecutive_failed_dag_runs": configured(
            getattr(dag, "max_consecutive_failed_dag_runs", None), "max_consecutive_failed_dag_runs_per_dag"
        ),
        "has_task_concurrency_limits": bool(tasks_limited),
        "has_import_errors": False,
        "next_dagrun": None,
        "next_dagrun_data_interval_start": None,
        "next_dagrun_data_interval_end": None,
        "next_dagrun_create_after": None,
        "allowed_run_types": sorted(getattr(dag, "allowed_run_types", None) or ()) or None,
        "owners": dag.owner or conf.get("operators", "default_owner"),
    }
    entry: dict[str, Any] = DAGResponse.model_validate(row).model_dump(mode="json", by_alias=True)
    entry["asset_expression"] = timetable.asset_condition.as_expression()
    entry["doc_md"] = data.get("dag", {}).get("doc_md")
    entry["owner_links"] = dict(data.get("dag", {}).get("owner_links") or {})
    alerts = _deadline_alerts(data)
    if alerts is not None:
        entry["deadline_alerts"] = alerts
    return entry


def _deadline_alerts(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """``GET /ui/dags/{dag_id}/deadlineAlerts``'s alerts (name, reference type, interval in seconds)
    from the serialized DAG, where this Airflow serves them (3.3+): on 3.1 and 3.2 no endpoint shows
    them, so a parse that gave them would disagree with every capture of such a deployment."""
    try:
        from airflow.api_fastapi.core_api.datamodels.ui.deadline import DeadlineAlertResponse  # noqa: F401
    except ImportError:
        return None
    alerts = []
    for raw in data.get("dag", {}).get("deadline") or ():
        alert = raw.get("__var", raw) if isinstance(raw, dict) else None
        if not isinstance(alert, dict):
            continue
        reference = alert.get("reference")
        interval = alert.get("interval")
        if isinstance(interval, dict):  # the SDK's serde: {"__classname__": ..., "__data__": seconds}
            interval = interval.get("__data__")
        alerts.append(
            {
                "name": alert.get("name"),
                "reference_type": reference.get("reference_type") if isinstance(reference, dict) else None,
                "interval": float(interval)
                if isinstance(interval, int | float) and not isinstance(interval, bool)
                else None,
            }
        )
    return alerts


def _tasks(lazy: Any, data: dict[str, Any]) -> list[dict[str, Any]]:
    """``GET /dags/{dag_id}/tasks``: the API's own ``TaskResponse`` over the DAG as the API server
    reads it back from its serialized form, ordered by task_id as the endpoint does."""
    from airflow.api_fastapi.core_api.datamodels.tasks import TaskResponse

    # the DAG the lazy one deserialized already (Airflow 3.1+), else deserialized here
    deserialized = getattr(lazy, "_real_dag", None) or _serializer().from_dict(data)
    tasks = sorted(deserialized.tasks, key=lambda task: task.task_id)
    return [TaskResponse.model_validate(task).model_dump(mode="json", by_alias=True) for task in tasks]


def _parse_file(path: str, request: dict[str, Any]) -> dict[str, Any]:
    from airflow.configuration import conf

    dag_bag = _dag_bag_class()
    folder = request["folder"]
    bag = dag_bag(
        **_kwargs_for(
            dag_bag.__init__,
            dag_folder=path,
            bundle_path=Path(folder),
            bundle_name=request["bundle"],
            include_examples=False,
            load_op_links=False,
            safe_mode=request["safe_mode"],
        )
    )
    depth = conf.getint("core", "dagbag_import_error_traceback_depth", fallback=2)
    errors = dict(bag.import_errors)
    dags = []
    for dag in bag.dags.values():
        try:
            data = _serializer().to_dict(dag)
            lazy = _Lazy(data)
            entry = _dag_entry(lazy, data, request["bundle"], conf)
            tasks = _tasks(lazy, data)
        except Exception:
            # as the dag-processor records a DAG it cannot serialize: an import error of its file
            errors[getattr(dag, "relative_fileloc", None) or dag.fileloc] = traceback.format_exc(limit=-depth)
            continue
        dags.append(
            {
                "entry": entry,
                "tasks": tasks,
                "dependencies": data["dag"].get("dag_dependencies") or [],
                "paused_upon_creation": data["dag"].get("is_paused_upon_creation"),
                "lazy": lazy,
            }
        )
    references = _references({d["entry"]["dag_id"]: d.pop("lazy") for d in dags})
    return {"dags": dags, "import_errors": errors, "references": references}


def _references(lazy_dags: dict[str, Any]) -> dict[str, Any]:
    """``AssetModelOperation.collect`` over one file's DAGs, as JSON: the assets in the order the
    collection meets them (with group, extra and watcher names), the aliases, and each DAG's
    schedule, outlet and (Airflow 3.1+) inlet references. The server merges them in file order."""
    from airflow.dag_processing.collection import AssetModelOperation

    op = AssetModelOperation.collect(lazy_dags)
    inlets = getattr(op, "inlet_references", None)

    def tasks(references: dict[str, Any]) -> dict[str, list[list[str]]]:
        return {
            dag_id: [[task_id, a.name, a.uri] for task_id, a in pairs] for dag_id, pairs in references.items()
        }

    return {
        "assets": [
            [
                a.name,
                a.uri,
                a.group,
                dict(a.extra or {}),
                [w.name for w in getattr(a, "watchers", None) or ()],
            ]
            for a in op.assets.values()
        ],
        "aliases": list(op.asset_aliases),
        "schedule": {
            dag_id: [[a.name, a.uri] for a in assets]
            for dag_id, assets in op.schedule_asset_references.items()
        },
        "outlets": tasks(op.outlet_references),
        "inlets": None if inlets is None else tasks(inlets),
    }


#: What the parse server parses itself before it forks, so that each child starts with what the
#: first parse of a process imports and builds lazily (about 0.8 s: modules, pydantic validators,
#: cron descriptions), not once per file. It is the provider's own file, never the user's.
_WARM_UP = """
from datetime import datetime

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Asset, dag, task

with DAG(dag_id="coremodels_warm_up", schedule="0 * * * *", start_date=datetime(2026, 1, 1), tags=["t"]):
    EmptyOperator(task_id="e", outlets=[Asset("s3://coremodels/warm-up")]) >> BashOperator(
        task_id="b", bash_command="true"
    ) >> PythonOperator(task_id="p", python_callable=print, inlets=[Asset("s3://coremodels/warm-up")])


@dag(
    dag_id="coremodels_warm_up_flow",
    schedule=[Asset("s3://coremodels/warm-up")],
    start_date=datetime(2026, 1, 1),
)
def flow():
    @task
    def one():
        return 1

    one()


flow()
"""


def _cache_cron_locales() -> None:
    """Read cron_descriptor's translations once, in the parse server: it parses its ``.mo`` file
    again for every cron timetable Airflow builds (4 per DAG here, 5 ms each), which was the
    largest cost of a child's parse. Each caller still gets a translation object of its own."""
    try:
        from cron_descriptor import GetText as module  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return
    original = module.GetText.load_locale
    cache: dict[tuple[str, str | None], Any] = {}

    def load_locale(self: Any, locale_code: str, locale_location: str | None = None) -> Any:
        key = (locale_code, locale_location)
        if key not in cache:
            cache[key] = original(self, locale_code, locale_location)
        own = copy.copy(cache[key])
        own._fallback = None  # GetText adds its fallback to the object it gets
        return own

    module.GetText.load_locale = load_locale


def _warm_up(scratch: str, request: dict[str, Any]) -> None:
    folder = os.path.join(scratch, "warm-up")
    os.mkdir(folder)
    path = os.path.join(folder, "coremodels_warm_up_dag.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(_WARM_UP)
    with contextlib.suppress(Exception):  # a parse that is not warmed up is only slower
        _parse_file(path, {**request, "folder": folder})


def _die_with_parent() -> None:
    """On Linux, the child is killed when the parse server ends (killed at its own budget, say):
    in a process group of its own, it would otherwise outlive it."""
    with contextlib.suppress(Exception):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _keep_crashes_fatal() -> None:
    """Leave SIGSEGV and SIGBUS fatal in the child. Airflow 3.3's importer installs a Python
    handler for SIGSEGV, which cannot run on a real fault: Python's C handler only sets a flag and
    returns to the faulting instruction, which faults again, forever; the file would hang to its
    deadline instead of being reported as the crash it is."""
    install = signal.signal
    for fatal in (signal.SIGSEGV, signal.SIGBUS):  # the server's own parse (its warm-up) set one
        install(fatal, signal.SIG_DFL)

    def guarded(signum: Any, handler: Any) -> Any:
        if signum in (signal.SIGSEGV, signal.SIGBUS):
            return signal.getsignal(signum)
        return install(signum, handler)

    signal.signal = guarded  # type: ignore[assignment]


def _parse_one(path: str, out: str, request: dict[str, Any]) -> bool:
    """One file's parse, its outcome written to ``out`` (atomically: a crash leaves no half file);
    whether the child is still fit for the next file: not after an import error, which may leave
    anything behind (the memory a hoarding file holds, a half-imported module)."""
    try:
        result: dict[str, Any] = _parse_file(path, request)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
        result = {"failure": f"the parse of this file exited with code {status}"}
    except BaseException:  # a MemoryError outside Airflow's own handler, say
        result = {"failure": traceback.format_exc(limit=-4)}
    with open(out + ".part", "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    os.replace(out + ".part", out)
    return not (result.get("failure") or result.get("import_errors"))


def _child(
    orders: int, answers: int, files: list[str], scratch: str, request: dict[str, Any], limit: int | None
) -> None:
    """A forked child: parse the files the server names on ``orders``, one after another, each
    outcome in a file of its own and its index back on ``answers``; leave without cleanup."""
    code = 0
    try:
        os.setpgid(0, 0)  # its own process group: a deadline kills what the DAG code started too
        _die_with_parent()
        os.environ["_AIRFLOW_PROCESS_CONTEXT"] = "client"  # no ORM access from DAG code (3.3)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash dumps no core (slow, and DAG data)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _keep_crashes_fatal()
        while True:
            order = os.read(orders, 4)
            if len(order) < 4:
                break
            index = int.from_bytes(order, "big")
            fit = _parse_one(files[index], os.path.join(scratch, f"{index}.json"), request)
            os.write(answers, order + (b"+" if fit else b"."))
            if not fit:
                break
    except BaseException:
        code = 70
    finally:
        os._exit(code)


@dataclass
class _Worker:
    pid: int
    orders: int  # the server writes file indexes here
    answers: int  # the child writes back the index of each file it finished
    index: int | None = None  # the file it parses now
    deadline: float = 0.0
    parsed: int = 0


# -- the parse server ------------------------------------------------------------------------------


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: Files a child parses before it is replaced: what one file's code leaves behind (modules,
#: threads, patched globals) reaches at most this many others, and every crash costs one fork.
FILES_PER_CHILD = 50


def _parse_all(files: list[str], request: dict[str, Any], scratch: str) -> list[dict[str, Any]]:
    """Every file parsed in a forked child, ``workers`` children at once, each file under a
    deadline. A child parses file after file (a fork costs more than most files' parse); one that
    a file ends (an exit, a crash, the deadline) is replaced, and only that file fails."""
    workers = max(1, int(request["workers"]))
    timeout = float(request["timeout"])
    deadline_after = timeout + max(5.0, 0.2 * timeout)  # Airflow's own timeout fires first
    headroom = request.get("memory")
    limit = None if headroom is None else _address_space() + int(headroom)
    outcomes: list[dict[str, Any]] = [{} for _ in files]
    pending = list(range(len(files)))[::-1]  # popped from the end: in file order
    live: list[_Worker] = []
    sys.stdout.flush()
    sys.stderr.flush()
    gc.collect()
    gc.freeze()  # the server's objects stay out of the children's collections: fewer pages copied

    def spawn() -> _Worker:
        orders_r, orders_w = os.pipe()
        answers_r, answers_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(orders_w)
            os.close(answers_r)
            for other in live:
                os.close(other.orders)
                os.close(other.answers)
            _child(orders_r, answers_w, files, scratch, request, limit)
        os.close(orders_r)
        os.close(answers_w)
        return _Worker(pid, orders_w, answers_r)

    def retire(worker: _Worker, *, kill: bool) -> int:
        if kill:
            with contextlib.suppress(OSError):
                os.killpg(worker.pid, signal.SIGKILL)
        for fd in (worker.orders, worker.answers):
            with contextlib.suppress(OSError):
                os.close(fd)
        _, status = os.waitpid(worker.pid, 0)
        with contextlib.suppress(OSError):  # what the DAG code left running in its group ends too
            os.killpg(worker.pid, signal.SIGKILL)
        live.remove(worker)
        return status

    def why(status: int) -> str:
        if os.WIFSIGNALED(status):
            return f"the parse of this file was killed by {_signal_name(os.WTERMSIG(status))}"
        return f"the parse of this file exited with code {os.WEXITSTATUS(status)}"

    def finished(index: int) -> None:
        out = os.path.join(scratch, f"{index}.json")
        with open(out, encoding="utf-8") as handle:
            outcomes[index] = json.load(handle)
        os.unlink(out)

    try:
        while pending or any(w.index is not None for w in live):
            for worker in list(live):  # recycle the children that parsed their share
                if worker.index is None and (worker.parsed >= FILES_PER_CHILD or not pending):
                    retire(worker, kill=False)
            while pending and len(live) < workers:
                live.append(spawn())
            for worker in list(live):
                if worker.index is None and pending:
                    order = pending.pop()
                    try:
                        os.write(worker.orders, order.to_bytes(4, "big"))
                    except OSError:  # the child is gone (it left between files): the file waits
                        pending.append(order)
                        retire(worker, kill=True)
                        continue
                    worker.index, worker.deadline = order, time.monotonic() + deadline_after
            if not any(w.index is not None for w in live):
                continue
            busy = [w for w in live if w.index is not None]
            wait = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready, _, _ = select.select([w.answers for w in busy], [], [], wait)
            for worker in busy:
                index = worker.index
                assert index is not None
                if worker.answers in ready:
                    answer = os.read(worker.answers, 5)
                    if len(answer) == 5:
                        finished(index)
                        worker.index, worker.parsed = None, worker.parsed + 1
                        if answer[4:] != b"+":  # the child leaves after this file: replace it
                            worker.parsed = FILES_PER_CHILD
                        continue
                    status = retire(worker, kill=False)  # the file ended its child
                    out = os.path.join(scratch, f"{index}.json")
                    if os.path.exists(out):  # ... after its outcome was written
                        finished(index)
                    else:
                        outcomes[index] = {"failure": why(status)}
                elif time.monotonic() >= worker.deadline:
                    retire(worker, kill=True)
                    outcomes[index] = {"failure": f"the parse of this file timed out after {timeout:g} s"}
    finally:
        for worker in list(live):
            retire(worker, kill=True)
    return outcomes


def _list_files(folder: str, safe_mode: bool) -> list[str]:
    from airflow.utils.file import list_py_file_paths

    return sorted(list_py_file_paths(folder, safe_mode=safe_mode))


class _Lazy:
    """A ``LazyDeserializedDAG`` whose timetable is decoded once: its property decodes it on every
    read, and ``AssetModelOperation.collect`` reads it four times per DAG."""

    def __init__(self, data: dict[str, Any]) -> None:
        from airflow.serialization.serialized_objects import LazyDeserializedDAG

        self._dag = LazyDeserializedDAG(data=data)
        self.timetable = self._dag.timetable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dag, name)


def _lazy(data: dict[str, Any]) -> _Lazy:
    return _Lazy(data)


class _Assets:
    """The asset rows a parse would write: ids in the order of creation, the active ones, and each
    asset's references, merged from each file's ``AssetModelOperation.collect`` in file order (as
    one collection over every DAG: an asset keeps its first place and its last definition)."""

    def __init__(self, references: list[dict[str, Any]], kept: set[str], paused: dict[str, bool]) -> None:
        self.assets: dict[tuple[str, str], list[Any]] = {}
        self.aliases: dict[str, None] = {}
        self.scheduled: dict[tuple[str, str], set[str]] = {}
        self.producing: dict[tuple[str, str], list[dict[str, str]]] = {}
        self.consuming: dict[tuple[str, str], list[dict[str, str]]] | None = {}
        for found in references:
            for name, uri, group, extra, watchers in found["assets"]:
                self.assets[(name, uri)] = [group, extra, watchers]
            self.aliases.update(dict.fromkeys(found["aliases"]))
            for dag_id, keys in found["schedule"].items():
                if dag_id in kept:
                    for name, uri in keys:
                        self.scheduled.setdefault((name, uri), set()).add(dag_id)
            for dag_id, pairs in found["outlets"].items():
                if dag_id in kept:
                    for task_id, name, uri in pairs:
                        self.producing.setdefault((name, uri), []).append(
                            {"task_id": task_id, "dag_id": dag_id}
                        )
            if found["inlets"] is None:  # Airflow 3.0 lists no task inlets
                self.consuming = None
            elif self.consuming is not None:
                for dag_id, pairs in found["inlets"].items():
                    if dag_id in kept:
                        for task_id, name, uri in pairs:
                            self.consuming.setdefault((name, uri), []).append(
                                {"task_id": task_id, "dag_id": dag_id}
                            )
        self.ids: dict[tuple[str, str], int] = {}
        self.active: set[tuple[str, str]] = set()
        names: set[str] = set()
        uris: set[str] = set()
        for number, key in enumerate(self.assets, start=1):
            self.ids[key] = number
            name, uri = key
            if name not in names and uri not in uris:  # AssetActive: name and uri each unique
                self.active.add(key)
                names.add(name)
                uris.add(uri)
        self.paused = paused

    def entry(self, key: tuple[str, str], created_at: str) -> dict[str, Any]:
        group, extra, watchers = self.assets[key]
        name, uri = key
        scheduled = sorted(self.scheduled.get(key, ()))

        def ordered(refs: list[dict[str, str]]) -> list[dict[str, str]]:
            unique = {(ref["dag_id"], ref["task_id"]): ref for ref in refs}
            return [unique[k] for k in sorted(unique)]

        entry: dict[str, Any] = {
            "id": self.ids[key],
            "name": name,
            "uri": uri,
            "group": group,
            "extra": extra,
            "created_at": created_at,
            "updated_at": created_at,
            "scheduled_dags": [{"dag_id": dag_id} for dag_id in scheduled],
            "producing_tasks": ordered(self.producing.get(key, [])),
            "aliases": [],  # an alias reaches an asset only through an event, which no parse has
            "last_asset_event": {"id": None, "timestamp": None},
        }
        if self.consuming is not None:  # Airflow 3.1+ lists task inlets (consuming_tasks)
            entry["consuming_tasks"] = ordered(self.consuming.get(key, []))
        # a watcher's trigger is registered only for an active asset an unpaused DAG is scheduled on
        watched = key in self.active and any(not self.paused.get(dag_id, False) for dag_id in scheduled)
        entry["watchers"] = [{"name": w} for w in watchers] if watched else []
        return entry

    def expand(self, expression: Any) -> Any:
        """An asset condition with each asset's id, as ``update_dag_asset_expression`` stores it."""
        if isinstance(expression, dict):
            if set(expression) == {"asset"} and isinstance(expression["asset"], dict):
                asset = dict(expression["asset"])
                found = self.ids.get((str(asset.get("name")), str(asset.get("uri"))))
                if found is not None:
                    asset["id"] = found
                return {"asset": asset}
            return {key: self.expand(value) for key, value in expression.items()}
        if isinstance(expression, list):
            return [self.expand(item) for item in expression]
        return expression


def _dependencies(dags: list[dict[str, Any]], assets: _Assets) -> dict[str, Any]:
    """``GET /ui/dependencies``: each DAG's serialized ``dag_dependencies`` resolved by Airflow's
    own resolver, its four database lookups answered from the parse's asset rows."""
    from airflow.models import serialized_dag

    module: Any = serialized_dag
    key_class = getattr(module, "UKey", None) or module.AssetUniqueKey
    active_by_name = {name: (assets.ids[(name, uri)], name) for name, uri in assets.active}
    active_by_uri = {uri: (assets.ids[(name, uri)], name) for name, uri in assets.active}

    class Resolver(module._DagDependenciesResolver):  # type: ignore[misc]
        def collect_asset_key_to_ids(self, asset_name_uris: Any) -> Any:
            return {
                key_class(name=name, uri=uri): assets.ids[(name, uri)]
                for name, uri in asset_name_uris
                if (name, uri) in assets.ids
            }

        def collect_asset_name_ref_to_ids_names(self, names: Any) -> Any:
            return {name: active_by_name[name] for name in names if name in active_by_name}

        def collect_asset_uri_ref_to_ids_names(self, uris: Any) -> Any:
            return {uri: active_by_uri[uri] for uri in uris if uri in active_by_uri}

        def collect_alias_to_assets(self, names: Any) -> Any:
            return {name: [] for name in names}  # no events: no alias has an asset yet

    pairs = [(d["entry"]["dag_id"], d["dependencies"]) for d in dags]
    resolved: dict[str, Any] = Resolver(dag_id_dependencies=pairs, session=None).resolve()
    nodes: dict[str, dict[str, Any]] = {}
    edges: set[tuple[str, str]] = set()
    for dag_id, dependencies in sorted(resolved.items()):
        dag_node = f"dag:{dag_id}"
        if dag_node in nodes:
            continue
        for dep in dependencies:
            nodes[dag_node] = {"id": dag_node, "label": dag_id, "type": "dag"}
            nodes.setdefault(
                dep.node_id, {"id": dep.node_id, "label": dep.label, "type": dep.dependency_type}
            )
            if dep.source != dep.dependency_type:
                edges.add((dep.source if ":" in dep.source else f"dag:{dep.source}", dep.node_id))
            if dep.target != dep.dependency_type:
                edges.add((dep.node_id, dep.target if ":" in dep.target else f"dag:{dep.target}"))
    for pair in edges:
        for endpoint in pair:
            if endpoint.startswith("dag:") and endpoint not in nodes:
                nodes[endpoint] = {"id": endpoint, "label": endpoint[4:], "type": "dag"}
    return {
        "nodes": list(nodes.values()),
        "edges": [{"source_id": s, "target_id": t} for s, t in sorted(edges)],
    }


def _serve(request: dict[str, Any]) -> dict[str, Any]:
    begun = time.monotonic()
    import airflow
    from airflow.configuration import conf

    folder = request["folder"]
    if request.get("timeout") is None:
        request["timeout"] = conf.getfloat("core", "dagbag_import_timeout")
    request["safe_mode"] = conf.getboolean("core", "dag_discovery_safe_mode", fallback=True)
    paused_at_creation = request.get("paused_at_creation")
    if paused_at_creation is None:
        paused_at_creation = conf.getboolean("core", "dags_are_paused_at_creation")
    files = _list_files(folder, request["safe_mode"])
    _pre_import(files)  # before the folder is on the path: a module of the folder never runs here
    if folder not in sys.path:  # as the dag-processor puts the bundle on the path: include/ imports
        sys.path.insert(0, folder)
    # what every child needs, imported once here rather than once per child
    from airflow.api_fastapi.core_api.datamodels.dags import DAGResponse  # noqa: F401
    from airflow.api_fastapi.core_api.datamodels.tasks import TaskResponse  # noqa: F401
    from airflow.dag_processing.collection import AssetModelOperation  # noqa: F401

    _dag_bag_class()
    _cache_cron_locales()
    started = time.time()
    timings = {"start": time.monotonic() - begun}
    with tempfile.TemporaryDirectory(prefix="coremodels-dag-folder-") as scratch:
        _warm_up(scratch, request)
        timings["warm_up"] = time.monotonic() - begun - sum(timings.values())
        outcomes = _parse_all(files, request, scratch)
        timings["files"] = time.monotonic() - begun - sum(timings.values())
    created_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    result = _map(files, outcomes, request, bool(paused_at_creation), airflow.__version__, created_at)
    timings["map"] = time.monotonic() - begun - sum(timings.values())
    result["timings"] = timings  # where the parse server's time went (the benchmark prints it)
    return result


def _map(
    files: list[str],
    outcomes: list[dict[str, Any]],
    request: dict[str, Any],
    paused_at_creation: bool,
    version: str,
    created_at: str,
) -> dict[str, Any]:

    folder = request["folder"]
    deployed: str = request.get("deployed_root") or folder
    known_paused: dict[str, bool] = request.get("paused") or {}
    import_errors: dict[str, str] = {}
    dags: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    duplicates: list[str] = []
    for path, outcome in zip(files, outcomes, strict=True):
        relative = os.path.relpath(path, folder)
        if "failure" in outcome:
            import_errors[relative] = outcome["failure"]
            continue
        for key, trace in outcome.get("import_errors", {}).items():
            import_errors[os.path.relpath(key, folder) if os.path.isabs(key) else key] = trace
        for dag in outcome.get("dags", []):
            dag_id = dag["entry"]["dag_id"]
            if dag_id in seen:  # the dag-processor keeps whichever file it parsed last
                duplicates.append(f"{dag_id!r} ({seen[dag_id]} and {relative})")
                continue
            seen[dag_id] = relative
            dags.append(dag)
    paused = {
        d["entry"]["dag_id"]: known_paused.get(
            d["entry"]["dag_id"],
            paused_at_creation if d["paused_upon_creation"] is None else bool(d["paused_upon_creation"]),
        )
        for d in dags
    }
    references = [outcome["references"] for outcome in outcomes if "references" in outcome]
    assets = _Assets(references, set(seen), paused)
    dag_entries = []
    for dag in dags:
        entry = dict(dag["entry"])
        entry["is_paused"] = paused[entry["dag_id"]]
        entry["asset_expression"] = assets.expand(entry["asset_expression"])
        if entry.get("relative_fileloc"):
            entry["fileloc"] = os.path.join(deployed, entry["relative_fileloc"])
        dag_entries.append(entry)
    dag_entries.sort(key=lambda e: e["dag_id"])
    tasks = {
        d["entry"]["dag_id"]: {"tasks": d["tasks"]} for d in sorted(dags, key=lambda d: d["entry"]["dag_id"])
    }
    listed = [assets.entry(key, created_at) for key in assets.assets if key in assets.active]
    refused_entries = [assets.entry(key, created_at) for key in assets.assets if key not in assets.active]
    # as the capture keeps them: the refused assets some DAG references
    inactive = [
        entry
        for entry in refused_entries
        if any(entry.get(k) for k in ("producing_tasks", "scheduled_dags", "consuming_tasks"))
    ]
    refused = [f"{name!r} ({uri})" for name, uri in assets.assets if (name, uri) not in assets.active]
    errors = [
        {
            "import_error_id": number,
            "timestamp": created_at,
            # Airflow 3.0 records the file's absolute path, later lines its path in the bundle
            "filename": relative if not version.startswith("3.0.") else os.path.join(deployed, relative),
            "bundle_name": request["bundle"],
            "stack_trace": import_errors[relative],
        }
        for number, relative in enumerate(sorted(import_errors), start=1)
    ]
    return {
        "airflow_version": version,
        "files": len(files),
        "paths": {seen_id: rel for seen_id, rel in seen.items()},
        "dags": {
            "dags": dag_entries,
            "total_entries": len(dag_entries),
            "includes_stale": True,
            "import_errors": errors,
            "dag_warnings": [],
            "captured_at": created_at,
        },
        "tasks": tasks,
        "datasets": {
            "assets": listed,
            "total_entries": len(listed),
            "asset_aliases": [{"name": name} for name in assets.aliases],
            "asset_events": [],
            "inactive_assets": inactive,
            "dependencies": _dependencies(dags, assets),
        },
        "defaulted_paused": sorted(dag_id for dag_id in paused if dag_id not in known_paused),
        "paused_at_creation": paused_at_creation,
        "duplicates": duplicates,
        "refused": refused,
        "aliases": sorted(assets.aliases),
    }


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0]) == here:  # run as a script: capture/ is no package path
        del sys.path[0]
    request = json.loads(sys.stdin.read())
    # Whatever the DAG code or Airflow prints must not land in the result: stdout goes to stderr.
    os.dup2(2, 1)
    try:
        result = _serve(request)
    except BaseException:
        result = {"error": traceback.format_exc(limit=-6)}
    with open(request["out"], "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter finalization: tearing down Airflow's modules and the DAGs' objects took a
    # few tenths of a second, and nothing is left to write.
    os._exit(code)
