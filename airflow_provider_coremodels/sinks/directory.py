"""Sinks that keep ``latest.json`` and ``history/``: a local directory, or object storage.

Layout::

    <root>/latest.json                               the newest document stored whole: the baseline
    <root>/history/<capturedAt>-<fingerprint>.json   one per change of fingerprint or findings

An unchanged fingerprint with unchanged findings writes nothing and is reported as unchanged;
the same fingerprint with other findings (a waiver added or expired, an asset gone stale) is
stored again, so ``latest.json`` never shows findings that no longer hold. A document over the
snapshot cap goes to history without datasets and lineage, and ``latest.json`` (the baseline
for coverage and drift) is left as it was. With a ``Retention`` rule, every push then removes the
history entries the rule no longer keeps (never the newest one, nor ``latest.json``'s twin).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import stat
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.reading.freshness import parse_time
from airflow_provider_coremodels.core.snapshots.document import (
    Document,
    decode_stored,
    encode,
    for_storage,
    stored_version,
)
from airflow_provider_coremodels.core.snapshots.history import summarize
from airflow_provider_coremodels.errors import SinkError, SnapshotDocumentError
from airflow_provider_coremodels.io.atomic import TEMPORARY, write_atomic_at
from airflow_provider_coremodels.io.input_files import Unreadable, read_limited
from airflow_provider_coremodels.redaction import scrubbed_logger
from airflow_provider_coremodels.sinks.base import Sink, SinkResult
from airflow_provider_coremodels.sinks.history import Retention, fresh, twin_of
from airflow_provider_coremodels.sinks.layout import (
    HISTORY,
    HISTORY_ENTRY,
    LATEST,
    history_name,
    newest_first,
)

log = scrubbed_logger(__name__)

LOCK = ".lock"
_SYMLINK = "is a symbolic link; the file sink writes only into real directories"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class DirectorySink(Sink):
    """The layout over any path-like root with ``/``, ``read_bytes``, ``write_bytes`` and ``mkdir``."""

    #: What the store raises when it fails: reported as a SinkError naming the sink.
    store_errors: tuple[type[Exception], ...] = (OSError,)

    def __init__(self, root: Any, uri: str, *, retention: Retention | None = None) -> None:
        self.root = root
        self.uri = uri
        self.retention = retention or Retention()

    def read_baseline(self) -> bytes | None:
        """The stored ``latest.json``, within the bound every stored document is read within."""
        try:
            return self._read(self.root / LATEST)
        except FileNotFoundError:
            return None
        except Unreadable as exc:
            raise SinkError(f"sink {self.uri}: {LATEST} {exc}") from None
        except self.store_errors as exc:
            raise SinkError(f"sink {self.uri}: cannot read {LATEST}: {exc}") from None

    def push(self, document: Document) -> SinkResult:
        try:
            with self._locked():
                return self._push(document)
        except SinkError:
            raise
        except self.store_errors as exc:
            raise SinkError(f"sink {self.uri}: {exc}") from None

    def _push(self, document: Document) -> SinkResult:
        stored_doc = _stored(self.read_baseline())
        held = _version_of(stored_doc)
        result = self._store(document, stored_doc, held)
        if not self.retention.active:
            return result
        # latest.json's twin: the entry just written when it replaced latest.json, else the one
        # holding what latest.json held before (and still holds)
        twin = Path(result.written[0]).name if result.baseline_replaced else None
        removed = self._retain(document, twin, held)
        return dataclasses.replace(result, removed=removed) if removed else result

    def _store(self, document: Document, stored_doc: dict[str, Any] | None, held: str | None) -> SinkResult:
        fingerprint = document["fingerprint"]
        if held == stored_version(document):
            if _updates(stored_doc) != _updates(document) and document.get("snapshotStored", True):
                # Same estate, same findings, newer asset updates: latest.json learns them (its
                # re-audit judges freshness by them), and history, which follows changes, does not.
                self._write(self.root / LATEST, encode(document))
                log.info(
                    "sink %s: fingerprint %s unchanged; latest asset updates refreshed", self.uri, fingerprint
                )
                return SinkResult(self.uri, unchanged=True, written=[str(self.root / LATEST)])
            log.info("sink %s: fingerprint %s and findings unchanged; nothing written", self.uri, fingerprint)
            return SinkResult(self.uri, unchanged=True)
        findings_changed = held is not None and held.partition("-")[0] == fingerprint
        stored = for_storage(document)
        data = encode(stored)
        history = self.root / HISTORY
        self._mkdir(history)
        entry = history / history_name(document, findings_changed=findings_changed)
        self._write(entry, data)  # history first: latest.json always has its twin in history
        written = [str(entry)]
        replaced = stored is document  # over the cap: the baseline is kept, not replaced
        if replaced:
            self._write(self.root / LATEST, data)
            written.append(str(self.root / LATEST))
        return SinkResult(
            self.uri,
            unchanged=False,
            written=written,
            baseline_replaced=replaced,
            findings_changed=findings_changed,
        )

    def _retain(self, document: Document, twin: str | None, held: str | None) -> list[str]:
        """Remove the history entries the retention rule no longer keeps; what was removed.

        Measured from the pushed document's capture time (a re-run judges as the first run did).
        An entry that cannot be removed is a warning, not a failed push: the document is stored.
        """
        names = self._history_names()
        if twin is None and held is not None:
            estate = f"-{held.partition('-')[0]}"  # only the entries of latest.json's estate may be it
            twin = twin_of(newest_first(n for n in names if estate in n), held, self._entry_version)
        captured = (document.get("state") or {}).get("capturedAt")
        try:
            now = parse_time(captured) if isinstance(captured, str) else datetime.now(timezone.utc)
        except ValueError:
            now = datetime.now(timezone.utc)
        removed = []
        for name in self.retention.plan(names, protect={twin} if twin else set(), now=now):
            try:
                if self._remove_entry(name):
                    removed.append(name)
            except self.store_errors as exc:
                log.warning("sink %s: retention could not remove %s/%s: %s", self.uri, HISTORY, name, exc)
        if removed:
            log.info(
                "sink %s: removed %d history entr%s (%s): %s",
                self.uri,
                len(removed),
                "y" if len(removed) == 1 else "ies",
                self.retention.said(),
                ", ".join(removed),
            )
        return [self._entry_location(name) for name in removed]

    def _entry_location(self, name: str) -> str:
        """Where a history entry is, as the sink's URI names it (an object-storage path's ``str``
        would carry the connection id before its bucket)."""
        return f"{self.uri.rstrip('/')}/{HISTORY}/{name}"

    def _entry_version(self, name: str) -> str | None:
        """``<fingerprint>-<findings digest>`` of a history entry stored whole; None if it is not one."""
        unusable: tuple[type[Exception], ...] = (
            Unreadable,
            SnapshotDocumentError,
            SinkError,
            *self.store_errors,
        )
        try:
            summary = summarize(self._read_entry(name))
        except unusable:
            return None
        return summary.version if summary.snapshot_stored else None

    # The storage operations, overridden where a store can do better.

    def _history_names(self) -> list[str]:
        """The names of the history entries there are (those ``HISTORY_ENTRY`` matches)."""
        try:
            return [p.name for p in fresh(self.root / HISTORY).iterdir() if HISTORY_ENTRY.match(p.name)]
        except FileNotFoundError:
            return []

    def _read_entry(self, name: str) -> bytes:
        return self._read(self.root / HISTORY / name)

    def _remove_entry(self, name: str) -> bool:
        with contextlib.suppress(FileNotFoundError):
            (self.root / HISTORY / name).unlink()
        return True

    def _read(self, path: Any) -> bytes:
        size = getattr(path.stat(), "st_size", None)
        with path.open("rb") as handle:
            return read_limited(handle, size, defaults.MAX_DOCUMENT_BYTES)

    def _write(self, path: Any, data: bytes) -> None:
        path.write_bytes(data)

    def _mkdir(self, path: Any) -> None:
        path.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        yield


class FileSink(DirectorySink):
    """A local directory: atomic writes (temporary file, fsync, rename) under an exclusive lock.

    The root may itself be a symlink (whoever names the sink chooses it), but nothing in it is
    followed: a symlinked ``history/``, ``.lock``, ``latest.json`` or temporary file is refused,
    and ``history/`` is written and swept through a descriptor opened without following links,
    so nothing outside the sink's own files is written or removed.
    """

    def __init__(
        self, root: str | os.PathLike[str], uri: str | None = None, *, retention: Retention | None = None
    ) -> None:
        super().__init__(Path(root), uri or str(root), retention=retention)
        self._dirs: dict[Path, int] = {}  # the root and history/, open while the lock is held

    def _read(self, path: Any) -> bytes:
        fd = self._open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the read
        with os.fdopen(fd, "rb") as handle:
            return read_limited(handle, os.fstat(fd).st_size, defaults.MAX_DOCUMENT_BYTES)

    def _write(self, path: Any, data: bytes) -> None:
        try:
            write_atomic_at(self._dirs[path.parent], path.name, data)
        except OSError as exc:
            raise _naming(exc, path) from None

    def _mkdir(self, path: Any) -> None:
        if path == self.root / HISTORY:
            self._open_history(create=True)
        else:
            super()._mkdir(path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Two exports into one directory take turns: read baseline, compare, write."""
        self._mkdir(self.root)
        root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        try:
            lock_fd = self._open(self.root / LOCK, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, dir_fd=root_fd)
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX)
                try:
                    self._dirs[self.root] = root_fd
                    self._open_history(create=False)
                    self._sweep()
                    yield
                finally:
                    for path, fd in self._dirs.items():
                        if path != self.root:
                            os.close(fd)
                    self._dirs.clear()
                    fcntl.flock(lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(lock_fd)
        finally:
            os.close(root_fd)

    def _open_history(self, *, create: bool) -> None:
        """Open ``history/`` (making it when ``create``), refusing a symlink; a missing one is skipped."""
        history = self.root / HISTORY
        if history in self._dirs:
            return
        root_fd = self._dirs[self.root]
        if create:
            try:
                os.mkdir(HISTORY, dir_fd=root_fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _naming(exc, history) from None
        try:
            self._dirs[history] = self._open(history, os.O_RDONLY | os.O_DIRECTORY, dir_fd=root_fd)
        except FileNotFoundError:
            if create:
                raise

    def _open(self, path: Path, flags: int, *, dir_fd: int | None = None) -> int:
        """Open ``path`` (its name relative to ``dir_fd`` if given) without following a symlink."""
        name = path.name if dir_fd is not None else path
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | _CLOEXEC, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
                    raise SinkError(f"sink {self.uri}: {path} {_SYMLINK}") from None
            raise _naming(exc, path) from None
        if not flags & os.O_DIRECTORY and not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)  # a FIFO, a device, a directory: never read from or locked
            raise SinkError(f"sink {self.uri}: {path} is not a regular file")
        return fd

    def _history_names(self) -> list[str]:
        """Regular files only: a symlink or anything else by an entry's name is no entry the sink
        wrote, and retention leaves it where it is (with a warning)."""
        dir_fd = self._dirs.get(self.root / HISTORY)
        if dir_fd is None:
            return []
        names = []
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if not HISTORY_ENTRY.match(entry.name):
                    continue
                if entry.is_file(follow_symlinks=False):
                    names.append(entry.name)
                else:
                    log.warning(
                        "sink %s: %s/%s is not a regular file; retention leaves it",
                        self.uri,
                        HISTORY,
                        entry.name,
                    )
        return names

    def _entry_location(self, name: str) -> str:
        return str(self.root / HISTORY / name)

    def _read_entry(self, name: str) -> bytes:
        history = self.root / HISTORY
        fd = self._open(history / name, os.O_RDONLY | os.O_NONBLOCK, dir_fd=self._dirs[history])
        with os.fdopen(fd, "rb") as handle:
            return read_limited(handle, os.fstat(fd).st_size, defaults.MAX_DOCUMENT_BYTES)

    def _remove_entry(self, name: str) -> bool:
        """Unlink one entry through the history descriptor; never a symlink or a non-file."""
        dir_fd = self._dirs[self.root / HISTORY]
        try:
            if not stat.S_ISREG(os.lstat(name, dir_fd=dir_fd).st_mode):
                return False
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            return False
        return True

    def _sweep(self) -> None:
        """Remove temporary files a killed writer left behind: under the lock, none is in use.

        Only names ``write_atomic`` makes are removed, and a symlink by such a name is refused.
        """
        for folder, dir_fd in list(self._dirs.items()):
            with os.scandir(dir_fd) as entries:
                stale = [entry.name for entry in entries if TEMPORARY.fullmatch(entry.name)]
            for name in stale:
                with contextlib.suppress(FileNotFoundError):
                    kind = os.lstat(name, dir_fd=dir_fd).st_mode
                    if stat.S_ISLNK(kind):
                        raise SinkError(f"sink {self.uri}: {folder / name} {_SYMLINK}")
                    if stat.S_ISREG(kind):
                        os.unlink(name, dir_fd=dir_fd)
                        log.info("sink %s: removed %s, left by an interrupted write", self.uri, name)


class ObjectStorageSink(DirectorySink):
    """Object storage through Airflow's ObjectStoragePath (``s3://``, ``gs://``, ...).

    An object store's PUT replaces an object whole, so readers never see a partial
    ``latest.json``; there is no lock, so of two concurrent exports the last one wins. There
    are no directories to make either, and making one could create a mistyped bucket: a
    missing bucket is an error. Store clients raise their own exception types (botocore's
    are not OSErrors), so any failure of the store becomes a SinkError.
    """

    store_errors = (Exception,)

    def __init__(self, uri: str, conn_id: str | None = None, *, retention: Retention | None = None) -> None:
        from airflow.sdk import ObjectStoragePath

        super().__init__(ObjectStoragePath(uri, conn_id=conn_id), uri, retention=retention)

    def resolve(self) -> None:
        """Attach the store's filesystem now: a missing provider or package fails here, before any
        capture (ImportError or ValueError), not at the first read."""
        self.root.fs  # noqa: B018 - the property attaches the filesystem

    def _mkdir(self, path: Any) -> None:
        return None


def _naming(exc: OSError, path: Path) -> OSError:
    """The same error naming the whole ``path``, not the name relative to a directory descriptor."""
    if exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))  # OSError() picks the subclass, e.g. FileNotFoundError


def _stored(data: bytes | None) -> dict[str, Any] | None:
    """The stored latest document, decoded by the one rule every reader of a stored document uses
    (``decode_stored``); None when there is none or it cannot be read (it is then replaced)."""
    if data is None:
        return None
    try:
        return decode_stored(data)
    except SnapshotDocumentError:
        return None


def _version_of(stored: dict[str, Any] | None) -> str | None:
    """``<fingerprint>-<findings digest>`` of a stored document (``stored_version``); None when
    there is none or it is not a document."""
    if stored is None or not isinstance(stored.get("fingerprint"), str):
        return None
    if not isinstance(stored.get("findings", []), list):
        return None
    return stored_version(stored)


def _updates(document: dict[str, Any] | None) -> Any:
    """The newest update of each asset a document knows (its ``freshness`` part)."""
    part = document.get("freshness") if isinstance(document, dict) else None
    return part.get("assetUpdates") if isinstance(part, dict) else None
