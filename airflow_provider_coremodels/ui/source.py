"""Find and read the snapshot the page shows: a sink's directory (local or in object storage),
or one document file.

No Airflow here: the glue passes in the configured location (or, for object storage, the
store's path object, opened with its connection) and turns the outcome into a response. Every
way this can go wrong becomes a ``Problem`` that says what is wrong and how to fix it, because
the person reading it is looking at a web page, not a stack trace. Every document is read
within the one bound every stored document is read within.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.snapshots.document import load_document, stored_version
from airflow_provider_coremodels.core.views.trend import Trend, TrendPoint
from airflow_provider_coremodels.errors import SnapshotDocumentError
from airflow_provider_coremodels.io.input_files import Unreadable, read_bounded, read_limited
from airflow_provider_coremodels.sinks.history import Entry, fresh, list_history, open_history
from airflow_provider_coremodels.sinks.layout import HISTORY, HISTORY_ENTRY, LATEST, newest_first, stamp_text

#: The configuration the page reads: ``[coremodels] ui_snapshot_dir`` (a path or an
#: object-storage URI) and ``ui_snapshot_conn_id`` (the connection of that store).
CONFIG_SECTION = "coremodels"
CONFIG_OPTION = "ui_snapshot_dir"
CONFIG_ENV = "AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR"
CONN_OPTION = "ui_snapshot_conn_id"
CONN_ENV = "AIRFLOW__COREMODELS__UI_SNAPSHOT_CONN_ID"


def _fix_export(where: str = "/path/to/dir") -> str:
    return (
        "Run the export with a sink writing there — the coremodels_export DAG "
        f"(CoreModelsExportOperator with sinks=['{where}']) or "
        f"`airflow coremodels export --sink {where}` — "
        "and reload this page."
    )


_FIX_EXPORT = _fix_export()


def shown(path: Any) -> str:
    """Where ``path`` is, as a person names it: an object-storage path's ``str`` carries the
    connection id before its bucket (``s3://conn@bucket/key``), which is no part of the URI."""
    text = str(path)
    conn_id = getattr(path, "conn_id", None)
    return text.replace(f"://{conn_id}@", "://", 1) if conn_id else text


@dataclass(frozen=True)
class Problem:
    """Why there is nothing to show; ``status`` is 200 for a state that is not an error yet."""

    title: str
    detail: str
    fix: str
    status: int = 200


@dataclass(frozen=True)
class Snapshot:
    """A snapshot document read from ``path``; ``note`` explains a choice the reader should know.

    ``root`` is the sink directory it was found in (None for a document named by itself), whose
    ``history/`` the page charts; ``version`` is the document's ``<fingerprint>-<findings digest>``.
    """

    document: dict[str, Any]
    path: Any  # a Path, or an object-storage path: str() of either is its location
    raw: bytes
    note: str | None = None
    root: Any = None
    version: str | None = None

    @property
    def shown(self) -> str:
        """Where it was read from, as a person names it."""
        return shown(self.path)


def _configure_hint(location: str) -> str:
    return (
        f"Set [{CONFIG_SECTION}] {CONFIG_OPTION} in airflow.cfg (or the environment variable "
        f"{CONFIG_ENV}) on the API server to where a sink of the export writes: a directory, or "
        f"an object-storage URI such as s3://bucket/prefix with [{CONFIG_SECTION}] {CONN_OPTION} "
        f"naming its connection (either holds {LATEST} and {HISTORY}/), or to one snapshot "
        f"document (.json), and restart the API server."
        f"{' It is now ' + repr(location) + '.' if location else ''}"
    )


def read_snapshot(location: str, fingerprint: str | None = None) -> Snapshot | Problem:
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
            return _read_directory(path, fingerprint)
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


def read_store(root: Any, fingerprint: str | None = None) -> Snapshot | Problem:
    """The snapshot in the object-storage sink at ``root`` (its path object, opened by the glue
    with the store's connection), or why there is none; a store that fails is a Problem naming it."""
    try:
        return _read_directory(root, fingerprint)
    except Exception as exc:  # each store client raises its own errors (botocore's are no OSError)
        if isinstance(exc, FileNotFoundError):
            return Problem(
                "No snapshot yet",
                f"{shown(root)} holds no {LATEST} and no {HISTORY}/ entry, or its bucket does not exist.",
                _fix_export(shown(root)),
            )
        return Problem(
            "The snapshot store cannot be read",
            f"{shown(root)}: {_one_line(exc)}.",
            f"Check that [{CONFIG_SECTION}] {CONN_OPTION} names a connection the API server can use, "
            "with read access to that bucket and prefix, and that the store is reachable from it.",
            status=502,
        )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "no message"
    return f"{type(exc).__name__}: {text[:300]}"


def _read_directory(root: Any, fingerprint: str | None = None) -> Snapshot | Problem:
    """The directory's snapshot; with ``fingerprint`` (an export task's link), the one stored with
    that fingerprint, when it is not the latest: the newest history entry of that fingerprint."""
    found = _latest_of(root)
    if not fingerprint or isinstance(found, Problem) or found.document.get("fingerprint") == fingerprint:
        return found
    linked_names = [name for name in _history_names(root / HISTORY) if _fingerprint_of(name) == fingerprint]
    names = newest_first(linked_names, limit=1)
    if not names:
        note = (
            f"No stored snapshot has the fingerprint {fingerprint} (the link's): history retention "
            f"may have removed it, or it was stored elsewhere. This is the latest one."
        )
        return _with_note(found, note)
    linked = _read_file(root / HISTORY / names[0])
    if isinstance(linked, Problem):
        return linked
    note = (
        f"This is the snapshot with the fingerprint {fingerprint}, from {HISTORY}/, as the export "
        f"task that linked here stored it; the latest is {found.document.get('fingerprint')} "
        "(open the page without ?fingerprint= to see it)."
    )
    return _with_note(linked, note)


def _fingerprint_of(name: str) -> str | None:
    match = HISTORY_ENTRY.match(name)
    return match["fingerprint"] if match else None


def _with_note(snapshot: Snapshot, note: str) -> Snapshot:
    return Snapshot(snapshot.document, snapshot.path, snapshot.raw, note)


def _latest_of(root: Any) -> Snapshot | Problem:
    latest = root / LATEST
    newest = _newest_history_entry(root / HISTORY)
    if not _exists(latest):
        if newest is None:
            return Problem(
                "No snapshot yet",
                f"{shown(root)} has no {LATEST} and no {HISTORY}/ entry: no export has written to it yet.",
                _FIX_EXPORT if isinstance(root, Path) else _fix_export(shown(root)),
            )
        return _read_file(
            newest,
            note=f"{shown(root / LATEST)} does not exist: showing the newest entry of {HISTORY}/ instead.",
            root=root,
        )
    snapshot = _read_file(latest, root=root)
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
            root=root,
        )
        # Only a document over the cap stays out of latest.json: a newer-looking entry that holds
        # its datasets (a capture time in the future, say) is no reason to show it instead.
        if isinstance(newer, Snapshot) and newer.document.get("snapshotStored") is False:
            return newer
    return snapshot


def _exists(path: Any) -> bool:
    """Whether ``path`` exists; unlike ``is_file``, a store that refuses to answer raises (an
    object store's client would otherwise read as "no snapshot yet" what is a denied request)."""
    try:
        path.stat()
    except FileNotFoundError:
        return False
    return True


def _stamp(document: dict[str, Any]) -> str:
    state = document.get("state")
    captured_at = state.get("capturedAt") if isinstance(state, dict) else None
    return str(captured_at or "").replace("-", "").replace(":", "")


def _history_names(history: Any) -> list[str]:
    """The names in ``history/`` (names only: no path object per entry); none without a history."""
    try:
        if isinstance(history, Path):
            return os.listdir(history)
        return [entry.name for entry in fresh(history).iterdir()]
    except OSError:
        return []  # no history (yet): latest.json alone is enough


def _newest_history_entry(history: Any) -> Any:
    names = newest_first(_history_names(history), limit=1)
    return history / names[0] if names else None


def _unreadable(path: Any, exc: OSError) -> Problem:
    return Problem(
        "The snapshot cannot be read",
        f"{shown(path)}: {exc.strerror or exc}.",
        "Make the snapshot directory and its files readable by the user the Airflow API server runs as.",
        status=500,
    )


# One parsed document, kept while its file (or object) is unchanged: the page reads it on every
# request, and a stat (one HEAD request in object storage) is far cheaper than a read and a parse.
_cache_lock = threading.Lock()
_cache: dict[str, tuple[tuple[Any, ...], Snapshot]] = {}


def _version(info: Any) -> tuple[Any, ...]:
    """What changes when a file or an object is replaced: its modification time, size and ETag."""
    mtime = getattr(info, "st_mtime_ns", None) or getattr(info, "st_mtime", None)
    return (mtime, getattr(info, "st_size", None), getattr(info, "ETag", None) or _etag(info))


def _etag(info: Any) -> Any:
    try:  # an object store's stat result carries the store's own metadata, ETag among it
        return info["ETag"]
    except (KeyError, TypeError, IndexError):
        return None


def _read_bytes(path: Any, size: int | None) -> bytes:
    if isinstance(path, Path):  # a local file: regular files only, never a FIFO
        return read_bounded(str(path), defaults.MAX_DOCUMENT_BYTES)
    with path.open("rb") as handle:
        return read_limited(handle, size, defaults.MAX_DOCUMENT_BYTES)


def _read_file(path: Any, note: str | None = None, root: Any = None) -> Snapshot | Problem:
    try:
        info = path.stat()
        key = _version(info)
        with _cache_lock:
            cached = _cache.get(str(path))
        if cached is not None and cached[0] == key and cached[1].root == root:
            snapshot = cached[1]
        else:
            try:  # the bound every stored document is read within
                raw = _read_bytes(path, getattr(info, "st_size", None))
            except Unreadable as exc:
                return Problem(
                    "The snapshot cannot be read",
                    f"{shown(path)} {exc}.",
                    f"Point {CONFIG_OPTION} at the directory (or a .json file) a CoreModels sink wrote.",
                    status=500,
                )
            problem = _validate(path, raw)
            if problem is not None:
                return problem
            document = json.loads(raw)
            snapshot = Snapshot(document, path, raw, root=root, version=_stored_version(document))
            with _cache_lock:
                _cache.clear()
                _cache[str(path)] = (key, snapshot)
    except OSError as exc:
        return _unreadable(path, exc)
    return dataclasses.replace(snapshot, note=note) if note else snapshot


def _stored_version(document: Any) -> str | None:
    try:
        return stored_version(document)
    except (KeyError, TypeError, AttributeError, ValueError):
        return None  # a document load_document accepted, with findings it cannot digest


# -- the chart of the history ---------------------------------------------------------------

#: How many of the newest history entries the page's chart draws.
TREND_ENTRIES = 90

# The chart of each sink, kept while the newest entries and what the page shows are the same.
_trend_lock = threading.Lock()
_trends: dict[str, tuple[Any, Trend]] = {}


def read_trend(snapshot: Snapshot, limit: int = TREND_ENTRIES) -> Trend | None:
    """The open findings of the newest ``limit`` entries of the snapshot's ``history/``; None for a
    document named by itself (no history beside it).

    Each entry is read (within the one bound) and summarized once, and again only when it changes
    (a stat per entry locally; in object storage, where names are written once, only new names).
    The entry the page shows is marked: ``latest.json``'s twin, or the history entry itself.
    """
    root = snapshot.root
    if root is None:
        return None
    location = shown(root)
    reader = open_history(root, location)
    shows_latest = getattr(snapshot.path, "name", None) == LATEST
    try:
        with reader.opened():
            names = newest_first(reader.names(), limit=limit)
            key = (tuple((name, reader.version(name)) for name in names), shows_latest, snapshot.version)
            with _trend_lock:
                cached = _trends.get(location)
            if cached is not None and cached[0] == key:
                return cached[1]
            listing = list_history(
                reader, limit=limit, latest_version=snapshot.version if shows_latest else None
            )
    except Exception as exc:  # a store's own errors, an unreadable directory: the chart says so
        return Trend(problem=f"{location}/{HISTORY}/ cannot be listed: {_one_line(exc)}")
    marked = None if shows_latest else getattr(snapshot.path, "name", None)
    trend = Trend(tuple(_point(e, marked) for e in reversed(listing.entries)), listing.total)
    with _trend_lock:
        _trends[location] = (key, trend)
    return trend


def _point(entry: Entry, marked: str | None) -> TrendPoint:
    summary = entry.summary
    return TrendPoint(
        captured_at=stamp_text(entry.stamp),
        fingerprint=entry.fingerprint,
        open=summary.open if summary else (),
        waived=summary.waived if summary else 0,
        latest=entry.latest or entry.name == marked,
        findings_only=entry.findings_only,
        over_the_cap=entry.over_the_cap,
        problem=entry.problem,
        by_team=summary.by_team if summary else (),
        waived_by_team=summary.waived_by_team if summary else (),
    )


def _validate(path: Any, raw: bytes) -> Problem | None:
    """The same checks ``--snapshot`` and ``--baseline`` make, so a page never half-renders."""
    try:
        load_document(raw)
    except SnapshotDocumentError as exc:
        return Problem(
            "The snapshot is not a CoreModels snapshot document",
            f"{shown(path)} {exc.problem}.",
            f"Point {CONFIG_OPTION} at the directory (or a .json file) a CoreModels sink wrote; "
            "if it is one, the file was damaged: the next export that changes the estate replaces it.",
            status=500,
        )
    return None
