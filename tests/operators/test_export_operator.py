"""CoreModelsExportOperator end to end: dag.test() of the example export DAG against a real API server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.dag_runs import api_connection, dag_home, run_dag
from support.helpers import AIRFLOW_VERSION, SERVED_ESTATE, WATCHERS_NOTE

pytestmark = pytest.mark.airflow_server

CANARY = "canary-S3cr3t-pw-2f9c"


@pytest.fixture(scope="module")
def runner_env(tmp_path_factory, airflow_server):
    """A separate Airflow home (migrated SQLite) whose DAG folder holds only the export DAG."""
    env = dag_home(tmp_path_factory, "coremodels_export.py")
    env["AIRFLOW_CONN_AIRFLOW_API_DEFAULT"] = api_connection(airflow_server)
    return env


def dag_test(env: dict[str, str], sinks: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_dag({**env, "AIRFLOW_VAR_COREMODELS_SINKS": sinks, **extra_env}, "coremodels_export.py", 300)


def marker(output: str, name: str) -> str:
    return next(line[len(name) + 1 :] for line in output.splitlines() if line.startswith(name + " "))


def test_export_dag_logs_findings_and_returns_a_summary(runner_env, tmp_path: Path) -> None:
    out = tmp_path / "sink"
    result = dag_test(runner_env, str(out))
    assert marker(result.stdout, "STATE") == "success success", result.stdout[-3000:] + result.stderr[-3000:]
    log = result.stdout + result.stderr

    # the task log: a summary line, then one line per finding with severity, code, subject, message, detail
    edges = f"{SERVED_ESTATE.lineage_edges} lineage edges (0 external)"
    assert f"6 DAGs (2 paused) · 4 assets · 11 tasks · {edges} · fingerprint" in log
    assert (
        "Warning paused-producer s3://lake/orders.parquet: Every producer of this asset is paused "
        "while active DAGs still consume it — consumers will silently run on stale data."
        f" (producers: load_orders; active consumers: daily_revenue{WATCHERS_NOTE})" in log
    )
    assert "Info dag-no-description legacy_cleanup: DAG has no description" in log

    summary = json.loads(marker(result.stdout, "XCOM"))
    document = json.loads((out / "latest.json").read_bytes())
    assert summary == {
        "fingerprint": document["fingerprint"],
        "deployment": "airflow_api_default",
        "facts": {"dags": 6, "pausedDags": 2, "assets": 4, "tasks": 11},
        "findings": {"Info": 1, "Warning": SERVED_ESTATE.warnings},
        "newFindings": 1 + SERVED_ESTATE.warnings,  # the first export: every open finding is new
        "resolvedFindings": 0,
        "waivedFindings": 0,
        "lineageEdgesSkipped": 0,
        "snapshotStored": True,
        "unchanged": False,
        "findingsChanged": False,
        "sinks": [
            {
                "sink": str(out),
                "unchanged": False,
                "findingsChanged": False,
                "written": [str(next((out / "history").iterdir())), str(out / "latest.json")],
                "baselineReplaced": True,
            }
        ],
    }
    assert document["state"]["airflowVersion"] == AIRFLOW_VERSION
    assert document["state"]["deployment"] == "airflow_api_default"  # the connection id, by default


def test_second_run_is_unchanged(runner_env, tmp_path: Path) -> None:
    out = tmp_path / "sink"
    first = dag_test(runner_env, str(out))
    second = dag_test(runner_env, str(out))
    assert marker(second.stdout, "STATE") == "success success", second.stderr[-3000:]
    assert json.loads(marker(first.stdout, "XCOM"))["unchanged"] is False
    assert json.loads(marker(second.stdout, "XCOM"))["unchanged"] is True
    assert len(list((out / "history").iterdir())) == 1


def test_fail_on_fails_the_task_after_pushing(runner_env, tmp_path: Path) -> None:
    """fail_on='warning' (through a patched copy of the DAG) fails the task, yet the snapshot is stored."""
    dags = Path(runner_env["AIRFLOW__CORE__DAGS_FOLDER"])
    strict = tmp_path / "dags"
    strict.mkdir()
    text = (dags / "coremodels_export.py").read_text().replace('fail_on="never"', 'fail_on="warning"')
    (strict / "coremodels_export.py").write_text(text)
    out = tmp_path / "sink"
    result = dag_test({**runner_env, "AIRFLOW__CORE__DAGS_FOLDER": str(strict)}, str(out))
    assert marker(result.stdout, "STATE") == "failed failed"
    failing = f"{SERVED_ESTATE.warnings} finding(s) at or above warning; the snapshot was pushed"
    assert failing in result.stdout + result.stderr
    assert (out / "latest.json").exists()


def test_a_broken_sink_fails_the_task_after_every_other_sink_is_written(runner_env, tmp_path: Path) -> None:
    """latest.json is a directory in the first sink: the second still gets the snapshot."""
    broken, good = tmp_path / "broken", tmp_path / "good"
    (broken / "latest.json").mkdir(parents=True)
    result = dag_test(runner_env, f"{broken},{good}")
    log = result.stdout + result.stderr
    assert marker(result.stdout, "STATE") == "failed failed", log[-3000:]
    assert (good / "latest.json").exists()
    said = f"sink {broken}: {broken / 'latest.json'} is not a regular file"
    assert f"AirflowException: {said}" in log  # the task's failure is the sink's own error
    assert f"{broken} (failed), {good} (written)" in log


def test_waivers_are_logged_stored_and_left_out_of_the_counts(runner_env, tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        "- {code: paused-producer, subject: 's3://lake/*', reason: orders are being migrated}\n"
        "- {code: dag-no-owner, subject: legacy_cleanup, reason: old, expires: 2001-01-01}\n"
    )
    out = tmp_path / "sink"
    result = dag_test(runner_env, str(out), AIRFLOW_VAR_COREMODELS_WAIVERS=str(waivers))
    assert marker(result.stdout, "STATE") == "success success", result.stdout[-3000:] + result.stderr[-3000:]
    log = result.stdout + result.stderr
    assert (
        f"(producers: load_orders; active consumers: daily_revenue{WATCHERS_NOTE}) "
        "[waived: orders are being migrated]" in log
    )
    assert "Warning waiver-expired dag-no-owner legacy_cleanup: Waiver has expired" in log
    open_warnings = SERVED_ESTATE.warnings  # the waived one is not counted; the expiry is
    assert f"findings: {open_warnings + 1} ({open_warnings + 1} Warning, 1 Info)" not in log
    assert f"findings: {open_warnings + 1} ({open_warnings} Warning, 1 Info); 1 waived" in log
    summary = json.loads(marker(result.stdout, "XCOM"))
    assert summary["findings"] == {"Info": 1, "Warning": open_warnings}
    stored = json.loads((out / "latest.json").read_bytes())["findings"]
    assert [f["waived"] for f in stored if f.get("waived")] == [
        {"reason": "orders are being migrated", "expires": None}
    ]


def test_a_malformed_waiver_file_fails_the_task_before_any_capture(runner_env, tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("- {code: dag-no-owner, subject: x}\n")
    out = tmp_path / "sink"
    result = dag_test(runner_env, str(out), AIRFLOW_VAR_COREMODELS_WAIVERS=str(waivers))
    assert marker(result.stdout, "STATE") == "failed failed"
    assert (
        f"waiver file {waivers} waivers[0].reason must be a non-empty string" in result.stdout + result.stderr
    )
    assert not out.exists()


def test_the_teams_rules_are_logged_stored_and_counted(runner_env, tmp_path: Path) -> None:
    """The rules file from the example DAG's Variable: its findings in the task log, the snapshot and
    the XCom counts, like the built-in ones."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n  - code: policy-team-tag\n    severity: Error\n    require: {tag: 'team:*'}\n"
        "    where: {dag_id: 'load_*'}\n  - code: policy-retries\n    require: {task_retries_min: 1}\n"
        "    where: {dag_id: sync_crm}\n"
    )
    out = tmp_path / "sink"
    result = dag_test(runner_env, str(out), AIRFLOW_VAR_COREMODELS_RULES=str(rules))
    assert marker(result.stdout, "STATE") == "success success", result.stdout[-3000:] + result.stderr[-3000:]
    log = result.stdout + result.stderr
    assert "Error policy-team-tag load_orders: DAG has no tag matching team:*. (tags: lake, orders)" in log
    assert "Warning policy-retries sync_crm.sync_account: Task retries fewer than 1 time" in log
    assert "policy: 2 rules (digest " in log
    summary = json.loads(marker(result.stdout, "XCOM"))
    assert summary["findings"] == {"Error": 1, "Info": 1, "Warning": SERVED_ESTATE.warnings + 3}
    stored = json.loads((out / "latest.json").read_bytes())
    assert sorted(f["subject"] for f in stored["findings"] if f["section"] == "Policy") == [
        "load_orders",
        "sync_crm.list_accounts",
        "sync_crm.publish_customers",
        "sync_crm.sync_account",
    ]


def test_a_malformed_rules_file_fails_the_task_before_any_capture(runner_env, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: [{code: policy-a, severity: Fatal, require: {tag: x}}]\n")
    out = tmp_path / "sink"
    result = dag_test(runner_env, str(out), AIRFLOW_VAR_COREMODELS_RULES=str(rules))
    assert marker(result.stdout, "STATE") == "failed failed"
    said = f"rules file {rules} rules[0].severity 'Fatal' is not a severity; expected Info, Warning or Error"
    assert said in result.stdout + result.stderr
    assert not out.exists()


def test_secrets_never_reach_logs_xcom_or_snapshots(runner_env, airflow_server, tmp_path: Path) -> None:
    """The connection's password is masked in the task log, and absent from XCom and the sink."""
    out = tmp_path / "sink"
    result = dag_test(runner_env, str(out))
    password = airflow_server.password
    assert password not in result.stdout + result.stderr
    assert password not in marker(result.stdout, "XCOM")
    for path in out.rglob("*.json"):
        assert password.encode() not in path.read_bytes()


def test_a_refused_password_fails_the_task_without_leaking_it(
    runner_env, airflow_server, tmp_path: Path
) -> None:
    connection = {
        "conn_type": "airflow_api",
        "host": airflow_server.base_url,
        "login": airflow_server.username,
        "password": CANARY,
    }
    result = dag_test(
        runner_env, str(tmp_path / "sink"), AIRFLOW_CONN_AIRFLOW_API_DEFAULT=json.dumps(connection)
    )
    assert marker(result.stdout, "STATE") == "failed failed"
    log = result.stdout + result.stderr
    assert "authentication refused by" in log
    assert CANARY not in log
    assert not (tmp_path / "sink").exists()


def test_a_server_echoing_the_token_and_password_fails_the_task_without_either(
    runner_env, tmp_path: Path
) -> None:
    """A compromised API server repeats the bearer token and the password in its 403: the task
    fails, naming the status, and neither reaches the task log (scrubbed, and masked by Airflow)."""
    from support.hostile_api import TOKEN, HostileApi

    with HostileApi("echo-secrets", password=CANARY) as api:
        connection = {"conn_type": "airflow_api", "host": api.base_url, "login": "admin", "password": CANARY}
        result = dag_test(
            runner_env, str(tmp_path / "sink"), AIRFLOW_CONN_AIRFLOW_API_DEFAULT=json.dumps(connection)
        )
    assert marker(result.stdout, "STATE") == "failed failed"
    log = result.stdout + result.stderr
    assert "HTTP 403" in log
    assert CANARY not in log and TOKEN not in log
    assert not (tmp_path / "sink").exists()


def test_a_server_quoting_a_password_in_its_refusal_fails_the_task_without_it(
    runner_env, tmp_path: Path
) -> None:
    """The DAG list refused (400) with a body quoting a URL's password and ``password=`` (issue 44):
    the task log says what the server said, the secrets scrubbed (Airflow's masker knows neither)."""
    from support.hostile_api import ASSIGNED_PASSWORD, URL_PASSWORD, HostileApi

    with HostileApi("refused-quoting", password=CANARY) as api:
        connection = {"conn_type": "airflow_api", "host": api.base_url, "login": "admin", "password": CANARY}
        result = dag_test(
            runner_env, str(tmp_path / "sink"), AIRFLOW_CONN_AIRFLOW_API_DEFAULT=json.dumps(connection)
        )
    assert marker(result.stdout, "STATE") == "failed failed"
    log = result.stdout + result.stderr
    assert "HTTP 400: connection to postgresql://etl:***@db:5432/dw failed (password=***)" in log
    assert URL_PASSWORD not in log and ASSIGNED_PASSWORD not in log and CANARY not in log


def test_without_sinks_the_task_says_it_stores_nothing(runner_env) -> None:
    """The example DAG copied as it is, before its Variable is set: it audits, logs, and says so."""
    result = dag_test(runner_env, "")
    assert marker(result.stdout, "STATE") == "success success", result.stdout[-3000:] + result.stderr[-3000:]
    log = result.stdout + result.stderr
    assert "No sinks: the snapshot is audited and logged, but stored nowhere" in log
    assert "6 DAGs (2 paused)" in log
