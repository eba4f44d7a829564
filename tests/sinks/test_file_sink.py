"""The file sink: layout, unchanged fingerprints, the snapshot cap, atomic writes and the lock."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from support.helpers import document_for

from airflow_provider_coremodels.core.document import encode
from airflow_provider_coremodels.errors import SinkError
from airflow_provider_coremodels.export import open_sink
from airflow_provider_coremodels.sinks import FileSink

DAGS = [{"dag_id": "a", "description": "A", "owners": ["team"], "is_paused": False}]


def document(*dag_ids: str, captured_at: str = "2026-11-29T06:00:00Z", **kwargs) -> dict:
    dags = [{**DAGS[0], "dag_id": dag_id} for dag_id in dag_ids or ("a",)]
    doc = document_for(dags, {d["dag_id"]: [] for d in dags}, [], **kwargs)
    doc["state"]["capturedAt"] = captured_at
    return doc


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != ".lock")


def test_first_push_writes_latest_and_history(tmp_path: Path) -> None:
    doc = document()
    result = FileSink(tmp_path).push(doc)
    entry = f"history/20261129T060000Z-{doc['fingerprint']}.json"
    assert files(tmp_path) == [entry, "latest.json"]
    assert (tmp_path / "latest.json").read_bytes() == encode(doc)
    assert (tmp_path / entry).read_bytes() == encode(doc)
    assert result.as_dict() == {
        "sink": str(tmp_path),
        "unchanged": False,
        "written": [str(tmp_path / entry), str(tmp_path / "latest.json")],
        "baselineReplaced": True,
    }


def test_unchanged_fingerprint_writes_nothing(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    sink.push(document(captured_at="2026-11-29T06:00:00Z"))
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")}
    result = sink.push(document(captured_at="2026-11-30T06:00:00Z"))
    assert result.unchanged is True
    assert result.written == []
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")} == before


def test_changed_estate_adds_history_and_replaces_latest(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    first, second = document("a"), document("a", "b", captured_at="2026-11-30T06:00:00Z")
    sink.push(first)
    sink.push(second)
    assert len(list((tmp_path / "history").iterdir())) == 2
    assert json.loads(sink.read_baseline())["fingerprint"] == second["fingerprint"]


def test_over_the_cap_history_gets_the_cut_document_and_the_baseline_stays(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    sink.push(document("a"))
    baseline = (tmp_path / "latest.json").read_bytes()
    capped = document("a", "b", captured_at="2026-11-30T06:00:00Z", max_snapshot_bytes=100)
    result = sink.push(capped)
    assert result.baseline_replaced is False
    assert (tmp_path / "latest.json").read_bytes() == baseline
    stored = json.loads(
        (tmp_path / "history" / f"20261130T060000Z-{capped['fingerprint']}.json").read_bytes()
    )
    assert "datasets" not in stored and "lineage" not in stored
    assert stored["snapshotStored"] is False
    assert stored["findings"] == capped["findings"]
    assert stored["lossiness"][-1]["artifact"] == "snapshot"


def test_read_baseline(tmp_path: Path) -> None:
    sink = FileSink(tmp_path / "new")
    assert sink.read_baseline() is None
    doc = document()
    sink.push(doc)
    assert sink.read_baseline() == encode(doc)


@pytest.mark.parametrize(
    ("uri", "root"),
    [("{tmp}/out", "{tmp}/out"), ("file://{tmp}/out", "{tmp}/out")],
    ids=["path", "file-uri"],
)
def test_open_sink_for_local_uris(tmp_path: Path, uri: str, root: str) -> None:
    sink = open_sink(uri.format(tmp=tmp_path))
    assert isinstance(sink, FileSink)
    assert sink.root == Path(root.format(tmp=tmp_path))


def test_a_failed_write_leaves_the_old_latest_and_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    """Atomicity: a crash between writing the temporary file and renaming it changes nothing visible."""
    sink = FileSink(tmp_path)
    sink.push(document("a"))
    baseline = (tmp_path / "latest.json").read_bytes()

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(SinkError, match=rf"^sink {tmp_path}: .*No space left on device"):
        sink.push(document("a", "b", captured_at="2026-11-30T06:00:00Z"))
    assert (tmp_path / "latest.json").read_bytes() == baseline
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


def test_an_unwritable_directory_is_a_sink_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(SinkError, match=f"^sink {blocker}/out: "):
        FileSink(blocker / "out").push(document())


def _push_many(root: str, dag_ids: list[str], start: int) -> None:
    sink = FileSink(root)
    for i, dag_id in enumerate(dag_ids):
        sink.push(document("a", dag_id, captured_at=f"2026-11-29T06:{start + i:02d}:00Z"))


def test_concurrent_exports_take_turns(tmp_path: Path) -> None:
    """Two processes pushing into one directory at once: both finish, every file is a whole document."""
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_push_many, args=(str(tmp_path), [f"p{n}_{i}" for i in range(10)], n * 20))
        for n in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    history = list((tmp_path / "history").iterdir())
    assert len(history) == 20
    for path in [*history, tmp_path / "latest.json"]:
        assert json.loads(path.read_bytes())["connector"] == "airflow"
    latest = json.loads((tmp_path / "latest.json").read_bytes())
    assert any(latest["fingerprint"] in p.name for p in history)
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


def test_temporary_files_of_a_killed_writer_are_swept_on_the_next_push(tmp_path: Path) -> None:
    """A SIGKILL between write and rename leaves a hidden .tmp file; the next push removes it."""
    sink = FileSink(tmp_path)
    sink.push(document("a"))
    (tmp_path / ".latest.json.abc123.tmp").write_bytes(b'{"half": ')
    (tmp_path / "history" / ".20261130T060000Z-x.json.def456.tmp").write_bytes(b"{")
    sink.push(document("a", "b", captured_at="2026-11-30T06:00:00Z"))
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []
    assert json.loads((tmp_path / "latest.json").read_bytes())["connector"] == "airflow"
