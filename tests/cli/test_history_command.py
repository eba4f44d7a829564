"""``history`` and ``compare`` as a user runs them: ``python -m airflow_provider_coremodels`` in a
subprocess, over a history the real file sink wrote export by export, and over a real local S3
server (moto's server mode) through a connection in the environment and one kept in the
metadata database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.helpers import CLI_GROUP, REPO, document_for
from support.s3_server import BUCKET, SECRETS, S3Store, new_conn_id, running_s3

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.jobs.export import open_sink
from airflow_provider_coremodels.sinks import FileSink
from airflow_provider_coremodels.sinks.layout import history_name, newest_first

pytestmark = pytest.mark.slow  # a local S3 server (moto), and the command line in subprocesses

OWNED = {"description": "d", "owners": ["team"], "is_paused": False}


def document(day: int, *dags: tuple[str, bool], **kwargs: Any) -> dict[str, Any]:
    """A document of DAGs named with whether they have an owner, captured on the ``day``-th of November."""
    raw = [{**OWNED, "dag_id": name, "owners": ["team"] if owned else []} for name, owned in dags]
    doc = document_for(raw, {d["dag_id"]: [{"task_id": "run"}] for d in raw}, [], **kwargs)
    doc["state"]["capturedAt"] = f"2026-11-{day:02d}T06:00:00Z"
    return doc


#: What the exports store, oldest first: a DAG, a second one without an owner, the owner fixed.
DOCS = [
    document(20, ("a", True)),
    document(21, ("a", True), ("b", False)),
    document(22, ("a", True), ("b", True)),
]


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", *argv],
        capture_output=True, text=True, cwd=REPO, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.fixture(scope="module")
def sink(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history") / "out"
    for doc in DOCS:
        assert FileSink(root).push(doc).unchanged is False
    return root


def open_of(doc: dict[str, Any]) -> Counter[str]:
    return Counter(f["severity"] for f in doc["findings"] if not f.get("waived"))


# -- history --------------------------------------------------------------------------------


def test_history_lists_the_entries_newest_first(sink: Path) -> None:
    result = cli("history", "--sink", str(sink))
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == f"history of {sink}: 3 entries, newest first"
    assert lines[1] == f"latest.json: fingerprint {DOCS[-1]['fingerprint']}, captured 2026-11-22T06:00:00Z"
    rows = lines[4:]
    assert [row.split()[:2] for row in rows] == [
        [d["state"]["capturedAt"], d["fingerprint"]] for d in reversed(DOCS)
    ]
    assert [int(row.split()[3]) for row in rows] == [open_of(d)["Warning"] for d in reversed(DOCS)]
    assert rows[0].endswith("latest.json") and not rows[1].endswith("latest.json")


def test_history_as_json_with_a_limit(sink: Path) -> None:
    result = cli("history", "--sink", f"file://{sink}", "--format", "json", "--limit", "2")
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    assert (listing["total"], listing["shown"]) == (3, 2)
    assert [e["name"] for e in listing["entries"]] == newest_first(os.listdir(sink / "history"))[:2]
    assert [e["open"] for e in listing["entries"]] == [dict(open_of(d)) for d in DOCS[:0:-1]]
    assert listing["latest"]["twin"] == history_name(DOCS[-1])
    assert listing["entries"][0]["location"] == f"file://{sink}/history/{history_name(DOCS[-1])}"


def test_a_damaged_entry_is_a_row_and_the_listing_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "out"
    for doc in DOCS:
        FileSink(root).push(doc)
    (root / "history" / f"20261123T060000Z-{'0' * 16}.json").write_bytes(b"\x1b[2Jnot json")
    result = cli("history", "--sink", str(root))
    assert (result.returncode, result.stderr) == (0, "")
    damaged = result.stdout.splitlines()[4]
    assert damaged.startswith(f"2026-11-23T06:00:00Z  {'0' * 16}")
    assert "damaged: is not valid JSON" in damaged and "\x1b" not in result.stdout
    assert len(result.stdout.splitlines()) == 4 + 4


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--sink", "/no/such/sink"], "error: sink /no/such/sink: /no/such/sink does not exist"),
        (["--sink", "https://catalog.example.com/x"],
         "error: sink https://catalog.example.com/x: an HTTP endpoint keeps no history to read back"),
        (["--sink", "openlineage://"], "error: sink openlineage://: an OpenLineage sink keeps no history"),
        (["--sink", "ftp://u:pw-123@host/x"], "error: sink ftp://***@host/x: unknown scheme 'ftp'"),
        (["--sink", "/tmp", "--limit", "-1"], "expected a whole number, 0 or more, got -1"),
        ([], "the following arguments are required: --sink"),
    ],
)  # fmt: skip
def test_history_refuses_what_keeps_no_history(argv: list[str], says: str) -> None:
    result = cli("history", *argv)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1 and says in result.stderr and "pw-123" not in result.stderr


# -- compare --------------------------------------------------------------------------------


def test_compare_two_entries_of_one_sink(sink: Path) -> None:
    result = cli("compare", f"{sink}@~2", f"{sink}@~1")
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"old: {sink / 'history' / history_name(DOCS[0])} · fingerprint ")
    assert lines[1].startswith(f"new: {sink / 'history' / history_name(DOCS[1])} · fingerprint ")
    assert lines[2].startswith(
        "findings: 1 opened, 0 closed · datasets: 1 added, 0 removed · fields: 1 added"
    )
    assert "  Warning   dag-no-owner  b        new  owners: none" in result.stdout
    assert "  b.run  " in result.stdout


def test_compare_fails_on_what_opened_only(sink: Path) -> None:
    opened = cli("compare", f"{sink}@2026-11-20", f"{sink}@2026-11-21T12:00:00Z", "--fail-on", "warning")
    assert opened.returncode == 1, opened.stderr
    closed = cli("compare", f"{sink}@~1", str(sink), "--fail-on", "warning")  # the warning closed
    assert closed.returncode == 0, closed.stderr
    assert "findings closed (1)" in closed.stdout and "resolved" in closed.stdout


def test_compare_a_document_file_with_a_sink_as_json_and_markdown(sink: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(DOCS[0]))
    result = cli("compare", str(old), f"{sink}@{DOCS[-1]['fingerprint'][:8]}", "--format", "json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["old"]["location"] == str(old)
    assert out["new"]["location"] == str(sink / "history" / history_name(DOCS[-1]))
    assert out["datasets"]["added"] == [{"materialization": "dag", "identity": "b"}]
    assert out["findings"] == {"opened": [], "closed": []}
    markdown = cli("compare", str(old), str(sink), "--format", "markdown")
    assert markdown.stdout.startswith("## CoreModels: what changed between two snapshots\n")
    assert "### Datasets added (1)" in markdown.stdout


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("{sink}@~7", "{sink}", "error: {sink}@~7: history/ holds 3 entries, so ~0 to ~2"),
        ("{sink}@2026-01-01", "{sink}", "no history/ entry was captured by then"),
        ("{sink}@abcdef12", "{sink}", "no history/ entry has a fingerprint starting so"),
        ("/no/such.json", "{sink}", "error: snapshot document /no/such.json cannot be read: No such file"),
        ("{sink}/history", "{sink}", "is a directory without a latest.json"),
        ("{damaged}@~0", "{sink}", "is not valid JSON"),
    ],
)
def test_compare_refuses_what_it_cannot_read(
    sink: Path, tmp_path: Path, old: str, new: str, says: str
) -> None:
    damaged = tmp_path / "damaged"
    (damaged / "history").mkdir(parents=True)
    (damaged / "history" / f"20261123T060000Z-{'0' * 16}.json").write_bytes(b"{not json")
    where = {"sink": str(sink), "damaged": str(damaged)}
    result = cli("compare", old.format(**where), new.format(**where))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1 and says.format(**where) in result.stderr


def test_compare_refuses_an_entry_over_the_bound_or_behind_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process, so that the bound can be made small: the entry is refused on its size, unread;
    a symlink by an entry's name is not followed, whatever it points at."""
    root = tmp_path / "out"
    for doc in DOCS:
        FileSink(root).push(doc)
    newest = root / "history" / history_name(DOCS[-1])
    monkeypatch.setattr(defaults, "MAX_DOCUMENT_BYTES", newest.stat().st_size - 1)
    assert main(["compare", f"{root}@~0", f"{root}@~0"]) == 2
    assert capsys.readouterr().err == (
        f"error: snapshot document {newest} is {newest.stat().st_size:,} bytes, "
        f"over the {newest.stat().st_size - 1:,}-byte limit\n"
    )
    monkeypatch.undo()
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(DOCS[0]))
    (root / "history" / f"20261123T060000Z-{DOCS[0]['fingerprint']}.json").symlink_to(outside)
    assert main(["compare", f"{root}@~0", str(root)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"error: snapshot document {root}/history/20261123T060000Z-") and err.count("\n") == 1
    )
    assert err.endswith("is a symbolic link; not followed\n")


def test_export_takes_the_retention_options_before_anything_is_captured(capsys) -> None:
    """A retention value that makes no sense is exit 2 at once: nothing is captured (the API is
    unreachable here)."""
    for argv, says in (
        (["--history-keep", "two"], "--history-keep: expected a whole number, 0 or more, got two"),
        (["--history-max-age", "0"], "--history-max-age: expected a positive number of days, got 0"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["export", "--base-url", "http://127.0.0.1:9", "--sink", "/tmp/x", *argv])
        assert exited.value.code == 2 and says in capsys.readouterr().err


@CLI_GROUP
def test_both_front_doors_agree(sink: Path, tmp_path: Path) -> None:
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    airflow = str(Path(sys.executable).with_name("airflow"))
    for argv in (["history", "--sink", str(sink)], ["compare", f"{sink}@~2", str(sink), "--format", "json"]):
        results = [
            subprocess.run(c, capture_output=True, cwd=REPO, env=env, timeout=120)
            for c in (
                [sys.executable, "-m", "airflow_provider_coremodels", *argv],
                [airflow, "coremodels", *argv],
            )
        ]
        assert results[0].returncode == results[1].returncode == 0, results[1].stderr
        assert results[0].stdout == results[1].stdout


# -- object storage -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3() -> Iterator[tuple[S3Store, str]]:
    with running_s3() as server, pytest.MonkeyPatch.context() as env:
        conn_id = new_conn_id()
        env.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", server.connection())
        yield server, conn_id


def test_history_and_compare_read_object_storage(s3: tuple[S3Store, str]) -> None:
    server, conn_id = s3
    uri = f"s3://{BUCKET}/cli-history"
    store = open_sink(uri, sink_conn_id=conn_id)
    for doc in DOCS:
        store.push(doc)
    server.put(f"cli-history/history/20261123T060000Z-{'0' * 16}.json", b"[damaged")
    listed = cli("history", "--sink", uri, "--sink-conn-id", conn_id, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    listing = json.loads(listed.stdout)
    assert [e["fingerprint"] for e in listing["entries"]] == [
        "0" * 16,
        *(d["fingerprint"] for d in DOCS[::-1]),
    ]
    assert listing["entries"][0]["problem"].startswith("is not a snapshot document")
    assert listing["entries"][1]["latest"] is True
    assert listing["entries"][1]["location"] == f"{uri}/history/{history_name(DOCS[-1])}"
    compared = cli("compare", f"{uri}@~3", uri, "--sink-conn-id", conn_id, "--format", "json")
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["new"]["location"] == f"{uri}/latest.json"
    for secret in SECRETS:
        assert secret not in listed.stdout + listed.stderr + compared.stdout + compared.stderr
    assert conn_id not in listed.stdout + compared.stdout  # locations are URIs, not s3://conn@bucket


def test_an_undefined_connection_is_refused_before_the_store_is_read() -> None:
    result = cli("history", "--sink", f"s3://{BUCKET}/x", "--sink-conn-id", "nobody_defined_this")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: sink s3://{BUCKET}/x: --sink-conn-id: ")
    assert "nobody_defined_this" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.airflow_server
def test_history_reads_the_store_with_a_connection_kept_in_the_metadata_database(
    s3: tuple[S3Store, str], tmp_path: Path
) -> None:
    """`airflow connections add` keeps it where the store's own lookup outside a task does not look."""
    from support.airflow_server import migrated_home

    server, conn_id = s3
    uri = f"s3://{BUCKET}/cli-history-db"
    store = open_sink(uri, sink_conn_id=conn_id)
    for doc in DOCS[:2]:
        store.push(doc)
    home = migrated_home(tmp_path / "home", tmp_path / "dags")
    env = {key: value for key, value in home.items() if not key.startswith("AIRFLOW_CONN_")}
    airflow = str(Path(sys.executable).with_name("airflow"))
    added = subprocess.run(
        [airflow, "connections", "add", "stored_s3", "--conn-json", server.connection()],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    result = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "history", "--sink", uri,
         "--sink-conn-id", "stored_s3"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"history of {uri}: 2 entries, newest first"
