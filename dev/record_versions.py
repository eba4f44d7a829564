"""Record real Airflow servers of every line answering the provider's own capture, for replay in CI.

    .venv/bin/python dev/record_versions.py                                  # everything
    .venv/bin/python dev/record_versions.py --line 3.1.8 --scenario examples  # one recording

For each line (its venv from dev/versions/make_venvs.sh; 3.3.2 is the dev venv) a real server is
started with ``tests/support/version_servers.py``'s ``VersionServer``, one at a time, with
``tests/support/recording.py``'s ``RecordingProxy`` in front of it, and the provider's capture runs
against the proxy exactly as ``python -m airflow_provider_coremodels capture`` runs it (here, in the
dev venv: it is only a client)::

    source = ApiSource(proxy.base_url, username=user, password=password)
    with AirflowApiClient(source) as client:
        captured = capture(client, keep_raw=True)

Scenarios (the steps of ``dev/versions/probe_api.py``):

* ``examples``: load_examples=True, no DAG folder of ours, after ``dags reserialize``.
* ``examples_scheduler``: the same server after one scheduler asset pass (3.x:
  ``_update_asset_orphanage``; 2.11: ``_orphan_unreferenced_datasets``).
* ``broken``: the probe's lifecycle DAG folder after reserialize and a DAG-processor pass, then
  ``load_orders.py`` broken with a NameError and another pass (the probe's step b).
* ``deleted``: continuing from ``broken``: ``loser``'s only outlet removed, ``reader``'s only inlet
  removed, ``gone.py`` deleted, each followed by a pass (the probe's steps c, d, e).
* ``links``: the link estate (``tests/fixtures/link_dags``: triggers and sensors with static,
  templated and missing targets, a paused target, owner links, a deadline alert where the line has
  them), after ``dags reserialize`` with ``dags_are_paused_at_creation`` off; no scheduler runs.

Each recording goes to ``tests/fixtures/versions/<line>/<scenario>.json.gz``. What is
machine-specific or secret is replaced in the bodies before saving: the JWT of the token answer (a
fixed fake string), the Airflow home, the DAG folder, the venv's site-packages and the venv itself
(fixed ``/opt/airflow/...`` placeholders), and the server's address. The saved recording is then
replayed through the capture once more (``ReplayServer``) to check that nothing is missing and that
it parses into the same estate. The Airflow homes (logs, databases) and the captured artifacts are
kept under ``/work/versions-scratch/rec/<line>/``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "dev" / "versions"))

from probe_api import write_dags  # noqa: E402
from support.recording import (  # noqa: E402
    RecordingProxy,
    ReplayServer,
    capture_clock,
    load_recording,
    save_recording,
)
from support.version_servers import VersionServer  # noqa: E402

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture  # noqa: E402

VENVS = {
    "2.11.2": Path("/work/venvs/af-2.11.2"),
    "3.0.6": Path("/work/venvs/af-3.0.6"),
    "3.1.8": Path("/work/venvs/af-3.1.8"),
    "3.2.2": Path("/work/venvs/af-3.2.2"),
    # the dev venv: the checkout's own, else the one running this script (a worktree has none)
    "3.3.2": REPO / ".venv" if (REPO / ".venv").exists() else Path(sys.prefix),
}
SCENARIOS = ("examples", "examples_scheduler", "broken", "deleted", "links")
LINK_DAGS = REPO / "tests" / "fixtures" / "link_dags"
OUT = REPO / "tests" / "fixtures" / "versions"
SCRATCH = Path("/work/versions-scratch/rec")

#: What the machine-specific paths become in the recorded bodies.
PLACEHOLDERS = {
    "dags": "/opt/airflow/dags",
    "home": "/opt/airflow/home",
    "site-packages": "/opt/airflow/site-packages",
    "venv": "/opt/airflow/venv",
    "repo": "/opt/airflow/src",
}
FAKE_TOKEN = "recorded.fake.jwt-not-a-real-token"
#: Airflow 2's ``file_token``: the DAG file's absolute path, signed and base64-encoded (zlib-compressed
#: when long), which the string replacements below cannot see into. The capture never reads it.
FILE_TOKEN = re.compile(r'("file_token":\s*)"[^"]*"')
FAKE_FILE_TOKEN = "recorded.fake.file-token"
SERVER_ADDRESS = "http://localhost:8080"
#: What no recorded body may still contain once cleaned.
FORBIDDEN = ("/work/", "/tmp/airflow-", "/root/")


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _site_packages(venv: Path) -> str:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


def replacements(server: VersionServer, proxy: RecordingProxy) -> list[tuple[str, str]]:
    """(machine-specific text, placeholder) pairs, longest first, so a folder inside another is
    replaced as itself."""
    assert server.home is not None and server.dags_folder is not None
    pairs: dict[str, str] = {}
    for kind, path in (
        ("dags", server.dags_folder),
        ("home", server.home),
        ("site-packages", Path(_site_packages(server.venv))),
        ("venv", server.venv),
        ("repo", REPO),
    ):
        for spelling in {str(path), str(Path(path).resolve())}:
            pairs.setdefault(spelling.rstrip("/"), PLACEHOLDERS[kind])
    for base in (server.base_url, proxy.base_url):
        pairs[base] = SERVER_ADDRESS
    return sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)


def clean(exchanges: list[dict[str, Any]], pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The exchanges with the secrets and the machine's paths replaced in their bodies."""
    tokens = set()
    for exchange in exchanges:
        if exchange["path"] == "/auth/token" and exchange["method"] == "POST":
            try:
                token = json.loads(exchange["body"]).get("access_token")
            except (ValueError, AttributeError):
                token = None
            if isinstance(token, str) and token:
                tokens.add(token)
    cleaned = []
    for exchange in exchanges:
        body = exchange["body"]
        for token in tokens:
            body = body.replace(token, FAKE_TOKEN)
        for found, placeholder in pairs:
            body = body.replace(found, placeholder)
        body = FILE_TOKEN.sub(rf'\1"{FAKE_FILE_TOKEN}"', body)
        for forbidden in FORBIDDEN:
            if forbidden in body:
                where = body.index(forbidden)
                raise RuntimeError(
                    f"{exchange['method']} {exchange['path']}: still holds {forbidden!r} after cleaning: "
                    f"...{body[max(0, where - 80) : where + 120]}..."
                )
        if re.search(r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.", body):
            raise RuntimeError(f"{exchange['method']} {exchange['path']}: a JWT is left in the body")
        cleaned.append({**exchange, "body": body})
    return cleaned


def _estate_summary(estate: Any) -> dict[str, Any]:
    return {
        "datasets": sorted((d.materialization, d.identity) for d in estate.datasets),
        "lineage": sorted((*edge.key, edge.external, edge.via) for edge in estate.lineage),
        "import_errors": sorted((b.file, b.dags) for b in estate.import_errors),
    }


def record(server: VersionServer, line: str, scenario: str) -> Path:
    """Capture ``server`` through the recording proxy, clean and save the recording, then check
    that its replay gives the capture the same estate."""
    scratch = SCRATCH / line / scenario
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    with RecordingProxy(server.base_url) as proxy:
        source = ApiSource(proxy.base_url, username=server.username, password=server.password)
        with AirflowApiClient(source) as client:
            captured = capture(client, keep_raw=True)
        exchanges = proxy.exchanges
        pairs = replacements(server, proxy)
    for name, value in (("dags", captured.dags), ("tasks", captured.tasks), ("datasets", captured.datasets)):
        (scratch / f"{name}.json").write_text(json.dumps(value, indent=1, default=str))
    (scratch / "lossiness.txt").write_text(
        "".join(f"{r.artifact}: {r.message}\n" for r in captured.lossiness)
    )
    recording = {
        "airflow": line,
        "scenario": scenario,
        "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "captured_at": captured.dags["captured_at"],
        "api_version": captured.state.api_version,
        "username": server.username,
        "summary": captured.summary.line(),
        "exchanges": clean(exchanges, pairs),
    }
    path = OUT / line / f"{scenario}.json.gz"
    size = save_recording(path, recording)
    _say(f"{line} {scenario}: {len(exchanges)} exchanges, {size / 1024:.0f} KiB -> {path.relative_to(REPO)}")
    _say(f"    {captured.summary.line()}")
    check_replay(path, captured, pairs)
    return path


def check_replay(path: Path, recorded: Any, pairs: list[tuple[str, str]]) -> None:
    """Replay the saved recording through the capture (as export runs it, not keep_raw): nothing may
    be missing, and the estate must be the recorded capture's, up to the cleaned paths."""
    recording = load_recording(path)
    with ReplayServer(recording["exchanges"]) as server, capture_clock(recording["captured_at"]):
        source = ApiSource(server.base_url, username=recording["username"], password="replayed-password")
        with AirflowApiClient(source) as client:
            replayed = capture(client)
        if server.unrecorded:
            raise RuntimeError(f"{path}: the replay asked for what was not recorded: {server.unrecorded}")
    before = json.dumps(_estate_summary(recorded.estate()))
    for found, placeholder in pairs:  # a file Airflow 2 names by its absolute path
        before = before.replace(found, placeholder)
    after = json.dumps(_estate_summary(replayed.estate()))
    if before != after:
        raise RuntimeError(f"{path}: the replayed estate differs from the recorded capture's")
    summary = json.loads(after)
    _say(f"    replay: {len(summary['datasets'])} datasets, {len(summary['lineage'])} edges, same estate")


def run_examples(line: str, scenarios: list[str]) -> None:
    home = SCRATCH / line / "home-examples"
    shutil.rmtree(home, ignore_errors=True)
    with VersionServer(VENVS[line], None, load_examples=True, home=home) as server:
        _say(f"{line}: examples server up ({ {k: round(v) for k, v in server.timings.items()} } s)")
        if "examples" in scenarios:
            record(server, line, "examples")
        if "examples_scheduler" in scenarios:
            server.scheduler_asset_pass()
            record(server, line, "examples_scheduler")


def run_lifecycle(line: str, scenarios: list[str]) -> None:
    home = SCRATCH / line / "home-lifecycle"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    dags = home / "dags"
    server = VersionServer(VENVS[line], dags, load_examples=False, home=home)
    write_dags(dags, server.major)
    with server:
        server.dag_processor_pass()  # a: a good parse
        with (dags / "load_orders.py").open("a") as file:
            file.write("\nthis_name_is_not_defined  # raises NameError at import\n")
        server.dag_processor_pass()  # b
        _say(f"{line}: lifecycle step b done")
        if "broken" in scenarios:
            record(server, line, "broken")
        if "deleted" not in scenarios:
            return
        text = (dags / "loser.py").read_text()
        (dags / "loser.py").write_text(text.replace("outlets=[Asset('s3://lake/lost')]", "outlets=[]"))
        server.dag_processor_pass()  # c
        text = (dags / "reader.py").read_text()
        (dags / "reader.py").write_text(
            text.replace("inlets=[Asset('s3://lake/orders.parquet')]", "inlets=[]")
        )
        server.dag_processor_pass()  # d
        (dags / "gone.py").unlink()
        server.dag_processor_pass()  # e
        _say(f"{line}: lifecycle steps c, d, e done")
        record(server, line, "deleted")


def run_links(line: str, scenarios: list[str]) -> None:
    home = SCRATCH / line / "home-links"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    dags = home / "dags"
    shutil.copytree(LINK_DAGS, dags, ignore=shutil.ignore_patterns("__pycache__"))
    # an active DAG waits on a paused one (archive_ledger pauses itself at creation); nothing is
    # scheduled, since no scheduler runs: `dags reserialize` alone writes the DAGs
    paused = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}
    with VersionServer(VENVS[line], dags, load_examples=False, home=home, extra_env=paused) as server:
        _say(f"{line}: links server up ({ {k: round(v) for k, v in server.timings.items()} } s)")
        record(server, line, "links")


GROUPS = {
    "examples": (("examples", "examples_scheduler"), run_examples),
    "lifecycle": (("broken", "deleted"), run_lifecycle),
    "links": (("links",), run_links),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--line", action="append", choices=list(VENVS), help="default: every line")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="default: every scenario")
    args = parser.parse_args()
    lines = args.line or list(VENVS)
    scenarios = args.scenario or list(SCENARIOS)
    failed = []
    for line in lines:
        for group, (members, run) in GROUPS.items():
            wanted = [s for s in scenarios if s in members]
            if not wanted:
                continue
            _say(f"{line}: {group} ({', '.join(wanted)})")
            try:
                run(line, wanted)
            except Exception:
                failed.append(f"{line} {group}")
                print(traceback.format_exc(), flush=True)
    if failed:
        print("FAILED:", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
