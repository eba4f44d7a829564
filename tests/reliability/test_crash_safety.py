"""Crash safety of the file sink (issue 6, item 4): SIGKILL mid-write, and two exports at once.

The writer is a separate process (``support/sink_writer.py``) pushing a stream of 0.3-1 MB snapshot
documents into one FileSink directory and printing a line before and after every push, so the
test knows which document was in flight when it killed it. What may be left behind after a
SIGKILL, and why it is accepted: ``write_atomic``'s temporary files (``.latest.json.*.tmp``
beside ``latest.json``, ``.<entry>.json.*.tmp`` in ``history/``), since a killed process cannot
clean up. They are dot files that do not end in ``.json``, so neither the sink (which reads only
``latest.json``) nor anything listing ``history/*.json`` reads them as documents.

Run ``pytest tests/reliability/test_crash_safety.py -q -s`` to see the figures of a run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import re
import select
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import sink_writer

from airflow_provider_coremodels.core import load_document
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.io.atomic import write_atomic
from airflow_provider_coremodels.sinks import FileSink
from airflow_provider_coremodels.sinks.layout import history_name

pytestmark = pytest.mark.slow  # exports killed at random moments, in subprocesses

WRITER = Path(sink_writer.__file__)
SEED = 20261129
KILLS = 50
CONCURRENT_PUSHES = 12  # per writer
TEMPORARY = re.compile(r"^\.(latest\.json|\d{8}T\d{6}Z-[0-9a-f]{16}\.json)\.[^/]+\.tmp$")


@dataclass(frozen=True)
class Announced:
    """A ``pushing`` line: the document a writer was about to push."""

    index: int
    fingerprint: str
    sha256: str
    size: int
    started: float


class Writer:
    """One ``sink_writer.py`` process and the lines it has printed so far."""

    def __init__(self, root: Path, stream: str, start: int, count: int, *, wait: bool = False) -> None:
        command = [sys.executable, str(WRITER), str(root), stream, str(start), str(count)]
        self.proc = subprocess.Popen(
            [*command, "--wait"] if wait else command,
            stdin=subprocess.PIPE if wait else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: list[list[str]] = []
        self._partial = b""

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.proc.poll() is None:  # a failed assertion must not leave a writer running
            self.proc.kill()
            self.proc.communicate()

    def _feed(self, chunk: bytes) -> None:
        *complete, self._partial = (self._partial + chunk).split(b"\n")
        self.lines.extend(line.decode().split() for line in complete)

    def count(self, word: str) -> int:
        return sum(1 for line in self.lines if line[0] == word)

    def read_until(self, done: Callable[[Writer], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done(self):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"writer printed only {self.lines}"
            assert self.proc.stdout is not None
            if select.select([self.proc.stdout], [], [], remaining)[0]:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    _, err = self.proc.communicate()
                    raise AssertionError(f"writer exited {self.proc.returncode}: {err.decode()}")
                self._feed(chunk)

    def finish(self, timeout: float) -> None:
        """Wait for a normal exit and collect the rest of its output."""
        out, err = self.proc.communicate(timeout=timeout)
        self._feed(out)
        assert self.proc.returncode == 0, err.decode()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        out, _ = self.proc.communicate()
        self._feed(out)
        assert self.proc.returncode == -signal.SIGKILL

    def announced(self) -> list[Announced]:
        return [
            Announced(int(line[1]), line[2], line[3], int(line[4]), float(line[5]))
            for line in self.lines
            if line[0] == "pushing"
        ]

    def pushed(self) -> list[tuple[int, bool, float]]:
        """(index, unchanged, monotonic time) of every push that returned."""
        return [(int(line[1]), line[3] == "1", float(line[4])) for line in self.lines if line[0] == "pushed"]


class Store:
    """Checks a sink directory, validating each distinct content once.

    The sink only ever replaces files (rename), never rewrites one in place, so a file whose
    inode, size and mtime are unchanged still holds the content already checked.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[tuple[int, int, int], str] = {}  # (inode, size, mtime) -> sha256
        self.names: dict[str, str] = {}  # sha256 -> the history name of that content

    def whole(self, path: Path) -> str:
        """Assert ``path`` holds a complete, valid, unedited snapshot document; its bytes' sha256."""
        with open(path, "rb") as handle:  # stat and read the same file, even if it is replaced meanwhile
            stat = os.fstat(handle.fileno())
            key = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            if key in self.files:
                return self.files[key]
            data = handle.read()
        self.files[key] = self.valid(data, path)
        return self.files[key]

    def valid(self, data: bytes, where: object) -> str:
        """Assert ``data`` is a complete, valid, unedited snapshot document; its sha256."""
        sha = hashlib.sha256(data).hexdigest()
        if sha not in self.names:
            doc = json.loads(data)  # a truncated or mixed file fails here or below
            assert doc["connector"] == "airflow", where
            assert doc["snapshotStored"] is True, where
            stored = load_document(data)
            assert stored.estate is not None, where
            assert stored.fingerprint == doc["fingerprint"], where
            edited = [r.message for r in stored.estate.lossiness if r.artifact == "snapshot"]
            assert edited == [], f"{where}: {edited}"  # the recomputed fingerprint matches the content
            self.names[sha] = history_name(doc)
        return sha

    def temporaries(self) -> set[Path]:
        return {*self.root.glob(".*.tmp"), *self.root.glob("history/.*.tmp")}

    def check(self) -> tuple[str | None, dict[str, str]]:
        """Every visible file whole; returns latest.json's sha256 and {history name: sha256}."""
        names = {p.name for p in self.root.iterdir()} if self.root.exists() else set()
        strays = {n for n in names if n not in {".lock", "latest.json", "history"} and not TEMPORARY.match(n)}
        assert strays == set(), strays
        history: dict[str, str] = {}
        for path in sorted(self.root.glob("history/*")):
            if TEMPORARY.match(path.name):
                continue
            assert path.name.endswith(".json"), path
            history[path.name] = self.whole(path)
            assert path.name == self.names[history[path.name]], f"{path.name} holds another document"
        for tmp in self.temporaries():  # never read as a document: not *.json, and not the baseline
            assert TEMPORARY.match(tmp.name) and not tmp.name.endswith(".json"), tmp
        latest = self.root / "latest.json"
        if not latest.exists():
            assert FileSink(self.root).read_baseline() is None
            return None, history
        sha = self.whole(latest)
        assert hashlib.sha256(FileSink(self.root).read_baseline() or b"").hexdigest() == sha
        assert sha in history.values(), "latest.json has no twin in history/"
        return sha, history


def lock_is_free(root: Path) -> bool:
    if not (root / ".lock").exists():
        return True
    with open(root / ".lock", "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        return True


def timed_write(path: Path, data: bytes) -> float:
    started = time.monotonic()
    write_atomic(path, data)
    return time.monotonic() - started


def wait_for_temporary(root: Path, aim: str, known: set[Path], deadline: float) -> bool:
    """Poll until a new temporary file of ``history/`` or of ``latest.json`` appears: that write began."""
    folder, prefix = (root / "history", ".") if aim == "history/" else (root, ".latest.json.")
    names = {p.name for p in known}
    while time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            if any(
                n.startswith(prefix) and n.endswith(".tmp") and n not in names for n in os.listdir(folder)
            ):
                return True
        time.sleep(0.0001)  # a write's temporary file lives a millisecond or more
    return False


def seconds_per_byte(writer: Writer, baseline: int) -> list[float]:
    """Push time over bytes handled (the baseline read back, the document written twice), per push."""
    announced = {a.index: a for a in writer.announced()}
    rates = []
    for index, unchanged, ended in writer.pushed():
        if not unchanged:
            rates.append((ended - announced[index].started) / (baseline + 2 * announced[index].size))
            baseline = announced[index].size
    return rates


def test_sigkill_at_random_moments_during_pushes_never_leaves_a_partial_document(tmp_path: Path) -> None:
    """50 SIGKILLs mid-push into one directory: latest.json old or new and whole, history whole, lock free."""
    began = time.monotonic()
    # How long a push takes here: it reads the baseline back and decodes it, then writes the
    # document twice (history, then latest.json), so its time grows with both sizes.
    with Writer(tmp_path / "calibration", "calibration", 0, 5) as calibration:
        calibration.finish(timeout=60)
    rates = seconds_per_byte(calibration, 0)
    blob = (tmp_path / "calibration" / "latest.json").read_bytes()
    write_seconds = statistics.median(timed_write(tmp_path / "calibration" / "probe", blob) for _ in range(5))

    rng = random.Random(SEED)
    root = tmp_path / "sink"
    store = Store(root)
    latest: str | None = None  # sha256 of latest.json as last observed
    next_index = 0
    phases: Counter[tuple[str, str]] = Counter()  # (aim, where the kill landed)
    left: list[tuple[int, int]] = []  # (size of a temporary file left behind, size of the document)

    for _ in range(KILLS):
        target = rng.choice((1, 1, 2))  # kill during the run's first push, or its second
        # Half the kills at a random point of the push, by its expected time (which varies 3-fold
        # from push to push here, more under load). The other half inside one of its two writes:
        # when that write's temporary file appears, plus a random part of a write's time.
        aim = rng.choice(("anywhere", "anywhere", "history/", "latest.json"))
        progress = rng.uniform(0, 1.1)
        into_write = rng.uniform(0, 0.6 * write_seconds)

        before = latest
        before_size = (root / "latest.json").stat().st_size if before else 0
        before_history = {p.name: p.stat().st_ino for p in root.glob("history/*.json")}
        before_temporaries = store.temporaries()

        with Writer(root, "kill", next_index, 1_000) as writer:
            writer.read_until(lambda w, n=target: w.count("pushing") >= n, timeout=30)
            *earlier, pushing = writer.announced()
            if aim == "anywhere":
                baseline = earlier[-1].size if earlier else before_size
                expected = statistics.median(rates) * (baseline + 2 * pushing.size)
                time.sleep(max(0.0, pushing.started + progress * expected - time.monotonic()))
            elif wait_for_temporary(root, aim, before_temporaries, deadline=time.monotonic() + 2):
                time.sleep(into_write)
            writer.kill()

        announced = {a.index: a for a in writer.announced()}
        completed = writer.pushed()
        rates += seconds_per_byte(writer, before_size)
        returned = {index for index, _, _ in completed}
        in_flight = [a for i, a in announced.items() if i not in returned]
        assert len(in_flight) <= 1, in_flight
        # The old document: the last one a push returned for (in this run or before), or none yet.
        old = announced[completed[-1][0]].sha256 if completed else before
        candidates = {old} | {a.sha256 for a in in_flight}

        latest, history = store.check()
        assert latest in candidates, f"latest.json is {latest}, expected one of {candidates}"
        assert lock_is_free(root), "the killed writer's lock is still held"

        # Where the kill landed, from what the writer printed and what it left on disk.
        new_temporaries = store.temporaries() - before_temporaries
        if in_flight:
            flight = in_flight[0]
            left += [(p.stat().st_size, flight.size) for p in new_temporaries]
            entry = history_name(
                {
                    "state": {"capturedAt": sink_writer.captured_at(flight.index)},
                    "fingerprint": flight.fingerprint,
                }
            )
            if any(p.parent.name == "history" for p in new_temporaries):
                phase = "in the history write (temporary file left)"
            elif new_temporaries:
                phase = "in the latest.json write (temporary file left)"
            elif latest == flight.sha256 == before:
                phase = "retrying a document already stored (unchanged)"
            elif latest == flight.sha256:
                phase = "after latest.json was replaced"
            elif entry in history and before_history.get(entry) != (root / "history" / entry).stat().st_ino:
                phase = "between the history write and latest.json"
            else:
                phase = "before the first write (reading the baseline, encoding)"
            next_index = flight.index  # a restarted export retries the interrupted document
        else:
            assert new_temporaries == set()
            phase = "between pushes"
            next_index = completed[-1][0] + 1 if completed else next_index
        phases[aim, phase] += 1

    # After all that, a normal export into the same directory completes promptly.
    final_index = next_index + 1
    with Writer(root, "kill", final_index, 1) as writer:
        writer.finish(timeout=60)  # a lock left behind would hold it for ever
    assert [unchanged for _, unchanged, _ in writer.pushed()] == [False]
    latest, history = store.check()
    final = encode(sink_writer.document("kill", final_index))  # built here, not taken from the writer
    assert (root / "latest.json").read_bytes() == final
    assert history[history_name(json.loads(final))] == hashlib.sha256(final).hexdigest()

    landed = Counter(phase for (_, phase), n in phases.items() for _ in range(n))
    mid_push = KILLS - landed["between pushes"] - landed["retrying a document already stored (unchanged)"]
    in_write = sum(n for phase, n in landed.items() if "temporary file left" in phase)
    pairs = zip(calibration.announced(), calibration.pushed(), strict=True)
    durations = [ended - announced.started for announced, (_, _, ended) in pairs]
    print(
        f"\n{KILLS} kills in {time.monotonic() - began:.1f}s (uninterrupted push"
        f" {min(durations) * 1000:.0f}-{max(durations) * 1000:.0f} ms, one write_atomic"
        f" {write_seconds * 1000:.1f} ms): {mid_push} landed with a push in flight, {in_write} inside"
        f" write_atomic; {len(left)} temporary files left ({sum(size < full for size, full in left)} partial,"
        f" {sum(size == full for size, full in left)} whole but never renamed), {len(store.temporaries())}"
        f" still on disk after the final push; history holds {len(history)} documents"
    )
    for (aim, phase), n in sorted(phases.items()):
        print(f"  aimed {aim:<11} landed {phase}: {n}")
    assert mid_push >= KILLS // 2, phases  # the kills really land inside pushes
    assert in_write >= 5, phases  # and some inside write_atomic itself


def test_two_exports_into_one_directory_at_once_both_finish_and_nothing_is_corrupt(tmp_path: Path) -> None:
    """Two processes pushing 12 different documents each into one FileSink at once: both finish, all whole."""
    began = time.monotonic()
    root = tmp_path / "sink"
    store = Store(root)
    with contextlib.ExitStack() as stack:
        writers = [
            stack.enter_context(Writer(root, stream, 0, CONCURRENT_PUSHES, wait=True))
            for stream in ("east", "west")
        ]
        for writer in writers:
            writer.read_until(lambda w: w.count("ready") == 1, timeout=60)
        for writer in writers:  # both start pushing at the same moment
            assert writer.proc.stdin is not None
            writer.proc.stdin.write(b"go\n")
            writer.proc.stdin.close()
            writer.proc.stdin = None  # so that communicate() does not flush it

        # Meanwhile, read latest.json as a consumer would (checked below), and watch the writes:
        # under the lock one writer writes at a time, so there is never more than one temporary file.
        reads: dict[str, bytes] = {}
        samples, most_temporaries = 0, 0
        while any(writer.proc.poll() is None for writer in writers):
            with contextlib.suppress(FileNotFoundError):
                data = (root / "latest.json").read_bytes()
                reads.setdefault(hashlib.sha256(data).hexdigest(), data)
            most_temporaries = max(most_temporaries, len(store.temporaries()))
            samples += 1
            time.sleep(0.0005)
        for writer in writers:
            writer.finish(timeout=60)

    announced = [a for writer in writers for a in writer.announced()]
    for writer in writers:
        assert [(index, unchanged) for index, unchanged, _ in writer.pushed()] == [
            (i, False) for i in range(CONCURRENT_PUSHES)
        ]
    assert len({a.fingerprint for a in announced}) == 2 * CONCURRENT_PUSHES  # all different documents
    latest, history = store.check()
    assert latest in {writer.announced()[-1].sha256 for writer in writers}
    seen = {store.valid(data, "latest.json as read during the pushes") for data in reads.values()}
    assert seen <= {a.sha256 for a in announced}
    assert most_temporaries <= 1, "two writes at once: the lock did not serialize the pushes"
    # One history entry per distinct fingerprint, each the document that was pushed.
    assert sorted(history.values()) == sorted(a.sha256 for a in announced)
    assert sorted(name.rsplit("-", 1)[1] for name in history) == sorted(
        f"{a.fingerprint}.json" for a in announced
    )
    assert store.temporaries() == set()  # normal exits leave nothing behind
    assert lock_is_free(root)

    # They really ran at once: pushes of one overlapped pushes of the other (and waited for the lock).
    spans = [
        [(a.started, ended) for a, (_, _, ended) in zip(writer.announced(), writer.pushed(), strict=True)]
        for writer in writers
    ]
    overlapping = sum(1 for s, e in spans[0] if any(s < e2 and s2 < e for s2, e2 in spans[1]))
    print(
        f"\n2 x {CONCURRENT_PUSHES} concurrent pushes in {time.monotonic() - began:.1f}s;"
        f" {overlapping} of east's pushes overlapped one of west's; latest.json and the temporary files"
        f" sampled {samples} times while they ran: {len(seen)} distinct documents read, always whole;"
        f" at most {most_temporaries} temporary file at a time"
    )
    assert overlapping > 0
