"""Reading a waiver file from disk: the I/O the pure core leaves to its callers.

The CLI (``--waivers``) and the operator (``waivers="path"``) both read through here, so a
file that cannot be read and a file that is malformed fail the same way, naming the file.
"""

from __future__ import annotations

from pathlib import Path

from airflow_provider_coremodels.core.waivers import Waiver, parse_waivers
from airflow_provider_coremodels.errors import WaiverFileError


def read_waivers(path: str) -> tuple[Waiver, ...]:
    """Read and check a waiver file; any problem is a WaiverFileError naming it (CLI exit 2)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise WaiverFileError(f"cannot be read: {exc.strerror or exc}", path) from None
    try:
        return parse_waivers(data)
    except WaiverFileError as exc:
        raise exc.with_source(path) from None
