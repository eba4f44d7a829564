"""Where the file and object-storage sinks keep snapshots, and how the UI page finds them again.

- ``<root>/latest.json``: the newest document stored whole, the baseline of the next export;
- ``<root>/history/<capturedAt>-<fingerprint>.json``: every document stored, one file each;
  a document stored again for its findings alone (the same fingerprint) is
  ``<capturedAt>-<fingerprint>-<findings digest>.json``, so two in the same second both stay.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from airflow_provider_coremodels.core.snapshots.document import Document, stored_version
from airflow_provider_coremodels.io.input_files import LATEST as LATEST  # the reader names it too

HISTORY = "history"

#: A history entry's name: ``capturedAt`` without ``-`` and ``:`` (not every store takes colons).
HISTORY_ENTRY = re.compile(
    r"^(?P<stamp>\d{8}T[0-9.]+Z?)-(?P<fingerprint>[0-9a-f]{16})(?:-(?P<findings>[0-9a-f]{16}))?\.json$"
)


def history_name(document: Document, *, findings_changed: bool = False) -> str:
    """``<capturedAt>-<fingerprint>.json`` (with ``-<findings digest>`` when only the findings
    changed), which ``HISTORY_ENTRY`` matches."""
    captured_at = (document.get("state") or {}).get("capturedAt") or "unknown-time"
    stamp = captured_at.replace("-", "").replace(":", "")
    if findings_changed:
        return f"{stamp}-{stored_version(document)}.json"
    return f"{stamp}-{document['fingerprint']}.json"


def entry_order(name: str) -> tuple[str, str, str]:
    """How history entries sort, oldest first: by capture time, then by name.

    Plain name order would put ``...T043756.5Z`` before ``...T043756Z`` (``.`` sorts before
    ``Z``), so the fraction of a second is compared apart. A name ``HISTORY_ENTRY`` does not
    match sorts first.
    """
    match = HISTORY_ENTRY.match(name)
    if match is None:
        return ("", "", name)
    whole, _, fraction = match["stamp"].rstrip("Z").partition(".")
    return (whole.ljust(15, "0"), fraction.ljust(9, "0"), name)


def newest_first(names: Iterable[str], limit: int | None = None) -> list[str]:
    """The entries among ``names`` (names ``HISTORY_ENTRY`` matches), newest first; only the
    newest ``limit`` of them when given (chosen without sorting them all: a history may hold
    thousands, and the page asks on every view)."""
    keyed = [(key, name) for name in names if (key := entry_order(name))[0]]
    chosen = heapq.nlargest(limit, keyed) if limit else sorted(keyed, reverse=True)
    return [name for _, name in chosen]


def stamp_time(stamp: str) -> datetime | None:
    """The capture time a name's stamp spells (``20261201T043756Z``), in UTC; None when it spells none."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    try:
        when = datetime.strptime(whole, "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    if fraction.isdigit():
        when += timedelta(seconds=float(f"0.{fraction}"))
    return when


def stamp_text(stamp: str) -> str:
    """A stamp as the document wrote the capture time: ``2026-12-01T04:37:56Z``."""
    when = stamp_time(stamp)
    if when is None:
        return stamp
    _, _, fraction = stamp.rstrip("Z").partition(".")
    return when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"
