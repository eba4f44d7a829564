"""A sink's history/ read back (``sinks/history.py``): the real file sink writes it, a listing reads it.

Every history here is written by ``FileSink.push``, export by export, as an export writes it; the
expected counts are computed from the documents pushed, never written into the test. Hostile
entries (garbage under an entry's name, a symlink, a FIFO, one over the bound) are made by hand,
since no sink writes them.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from support.helpers import document_for

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.snapshots.document import encode, stored_version
from airflow_provider_coremodels.core.snapshots.history import summarize
from airflow_provider_coremodels.errors import SinkError, SnapshotDocumentError, UsageError
from airflow_provider_coremodels.sinks import FileSink
from airflow_provider_coremodels.sinks.history import (
    LocalHistory,
    Reference,
    Retention,
    list_history,
    parse_reference,
    render_listing,
    resolve,
    split_reference,
)
from airflow_provider_coremodels.sinks.layout import entry_order, history_name, newest_first, stamp_text

OWNED = {"description": "d", "owners": ["team"], "is_paused": False}


def document(*dags: tuple[str, bool], captured_at: str, waive: bool = False, **kwargs: Any) -> dict:
    """DAGs named with whether they have an owner; ``waive`` waives every dag-no-owner."""
    raw = [{**OWNED, "dag_id": name, "owners": ["team"] if owned else []} for name, owned in dags]
    doc = document_for(raw, {d["dag_id"]: [] for d in raw}, [], **kwargs)
    doc["state"]["capturedAt"] = captured_at
    if waive:
        for finding in doc["findings"]:
            if finding["code"] == "dag-no-owner":
                finding["waived"] = {"reason": "ops owns it", "expires": None}
    return doc


def open_counts(doc: dict[str, Any]) -> dict[str, int]:
    return dict(Counter(f["severity"] for f in doc["findings"] if not f.get("waived")))


def exported(root: Path) -> list[dict[str, Any]]:
    """Four exports into one file sink, each as an export pushes it:
    a new estate; a changed one with a finding; the same with the finding waived (stored for its
    findings alone); a larger one over the snapshot cap (history only, latest.json stays)."""
    sink = FileSink(root)
    docs = [
        document(("a", True), captured_at="2026-11-25T06:00:00Z"),
        document(("a", True), ("b", False), captured_at="2026-11-26T06:00:00Z"),
        document(("a", True), ("b", False), captured_at="2026-11-27T06:00:00Z", waive=True),
        document(
            ("a", True),
            ("b", False),
            ("c", False),
            captured_at="2026-11-28T06:00:00Z",
            max_snapshot_bytes=100,
        ),
    ]
    results = [sink.push(doc) for doc in docs]
    assert [r.unchanged for r in results] == [False] * 4
    assert [r.baseline_replaced for r in results] == [True, True, True, False]
    return docs


@pytest.fixture
def sink_dir(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    root = tmp_path / "sink"
    return root, exported(root)


def listing_of(root: Path, **kwargs: Any) -> Any:
    reader = LocalHistory(root)
    with reader.opened():
        return list_history(reader, **kwargs)


# -- the listing ----------------------------------------------------------------------------


def test_the_listing_says_what_each_stored_snapshot_holds(sink_dir) -> None:
    root, docs = sink_dir
    listing = listing_of(root)
    names = sorted(os.listdir(root / "history"), key=entry_order, reverse=True)
    assert [e.name for e in listing.entries] == names and listing.total == 4
    newest_doc_first = docs[::-1]
    assert [e.captured_at for e in listing.entries] == [d["state"]["capturedAt"] for d in newest_doc_first]
    assert [dict(e.summary.open) for e in listing.entries] == [open_counts(d) for d in newest_doc_first]
    assert [e.summary.waived for e in listing.entries] == [
        sum(1 for f in d["findings"] if f.get("waived")) for d in newest_doc_first
    ]
    assert [e.findings_only for e in listing.entries] == [False, True, False, False]
    assert [e.over_the_cap for e in listing.entries] == [True, False, False, False]
    # latest.json holds the waived document, not the newest entry (that one is over the cap)
    assert [e.latest for e in listing.entries] == [False, True, False, False]
    assert listing.twin == history_name(docs[2], findings_changed=True)
    assert listing.latest is not None and listing.latest.version == stored_version(docs[2])


def test_a_limit_reads_only_the_newest_entries_and_still_finds_the_twin(sink_dir) -> None:
    root, docs = sink_dir
    listing = listing_of(root, limit=1)
    assert [e.fingerprint for e in listing.entries] == [docs[3]["fingerprint"]]
    assert (listing.total, listing.twin) == (4, history_name(docs[2], findings_changed=True))
    text = render_listing(listing)
    assert (
        f"latest.json: fingerprint {docs[2]['fingerprint']}, captured 2026-11-27T06:00:00Z (history/" in text
    )
    assert text.endswith("... and 3 older entries (--limit 0 lists them all)")


def test_the_table_has_a_row_per_entry_with_its_counts(sink_dir) -> None:
    root, docs = sink_dir
    lines = render_listing(listing_of(root)).splitlines()
    assert lines[0] == f"history of {root}: 4 entries, newest first"
    header, *rows = lines[3:]
    assert header.split() == ["CAPTURED", "AT", "FINGERPRINT", "ERROR", "WARNING", "INFO", "WAIVED", "NOTES"]
    assert len(rows) == 4
    for row, doc in zip(rows, docs[::-1], strict=True):
        cells = row.split()
        counts = open_counts(doc)
        assert cells[:6] == [
            doc["state"]["capturedAt"], doc["fingerprint"],
            str(counts.get("Error", 0)), str(counts.get("Warning", 0)), str(counts.get("Info", 0)),
            str(sum(1 for f in doc["findings"] if f.get("waived"))),
        ]  # fmt: skip
    assert rows[0].endswith("over the cap: no datasets or lineage")
    assert rows[1].endswith("latest.json, findings only")


def test_an_empty_or_missing_history_lists_nothing(tmp_path: Path) -> None:
    listing = listing_of(tmp_path / "nowhere")
    assert (listing.entries, listing.total, listing.latest, listing.twin) == ((), 0, None, None)
    assert render_listing(listing).splitlines() == [
        f"history of {tmp_path / 'nowhere'}: 0 entries",
        "no latest.json: no export has stored a whole snapshot here yet",
    ]


# -- hostile entries ------------------------------------------------------------------------


def entry_path(root: Path, stamp: str) -> Path:
    return root / "history" / f"{stamp}-{'f' * 16}.json"


@pytest.mark.parametrize(
    ("write", "problem"),
    [
        (lambda p: p.write_bytes(b"\x00garbage{"), "is not valid JSON"),
        (lambda p: p.write_text('{"a": 1}'), "has connector None, expected 'airflow'"),
        (lambda p: p.write_text('{"connector": "airflow", "schemaVersion": 2, "findings": 3}'),
         "is not a snapshot document: Expected `array`, got `int` - at `$.findings`"),
        (lambda p: p.write_text('{"connector": "airflow", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"),
         "is not valid JSON: maximum recursion depth exceeded"),
        (os.mkfifo, "is not a regular file"),
        (os.mkdir, "is not a regular file"),
    ],
    ids=["garbage", "other-json", "bad-findings", "deep", "fifo", "directory"],
)  # fmt: skip
def test_a_damaged_entry_is_a_row_that_says_so(sink_dir, write, problem: str) -> None:
    root, _ = sink_dir
    write(entry_path(root, "20261129T060000Z"))
    outcome: list[Any] = []
    worker = threading.Thread(target=lambda: outcome.append(listing_of(root)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the listing blocked on the entry"
    [listing] = outcome
    damaged = listing.entries[0]
    assert (damaged.summary, damaged.fingerprint) == (None, "f" * 16)
    assert damaged.problem is not None and damaged.problem.startswith(problem)
    assert [e.summary is not None for e in listing.entries[1:]] == [True] * 4  # the others are read
    row = render_listing(listing).splitlines()[4]
    assert row.split()[:7] == ["2026-11-29T06:00:00Z", "f" * 16, "-", "-", "-", "-", "damaged:"]


def test_a_symlink_in_history_is_not_followed(sink_dir, tmp_path: Path) -> None:
    root, docs = sink_dir
    outside = tmp_path / "outside.json"
    outside.write_bytes(encode(docs[0]))  # a document that would be listed, were the link followed
    entry_path(root, "20261129T060000Z").symlink_to(outside)
    listing = listing_of(root)
    assert listing.entries[0].summary is None
    assert listing.entries[0].problem == "is a symbolic link; not followed"


def test_a_symlinked_history_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    exported(elsewhere)
    root = tmp_path / "sink"
    root.mkdir()
    (root / "history").symlink_to(elsewhere / "history")
    with pytest.raises(SinkError, match=r"history/ is a symbolic link; not followed$"):
        listing_of(root)


def test_an_entry_over_the_bound_is_refused_without_reading_it(sink_dir, monkeypatch) -> None:
    root, _ = sink_dir
    sizes = {p.name: p.stat().st_size for p in (root / "history").iterdir()}
    bound = sorted(sizes.values())[1]  # the smallest entry fits, the others do not
    monkeypatch.setattr(defaults, "MAX_DOCUMENT_BYTES", bound)
    listing = listing_of(root)
    for entry in listing.entries:
        if sizes[entry.name] > bound:
            assert entry.problem == f"is {sizes[entry.name]:,} bytes, over the {bound:,}-byte limit"
        else:
            assert entry.problem is None and entry.summary is not None


def test_other_files_in_history_are_not_entries(sink_dir) -> None:
    root, _ = sink_dir
    for name in ("README.txt", ".20261129T060000Z-ffffffffffffffff.json.0123.coremodels.tmp",
                 "20261129T060000Z-FFFF.json", "unknown-time-0123456789abcdef.json"):  # fmt: skip
        (root / "history" / name).write_text("x")
    assert listing_of(root).total == 4


def test_an_unchanged_entry_is_not_read_again(sink_dir) -> None:
    root, _ = sink_dir
    reads: list[str] = []

    class Counting(LocalHistory):
        def read(self, name: str) -> bytes:
            reads.append(name)
            return super().read(name)

    def listed() -> Any:
        reader = Counting(root)
        with reader.opened():
            return list_history(reader)

    first = listed()
    assert len(reads) >= 4
    reads.clear()
    assert listed() == first and reads == []
    changed = root / "history" / first.entries[1].name
    changed.write_bytes(b"{}" + b" " * 10)
    third = listed()
    assert reads == [changed.name]
    assert third.entries[1].problem is not None


# -- naming one entry -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "until"),
    [
        ("latest", "latest", None),
        ("~0", "back", None),
        ("~12", "back", None),
        ("49d0", "prefix", None),
        ("49d0edbd0614d1c1", "prefix", None),
        ("49d0edbd0614d1c1-0e29", "prefix", None),
        ("2026-11-27", "time", "2026-11-27T23:59:59.999999+00:00"),
        ("2026-11-27T06:00:00Z", "time", "2026-11-27T06:00:00+00:00"),
        ("2026-11-27T08:00+02:00", "time", "2026-11-27T08:00:00+02:00"),
        ("20261127T060000Z", "time", "2026-11-27T06:00:00+00:00"),
    ],
)
def test_references(text: str, kind: str, until: str | None) -> None:
    reference = parse_reference(text)
    assert reference is not None and reference.kind == kind
    assert (reference.until.isoformat() if reference.until else None) == until


@pytest.mark.parametrize("text", ["", "abc", "~", "~x", "2026-13-01", "tomorrow", "49D0", "g" * 8])
def test_what_is_no_reference(text: str) -> None:
    assert parse_reference(text) is None


@pytest.mark.parametrize(
    ("given", "where", "kind"),
    [
        ("./out@~1", "./out", "back"),
        ("s3://bucket/prefix@2026-11-27", "s3://bucket/prefix", "time"),
        ("/data/snap@home.json", "/data/snap@home.json", None),
        ("/data/latest.json", "/data/latest.json", None),
        ("@latest", "@latest", None),
    ],
)
def test_split_reference(given: str, where: str, kind: str | None) -> None:
    found, reference = split_reference(given)
    assert found == where and (reference.kind if reference else None) == kind


def test_resolve_names_one_entry_or_says_why_not(sink_dir) -> None:
    root, docs = sink_dir
    names = newest_first(os.listdir(root / "history"))
    fp_b = docs[1]["fingerprint"]

    def named(text: str) -> str | None:
        reference = parse_reference(text)
        assert reference is not None
        return resolve(reference, names, "out")

    assert named("latest") is None
    assert named("~0") == names[0] and named("~3") == names[3]
    assert named(fp_b[:6]) == history_name(docs[2], findings_changed=True)  # the newest of that estate
    assert named(stored_version(docs[2])[:20]) == history_name(docs[2], findings_changed=True)
    assert named("2026-11-26") == history_name(docs[1])
    assert named("2026-11-27T05:59:59Z") == history_name(docs[1])
    with pytest.raises(UsageError, match=r"^out@~4: history/ holds 4 entries, so ~0 to ~3$"):
        named("~4")
    with pytest.raises(
        UsageError, match=r"no history/ entry was captured by then \(the oldest is from 2026-11-25"
    ):
        named("2026-11-24")
    with pytest.raises(UsageError, match="no history/ entry has a fingerprint starting so"):
        named("0000")
    ambiguous = ["20261129T060000Z-abcd000000000000.json", "20261128T060000Z-abcd111111111111.json"]
    with pytest.raises(
        UsageError, match=r"the prefix matches 2 fingerprints \(abcd000000000000, abcd111111111111\)"
    ):
        resolve(Reference("prefix", "abcd"), ambiguous, "out")


# -- retention: the rule --------------------------------------------------------------------

NAMES = [f"202611{day:02d}T060000Z-{day:016x}.json" for day in range(1, 11)]  # 1st to 10th November
NOW = datetime(2026, 11, 10, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("keep", "days", "protect", "removed_days"),
    [
        (0, None, (), []),
        (3, None, (), [1, 2, 3, 4, 5, 6, 7]),
        (3, None, (2,), [1, 3, 4, 5, 6, 7]),
        (0, 4.0, (), [1, 2, 3, 4, 5, 6]),  # captured before 6 November, 12:00
        (0, 4.0, (5,), [1, 2, 3, 4, 6]),
        (8, 4.0, (), [1, 2, 3, 4, 5, 6]),
        (1, None, (), list(range(1, 10))),
        (0, 0.001, (), list(range(1, 10))),  # the newest entry stays, however old
    ],
)
def test_the_retention_plan(
    keep: int, days: float | None, protect: tuple[int, ...], removed_days: list[int]
) -> None:
    plan = Retention(keep, days).plan(NAMES[::-1], protect={NAMES[d - 1] for d in protect}, now=NOW)
    assert plan == [NAMES[d - 1] for d in removed_days]


@pytest.mark.parametrize(
    ("keep", "days", "message"),
    [
        (-1, None, "history_keep must be a whole number, 0 or more"),
        (1.5, None, "history_keep must be a whole number"),
        (True, None, "history_keep must be a whole number"),
        (0, 0, "history_max_age_days must be a positive number of days, got 0"),
        (0, -3, "history_max_age_days must be a positive number of days"),
    ],
)
def test_a_retention_rule_that_makes_no_sense_is_refused(keep: Any, days: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Retention(keep, days)


def test_entries_sort_by_capture_time_fractions_included() -> None:
    names = ["20261129T060000Z-0000000000000001.json", "20261129T060000.5Z-0000000000000002.json"]
    assert newest_first(names) == names[::-1]
    assert stamp_text("20261129T060000.5Z") == "2026-11-29T06:00:00.5Z"


def test_a_summary_reads_what_a_listing_shows() -> None:
    doc = document(("a", True), ("b", False), captured_at="2026-11-26T06:00:00Z")
    summary = summarize(encode(doc))
    assert (summary.fingerprint, summary.captured_at, dict(summary.open)) == (
        doc["fingerprint"], "2026-11-26T06:00:00Z", open_counts(doc),
    )  # fmt: skip
    assert summary.version == stored_version(doc)
    with pytest.raises(SnapshotDocumentError, match="has schemaVersion 9"):
        summarize(json.dumps({**doc, "schemaVersion": 9}).encode())
