"""Fault injection on the wire, against a real Airflow 3.3 API server behind a FaultProxy.

At a 20% fault rate every capture still gives the fault-free snapshot; at 100% the CLI gives
up inside its retry budget with exit 3, one line saying why, and nothing written anywhere.
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from support.fault_proxy import ALL_FAULTS, FaultProxy
from support.helpers import REPO
from support.measured import START_UP_ALLOWANCE

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, capture
from airflow_provider_coremodels.capture.crawl import CaptureSummary
from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.errors import CaptureError

pytestmark = pytest.mark.airflow_server

READ_TIMEOUT = 1.0  # seconds: the client's read timeout
SLOW_SECONDS = 1.5  # a "slow" fault holds its answer back longer than that
CAPTURES = 20
RATE = 0.2
RETRY_BUDGET = 5.0  # seconds, for the 100% runs
SLACK = START_UP_ALLOWANCE  # over the budget a failing CLI run may take: start-up, one last timed-out request


def snapshot(
    base_url: str, server: Any, read_timeout: float = READ_TIMEOUT
) -> tuple[dict[str, Any], CaptureSummary]:
    """Capture through ``base_url`` and build the document; lossiness is in the document."""
    source = ApiSource(
        base_url, username=server.username, password=server.password, read_timeout=read_timeout
    )
    retry = RetryPolicy(backoff=0.05, max_backoff=0.5, budget=60)
    with AirflowApiClient(source, retry=retry) as client:
        result = capture(client)
    estate = result.estate()
    return build_document(estate, audit(estate)), result.summary


def without_capture_time(document: dict[str, Any]) -> dict[str, Any]:
    """The document less the capture's time (and the freshness judged at it)."""
    freshness = {k: v for k, v in document.get("freshness", {}).items() if k != "judgedAt"}
    state = {k: v for k, v in document["state"].items() if k != "capturedAt"}
    return {**document, "state": state, "freshness": freshness}


# -- the proxy itself ----------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ALL_FAULTS)
def test_each_fault_looks_as_promised_on_the_wire(airflow_server, fault: str) -> None:
    with FaultProxy(
        airflow_server.base_url, rate=1.0, seed=0, faults=[fault], slow_seconds=SLOW_SECONDS
    ) as proxy:
        url = f"{proxy.base_url}/api/v2/version"
        if fault.isdigit():
            response = requests.get(url, timeout=5)
            assert response.status_code == int(fault)
            assert response.json() == {"detail": f"injected fault: HTTP {fault}"}
            assert response.headers.get("Retry-After") == ("1" if fault == "429" else None)
        elif fault == "reset":
            with pytest.raises(requests.ConnectionError, match="reset by peer"):
                requests.get(url, timeout=5)
        elif fault == "slow":
            with pytest.raises(requests.ReadTimeout):
                requests.get(url, timeout=(5, READ_TIMEOUT))
        else:
            real = requests.get(f"{airflow_server.base_url}/api/v2/version", timeout=5)
            connection = http.client.HTTPConnection("127.0.0.1", urlsplit(url).port, timeout=5)
            try:
                connection.request("GET", "/api/v2/version")
                response = connection.getresponse()
                assert response.status == 200
                assert response.getheader("Content-Length") == str(len(real.content))
                assert response.getheader("Content-Type") == real.headers["Content-Type"]
                with pytest.raises(http.client.IncompleteRead) as cut:
                    response.read()
            finally:
                connection.close()
            assert cut.value.partial == real.content[: len(real.content) // 2]
            with pytest.raises(requests.exceptions.ChunkedEncodingError):
                requests.get(url, timeout=5)
        first = proxy.injections[0]
        assert (first.method, first.path, first.nth, first.fault) == ("GET", "/api/v2/version", 1, fault)


def test_the_same_seed_breaks_the_same_requests(airflow_server) -> None:
    decisions = []
    for _ in range(2):
        with FaultProxy(airflow_server.base_url, rate=0.5, seed=42, faults=["503"]) as proxy:
            for path in ["/api/v2/version"] * 8 + ["/api/v2/monitor/health"] * 8:
                requests.get(proxy.base_url + path, timeout=5)
            decisions.append([(i.path, i.nth, i.fault) for i in proxy.injections])
    assert decisions[0] == decisions[1]
    assert 0 < sum(1 for *_, fault in decisions[0] if fault) < 16


# -- 20%: every capture gives the fault-free snapshot ----------------------------------------------


def test_twenty_percent_faults_never_change_the_snapshot(airflow_server) -> None:
    # The fault-free reference, straight from the server. With the default read timeout: the
    # first requests to a freshly started server can take longer than the short one.
    reference, _ = snapshot(airflow_server.base_url, airflow_server, read_timeout=60)
    assert reference["lossiness"] == []
    assert {k: reference["state"]["facts"][k] for k in ("dags", "tasks", "assets")} == {
        "dags": 6,
        "tasks": 11,
        "assets": 4,
    }

    outcomes: dict[int, str] = {}
    faults: Counter[str] = Counter()
    proxied = retries = 0
    started = time.monotonic()
    for seed in range(CAPTURES):
        with FaultProxy(airflow_server.base_url, rate=RATE, seed=seed, slow_seconds=SLOW_SECONDS) as proxy:
            try:
                document, summary = snapshot(proxy.base_url, airflow_server)
            except CaptureError as exc:
                outcomes[seed] = f"failed: {exc}"
            else:
                if document["fingerprint"] != reference["fingerprint"]:
                    outcomes[seed] = f"fingerprint {document['fingerprint']}"
                elif document["lossiness"]:
                    outcomes[seed] = f"lossiness {document['lossiness']}"
                elif without_capture_time(document) != without_capture_time(reference):
                    outcomes[seed] = "same fingerprint, different document"
                else:
                    outcomes[seed] = "same"
                # every attempt reached the proxy, and every fault cost the client one retry
                assert summary.requests == len(proxy.injections)
                assert summary.retries >= len(proxy.injected())
                retries += summary.retries
            faults.update(proxy.counts())
            proxied += len(proxy.injections)
            if outcomes[seed] != "same":
                injected = [(i.method, i.path, i.nth, i.fault) for i in proxy.injected()]
                outcomes[seed] += f" (faults: {injected})"
    elapsed = time.monotonic() - started

    print(
        f"\n{CAPTURES} captures at {RATE:.0%} in {elapsed:.1f} s: {proxied} requests, {retries} retries, "
        f"{sum(faults.values())} faults injected: {dict(sorted(faults.items()))}"
    )
    differing = {seed: outcome for seed, outcome in outcomes.items() if outcome != "same"}
    assert differing == {}, f"{len(differing)} of {CAPTURES} captures differ"
    # ~10 requests a capture (more with the retries), 20% of them faulted: dozens in all
    assert sum(faults.values()) >= 30
    assert set(faults) == set(ALL_FAULTS), f"never injected: {set(ALL_FAULTS) - set(faults)}"


# -- 100%: exit 3 inside the retry budget, nothing written -----------------------------------------


@dataclass
class FailedRun:
    command: str
    base_url: str  # the proxy's
    result: subprocess.CompletedProcess[str]
    elapsed: float
    faults: list[str | None]
    retrying: float  # seconds from the first request to the start of the last one, at the proxy


def run_against_all_faults(server: Any, command: str, target: Path, seed: int) -> FailedRun:
    """``command`` (export to a sink at ``target``, or capture --out ``target``) with every request broken."""
    where = ["--sink", str(target)] if command == "export" else ["--out", str(target)]
    with FaultProxy(server.base_url, rate=1.0, seed=seed, slow_seconds=SLOW_SECONDS) as proxy:
        argv = [
            *(sys.executable, "-m", "airflow_provider_coremodels", command),
            *("--base-url", proxy.base_url, "--username", server.username, "--password-env", "AF_PASSWORD"),
            *where,
            *("--retry-budget", f"{RETRY_BUDGET:g}", "--timeout", f"{READ_TIMEOUT:g}"),
        ]
        started = time.monotonic()
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env={**os.environ, "AF_PASSWORD": server.password},
            timeout=RETRY_BUDGET + 60,
            cwd=REPO,
        )
        elapsed = time.monotonic() - started
        seen = proxy.injections
        retrying = seen[-1].at - seen[0].at if seen else 0.0
        return FailedRun(command, proxy.base_url, result, elapsed, [i.fault for i in seen], retrying)


def test_all_faults_exit_3_inside_the_budget_and_write_nothing(airflow_server, tmp_path: Path) -> None:
    """export and capture, run at the same time (each with its own proxy) to keep the module fast."""
    targets = {"export": tmp_path / "sink", "capture": tmp_path / "out"}
    with ThreadPoolExecutor(2) as pool:
        runs = list(
            pool.map(
                lambda command, seed: run_against_all_faults(airflow_server, command, targets[command], seed),
                ["export", "capture"],
                [1, 2],
            )
        )

    for run in runs:
        last = run.result.stderr.splitlines()[-1] if run.result.stderr else ""
        outcome = f"exit {run.result.returncode} in {run.elapsed:.1f} s (last retry at {run.retrying:.1f} s)"
        print(f"\n{run.command}: {outcome}; faults {run.faults}; {last}")
        assert run.result.returncode == 3, run.result.stderr
        assert run.retrying < RETRY_BUDGET  # no retry starts once the budget is spent
        assert run.elapsed < RETRY_BUDGET + SLACK
        assert run.faults, "the proxy saw no request"
        assert None not in run.faults
        failed = r"error: (GET|POST) " + re.escape(run.base_url) + r"/\S+ failed after \d+ attempts?: "
        reason = r"(HTTP (429|500|502|503|504)|ConnectionError: .+|ReadTimeout: .+|ChunkedEncodingError: .+)"
        assert re.fullmatch(failed + reason + r"( \(the retry budget of 5 s is spent\))?", last), last
        assert airflow_server.password not in run.result.stdout + run.result.stderr
    # the sink directory is never created; capture makes --out before it starts, and leaves it empty
    assert not targets["export"].exists()
    assert list(targets["capture"].iterdir()) == []
