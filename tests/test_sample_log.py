"""The README's sample task log is the demo's (``dev/sample_log.py``): it cannot drift.

The live test runs the script's ``--check`` against README.md: a real Airflow API server serving
example_dags/ as ``make demo`` starts it, the export, then ``airflow dags test coremodels_export``
(about two minutes). The fast tests pin what the check compares, so that it can fail: a changed
count fails it, a duration, a time or a fingerprint (which names the checkout's path) does not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import REPO

sys.path.insert(0, str(REPO / "dev"))

import sample_log

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_shows_a_block_the_script_can_find() -> None:
    block = sample_log.readme_block(README)
    assert [line[:8] for line in block] == [
        "captured",
        "33 DAGs ",
        "asset mo",
        "freshnes",
        "findings",
        "...",
        "Warning ",
        "...",
        "export: ",
    ]
    assert block[-1].endswith("<checkout>/coremodels-out (unchanged)")


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (("93 requests", "60 requests"), True),  # what drifted before (deadline alerts were added)
        (("33 for deadline alerts, ", ""), True),
        (("findings: 11 (10 Warning", "findings: 12 (11 Warning"), True),
        (("3.9 s;", "12.4 s;"), False),  # a duration
        (("1-4 in flight", "1-2 in flight"), False),  # the pacing, under the machine's load
        (("2026-12-06T19:15:58Z", "2027-01-01T00:00:00Z"), False),  # the capture time
        (("7c8d20d5a4b75337 unchanged", "0123456789abcdef unchanged"), False),  # a checkout's path
    ],
)
def test_the_check_finds_a_changed_count_and_passes_what_varies(change: tuple[str, str], found: bool) -> None:
    block = sample_log.readme_block(README)
    logged = [line.replace(*change) for line in block]
    assert logged != block
    assert bool(sample_log.differences(block, logged)) is found


def test_a_task_log_line_is_read_as_its_message() -> None:
    structlog = (
        "2026-12-06T19:15:58.123456Z [info     ] findings: 11 (10 Warning, 1 Info) "
        "[airflow.task.operators.airflow_provider_coremodels.operators.export.CoreModelsExportOperator]"
    )
    classic = "[2026-12-06T19:15:58.123+0000] {export.py:301} WARNING - Warning dag-no-owner x: y"
    assert sample_log.message(structlog) == "findings: 11 (10 Warning, 1 Info)"
    assert sample_log.message(classic) == "Warning dag-no-owner x: y"
    lines = [
        "noise",
        "captured 1",
        "1 DAGs (0 paused) · x",
        "asset model: a",
        "freshness at t",
        "findings: 1",
    ]
    lines += [
        "other",
        "Warning paused-producer s3://x: m",
        "more",
        "export: fingerprint f changed; d (written)",
    ]
    assert sample_log.sample(lines) == [*lines[1:6], "...", lines[7], "...", lines[9]]
    with pytest.raises(SystemExit, match="no line starting 'export: '"):
        sample_log.sample(lines[:-1])


@pytest.mark.airflow_server
@pytest.mark.slow
def test_the_readme_sample_log_is_what_the_demo_logs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "dev" / "sample_log.py"), "--check", str(REPO / "README.md")],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-5000:]
