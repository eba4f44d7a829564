"""The file sink: layout, unchanged fingerprints, the snapshot cap, atomic writes, the lock, hostile files."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest
from support.helpers import document_for

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.snapshots.document import encode, stored_version
from airflow_provider_coremodels.errors import SinkError, UsageError
from airflow_provider_coremodels.io.atomic import TEMPORARY, temporary_name
from airflow_provider_coremodels.io.transport import redact_url
from airflow_provider_coremodels.jobs.export import open_sink
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
        "findingsChanged": False,
    }


def test_unchanged_fingerprint_writes_nothing(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    sink.push(document(captured_at="2026-11-29T06:00:00Z"))
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")}
    result = sink.push(document(captured_at="2026-11-30T06:00:00Z"))
    assert result.unchanged is True
    assert result.written == []
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.json")} == before


def test_a_newer_asset_update_reaches_latest_without_a_history_entry(tmp_path: Path) -> None:
    """The same estate and findings, but the asset was updated since: latest.json learns when (a
    re-audit of it judges freshness by its newest update), and history, which follows changes,
    gains nothing."""
    sink = FileSink(tmp_path)
    first = document()
    first["freshness"]["assetUpdates"] = {"s3://lake/orders": "2026-11-28T05:00:00Z"}
    sink.push(first)
    history = sorted((tmp_path / "history").iterdir())
    newer = document(captured_at="2026-11-30T06:00:00Z")
    newer["freshness"]["assetUpdates"] = {"s3://lake/orders": "2026-11-30T05:00:00Z"}
    result = sink.push(newer)
    assert (result.unchanged, result.written) == (True, [str(tmp_path / "latest.json")])
    stored = json.loads((tmp_path / "latest.json").read_bytes())
    assert stored["freshness"]["assetUpdates"] == {"s3://lake/orders": "2026-11-30T05:00:00Z"}
    assert sorted((tmp_path / "history").iterdir()) == history


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

    def fail(src, dst, **dir_fds):
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
    (tmp_path / temporary_name("latest.json")).write_bytes(b'{"half": ')
    (tmp_path / "history" / temporary_name("20261130T060000Z-0123456789abcdef.json")).write_bytes(b"{")
    sink.push(document("a", "b", captured_at="2026-11-30T06:00:00Z"))
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []
    assert json.loads((tmp_path / "latest.json").read_bytes())["connector"] == "airflow"


HEX = "0123456789abcdef" * 2


@pytest.mark.parametrize(
    ("name", "swept"),
    [
        (f".latest.json.{HEX}.coremodels.tmp", True),
        (f".20261130T060000Z-0123456789abcdef.json.{HEX}.coremodels.tmp", True),
        (".x.tmp", False),  # someone else's temporary file
        (".latest.json.abc12345.tmp", False),  # tempfile's format, which any program may use
        (f".latest.json.{HEX[:-1]}.coremodels.tmp", False),
        (f".latest.json.{HEX.upper()}.coremodels.tmp", False),
        (f"latest.json.{HEX}.coremodels.tmp", False),
        (f".latest.json.{HEX}.coremodels.tmp.bak", False),
    ],
)
def test_the_sweep_removes_only_the_temporary_names_the_sink_makes(
    tmp_path: Path, name: str, swept: bool
) -> None:
    assert TEMPORARY.fullmatch(temporary_name("latest.json"))
    FileSink(tmp_path).push(document("a"))
    for folder in (tmp_path, tmp_path / "history"):
        (folder / name).write_bytes(b"not ours?")
    FileSink(tmp_path).push(document("a", "b", captured_at="2026-11-30T06:00:00Z"))
    for folder in (tmp_path, tmp_path / "history"):
        assert (folder / name).exists() is not swept


def test_written_files_get_the_mode_open_would_give_them(tmp_path: Path) -> None:
    """The temporary file is created 0666 less the umask (not tempfile's 0600), and renamed as it is."""
    mask = os.umask(0o027)
    try:
        FileSink(tmp_path).push(document("a"))
    finally:
        os.umask(mask)
    assert {p.stat().st_mode & 0o777 for p in tmp_path.rglob("*.json")} == {0o640}


def tree(root: Path) -> dict[str, object]:
    """Every entry under ``root``, never following a symlink: a file's bytes, a link's target, ``dir``."""
    listing: dict[str, object] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder, name)
            key = str(path.relative_to(root))
            if path.is_symlink():
                listing[key] = ("symlink", os.readlink(path))
            elif path.is_dir():
                listing[key] = "dir"
            else:
                listing[key] = path.read_bytes()
    return listing


SYMLINKED = "is a symbolic link; the file sink writes only into real directories"


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("history", "other"),
        (".lock", "other/missing"),
        (".lock", "other/latest.json"),
        ("latest.json", "other/latest.json"),
        (f".latest.json.{HEX}.coremodels.tmp", "other/.x.tmp"),
        (f"history/.20261130T060000Z-0123456789abcdef.json.{HEX}.coremodels.tmp", "other/.x.tmp"),
    ],
    ids=["history", "lock-dangling", "lock", "latest", "temporary", "history-temporary"],
)
def test_a_symlink_in_the_sink_is_refused_and_nothing_outside_it_is_touched(
    tmp_path: Path, link: str, target: str
) -> None:
    """A symlink would make the sink write, lock, read or sweep another directory: refused, all unchanged."""
    root, other = tmp_path / "sink", tmp_path / "other"
    other.mkdir()
    (other / ".x.tmp").write_bytes(b"someone else's half-written file")
    (other / f".latest.json.{HEX}.coremodels.tmp").write_bytes(b"looks like ours, but is not in the sink")
    (other / "latest.json").write_bytes(encode(document("z")))
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    (root / link).symlink_to(tmp_path / target)
    before = tree(tmp_path)
    with pytest.raises(SinkError) as caught:
        FileSink(root).push(document("a"))
    assert str(caught.value) == f"sink {root}: {root / link} {SYMLINKED}"
    after = tree(tmp_path)
    if "sink/.lock" not in before:
        assert after.pop("sink/.lock", b"") == b""  # the sink's own lock file may have been made
    assert after == before  # byte for byte: nothing written, swept or created, in or out of the sink
    assert not (other / "missing").exists()


def test_a_symlinked_latest_json_is_not_read_as_the_baseline(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_bytes(encode(document("z")))
    (tmp_path / "sink").mkdir()
    (tmp_path / "sink" / "latest.json").symlink_to(tmp_path / "other.json")
    with pytest.raises(SinkError, match=f"latest.json {SYMLINKED}$"):
        FileSink(tmp_path / "sink").read_baseline()


@pytest.mark.parametrize(
    ("name", "make", "problem"),
    [
        ("latest.json", os.mkfifo, "{path} is not a regular file"),
        (".lock", os.mkfifo, "{path} is not a regular file"),
        ("latest.json", os.mkdir, "{path} is not a regular file"),
        (".lock", os.mkdir, "[Errno 21] Is a directory: '{path}'"),
        ("history", Path.touch, "[Errno 20] Not a directory: '{path}'"),
        ("history", os.mkfifo, "[Errno 20] Not a directory: '{path}'"),
    ],
    ids=["latest-fifo", "lock-fifo", "latest-dir", "lock-dir", "history-file", "history-fifo"],
)
def test_something_else_in_place_of_a_file_is_refused_without_blocking(
    tmp_path: Path, name: str, make, problem: str
) -> None:
    """A FIFO is never opened to wait for a writer, nor is anything but a regular file read or locked."""
    path = tmp_path / name
    make(path)
    outcome: list[BaseException] = []

    def push() -> None:
        try:
            FileSink(tmp_path).push(document("a"))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=push, daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # blocked opening the FIFO: give it a writer, so that the test ends
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail(f"the push blocked on {path}")
    assert [type(exc) for exc in outcome] == [SinkError]
    assert str(outcome[0]) == f"sink {tmp_path}: " + problem.format(path=path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({name, ".lock"})  # nothing written


def test_the_root_itself_may_be_a_symlink(tmp_path: Path) -> None:
    """Whoever names the sink chooses its directory, through a symlink if they like."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    FileSink(tmp_path / "link").push(document("a"))
    assert (tmp_path / "real" / "latest.json").is_file()


@pytest.mark.parametrize(
    ("uri", "root"),
    [("file://localhost{tmp}/out", "{tmp}/out"), ("file://LOCALHOST{tmp}/out", "{tmp}/out")],
)
def test_a_file_uri_may_name_localhost(tmp_path: Path, uri: str, root: str) -> None:
    sink = open_sink(uri.format(tmp=tmp_path))
    assert isinstance(sink, FileSink)
    assert sink.root == Path(root.format(tmp=tmp_path))


@pytest.mark.parametrize(
    ("uri", "host"),
    [
        ("file://otherhost/path", "otherhost"),
        ("file://otherhost.example.com/srv/out", "otherhost.example.com"),
        ("file://user@localhost/path", "***@localhost"),  # user info is never shown
        ("file://localhost:8080/path", "localhost:8080"),
        ("file://127.0.0.1/path", "127.0.0.1"),
    ],
)
def test_a_file_uri_naming_another_host_is_refused(tmp_path: Path, monkeypatch, uri: str, host: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        open_sink(uri)
    assert str(caught.value) == (
        f"sink {redact_url(uri)}: a file:// URI must name a local path (file:///path), not the host {host!r}"
    )
    assert list(tmp_path.iterdir()) == []


def test_same_fingerprint_with_other_findings_is_stored_again_once(tmp_path: Path) -> None:
    """A waiver added (or expired, or an asset gone stale) with an unchanged estate: latest.json
    gets the new findings and history a new entry; the same push again writes nothing."""
    dags = json.dumps([{"dag_id": "legacy", "description": "L", "owners": ["airflow"], "is_paused": False}])

    def audited(captured_at: str, *waivers: Waiver) -> dict:
        estate = parse_artifacts(dags, "{}", "[]")
        doc = build_document(estate, audit(estate, waivers=waivers))
        doc["state"]["capturedAt"] = captured_at
        return doc

    sink = FileSink(tmp_path)
    first = audited("2026-11-29T06:00:00Z")
    sink.push(first)
    # the same second: both documents stay in history (the second's name carries its findings)
    waived = audited("2026-11-29T06:00:00Z", Waiver("dag-no-owner", "legacy", "ops owns it"))
    assert waived["fingerprint"] == first["fingerprint"] and waived["findings"] != first["findings"]

    result = sink.push(waived)
    assert (result.unchanged, result.findings_changed) == (False, True)
    assert json.loads((tmp_path / "latest.json").read_bytes())["findings"][0]["waived"] == {
        "reason": "ops owns it",
        "expires": None,
    }
    assert sorted(p.name for p in (tmp_path / "history").iterdir()) == sorted(
        [f"20261129T060000Z-{first['fingerprint']}.json", f"20261129T060000Z-{stored_version(waived)}.json"]
    )
    again = sink.push(audited("2026-12-01T06:00:00Z", Waiver("dag-no-owner", "legacy", "ops owns it")))
    assert (again.unchanged, again.written) == (True, [])
    assert len(list((tmp_path / "history").iterdir())) == 2


def test_an_asset_that_stays_stale_is_not_stored_again_as_it_ages(tmp_path: Path) -> None:
    """A freshness finding's detail says how old the asset is; while the verdict is the same,
    the next day's export writes nothing (history stays one entry per real change)."""
    sink = FileSink(tmp_path)
    doc = document("a")
    stale = {"section": "Freshness", "severity": "Warning", "code": "asset-stale", "subject": "s3://x",
             "message": "...", "detail": "last update 3 days ago (2026-11-26T06:00:00Z)"}  # fmt: skip
    doc["findings"] = [stale]
    sink.push(doc)
    older = document("a", captured_at="2026-11-30T06:00:00Z")
    older["findings"] = [{**stale, "detail": "last update 4 days ago (2026-11-26T06:00:00Z)"}]
    assert sink.push(older).unchanged is True
    waived = document("a", captured_at="2026-12-01T06:00:00Z")
    waived["findings"] = [{**stale, "waived": {"reason": "vendor holiday", "expires": None}}]
    assert sink.push(waived).findings_changed is True
