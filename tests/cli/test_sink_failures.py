"""Sinks fail early and fail alone: checked before the capture, pushed one by one.

A sink whose filesystem package or provider is missing, or whose connection nobody defined,
fails the command with exit 2 before anything is captured, naming what to install. At push time
each sink is written on its own: a broken one is one line on stderr and exit 3, and every other
sink of the run still gets the snapshot.

The missing-package cases run against the venv the tests run in, uninstalled for real: the main
test venv has no Google or Azure provider; ``make test-oldest``'s has no amazon provider either.
The amazon provider without s3fs is shown by shadowing s3fs with a package that cannot be
imported (on PYTHONPATH of that one process): installing and uninstalling s3fs around a test
is not something a test run may do to its own venv.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import REPO

#: (scheme, the package the error must name, the modules that must all import for it to work)
OBJECT_STORES = [
    ("s3", "apache-airflow-providers-amazon[s3fs]", ("airflow.providers.amazon", "s3fs")),
    ("gs", "apache-airflow-providers-google", ("airflow.providers.google", "gcsfs")),
    ("abfs", "apache-airflow-providers-microsoft-azure", ("airflow.providers.microsoft.azure", "adlfs")),
]


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def closed_port() -> int:
    """A port nothing listens on: a capture there would fail with exit 3, never exit 2."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def export(*argv: str, env: dict[str, str] | None = None, base_url: str | None = None):
    command = [
        sys.executable, "-m", "airflow_provider_coremodels", "export",
        "--base-url", base_url or f"http://127.0.0.1:{closed_port()}", "--token-env", "AF_TOKEN",
        "--retry-budget", "5", *argv,
    ]  # fmt: skip
    environment = {**os.environ, "AF_TOKEN": "not-a-real-token", **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPO, timeout=120)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(
    ("scheme", "package", "modules"), OBJECT_STORES, ids=[s for s, _, _ in OBJECT_STORES]
)
def test_a_sink_whose_package_is_missing_fails_before_the_capture(
    scheme: str, package: str, modules: tuple[str, ...], tmp_path: Path
) -> None:
    if all(installed(module) for module in modules):
        pytest.skip(f"{package} is installed in this venv; make test-oldest runs without it")
    local = tmp_path / "out"
    result = export("--sink", str(local), "--sink", f"{scheme}://governance/airflow")
    assert result.returncode == 2, result.stderr
    [line] = error_lines(result.stderr)
    assert line.startswith(f"error: sink {scheme}://governance/airflow: {scheme}:// needs {package}: ")
    assert f"pip install '{package}'" in line
    assert "Traceback" not in result.stderr
    assert "capture" not in result.stderr  # refused before the capture began
    assert not local.exists()  # and before any sink was touched


def test_the_amazon_provider_without_s3fs_names_the_extra(tmp_path: Path) -> None:
    if not installed("airflow.providers.amazon"):
        pytest.skip("the amazon provider is not installed: the test above covers s3:// without it")
    shadow = tmp_path / "shadow"
    (shadow / "s3fs").mkdir(parents=True)
    (shadow / "s3fs" / "__init__.py").write_text("raise ImportError(\"No module named 's3fs'\")\n")
    pythonpath = os.pathsep.join(filter(None, [str(shadow), os.environ.get("PYTHONPATH")]))
    result = export("--sink", "s3://governance/airflow", env={"PYTHONPATH": pythonpath})
    assert result.returncode == 2, result.stderr
    [line] = error_lines(result.stderr)
    assert "s3:// needs apache-airflow-providers-amazon[s3fs]: " in line
    assert "pip install 'apache-airflow-providers-amazon[s3fs]'" in line


def test_a_sink_connection_nobody_defined_fails_before_the_capture(tmp_path: Path) -> None:
    """The store's client would fall back to anonymous access without a word: refused instead."""
    result = export("--sink", "s3://governance/airflow", "--sink-conn-id", "no_such_aws_conn")
    assert result.returncode == 2, result.stderr
    [line] = error_lines(result.stderr)
    assert line.startswith(
        "error: sink s3://governance/airflow: --sink-conn-id: connection 'no_such_aws_conn'"
    )
    assert "is not defined" in line


@pytest.mark.airflow_server
def test_a_broken_sink_costs_the_others_nothing(airflow_server, tmp_path: Path) -> None:
    """The first sink's store holds a directory where latest.json should be: it can be neither
    read nor written. The second sink is written all the same; the run says which one failed."""
    broken, good = tmp_path / "broken", tmp_path / "good"
    (broken / "latest.json").mkdir(parents=True)
    env = {"AF_PASSWORD": airflow_server.password}
    command = [
        sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", airflow_server.base_url,
        "--username", airflow_server.username, "--password-env", "AF_PASSWORD",
        "--sink", str(broken), "--sink", str(good), "--format", "json",
    ]  # fmt: skip
    result = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, **env}, cwd=REPO, timeout=120
    )
    assert result.returncode == 3, result.stderr
    document = json.loads(result.stdout)  # the snapshot is still printed whole
    assert json.loads((good / "latest.json").read_bytes())["fingerprint"] == document["fingerprint"]
    [line] = error_lines(result.stderr)
    assert line == f"error: sink {broken}: {broken / 'latest.json'} is not a regular file"
    assert f"{broken} (failed), {good} (written)" in result.stderr
    # its baseline could not be read either: said in the document, and the next sink's was used
    [record] = [r for r in document["lossiness"] if r["artifact"] == "baseline"]
    assert record["message"] == (
        f"the baseline could not be read: sink {broken}: {broken / 'latest.json'} is not a regular file"
    )
