"""A DAG's deadline alerts (``DAG(deadline=DeadlineAlert(...))``), carried in its metadata.

No public endpoint gives them. Airflow 3.3 serves them to its UI, one DAG at a time
(``GET /ui/dags/{dag_id}/deadlineAlerts``: name, reference type, interval in seconds); Airflow 3.1
and 3.2 accept them in the code and show them nowhere but in a run's own deadlines; 2.11 and 3.0 have
none. The capture asks where it can, and the DAG-folder parse reads them from the serialized DAG in
the same shape, so both write the same ``DEADLINE_KEY``: canonical JSON of the alerts, ``[]`` for a
DAG read and found to have none. A DAG without the key is one whose alerts are unknown, and the
rules file's ``deadline`` check does not judge it (it counts it as not checked).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY
from airflow_provider_coremodels.core.estate.text import cut, printable, utf8_safe
from airflow_provider_coremodels.redaction import scrub_credentials

#: What the capture and the DAG-folder parse put in a DAG's entry of the dags artifact.
DEADLINE_ALERTS = "deadline_alerts"
_NAME_MAX = 250
_REFERENCE_MAX = 200
#: The most alerts one DAG's metadata lists (a DAG has one or a few).
_ALERTS_MAX = 50


def reduce_alert(raw: object) -> dict[str, Any] | None:
    """One alert of ``GET /ui/dags/{dag_id}/deadlineAlerts`` cut to what says what it is: its name,
    reference type and interval (seconds; None where Airflow resolves it at run time). Its id and
    creation time change whenever the DAG is re-serialized, so they are left out."""
    if not isinstance(raw, Mapping):
        return None
    reference = raw.get("reference_type")
    if not isinstance(reference, str) or not reference.strip():
        return None
    interval = raw.get("interval")
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not math.isfinite(interval):
        interval = None
    name = raw.get("name")
    return {
        "name": name if isinstance(name, str) and name.strip() else None,
        "reference_type": reference,
        "interval": interval,
    }


def deadline_text(value: object) -> str | None:
    """The ``DEADLINE_KEY`` text of a DAG's ``deadline_alerts``: canonical JSON of
    ``[{"interval": seconds, "name": ..., "reference": ...}]`` (a whole number of seconds written as
    one; ``name`` only where the alert has one), sorted, every string scrubbed of credential shapes
    (an artifact read offline never went through the capture's scrub), bounded and escaped; ``[]``
    for none. None where the alerts are unknown (no list)."""
    if not isinstance(value, list):
        return None
    alerts = []
    for raw in value:
        alert = reduce_alert(raw)
        if alert is None:
            continue
        interval = alert["interval"]
        if isinstance(interval, float) and interval.is_integer():
            interval = int(interval)
        entry: dict[str, Any] = {
            "interval": interval,
            "reference": printable(cut(scrub_credentials(alert["reference_type"].strip()), _REFERENCE_MAX)),
        }
        if alert["name"] is not None:
            entry["name"] = printable(cut(scrub_credentials(alert["name"].strip()), _NAME_MAX))
        alerts.append(entry)
    alerts.sort(key=lambda a: json.dumps(a, sort_keys=True))
    text = json.dumps(alerts[:_ALERTS_MAX], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return utf8_safe(text)


def deadlines(metadata: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """A DAG's deadline alerts read back from its metadata; None where unknown or unreadable."""
    text = metadata.get(DEADLINE_KEY)
    if not isinstance(text, str):
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    if not isinstance(found, list):
        return None
    return [alert for alert in found if isinstance(alert, dict)]


def describe(alert: Mapping[str, Any]) -> str:
    """One alert in words: ``late: 2h after DagRunQueuedAtDeadline``."""
    interval = alert.get("interval")
    when = _duration(interval) if isinstance(interval, int | float) else "an interval set at run time"
    name = alert.get("name")
    text = f"{when} after {alert.get('reference')}"
    return f"{name}: {text}" if isinstance(name, str) and name else text


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole != seconds or whole < 0:
        return f"{seconds:g}s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if whole and whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"
