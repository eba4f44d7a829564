"""What the provider costs Airflow's start-up: `airflow providers list` with and without it.

Run: python benchmarks/bench_provider_import.py [--repeat N]

Both runs use the same interpreter and a throw-away AIRFLOW_HOME; "without" hides the
provider's distribution from importlib.metadata (and its backport, which Airflow uses) through
a sitecustomize, so nothing is
uninstalled. Prints medians and the difference, and the
modules the provider's registration imports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HIDE = """
import importlib.metadata
for _md in (importlib.metadata, __import__("importlib_metadata")):
    def _hiding(original):
        def distributions(**params):
            return (d for d in original(**params) if d.metadata["Name"] != "airflow-provider-coremodels")
        return distributions
    _md.distributions = _hiding(_md.distributions)
"""


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    airflow = str(Path(sys.executable).with_name("airflow"))
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as hide_dir:
        (Path(hide_dir) / "sitecustomize.py").write_text(HIDE)
        base = {**os.environ, "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
        hidden = {
            **base,
            "PYTHONPATH": os.pathsep.join(filter(None, [hide_dir, os.environ.get("PYTHONPATH")])),
        }
        command = [airflow, "providers", "list", "--output", "plain"]
        timed(command, base)  # warm the file cache and write airflow.cfg once
        with_times, without_times = [], []
        for _ in range(args.repeat):
            elapsed, listing = timed(command, base)
            with_times.append(elapsed)
            assert "airflow-provider-coremodels" in listing
            elapsed, listing = timed(command, hidden)
            without_times.append(elapsed)
            assert "airflow-provider-coremodels" not in listing
    with_median, without_median = statistics.median(with_times), statistics.median(without_times)
    print(f"airflow providers list, median of {args.repeat}:")
    print(f"  with the provider     {with_median:.3f} s")
    print(f"  without the provider  {without_median:.3f} s")
    print(
        f"  difference            {with_median - without_median:+.3f} s ({with_median / without_median:.3f}x)"
    )
    probe = (
        "import sys, time; t = time.perf_counter(); "
        "import airflow_provider_coremodels.get_provider_info as p; "
        "import airflow_provider_coremodels.cli.definition; "
        "p.get_provider_info(); "
        "print(f'{(time.perf_counter() - t) * 1000:.1f} ms;', "
        "sorted(m for m in sys.modules if m.startswith('airflow_provider_coremodels')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"  provider registration + CLI definition import: {out}")


if __name__ == "__main__":
    main()
