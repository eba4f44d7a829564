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
    for none; at most ``_ALERTS_MAX`` of them, the first in that order. None where the alerts are
    unknown (no list)."""
    if not isinstance(value, list):
        return None
    entries = [_entry(alert) for alert in map(reduce_alert, value) if alert is not None]
    entries.sort(key=_order)
    text = json.dumps(entries[:_ALERTS_MAX], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return utf8_safe(text)


def _entry(alert: Mapping[str, Any]) -> dict[str, Any]:
    """A reduced alert as the metadata text lists it."""
    interval = alert["interval"]
    if isinstance(interval, float) and interval.is_integer():
        interval = int(interval)
    entry: dict[str, Any] = {
        "interval": interval,
        "reference": printable(cut(scrub_credentials(alert["reference_type"].strip()), _REFERENCE_MAX)),
    }
    if alert["name"] is not None:
        entry["name"] = printable(cut(scrub_credentials(alert["name"].strip()), _NAME_MAX))
    return entry


def _order(entry: Mapping[str, Any]) -> str:
    """Where an entry stands in the metadata text's order."""
    return json.dumps(entry, sort_keys=True)


def _interval_head(interval: object) -> str:
    """How ``_order`` of an alert with this interval begins, up to the key after it."""
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not math.isfinite(interval):
        interval = None
    elif isinstance(interval, float) and interval.is_integer():
        interval = int(interval)
    return '{"interval": ' + ("null" if interval is None else repr(interval)) + ", "  # as json.dumps


class Selected(list[Any]):
    """The alerts a selection kept, in the order they were served; ``seen``: how many the answer listed."""

    seen: int = 0


class AlertSelection:
    """The alerts of one DAG's answer that its metadata can list, chosen as they are read.

    ``deadline_text`` lists the first ``_ALERTS_MAX`` alerts in its order; an answer may list
    hundreds of thousands (up to the cap on one answer). Each alert is reduced and placed as it
    arrives, and no more than twice that many are ever held: the text made of what is kept is the
    text made of them all. ``keep_raw``: keep the chosen alerts as served (``capture --out``),
    else reduced.
    """

    def __init__(self, *, keep_raw: bool = False) -> None:
        self.seen = 0
        self._keep_raw = keep_raw
        self._held: list[tuple[str, int, Any]] = []
        self._bound: str | None = None  # the last kept one's place, once _ALERTS_MAX are kept

    def add(self, raw: Any) -> None:
        self.seen += 1
        if self._bound is not None and isinstance(raw, Mapping):
            # most alerts of a long answer fall after the last kept on their interval alone:
            # told from the start of their place, without making the rest of it
            head = _interval_head(raw.get("interval"))
            if head > self._bound[: len(head)]:
                return
        alert = reduce_alert(raw)
        if alert is None:
            return
        order = _order(_entry(alert))
        # one that would come after the last kept (or tie with it, arriving later) is never listed
        if self._bound is not None and order >= self._bound:
            return
        self._held.append((order, self.seen, raw if self._keep_raw else alert))
        if len(self._held) >= 2 * _ALERTS_MAX:
            self._trim()

    def _trim(self) -> None:
        self._held.sort(key=lambda held: (held[0], held[1]))
        del self._held[_ALERTS_MAX:]
        if len(self._held) == _ALERTS_MAX:
            self._bound = self._held[-1][0]

    def value(self) -> Selected:
        self._trim()
        kept = Selected(held[2] for held in sorted(self._held, key=lambda held: held[1]))
        kept.seen = self.seen
        return kept


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
