"""Reading the input files named on the command line or given to the operator.

The pure core parses bytes; this is the I/O around it. Every file is read through one bounded
reader that accepts regular files only (never a FIFO that blocks, nor ``/dev/zero``) and stops
at a limit counted in bytes actually read. Every input fails the same way, with the file named
beside the problem: the dags artifact and the documents, waiver and rules files as errors (exit 2),
the tasks and datasets artifacts as lossiness records, since they never fail an audit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import BinaryIO, TypeVar

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core import (
    Baseline,
    Estate,
    Lossiness,
    StoredSnapshot,
    load_document,
)
from airflow_provider_coremodels.core.checks.policy import Policy, parse_rules
from airflow_provider_coremodels.core.checks.waivers import Waiver, parse_waivers
from airflow_provider_coremodels.core.estate.collector import gc_paused
from airflow_provider_coremodels.core.reading.parse import build_estate, decode_artifact
from airflow_provider_coremodels.errors import (
    DagsArtifactError,
    InputError,
    RulesFileError,
    SnapshotDocumentError,
    WaiverFileError,
)

T = TypeVar("T")

#: The name a sink (a directory, object storage) keeps its newest document under: what a path
#: to a sink's directory reads (``read_stored``), and what the sinks write (sinks/layout.py).
LATEST = "latest.json"


class Unreadable(Exception):
    """A file that cannot be read, or is not one this reader accepts; the message says why."""


def read_bounded(
    path: str, max_bytes: int, *, limit_name: str | None = None, follow_links: bool = True
) -> bytes:
    """The bytes of the regular file ``path``; ``Unreadable`` when it is not one or exceeds ``max_bytes``.

    The size is checked twice: on ``stat``, to refuse a large file before a byte of it is read,
    and on the bytes read, since a file may grow (or lie about its size) while it is read.
    ``limit_name`` names the option that sets the limit, for the message. ``follow_links=False``
    refuses a ``path`` that is itself a symbolic link (as the file sink, which wrote it, does).
    """
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_links and os.path.islink(path):
            raise Unreadable("is a symbolic link, which is not followed") from None
        raise Unreadable(f"cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # before a file object: a directory cannot be one
            raise Unreadable("is not a regular file")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        return read_limited(handle, info.st_size, max_bytes, limit_name=limit_name)


def read_limited(
    handle: BinaryIO, size: int | None, max_bytes: int, *, limit_name: str | None = None
) -> bytes:
    """Read an open file whole, within ``max_bytes``: refused at once when its ``size`` (if known)
    is over, and when more than that arrives (a file that grows, or lies about its size). The one
    bound every stored document and input file is read within, on disk or in object storage."""
    over = f"over the {max_bytes:,}-byte limit" + (f" ({limit_name})" if limit_name else "")
    if size is not None and size > max_bytes:
        raise Unreadable(f"is {size:,} bytes, {over}")
    # Asked for no more than the file says it holds (and one byte to see it grow): a read of
    # max_bytes + 1 makes a buffer of that size first (1 GiB by default), whatever the file holds,
    # which an address-space limit refuses and tracemalloc counts.
    want = max_bytes + 1 if size is None else min(size, max_bytes) + 1
    try:
        data = handle.read(want)
        if size is not None and len(data) == want <= max_bytes:  # it grew while read: read on
            data += handle.read(max_bytes + 1 - len(data))
    except OSError as exc:
        raise Unreadable(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise Unreadable(f"grew past {max_bytes:,} bytes while it was read, {over}")
    return data


def read_input(
    path: str,
    parse: Callable[[bytes], T],
    error: type[InputError],
    max_bytes: int = defaults.MAX_ARTIFACT_BYTES,
) -> T:
    """Read ``path`` and parse it; a file that cannot be read or parsed is ``error`` naming it."""
    try:
        data = read_bounded(path, max_bytes)
    except Unreadable as exc:
        raise error(str(exc), path) from None
    try:
        return parse(data)
    except error as exc:
        raise exc.with_source(path) from None


# -- documents and waivers ------------------------------------------------------------------


def read_waivers(path: str) -> tuple[Waiver, ...]:
    """Read and check a waiver file; any problem is a WaiverFileError naming it (CLI exit 2)."""
    return read_input(path, parse_waivers, WaiverFileError, defaults.MAX_WAIVER_FILE_BYTES)


def read_rules(path: str) -> Policy:
    """Read and check a rules file; any problem is a RulesFileError naming it (CLI exit 2)."""
    return read_input(path, parse_rules, RulesFileError, defaults.MAX_RULES_FILE_BYTES)


def read_stored(path: str) -> bytes:
    """A stored snapshot document's bytes: the file itself, or the ``latest.json`` of the file
    sink's directory ``path`` names, each within the one bound; anything that cannot be read is a
    ``SnapshotDocumentError`` naming the path (exit 2). A ``latest.json`` that is a symbolic link
    is refused, as the file sink refuses to write through one."""
    path = os.path.expanduser(path)
    latest = os.path.join(path, LATEST) if os.path.isdir(path) else None
    try:
        return read_bounded(latest or path, defaults.MAX_DOCUMENT_BYTES, follow_links=latest is None)
    except Unreadable as exc:
        if latest is None:
            raise SnapshotDocumentError(str(exc), path) from None
        if not os.path.lexists(latest):
            raise SnapshotDocumentError(
                f"is a directory without a {LATEST}: no snapshot has been stored there yet", path
            ) from None
        raise SnapshotDocumentError(f"has a {LATEST} that {exc}", path) from None


def read_snapshot(path: str) -> StoredSnapshot:
    """A stored snapshot document (``--snapshot``, ``--baseline``): a file, or a file sink's directory."""
    data = read_stored(path)
    try:
        return load_document(data)
    except SnapshotDocumentError as exc:
        raise exc.with_source(path) from None


def read_auditable(path: str) -> StoredSnapshot:
    """A stored snapshot to re-audit (its estate, and which rules it was checked against)."""
    stored = read_snapshot(path)
    if stored.estate is None:
        raise SnapshotDocumentError(
            "was stored without datasets and lineage (it exceeded the snapshot cap): "
            "there is nothing to re-audit; audit the artifacts instead",
            path,
        )
    return stored


def read_baseline(path: str) -> Baseline:
    return read_snapshot(path).as_baseline()


# -- artifacts ------------------------------------------------------------------------------


def read_artifacts(
    dags: str,
    tasks: str | None,
    datasets: str | None,
    *,
    max_bytes: int = defaults.MAX_ARTIFACT_BYTES,
    include_asset_extra: bool = False,
) -> Estate:
    """Parse the artifact files: the dags file must be usable, the others become lossiness records if not.

    Each file is read and decoded in turn, its bytes let go before the next is read (no file's
    bytes are held while the estate is built): the peak is the largest file and what is decoded,
    not all three files and what is decoded (as ``parse_artifacts`` of the three would hold them).
    """
    records: list[Lossiness] = []
    with gc_paused():
        try:
            dags_doc = decode_artifact("dags", _read_dags(dags, max_bytes), records)
        except DagsArtifactError as exc:
            raise exc.with_source(dags) from None
        tasks_doc = decode_artifact("tasks", _read_optional("tasks", tasks, records, max_bytes), records)
        datasets_doc = decode_artifact(
            "datasets",
            _read_optional("datasets", datasets, records, max_bytes),
            records,
            include_asset_extra=include_asset_extra,
        )
    try:
        return build_estate(
            dags_doc, tasks_doc, datasets_doc, lossiness=records, include_asset_extra=include_asset_extra
        )
    except DagsArtifactError as exc:
        raise exc.with_source(dags) from None


def _read_dags(path: str, max_bytes: int) -> bytes:
    try:
        return read_bounded(path, max_bytes, limit_name="--max-artifact-bytes")
    except Unreadable as exc:
        raise DagsArtifactError(str(exc), path) from None


def _read_optional(artifact: str, path: str | None, records: list[Lossiness], max_bytes: int) -> bytes | None:
    """Read a tasks or datasets file; an unreadable one is a lossiness record, never a failure."""
    if path is None:
        return None
    try:
        return read_bounded(path, max_bytes, limit_name="--max-artifact-bytes")
    except Unreadable as exc:
        records.append(Lossiness(artifact, f"{artifact} artifact ignored: {path} {exc}"))
        return None
