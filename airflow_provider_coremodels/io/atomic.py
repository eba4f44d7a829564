"""Atomic file writes: a reader sees the old file or the new one, never a partial one.

The temporary file is ``.<name>.<32 hex digits>.coremodels.tmp`` beside the target, a name
nothing else makes, so the file sink's sweep of a killed writer's leftovers (``TEMPORARY``)
removes only files this module made. It is created exclusively and never through a symlink.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

#: The name of a temporary file ``write_atomic`` makes, and nothing else does.
TEMPORARY = re.compile(r"\..+\.[0-9a-f]{32}\.coremodels\.tmp", re.ASCII | re.DOTALL)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def temporary_name(name: str) -> str:
    """A fresh temporary name for a write of ``name``, which ``TEMPORARY`` matches."""
    return f".{name}.{secrets.token_hex(16)}.coremodels.tmp"


def write_atomic(path: str | os.PathLike[str], data: bytes | Iterable[bytes]) -> None:
    """Write to a temporary file beside ``path``, fsync it, then rename it over ``path``. ``data``
    may come in pieces, written as they come (a large file is then never held whole)."""
    target = Path(path)
    dir_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        write_atomic_at(dir_fd, target.name, data)
    finally:
        os.close(dir_fd)


def write_atomic_at(dir_fd: int, name: str, data: bytes | Iterable[bytes]) -> None:
    """``write_atomic`` of ``name`` in the open directory ``dir_fd``, so the directory cannot be swapped."""
    tmp = temporary_name(name)
    # O_EXCL: never through a symlink, never over another file; 0o666 less the umask, as open() makes.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in (data,) if isinstance(data, bytes) else data:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the platform allows
        os.fsync(dir_fd)
