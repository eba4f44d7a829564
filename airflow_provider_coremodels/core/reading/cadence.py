"""How often a DAG runs, read from the schedule text the snapshot keeps: its cadence.

``asset-stale`` lets an asset grow ``tolerance`` cadences old before it calls it stale. The
cadence is the *longest* gap between two consecutive scheduled runs, not the usual one: a
weekday schedule (``0 5 * * 1-5``) is given its weekend, Friday 05:00 to Monday 05:00, so the
rule never flags it on a Monday morning.

The input is the ``airflow.schedule`` metadata (``parse._schedule``): Airflow 3's
``timetable_summary`` (a cron with presets already expanded, ``str(timedelta)``,
``str(relativedelta)``, ``Asset``, ``Asset or <time schedule>``, ``None``, ``@once``,
``@continuous``, or any other timetable's own summary) or Airflow 2's ``schedule_interval``
(a ``CronExpression``'s value, else only its ``__type``). What cannot give a cadence says so in
``text`` and has ``seconds`` None; nothing here raises on a schedule.

A cron's fields are read by croniter, what Airflow schedules with (pure Python, installed with
every Airflow, imported at the first cron read), so a cron means here what it means to the
scheduler beside it, whichever croniter version that is; croniter gives runs one at a time, not
gaps, so the longest gap is computed here, exactly, over the calendar's 28-year cycle (below).
Gaps are measured on the schedule's wall clock: a daylight-saving change in the DAG's timezone
(which the summary does not carry) can make one real gap an hour longer or shorter.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import pairwise
from typing import Literal

CadenceKind = Literal["cron", "interval", "asset", "manual", "once", "continuous", "unknown"]


@dataclass(frozen=True, slots=True)
class Cadence:
    """The longest gap between two consecutive runs of a schedule, and how to say it.

    ``seconds`` is None when the schedule gives no cadence (asset-triggered, manual, unreadable);
    ``kind`` says which family the schedule is, ``text`` says it for people, why-not included.
    """

    seconds: float | None
    kind: CadenceKind
    text: str


def cadence(schedule: str | None) -> Cadence:
    """The cadence of an ``airflow.schedule`` value (None: no schedule, a manual DAG).

    Cached per schedule text: estates have thousands of DAGs sharing a few schedules.
    """
    return _cadence(schedule)


def allowed_age(cadence: Cadence, tolerance: float) -> float | None:
    """How old (seconds) an asset this cadence produces may grow before it is stale; None if unknown.

    ``tolerance`` is counted in cadences and must be positive: a configuration error is the
    caller's to report, not a cadence to guess.
    """
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive number of cadences, got {tolerance!r}")
    return None if cadence.seconds is None else tolerance * cadence.seconds


def format_duration(seconds: float) -> str:
    """A duration for people, in the one unit that reads best: ``45 minutes``, ``26 hours``, ``3 days``.

    Hours run up to three days, so that a weekend (64 hours from Friday 17:00) is not rounded to
    "3 days"; days run up to two years. Negative durations (a clock ahead of the capture) keep
    their sign.
    """
    if not math.isfinite(seconds):
        raise ValueError(f"not a duration: {seconds!r}")
    if seconds < 0:
        return "-" + format_duration(-seconds)
    for limit, unit, size in _UNITS:
        if seconds < limit:
            return _count(_round(seconds / size), unit)
    return _count(_round(seconds / _YEAR), "year")


_MINUTE, _HOUR, _DAY = 60, 3600, 86_400
_YEAR = 365.25 * _DAY
_UNITS = (
    (2 * _MINUTE, "second", 1),
    (2 * _HOUR, "minute", _MINUTE),
    (3 * _DAY, "hour", _HOUR),
    (730 * _DAY, "day", _DAY),
)


def _round(value: float) -> int:
    """Half up, not Python's half to even: 2.5 days read as 3."""
    return math.floor(value + 0.5)


def _count(number: int, unit: str) -> str:
    return f"{number} {unit}" if number == 1 else f"{number} {unit}s"


# -- reading the schedule text ------------------------------------------------------------

_MANUAL = ("None", "@none")
_ASSET = {"Asset": "asset-triggered", "Dataset": "asset-triggered", "Partitioned Asset": "partitioned asset"}
_ASSET_OR = ("Asset or ", "Dataset or ")
# Airflow 2 typed schedule_interval objects whose value the snapshot does not keep (only __type).
_TYPE_ONLY = {
    "TimeDelta": "timedelta",
    "RelativeDelta": "relativedelta",
    "CronExpression": "cron",
}
# Airflow's presets (airflow.utils.dates.cron_presets) and the ones croniter adds.
_PRESETS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@quarterly": "0 0 1 */3 *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_TIMEDELTA = re.compile(
    r"(?:(-?\d{1,9}) days?, )?(\d{1,2}):(\d\d):(\d\d)(?:\.(\d{6}))?"
)  # timedelta's limits
_RELATIVEDELTA = re.compile(r"relativedelta\((.*)\)")
_EVENTS = re.compile(r"\d+ events")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_QUOTED_MAX = 80  # a schedule quoted in a text is cut here: the text is one detail line


@functools.lru_cache(maxsize=4096)
def _cadence(schedule: str | None) -> Cadence:
    text = (schedule or "").strip()
    if not text or text in _MANUAL:
        return Cadence(None, "manual", "manual: no cadence")
    if text == "@once":
        return Cadence(None, "once", "once: no cadence")
    if text == "@continuous":
        return Cadence(None, "continuous", "continuous: no cadence")
    if text == "PartitionedAtRuntime":  # a NullTimetable: runs only when triggered
        return Cadence(None, "manual", "manual (partitioned at runtime): no cadence")
    if text in _ASSET:
        return Cadence(None, "asset", f"{_ASSET[text]}: cadence unknown")
    if text.startswith(_ASSET_OR):
        # Airflow 3's AssetOrTimeSchedule: the time part guarantees runs, so its cadence holds.
        time_text = text.split(" or ", 1)[1]
        if time_text.startswith(_ASSET_OR):  # never written by Airflow; not followed down
            return _unreadable(text, "assets or assets")
        time_part = _cadence(time_text)
        if time_part.seconds is None:
            return Cadence(None, "asset", f"asset-triggered or {time_part.text}")
        return Cadence(time_part.seconds, time_part.kind, f"{time_part.text} or asset-triggered")
    if text in _TYPE_ONLY:
        what = _TYPE_ONLY[text]
        return Cadence(None, "unknown", f"Airflow 2 {what} schedule without its value: cadence unknown")
    if text == "EventsTimetable" or _EVENTS.fullmatch(text):
        return Cadence(None, "unknown", f"event timetable '{_quoted(text)}': cadence unknown")
    if text.startswith("@"):
        if text.lower() in _PRESETS:
            return _cron_cadence(_PRESETS[text.lower()], shown=text)
        return _unreadable(text, f"no preset {text}")
    match = _TIMEDELTA.fullmatch(text)
    if match:
        return _timedelta_cadence(text, match)
    match = _RELATIVEDELTA.fullmatch(text)
    if match:
        return _relativedelta_cadence(text, match.group(1))
    if _looks_like_cron(text):
        return _cron_cadence(text, shown=text)
    if _IDENTIFIER.fullmatch(text):
        return Cadence(None, "unknown", f"timetable '{_quoted(text)}': cadence unknown")
    return _unreadable(text, "not a schedule this version reads")


def _looks_like_cron(text: str) -> bool:
    """Whether ``text`` is meant as cron: its first field starts as a cron field does.

    MultipleCronTriggerTimetable's summary joins its crons with ", ", hence the first field only.
    """
    return text[0].isdigit() or text[0] in "*?"


def _unreadable(text: str, reason: str) -> Cadence:
    return Cadence(None, "unknown", f"unreadable schedule '{_quoted(text)}': cadence unknown ({reason})")


def _quoted(text: str) -> str:
    return text if len(text) <= _QUOTED_MAX else text[: _QUOTED_MAX - 1] + "…"


def _every(seconds: float) -> str | None:
    """A regular interval's name (``daily``, ``every 30 minutes``), None if not a whole unit or
    too long for one (``every 4 years`` reads better than ``every 1461 days``)."""
    if not float(seconds).is_integer() or seconds >= _UNITS[-1][0]:
        return None
    whole = int(seconds)
    for size, single, unit in (
        (7 * _DAY, "weekly", "week"),
        (_DAY, "daily", "day"),
        (_HOUR, "hourly", "hour"),
        (_MINUTE, "every minute", "minute"),
        (1, "every second", "second"),
    ):
        if whole % size == 0:
            return single if whole == size else f"every {whole // size} {unit}s"
    return None  # pragma: no cover - every integer is a whole number of seconds


# -- timedelta and relativedelta ----------------------------------------------------------


def _timedelta_cadence(text: str, match: re.Match[str]) -> Cadence:
    """``str(timedelta)``: ``0:30:00``, ``1 day, 0:00:00``, ``2 days, 3:00:00.500000``."""
    days, hours, minutes, secs, micros = match.groups()
    whole = int(days or 0) * _DAY + int(hours) * _HOUR + int(minutes) * _MINUTE + int(secs)
    seconds = whole + int(micros or 0) / 1_000_000
    if seconds <= 0:
        return _unreadable(text, "not a positive interval")
    name = _every(seconds) or f"every {format_duration(seconds)} ({_quoted(text)})"
    return Cadence(seconds, "interval", name)


_RELATIVE_FIELD = re.compile(r"(years|months|days|hours|minutes|seconds|microseconds)=\+(\d+)")


def _relativedelta_cadence(text: str, arguments: str) -> Cadence:
    """``str(relativedelta)`` with relative, non-negative fields: ``relativedelta(months=+1)``.

    Absolute fields (``day=31``, ``weekday=MO``) pin runs to dates; they and negative fields are
    left unknown rather than guessed.
    """
    fields: dict[str, int] = {}
    for argument in arguments.split(", ") if arguments else ():
        match = _RELATIVE_FIELD.fullmatch(argument)
        if not match:
            return _unreadable(text, f"relativedelta field '{_quoted(argument)}' is not supported")
        fields[match.group(1)] = int(match.group(2))
    months = 12 * fields.get("years", 0) + fields.get("months", 0)
    sizes = {"days": _DAY, "hours": _HOUR, "minutes": _MINUTE, "seconds": 1}
    whole = sum(fields.get(name, 0) * size for name, size in sizes.items())
    if months > 12 * 1000 or whole > 1000 * 366 * _DAY:  # past the calendar's end from 2028
        return _unreadable(text, "too long an interval")
    fixed = whole + fields.get("microseconds", 0) / 1_000_000
    shortest, longest = _month_steps(months) if months else (0, 0)
    low, high = shortest * _DAY + fixed, longest * _DAY + fixed
    if low <= 0:
        return _unreadable(text, "not a positive interval")
    name = _calendar_name(low, high) if months else _every(high)
    return Cadence(high, "interval", name or f"every {format_duration(high)} ({_quoted(text)})")


@functools.lru_cache(maxsize=256)
def _month_steps(months: int) -> tuple[int, int]:
    """The fewest and most days that adding ``months`` calendar months to a date moves it.

    relativedelta clips the day to the month's end (January 31 + 1 month = February 28), which
    only shortens a step. Every start date of one calendar cycle is tried (see ``_CYCLE_DAYS``).
    """
    steps = set()
    for index in range(_CYCLE_DAYS):
        start = _CYCLE_START + timedelta(days=index)
        year, month = divmod(start.month - 1 + months, 12)
        year += start.year
        month += 1
        day = min(start.day, _month_length(year, month))
        steps.add((date(year, month, day) - start).days)
    return min(steps), max(steps)


def _month_length(year: int, month: int) -> int:
    following = date(year + month // 12, month % 12 + 1, 1)
    return (following - timedelta(days=1)).day


def _calendar_name(shortest: float, longest: float) -> str | None:
    """``monthly``, ``quarterly``, ``yearly`` for runs a calendar month, quarter or year apart."""
    for name, low, high in (("monthly", 28, 31), ("quarterly", 89, 92), ("yearly", 365, 366)):
        if low * _DAY <= shortest and longest <= high * _DAY:
            return name
    return None


# -- cron ---------------------------------------------------------------------------------
#
# The longest gap is computed exactly. Within a firing day the runs are the hour x minute
# pairs, the same every firing day; across days a gap runs from one firing day's last run to
# the next firing day's first. The firing days are found over one calendar cycle, read as a
# ring: between 1901 and 2099 (1900 and 2100 are not leap years, none in between is skipped)
# the calendar repeats every 28 years, 28 x 365 + 7 = 10,227 days = 1,461 whole weeks, so dates,
# weekdays and leap days fall alike in every cycle. The cycle from 2001-01-01 thus gives every
# gap that occurs from 1901 to 2099, whatever today's date: 4 years for February 29 (across 2100
# it would be 8). Each day is a bit of a Python int, so the set operations of a field and the
# runs of idle days are a few big-int operations rather than a loop over days.

_CYCLE_START = date(2001, 1, 1)
_CYCLE_DAYS = 10_227
_MINUTES_A_DAY = 1440


class _CronError(ValueError):
    """A cron this version cannot read; the message says which part, for the cadence's text."""


@dataclass(frozen=True, slots=True)
class _Cron:
    times: tuple[int, ...]  # the minutes of a firing day it runs at, ascending
    days: int  # bit ``_CYCLE_DAYS - 1 - i`` set: it runs on day ``i`` of the cycle


# The five fields: name, what ``*`` spans, the most that may be written (7 is Sunday too).
_FIELDS = (
    ("minute", range(0, 60), 59),
    ("hour", range(0, 24), 23),
    ("day of month", range(1, 32), 31),
    ("month", range(1, 13), 12),
    ("day of week", range(0, 7), 7),
)
# croniter reads these marks too: L, W and # into runs the calendar below does not model, H and R
# not reproducibly (H needs an id Airflow does not pass, R is drawn at random on each read); ?,
# which croniter reads as *, stays refused as it was before croniter read the fields.
_MARKS = re.compile(r"[lw#?hr]")
_NAMES = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat")
_VALUE = re.compile(r"(?<![/\d])\d+")  # a number that is not a step


def _cron_cadence(expression: str, *, shown: str) -> Cadence:
    """Cron (or crons joined by ", " as MultipleCronTriggerTimetable writes them) as a cadence."""
    try:
        crons = [_read_cron(part) for part in expression.split(", ")]
    except _CronError as exc:
        return _unreadable(shown, str(exc))
    gaps = _gaps(crons)
    if gaps is None:
        return Cadence(None, "unknown", f"cron {_quoted(shown)} never fires: cadence unknown")
    shortest, longest = gaps[0] * _MINUTE, gaps[1] * _MINUTE
    name = _every(longest) if shortest == longest else _calendar_name(shortest, longest)
    text = name or f"every {format_duration(longest)} (cron {_quoted(shown)})"
    return Cadence(float(longest), "cron", text)


def _read_cron(expression: str) -> _Cron:
    """One cron's runs, its fields read by croniter (what Airflow schedules with, the version installed
    beside it), so that a cron means here what it means to the scheduler."""
    from croniter import CroniterError, croniter

    fields = expression.lower().split()
    if len(fields) != 5:
        extra = " (seconds and years are not supported)" if len(fields) in (6, 7) else ""
        raise _CronError(f"a cron has 5 fields, got {len(fields)}{extra}")
    for (name, _, _), text in zip(_FIELDS, fields, strict=True):
        for item in text.split(","):
            mark = _MARKS.search(_NAMES.sub("", item))
            if mark:
                what = "random values are" if mark.group() == "r" else "L, W, #, ? and H are"
                raise _CronError(f"'{_quoted(item.upper())}' in the {name} field: {what} not supported")
    try:
        expanded = croniter.expand(" ".join(fields))[0]
    except CroniterError:
        raise _CronError(_refusal(fields)) from None
    minutes, hours, doms, months, dows = (
        set(span) if "*" in values else {int(value) for value in values}
        for values, (_, span, _) in zip(expanded, _FIELDS, strict=True)
    )
    calendar = _calendar()
    by_dom = _union(calendar.doms, doms)
    by_dow = _union(calendar.dows, {day % 7 for day in dows})
    # Both day fields restricted: a day matches if either does (cron's rule, croniter's day_or).
    # croniter writes an unrestricted field as "*" (a "1-31" beside a "*/2" included), as it decides.
    either = expanded[2][0] != "*" and expanded[4][0] != "*"
    days = by_dom | by_dow if either else by_dom & by_dow
    times = tuple(sorted(hour * 60 + minute for hour in hours for minute in minutes))
    return _Cron(times, days & _union(calendar.months, months))


def _refusal(fields: list[str]) -> str:
    """Which field croniter refuses, and why, in a few words (its own messages may be a traceback)."""
    from croniter import CroniterError, croniter

    for index, ((name, span, highest), text) in enumerate(zip(_FIELDS, fields, strict=True)):
        try:
            croniter.expand(" ".join(text if n == index else "*" for n in range(5)))
            continue
        except CroniterError:
            pass
        for value in map(int, _VALUE.findall(text)):
            if not span.start <= value <= highest:
                return f"{name} {value} is out of range {span.start}-{highest}"
        if re.search(r"/0+(?!\d)", text):
            return f"step 0 in the {name} field"
        return f"'{_quoted(text.upper())}' is not a {name}"
    return "croniter cannot read it"


@dataclass(frozen=True, slots=True)
class _Calendar:
    """Bit masks of the cycle's days by month (1-12), day of the month (1-31) and weekday (0 Sunday)."""

    months: tuple[int, ...]
    doms: tuple[int, ...]
    dows: tuple[int, ...]


@functools.cache
def _calendar() -> _Calendar:
    months = [bytearray(b"0" * _CYCLE_DAYS) for _ in range(13)]
    doms = [bytearray(b"0" * _CYCLE_DAYS) for _ in range(32)]
    dows = [bytearray(b"0" * _CYCLE_DAYS) for _ in range(7)]
    one = ord("1")
    for index in range(_CYCLE_DAYS):
        day = _CYCLE_START + timedelta(days=index)
        months[day.month][index] = one
        doms[day.day][index] = one
        dows[(day.weekday() + 1) % 7][index] = one  # Python's Monday is 0, cron's Sunday is
    return _Calendar(
        months=tuple(int(bits, 2) for bits in months),
        doms=tuple(int(bits, 2) for bits in doms),
        dows=tuple(int(bits, 2) for bits in dows),
    )


def _union(masks: tuple[int, ...], values: set[int]) -> int:
    union = 0
    for value in values:
        union |= masks[value]
    return union


def _gaps(crons: list[_Cron]) -> tuple[int, int] | None:
    """The shortest and the longest gap in minutes between consecutive runs; None if none run."""
    if len(crons) == 1:
        return _gaps_of_one(crons[0])
    return _gaps_of_many(crons)


def _gaps_of_one(cron: _Cron) -> tuple[int, int] | None:
    if not cron.days:
        return None
    # Runs of idle days between firing days; the first and last runs join across the ring.
    idle = format(cron.days, f"0{_CYCLE_DAYS}b").split("1")
    steps = [len(run) + 1 for run in idle[1:-1]]
    steps.append(len(idle[0]) + len(idle[-1]) + 1)
    first, last = cron.times[0], cron.times[-1]
    within = [later - earlier for earlier, later in pairwise(cron.times)]
    longest = max([max(steps) * _MINUTES_A_DAY - last + first, *within])
    shortest = min([min(steps) * _MINUTES_A_DAY - last + first, *within])
    return shortest, longest


def _gaps_of_many(crons: list[_Cron]) -> tuple[int, int] | None:
    """Crons together: a day's runs are those of the crons that fire that day, merged."""
    union = 0
    for cron in crons:
        union |= cron.days
    if not union:
        return None
    bits = [format(cron.days, f"0{_CYCLE_DAYS}b") for cron in crons]
    merged: dict[tuple[int, ...], tuple[int, ...]] = {}  # which crons fire -> that day's runs
    gaps: set[int] = set()
    previous: tuple[int, int] | None = None  # the last firing day so far, and its last run
    opening: tuple[int, int] = (0, 0)  # the first firing day, and its first run
    for index, bit in enumerate(format(union, f"0{_CYCLE_DAYS}b")):
        if bit != "1":
            continue
        firing = tuple(number for number, cron_bits in enumerate(bits) if cron_bits[index] == "1")
        times = merged.get(firing)
        if times is None:
            times = merged[firing] = tuple(sorted({time for n in firing for time in crons[n].times}))
            gaps.update(later - earlier for earlier, later in pairwise(times))
        if previous is None:
            opening = (index, times[0])
        else:
            gaps.add((index - previous[0]) * _MINUTES_A_DAY - previous[1] + times[0])
        previous = (index, times[-1])
    assert previous is not None  # the union has a day
    gaps.add((opening[0] + _CYCLE_DAYS - previous[0]) * _MINUTES_A_DAY - previous[1] + opening[1])
    return min(gaps), max(gaps)
