"""Broken files and stale DAGs: the DAGs the API still lists that do not run.

Two behaviours of Airflow make its API's answer more than the estate that runs:

- A DAG file that stops importing (a bad deploy) is listed by ``GET /importErrors``. Airflow 3
  marks the DAGs that last parsed from it stale (``is_stale``); Airflow 2 keeps them active.
  Either way they do not run until the file imports again, while Airflow goes on naming them in
  the assets' references (until some other file is deleted: then it clears them).
- A DAG whose file was deleted, or no longer defines it, is stale (``is_stale`` in Airflow 3,
  ``is_active: false`` in Airflow 2), and Airflow keeps some of its references: its task
  inlets for good, its producing tasks for a while.

The capture lists the stale DAGs with the others (``exclude_stale=false``, ``only_active=false``)
and the import errors, riding in the dags artifact as ``import_errors``. The parse keeps a
broken file's DAGs as last parsed (a bad deploy is not the DAGs removed), keeps the other stale
DAGs out (they are removed), and counts the references of neither as lineage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_coremodels.core.estate.model import BrokenFile, Lossiness
from airflow_provider_coremodels.core.estate.text import text_value
from airflow_provider_coremodels.redaction import scrub_credentials

#: What the capture adds to the dags artifact when its DAG list includes the stale DAGs: without
#: it, an artifact whose DAGs are all live may still lack the stale ones (a plain ``GET /dags``).
INCLUDES_STALE = "includes_stale"
#: An import error's text is shown to this many characters: a first line can be a whole file.
MAX_ERROR_CHARS = 300
#: How much of the chosen line is scrubbed of credentials: every credential shape that starts in
#: the shown part ends inside it (or is scrubbed to its end), and a hostile line costs no more.
_SCRUBBED_CHARS = 20 * MAX_ERROR_CHARS

_UNLISTED = (
    "the error is not listed (GET /importErrors shows it only to users who may read every DAG in the file)"
)
_UNKNOWN = "import errors unknown:"
_TRACEBACK = "Traceback (most recent call last):"
_CHAIN_LINES = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)


def is_stale(raw: Mapping[str, Any]) -> bool:
    """Whether the DAG list marks a DAG stale: ``is_stale`` (Airflow 3), ``is_active: false`` (2)."""
    return raw.get("is_stale") is True or raw.get("is_active") is False


def error_line(text: str) -> str:
    """The line that says what went wrong, bounded and scrubbed of credentials: for a Python
    traceback the first line of its last exception (``NameError: name 'x' is not defined``), for
    any other text its first line.

    An import error's line often quotes what broke (``password=...``, a connection URI, a key): it
    is scrubbed here (``redaction.scrub_credentials``), before the cut and before anything else
    reads it, so every door that reads import errors (the REST capture, a DAG folder's parse) and
    every view and sink after it get the scrubbed line; the file and the exception type stay.
    """
    lines = text.splitlines()
    chosen = None
    if _TRACEBACK in lines:
        start = len(lines) - 1 - lines[::-1].index(_TRACEBACK)
        chosen = next(
            (
                line
                for line in lines[start + 1 :]
                if line.strip() and not line[:1].isspace() and line not in _CHAIN_LINES
            ),
            None,
        )
    if chosen is None:
        chosen = next((line for line in lines if line.strip()), "")
    chosen = scrub_credentials(chosen.strip()[:_SCRUBBED_CHARS]) or "no error text"
    return chosen if len(chosen) <= MAX_ERROR_CHARS else chosen[: MAX_ERROR_CHARS - 1] + "…"


def file_key(bundle: str | None, path: str) -> str:
    """How findings name a file: ``<bundle>/<path>``, or the path where no bundle is known."""
    return f"{bundle}/{path.lstrip('/')}" if bundle else path


def read_import_errors(
    doc: Any, dags: Mapping[str, Mapping[str, Any]], records: list[Lossiness]
) -> tuple[list[BrokenFile], dict[str, str]]:
    """The broken files of the dags artifact, and the file each of their DAGs last parsed from.

    ``dags`` are all the DAG objects listed, stale ones included. A file is matched to its DAGs by
    bundle and relative path (Airflow 3), else by the absolute path (Airflow 2 gives no bundle). A
    DAG that says it has import errors (``has_import_errors``, Airflow 3) but whose file the list
    lacks (Airflow shows an error only to a user who may read every DAG in the file) is broken too.
    """
    entries = doc.get("import_errors") if isinstance(doc, dict) else None
    said = any(r.artifact == "dags" and r.message.startswith(_UNKNOWN) for r in records)
    if entries is None and not said:  # the capture says why where it could not list them
        records.append(
            Lossiness(
                "dags",
                f"{_UNKNOWN} the dags artifact carries no import_errors (GET /importErrors), "
                "so a DAG file that does not import is not reported",
            )
        )
    if entries is None:
        entries = []
    elif not isinstance(entries, list):
        records.append(Lossiness("dags", "import_errors of the dags artifact is not a list; ignored"))
        entries = []
    by_place: dict[tuple[str | None, str], list[str]] = {}
    by_location: dict[str, list[str]] = {}
    roots: dict[str, str] = {}  # bundle -> where its files lie, read off its DAGs
    for dag_id, raw in dags.items():
        relative, location = text_value(raw.get("relative_fileloc")), text_value(raw.get("fileloc"))
        bundle = text_value(raw.get("bundle_name"))
        if relative:
            by_place.setdefault((bundle, relative), []).append(dag_id)
        if location:
            by_location.setdefault(location, []).append(dag_id)
        if bundle and relative and location and location.endswith("/" + relative.lstrip("/")):
            roots.setdefault(bundle, location[: -len(relative.lstrip("/"))])
    files: dict[str, BrokenFile] = {}
    file_of: dict[str, str] = {}
    for index, entry in enumerate(entries):
        path = text_value(entry.get("filename")) if isinstance(entry, dict) else None
        if not path:
            records.append(Lossiness("dags", f"import_errors entry {index} has no filename; skipped"))
            continue
        bundle = text_value(entry.get("bundle_name"))
        root = roots.get(bundle or "")
        if root and path.startswith(root):  # Airflow 3.0 gives the absolute path beside the bundle
            path = path[len(root) :]
        key = file_key(bundle, path)
        if key in files:
            continue
        trace = entry.get("stack_trace", entry.get("stacktrace"))
        dag_ids = (
            by_place.get((bundle, path)) or by_location.get(text_value(entry.get("filename")) or path) or []
        )
        files[key] = BrokenFile(
            key, path, error_line(trace) if isinstance(trace, str) else "no error text", bundle, _ids(dag_ids)
        )
        file_of.update(dict.fromkeys(dag_ids, key))
    unlisted: dict[str, list[str]] = {}  # a file's DAGs gathered first, the file built once
    for dag_id, raw in dags.items():
        if raw.get("has_import_errors") is not True or dag_id in file_of:
            continue
        bundle, relative = text_value(raw.get("bundle_name")), text_value(raw.get("relative_fileloc"))
        path = relative or text_value(raw.get("fileloc")) or dag_id
        key = file_key(bundle if relative else None, path)
        if key not in files:
            files[key] = BrokenFile(key, path, _UNLISTED, bundle if relative else None)
        unlisted.setdefault(key, []).append(dag_id)
        file_of[dag_id] = key
    for key, dag_ids in unlisted.items():
        held = files[key]
        files[key] = BrokenFile(held.file, held.path, held.error, held.bundle, _ids([*held.dags, *dag_ids]))
    return sorted(files.values(), key=lambda f: f.file), file_of


def with_outlets(
    broken: Iterable[BrokenFile], outlets: Mapping[str, Iterable[str]]
) -> tuple[BrokenFile, ...]:
    """The broken files, each knowing the assets its DAGs were last known to produce, by DAG."""
    out = []
    for file in broken:
        known = {(dag_id, uri) for dag_id in file.dags for uri in outlets.get(dag_id, ())}
        known.update(file.outlets)
        out.append(BrokenFile(file.file, file.path, file.error, file.bundle, file.dags, tuple(sorted(known))))
    return tuple(out)


def _ids(dag_ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(dag_ids)))
