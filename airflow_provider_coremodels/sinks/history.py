"""A file or object-storage sink's ``history/``, read back, and the rule that keeps it from growing.

- ``open_history`` reads a sink's directory: a local one through descriptors that follow no
  symbolic link (as the file sink writes it), object storage through its path object. Every entry
  is read within the one bound every stored document is read within.
- ``list_history`` lists the entries newest first, each summarized (``core.history``) from its
  bytes, marks ``latest.json``'s twin, and says what could not be read on the entry's own row: a
  damaged entry never ends a listing. Summaries are kept per entry until the entry changes, so the
  UI page, which lists on every view, reads only what is new. The ``history`` command and the
  page's chart both list through here.
- ``parse_reference`` and ``resolve`` name one entry: ``latest``, ``~N``, a fingerprint prefix or
  a time (``compare SINK@REF``).
- ``Retention`` decides which entries a push removes (``--history-keep``, ``--history-max-age``);
  the sinks remove them, under their own safety rules.

No Airflow here: the UI page imports this module.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.snapshots.history import EntryDrift, EntrySummary, summarize
from airflow_provider_coremodels.errors import SinkError, SnapshotDocumentError, UsageError
from airflow_provider_coremodels.io.input_files import Unreadable, read_limited
from airflow_provider_coremodels.sinks.layout import (
    HISTORY,
    HISTORY_ENTRY,
    LATEST,
    newest_first,
    stamp_text,
    stamp_time,
)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOT_FOLLOWED = "is a symbolic link; not followed"


# -- reading a sink's history/ --------------------------------------------------------------


class HistoryReader:
    """``history/`` and ``latest.json`` of one sink directory; ``location`` is safe to print."""

    location: str

    def opened(self) -> contextlib.AbstractContextManager[Any]:
        """Hold what reading needs open while a listing reads many entries."""
        return contextlib.nullcontext(self)

    def names(self) -> list[str]:
        """Every name in ``history/`` (none when it does not exist yet)."""
        raise NotImplementedError

    def version(self, name: str) -> Any:
        """What changes when the entry ``name`` is replaced; None where names are never reused."""
        return None

    def read(self, name: str) -> bytes:
        """The entry's bytes, within the bound; ``Unreadable`` (or the store's error) if not."""
        raise NotImplementedError

    def read_latest(self) -> bytes | None:
        """``latest.json``'s bytes, None when there is none."""
        raise NotImplementedError

    def where(self, name: str) -> str:
        """Where the entry ``name`` is, as a person names it."""
        return f"{self.location.rstrip('/')}/{HISTORY}/{name}"


class LocalHistory(HistoryReader):
    """A local sink directory. The root may be a symlink (whoever names the sink chooses it);
    ``history/`` and its entries are opened without following one, and only regular files are read."""

    def __init__(self, root: Path, location: str | None = None) -> None:
        self.root = Path(root).expanduser()
        self.location = location or str(self.root)
        self._history_fd: int | None = None
        self._opened = False

    @contextlib.contextmanager
    def opened(self) -> Iterator[LocalHistory]:
        """Hold ``history/`` open while listing: every entry is then read through one descriptor."""
        try:
            yield self
        finally:
            if self._history_fd is not None:
                os.close(self._history_fd)
            self._history_fd, self._opened = None, False

    def _history(self) -> int | None:
        if not self._opened:
            self._history_fd = self._open_history()
            self._opened = True
        return self._history_fd

    def _open_history(self) -> int | None:
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            return os.open(HISTORY, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC, dir_fd=root_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(HISTORY, root_fd):
                raise SinkError(f"sink {self.location}: {HISTORY}/ {_NOT_FOLLOWED}") from None
            raise
        finally:
            os.close(root_fd)

    def names(self) -> list[str]:
        fd = self._history()
        if fd is None:
            return []
        with os.scandir(fd) as entries:
            return [entry.name for entry in entries]

    def version(self, name: str) -> Any:
        fd = self._history()
        try:
            info = os.lstat(name, dir_fd=fd)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino, stat.S_IFMT(info.st_mode))

    def read(self, name: str) -> bytes:
        fd = self._history()
        if fd is None:
            raise Unreadable("does not exist")
        return _read_local(name, fd)

    def read_latest(self) -> bytes | None:
        try:
            root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            return _read_local(LATEST, root_fd)
        except FileNotFoundError:
            return None
        finally:
            os.close(root_fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def _read_local(name: str, dir_fd: int) -> bytes:
    """One file of a sink directory: never through a symlink, never a FIFO or a device."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP or _is_link(name, dir_fd):
            raise Unreadable(_NOT_FOLLOWED) from None
        raise Unreadable(f"cannot be read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Unreadable("is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return read_limited(handle, info.st_size, defaults.MAX_DOCUMENT_BYTES)


class StoreHistory(HistoryReader):
    """An object-storage sink, through its path object (``ObjectStoragePath``, or any path-like
    with ``/``, ``iterdir`` and ``open``). Entry names are written once, so a name is its version."""

    def __init__(self, root: Any, location: str) -> None:
        self.root = root
        self.location = location

    def names(self) -> list[str]:
        try:
            return [path.name for path in fresh(self.root / HISTORY).iterdir()]
        except FileNotFoundError:
            return []

    def read(self, name: str) -> bytes:
        return _read_object(self.root / HISTORY / name)

    def read_latest(self) -> bytes | None:
        try:
            return _read_object(self.root / LATEST)
        except FileNotFoundError:
            return None


def fresh(path: Any) -> Any:
    """``path``, its store's cached listing of it forgotten: s3fs, gcsfs and adlfs keep every listing
    for the life of the process, and the exports that add entries run in other processes."""
    fs = getattr(path, "fs", None)
    if fs is not None and hasattr(fs, "invalidate_cache"):
        fs.invalidate_cache(getattr(path, "path", None) or str(path))
    return path


def _read_object(path: Any) -> bytes:
    with path.open("rb") as handle:
        size = getattr(handle, "size", None)  # an fsspec file knows its size once opened
        return read_limited(handle, size if isinstance(size, int) else None, defaults.MAX_DOCUMENT_BYTES)


def open_history(root: Any, location: str | None = None) -> HistoryReader:
    """The history reader of a sink directory: a local ``Path``, or an object-storage path."""
    if isinstance(root, (str, Path)):
        return LocalHistory(Path(root), location)
    return StoreHistory(root, location or str(root))


# -- the listing ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of ``history/``: its name says when it was captured and what it holds; its
    ``summary`` is read from it, or ``problem`` says why it could not be."""

    name: str
    location: str
    summary: EntrySummary | None
    problem: str | None = None
    latest: bool = False
    #: With ``history --team``: the team's drift since the older entry (None: none to compare).
    drift: EntryDrift | None = None

    @property
    def _match(self) -> re.Match[str]:
        match = HISTORY_ENTRY.match(self.name)
        assert match is not None  # only matching names become entries
        return match

    @property
    def stamp(self) -> str:
        return self._match["stamp"]

    @property
    def fingerprint(self) -> str:
        return self._match["fingerprint"]

    @property
    def findings_digest(self) -> str | None:
        return self._match["findings"]

    @property
    def findings_only(self) -> bool:
        """Stored again because only its findings changed (the name carries the findings digest)."""
        return self.findings_digest is not None

    @property
    def captured_at(self) -> str:
        """As the document says it, else as its name spells it."""
        if self.summary is not None and self.summary.captured_at:
            return self.summary.captured_at
        return stamp_text(self.stamp)

    @property
    def over_the_cap(self) -> bool:
        return self.summary is not None and not self.summary.snapshot_stored

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "location": self.location,
            "capturedAt": self.captured_at,
            "fingerprint": self.fingerprint,
            "findingsDigest": self.findings_digest,
            "findingsOnly": self.findings_only,
            "latest": self.latest,
            "snapshotStored": None if self.summary is None else self.summary.snapshot_stored,
            "open": None if self.summary is None else dict(self.summary.open),
            "waived": None if self.summary is None else self.summary.waived,
            "problem": self.problem,
        }
        if self.summary is not None and self.summary.fingerprint != self.fingerprint:
            out["documentFingerprint"] = self.summary.fingerprint
        return out


@dataclass(frozen=True, slots=True)
class Listing:
    """``history/`` newest first: ``entries`` (at most the limit asked for) of ``total``.

    ``latest`` summarizes ``latest.json`` (``latest_problem`` says why it could not be read);
    ``twin`` names its entry in ``history/``, wherever that is in the listing.
    """

    location: str
    entries: tuple[Entry, ...]
    total: int
    latest: EntrySummary | None
    latest_problem: str | None
    twin: str | None
    #: With ``history --team``: the team whose view it is (its findings and its DAGs' drift).
    team: str | None = None

    def as_dict(self) -> dict[str, Any]:
        latest = None
        if self.latest is not None:
            latest = {**self.latest.as_dict(), "twin": self.twin}
        entries = [entry.as_dict() for entry in self.entries]
        if self.team is not None:
            for entry, said in zip(self.entries, entries, strict=True):
                said["drift"] = entry.drift.as_dict() if entry.drift is not None else None
        return {
            **({"team": self.team} if self.team is not None else {}),
            "sink": self.location,
            "total": self.total,
            "shown": len(self.entries),
            "latest": latest,
            "latestProblem": self.latest_problem,
            "entries": entries,
        }


def team_listing(listing: Listing, team: str, known: Sequence[str] | None = None) -> Listing:
    """The listing as one team sees it (``history --team``): each entry's open findings those of
    ``team``; a ``ValueError`` when no entry listed was audited with that team (or, ``known``, the
    teams of the rules file given, when it names none of them)."""
    from airflow_provider_coremodels.core.checks.teams import checked_team

    if known is None:
        summaries = [e.summary for e in listing.entries if e.summary is not None]
        if listing.latest is not None:
            summaries.append(listing.latest)
        found: list[str] = []
        for summary in summaries:
            found.extend(t for t in summary.teams or () if t not in found)
        checked_team(team, found or None, "no snapshot listed")
    else:
        checked_team(team, known, "the rules file")
    entries = tuple(
        dataclasses.replace(e, summary=e.summary.of_team(team)) if e.summary is not None else e
        for e in listing.entries
    )
    latest = listing.latest.of_team(team) if listing.latest is not None else None
    return dataclasses.replace(listing, entries=entries, latest=latest, team=team)


def team_drift(reader: HistoryReader, listing: Listing, team: str, teams: Any = None) -> Listing:
    """Each listed entry with ``team``'s drift since the next older entry that holds an estate
    (``compare --team`` between the two: its DAGs added, removed and changed, the edges touching
    them), each DAG's team as ``teams`` (the rules file given) says, else as each entry recorded.
    An entry without an estate (damaged, over the cap), or with no older one, has none. Reads the
    listed entries and one older, each once, two at a time."""
    from airflow_provider_coremodels.core.comparing.compare import Side, compare, read_side

    shown = {entry.name for entry in listing.entries}
    if not shown:
        return listing
    names = newest_first([name for name in reader.names() if HISTORY_ENTRY.match(name)])
    last_shown = max(i for i, name in enumerate(names) if name in shown)
    drift: dict[str, EntryDrift] = {}
    waiting: tuple[str, Side] | None = None
    for index, name in enumerate(names):
        if index > last_shown and waiting is None:
            break
        try:
            side = read_side(name, reader.where(name), reader.read(name))
        except (Unreadable, SnapshotDocumentError, OSError):
            continue
        if side.estate is None:
            continue
        if waiting is not None:
            change = compare(side, waiting[1], team=team, teams=teams).change
            if change is not None:
                drift[waiting[0]] = EntryDrift(name, change)
        waiting = (name, side) if name in shown else None
    entries = tuple(dataclasses.replace(e, drift=drift.get(e.name)) for e in listing.entries)
    return dataclasses.replace(listing, entries=entries, team=team)


#: The latest document's version when the caller has it already (the page has read latest.json).
_READ_IT = object()

# Summaries kept across listings: (location, name) -> (the entry's version, summary or problem).
_MAX_CACHED = 20_000
_cache_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str], tuple[Any, EntrySummary | str]] = OrderedDict()


def summary_of(reader: HistoryReader, name: str) -> EntrySummary | str:
    """The entry's summary, or why it cannot be read: read again only when the entry changed."""
    key = (reader.location, name)
    version = reader.version(name)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None and cached[0] == version:
            _cache.move_to_end(key)
            return cached[1]
    said: EntrySummary | str
    try:
        said = summarize(reader.read(name))
    except Unreadable as exc:
        said = str(exc)
        if said.startswith("cannot be read"):
            return said  # a failed read may succeed next time: nothing is kept
    except SnapshotDocumentError as exc:
        said = exc.problem
    except FileNotFoundError:
        return "was removed while it was listed"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    with _cache_lock:
        _cache[key] = (version, said)
        _cache.move_to_end(key)
        while len(_cache) > _MAX_CACHED:
            _cache.popitem(last=False)
    return said


def list_history(
    reader: HistoryReader, *, limit: int | None = None, latest_version: Any = _READ_IT
) -> Listing:
    """``history/`` newest first, the newest ``limit`` entries summarized (all when None or 0).

    ``latest_version``: the ``<fingerprint>-<findings digest>`` of ``latest.json`` when the caller
    knows it (None: there is none), so it is not read again. A failing store raises its own error.
    """
    names = [name for name in reader.names() if HISTORY_ENTRY.match(name)]
    latest: EntrySummary | None = None
    latest_problem = None
    if latest_version is _READ_IT:
        try:
            data = reader.read_latest()
            latest = summarize(data) if data is not None else None
        except Unreadable as exc:
            latest_problem = f"{LATEST} {exc}"
        except SnapshotDocumentError as exc:
            latest_problem = f"{LATEST} {exc.problem}"
        latest_version = latest.version if latest is not None else None
    shown = newest_first(names, limit=limit or None)
    said = {name: summary_of(reader, name) for name in shown}

    def version_of(name: str) -> str | None:
        summary = said[name] if name in said else summary_of(reader, name)
        if isinstance(summary, EntrySummary) and summary.snapshot_stored:
            return summary.version
        return None

    twin = None
    if isinstance(latest_version, str):
        fingerprint = latest_version.partition("-")[0]
        candidates = newest_first(n for n in names if f"-{fingerprint}" in n)  # the few of its estate
        twin = twin_of(candidates, latest_version, version_of)
    entries = tuple(
        Entry(
            name,
            reader.where(name),
            summary if isinstance(summary, EntrySummary) else None,
            None if isinstance(summary, EntrySummary) else summary,
            latest=name == twin,
        )
        for name, summary in said.items()
    )
    return Listing(reader.location, entries, len(names), latest, latest_problem, twin)


def twin_of(names: Sequence[str], version: str, version_of: Callable[[str], str | None]) -> str | None:
    """The newest entry among ``names`` (newest first) that holds the document of ``version``.

    Names decide where they can: an entry of another fingerprint is not it, and one whose name
    carries a findings digest is it exactly when the digests agree; only an entry named by its
    fingerprint alone is read (``version_of``) to learn its findings.
    """
    fingerprint, _, digest = version.partition("-")
    for name in names:
        match = HISTORY_ENTRY.match(name)
        if match is None or match["fingerprint"] != fingerprint:
            continue
        if match["findings"] is not None:
            if match["findings"] == digest:
                return name
            continue
        if version_of(name) == version:
            return name
    return None


# -- naming one entry: SINK@REF -------------------------------------------------------------

_BACK = re.compile(r"~(\d{1,6})")
_PREFIX = re.compile(r"[0-9a-f]{4,16}|[0-9a-f]{16}-[0-9a-f]{1,16}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", re.IGNORECASE)
_STAMP = re.compile(r"\d{8}T\d{6}(\.\d+)?Z?")


@dataclass(frozen=True, slots=True)
class Reference:
    """One entry of a sink's history, as ``SINK@REF`` names it."""

    kind: str  # "latest", "back", "prefix" or "time"
    text: str
    back: int = 0
    until: datetime | None = None


def parse_reference(text: str) -> Reference | None:
    """``latest``, ``~N``, a fingerprint prefix (4 to 16 hex digits, or ``<fingerprint>-<digest
    prefix>``), a date (the end of that day, UTC) or a time; None for anything else."""
    text = text.strip()
    if text.lower() == "latest":
        return Reference("latest", text)
    if back := _BACK.fullmatch(text):
        return Reference("back", text, back=int(back[1]))
    if _PREFIX.fullmatch(text):
        return Reference("prefix", text)
    if _DATE.fullmatch(text):
        try:
            day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        except ValueError:
            return None
        return Reference("time", text, until=day + timedelta(days=1) - timedelta(microseconds=1))
    if _TIME.fullmatch(text):
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
        return Reference("time", text, until=when if when.tzinfo else when.replace(tzinfo=timezone.utc))
    if _STAMP.fullmatch(text):
        until = stamp_time(text)
        return Reference("time", text, until=until) if until is not None else None
    return None


def split_reference(given: str) -> tuple[str, Reference | None]:
    """``SINK@REF`` as the sink and the reference; anything else (no ``@``, or no reference after
    the last one) as it is, with None."""
    head, separator, tail = given.rpartition("@")
    if not separator or not head:
        return given, None
    reference = parse_reference(tail)
    return (head, reference) if reference is not None else (given, None)


def resolve(reference: Reference, names: Sequence[str], where: str) -> str | None:
    """The entry ``reference`` names among ``names`` (newest first), None for ``latest``;
    ``UsageError`` when it names none, or more than one estate."""
    if reference.kind == "latest":
        return None
    if not names:
        raise UsageError(f"{where}@{reference.text}: {where} has no {HISTORY}/ entry")
    if reference.kind == "back":
        if reference.back >= len(names):
            raise UsageError(
                f"{where}@{reference.text}: {HISTORY}/ holds {len(names)} entries, so ~0 to ~{len(names) - 1}"
            )
        return names[reference.back]
    if reference.kind == "prefix":
        found = [n for n in names if _version_text(n).startswith(reference.text)]
        estates = sorted({_version_text(n).partition("-")[0] for n in found})
        if not found:
            raise UsageError(f"{where}@{reference.text}: no {HISTORY}/ entry has a fingerprint starting so")
        if len(estates) > 1:
            shown = ", ".join(estates[:5]) + (", ..." if len(estates) > 5 else "")
            raise UsageError(
                f"{where}@{reference.text}: the prefix matches {len(estates)} fingerprints ({shown}): "
                "give more of it"
            )
        return found[0]  # one estate: its newest entry
    assert reference.until is not None
    for name in names:
        match = HISTORY_ENTRY.match(name)
        when = stamp_time(match["stamp"]) if match else None
        if when is not None and when <= reference.until:
            return name
    oldest = HISTORY_ENTRY.match(names[-1])
    since = stamp_text(oldest["stamp"]) if oldest else names[-1]
    raise UsageError(
        f"{where}@{reference.text}: no {HISTORY}/ entry was captured by then (the oldest is from {since})"
    )


def _version_text(name: str) -> str:
    """``<fingerprint>[-<findings digest>]`` of an entry's name."""
    match = HISTORY_ENTRY.match(name)
    if match is None:
        return ""
    return match["fingerprint"] + (f"-{match['findings']}" if match["findings"] else "")


# -- retention ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Retention:
    """Which history entries a push removes: beyond the newest ``keep`` (0 keeps every one), and
    captured more than ``max_age_days`` before the document being pushed. The newest entry and
    ``latest.json``'s twin are never removed, whatever the rule says."""

    keep: int = 0
    max_age_days: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.keep, bool) or not isinstance(self.keep, int) or self.keep < 0:
            raise ValueError(
                f"history_keep must be a whole number, 0 or more (0 keeps all), got {self.keep!r}"
            )
        age = self.max_age_days
        if age is not None and (isinstance(age, bool) or not isinstance(age, (int, float)) or not age > 0):
            raise ValueError(f"history_max_age_days must be a positive number of days, got {age!r}")

    @property
    def active(self) -> bool:
        return bool(self.keep) or self.max_age_days is not None

    def said(self) -> str:
        parts = []
        if self.keep:
            parts.append(f"keep the newest {self.keep}")
        if self.max_age_days is not None:
            parts.append(f"at most {self.max_age_days:g} days old")
        return ", ".join(parts) or "keep all"

    def plan(self, names: Collection[str], *, protect: Collection[str], now: datetime) -> list[str]:
        """The entries among ``names`` to remove, oldest first; names that are no entry are never
        among them."""
        if not self.active:
            return []
        cutoff = now - timedelta(days=self.max_age_days) if self.max_age_days is not None else None
        removed = []
        for index, name in enumerate(newest_first(list(names))):
            if index == 0 or name in protect:
                continue
            match = HISTORY_ENTRY.match(name)
            when = stamp_time(match["stamp"]) if match else None
            beyond = bool(self.keep) and index >= self.keep
            too_old = cutoff is not None and when is not None and when < cutoff
            if beyond or too_old:
                removed.append(name)
        return removed[::-1]


# -- the listing as a table -----------------------------------------------------------------


def render_listing(listing: Listing) -> str:
    """For a terminal: a line about the sink and its ``latest.json``, then one row per entry
    (open findings by severity, waived, and notes), the newest first. Text from the documents is
    escaped before the widths are measured."""
    count = f"{listing.total} entr{'y' if listing.total == 1 else 'ies'}"
    lines = [
        printable(f"history of {listing.location}: {count}" + (", newest first" if listing.total else ""))
    ]
    lines.append(printable(_latest_line(listing)))
    if listing.team is not None:
        lines.append(
            printable(
                f"team {listing.team}: its open findings, and the drift of its DAGs since the entry "
                "before (the fingerprints are the whole estate's)"
            )
        )
    if not listing.entries:
        return "\n".join(lines)
    severities = list(SEVERITIES)
    for entry in listing.entries:
        for severity, _ in entry.summary.open if entry.summary else ():
            if severity not in severities:
                severities.append(severity)
    drift = ["TEAM DRIFT"] if listing.team is not None else []
    header = ["CAPTURED AT", "FINGERPRINT", *(s.upper() for s in severities), "WAIVED", *drift, "NOTES"]
    rows = [header]
    for entry in listing.entries:
        summary = entry.summary
        counts = [str(summary.open_of(s)) if summary else "-" for s in severities]
        waived = str(summary.waived) if summary else "-"
        drifted = [printable(entry.drift.line()) if entry.drift else "-"] if drift else []
        rows.append(
            [
                printable(entry.captured_at),
                entry.fingerprint,
                *counts,
                waived,
                *drifted,
                printable(_notes(entry)),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    numeric = range(2, 2 + len(severities) + 1)
    lines.append("")
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(row[:-1])
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    older = listing.total - len(listing.entries)
    if older:
        lines += ["", f"... and {older} older entr{'y' if older == 1 else 'ies'} (--limit 0 lists them all)"]
    return "\n".join(lines)


#: The severity columns every listing shows, the most severe first.
SEVERITIES = ("Error", "Warning", "Info")


def _latest_line(listing: Listing) -> str:
    if listing.latest_problem:
        return f"{listing.latest_problem}"
    latest = listing.latest
    if latest is None:
        return f"no {LATEST}: no export has stored a whole snapshot here yet"
    captured = latest.captured_at or "at an unknown time"
    line = f"{LATEST}: fingerprint {latest.fingerprint or 'none'}, captured {captured}"
    if listing.twin is None:
        return line + f"; no {HISTORY}/ entry holds it"
    shown = any(entry.name == listing.twin for entry in listing.entries)
    return line + ("" if shown else f" ({HISTORY}/{listing.twin})")


def _notes(entry: Entry) -> str:
    if entry.problem is not None:
        return f"damaged: {entry.problem}"
    notes = []
    if entry.latest:
        notes.append(LATEST)
    if entry.findings_only:
        notes.append("findings only")
    if entry.over_the_cap:
        notes.append("over the cap: no datasets or lineage")
    if entry.summary is not None and entry.summary.fingerprint != entry.fingerprint:
        notes.append(f"holds fingerprint {entry.summary.fingerprint}, not its name's")
    return ", ".join(notes)
