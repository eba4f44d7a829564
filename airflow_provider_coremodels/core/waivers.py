"""Waivers: findings a team has looked at and accepted, for a stated reason, until a date.

A waiver names a finding code, a glob over subjects, a reason and optionally the last day it
holds. A waived finding is still reported, marked with the waiver's reason, and never fails
a run; a waiver past its date waives nothing and becomes a finding itself, so an accepted
risk cannot quietly outlive the decision that accepted it.

The file is YAML or JSON (JSON is YAML); a malformed one is refused whole, with an error
that names the entry and the problem, rather than half-applied. A hostile one is refused the
same way, in bounded time and memory: no anchors or aliases (so no "billion laughs"), at most
``MAX_DEPTH`` levels of nesting, and no error message quotes more than ``QUOTE_CHARS`` characters.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import reprlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no annotations

from airflow_provider_coremodels.core.model import Finding, Waived
from airflow_provider_coremodels.core.rules import WAIVABLE, make_finding
from airflow_provider_coremodels.errors import WaiverFileError

WAIVER_EXPIRED = "waiver-expired"

_KEYS = ("code", "subject", "reason", "expires")

#: The deepest nesting a waiver file may use, counting the leaf values; a real one needs four.
MAX_DEPTH = 16
#: The most characters of a value an error message quotes.
QUOTE_CHARS = 80
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


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML without anchors, aliases or deep nesting, that leaves dates as text for our message."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Refuse an alias or anchor before it is resolved, and nesting past ``MAX_DEPTH``, by line."""
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise WaiverFileError(_NO_ANCHORS.format(what="alias", line=line))
        if getattr(event, "anchor", None) is not None:
            raise WaiverFileError(_NO_ANCHORS.format(what="anchor", line=line))
        if self.depth >= MAX_DEPTH:
            raise WaiverFileError(
                f"nests more than {MAX_DEPTH} levels deep at line {line}; a waiver file needs four"
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_yaml_int(self, node: Any) -> int:
        """An integer too long for Python to convert is a YAML error at its line, not a ValueError."""
        try:
            value: int = super().construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, "found a number too long to read", node.start_mark
            ) from None
        return value


_NO_ANCHORS = "uses a YAML {what} at line {line}: anchors and aliases are not allowed in waiver files"

_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# An explicit ``!!timestamp`` is text too, so it meets the same YYYY-MM-DD check as any other date.
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_str)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)

_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxstring, _repr.maxother = 3, QUOTE_CHARS, QUOTE_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = _repr.maxfrozenset = 4


def _quote(value: Any) -> str:
    """``repr(value)`` cut to ``QUOTE_CHARS``, built without ever rendering a huge value whole."""
    return _cut(_repr.repr(value))


def _cut(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."


def parse_waivers(data: bytes | str) -> tuple[Waiver, ...]:
    """Read a waiver file: a list of waivers, or ``{"waivers": [...]}``. Raises WaiverFileError."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise WaiverFileError("is not UTF-8 text") from None
    try:
        value = yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise WaiverFileError(f"is not valid YAML or JSON{where}: {_cut(problem)}") from None
    except RecursionError:  # a last resort: the nesting limit above refuses deep files first
        raise WaiverFileError("nests too deeply to read") from None
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
    unknown = sorted(_cut(str(k)) for k in entry if k not in _KEYS)
    if unknown:
        listed = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise WaiverFileError(f"{where} has unknown key(s) {listed}; expected {', '.join(_KEYS)}")
    code, subject, reason = (_text(entry, key, where) for key in ("code", "subject", "reason"))
    if code not in WAIVABLE:
        raise WaiverFileError(
            f"{where}.code {_quote(code)} is not a finding code that can be waived; "
            f"expected one of {', '.join(sorted(WAIVABLE))}"
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
    raise WaiverFileError(f"{where} must be a date written YYYY-MM-DD, got {_quote(value)}")


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


class _LiveWaivers:
    """The live waivers by code, exact subjects in a dict and globs in file order: a finding's
    first matching waiver costs a lookup and the globs of its own code, never every waiver (a
    long waiver file times a large estate's findings would be their product)."""

    def __init__(self, waivers: Iterable[Waiver]) -> None:
        self.exact: dict[tuple[str, str], tuple[int, Waiver]] = {}
        self.globs: dict[str, list[tuple[int, Waiver]]] = defaultdict(list)
        for order, waiver in enumerate(waivers):
            if any(char in waiver.subject for char in "*?["):
                self.globs[waiver.code].append((order, waiver))
            else:
                self.exact.setdefault((waiver.code, waiver.subject), (order, waiver))

    def first(self, finding: Finding) -> Waiver | None:
        """The first waiver in file order that matches ``finding``, as a scan of them all gives."""
        exact = self.exact.get((finding.code, finding.subject))
        for order, waiver in self.globs.get(finding.code, ()):
            if exact is not None and order > exact[0]:
                break
            if waiver.matches(finding):
                return waiver
        return exact[1] if exact is not None else None


def expired_finding(waiver: Waiver) -> Finding:
    assert waiver.expires is not None
    return make_finding(
        WAIVER_EXPIRED,
        f"{waiver.code} {waiver.subject}",
        f"expired {waiver.expires.isoformat()}; reason was: {waiver.reason}",
    )
