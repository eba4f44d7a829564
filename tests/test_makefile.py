"""``make browser`` (run by ``make test``): it says what it is about to install, and how to skip it,
before it installs anything; ``BROWSER=0`` installs nothing.

``apt-get`` and ``id`` are stand-ins on ``PATH`` (a real install needs root and the network, and
changes the machine): each records its call in a log the recipe's own output is written to, so the
order of what the user reads and what runs is what is checked. The recipe itself is the Makefile's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.helpers import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make_browser(tmp_path: Path, *args: str) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "log"
    for name, script in (
        ("apt-get", f'echo "apt-get $*" >> {log}\n'),
        ("id", "echo 0\n"),  # root, as the recipe needs for apt-get
    ):
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{script}")
        path.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "COREMODELS_CHROMIUM"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    with log.open("a") as out:
        subprocess.run(
            ["make", "--no-print-directory", "browser", f"CHROMIUM={tmp_path / 'no-chromium'}", *args],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, check=True, timeout=60,
        )  # fmt: skip
    return log.read_text().splitlines()


def test_it_says_what_it_installs_and_how_to_skip_it_before_it_installs(tmp_path: Path) -> None:
    lines = make_browser(tmp_path)
    assert lines[0].startswith("make browser: ") and "installing Debian's chromium with apt-get" in lines[0]
    assert "make test BROWSER=0 skips this" in lines[0]
    assert lines[1:] == [
        "apt-get update -qq",
        "apt-get install -y -qq chromium",
    ]


def test_browser_0_installs_nothing_and_says_nothing(tmp_path: Path) -> None:
    assert make_browser(tmp_path, "BROWSER=0") == []
