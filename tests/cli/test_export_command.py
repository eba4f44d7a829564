"""``export``: capture, audit against the sinks' baseline, print, push; against a real API server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.helpers import REPO

from airflow_provider_coremodels.cli.main import main

pytestmark = pytest.mark.airflow_server


def export(server, *argv: str, password: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AF_PASSWORD": password or server.password}
    command = [
        sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", server.base_url,
        "--username", server.username, "--password-env", "AF_PASSWORD", *argv,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def test_export_prints_findings_pushes_and_then_reports_unchanged(airflow_server, tmp_path: Path) -> None:
    sink = tmp_path / "out"
    first = export(airflow_server, "--sink", str(sink))
    assert first.returncode == 0, first.stderr
    assert "coverage and drift: not evaluated (no baseline stored at the sinks yet)" in first.stdout
    assert "Warning   Conformance  paused-producer     s3://lake/orders.parquet" in first.stdout
    document = json.loads((sink / "latest.json").read_bytes())
    assert first.stdout.rstrip().endswith(
        f"export: fingerprint {document['fingerprint']} changed; {sink} (written)"
    )

    second = export(airflow_server, "--sink", str(sink))
    assert second.returncode == 0, second.stderr
    assert f"coverage and drift: evaluated against baseline {document['fingerprint']}" in second.stdout
    assert second.stdout.rstrip().endswith(
        f"export: fingerprint {document['fingerprint']} unchanged; {sink} (unchanged)"
    )
    assert len(list((sink / "history").iterdir())) == 1


def test_export_json_keeps_stdout_for_the_document(airflow_server, tmp_path: Path) -> None:
    result = export(airflow_server, "--sink", str(tmp_path / "a"), "--sink", f"file://{tmp_path / 'b'}",
                    "--format", "json", "--fail-on", "warning")  # fmt: skip
    assert result.returncode == 1  # three warnings
    document = json.loads(result.stdout)
    assert document["state"]["apiVersion"] == "v2"
    assert document["state"]["capturedAt"].endswith("Z")
    assert (tmp_path / "a" / "latest.json").read_bytes() == (tmp_path / "b" / "latest.json").read_bytes()
    assert "export: fingerprint" in result.stderr


def test_drift_against_the_stored_baseline(airflow_server, tmp_path: Path) -> None:
    """The sink's latest.json is the baseline: a task that vanished since is reported as removed."""
    sink = tmp_path / "out"
    export(airflow_server, "--sink", str(sink))
    baseline = json.loads((sink / "latest.json").read_bytes())
    legacy = next(d for d in baseline["datasets"] if d["identity"] == "legacy_cleanup")
    legacy["fields"].append({**legacy["fields"][0], "name": "vacuum"})
    (sink / "latest.json").write_text(json.dumps(baseline))

    result = export(airflow_server, "--sink", str(sink), "--format", "json")
    drift = [
        (f["code"], f["subject"]) for f in json.loads(result.stdout)["findings"] if f["section"] == "Drift"
    ]
    assert drift == [("field-removed", "legacy_cleanup.vacuum")]


def test_an_unreadable_baseline_is_lossiness_and_is_replaced(airflow_server, tmp_path: Path) -> None:
    sink = tmp_path / "out"
    sink.mkdir()
    (sink / "latest.json").write_text("{ half a docu")
    result = export(airflow_server, "--sink", str(sink), "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["baseline"]["reason"] == f"the baseline at {sink} is unusable"
    assert document["lossiness"][-1]["artifact"] == "baseline"
    assert json.loads((sink / "latest.json").read_bytes())["fingerprint"] == document["fingerprint"]


def test_capture_failure_exits_3_and_no_sink_is_written(airflow_server, tmp_path: Path) -> None:
    sink = tmp_path / "out"
    result = export(airflow_server, "--sink", str(sink), password="wrong-canary-pw")
    assert result.returncode == 3
    assert result.stderr.strip().splitlines()[-1].startswith("error: authentication refused by")
    assert "wrong-canary-pw" not in result.stdout + result.stderr
    assert not sink.exists()


def test_snapshot_cap_keeps_the_baseline(airflow_server, tmp_path: Path) -> None:
    sink = tmp_path / "out"
    export(airflow_server, "--sink", str(sink))
    before = (sink / "latest.json").read_bytes()
    # an added DAG would change the fingerprint; a tiny cap on the same estate must not replace latest.json
    (sink / "latest.json").write_bytes(before.replace(b'"fingerprint":"', b'"fingerprint":"0', 1))
    edited = (sink / "latest.json").read_bytes()
    result = export(airflow_server, "--sink", str(sink), "--max-snapshot-bytes", "1000", "--format", "json")
    document = json.loads(result.stdout)
    assert document["snapshotStored"] is False
    assert (sink / "latest.json").read_bytes() == edited
    stored = [json.loads(p.read_bytes()) for p in (sink / "history").iterdir()]
    [capped] = [doc for doc in stored if not doc["snapshotStored"]]
    assert "datasets" not in capped and "lineage" not in capped


def test_export_with_waivers_prints_sarif_and_stores_the_marks(airflow_server, tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.json"
    waivers.write_text(json.dumps([{"code": "dag-no-owner", "subject": "legacy_*", "reason": "ops owns it"}]))
    sink = tmp_path / "out"
    result = export(airflow_server, "--sink", str(sink), "--waivers", str(waivers), "--format", "sarif")
    assert result.returncode == 0, result.stderr
    sarif = json.loads(result.stdout)  # stdout is the SARIF alone; the summary went to stderr
    assert "export: fingerprint" in result.stderr
    owner = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "dag-no-owner")
    assert owner["suppressions"][0]["justification"] == "ops owns it"
    assert owner["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "legacy.py"
    stored = json.loads((sink / "latest.json").read_bytes())
    assert [f["code"] for f in stored["findings"] if f.get("waived")] == ["dag-no-owner"]


def test_export_refuses_a_malformed_waiver_file_before_capturing(airflow_server, tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("- code: dag-no-owner\n")
    result = export(airflow_server, "--sink", str(tmp_path / "out"), "--waivers", str(waivers))
    assert result.returncode == 2
    last_line = result.stderr.strip().splitlines()[-1]
    assert last_line.startswith(f"error: waiver file {waivers} waivers[0].subject")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("sink", "says"),
    [
        (
            "ftp://user:Sink-pw-1@host/x",
            "sink ftp://***@host/x: unknown scheme 'ftp': a sink is a path or file:// URI",
        ),
        (
            "file://otherhost/tmp/x",
            "a file:// URI must name a local path (file:///path), not the host 'otherhost'",
        ),
    ],
)
def test_a_sink_uri_is_checked_before_anything_is_captured(capsys, sink: str, says: str) -> None:
    """Exit 2 at once, naming the sink and what is wrong: no request is sent (the API is unreachable here)."""
    code = main(["export", "--base-url", "http://127.0.0.1:9", "--sink", sink])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err
    assert "Sink-pw-1" not in err


def test_export_without_a_sink_warns_that_nothing_is_stored(airflow_server) -> None:
    result = export(airflow_server, "--format", "json")
    assert result.returncode == 0, result.stderr
    assert (
        "warning: export has no --sink: the snapshot is audited and printed, but stored nowhere"
        in result.stderr
    )
    assert json.loads(result.stdout)["schemaVersion"] == 2  # stdout is still the document alone
    assert result.stderr.count("captured 6 DAGs") == 1  # the capture's summary, once


def test_a_waiver_added_to_an_unchanged_estate_reaches_the_sink(airflow_server, tmp_path: Path) -> None:
    """The estate did not change, its findings did: the export stores them and says so."""
    sink = tmp_path / "out"
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("- {code: dag-no-owner, subject: legacy_cleanup, reason: ops owns it}\n")
    first = export(airflow_server, "--sink", str(sink))
    assert first.returncode == 0, first.stderr
    fingerprint = json.loads((sink / "latest.json").read_bytes())["fingerprint"]

    waived = export(airflow_server, "--sink", str(sink), "--waivers", str(waivers))
    assert waived.returncode == 0, waived.stderr
    assert waived.stdout.rstrip().endswith(
        f"export: fingerprint {fingerprint} unchanged, findings changed; {sink} (written)"
    )
    stored = json.loads((sink / "latest.json").read_bytes())
    assert [f["subject"] for f in stored["findings"] if f.get("waived")] == ["legacy_cleanup"]
    assert len(list((sink / "history").iterdir())) == 2

    again = export(airflow_server, "--sink", str(sink), "--waivers", str(waivers))
    assert again.stdout.rstrip().endswith(f"export: fingerprint {fingerprint} unchanged; {sink} (unchanged)")


def test_a_snapshot_names_its_deployment(airflow_server, tmp_path: Path) -> None:
    named = export(airflow_server, "--sink", str(tmp_path / "named"), "--deployment", "prod-eu")
    assert named.returncode == 0, named.stderr
    assert json.loads((tmp_path / "named" / "latest.json").read_bytes())["state"]["deployment"] == "prod-eu"
    unnamed = export(airflow_server, "--sink", str(tmp_path / "unnamed"))  # --base-url: no connection id
    assert unnamed.returncode == 0, unnamed.stderr
    assert json.loads((tmp_path / "unnamed" / "latest.json").read_bytes())["state"]["deployment"] is None


#: ``python -m airflow_provider_coremodels ARGS``, writing at exit the Airflow modules it loaded.
_LOADED = """
import atexit, json, os, runpy, sys
def loaded():
    names = sorted(name for name in sys.modules if name == "airflow" or name.startswith("airflow."))
    open(os.environ["LOADED_FILE"], "w").write(json.dumps(names))
atexit.register(loaded)
sys.argv = ["airflow_provider_coremodels", *sys.argv[1:]]
runpy.run_module("airflow_provider_coremodels", run_name="__main__")
"""


def export_loading(
    server, tmp_path: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``export --deployment prod.eu`` run as a user runs it, with ``env`` in place of every
    ``AIRFLOW_*`` variable of the tests' own: its result, and the Airflow modules it loaded."""
    loaded = tmp_path / "loaded.json"
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
    environment.update(env, AF_PASSWORD=server.password, LOADED_FILE=str(loaded))
    command = [
        sys.executable, "-c", _LOADED, "export",
        "--base-url", server.base_url, "--username", server.username,
        "--password-env", "AF_PASSWORD", "--sink", str(tmp_path / "out"), "--deployment", "prod.eu",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    return result, json.loads(loaded.read_text())


@pytest.mark.parametrize("configured_in", ["environment", "airflow.cfg"])
def test_export_sends_its_metrics_where_airflow_sends_its_own(
    airflow_server, tmp_path: Path, configured_in: str
) -> None:
    """[metrics] statsd_on, in the environment or in the home's airflow.cfg: the command line
    initializes Airflow's Stats itself (no Airflow process did) and the values reach a StatsD
    daemon, here a UDP socket on 127.0.0.1."""
    from support.listeners import StatsdListener

    home = tmp_path / "airflow-home"
    home.mkdir()
    with StatsdListener() as statsd:
        metrics = statsd.env(prefix="af")
        env = {"AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
        if configured_in == "environment":
            env.update(metrics)
        else:
            options = "".join(f"{name.rsplit('__', 1)[1].lower()} = {v}\n" for name, v in metrics.items())
            (home / "airflow.cfg").write_text(f"[core]\nload_examples = False\n[metrics]\n{options}")
        result, loaded = export_loading(airflow_server, tmp_path, env)
        assert result.returncode == 0, result.stderr
        assert "airflow" in loaded  # Airflow was asked
        for _ in range(50):  # the datagrams were sent before the command ended; give the socket a moment
            if any("sinks.failed" in line for line in statsd.lines):
                break
            time.sleep(0.1)
        values = StatsdListener.values(statsd.take(), "af.coremodels.")
    assert values["af.coremodels.findings.open.prod_eu.Warning"].endswith("|g")  # the dot is no level
    assert values["af.coremodels.findings.resolved.prod_eu"] == "0|g"
    assert values["af.coremodels.capture.duration.prod_eu"].endswith("|ms")


def test_with_metrics_off_the_export_never_imports_airflow(airflow_server, tmp_path: Path) -> None:
    """No [metrics] option anywhere (Airflow's default is off): the command line leaves Airflow
    unimported, most of its start-up time, and writes nothing into the Airflow home."""
    home = tmp_path / "airflow-home"
    home.mkdir()
    (home / "airflow.cfg").write_text("[core]\nload_examples = False\n[metrics]\n# statsd_on = True\n")
    result, loaded = export_loading(airflow_server, tmp_path, {"AIRFLOW_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert loaded == []
    assert sorted(p.name for p in home.iterdir()) == ["airflow.cfg"]
    assert json.loads((tmp_path / "out" / "latest.json").read_bytes())["state"]["deployment"] == "prod.eu"


def test_history_keep_removes_old_entries_and_says_so(airflow_server, tmp_path: Path) -> None:
    """A sink with a long history, exported with --history-keep 2: the export stores the live
    estate, then removes all but the two newest entries, and the export line says how many."""
    from support.helpers import document_for

    from airflow_provider_coremodels.sinks import FileSink

    sink = tmp_path / "out"
    for day in range(1, 5):  # four older estates, one a day
        dags = [
            {"dag_id": f"old_{i}", "description": "d", "owners": ["o"], "is_paused": False}
            for i in range(day)
        ]
        doc = document_for(dags, {d["dag_id"]: [] for d in dags}, [])
        doc["state"]["capturedAt"] = f"2026-11-0{day}T06:00:00Z"
        FileSink(sink).push(doc)
    result = export(airflow_server, "--sink", str(sink), "--history-keep", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(f"{sink} (written; 3 history entries removed)")
    names = sorted(p.name for p in (sink / "history").iterdir())
    assert len(names) == 2 and names[0].startswith("20261104T060000Z-")
    latest = json.loads((sink / "latest.json").read_bytes())
    assert names[1].endswith(f"-{latest['fingerprint']}.json")
