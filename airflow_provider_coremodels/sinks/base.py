"""What every sink does: give back its stored baseline, and store a new snapshot document."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_coremodels.core.snapshots.document import Document


@dataclass(frozen=True)
class SinkResult:
    """Where one push went: ``written`` lists what was stored (paths or URLs, no credentials).

    ``unchanged``: the sink already held this fingerprint and these findings, so nothing was
    written. ``findings_changed``: it held this fingerprint with other findings (a waiver added
    or expired, freshness changed), so the document was stored again. ``sent``: how many events a
    sink that sends events rather than the document (OpenLineage) handed to its transport; None
    for the others. ``error``: why the push failed (one line naming the sink, no secret); the
    other sinks were pushed all the same. ``removed``: the history entries the sink's retention
    rule removed after the push.
    """

    sink: str
    unchanged: bool
    written: list[str] = field(default_factory=list)
    baseline_replaced: bool = False
    findings_changed: bool = False
    sent: int | None = None
    error: str | None = None
    removed: list[str] = field(default_factory=list)

    @classmethod
    def failed(cls, sink: str, error: str) -> SinkResult:
        return cls(sink, unchanged=False, error=error)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sink": self.sink,
            "unchanged": self.unchanged,
            "findingsChanged": self.findings_changed,
            "written": list(self.written),
            "baselineReplaced": self.baseline_replaced,
        }
        if self.sent is not None:
            out["sent"] = self.sent
        if self.error is not None:
            out["error"] = self.error
        if self.removed:
            out["historyRemoved"] = list(self.removed)
        return out

    def said(self) -> str:
        """What a summary line says of this push: ``written``, ``unchanged``, ``sent N events`` or
        ``failed``, and ``; N history entries removed`` when retention removed some."""
        if self.error is not None:
            return "failed"
        if self.sent is not None:
            return f"sent {self.sent} event{'' if self.sent == 1 else 's'}"
        said = "unchanged" if self.unchanged else "written"
        if self.removed:
            count = len(self.removed)
            said += f"; {count} history entr{'y' if count == 1 else 'ies'} removed"
        return said


class Sink(abc.ABC):
    """A destination for snapshot documents. ``uri`` is safe to print: it carries no secret."""

    uri: str

    @abc.abstractmethod
    def read_baseline(self) -> bytes | None:
        """The stored latest document's bytes, or None when there is none yet."""

    @abc.abstractmethod
    def push(self, document: Document) -> SinkResult:
        """Store ``document`` (cut down to what may be stored when it is over the cap)."""
