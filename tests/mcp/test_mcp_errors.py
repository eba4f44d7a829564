"""``mcp`` refuses what it cannot serve before it serves: one line on stderr, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_coremodels.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["mcp", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_missing_extra_is_one_line_naming_it(
    example_snapshot: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SDK is installed here, so its absence is simulated: ``None`` in ``sys.modules`` makes
    ``import mcp`` raise ModuleNotFoundError, as on an install without the ``[mcp]`` extra."""
    for name in [n for n in sys.modules if n.split(".")[0] in ("mcp", "mcp_types")]:
        monkeypatch.delitem(sys.modules, name)  # the SDK as other tests imported it, put back after
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.delitem(sys.modules, "airflow_provider_coremodels.integrations.mcp_server", raising=False)
    code, out, err = run(capsys, "--snapshot", str(example_snapshot))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    # the import's own words follow in parentheses: they tell an old SDK (mcp 1.x) from none
    assert err.startswith("error: mcp needs the mcp extra: pip install 'airflow-provider-coremodels[mcp]' (")


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "error: snapshot document {tmp}/nope.json cannot be read: No such file or directory"),
        ("not json", "error: snapshot document {tmp}/broken.json is not valid JSON: "),
        ("not ours", 'error: snapshot document {tmp}/other.json has connector "dbt", expected "airflow"'),
        ("empty sink", "error: snapshot document {tmp}/sink is a directory without a latest.json"),
        ("a fifo", "error: snapshot document {tmp}/fifo is not a regular file"),
        ("bad baseline", "error: snapshot document {tmp}/broken.json is not valid JSON: "),
        ("bad waivers", "error: waiver file {tmp}/waivers.yaml waivers[0].reason must be a non-empty string"),
    ],
)
def test_an_unusable_input_is_refused_before_serving(
    case: str,
    message: str,
    example_snapshot: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = _write(tmp_path, "broken.json", '{"connector": "airflow", "schemaVersion": 2,')
    argv = {
        "missing": ["--snapshot", str(tmp_path / "nope.json")],
        "not json": ["--snapshot", broken],
        "not ours": ["--snapshot", _write(tmp_path, "other.json", '{"connector": "dbt"}')],
        "empty sink": ["--snapshot", str(tmp_path / "sink")],
        "a fifo": ["--snapshot", str(tmp_path / "fifo")],
        "bad baseline": ["--snapshot", str(example_snapshot), "--baseline", broken],
        "bad waivers": [
            "--snapshot",
            str(example_snapshot),
            "--waivers",
            _write(tmp_path, "waivers.yaml", "- {code: dag-no-owner, subject: x}\n"),
        ],
    }[case]
    (tmp_path / "sink").mkdir()
    os.mkfifo(tmp_path / "fifo")
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(message.format(tmp=tmp_path)), err


def test_an_unreadable_snapshot_exits_2_before_speaking_the_protocol(tmp_path: Path) -> None:
    """The real process, as an assistant's client starts it: nothing on stdout (no half a protocol),
    one line on stderr, exit 2."""
    snapshot = tmp_path / "latest.json"
    snapshot.write_text("not json at all")
    run = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "mcp", "--snapshot", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.startswith(f"error: snapshot document {snapshot} is not valid JSON")
    assert run.stderr.count("\n") == 1


def test_the_snapshot_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert (code, out) == (2, "")
    assert "the following arguments are required: --snapshot" in err
