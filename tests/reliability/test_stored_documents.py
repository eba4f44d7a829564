"""Stored documents are read through one bounded reader, named or found in a sink directory.

A file sink's directory is a document's usual home (``latest.json``), and every command that reads a
stored document accepts one: ``audit --snapshot``, ``lineage --snapshot``, ``audit --baseline``,
``merge NAME=DIR``, ``mcp --snapshot`` and the baseline ``export --sink DIR`` reads. Each reads it
within the same bound as a document named directly, so a 3 GB (sparse) ``latest.json`` is refused
at once, in one line, with a small peak RSS; a directory that holds none is a plain message. Every
command runs as a user runs it, ``python -m airflow_provider_coremodels`` in a subprocess.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.helpers import REPO, document_for
from support.hostile_api import HostileApi
from support.measured import Measured, run_measured

from airflow_provider_coremodels import defaults

RSS_CEILING_MB = 300


def cli(tmp_path: Path, *arguments: str) -> Measured:
    return run_measured(*arguments, env={"HOSTILE_PASSWORD": "pw"}, cwd=REPO)


def document() -> dict:
    return document_for([{"dag_id": "a", "owners": ["t"], "description": "d"}], {"a": []}, [], served=True)


@pytest.fixture
def huge_sink(tmp_path: Path) -> Path:
    """A file sink whose latest.json is 3 GB of holes: no disk used, but 3 GB to read."""
    sink = tmp_path / "sink"
    sink.mkdir()
    with open(sink / "latest.json", "wb") as handle:
        handle.truncate(3 << 30)
    return sink


def refused(run: Measured, code: int = 2) -> str:
    print(f"exit {run.code} in {run.seconds:.1f} s, peak RSS {run.peak_rss_mb:.0f} MB")
    assert run.code == code, run.err
    assert run.peak_rss_mb < RSS_CEILING_MB, f"peak RSS {run.peak_rss_mb:.0f} MB"
    assert "Traceback" not in run.err and "unexpected" not in run.err, run.err
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors == run.err.strip().splitlines()[-1:], run.err
    return errors[0]


LIMIT = f"over the {defaults.MAX_DOCUMENT_BYTES:,}-byte limit"


@pytest.mark.parametrize(
    "command",
    [
        ["audit", "--snapshot", "{sink}"],
        ["lineage", "--snapshot", "{sink}"],
        ["audit", "--dags", "{dags}", "--baseline", "{sink}"],
        ["merge", "a={sink}"],
        ["mcp", "--snapshot", "{sink}"],
    ],
    ids=["audit-snapshot", "lineage-snapshot", "audit-baseline", "merge", "mcp"],
)
def test_a_huge_latest_json_in_a_sink_directory_is_refused_at_once(
    tmp_path: Path, huge_sink: Path, command: list[str]
) -> None:
    dags = tmp_path / "dags.json"
    dags.write_text(json.dumps({"dags": [{"dag_id": "a"}], "import_errors": []}))
    run = cli(tmp_path, *(part.format(sink=huge_sink, dags=dags) for part in command))
    line = refused(run)
    assert "3,221,225,472 bytes" in line and LIMIT in line and str(huge_sink) in line


def test_the_baseline_an_export_reads_from_its_sink_is_bounded_too(tmp_path: Path, huge_sink: Path) -> None:
    """The sink's stored baseline, read after the capture: a sink failure (exit 3), at once."""
    with HostileApi("healthy") as api:
        run = cli(
            tmp_path, "export", "--base-url", api.base_url, "--username", "admin",
            "--password-env", "HOSTILE_PASSWORD", "--sink", str(huge_sink),
        )  # fmt: skip
    line = refused(run, code=3)
    assert "latest.json is 3,221,225,472 bytes" in line and LIMIT in line


@pytest.mark.parametrize(
    "command",
    [
        ["audit", "--snapshot", "{sink}"],
        ["lineage", "--snapshot", "{sink}"],
        ["audit", "--dags", "{dags}", "--baseline", "{sink}"],
    ],
    ids=["audit-snapshot", "lineage-snapshot", "audit-baseline"],
)
def test_a_sink_directory_is_a_snapshot_everywhere(tmp_path: Path, command: list[str]) -> None:
    """What ``merge`` and ``mcp`` accepted, every command that reads a document accepts."""
    sink = tmp_path / "sink"
    sink.mkdir()
    (sink / "latest.json").write_text(json.dumps(document()))
    dags = tmp_path / "dags.json"
    dags.write_text(
        json.dumps({"dags": [{"dag_id": "a", "owners": ["t"], "description": "d"}], "import_errors": []})
    )
    run = cli(tmp_path, *(part.format(sink=sink, dags=dags) for part in command))
    assert (run.code, "error" in run.err) == (0, False), run.err
    assert run.out.strip()


@pytest.mark.parametrize(
    "command",
    [["audit", "--snapshot"], ["lineage", "--snapshot"], ["merge"]],
    ids=["audit", "lineage", "merge"],
)
def test_a_directory_without_a_document_is_a_plain_message(tmp_path: Path, command: list[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    target = f"a={empty}" if command == ["merge"] else str(empty)
    line = refused(cli(tmp_path, *command, target))
    if command == ["merge"]:  # a sink that stored nothing yet: its deployment has no snapshot (alone: none)
        assert "deployment a: no snapshot stored at" in line
    else:
        assert "is a directory without a latest.json" in line


@pytest.mark.parametrize("target", ["a document elsewhere", "a FIFO"])
def test_a_symlinked_latest_json_is_refused_as_the_sink_refuses_it(tmp_path: Path, target: str) -> None:
    """The file sink never writes through a symlinked latest.json; reading one named by its
    directory would read whatever it points at (a FIFO: wait for ever), so it is refused."""
    elsewhere = tmp_path / "elsewhere.json"
    if target == "a FIFO":
        os.mkfifo(elsewhere)
    else:
        elsewhere.write_text(json.dumps(document()))
    sink = tmp_path / "sink"
    sink.mkdir()
    (sink / "latest.json").symlink_to(elsewhere)
    line = refused(cli(tmp_path, "audit", "--snapshot", str(sink)))
    assert f"{sink}" in line and "has a latest.json that is a symbolic link, which is not followed" in line
    # the document itself, named as a file, is read as it is (whoever names it chooses it)
    if target != "a FIFO":
        assert cli(tmp_path, "audit", "--snapshot", str(sink / "latest.json")).code == 0
