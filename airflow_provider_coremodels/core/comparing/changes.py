"""What changed in the findings since the previous stored snapshot: what alerts and metrics say.

A finding is *new* when it is open now (not waived) and was not open in the previous snapshot,
*resolved* when it was open then and is gone now, *waived* when it was open then and is still
there, waived (nothing was fixed: someone accepted it). A finding is identified as the waivers identify
it, by code and subject: a new message or detail for the same code and subject is the same
finding, still open. Without a previous snapshot every open finding is new (nobody has been told
of any yet), and ``first`` says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import msgspec

from airflow_provider_coremodels.core.estate.rules import severity_rank
from airflow_provider_coremodels.core.views.render import finding_line

#: A finding's identity across snapshots: (code, subject).
FindingKey = tuple[str, str]
F = TypeVar("F")


@dataclass(frozen=True)
class FindingChanges:
    """The open findings of this snapshot, beside the previous one's (document form, in order)."""

    open: tuple[dict[str, Any], ...]
    new: tuple[dict[str, Any], ...]
    resolved: tuple[dict[str, Any], ...]
    first: bool = False  # no previous snapshot: every open finding is new
    #: Open in the previous snapshot, present now but waived: not resolved, and never said so.
    waived: tuple[dict[str, Any], ...] = ()
    by_severity: dict[str, int] = field(default_factory=dict)
    #: New findings below the least severity a digest lists (``at_least``): counted, not listed.
    held_back: int = 0
    least: str | None = None

    def summary(self) -> dict[str, int]:
        return {"new": len(self.new), "resolved": len(self.resolved), "waived": len(self.waived)}

    def at_least(self, severity: str) -> FindingChanges:
        """These changes as a digest at ``severity`` and above: the new and resolved findings below
        it are left out (the new ones counted in ``held_back``); what is open is unchanged."""
        least = severity_rank(severity)
        new = tuple(f for f in self.new if severity_rank(str(f.get("severity"))) >= least)
        resolved = tuple(f for f in self.resolved if severity_rank(str(f.get("severity"))) >= least)
        waived = tuple(f for f in self.waived if severity_rank(str(f.get("severity"))) >= least)
        held_back = self.held_back + len(self.new) - len(new)
        return replace(self, new=new, resolved=resolved, waived=waived, held_back=held_back, least=severity)

    def text(self, deployment: str | None, names: Mapping[str, str] | None = None) -> str:
        """A message a person reads in an e-mail or a chat: a line each, the most severe first."""
        where = f" in {deployment}" if deployment else ""
        since = "open (the first export: no previous snapshot)" if self.first else "new since the last export"
        head = f"{len(self.new)} CoreModels finding{'' if len(self.new) == 1 else 's'}{where} {since}:"
        lines = [head, *(f"- {finding_line(f, names)}" for f in by_severity(self.new))]
        if self.resolved:
            lines.append(f"{len(self.resolved)} resolved since the last export:")
            lines.extend(f"- {finding_line(f, names)}" for f in by_severity(self.resolved))
        if self.waived:
            lines.append(f"{len(self.waived)} waived since the last export (still there, not resolved):")
            lines.extend(f"- {finding_line(f, names)}" for f in by_severity(self.waived))
        if self.held_back:
            lines.append(f"{self.held_back} more new below {self.least}, not listed")
        return "\n".join(lines)


def finding_changes(
    findings: Iterable[Mapping[str, Any]], previous: Iterable[Mapping[str, Any]] | None
) -> FindingChanges:
    """The findings open now, and which of them are new, which previous ones resolved and which
    previous ones are waived now."""
    every = [dict(f) for f in findings]
    now = [f for f in every if not f.get("waived")]
    if previous is None:
        return FindingChanges(tuple(now), tuple(now), (), first=True, by_severity=_counts(now))
    before = [dict(f) for f in previous if not f.get("waived")]
    new, closed = opened_and_closed(before, now, _key)
    waived_now = keyed((f for f in every if f.get("waived")), _key)
    resolved = [f for f in closed if _key(f) not in waived_now]
    waived = [waived_now[_key(f)] for f in closed if _key(f) in waived_now]
    return FindingChanges(
        tuple(now), tuple(new), tuple(resolved), waived=tuple(waived), by_severity=_counts(now)
    )


def finding_key(code: object, subject: object) -> FindingKey:
    """What a finding is known by, from one snapshot to the next: its code and subject, as waivers
    know it. A new message or detail for the same code and subject is the same finding."""
    return str(code), str(subject)


def opened_and_closed(
    then: Iterable[F], now: Iterable[F], key: Callable[[F], FindingKey]
) -> tuple[list[F], list[F]]:
    """The findings of ``now`` whose key ``then`` lacks, and those of ``then`` that ``now`` lacks,
    each once per key (its first), in the order given. What alerts call new and resolved, and
    ``compare`` opened and closed: one rule for both."""
    then_by, now_by = keyed(then, key), keyed(now, key)
    opened = [finding for k, finding in now_by.items() if k not in then_by]
    closed = [finding for k, finding in then_by.items() if k not in now_by]
    return opened, closed


def keyed(findings: Iterable[F], key: Callable[[F], FindingKey]) -> dict[FindingKey, F]:
    """The findings by their key, the first of each kept."""
    out: dict[FindingKey, F] = {}
    for finding in findings:
        out.setdefault(key(finding), finding)
    return out


def by_severity(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The most severe first, otherwise in the order given (the document's)."""
    return sorted(findings, key=lambda f: -severity_rank(str(f.get("severity"))))


def _key(finding: Mapping[str, Any]) -> FindingKey:
    return finding_key(finding.get("code"), finding.get("subject"))


def _counts(findings: list[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(str(f.get("severity")) for f in findings).items()))


class _Finding(msgspec.Struct):
    severity: str = ""
    code: str = ""
    subject: str = ""
    message: str = ""
    detail: str | None = None
    section: str | None = None
    waived: Any = None


class _Findings(msgspec.Struct):
    findings: list[_Finding] = []


_DECODER = msgspec.json.Decoder(_Findings)


def stored_findings(data: bytes) -> list[dict[str, Any]] | None:
    """The findings of a stored document, decoded alone (the rest of the document is skipped
    unread); None when the document is not one whose findings can be read."""
    try:
        decoded = _DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        return None
    return [{k: v for k, v in msgspec.structs.asdict(f).items() if v is not None} for f in decoded.findings]
