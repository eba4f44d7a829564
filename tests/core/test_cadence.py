"""Cadence: the longest gap between two consecutive runs of a schedule, read from its text.

Expected gaps are written out by hand (with the calendar reasoning beside them) or found by a
brute-force enumeration written here independently of the module: fields expanded with plain
``range`` and every minute or day of a window checked one by one.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from itertools import pairwise

import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import recorded_estate

from airflow_provider_coremodels.core.estate.model import DAG
from airflow_provider_coremodels.core.reading import cadence as cadence_module
from airflow_provider_coremodels.core.reading.cadence import (
    Cadence,
    CadenceKind,
    allowed_age,
    cadence,
    format_duration,
)

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0

BRUTE = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("schedule", "seconds", "kind", "text"),
    [
        # cron, as Airflow 3.3.2's timetable_summary writes it (presets already expanded)
        ("0 0 * * *", DAY, "cron", "daily"),
        ("0 * * * *", HOUR, "cron", "hourly"),
        ("0 5 * * *", DAY, "cron", "daily"),
        ("*/15 * * * *", 15 * MINUTE, "cron", "every 15 minutes"),
        ("*/7 * * * *", 7 * MINUTE, "cron", "every 7 minutes (cron */7 * * * *)"),  # :56 -> :00 is 4
        ("0 */5 * * *", 5 * HOUR, "cron", "every 5 hours (cron 0 */5 * * *)"),  # 20:00 -> 00:00 is 4
        # weekdays: Friday 05:00 to Monday 05:00
        ("0 5 * * 1-5", 3 * DAY, "cron", "every 3 days (cron 0 5 * * 1-5)"),
        ("0 5 * * MON-FRI", 3 * DAY, "cron", "every 3 days (cron 0 5 * * MON-FRI)"),
        # office hours: Friday 17:00 to Monday 09:00
        ("0 9-17 * * 1-5", 64 * HOUR, "cron", "every 64 hours (cron 0 9-17 * * 1-5)"),
        ("30 2 1 * *", 31 * DAY, "cron", "monthly"),  # the longest month
        ("0 0 1 1,7 *", 184 * DAY, "cron", "every 184 days (cron 0 0 1 1,7 *)"),  # July 1 -> January 1
        ("0 0 1 * *", 31 * DAY, "cron", "monthly"),
        ("0 0 31 * *", 61 * DAY, "cron", "every 61 days (cron 0 0 31 * *)"),  # August 31 -> October 31
        # both day fields restricted: a day matches if EITHER does (the 1st or a Monday), not both
        ("0 0 1 * 1", 7 * DAY, "cron", "every 7 days (cron 0 0 1 * 1)"),
        ("0 0 */2 * 1", 2 * DAY, "cron", "every 48 hours (cron 0 0 */2 * 1)"),  # odd days or Mondays
        # croniter: a day-of-month field naming every day, beside a day of week holding "*", is
        # unrestricted, so only the weekdays count: Sunday, Tuesday, Thursday, Saturday
        ("0 0 1-31 * */2", 2 * DAY, "cron", "every 48 hours (cron 0 0 1-31 * */2)"),
        ("0 0 29 2 *", 1461 * DAY, "cron", "every 4 years (cron 0 0 29 2 *)"),  # leap day to leap day
        # last Monday of March (the 25th or 26th) to the first Monday of January (the 6th or 7th)
        ("0 6 * JAN-MAR MON", 287 * DAY, "cron", "every 287 days (cron 0 6 * JAN-MAR MON)"),
        ("0 6 * 1-3 1", 287 * DAY, "cron", "every 287 days (cron 0 6 * 1-3 1)"),
        ("0 6 * jan,feb,mar mon", 287 * DAY, "cron", "every 287 days (cron 0 6 * jan,feb,mar mon)"),
        # January 1st or January's Tuesdays: the longest gap, from Tuesday January 25th to January
        # 1st, is 342 days only in a leap year that starts on a Saturday. The one such year of the
        # 28-year cycle (2001-2028) is its last, so the gap crosses into the next cycle (2029).
        ("0 0 1 1 2", 342 * DAY, "cron", "every 342 days (cron 0 0 1 1 2)"),
        ("0 0 1 1 *, 0 12 * 1 2", 341.5 * DAY, "cron", "every 342 days (cron 0 0 1 1 *, 0 12 * 1 2)"),
        # ranges that wrap, as croniter reads them: Friday to Monday, 22:00 to 02:00
        ("0 0 * * FRI-MON", 4 * DAY, "cron", "every 4 days (cron 0 0 * * FRI-MON)"),
        ("0 22-2 * * *", 20 * HOUR, "cron", "every 20 hours (cron 0 22-2 * * *)"),
        ("0 0 * * 5-7", 5 * DAY, "cron", "every 5 days (cron 0 0 * * 5-7)"),  # 7 is Sunday
        ("0 0 * * 1/2", 3 * DAY, "cron", "every 3 days (cron 0 0 * * 1/2)"),  # 1,3,5: Friday -> Monday
        ("0 0 * * 7/3", 3 * DAY, "cron", "every 3 days (cron 0 0 * * 7/3)"),  # 0,3,6 as croniter reads it
        ("15 10 * * *", DAY, "cron", "daily"),
        ("0   0  *  *  *", DAY, "cron", "daily"),  # any whitespace between fields
        # presets (Airflow 2 keeps them as written; croniter adds @annually and @midnight)
        ("@hourly", HOUR, "cron", "hourly"),
        ("@daily", DAY, "cron", "daily"),
        ("@midnight", DAY, "cron", "daily"),
        ("@weekly", 7 * DAY, "cron", "weekly"),
        ("@monthly", 31 * DAY, "cron", "monthly"),
        ("@quarterly", 92 * DAY, "cron", "quarterly"),  # July 1 -> October 1
        ("@yearly", 366 * DAY, "cron", "yearly"),
        ("@annually", 366 * DAY, "cron", "yearly"),
        # MultipleCronTriggerTimetable: its crons joined by ", "; 02:30 -> 01:00 the next day
        ("0 1 * * *, 30 2 * * *", 22.5 * HOUR, "cron", "every 23 hours (cron 0 1 * * *, 30 2 * * *)"),
        ("0 * * * *, 30 * * * *", 30 * MINUTE, "cron", "every 30 minutes"),
        # timedelta schedules: str(timedelta)
        ("1 day, 0:00:00", DAY, "interval", "daily"),
        ("0:30:00", 30 * MINUTE, "interval", "every 30 minutes"),
        ("6:00:00", 6 * HOUR, "interval", "every 6 hours"),
        ("2 days, 3:00:00", 51 * HOUR, "interval", "every 51 hours"),
        ("7 days, 0:00:00", 7 * DAY, "interval", "weekly"),
        ("14 days, 0:00:00", 14 * DAY, "interval", "every 2 weeks"),
        ("0:00:30.500000", 30.5, "interval", "every 31 seconds (0:00:30.500000)"),
        # relativedelta schedules: str(relativedelta); a month is at most 31 days
        ("relativedelta(months=+1)", 31 * DAY, "interval", "monthly"),
        ("relativedelta(months=+3)", 92 * DAY, "interval", "quarterly"),
        ("relativedelta(years=+1)", 366 * DAY, "interval", "yearly"),
        ("relativedelta(days=+1, hours=+2)", 26 * HOUR, "interval", "every 26 hours"),
        (
            "relativedelta(months=+1, days=+1)",
            32 * DAY,
            "interval",
            "every 32 days (relativedelta(months=+1, days=+1))",
        ),
        # on assets, alone or with a time schedule (whose runs are guaranteed)
        ("Asset", None, "asset", "asset-triggered: cadence unknown"),
        ("Dataset", None, "asset", "asset-triggered: cadence unknown"),
        ("Partitioned Asset", None, "asset", "partitioned asset: cadence unknown"),
        ("Asset or 0 6 * * *", DAY, "cron", "daily or asset-triggered"),
        ("Dataset or @daily", DAY, "cron", "daily or asset-triggered"),
        ("Asset or 1 day, 0:00:00", DAY, "interval", "daily or asset-triggered"),
        ("Asset or Custom", None, "asset", "asset-triggered or timetable 'Custom': cadence unknown"),
        # no cadence at all
        (None, None, "manual", "manual: no cadence"),
        ("None", None, "manual", "manual: no cadence"),
        ("@none", None, "manual", "manual: no cadence"),
        ("PartitionedAtRuntime", None, "manual", "manual (partitioned at runtime): no cadence"),
        ("@once", None, "once", "once: no cadence"),
        ("@continuous", None, "continuous", "continuous: no cadence"),
        # timetables whose summary says nothing of when they run
        ("EventsTimetable", None, "unknown", "event timetable 'EventsTimetable': cadence unknown"),
        ("3 events", None, "unknown", "event timetable '3 events': cadence unknown"),
        ("WorkdayTimetable", None, "unknown", "timetable 'WorkdayTimetable': cadence unknown"),
        ("TimeDelta", None, "unknown", "Airflow 2 timedelta schedule without its value: cadence unknown"),
        (
            "RelativeDelta",
            None,
            "unknown",
            "Airflow 2 relativedelta schedule without its value: cadence unknown",
        ),
        # a cron that never fires: no February 30th, no April 31st
        ("0 0 30 2 *", None, "unknown", "cron 0 0 30 2 * never fires: cadence unknown"),
        ("0 0 31 4,6,9,11 *", None, "unknown", "cron 0 0 31 4,6,9,11 * never fires: cadence unknown"),
    ],
)
def test_cadence(schedule: str | None, seconds: float | None, kind: CadenceKind, text: str) -> None:
    assert cadence(schedule) == Cadence(seconds, kind, text)


@pytest.mark.parametrize(
    ("schedule", "reason"),
    [
        ("61 * * * *", "minute 61 is out of range 0-59"),
        ("0 24 * * *", "hour 24 is out of range 0-23"),
        ("0 0 0 * *", "day of month 0 is out of range 1-31"),
        ("0 0 * 13 *", "month 13 is out of range 1-12"),
        ("0 0 * * 8", "day of week 8 is out of range 0-7"),
        ("* * *", "a cron has 5 fields, got 3"),
        ("0 0 0 * * *", "a cron has 5 fields, got 6 (seconds and years are not supported)"),
        ("0 0 L * *", "'L' in the day of month field: L, W, #, ? and H are not supported"),
        ("0 0 15W * *", "'15W' in the day of month field"),
        ("0 0 * * 5#3", "'5#3' in the day of week field"),
        ("0 0 ? * MON", "'?' in the day of month field"),
        ("0 R * * *", "'R' in the hour field: random values are not supported"),  # croniter draws one
        ("H 0 * * *", "not a schedule this version reads"),
        ("*/0 * * * *", "step 0 in the minute field"),
        ("0 0 * FOO *", "'FOO' is not a month"),
        ("0 0 * * JAN", "'JAN' is not a day of week"),
        ("MON 0 * * *", "not a schedule this version reads"),
        ("0 0 1- * *", "'1-' is not a day of month"),
        ("@fortnightly", "no preset @fortnightly"),
        ("-1 day, 23:00:00", "not a positive interval"),
        ("0:00:00", "not a positive interval"),
        ("relativedelta(day=31)", "relativedelta field 'day=31' is not supported"),
        ("relativedelta(months=-1)", "relativedelta field 'months=-1' is not supported"),
        ("relativedelta()", "not a positive interval"),
        ("every day at noon", "not a schedule this version reads"),
        ("Asset or Asset or 0 0 * * *", "assets or assets"),
        ("relativedelta(years=+1000000)", "too long an interval"),
        (f"relativedelta(hours=+{10**400})", "too long an interval"),
        (f"{10**400} days, 0:00:00", "a cron has 5 fields, got 2"),  # past timedelta's days: read as cron
    ],
)
def test_unreadable_schedule_is_unknown_and_says_why(schedule: str, reason: str) -> None:
    result = cadence(schedule)
    assert (result.seconds, result.kind) == (None, "unknown")
    assert result.text.startswith(f"unreadable schedule '{schedule[:40]}")  # a long one is cut
    assert "': cadence unknown (" in result.text
    assert reason in result.text


@pytest.mark.parametrize(
    ("schedule", "window_days"),
    [
        ("5-5 * * * *", 2),  # croniter 6 and 7: an equal range is the whole field
        ("0 0 * * 5-1/2", 21),  # a wrapping range with a step
        ("0 0 * * 7-0", 21),  # Sunday to Sunday: every day
        ("0 0 * 12/4 *", 4 * 366),  # croniter 7: December only; croniter 6: from January, every 4th month
        ("0 0 * * sat/4", 21),  # croniter 7: Saturdays; croniter 6 starts over from Sunday
    ],
)
def test_a_cron_means_what_the_installed_croniter_makes_of_it(schedule: str, window_days: int) -> None:
    """Where croniter versions read a cron differently, the cadence is the longest gap between the runs
    the croniter installed here gives (Airflow 3.0.6 comes with croniter 6, 3.3 with 7), since that
    croniter is what the scheduler beside it runs the DAG by."""
    runs = croniter(schedule, datetime(2001, 1, 1) - timedelta(minutes=1))
    end = datetime(2001, 1, 1) + timedelta(days=window_days)
    times = []
    while not times or times[-1] < end:
        times.append(runs.get_next(datetime))
    longest = max((later - earlier).total_seconds() for earlier, later in pairwise(times))
    assert cadence(schedule).seconds == longest


def test_sunday_is_0_and_7() -> None:
    assert cadence("0 0 * * 0").seconds == cadence("0 0 * * 7").seconds == cadence("0 0 * * SUN").seconds
    assert cadence("0 0 * * 0").seconds == 7 * DAY


def test_a_long_schedule_is_cut_in_the_text() -> None:
    """The text is one detail line: whatever a DAG author wrote, it stays short."""
    result = cadence("0 " * 5_000)
    assert result.seconds is None
    assert len(result.text) < 200


@pytest.mark.parametrize(
    ("generation", "expected"),
    [
        (
            "airflow3",
            {
                "backfill_customers": None,
                "customer_report": None,
                "daily_revenue": None,
                "legacy_cleanup": DAY,
                "load_orders": DAY,
                "sync_crm": 6 * HOUR,
            },
        ),
        (
            "airflow3_assets",
            {
                "clean_orders": None,
                "export_by_name_ref": None,
                "exports_consumer": None,
                "exports_producer": None,
                "inbox_orders_loader": None,
                "inventory_v1": None,
                "inventory_v2": None,
                "market_data": DAY,
                "orders_audit": DAY,
                "orders_by_name_ref": None,
                "orders_by_slash_ref": None,
                "orders_by_uri_ref": None,
                "orders_incremental": HOUR,
                "orders_sync": HOUR,
                "orders_sync_consumer": None,
                "price_snapshot": DAY,  # Asset or 0 6 * * *
                "raw_orders": DAY,
                "sales_feed": None,
                "sales_ledger": None,
                "valuation": None,
            },
        ),
        (
            "airflow2",
            {
                "backfill_customers": None,
                "daily_revenue": None,  # Dataset
                "legacy_cleanup": DAY,  # @daily
                "load_orders": DAY,
                "sync_crm": None,  # a TimeDelta: the snapshot keeps only its type
            },
        ),
    ],
)
def test_recorded_estates(generation: str, expected: dict[str, float | None]) -> None:
    """The schedules real Airflow servers reported, through the parse, give these cadences."""
    estate = recorded_estate(generation)
    dags = [dataset for dataset in estate.datasets if dataset.materialization == DAG]
    cadences = {dag.identity: cadence(dag.metadata.get("airflow.schedule")) for dag in dags}
    assert {dag_id: c.seconds for dag_id, c in cadences.items()} == expected
    assert not [c.text for c in cadences.values() if c.text.startswith("unreadable")]


def test_cache_serves_repeated_schedules() -> None:
    """5,000 DAGs sharing 50 schedules compute each schedule once.

    The cache sits behind the typed public function, hence the private name here.
    """
    cached = cadence_module._cadence
    cached.cache_clear()
    schedules = [f"{n} {n % 24} * * *" for n in range(50)]
    results = [cadence(schedules[n % 50]) for n in range(5_000)]
    info = cached.cache_info()
    assert (info.misses, info.hits) == (50, 4_950)
    assert all(results[n] is results[n % 50] for n in range(5_000))


# -- brute force ------------------------------------------------------------------------------

#: croniter 7 reads "n/step" from n to the field's end ("23/1" in the hour field is 23:00); croniter 6
#: (Airflow 3.0.6's) reads some such items otherwise ("23/1" is every hour). The enumerations below
#: spell them croniter 7's way, so only where the installed croniter reads them so; the cadence
#: follows the installed one either way (test_a_cron_means_what_the_installed_croniter_makes_of_it).
START_STEP_RUNS_TO_THE_END = croniter.expand("0 23/1 * * *")[0][1] == [23]

DOW_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")


@st.composite
def field_item(
    draw: st.DrawFn,
    low: int,
    high: int,
    names: tuple[str, ...] = (),
    star: bool = True,
    top: int | None = None,
) -> tuple[str, set[int]]:
    """One item of a cron field, as text and as the values it means (expanded here with ``range``).

    ``high`` is the most that may be written, ``top`` the most ``*`` and ``n/step`` reach (croniter
    lets a day of week be written 7 but counts ``*`` and ``1/2`` up to 6).
    """
    top = high if top is None else top

    def spell(value: int) -> str:
        if names and value - low < len(names) and draw(st.booleans()):
            return names[value - low]
        return str(value)

    shapes = ["value", "range", "stepped range"] + (["star", "star step"] if star else [])
    shapes += ["start step"] if START_STEP_RUNS_TO_THE_END else []
    shape = draw(st.sampled_from(shapes))
    if shape == "star":
        return "*", set(range(low, top + 1))
    if shape == "star step":
        step = draw(st.integers(1, top - low + 1))
        return f"*/{step}", set(range(low, top + 1, step))
    first = draw(st.integers(low, high))
    if shape == "value":
        return spell(first), {first}
    if shape == "start step":
        first = min(first, top)
        step = draw(st.integers(1, 5))
        return f"{spell(first)}/{step}", set(range(first, top + 1, step))
    last = draw(st.integers(first + 1, high)) if first < high else None
    if last is None:
        return spell(first), {first}
    if shape == "range":
        return f"{spell(first)}-{spell(last)}", set(range(first, last + 1))
    step = draw(st.integers(1, 5))
    return f"{spell(first)}-{spell(last)}/{step}", set(range(first, last + 1, step))


@st.composite
def cron_field(
    draw: st.DrawFn,
    low: int,
    high: int,
    names: tuple[str, ...] = (),
    star: bool = True,
    size: int = 3,
    top: int | None = None,
) -> tuple[str, set[int]]:
    items = draw(st.lists(field_item(low, high, names, star, top), min_size=1, max_size=size))
    return ",".join(text for text, _ in items), set().union(*(values for _, values in items))


# A cron's text, and what it means: minutes, hours, weekdays (0 Sunday).
WeeklyCron = tuple[str, set[int], set[int], set[int]]
# A cron's text, and what it means: minutes, hours, days of the month, months, weekdays (None: "*").
CalendarCron = tuple[str, set[int], set[int], set[int] | None, set[int], set[int] | None]


@st.composite
def weekly_cron(draw: st.DrawFn) -> WeeklyCron:
    """A cron on every day of the month and every month: its runs repeat every week."""
    minute_text, minutes = draw(cron_field(0, 59))
    hour_text, hours = draw(cron_field(0, 23))
    if draw(st.booleans()):
        dow_text, dows = "*", set(range(7))
    else:
        dow_text, dows = draw(cron_field(0, 7, DOW_NAMES, top=6))  # 7 is Sunday too
    return f"{minute_text} {hour_text} * * {dow_text}", minutes, hours, {day % 7 for day in dows}


@BRUTE
@given(st.lists(weekly_cron(), min_size=1, max_size=2))
def test_longest_gap_matches_a_minute_by_minute_enumeration(crons: list[WeeklyCron]) -> None:
    """Every minute of three weeks (a run repeats weekly, so every gap occurs in them) is checked;
    two crons are joined as Airflow's MultipleCronTriggerTimetable summary joins them."""
    start = date(2001, 1, 1)  # a Monday: cron weekday 1
    runs: list[int] = []
    for minute in range(21 * 1440):
        day, of_day = divmod(minute, 1440)
        weekday = (start + timedelta(days=day)).isoweekday() % 7
        hour, minute_of_hour = divmod(of_day, 60)
        if any(
            weekday in days and hour in hours and minute_of_hour in mins for _, mins, hours, days in crons
        ):
            runs.append(minute)
    longest = max(later - earlier for earlier, later in pairwise(runs))
    assert cadence(", ".join(text for text, *_ in crons)).seconds == longest * MINUTE


@st.composite
def calendar_cron(draw: st.DrawFn) -> CalendarCron:
    """A cron that picks days of the month, months and weekdays; a few runs a day."""
    minutes = set(draw(st.lists(st.integers(0, 59), min_size=1, max_size=2)))
    hours = set(draw(st.lists(st.integers(0, 23), min_size=1, max_size=2)))
    months_text, months = draw(cron_field(1, 12, MONTH_NAMES, size=2) | st.just(("*", set(range(1, 13)))))
    # No "*" inside a restricted day field, so that "restricted" means "not *" (croniter's finer
    # reading of a "*" beside a field naming every day is pinned in test_cadence instead).
    doms_text, doms = draw(cron_field(1, 31, star=False, size=2) | st.just(("*", None)))
    dows_text, dows = draw(cron_field(0, 7, DOW_NAMES, star=False, size=2, top=6) | st.just(("*", None)))
    minutes_text, hours_text = (",".join(map(str, sorted(values))) for values in (minutes, hours))
    text = f"{minutes_text} {hours_text} {doms_text} {months_text} {dows_text}"
    return text, minutes, hours, doms, months, None if dows is None else {day % 7 for day in dows}


@BRUTE
@given(calendar_cron())
def test_longest_gap_matches_a_day_by_day_enumeration(cron: CalendarCron) -> None:
    """Every day of 2001-2033 is checked: gaps that start in 2001-2028 are every gap the calendar
    has until 2099 (it repeats every 28 years), a leap day's four years included."""
    text, minutes, hours, doms, months, dows = cron
    times = sorted(hour * 60 + minute for hour in hours for minute in minutes)
    runs: list[datetime] = []
    day = date(2001, 1, 1)
    while day.year < 2034:
        by_dom = doms is None or day.day in doms
        by_dow = dows is None or day.isoweekday() % 7 in dows
        either = doms is not None and dows is not None  # both restricted: either may match
        if day.month in months and ((by_dom or by_dow) if either else (by_dom and by_dow)):
            midnight = datetime(day.year, day.month, day.day)
            runs.extend(midnight + timedelta(minutes=time) for time in times)
        day += timedelta(days=1)
    gaps = [(later - earlier).total_seconds() for earlier, later in pairwise(runs) if earlier.year < 2029]
    result = cadence(text)
    if not runs:
        assert result.seconds is None
        assert "never fires" in result.text
    else:
        assert result.seconds == max(gaps)


SCHEDULE_PIECES = st.sampled_from(
    ["*", "0", "5", "7", "60", "1-5", "5-1", "*/15", "1/2", "MON", "jan", "L", "W", "#", "?", ",", "-", "/"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=40)
    | st.lists(st.lists(SCHEDULE_PIECES, min_size=1, max_size=3).map("".join), max_size=7).map(" ".join)
    | st.from_regex(r"(Asset or |Dataset or )?\d{1,3}( days?, )?\d{1,2}:\d\d:\d\d", fullmatch=True)
)
def test_any_text_gives_a_cadence_or_says_why_not(schedule: str) -> None:
    result = cadence(schedule)
    assert result.seconds is None or result.seconds > 0
    assert (result.seconds is None) == ("cadence" in result.text)
    assert result.kind in ("cron", "interval", "asset", "manual", "once", "continuous", "unknown")


# -- allowed age and durations ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "tolerance", "expected"),
    [
        ("0 0 * * *", 2, 2 * DAY),
        ("0 5 * * 1-5", 2, 6 * DAY),  # twice the weekend: never stale on a Monday morning
        ("*/15 * * * *", 1.5, 22.5 * MINUTE),
        ("Asset", 2, None),
        (None, 2, None),
        ("0 0 L * *", 2, None),
    ],
)
def test_allowed_age(schedule: str | None, tolerance: float, expected: float | None) -> None:
    assert allowed_age(cadence(schedule), tolerance) == expected


@pytest.mark.parametrize("tolerance", [0, -1, math.nan, math.inf])
def test_allowed_age_refuses_a_tolerance_that_is_not_positive(tolerance: float) -> None:
    with pytest.raises(ValueError, match="tolerance must be a positive number"):
        allowed_age(cadence("0 0 * * *"), tolerance)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 seconds"),
        (1, "1 second"),
        (45, "45 seconds"),
        (119, "119 seconds"),
        (120, "2 minutes"),
        (45 * MINUTE, "45 minutes"),
        (45 * MINUTE + 29, "45 minutes"),
        (45 * MINUTE + 30, "46 minutes"),  # half up
        (90 * MINUTE, "90 minutes"),
        (2 * HOUR, "2 hours"),
        (HOUR * 26, "26 hours"),
        (64 * HOUR, "64 hours"),  # a weekend is not rounded to 3 days
        (3 * DAY, "3 days"),
        (3.5 * DAY, "4 days"),
        (1 * DAY + 3 * DAY, "4 days"),
        (400 * DAY, "400 days"),
        (1461 * DAY, "4 years"),
        (-HOUR * 3, "-3 hours"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("seconds", [math.nan, math.inf, -math.inf])
def test_format_duration_refuses_what_is_not_a_duration(seconds: float) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        format_duration(seconds)
