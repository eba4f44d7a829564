"""Reading input files named on the command line or given to the operator.

The pure core parses bytes; this is the I/O around it. Every input (a snapshot document, a
baseline, a waiver file) fails the same way, with the file named beside the problem.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from airflow_provider_coremodels.core.waivers import Waiver, parse_waivers
from airflow_provider_coremodels.errors import InputError, WaiverFileError

T = TypeVar("T")


def read_input(path: str, parse: Callable[[bytes], T], error: type[InputError]) -> T:
    """Read ``path`` and parse it; a file that cannot be read or parsed is ``error`` naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"cannot be read: {exc.strerror or exc}", path) from None
    try:
        return parse(data)
    except error as exc:
        raise exc.with_source(path) from None


def read_waivers(path: str) -> tuple[Waiver, ...]:
    """Read and check a waiver file; any problem is a WaiverFileError naming it (CLI exit 2)."""
    return read_input(path, parse_waivers, WaiverFileError)
