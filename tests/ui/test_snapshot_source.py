"""Finding the snapshot the page shows, on a real file system written by the real file sink."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.helpers import recorded_estate

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.sinks.directory import FileSink
from airflow_provider_coremodels.ui.source import (
    HISTORY,
    LATEST,
    Problem,
    Snapshot,
    read_snapshot,
    read_trend,
)


def document(captured_at: str, **kwargs: Any) -> dict[str, Any]:
    estate = recorded_estate()
    doc = build_document(estate, audit(estate), **kwargs)
    doc["state"]["capturedAt"] = captured_at
    return doc


def problem(location: str | Path) -> Problem:
    found = read_snapshot(str(location))
    assert isinstance(found, Problem), found
    return found


def snapshot(location: str | Path) -> Snapshot:
    found = read_snapshot(str(location))
    assert isinstance(found, Snapshot), found
    return found


@pytest.mark.parametrize("location", ["", "   "])
def test_unset_says_which_option_to_set(location: str) -> None:
    found = problem(location)
    assert found.status == 200
    assert found.title == "The CoreModels page is not configured"
    assert "[coremodels] ui_snapshot_dir" in found.fix and "AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR" in found.fix


def test_a_directory_no_export_wrote_yet_is_no_snapshot_yet(tmp_path: Path) -> None:
    missing = problem(tmp_path / "coremodels")
    assert (missing.status, missing.title) == (200, "No snapshot yet")
    assert str(tmp_path / "coremodels") in missing.detail and "does not exist yet" in missing.detail
    assert "a sink writing there" in missing.fix and "airflow coremodels export" in missing.fix
    empty = problem(tmp_path)
    assert (empty.status, empty.title) == (200, "No snapshot yet")
    assert f"{tmp_path} has no latest.json" in empty.detail


def test_a_missing_json_file_is_named(tmp_path: Path) -> None:
    found = problem(tmp_path / "snap.json")
    assert found.title == "The snapshot file does not exist"
    assert str(tmp_path / "snap.json") in found.detail


def test_the_directory_shows_what_the_sink_stored(tmp_path: Path) -> None:
    doc = document("2026-11-29T06:00:00Z")
    FileSink(tmp_path).push(doc)
    found = snapshot(tmp_path)
    assert found.path == tmp_path / LATEST
    assert found.document["fingerprint"] == doc["fingerprint"] and found.note is None
    assert json.loads(found.raw) == found.document
    # a file path is read as given: here, the history entry
    [entry] = (tmp_path / HISTORY).iterdir()
    assert snapshot(entry).path == entry


def test_a_newer_snapshot_over_the_cap_is_the_one_shown(tmp_path: Path) -> None:
    """latest.json stays the baseline when a snapshot exceeds the cap; the page shows the newer one."""
    sink = FileSink(tmp_path)
    stored = document("2026-11-28T06:00:00Z")
    sink.push(stored)
    over = document("2026-11-29T06:00:00Z", max_snapshot_bytes=100)
    over["datasets"] = over["datasets"][:-1]  # a different estate, so a different fingerprint
    over["fingerprint"] = "0123456789abcdef"
    assert sink.push(over).baseline_replaced is False
    found = snapshot(tmp_path)
    assert found.document["snapshotStored"] is False and "lineage" not in found.document
    assert found.path.parent == tmp_path / HISTORY
    assert found.note is not None and "did not replace latest.json" in found.note
    assert stored["fingerprint"] in found.note


def test_a_future_dated_history_entry_with_its_datasets_is_not_shown_over_latest(tmp_path: Path) -> None:
    """A history entry dated 9999 that holds its datasets is no snapshot over the cap: latest.json,
    newer in fact, is shown, with no note claiming the other was stored without datasets."""
    sink = FileSink(tmp_path)
    sink.push(document("9999-12-31T23:59:59Z"))
    newer = document("2026-11-29T06:00:00Z")
    newer["datasets"] = newer["datasets"][:-1]
    newer["fingerprint"] = "0123456789abcdef"
    sink.push(newer)
    found = snapshot(tmp_path)
    assert found.path == tmp_path / LATEST and found.document["fingerprint"] == "0123456789abcdef"
    assert found.note is None


def test_a_huge_latest_json_is_refused_without_reading_it(tmp_path: Path) -> None:
    with open(tmp_path / LATEST, "wb") as handle:
        handle.truncate(3 << 30)  # 3 GB of holes
    found = problem(tmp_path)
    assert found.status == 500 and "is 3,221,225,472 bytes, over the 1,073,741,824-byte limit" in found.detail


def test_history_alone_still_shows_its_newest_entry(tmp_path: Path) -> None:
    FileSink(tmp_path).push(document("2026-11-29T06:00:00Z"))
    (tmp_path / LATEST).unlink()
    found = snapshot(tmp_path)
    assert found.path.parent == tmp_path / HISTORY
    assert found.note is not None and "does not exist" in found.note


@pytest.mark.parametrize(
    ("content", "problem_words"),
    [
        (b"{not json", "is not valid JSON"),
        (b"[1, 2]", "is not a JSON object"),
        (b'{"connector": "dbt", "schemaVersion": 1}', 'has connector "dbt", expected "airflow"'),
    ],
)
def test_a_damaged_document_is_a_500_naming_the_file(
    tmp_path: Path, content: bytes, problem_words: str
) -> None:
    (tmp_path / LATEST).write_bytes(content)
    found = problem(tmp_path)
    assert found.status == 500
    assert found.title == "The snapshot is not a CoreModels snapshot document"
    assert found.detail.startswith(f"{tmp_path / LATEST} {problem_words}")


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    sink.push(document("2026-11-28T06:00:00Z"))
    first = snapshot(tmp_path)
    assert snapshot(tmp_path) is first  # unchanged: the parsed document is reused
    changed = document("2026-11-29T06:00:00Z")
    changed["datasets"] = changed["datasets"][:-1]
    changed["fingerprint"] = "0123456789abcdef"
    sink.push(changed)
    assert snapshot(tmp_path).document["fingerprint"] == "0123456789abcdef"


def test_an_unreadable_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FileSink(tmp_path).push(document("2026-11-29T06:00:00Z"))
    latest = tmp_path / LATEST
    if os.geteuid() == 0:
        # Root reads a file whatever its mode (CI runs as root), so the refusal is simulated
        # where the page opens the file; elsewhere the file's mode really refuses it.
        real_open = os.open

        def refuse(path: str, *args: Any, **kwargs: Any) -> int:
            if str(path) == str(latest):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", refuse)
    latest.chmod(0)
    try:
        found = problem(tmp_path)
    finally:
        latest.chmod(0o644)
    assert found.status == 500 and found.title == "The snapshot cannot be read"
    assert "Permission denied" in found.detail


# -- the chart of the history ---------------------------------------------------------------


def waived_document(captured_at: str, *codes: str) -> dict[str, Any]:
    """The recorded estate, its findings of ``codes`` waived: the same estate, other findings."""
    estate = recorded_estate()
    waivers = [Waiver(code, "*", "accepted") for code in codes]
    doc = build_document(estate, audit(estate, waivers=waivers))
    doc["state"]["capturedAt"] = captured_at
    return doc


def open_counts(doc: dict[str, Any]) -> dict[str, int]:
    return dict(Counter(f["severity"] for f in doc["findings"] if not f.get("waived")))


def exported(root: Path) -> list[dict[str, Any]]:
    docs = [
        waived_document("2026-11-25T06:00:00Z"),
        waived_document("2026-11-26T06:00:00Z", "paused-producer"),
        waived_document("2026-11-27T06:00:00Z", "paused-producer", "dag-no-owner"),
    ]
    for doc in docs:
        assert FileSink(root).push(doc).unchanged is False
    return docs


def test_the_chart_reads_the_history_the_sink_wrote(tmp_path: Path) -> None:
    docs = exported(tmp_path)
    trend = read_trend(snapshot(tmp_path))
    assert trend is not None and (trend.total, trend.problem) == (3, None)
    assert [p.captured_at for p in trend.points] == [d["state"]["capturedAt"] for d in docs]
    assert [dict(p.open) for p in trend.points] == [open_counts(d) for d in docs]
    assert [p.latest for p in trend.points] == [False, False, True]
    assert [p.findings_only for p in trend.points] == [False, True, True]


def test_the_chart_marks_the_newer_snapshot_over_the_cap_the_page_shows(tmp_path: Path) -> None:
    docs = exported(tmp_path)
    over = document("2026-11-28T06:00:00Z", max_snapshot_bytes=100)
    over["fingerprint"] = "0123456789abcdef"
    FileSink(tmp_path).push(over)
    found = snapshot(tmp_path)
    assert found.path.parent.name == HISTORY  # the page shows the newest entry
    trend = read_trend(found)
    assert [(p.latest, p.over_the_cap) for p in trend.points] == [
        (False, False), (False, False), (False, False), (True, True),
    ]  # fmt: skip
    assert len(docs) + 1 == trend.total


def test_a_document_named_by_itself_has_no_chart(tmp_path: Path) -> None:
    (tmp_path / "one.json").write_text(json.dumps(document("2026-11-28T06:00:00Z")))
    assert read_trend(snapshot(tmp_path / "one.json")) is None


def test_unchanged_entries_are_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exported(tmp_path)
    import airflow_provider_coremodels.sinks.history as history

    calls: list[int] = []
    real = history.summarize

    def counting(data: bytes) -> Any:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(history, "summarize", counting)
    first = read_trend(snapshot(tmp_path))
    assert len(calls) == 3
    assert read_trend(snapshot(tmp_path)) is first and len(calls) == 3  # cached whole
    FileSink(tmp_path).push(waived_document("2026-11-28T06:00:00Z"))
    fourth = read_trend(snapshot(tmp_path))
    assert len(calls) == 4  # the new entry only
    assert fourth is not None and fourth.total == 4 and fourth.points[-1].latest


def test_the_chart_draws_the_newest_entries_and_says_what_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = exported(tmp_path)
    (tmp_path / HISTORY / f"20261126T120000Z-{'e' * 16}.json").write_bytes(b"\x00 not a document")
    trend = read_trend(snapshot(tmp_path), limit=3)
    assert trend.total == 4 and len(trend.points) == 3
    assert [p.captured_at for p in trend.points] == [
        docs[1]["state"]["capturedAt"], "2026-11-26T12:00:00Z", docs[2]["state"]["capturedAt"],
    ]  # fmt: skip
    assert trend.points[1].problem.startswith("is not valid JSON") and trend.points[1].open == ()
    bound = (tmp_path / LATEST).stat().st_size  # latest.json itself fits
    monkeypatch.setattr(defaults, "MAX_DOCUMENT_BYTES", bound)
    (tmp_path / HISTORY / f"20261129T060000Z-{'d' * 16}.json").write_bytes(b" " * (bound + 1))
    newest = read_trend(snapshot(tmp_path), limit=1).points[-1]
    assert newest.problem == f"is {bound + 1:,} bytes, over the {bound:,}-byte limit"


def test_a_history_that_cannot_be_listed_is_said_on_the_chart(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    exported(elsewhere)
    root = tmp_path / "sink"
    root.mkdir()
    (root / LATEST).write_bytes((elsewhere / LATEST).read_bytes())
    (root / HISTORY).symlink_to(elsewhere / HISTORY)
    trend = read_trend(snapshot(root))
    assert trend is not None and trend.points == ()
    said = f"sink {root}: history/ is a symbolic link; not followed"
    assert trend.problem == f"{root}/history/ cannot be listed: SinkError: {said}"
