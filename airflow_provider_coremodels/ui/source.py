"""Find and read the snapshot the page shows: a file sink's directory, or one document file.

No Airflow here: the glue passes in the configured location and turns the outcome into a
response. Every way this can go wrong becomes a ``Problem`` that says what is wrong and how
to fix it, because the person reading it is looking at a web page, not a stack trace.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.document import load_document
from airflow_provider_coremodels.errors import SnapshotDocumentError
from airflow_provider_coremodels.input_files import Unreadable, read_bounded
from airflow_provider_coremodels.sinks.layout import HISTORY, HISTORY_ENTRY, LATEST

#: The configuration the page reads: ``[coremodels] ui_snapshot_dir``.
CONFIG_SECTION = "coremodels"
CONFIG_OPTION = "ui_snapshot_dir"
CONFIG_ENV = "AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR"


_FIX_EXPORT = (
    "Run the export with a file sink into that directory — the coremodels_export DAG "
    "(CoreModelsExportOperator with sinks=['/path/to/dir']) or "
    "`airflow coremodels export --sink /path/to/dir` — "
    "and reload this page."
)


@dataclass(frozen=True)
class Problem:
    """Why there is nothing to show; ``status`` is 200 for a state that is not an error yet."""

    title: str
    detail: str
    fix: str
    status: int = 200


@dataclass(frozen=True)
class Snapshot:
    """A snapshot document read from ``path``; ``note`` explains a choice the reader should know."""

    document: dict[str, Any]
    path: Path
    raw: bytes
    note: str | None = None


def _configure_hint(location: str) -> str:
    return (
        f"Set [{CONFIG_SECTION}] {CONFIG_OPTION} in airflow.cfg (or the environment variable "
        f"{CONFIG_ENV}) on the API server to the directory a file sink of the export writes to "
        f"(it holds {LATEST} and {HISTORY}/), or to one snapshot document (.json), and restart "
        f"the API server.{' It is now ' + repr(location) + '.' if location else ''}"
    )


def read_snapshot(location: str) -> Snapshot | Problem:
    """The snapshot at ``location`` (the configured option, possibly empty), or why there is none.

    A directory shows its ``latest.json``, unless ``history/`` holds a newer document: that is
    a snapshot over the cap, which never replaces ``latest.json`` but is still the newest one.
    """
    location = location.strip()
    if not location:
        return Problem(
            "The CoreModels page is not configured",
            "No snapshot location is set, so there is nothing to show yet.",
            _configure_hint(location),
        )
    path = Path(location).expanduser()
    try:
        if path.is_dir():
            return _read_directory(path)
        if path.is_file():
            return _read_file(path)
    except OSError as exc:  # e.g. a directory the API server may not list
        return _unreadable(path, exc)
    if path.suffix == ".json":
        return Problem(
            "The snapshot file does not exist",
            f"{path} does not exist (or the API server cannot see it).",
            _configure_hint(location) + " " + _FIX_EXPORT,
        )
    return Problem(
        "No snapshot yet",
        f"The snapshot directory {path} does not exist yet: no export has written to it.",
        _FIX_EXPORT + f" If the export writes somewhere else, point {CONFIG_OPTION} there.",
    )


def _read_directory(root: Path) -> Snapshot | Problem:
    latest = root / LATEST
    newest = _newest_history_entry(root / HISTORY)
    if not latest.is_file():
        if newest is None:
            return Problem(
                "No snapshot yet",
                f"{root} has no {LATEST} and no {HISTORY}/ entry: no export has written to it yet.",
                _FIX_EXPORT,
            )
        return _read_file(
            newest,
            note=f"{root / LATEST} does not exist: showing the newest entry of {HISTORY}/ instead.",
        )
    snapshot = _read_file(latest)
    if isinstance(snapshot, Problem) or newest is None:
        return snapshot
    match = HISTORY_ENTRY.match(newest.name)
    assert match is not None  # _newest_history_entry only returns names that match
    if match["fingerprint"] != snapshot.document.get("fingerprint") and match["stamp"] > _stamp(
        snapshot.document
    ):
        newer = _read_file(
            newest,
            note=(
                f"This is the newest snapshot, from {HISTORY}/: it was stored without datasets and "
                f"lineage, so it did not replace {LATEST} (fingerprint "
                f"{snapshot.document.get('fingerprint')}), which stays the baseline."
            ),
        )
        # Only a document over the cap stays out of latest.json: a newer-looking entry that holds
        # its datasets (a capture time in the future, say) is no reason to show it instead.
        if isinstance(newer, Snapshot) and newer.document.get("snapshotStored") is False:
            return newer
    return snapshot


def _stamp(document: dict[str, Any]) -> str:
    state = document.get("state")
    captured_at = state.get("capturedAt") if isinstance(state, dict) else None
    return str(captured_at or "").replace("-", "").replace(":", "")


def _newest_history_entry(history: Path) -> Path | None:
    try:
        names = [entry.name for entry in history.iterdir() if HISTORY_ENTRY.match(entry.name)]
    except OSError:
        return None  # no history (yet): latest.json alone is enough
    return history / max(names) if names else None


def _unreadable(path: Path, exc: OSError) -> Problem:
    return Problem(
        "The snapshot cannot be read",
        f"{path}: {exc.strerror or exc}.",
        "Make the snapshot directory and its files readable by the user the Airflow API server runs as.",
        status=500,
    )


# One parsed document, kept while its file is unchanged: the page reads it on every request.
_cache_lock = threading.Lock()
_cache: dict[Path, tuple[tuple[int, int], Snapshot]] = {}


def _read_file(path: Path, note: str | None = None) -> Snapshot | Problem:
    try:
        stat = path.stat()
        key = (stat.st_mtime_ns, stat.st_size)
        with _cache_lock:
            cached = _cache.get(path)
        if cached is not None and cached[0] == key:
            snapshot = cached[1]
        else:
            try:  # the bound every stored document is read within
                raw = read_bounded(str(path), defaults.MAX_DOCUMENT_BYTES)
            except Unreadable as exc:
                return Problem(
                    "The snapshot cannot be read",
                    f"{path} {exc}.",
                    f"Point {CONFIG_OPTION} at the directory (or a .json file) a CoreModels file sink wrote.",
                    status=500,
                )
            problem = _validate(path, raw)
            if problem is not None:
                return problem
            snapshot = Snapshot(json.loads(raw), path, raw)
            with _cache_lock:
                _cache.clear()
                _cache[path] = (key, snapshot)
    except OSError as exc:
        return _unreadable(path, exc)
    return Snapshot(snapshot.document, snapshot.path, snapshot.raw, note) if note else snapshot


def _validate(path: Path, raw: bytes) -> Problem | None:
    """The same checks ``--snapshot`` and ``--baseline`` make, so a page never half-renders."""
    try:
        load_document(raw)
    except SnapshotDocumentError as exc:
        return Problem(
            "The snapshot is not a CoreModels snapshot document",
            f"{path} {exc.problem}.",
            f"Point {CONFIG_OPTION} at the directory (or a .json file) a CoreModels file sink wrote; "
            "if it is one, the file was damaged: the next export that changes the estate replaces it.",
            status=500,
        )
    return None
