"""Sinks that keep ``latest.json`` and ``history/``: a local directory, or object storage.

Layout::

    <root>/latest.json                               the newest document stored whole: the baseline
    <root>/history/<capturedAt>-<fingerprint>.json   one per change of fingerprint

An unchanged fingerprint writes nothing and is reported as unchanged. A document over the
snapshot cap goes to history without datasets and lineage, and ``latest.json`` (the baseline
for coverage and drift) is left as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from airflow_provider_coremodels.atomic import write_atomic
from airflow_provider_coremodels.core.document import Document, encode, for_storage
from airflow_provider_coremodels.errors import SinkError
from airflow_provider_coremodels.sinks.base import Sink, SinkResult
from airflow_provider_coremodels.sinks.layout import HISTORY, LATEST, history_name

log = logging.getLogger(__name__)


class DirectorySink(Sink):
    """The layout over any path-like root with ``/``, ``read_bytes``, ``write_bytes`` and ``mkdir``."""

    #: What the store raises when it fails: reported as a SinkError naming the sink.
    store_errors: tuple[type[Exception], ...] = (OSError,)

    def __init__(self, root: Any, uri: str) -> None:
        self.root = root
        self.uri = uri

    def read_baseline(self) -> bytes | None:
        try:
            return self._read(self.root / LATEST)
        except FileNotFoundError:
            return None
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
        fingerprint = document["fingerprint"]
        if _fingerprint_of(self.read_baseline()) == fingerprint:
            log.info("sink %s: fingerprint %s unchanged; nothing written", self.uri, fingerprint)
            return SinkResult(self.uri, unchanged=True)
        stored = for_storage(document)
        data = encode(stored)
        history = self.root / HISTORY
        self._mkdir(history)
        entry = history / history_name(document)
        self._write(entry, data)  # history first: latest.json always has its twin in history
        written = [str(entry)]
        replaced = stored is document  # over the cap: the baseline is kept, not replaced
        if replaced:
            self._write(self.root / LATEST, data)
            written.append(str(self.root / LATEST))
        return SinkResult(self.uri, unchanged=False, written=written, baseline_replaced=replaced)

    # The storage operations, overridden where a store can do better.

    def _read(self, path: Any) -> bytes:
        data: bytes = path.read_bytes()
        return data

    def _write(self, path: Any, data: bytes) -> None:
        path.write_bytes(data)

    def _mkdir(self, path: Any) -> None:
        path.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        yield


class FileSink(DirectorySink):
    """A local directory: atomic writes (temporary file, fsync, rename) under an exclusive lock."""

    def __init__(self, root: str | os.PathLike[str], uri: str | None = None) -> None:
        super().__init__(Path(root), uri or str(root))

    def _write(self, path: Any, data: bytes) -> None:
        write_atomic(path, data)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Two exports into one directory take turns: read baseline, compare, write."""
        self._mkdir(self.root)
        with open(self.root / ".lock", "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                self._sweep()
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def _sweep(self) -> None:
        """Remove temporary files a killed writer left behind: under the lock, none is in use."""
        for folder in (self.root, self.root / HISTORY):
            for stale in folder.glob(".*.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
                    log.info("sink %s: removed %s, left by an interrupted write", self.uri, stale.name)


class ObjectStorageSink(DirectorySink):
    """Object storage through Airflow's ObjectStoragePath (``s3://``, ``gs://``, ...).

    An object store's PUT replaces an object whole, so readers never see a partial
    ``latest.json``; there is no lock, so of two concurrent exports the last one wins. There
    are no directories to make either, and making one could create a mistyped bucket: a
    missing bucket is an error. Store clients raise their own exception types (botocore's
    are not OSErrors), so any failure of the store becomes a SinkError.
    """

    store_errors = (Exception,)

    def __init__(self, uri: str, conn_id: str | None = None) -> None:
        from airflow.sdk import ObjectStoragePath

        super().__init__(ObjectStoragePath(uri, conn_id=conn_id), uri)

    def _mkdir(self, path: Any) -> None:
        return None


def _fingerprint_of(data: bytes | None) -> str | None:
    """The fingerprint of a stored document, read without decoding the whole estate model."""
    if data is None:
        return None
    try:
        value = json.loads(data).get("fingerprint")
    except (ValueError, AttributeError, RecursionError):
        return None
    return value if isinstance(value, str) else None
