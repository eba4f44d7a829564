"""What the tests read of this machine's processes, from ``/proc`` (Linux): the one reader of every
check that a run left nothing behind, and of the fork server's spawned runs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def pids() -> list[int]:
    """Every process's id, this machine's whole (as far as this process may see)."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def state(pid: int) -> str | None:
    """``pid``'s state letter (``R``, ``S``, ``Z`` for a zombie, ...); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]  # the name, in parentheses, may hold anything


def alive(pid: int) -> bool:
    """Whether ``pid`` runs: neither gone nor a zombie its parent has not reaped yet."""
    return state(pid) not in (None, "Z", "X")


def cmdline(pid: int) -> bytes:
    """``pid``'s command line, its arguments NUL-separated; empty once it is gone (or a zombie)."""
    return _read(pid, "cmdline")


def with_cmdline(text: bytes) -> list[int]:
    """The processes whose command line holds ``text``."""
    return [pid for pid in pids() if text in cmdline(pid)]


def with_environ(variable: bytes) -> list[int]:
    """The processes whose environment holds ``variable`` (``NAME=value``, whole)."""
    return [pid for pid in pids() if variable in _read(pid, "environ").split(b"\0")]


def left(find: Callable[[], list[int]], seconds: float = 5.0) -> list[int]:
    """What ``find`` still finds after ``seconds`` at most, looking every tenth of a second until it
    finds nothing: a process just killed is gone within moments."""
    deadline = time.monotonic() + seconds
    found = find()
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = find()
    return found


def _read(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as handle:
            return handle.read()
    except OSError:
        return b""
