"""Servers that lie: each mode of tests/support/hostile_api.py against a real capture.

Every capture runs as a user runs it, ``python -m airflow_provider_coremodels capture`` in a
subprocess, with a 5 s budget and a 2 s read timeout: under every mode it must end within
the budget plus one timeout, with exit 0 (and a lossiness record where it kept what it could)
or exit 3 and one line on stderr, never a traceback, with its peak RSS under 300 MB, and
with no secret in anything it wrote or sent to another origin.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.helpers import CLI_GROUP, REPO
from support.hostile_api import TOKEN, HostileApi, gzip_bomb
from support.local_http import ScriptedServer, json_reply
from support.measured import START_UP_ALLOWANCE, run_measured

pytestmark = pytest.mark.slow  # lying API servers on 127.0.0.1, each capture waited out to its deadline

PASSWORD = "hostile-Canary-pa55word"
BUDGET, TIMEOUT = 5.0, 2.0
RSS_CEILING_MB = 300


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str
    seconds: float
    peak_rss_mb: float
    files: dict[str, bytes]


def capture(base_url: str, out: Path, *extra: str) -> Run:
    """``capture`` in a subprocess, as a user runs it: its wall time and its peak RSS."""
    arguments = [
        "capture",
        "--base-url",
        base_url,
        "--username",
        "admin",
        "--password-env",
        "HOSTILE_PASSWORD",
        "--retry-budget",
        str(BUDGET),
        "--timeout",
        str(TIMEOUT),
        "--out",
        str(out),
        *extra,
    ]
    run = run_measured(*arguments, env={"HOSTILE_PASSWORD": PASSWORD}, cwd=REPO)
    files = {p.name: p.read_bytes() for p in out.iterdir()} if out.exists() else {}
    return Run(run.code, run.out, run.err, run.seconds, run.peak_rss_mb, files)


def assert_ended_cleanly(run: Run, *, code: int) -> None:
    print(f"exit {run.code} in {run.seconds:.1f} s, peak RSS {run.peak_rss_mb:.0f} MB")
    assert run.code == code, run.err
    assert run.seconds < BUDGET + TIMEOUT + START_UP_ALLOWANCE, f"{run.seconds:.1f} s"
    assert run.peak_rss_mb < RSS_CEILING_MB, f"peak RSS {run.peak_rss_mb:.0f} MB"
    assert "Traceback" not in run.err
    errors = [line for line in run.err.splitlines() if line.startswith("error:")]
    if code:  # retries are logged as warnings before it; the failure itself is one line, the last
        assert errors == run.err.strip().splitlines()[-1:], run.err
    else:
        assert errors == [], run.err
    for text in (run.out, run.err, *(b.decode("utf-8", "replace") for b in run.files.values())):
        assert PASSWORD not in text and TOKEN not in text


FAILING = {
    # class 1: memory the server decides
    "gzip-bomb": "over the 67,108,864-byte limit (after decompression)",
    # class 2: no real deadline
    "trickle": "took over",
    "lying-total": "did not finish within its budget of 5 s",
    # the budget ends the process, not only the message: a thread blocked in a header read that
    # never times out (a byte every 1.5 s, or header lines for ever) is cut at the deadline
    "header-trickle": "did not finish within its budget of 5 s",
    "endless-headers": "did not finish within its budget of 5 s",
    # class 3 and 5: redirects
    "token-redirect": "the password is never sent after a redirect",
    "redirect-loop": "Exceeded",
    "redirect-file": "a redirect to another origin (file://): not followed",
    # class 4: secrets echoed back
    "echo-secrets": "HTTP 403",
    # class 5: a body that would overflow the stack
    "deep-json": "nested too deeply",
    # class 10: bytes that are not UTF-8, refused as the offline parse refuses them
    "bad-utf8": "utf-8",
}


@pytest.mark.parametrize(("mode", "says"), FAILING.items(), ids=FAILING.keys())
def test_a_lying_server_ends_the_capture_with_exit_3_and_one_line(
    tmp_path: Path, mode: str, says: str
) -> None:
    gzip_bomb()  # made before the server answers, so making it is not what the client waits for
    with (
        ScriptedServer() as elsewhere,
        HostileApi(mode, password=PASSWORD, redirect_to=elsewhere.base_url) as api,
    ):
        run = capture(api.base_url, tmp_path / "out")
        assert_ended_cleanly(run, code=3)
        assert says in run.err
        assert elsewhere.received == []  # nothing, let alone the password, went to another origin


def test_a_dag_list_that_ignores_offset_is_paged_once_and_refused(tmp_path: Path) -> None:
    """The same page again: paging stops at once. A partial DAG list is never pushed as the estate
    (every DAG it missed would read as removed), so the capture fails, saying why."""
    with HostileApi("ignores-offset") as api:
        run = capture(api.base_url, tmp_path / "out")
        dag_pages = api.count("/api/v2/dags?limit")  # the DAG list, not the failed-runs filter
    assert_ended_cleanly(run, code=3)
    assert dag_pages <= 3
    assert re.search(
        r"/dags paging stopped: the page at offset \d+ repeated 100 items already listed", run.err
    )


def test_an_asset_list_that_ignores_offset_is_kept_with_a_lossiness_record(tmp_path: Path) -> None:
    with HostileApi("assets-ignore-offset") as api:
        run = capture(api.base_url, tmp_path / "out")
    assert_ended_cleanly(run, code=0)
    assert "warning: datasets: /assets paging stopped: the page at offset" in run.err
    assert b"asset_000" in run.files["datasets.json"]


def test_endless_pages_stop_at_twice_what_the_list_announced(tmp_path: Path) -> None:
    with HostileApi("endless") as api:
        run = capture(api.base_url, tmp_path / "out")
    assert_ended_cleanly(run, code=3)
    assert "kept growing past twice what it first announced" in run.err


def test_a_server_that_ignores_limit_never_queues_every_task_request_at_once(tmp_path: Path) -> None:
    """200,000 DAGs in one page: a tasks request each, but only a window of them exists at once."""
    with HostileApi("ignores-limit") as api:
        run = capture(api.base_url, tmp_path / "out", "--concurrency", "4")
        most = api.max_in_flight
    assert_ended_cleanly(run, code=3)  # 200,000 tasks requests do not fit in a 5 s budget
    assert "did not finish within its budget" in run.err
    assert most <= 4


def test_a_get_redirect_to_another_origin_is_never_followed(tmp_path: Path) -> None:
    """A redirect is the way a server makes the capture fetch, and repeat in its error line, what
    it should not (SSRF with reflection): another origin gets no request, and its answer is never
    read; the error names the origin only."""
    with ScriptedServer() as elsewhere, HostileApi("get-redirect", redirect_to=elsewhere.base_url) as api:
        elsewhere.set_default("/api/v2/dags", json_reply({"detail": "reflected-internal-secret"}, status=500))
        run = capture(api.base_url, tmp_path / "out")
        seen = elsewhere.received
    assert_ended_cleanly(run, code=3)
    assert seen == []
    assert "a redirect to another origin (http://127.0.0.1:" in run.err and "not followed" in run.err
    assert "reflected-internal-secret" not in run.err


def test_dag_ids_dot_and_dot_dot_never_become_another_endpoint(tmp_path: Path) -> None:
    """``.`` and ``..`` are legal dag_ids, but /dags/../tasks is /tasks: never requested, said so."""
    with HostileApi("dot-ids") as api:
        run = capture(api.base_url, tmp_path / "out")
        paths = [path for _, path in api.requests]
    assert_ended_cleanly(run, code=0)
    assert not [p for p in paths if "/dags/." in p or p.startswith("/api/v2/tasks")]
    warnings = [line for line in run.err.splitlines() if line.startswith("warning: tasks:")]
    assert len(warnings) == 2 and all("cannot be named in a URL path" in line for line in warnings)


def test_a_password_with_url_delimiters_never_leaks_from_a_bad_url(tmp_path: Path) -> None:
    """userinfo holding "/", "#" or "?" ends the authority early for a URL parser."""
    for secret in ("leak/ss-w0rd-1", "leak#ss-w0rd-2", "leak?ss-w0rd-3"):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "airflow_provider_coremodels",
                "capture",
                "--base-url",
                f"http://admin:{secret}@127.0.0.1:9/",
                "--out",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode in (2, 3), result.stderr
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error:"), result.stderr
        assert "leak" not in result.stderr and "w0rd" not in result.stderr, result.stderr


@CLI_GROUP
def test_through_airflow_coremodels_a_lying_server_is_one_line_too(tmp_path: Path) -> None:
    """The airflow front door prints through the same guard, past Airflow's own logging."""
    airflow = str(Path(sys.executable).with_name("airflow"))
    env = {**os.environ, "HOSTILE_PASSWORD": PASSWORD, "AIRFLOW_HOME": str(tmp_path / "home")}
    with HostileApi("echo-secrets", password=PASSWORD) as api:
        result = subprocess.run(
            [airflow, "coremodels", "capture", "--base-url", api.base_url, "--username", "admin",
             "--password-env", "HOSTILE_PASSWORD", "--retry-budget", "5", "--out", str(tmp_path / "out")],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [
        result.stderr.strip().splitlines()[-1]
    ]
    assert "HTTP 403" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr and TOKEN not in result.stdout + result.stderr
