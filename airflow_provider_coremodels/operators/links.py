"""The export task's link to the CoreModels page, showing the snapshot that task stored.

Airflow 3 computes a task's extra links when the task finishes, in the task's own process, and
keeps them (as XCom) for the UI: so the link is made from what ``execute`` left on the operator,
and a task that stopped before pushing anything has no link.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

#: Where the plugin mounts the page (ui/plugin.py).
PAGE_PATH = "/coremodels/"


def page_url(fingerprint: str) -> str:
    """The page showing the snapshot of ``fingerprint``: under ``[api] base_url`` when it is set
    (the UI and the API server on other hosts), else a path on the host the UI is served from."""
    from airflow.configuration import conf

    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    return f"{base}{PAGE_PATH}?fingerprint={quote(fingerprint, safe='')}"


class CoreModelsPageLink(BaseOperatorLink):
    """``CoreModels``: the page, showing this run's snapshot (its fingerprint)."""

    name = "CoreModels"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return str(getattr(operator, "coremodels_page_url", None) or "")
