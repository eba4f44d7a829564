"""History retention in the real file sink: what a push removes, and what it never touches.

``--history-keep`` / ``history_keep`` and ``--history-max-age`` / ``history_max_age_days`` become a
``Retention`` rule on the sink; after each push (a write or not) the sink removes the entries the
rule no longer keeps, under its lock, through its history descriptor, names it made only, and
never the newest entry or ``latest.json``'s twin.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from support.helpers import document_for

from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.jobs.export import open_sink
from airflow_provider_coremodels.sinks import FileSink
from airflow_provider_coremodels.sinks.history import Retention
from airflow_provider_coremodels.sinks.layout import history_name, newest_first


def document(day: int, *dag_ids: str, **kwargs: Any) -> dict[str, Any]:
    """A document captured on the ``day``-th of November; each set of DAGs is another estate."""
    dags = [
        {"dag_id": d, "description": "d", "owners": ["team"], "is_paused": False} for d in dag_ids or ("a",)
    ]
    doc = document_for(dags, {d["dag_id"]: [] for d in dags}, [], **kwargs)
    doc["state"]["capturedAt"] = f"2026-11-{day:02d}T06:00:00Z"
    return doc


def history(root: Path) -> list[str]:
    return newest_first(os.listdir(root / "history"))


def estates(count: int) -> list[dict[str, Any]]:
    """``count`` documents of growing estates, one a day."""
    return [document(day, *(f"d{i}" for i in range(day))) for day in range(1, count + 1)]


def test_keep_the_newest_n(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sink = FileSink(tmp_path, retention=Retention(keep=3))
    docs = estates(6)
    with caplog.at_level(logging.INFO):
        results = [sink.push(doc) for doc in docs]
    assert history(tmp_path) == [history_name(d) for d in docs[:2:-1]]
    assert [len(r.removed) for r in results] == [0, 0, 0, 1, 1, 1]
    assert results[3].removed == [str(tmp_path / "history" / history_name(docs[0]))]
    assert results[3].said() == "written; 1 history entry removed"
    assert results[3].as_dict()["historyRemoved"] == results[3].removed
    assert "historyRemoved" not in results[0].as_dict()
    assert (
        f"sink {tmp_path}: removed 1 history entry (keep the newest 3): {history_name(docs[2])}"
        in caplog.text
    )


def test_latest_jsons_twin_is_kept_whatever_the_rule(tmp_path: Path) -> None:
    """Documents over the cap never replace latest.json: its twin grows old in history/, and stays."""
    sink = FileSink(tmp_path, retention=Retention(keep=1))
    whole = document(1, "a")
    sink.push(whole)
    over = [document(day, "a", f"b{day}", max_snapshot_bytes=100) for day in (2, 3, 4)]
    for doc in over:
        assert sink.push(doc).baseline_replaced is False
        assert history(tmp_path) == [history_name(doc), history_name(whole)]
    assert (tmp_path / "latest.json").read_bytes() == encode(whole)


def test_a_twin_stored_for_its_findings_is_found_by_its_findings(tmp_path: Path) -> None:
    """The twin is the entry holding latest.json's findings too: an older entry of the same estate
    with other findings is not it, and goes."""
    sink = FileSink(tmp_path)
    plain = document(1, "legacy")
    ownerless = document_for(
        [{"dag_id": "legacy", "description": "d", "owners": ["airflow"], "is_paused": False}],
        {"legacy": []},
        [],
    )
    ownerless["state"]["capturedAt"] = "2026-11-02T06:00:00Z"
    sink.push(plain)
    sink.push(ownerless)  # another estate (the owner is in the fingerprint)
    back = document(3, "legacy")  # the first estate again, with its first findings
    sink.push(back)
    over = document(4, "legacy", "x", max_snapshot_bytes=100)
    result = FileSink(tmp_path, retention=Retention(keep=1)).push(over)
    assert history(tmp_path) == [history_name(over), history_name(back)]
    assert len(result.removed) == 2


def test_entries_older_than_the_age_limit_go(tmp_path: Path) -> None:
    sink = FileSink(tmp_path, retention=Retention(max_age_days=2))
    docs = estates(5)
    for doc in docs:
        sink.push(doc)
    # measured from the last capture (5 November, 06:00): the 3rd, 06:00 is exactly two days old
    assert history(tmp_path) == [history_name(d) for d in docs[:1:-1]]


def test_an_unchanged_push_applies_the_rule_too(tmp_path: Path) -> None:
    """Retention added to a sink that already holds a long history takes effect at the next export,
    even when that export finds nothing new to store."""
    docs = estates(5)
    for doc in docs:
        FileSink(tmp_path).push(doc)
    again = {**docs[-1], "state": {**docs[-1]["state"], "capturedAt": "2026-11-06T06:00:00Z"}}
    result = FileSink(tmp_path, retention=Retention(keep=2)).push(again)
    assert (result.unchanged, result.written, len(result.removed)) == (True, [], 3)
    assert result.said() == "unchanged; 3 history entries removed"
    assert history(tmp_path) == [history_name(d) for d in docs[:2:-1]]


def test_retention_removes_only_the_sinks_own_entries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A symlink, a directory or another file by an old entry's name, and any other name, stay;
    a symlink's target is never touched."""
    root = tmp_path / "sink"
    docs = estates(3)
    for doc in docs:
        FileSink(root).push(doc)
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"not the sink's")
    kept = {
        "20261020T060000Z-aaaaaaaaaaaaaaaa.json": lambda p: p.symlink_to(outside),
        "20261021T060000Z-bbbbbbbbbbbbbbbb.json": lambda p: p.mkdir(),
        "20261022T060000Z-cccccccccccccccc.json": os.mkfifo,
        "notes.txt": lambda p: p.write_text("mine"),
        "20261023T060000Z-DDDD.json": lambda p: p.write_text("not an entry's name"),
    }
    for name, make in kept.items():
        make(root / "history" / name)
    result = FileSink(root, retention=Retention(keep=1)).push(document(4, "z"))
    assert sorted(os.listdir(root / "history")) == sorted([*kept, history_name(document(4, "z"))])
    assert len(result.removed) == 3  # the three entries the sink wrote
    assert outside.read_bytes() == b"not the sink's"
    assert "20261020T060000Z-aaaaaaaaaaaaaaaa.json is not a regular file; retention leaves it" in caplog.text


def test_an_entry_that_cannot_be_removed_is_a_warning_not_a_failed_push(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The tests run as root, whom no permission stops: a refused unlink is simulated."""
    docs = estates(3)
    for doc in docs[:2]:
        FileSink(tmp_path).push(doc)
    real_unlink = os.unlink

    def refuse(path: Any, *, dir_fd: int | None = None) -> None:
        if str(path).startswith("2026"):
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", refuse)
    with caplog.at_level(logging.WARNING):
        result = FileSink(tmp_path, retention=Retention(keep=1)).push(docs[2])
    assert result.error is None and result.written and result.removed == []
    assert f"retention could not remove history/{history_name(docs[0])}" in caplog.text
    assert len(history(tmp_path)) == 3


def test_open_sink_hands_the_rule_to_the_file_sink(tmp_path: Path) -> None:
    sink = open_sink(f"file://{tmp_path}", retention=Retention(keep=2, max_age_days=30))
    assert isinstance(sink, FileSink) and sink.retention == Retention(2, 30)
    assert open_sink(str(tmp_path)).retention == Retention()
