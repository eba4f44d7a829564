"""Waivers: findings a team has looked at and accepted, for a stated reason, until a date.

A waiver names a finding code, a glob over subjects, a reason and optionally the last day it
holds. A waived finding is still reported, marked with the waiver's reason, and never fails
a run; a waiver past its date waives nothing and becomes a finding itself, so an accepted
risk cannot quietly outlive the decision that accepted it.

The file is YAML or JSON (JSON is YAML); a malformed one is refused whole, with an error
that names the entry and the problem, rather than half-applied. A hostile one is refused the
same way, in bounded time and memory, by the reader every hand-written file shares
(``team_files``: no anchors or aliases, bounded nesting, bounded quotes).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from airflow_provider_coremodels.core.checks.team_files import quote, read_team_file, unknown_keys
from airflow_provider_coremodels.core.estate.findings import Finding, Waived
from airflow_provider_coremodels.core.estate.rules import WAIVABLE, is_policy_code, make_finding
from airflow_provider_coremodels.errors import WaiverFileError

WAIVER_EXPIRED = "waiver-expired"

_KEYS = ("code", "subject", "reason", "expires")

#: An expiry date as written in a file: exactly four, two and two ASCII digits.
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)


@dataclass(frozen=True, slots=True)
class Waiver:
    """Waive findings of ``code`` whose subject matches the glob ``subject``, through ``expires``."""

    code: str
    subject: str
    reason: str
    expires: dt.date | None = None

    def matches(self, finding: Finding) -> bool:
        return finding.code == self.code and fnmatchcase(finding.subject, self.subject)

    def expired(self, today: dt.date) -> bool:
        """A waiver holds through its expiry date, and lapses the day after."""
        return self.expires is not None and today > self.expires

    def as_waived(self) -> Waived:
        return Waived(self.reason, self.expires.isoformat() if self.expires else None)


def parse_waivers(data: bytes | str) -> tuple[Waiver, ...]:
    """Read a waiver file: a list of waivers, or ``{"waivers": [...]}``. Raises WaiverFileError."""
    value = read_team_file(data, kind="waiver file", needs="four", error=WaiverFileError)
    if value is None:
        return ()  # an empty file waives nothing
    if isinstance(value, dict) and set(value) == {"waivers"}:
        value = value["waivers"]
    if not isinstance(value, list):
        raise WaiverFileError('must be a list of waivers (or {"waivers": [...]})')
    return waivers_from_value(value)


def waivers_from_value(entries: Iterable[Any]) -> tuple[Waiver, ...]:
    """Validate waivers given as plain data (a parsed file, or the operator's ``waivers`` list)."""
    return tuple(_waiver(entry, f"waivers[{i}]") for i, entry in enumerate(entries))


def _waiver(entry: Any, where: str) -> Waiver:
    if not isinstance(entry, dict):
        raise WaiverFileError(f"{where} must be a mapping with code, subject and reason")
    if unknown := unknown_keys(entry, _KEYS):
        raise WaiverFileError(f"{where} {unknown}")
    code, subject, reason = (_text(entry, key, where) for key in ("code", "subject", "reason"))
    if code not in WAIVABLE and not is_policy_code(code):
        raise WaiverFileError(
            f"{where}.code {quote(code)} is not a finding code that can be waived; "
            f"expected one of {', '.join(sorted(WAIVABLE))}, or a rules file's policy-... code"
        )
    return Waiver(code, subject, reason, _date(entry.get("expires"), f"{where}.expires"))


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise WaiverFileError(f"{where}.{key} must be a non-empty string")
    return value.strip()


def _date(value: Any, where: str) -> dt.date | None:
    """A date object as given, or text written exactly YYYY-MM-DD (not ``20270131``, not ``2027-W01-1``)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):  # given as plain data, e.g. the operator's waivers list
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _DATE.fullmatch(value.strip()):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:  # the right shape, but no such day: 2027-02-30
            pass
    raise WaiverFileError(f"{where} must be a date written YYYY-MM-DD, got {quote(value)}")


def apply_waivers(findings: Sequence[Finding], waivers: Sequence[Waiver], today: dt.date) -> list[Finding]:
    """Mark each finding the first live matching waiver covers; add a finding per expired waiver.

    The result is unsorted; the audit sorts it with the rest.
    """
    live = _LiveWaivers(w for w in waivers if not w.expired(today))
    out = []
    for finding in findings:
        waiver = live.first(finding)
        out.append(dataclasses.replace(finding, waived=waiver.as_waived()) if waiver else finding)
    seen: set[tuple[str, str]] = set()
    for waiver in waivers:
        if waiver.expired(today) and (waiver.code, waiver.subject) not in seen:
            seen.add((waiver.code, waiver.subject))
            out.append(expired_finding(waiver))
    return out


#: The characters that make a waiver's subject a glob (``fnmatch``'s wildcards and sets).
_WILDCARDS = re.compile(r"[*?\[]")


class _LiveWaivers:
    """The live waivers by code: exact subjects in a dict, globs by the literal text before their
    first wildcard, each list in file order. A subject can only match a glob that it begins with
    the literal of, so a finding's first matching waiver costs a lookup per distinct literal
    length and the globs whose literal it begins with, never every waiver of its code (a long
    waiver file, its globs growing with the estate, times a large estate's findings would be
    their product)."""

    def __init__(self, waivers: Iterable[Waiver]) -> None:
        self.exact: dict[tuple[str, str], tuple[int, Waiver]] = {}
        self.globs: dict[str, dict[str, list[tuple[int, Waiver]]]] = defaultdict(dict)
        for order, waiver in enumerate(waivers):
            wildcard = _WILDCARDS.search(waiver.subject)
            if wildcard is None:
                self.exact.setdefault((waiver.code, waiver.subject), (order, waiver))
            else:
                literal = waiver.subject[: wildcard.start()]
                self.globs[waiver.code].setdefault(literal, []).append((order, waiver))
        #: The distinct literal lengths of each code's globs, shortest first.
        self.lengths = {code: sorted({len(literal) for literal in by}) for code, by in self.globs.items()}

    def first(self, finding: Finding) -> Waiver | None:
        """The first waiver in file order that matches ``finding``, as a scan of them all gives."""
        best = self.exact.get((finding.code, finding.subject))
        by_literal = self.globs.get(finding.code)
        if by_literal:
            subject = finding.subject
            for length in self.lengths[finding.code]:
                if length > len(subject):
                    break
                for order, waiver in by_literal.get(subject[:length], ()):
                    if best is not None and order > best[0]:
                        break
                    if waiver.matches(finding):
                        best = (order, waiver)
                        break
        return best[1] if best is not None else None


def expired_finding(waiver: Waiver) -> Finding:
    assert waiver.expires is not None
    return make_finding(
        WAIVER_EXPIRED,
        f"{waiver.code} {waiver.subject}",
        f"expired {waiver.expires.isoformat()}; reason was: {waiver.reason}",
    )
