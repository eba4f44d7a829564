"""Every reader of a stored document decodes it by one rule (issue 23, items 15 and 18).

``audit --snapshot``, ``audit --baseline``, ``lineage --snapshot``, ``merge``, ``mcp`` and a file
sink's ``latest.json`` all decode a stored document the same way (``core.document.decode_stored``):
what one reads, all read; what one refuses, all refuse, with the same words naming what is wrong
with the file, one line on stderr and exit 2, never ``unexpected ...``; and a time a document
stores (its judging time) is read back as itself, whatever its year. Each command runs as a user
runs it, in its own process, on a real file, measured (``support.measured``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.helpers import REPO
from support.measured import Measured, run_measured

RSS_CEILING_MB = 300


def run(*argv: str, cwd: Path) -> Measured:
    """The command as a user runs it, measured; the hard limit is run_measured's timeout (120 s)."""
    result = run_measured(*argv, cwd=cwd)
    assert result.peak_rss_mb < RSS_CEILING_MB, (argv, result)
    return result


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--example", "--format", "json"],
        capture_output=True,
        check=True,
        cwd=REPO,
        timeout=120,
    ).stdout
    document: dict[str, Any] = json.loads(out)
    return document


def readers(path: Path, good: Path) -> dict[str, list[str]]:
    """Each command that reads a stored document, reading ``path``."""
    return {
        "audit --snapshot": ["audit", "--snapshot", str(path)],
        "audit --baseline": ["audit", "--snapshot", str(good), "--baseline", str(path)],
        "lineage --snapshot": ["lineage", "--snapshot", str(path)],
        "merge": ["merge", f"part={path}"],
        "mcp": ["mcp", "--snapshot", str(path)],
    }


def test_a_lone_surrogate_is_refused_by_every_reader_with_the_same_words(
    tmp_path: Path, example: dict[str, Any]
) -> None:
    """Before: ``error: unexpected UnicodeEncodeError in <command>: 'utf-8' codec can't encode
    character '\\ud800' ...`` from every one of them."""
    document = json.loads(json.dumps(example))
    document["datasets"][4]["description"] = "bad \ud800 text"
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(document))  # ensure_ascii: written as a \\ud800 escape
    good = tmp_path / "good.json"
    good.write_text(json.dumps(example))
    said = (
        f"error: snapshot document {path} holds a lone surrogate (\\ud800) in datasets[4].description, "
        "which UTF-8 cannot encode (no document this provider writes holds one: it was written or "
        "edited elsewhere)\n"
    )
    for name, argv in readers(path, good).items():
        result = run(*argv, cwd=tmp_path)
        assert (result.code, result.out) == (2, ""), (name, result.err)
        assert result.err == said, (name, result.err)


def test_nan_in_a_key_the_audit_ignores_is_read_by_every_reader(
    tmp_path: Path, example: dict[str, Any]
) -> None:
    """Before: ``mcp`` alone refused it (``unexpected DecodeError``); audit and merge read it."""
    document = json.loads(json.dumps(example))
    document["state"]["counts"]["fields"] = float("nan")
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(document))
    for name, argv in readers(path, path).items():
        result = run(*argv, cwd=tmp_path)
        assert result.code == 0, (name, result.err)
        assert "unexpected" not in result.err and "Traceback" not in result.err, name


def test_a_sink_whose_latest_json_holds_a_lone_surrogate_is_replaced_not_a_crash(
    tmp_path: Path, example: dict[str, Any]
) -> None:
    """Before: ``unexpected UnicodeEncodeError in merge`` when the file sink compared its stored
    findings (one held a lone surrogate) with the new ones. Now the stored document is unusable,
    said in a lossiness record, and replaced."""
    sink = tmp_path / "sink"
    sink.mkdir()
    damaged = json.loads(json.dumps(example))
    damaged["findings"][0]["detail"] = "x \ud800 y"
    (sink / "latest.json").write_text(json.dumps(damaged))
    part = tmp_path / "part.json"
    part.write_text(json.dumps(example))
    result = run("merge", f"part={part}", "--sink", str(sink), "--format", "json", cwd=tmp_path)
    assert result.code == 0, result.err
    merged = json.loads(result.out)
    assert any("lone surrogate" in r["message"] for r in merged["lossiness"]), merged["lossiness"]
    assert json.loads((sink / "latest.json").read_bytes())["fingerprint"] == merged["fingerprint"]


def test_a_judging_time_before_year_1000_is_stored_as_it_was_given_and_re_audited_at_it(
    tmp_path: Path,
) -> None:
    """Before: ``--now 0999-06-01T00:00:00Z`` was stored as ``999-06-01T00:00:00Z``, which no reader
    takes back, so the re-audit silently judged at the capture time instead."""
    first = run("audit", "--example", "--now", "0999-06-01T00:00:00Z", "--format", "json", cwd=tmp_path)
    assert first.code == 0, first.err
    stored = json.loads(first.out)
    assert stored["freshness"]["judgedAt"] == "0999-06-01T00:00:00Z"
    path = tmp_path / "snapshot.json"
    path.write_text(first.out)
    again = run("audit", "--snapshot", str(path), "--format", "json", cwd=tmp_path)
    assert again.code == 0, again.err
    re_audited = json.loads(again.out)
    assert re_audited["freshness"]["judgedAt"] == "0999-06-01T00:00:00Z"
    assert re_audited["findings"] == stored["findings"]
    table = run("audit", "--snapshot", str(path), cwd=tmp_path)
    assert "freshness at 0999-06-01T00:00:00Z" in table.out


@pytest.mark.parametrize(
    ("now", "says"),
    [
        (
            "999-06-01T00:00:00Z",
            "expected an ISO 8601 time such as 2026-12-01T06:00:00Z (a year of four digits)",
        ),
        ("0001-01-01T00:00:00+05:00", "0001-01-01T00:00:00+05:00 is outside the years 1 to 9999 in UTC"),
        ("9999-12-31T23:59:59-05:00", "9999-12-31T23:59:59-05:00 is outside the years 1 to 9999 in UTC"),
    ],
)
def test_a_judging_time_no_document_can_hold_is_refused_in_one_line(
    tmp_path: Path, now: str, says: str
) -> None:
    """Before: ``unexpected OverflowError`` where UTC fell outside years 1 to 9999."""
    result = run("audit", "--example", "--now", now, cwd=tmp_path)
    assert (result.code, result.out) == (2, "")
    assert result.err.count("\n") == 1 and says in result.err, result.err
