"""Where the file and object-storage sinks keep snapshots, and how the UI page finds them again.

- ``<root>/latest.json``: the newest document stored whole, the baseline of the next export;
- ``<root>/history/<capturedAt>-<fingerprint>.json``: every document stored, one file each;
  a document stored again for its findings alone (the same fingerprint) is
  ``<capturedAt>-<fingerprint>-<findings digest>.json``, so two in the same second both stay.
"""

from __future__ import annotations

import re

from airflow_provider_coremodels.core.document import Document, stored_version

LATEST = "latest.json"
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
