"""Run the command line as a user runs it, ``python -m airflow_provider_coremodels``, in a
subprocess of its own, and measure what it cost: its wall time and its peak RSS.

The peak is the process's own ``VmHWM``, the kernel's high-water mark of its memory, written at
exit (``ru_maxrss`` would carry over the forking test process's).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_MEASURED = """
import atexit, os, runpy, sys
def peak():
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    open(os.environ["PEAK_RSS_FILE"], "w").write(hwm.split()[1])
atexit.register(peak)
sys.argv = ["airflow_provider_coremodels", *sys.argv[1:]]
runpy.run_module("airflow_provider_coremodels", run_name="__main__")
"""


#: What a test of a deadline allows past the deadline it checks: the interpreter's start-up and a
#: machine loaded by other work (a test suite beside it). The failures these tests catch run for
#: minutes or never end, so the allowance costs them nothing; a tight one would make them flaky.
START_UP_ALLOWANCE = 20.0


@dataclass(frozen=True)
class Measured:
    code: int
    out: str
    err: str
    seconds: float
    peak_rss_mb: float


def run_measured(
    *arguments: str,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 120,
    forked: bool = False,
) -> Measured:
    """``python -m airflow_provider_coremodels <arguments>``: its exit code, output, time and peak RSS.

    ``forked``: the run is forked from a process that imported the OpenLineage sink
    (``support.cli_forks``), for runs that push to OpenLineage: its time is then the run's own, less
    the 3 s of imports, and its peak counts the imported modules it was forked with (about 20 MB
    under a fresh run's peak here, which also held the import's passing garbage)."""
    with tempfile.TemporaryDirectory(prefix="coremodels-measured-") as tmp:
        peak = Path(tmp) / "peak-rss"
        run_env = {**os.environ, **(env or {}), "PEAK_RSS_FILE": str(peak)}
        started = time.monotonic()
        if forked:
            from support import cli_forks

            result = cli_forks.run(
                *arguments,
                env=run_env,
                timeout=timeout,
                code=_MEASURED,
                cwd=None if cwd is None else str(cwd),
            )
            code, out, err = result.returncode, result.stdout, result.stderr
        else:
            done = subprocess.run(
                [sys.executable, "-c", _MEASURED, *arguments],
                capture_output=True,
                env=run_env,
                cwd=cwd,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
            code = done.returncode
            out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
        seconds = time.monotonic() - started
        peak_mb = int(peak.read_text()) / 1024
    return Measured(code, out, err, seconds, peak_mb)
