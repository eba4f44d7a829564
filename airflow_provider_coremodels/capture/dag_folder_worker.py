"""The parse server: run as ``python .../capture/dag_folder_worker.py`` (a script, not ``-m``).

Started by :class:`~airflow_provider_coremodels.capture.dag_folder.ParseServer` in a fresh process
with a cleaned environment; it reads the run's settings (a line of JSON) on stdin, imports Airflow
once and warms up, lists the folders the run says are ready, then reads what to parse: one job per
folder (a pull request's check gives two, the merge base's version and the work tree's, in one
sandbox). It lists each folder's DAG files as the dag-processor does, and forks one child per file
(at most ``workers`` at a time), each parsing its file with Airflow's ``DagBag`` under an
address-space limit and sending its serialized DAGs (or its import error) on a pipe of its own;
the jobs run one after the other. A child that hangs past the deadline is killed; one that exits
or dies is an import error of its file. Then it maps each job to the REST shapes (tasks through the
API's own ``TaskResponse``, assets through ``AssetModelOperation.collect``, the dependency graph
through Airflow's own resolver) and writes the results, as JSON, to the descriptor the run names.

It imports nothing of the package, so the DAG code it runs
meets no state of the provider.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import gc
import json
import os
import re
import resource
import select
import signal
import stat
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
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


def _pre_import(files: list[str], max_bytes: int) -> None:
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
        try:  # only a regular file within the size a DAG file may be is read (never a FIFO)
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                continue
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


_DEPTH = "AIRFLOW__CORE__DAGBAG_IMPORT_ERROR_TRACEBACK_DEPTH"
#: How many frames of an import error's traceback a child keeps (Airflow's default is 2).
_TRACEBACK_FRAMES = 256


def _parse_file(path: str, request: dict[str, Any]) -> dict[str, Any]:
    from airflow.configuration import conf

    dag_bag = _dag_bag_class()
    folder = request["folder"]
    depth = conf.getint("core", "dagbag_import_error_traceback_depth", fallback=2)
    # The whole traceback of an import error, so that its innermost frame in the DAG file is in it
    # (``error_line``), however deep in a helper the error was raised: only the error's own line
    # is kept of it (``reduce_import_error``), so what Airflow's depth would cut changes nothing.
    os.environ[_DEPTH] = str(_TRACEBACK_FRAMES)
    try:
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
    finally:
        os.environ.pop(_DEPTH, None)
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
    inferred = _infer(bag.dags.values(), request) if dags else {}
    return {"dags": dags, "import_errors": errors, "references": references, "inferred": inferred}


def _inference() -> Any:
    """The inference module (``lineage_inference.py`` beside this file), loaded from its file, not
    through the package: the child that ran DAG code meets no state of the provider."""
    module = sys.modules.get("_coremodels_lineage_inference")
    if module is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_coremodels_lineage_inference", Path(__file__).with_name("lineage_inference.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def _infer(dags: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Lineage nobody declared, read off the built DAGs' operators (contract 10.3); never fatal."""
    if not request.get("infer"):
        return {}
    try:
        return dict(_inference().infer(dags, request["folder"]))
    except Exception:
        return {}


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


def _parse_one(path: str, request: dict[str, Any]) -> dict[str, Any]:
    """One file's parse: its DAGs, import errors and asset references, where its DAGs and their
    declarations are, and the line of each import error; a file that is not a regular file, or is
    over the size a DAG file may be, is not run."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return {"failure": f"this file cannot be read: {exc.strerror or exc}"}
    if not stat.S_ISREG(info.st_mode):
        return {"failure": "this is not a regular file, so it was not parsed"}
    if info.st_size > int(request["max_file"]):
        cap = int(request["max_file"])
        return {"failure": f"this file is {info.st_size:,} bytes, over the {cap:,} a DAG file may be"}
    try:
        result: dict[str, Any] = _parse_file(path, request)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
        return _at({"failure": f"the parse of this file exited with code {status}"}, exc, path)
    except BaseException as exc:  # a MemoryError outside Airflow's own handler, say
        return _at({"failure": traceback.format_exc(limit=-4)}, exc, path)
    # where its DAGs and what they declare are, for SARIF (a file with none has nothing to point at)
    declared = _declared_in(path, int(request["max_file"]), result["dags"]) if result["dags"] else {}
    result["declared"] = declared
    result["lines"] = {dag_id: found["line"] for dag_id, found in declared.items() if "line" in found}
    result["error_lines"] = {
        key: line for key, trace in result["import_errors"].items() if (line := error_line(trace, path))
    }
    return result


def _at(failure: dict[str, Any], exc: BaseException, path: str) -> dict[str, Any]:
    """A failure with the line of the innermost frame in the file itself, where there is one."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    if isinstance(exc, SyntaxError) and exc.filename == path and exc.lineno:
        line = exc.lineno
    if line:
        failure["line"] = line
    return failure


_FRAME = re.compile(r'^\s*File "(?P<file>[^"\n]*)", line (?P<line>\d+)', re.MULTILINE)


def error_line(trace: str, path: str) -> int | None:
    """The line of an import error in the DAG file itself: its traceback's innermost frame there
    (``File "<path>", line N``), which for a SyntaxError in the file is the error's own line; None
    where no frame of the traceback is in the file."""
    found = None
    for match in _FRAME.finditer(trace):
        if match["file"] == path:
            found = int(match["line"])
    return found if found and found >= 1 else None


def _declared_in(path: str, max_bytes: int, dags: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Where each of the file's DAGs (as parsed) and its declarations are, read from the file as a
    regular file, without blocking, within the size a DAG file may be. Best effort
    (:func:`declarations`)."""
    if not path.endswith(".py"):
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return {}
        with os.fdopen(fd, "rb", closefd=False) as handle:
            source = handle.read(info.st_size + 1)
    except (OSError, MemoryError):
        return {}
    finally:
        os.close(fd)
    if len(source) > max_bytes:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    dag_ids = [d["entry"]["dag_id"] for d in dags]
    try:
        return declarations(tree, dag_ids)
    except RecursionError:
        return {}


#: What each DAG's record holds besides its ``line``: asset references by the asset's literal URI
#: or name (``outlets``, ``inlets``, ``schedule``), DAG links by the literal dag_id they name
#: (``triggers``: ``trigger_dag_id``, ``sensors``: ``external_dag_id``), and tasks by task_id.
DECLARED = ("outlets", "inlets", "schedule", "triggers", "sensors", "tasks")
#: The calls that name an asset (``Asset.ref`` too), and the keywords an asset is named by.
_ASSET_CALLS = frozenset(("Asset", "Dataset", "AssetAlias"))
_ASSET_KEYWORDS = ("name", "uri")


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _root(node: ast.AST) -> str:
    """The name a decorator or callee starts from: ``task`` of ``@task.bash(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def declarations(tree: ast.AST, dag_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Where each DAG of a module is defined, and where it declares its outlets, inlets, asset
    schedule, triggers, sensors and tasks: ``{dag_id: {"line": N, "outlets": {uri_or_name: N},
    ..., "computed": {"outlets": N, ...}}}``.

    A DAG is a ``DAG(...)`` call (its first argument or ``dag_id=``), a ``@dag`` function (its
    ``dag_id=`` or its name) or an ``@asset`` one (its ``name=`` or its name, which is also its
    outlet). What lies in a ``with DAG(...)`` block, a ``@dag`` function or a call given
    ``dag=<a DAG's variable>`` is that DAG's; what lies elsewhere is every DAG's of the file. An
    asset is named by a string literal, a name bound once to one, or a name bound once to an
    ``Asset(...)``; a declaration that names none this way is computed: ``computed`` gives its line
    where it is the only computed one of its kind in the DAG (else the DAG's line stands for it).
    ``dag_ids`` are the DAGs the parse found: one whose id no literal gives takes the file's only
    DAG whose id is computed (a factory); a file of one DAG gives it every declaration."""
    found = _Declarations(tree)
    ids = list(dag_ids) if dag_ids is not None else [k for k in found.sites if not k.startswith("?")]
    computed_sites = [k for k in found.sites if k.startswith("?")]
    out: dict[str, dict[str, Any]] = {}
    for dag_id in ids:
        key = dag_id if dag_id in found.sites else None
        if key is None and len(computed_sites) == 1:
            key = computed_sites[0]
        record: dict[str, Any] = {}
        if key is not None:
            record["line"] = found.sites[key]
        computed: dict[str, list[int]] = {}
        others = [s for s in found.scopes if s != key] if len(ids) == 1 else [""]
        for scope in [*others, *([key] if key in found.scopes else [])]:  # its own last: they win
            _merge(record, computed, found.scopes[scope])
        single = {kind: lines[0] for kind, lines in computed.items() if len(set(lines)) == 1}
        if single:
            record["computed"] = single
        out[dag_id] = record
    return out


def _merge(record: dict[str, Any], computed: dict[str, list[int]], scope: dict[str, Any]) -> None:
    for kind in DECLARED:
        if scope[kind]:
            record.setdefault(kind, {}).update(scope[kind])
    for kind, lines in scope["computed"].items():
        computed.setdefault(kind, []).extend(lines)


def _scope() -> dict[str, Any]:
    return {**{kind: {} for kind in DECLARED}, "computed": {}}


class _Declarations(ast.NodeVisitor):
    """One walk of a module: DAG sites (``sites``: scope key -> line; a literal dag_id, or ``?N``
    for one whose id is computed) and each scope's declarations (``""``: outside any DAG)."""

    def __init__(self, tree: ast.AST) -> None:
        self.strings: dict[str, str | None] = {}  # a name bound to a string (None: bound to several)
        self.assets: dict[str, list[str] | None] = {}  # a name bound to an Asset(...)'s names
        self._bindings(tree)
        self.sites: dict[str, int] = {}
        self.scopes: dict[str, dict[str, Any]] = {"": _scope()}
        self.dag_vars: dict[str, str] = {}
        self.stack = [""]
        self.seen: set[int] = set()  # DAG calls already taken as sites
        self.visit(tree)

    # -- names bound once ------------------------------------------------------------------------

    def _bindings(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if not isinstance(target, ast.Name):
                continue
            text = _literal(value)
            if text is not None:
                self._bind(self.strings, target.id, text)
        for node in ast.walk(tree):  # assets after strings: Asset(SOME_URI)
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name) and self._is_asset(value):
                assert isinstance(value, ast.Call)
                self._bind(self.assets, target.id, self._asset_names(value) or None)

    @staticmethod
    def _bind(bound: dict[str, Any], name: str, value: Any) -> None:
        bound[name] = value if name not in bound or bound[name] == value else None

    def _text(self, node: ast.AST | None) -> str | None:
        text = _literal(node)
        if text is None and isinstance(node, ast.Name):
            text = self.strings.get(node.id)
        return text

    @staticmethod
    def _is_asset(node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "ref":  # Asset.ref(name=...)
            return _name(func.value) in _ASSET_CALLS
        return _name(func) in _ASSET_CALLS

    def _asset_names(self, call: ast.Call) -> list[str]:
        names = [self._text(call.args[0])] if call.args else []
        names.extend(self._text(_keyword(call, key)) for key in _ASSET_KEYWORDS)
        return list(dict.fromkeys(n for n in names if n))

    # -- what an expression names ------------------------------------------------------------------

    def _references(self, node: ast.AST) -> tuple[list[tuple[list[str], int]], bool]:
        """The assets an outlets, inlets or schedule expression names (each with its line), and
        whether some part of it is computed."""
        found: list[tuple[list[str], int]] = []
        computed = False

        def walk(part: ast.AST) -> None:
            nonlocal computed
            if self._is_asset(part):
                assert isinstance(part, ast.Call)
                names = self._asset_names(part)
                if names:
                    found.append((names, part.lineno))
                else:
                    computed = True
            elif isinstance(part, ast.Name):
                bound = self.assets.get(part.id)
                if bound:
                    found.append((bound, part.lineno))
                elif part.id not in self.strings:  # a schedule's cron string is no asset
                    computed = True
            elif isinstance(part, (ast.List, ast.Tuple, ast.Set)):
                for item in part.elts:
                    walk(item)
            elif isinstance(part, ast.BinOp):  # Asset("a") | Asset("b")
                walk(part.left)
                walk(part.right)
            elif isinstance(part, ast.Call):  # AssetAll(...), AssetAny(...); else it computes them
                before = len(found)
                for item in (*part.args, *(k.value for k in part.keywords)):
                    walk(item)
                computed = computed or len(found) == before
            elif not isinstance(part, ast.Constant):
                computed = True

        walk(node)
        return found, computed

    # -- scopes ----------------------------------------------------------------------------------

    def _dag_key(self, call: ast.Call) -> str:
        dag_id = self._text(_keyword(call, "dag_id")) or (self._text(call.args[0]) if call.args else None)
        return dag_id or f"?{call.lineno}"

    def _site(self, key: str, line: int) -> None:
        self.sites.setdefault(key, line)
        self.scopes.setdefault(key, _scope())

    def _dag_call(self, call: ast.Call) -> str:
        """A ``DAG(...)`` call: its site, and its schedule in its own scope."""
        key = self._dag_key(call)
        self.seen.add(id(call))
        self._site(key, call.lineno)
        schedule = _keyword(call, "schedule")
        if schedule is not None:
            self._record(key, "schedule", schedule)
        return key

    def _record(self, key: str, kind: str, node: ast.expr) -> None:
        scope = self.scopes.setdefault(key, _scope())
        if kind in ("triggers", "sensors"):
            text = self._text(node)
            if text is not None:
                scope[kind].setdefault(text, node.lineno)
            else:
                scope["computed"].setdefault(kind, []).append(node.lineno)
            return
        found, computed = self._references(node)
        for names, line in found:
            for name in names:
                scope[kind].setdefault(name, line)
        if computed:
            scope["computed"].setdefault(kind, []).append(node.lineno)

    def visit_With(self, node: ast.With) -> None:
        self._with(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self._with(node)

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        key = None
        for item in node.items:
            expr = item.context_expr
            if isinstance(expr, ast.Call) and _name(expr) == "DAG":
                key = self._dag_call(expr)
                if isinstance(item.optional_vars, ast.Name):
                    self.dag_vars[item.optional_vars.id] = key
                for part in (*expr.args, *(k.value for k in expr.keywords)):
                    self.visit(part)
            elif isinstance(expr, ast.Name) and expr.id in self.dag_vars:
                key = self.dag_vars[expr.id]
            else:
                self.visit(expr)
        if key is None:
            for statement in node.body:
                self.visit(statement)
            return
        self.stack.append(key)
        for statement in node.body:
            self.visit(statement)
        self.stack.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if isinstance(value, ast.Call) and _name(value) == "DAG":
            key = self._dag_call(value)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.dag_vars[target.id] = key
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        key = None
        for decorator in node.decorator_list:
            kind, root = _name(decorator), _root(decorator)
            call = decorator if isinstance(decorator, ast.Call) else None
            if kind == "dag":
                dag_id = node.name
                if call is not None:
                    first = call.args[0] if call.args else None
                    dag_id = self._text(_keyword(call, "dag_id")) or self._text(first) or dag_id
                key = dag_id
                self._site(key, decorator.lineno)
                if call is not None and (schedule := _keyword(call, "schedule")) is not None:
                    self._record(key, "schedule", schedule)
            elif kind == "asset":  # @asset: a one-task DAG named as the function
                name = node.name
                if call is not None:
                    name = self._text(_keyword(call, "name")) or name
                key = name
                self._site(key, decorator.lineno)
                scope = self.scopes[key]
                scope["outlets"].setdefault(name, decorator.lineno)
                if call is not None and (uri := self._text(_keyword(call, "uri"))):
                    scope["outlets"].setdefault(uri, decorator.lineno)
                if call is not None and (schedule := _keyword(call, "schedule")) is not None:
                    self._record(key, "schedule", schedule)
            elif root == "task":  # @task, @task(...), @task.bash(...): a task named as the function
                task_id = self._text(_keyword(call, "task_id")) if call is not None else None
                scope = self.scopes.setdefault(self.stack[-1], _scope())
                scope["tasks"].setdefault(task_id or node.name, decorator.lineno)
                if call is not None:
                    for kind_name in ("outlets", "inlets"):
                        if (value := _keyword(call, kind_name)) is not None:
                            self._record(self.stack[-1], kind_name, value)
        if key is not None:
            self.stack.append(key)
        for statement in node.body:
            self.visit(statement)
        if key is not None:
            self.stack.pop()

    def visit_Call(self, node: ast.Call) -> None:
        if _name(node) == "DAG" and id(node) not in self.seen:
            self._dag_call(node)
        target = _keyword(node, "dag")
        key = self.dag_vars.get(target.id, self.stack[-1]) if isinstance(target, ast.Name) else self.stack[-1]
        task_id = self._text(_keyword(node, "task_id"))
        if task_id is not None:  # a task is declared where its operator is called
            self.scopes.setdefault(key, _scope())["tasks"].setdefault(task_id, node.lineno)
        for keyword in node.keywords:
            if keyword.arg in ("outlets", "inlets"):
                self._record(key, keyword.arg, keyword.value)
            elif keyword.arg == "trigger_dag_id":
                self._record(key, "triggers", keyword.value)
            elif keyword.arg == "external_dag_id":
                self._record(key, "sensors", keyword.value)
        self.generic_visit(node)


def _child(path: str, answer: int, request: dict[str, Any], limit: int | None) -> None:
    """A forked child: parse one file, send its outcome on ``answer`` (an 8-byte length, then
    JSON), and leave without cleanup. Before any DAG code runs it keeps only ``answer`` open (not
    the server's result, nor another child's pipe), takes a session of its own, and the bounds."""
    code = 0
    try:
        os.setsid()  # a session of its own: what the DAG code starts is found and ended by it
        _die_with_parent()
        os.closerange(3, answer)
        os.closerange(answer + 1, _MAX_FD)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash dumps no core (slow, and DAG data)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        written = int(request["max_written"])  # no file it writes grows past this
        resource.setrlimit(resource.RLIMIT_FSIZE, (written, written))
        if request.get("processes"):
            processes = int(request["processes"])
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        os.environ["_AIRFLOW_PROCESS_CONTEXT"] = "client"  # no ORM access from DAG code (3.3)
        folder = request["folder"]
        if folder not in sys.path:  # as Airflow puts the bundle on the path: appended, in the child
            sys.path.append(folder)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the bound fails, it does not kill
        _keep_crashes_fatal()
        data = _encoded(_parse_one(path, request))
        view = memoryview(len(data).to_bytes(8, "big") + data)
        while view:
            view = view[os.write(answer, view[: 1 << 20]) :]
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _encoded(outcome: dict[str, Any]) -> bytes:
    """The outcome as JSON; a file that left its memory exhausted (what it hoarded is still held by
    the traceback Airflow keeps) is collected first, then said to have run out of memory."""
    for _ in range(2):
        try:
            return json.dumps(outcome, default=str).encode()
        except MemoryError:
            gc.collect()
    return json.dumps({"failure": "MemoryError: the parse of this file exhausted its memory"}).encode()


#: Above every descriptor the server may have open when it forks (closed in the child).
_MAX_FD = 1 << 16


@dataclass
class _Worker:
    pid: int
    answer: int  # the child's outcome arrives here
    index: int  # the file it parses
    deadline: float
    received: bytearray = field(default_factory=bytearray)
    reaped: bool = False


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


def _why(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"the parse of this file was killed by {_signal_name(os.WTERMSIG(status))}"
    return f"the parse of this file exited with code {os.WEXITSTATUS(status)}"


def _sweep(keep: set[int]) -> None:
    """In the sandbox, whose ``/proc`` shows its own processes only: end every process that is not
    the sandbox's init, this server, or in the session of a child still parsing. What a file's
    code left behind (a daemon, a process in a new session) ends when its parse ends."""
    own = os.getpid()
    for _ in range(8):  # what forks while it is swept is found on the next pass
        stray = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, own):
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    fields = handle.read().rpartition(b")")[2].split()
            except OSError:
                continue
            if len(fields) > 3 and int(fields[3]) not in keep:  # state, ppid, group, session
                stray.append(int(name))
        if not stray:
            return
        for pid in stray:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in stray:  # an orphan the server adopted (subreaper) is reaped; only what it ended:
            with contextlib.suppress(OSError):  # a parse child that exited is its own end's to reap
                os.waitpid(pid, os.WNOHANG)


def _parse_all(files: list[str], request: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every file parsed in a child forked for it alone, ``workers`` at once, each under a deadline.
    A child's outcome is read from its own pipe within the bytes a file may give, and all the
    outcomes held within the bytes the run may hold: a file past either is refused before it is
    held. A child that exits, crashes or is killed before its whole answer arrived is an import
    error of its file, as is one past its deadline. Returns the outcomes and the refused files."""
    workers = max(1, int(request["workers"]))
    timeout = float(request["timeout"])
    deadline_after = timeout + max(5.0, 0.2 * timeout)  # Airflow's own timeout fires first
    headroom = request.get("memory")
    limit = None if headroom is None else _address_space() + int(headroom)
    per_file, per_run = int(request["max_answer"]), int(request["max_answers"])
    sandboxed = bool(request.get("sandboxed"))
    outcomes: list[dict[str, Any]] = [{} for _ in files]
    refused: list[str] = []
    held = 0
    pending = list(range(len(files)))[::-1]  # popped from the end: in file order
    live: dict[int, _Worker] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the server's objects stay out of the children's collections: fewer pages copied

    def spawn(index: int) -> None:
        answer_r, answer_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child(files[index], answer_w, request, limit)
        os.close(answer_w)
        os.set_blocking(answer_r, False)
        live[answer_r] = _Worker(pid, answer_r, index, time.monotonic() + deadline_after)

    def end(worker: _Worker, outcome: dict[str, Any]) -> None:
        del live[worker.answer]  # first: a worker is ended once, whatever fails below
        outcomes[worker.index] = outcome
        with contextlib.suppress(OSError):  # the child, and what the DAG code left in its session
            os.killpg(worker.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(worker.pid, signal.SIGKILL)
        os.close(worker.answer)
        if not worker.reaped:
            os.waitpid(worker.pid, 0)
        if sandboxed:
            _sweep({os.getsid(0), *(w.pid for w in live.values())})

    def answered(worker: _Worker) -> dict[str, Any] | None:
        """The outcome, once the whole answer is in; None while it is not."""
        nonlocal held
        got = worker.received
        if len(got) < 8:
            return None
        size = int.from_bytes(got[:8], "big")
        if size > per_file or held + size > per_run:
            refused.append(files[worker.index])
            cap = (
                f"{per_file:,} bytes a file may give"
                if size > per_file
                else f"{per_run:,} bytes the run may hold"
            )
            return {
                "failure": f"the parse of this file gave {size:,} bytes, over the {cap}: "
                "refused before it was held"
            }
        if len(got) < 8 + size:
            return None
        try:
            outcome = json.loads(bytes(got[8 : 8 + size]))
        except (ValueError, RecursionError):
            return {"failure": "the parse of this file answered what is not an outcome"}
        checked = _checked(outcome, files[worker.index], request["folder"])
        if checked is None:
            return {"failure": "the parse of this file answered what is not an outcome"}
        held += size
        return checked

    try:
        while pending or live:
            while pending and len(live) < workers:
                spawn(pending.pop())
            wait = max(0.0, min(w.deadline for w in live.values()) - time.monotonic())
            ready, _, _ = select.select(list(live), [], [], wait)
            for fd in ready:
                worker = live[fd]
                try:
                    chunk = os.read(fd, 1 << 20)
                except BlockingIOError:
                    continue
                if chunk:
                    worker.received += chunk
                    outcome = answered(worker)
                    if outcome is not None:
                        end(worker, outcome)
                    continue
                _, status = os.waitpid(worker.pid, 0)  # the pipe closed: the child is gone
                worker.reaped = True
                end(worker, answered(worker) or {"failure": _why(status)})
            now = time.monotonic()
            for worker in [w for w in live.values() if now >= w.deadline]:
                end(worker, {"failure": f"the parse of this file timed out after {timeout:g} s"})
    finally:
        for worker in list(live.values()):
            end(worker, {"failure": "the parse of this file did not finish"})
    return outcomes, refused


def _checked(outcome: Any, path: str, folder: str) -> dict[str, Any] | None:
    """A child's outcome in the shape the server maps, its DAGs and import errors held to the file
    it was given (a file's code may answer anything, but only for itself); None if misshapen."""
    if not isinstance(outcome, dict):
        return None
    if "failure" in outcome:
        failed: dict[str, Any] = {"failure": str(outcome["failure"])}
        if _is_line(outcome.get("line")):
            failed["line"] = outcome["line"]
        return failed
    dags, errors, references = outcome.get("dags"), outcome.get("import_errors"), outcome.get("references")
    if not (isinstance(dags, list) and isinstance(errors, dict) and isinstance(references, dict)):
        return None
    relative = os.path.relpath(path, folder)
    for dag in dags:
        entry = dag.get("entry") if isinstance(dag, dict) else None
        if not (isinstance(entry, dict) and isinstance(entry.get("dag_id"), str)):
            return None
        if not isinstance(dag.get("tasks"), list) or not isinstance(dag.get("dependencies"), list):
            return None
        own = entry.get("relative_fileloc")
        if not (isinstance(own, str) and (own == relative or own.startswith(relative + "/"))):
            entry["relative_fileloc"] = relative  # a file's DAGs are that file's, whatever it says

    def held(key: Any) -> str:
        key = os.path.relpath(key, folder) if os.path.isabs(str(key)) else str(key)
        return key if key == relative or key.startswith(relative + "/") else relative

    owned = {held(key): str(trace) for key, trace in errors.items()}
    error_lines = outcome.get("error_lines")
    at = {
        held(key): line
        for key, line in (error_lines.items() if isinstance(error_lines, dict) else ())
        if _is_line(line)
    }
    lines = outcome.get("lines")
    found = {
        str(dag_id): line
        for dag_id, line in (lines.items() if isinstance(lines, dict) else ())
        if _is_line(line)
    }
    declared = outcome.get("declared")
    where = {
        str(dag_id): kept
        for dag_id, record in (declared.items() if isinstance(declared, dict) else ())
        if (kept := _declared_record(record))
    }
    inferred = outcome.get("inferred")
    check = _inference().checked if isinstance(inferred, dict) and inferred else None
    return {
        "dags": dags,
        "import_errors": owned,
        "references": references,
        "lines": found,
        "declared": where,
        "error_lines": at,
        "inferred": {str(k): check(v) for k, v in inferred.items()} if check and inferred else {},
    }


def _is_line(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _declared_record(record: Any) -> dict[str, Any]:
    """A DAG's declarations (``declarations``) as a child answered them, what is misshapen left out."""
    if not isinstance(record, dict):
        return {}
    kept: dict[str, Any] = {}
    if _is_line(record.get("line")):
        kept["line"] = record["line"]
    for kind in (*DECLARED, "computed"):
        given = record.get(kind)
        if isinstance(given, dict):
            lines = {str(name): line for name, line in given.items() if _is_line(line)}
            if lines:
                kept[kind] = lines
    return kept


def _list_files(folder: str, safe_mode: bool) -> list[str]:
    from airflow.utils.file import list_py_file_paths

    return sorted(list_py_file_paths(folder, safe_mode=safe_mode))


class _Messages:
    """The run's messages to the server: lines of JSON on stdin."""

    def __init__(self) -> None:
        self.buffer = b""

    def _line(self) -> dict[str, Any] | None:
        line, found, rest = self.buffer.partition(b"\n")
        if not found:
            return None
        self.buffer = rest
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a message to the parse server is not an object")
        return message

    def next(self) -> dict[str, Any] | None:
        """The next message, waited for; None when the run closed its end first."""
        while b"\n" not in self.buffer:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        return self._line()

    def waiting(self) -> list[dict[str, Any]]:
        """The messages already sent, without waiting for more."""
        while select.select([0], [], [], 0)[0]:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                break
            self.buffer += chunk
        found = []
        while (message := self._line()) is not None:
            found.append(message)
        return found


def _list_in_child(listings: dict[str, _Listing], folders: Any, safe_mode: bool) -> None:
    for folder in folders or ():
        if folder not in listings:
            listings[folder] = _Listing(str(folder), safe_mode)


class _Listing:
    """A folder's DAG files (``_list_files``) listed in a child forked for it, while the server goes
    on. Listing reads the files (Airflow's safe-mode check) and runs none of them; a child that
    fails leaves the listing to the server."""

    def __init__(self, folder: str, safe_mode: bool) -> None:
        self.folder, self.safe_mode = folder, safe_mode
        readable, writable = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            code = 0
            try:
                # ended with the server (at the run's deadline, say), sandboxed or not: a listing
                # stuck in a catastrophic .airflowignore would otherwise spin on, orphaned
                _die_with_parent()
                os.close(readable)
                view = memoryview(json.dumps(_list_files(folder, safe_mode)).encode())
                while view:
                    view = view[os.write(writable, view) :]
            except BaseException:
                code = 70
            finally:
                os._exit(code)
        os.close(writable)
        self.answer = readable

    def files(self) -> list[str]:
        chunks = []
        while chunk := os.read(self.answer, 1 << 20):
            chunks.append(chunk)
        os.close(self.answer)
        _, status = os.waitpid(self.pid, 0)
        if status == 0:
            with contextlib.suppress(ValueError):
                listed = json.loads(b"".join(chunks))
                if isinstance(listed, list) and all(isinstance(path, str) for path in listed):
                    return listed
        return _list_files(self.folder, self.safe_mode)


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


def _serve(common: dict[str, Any], messages: _Messages) -> dict[str, Any]:
    """Import Airflow and warm up, list the folders the run says are ready while it prepares the
    rest, then parse each job's files (one job after the other: no file of a later job runs before
    every file of an earlier one has ended) and map each job's outcomes."""
    begun = time.monotonic()
    # The start is imports, tens of thousands of objects that all live on: the collections they
    # would set off find almost nothing, and cost about a tenth of the start's CPU
    # (benchmarks/bench_parse_start.py). Collection is back on before the first child is forked
    # (the server's objects are then frozen, see _parse_all).
    gc.disable()
    import airflow
    from airflow.configuration import conf

    if common.get("timeout") is None:
        common["timeout"] = conf.getfloat("core", "dagbag_import_timeout")
    common["safe_mode"] = conf.getboolean("core", "dag_discovery_safe_mode", fallback=True)
    if common.get("paused_at_creation") is None:
        common["paused_at_creation"] = conf.getboolean("core", "dags_are_paused_at_creation")
    from airflow.api_fastapi.core_api.datamodels.dags import DAGResponse  # noqa: F401
    from airflow.api_fastapi.core_api.datamodels.tasks import TaskResponse  # noqa: F401
    from airflow.dag_processing.collection import AssetModelOperation  # noqa: F401

    _dag_bag_class()
    _cache_cron_locales()
    if common.get("infer"):  # loaded once here, before the children fork, with its SQL parser
        common["inference"] = _inference().available() or "on"
        import jinja2.sandbox  # noqa: F401

        if common["inference"] == "on":
            import openlineage_sql  # noqa: F401  # type: ignore[import-untyped,unused-ignore]
    else:  # not asked for: nothing to say of it
        common["inference"] = None
    started = time.time()
    timings = {"start": time.monotonic() - begun}
    # the folders said ready are listed in children of their own, beside the warm-up and while the
    # run prepares the rest (listing reads every file of a folder: a fifth of a second a 5,000)
    listings: dict[str, _Listing] = {}
    said: list[dict[str, Any]] = [common, *messages.waiting()]
    for message in said:
        _list_in_child(listings, message.get("list"), common["safe_mode"])
    with tempfile.TemporaryDirectory(prefix="coremodels-dag-folder-") as scratch:
        _warm_up(scratch, common)
    timings["warm_up"] = time.monotonic() - begun - sum(timings.values())
    more_said = messages.waiting()
    for message in more_said:
        _list_in_child(listings, message.get("list"), common["safe_mode"])
    said += more_said
    if "jobs" not in said[-1]:
        # the run still prepares what to parse: the garbage of the import and the warm-up is
        # collected meanwhile (a tenth of a second), before the children are forked
        gc.collect()
    while "jobs" not in said[-1]:
        more = messages.next()
        if more is None:
            raise RuntimeError("the run ended before it said what to parse")
        said.append(more)
        _list_in_child(listings, more.get("list"), common["safe_mode"])
    message = said[-1]
    os.close(0)  # nothing more is read; no child gets it
    jobs = [{**common, **job} for job in message["jobs"]]
    _list_in_child(listings, [job["folder"] for job in jobs], common["safe_mode"])
    listed = {folder: listing.files() for folder, listing in listings.items()}
    chosen: list[list[str]] = []
    for job in jobs:
        folder = job["folder"]
        files = listed[folder]
        if job.get("only") is not None:  # a parse scoped to a change: these files alone
            only = set(job["only"])
            files = [path for path in files if os.path.relpath(path, folder) in only]
        chosen.append(files)
    timings["listing"] = time.monotonic() - begun - sum(timings.values())
    # Airflow's modules the files import, imported here once. No folder is ever on this
    # process's path (each child appends its own, as Airflow does): nothing of one runs here.
    _pre_import([path for files in chosen for path in files], int(common["max_file"]))
    gc.enable()
    timings["pre_import"] = time.monotonic() - begun - sum(timings.values())
    created_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
    results = []
    for job, files in zip(jobs, chosen, strict=True):
        began = time.monotonic()
        outcomes, refused = _parse_all(files, job)
        parsed = time.monotonic()
        folder = job["folder"]
        result = _map(files, outcomes, job, bool(job["paused_at_creation"]), airflow.__version__, created_at)
        result["listed"] = len(listed[folder])
        result["refused_files"] = sorted(shown(os.path.relpath(path, folder)) for path in refused)
        # where the parse server's time went (the benchmarks print it): shared, then this job's
        result["timings"] = {**timings, "files": parsed - began, "map": time.monotonic() - parsed}
        results.append(result)
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    for result in results:  # the server's CPU seconds, and its children's (what a sandbox hides)
        result["timings"]["cpu"] = sum(u.ru_utime + u.ru_stime for u in used)
    return {"results": results}


def shown(name: str) -> str:
    """A file name as it may be shown: a character that is not printable (a newline, an escape)
    escaped, so a name cannot start a line of its own or pass for an error."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)


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
    lines: dict[str, int] = {}
    declared: dict[str, dict[str, Any]] = {}
    error_lines: dict[str, int] = {}
    inferred: dict[str, Any] = {}  # dag_id -> task_id -> what it reads and writes (lineage_inference)
    for path, outcome in zip(files, outcomes, strict=True):
        raw = os.path.relpath(path, folder)
        relative = shown(raw)
        if "failure" in outcome:
            import_errors[relative] = outcome["failure"]
            if "line" in outcome:
                error_lines[relative] = outcome["line"]
            continue
        for key, trace in outcome.get("import_errors", {}).items():
            import_errors[shown(key)] = trace.replace(raw, relative) if relative != raw else trace
        for key, line in outcome.get("error_lines", {}).items():
            error_lines[shown(key)] = line
        for dag in outcome.get("dags", []):
            dag_id = dag["entry"]["dag_id"]
            if dag_id in seen:  # the dag-processor keeps whichever file it parsed last
                duplicates.append(f"{dag_id!r} ({seen[dag_id]} and {relative})")
                continue
            seen[dag_id] = relative
            if isinstance(dag["entry"].get("relative_fileloc"), str):
                dag["entry"]["relative_fileloc"] = shown(dag["entry"]["relative_fileloc"])
            if dag_id in outcome.get("lines", {}):
                lines[dag_id] = outcome["lines"][dag_id]
            if dag_id in outcome.get("declared", {}):
                declared[dag_id] = outcome["declared"][dag_id]
            if outcome.get("inferred", {}).get(dag_id):
                inferred[dag_id] = outcome["inferred"][dag_id]
            dags.append(dag)
    paused = {
        d["entry"]["dag_id"]: known_paused.get(
            d["entry"]["dag_id"],
            paused_at_creation if d.get("paused_upon_creation") is None else bool(d["paused_upon_creation"]),
        )
        for d in dags
    }
    references = [outcome["references"] for outcome in outcomes if "references" in outcome]
    assets = _Assets(references, set(seen), paused)
    dag_entries = []
    for dag in dags:
        entry = dict(dag["entry"])
        entry["is_paused"] = paused[entry["dag_id"]]
        entry["asset_expression"] = assets.expand(entry.get("asset_expression"))
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
        "lines": lines,
        "declared": declared,
        "error_lines": {key: line for key, line in error_lines.items() if key in import_errors},
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
        "inferred": {dag_id: inferred[dag_id] for dag_id in sorted(inferred)},
        "inference": request.get("inference"),
    }


def main() -> int:
    """Read the request on stdin, answer on the descriptor it names (which no child keeps open)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0]) == here:  # run as a script: capture/ is no package path
        del sys.path[0]
    # Not dumpable: a child (same user, DAG code) can neither trace this process nor read its
    # memory, environment or descriptors through /proc.
    with contextlib.suppress(Exception):
        import ctypes

        pr_set_dumpable, pr_set_child_subreaper = 4, 36
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_dumpable, 0, 0, 0, 0)
        libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0)  # orphans come back here to be ended
    # The run's settings come first; what to parse may follow later (the run starts this server
    # before it has laid out every folder: Airflow's import overlaps that work).
    messages = _Messages()
    common = messages.next()
    if common is None:
        return 2
    # Whatever Airflow prints must not land in the result: stdout goes to stderr.
    os.dup2(2, 1)
    try:
        result = _serve(common, messages)
    except BaseException:
        result = {"error": traceback.format_exc(limit=-6)}
    with os.fdopen(int(common["answer_fd"]), "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # No interpreter finalization: tearing down Airflow's modules and the DAGs' objects took a
    # few tenths of a second, and nothing is left to write.
    os._exit(code)
