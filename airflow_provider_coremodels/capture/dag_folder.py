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

import ast
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airflow_provider_coremodels.capture.crawl import reduce_import_error, unseen_deadlines
from airflow_provider_coremodels.core import Lossiness
from airflow_provider_coremodels.core.reading.parse import scheduled_on_assets
from airflow_provider_coremodels.errors import InputError
from airflow_provider_coremodels.redaction import SECRETS

#: The parse server, run as a script: ``python -m`` would import this package (and ``requests``)
#: into the process that runs the DAG code, a quarter of a second of its start and state it needs not.
WORKER = Path(__file__).with_name("dag_folder_worker.py")
DEFAULT_BUNDLE = "dags-folder"
#: What the parse server needs beyond the files' own time: its start-up (Airflow's import).
_STARTUP_SECONDS = 120.0


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
    lines: Mapping[str, int]  # dag_id -> the line of its DAG(...) call or @dag function; best effort
    lossiness: tuple[Lossiness, ...]  # what the code shows that no API does, or lacks
    #: where the parse server's seconds went: its start (Airflow's import), warm-up, files, mapping
    timings: dict[str, float] = field(default_factory=dict)


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
) -> FolderArtifacts:
    """Parse the DAG files under ``folder`` as the dag-processor would, each file isolated.

    ``timeout``: seconds per file (default ``[core] dagbag_import_timeout``); ``workers``: files
    parsed at once (default: the machine's cores); ``deployed_root``: the bundle's path on the
    deployment, so each ``fileloc`` is what the deployment shows (default: the local path);
    ``paused``: the paused flags a baseline knows, a DAG it lacks paused as
    ``paused_at_creation`` (default ``[core] dags_are_paused_at_creation``) or its own
    ``is_paused_upon_creation`` say; ``withheld_env``: environment variables the DAG code must
    not see; ``memory``: the address space (bytes) a file's parse may add before its
    allocations fail (default 4 GiB); ``python``: the interpreter (default this one).
    """
    root = Path(folder)
    if not root.is_dir():
        raise DagFolderError("is not a directory", os.fspath(folder))
    root = root.resolve()
    withheld = set(withheld_env)
    env = {key: value for key, value in os.environ.items() if key not in withheld}
    # Airflow's INFO lines of each file's parse would go nowhere (a child's output is discarded)
    # and cost a tenth of its time
    env["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "WARNING"
    if timeout is not None:  # Airflow's own per-file timeout (SIGALRM) agrees with the deadline
        env["AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT"] = f"{float(timeout):g}"
    with tempfile.TemporaryDirectory(prefix="coremodels-dag-folder-") as scratch:
        out = os.path.join(scratch, "result.json")
        concurrency = workers or os.cpu_count() or 1
        request: dict[str, Any] = {
            "folder": str(root),
            "bundle": bundle,
            "timeout": timeout,
            "workers": concurrency,
            "deployed_root": deployed_root.rstrip("/") if deployed_root else None,
            "paused": dict(paused or {}),
            "paused_at_creation": paused_at_creation,
            "memory": 4 << 30 if memory is None else memory,
            "out": out,
        }
        budget = _STARTUP_SECONDS + _budget(root, timeout, concurrency)
        with open(os.path.join(scratch, "stderr"), "w+b") as errors:
            try:
                subprocess.run(  # our own worker, in this interpreter
                    [python or sys.executable, str(WORKER)],
                    input=json.dumps(request).encode(),
                    stdout=errors,
                    stderr=errors,
                    env=env,
                    cwd=scratch,
                    timeout=budget,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise DagFolderError(f"was not parsed within {budget:g} s", str(root)) from exc
            try:
                with open(out, encoding="utf-8") as handle:
                    result = json.load(handle)
            except (OSError, ValueError) as exc:
                errors.seek(max(0, os.path.getsize(errors.name) - 2000))
                tail = errors.read().decode(errors="replace").strip().splitlines()
                why = SECRETS.scrub(tail[-1]) if tail else "no output"
                raise DagFolderError(f"could not be parsed: {why}", str(root)) from exc
    if "error" in result:
        lines = str(result["error"]).strip().splitlines()
        why = SECRETS.scrub(lines[-1]) if lines else "no error text"
        raise DagFolderError(f"could not be parsed: {why}", str(root))
    dags = result["dags"]
    dags["dags"] = [_as_captured(entry) for entry in dags["dags"]]
    dags["import_errors"] = [reduce_import_error(entry) for entry in dags["import_errors"]]
    dags["lossiness"] = []
    return FolderArtifacts(
        dags=dags,
        tasks=result["tasks"],
        datasets=result["datasets"],
        airflow_version=result["airflow_version"],
        files=int(result["files"]),
        lines=_Lines(root, result["paths"]),
        lossiness=tuple(_records(result, paused is not None)),
        timings=dict(result.get("timings") or {}),
    )


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


def _budget(root: Path, timeout: float | None, workers: int) -> float:
    """A bound on the whole parse: every file at its deadline, ``workers`` at a time."""
    per_file = (timeout if timeout is not None else 30.0) * 1.2 + 5.0
    count = sum(1 for _ in root.rglob("*") if _.suffix in (".py", ".zip"))
    return per_file * (count // max(1, workers) + 1)


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
    for duplicate in result.get("duplicates") or []:
        records.append(
            Lossiness("dags", f"DAG {duplicate} is defined twice: the first in file order is kept")
        )
    return records


class _Lines(Mapping[str, int]):
    """Where each DAG is defined, read from its file when first asked (a file's parse costs about a
    millisecond, and SARIF asks for a few): a ``DAG(...)`` call naming it (by its first argument or
    ``dag_id=``), a ``@dag`` function (its ``dag_id=`` or its name) or an ``@asset`` one. Best
    effort: a DAG whose id is computed, or that lies in a zip file, has no line."""

    def __init__(self, root: Path, paths: Mapping[str, str]) -> None:
        self._root = root
        self._paths = dict(paths)
        self._files: dict[str, dict[str, int]] = {}

    def _defined(self, relative: str) -> dict[str, int]:
        if relative not in self._files:
            try:
                self._files[relative] = _definitions(ast.parse((self._root / relative).read_bytes()))
            except (OSError, SyntaxError, ValueError):
                self._files[relative] = {}
        return self._files[relative]

    def __getitem__(self, dag_id: str) -> int:
        relative = self._paths.get(dag_id)
        line = self._defined(relative).get(dag_id) if relative is not None else None
        if line is None:
            raise KeyError(dag_id)
        return line

    def __iter__(self) -> Iterator[str]:
        return (dag_id for dag_id in self._paths if dag_id in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, dag_id: object) -> bool:
        relative = self._paths.get(dag_id) if isinstance(dag_id, str) else None
        return relative is not None and dag_id in self._defined(relative)

    def __repr__(self) -> str:
        return f"_Lines({dict(self)!r})"


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _definitions(tree: ast.AST) -> dict[str, int]:
    defined: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node) == "DAG":
            keyword = next((k.value for k in node.keywords if k.arg == "dag_id"), None)
            dag_id = _literal(keyword) or (_literal(node.args[0]) if node.args else None)
            if dag_id:
                defined.setdefault(dag_id, node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                kind = _name(decorator)
                if kind not in ("dag", "asset"):  # @asset: a one-task DAG named as the function
                    continue
                dag_id = node.name
                if isinstance(decorator, ast.Call):
                    key = "dag_id" if kind == "dag" else "name"
                    keyword = next((k.value for k in decorator.keywords if k.arg == key), None)
                    first = decorator.args[0] if decorator.args and kind == "dag" else None
                    dag_id = _literal(keyword) or _literal(first) or dag_id
                defined.setdefault(dag_id, decorator.lineno)
    return defined
