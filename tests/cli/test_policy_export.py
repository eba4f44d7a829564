"""The team's rules and Airflow's own warnings through ``export``, against a real Airflow API server.

The server serves tests/fixtures/policy_dags: a DAG that keeps the conventions, one that breaks
them, and one Airflow's DAG processor warns about (a value that changes at every parse, in a line
of code that holds a password). The findings each rule must give are written here by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import FIXTURES, REPO, RUNTIME_VARYING_WARNINGS

pytestmark = pytest.mark.airflow_server

RULES = """
rules:
  - code: policy-team-tag
    require: {tag: "team:*"}
    where: {tag: prod}
  - code: policy-owners
    severity: Error
    require: {owner_in: [payments-team]}
  - code: policy-dag-id
    require: {dag_id: "[a-z]+(_[a-z]+)*"}
  - code: policy-scheduled
    require: {schedule: true}
  - code: policy-retries
    require: {task_retries_min: 1}
  - code: policy-runs
    require: {max_active_runs_max: 1}
  - code: policy-no-bash
    severity: Info
    require: {task_operator_not_in: [BashOperator]}
  - code: policy-description
    require: {description_min: 20}
"""

#: What RULES must find on the three DAGs of tests/fixtures/policy_dags, worked out by hand.
EXPECTED = [
    ("Warning", "policy-dag-id", "AdhocReport", "dag_id: AdhocReport"),
    ("Warning", "policy-description", "AdhocReport", "description: 6 characters"),
    ("Info", "policy-no-bash", "AdhocReport.run_report", "operator: BashOperator"),
    ("Error", "policy-owners", "AdhocReport", "owners: bob; not in the list: bob"),
    ("Warning", "policy-retries", "AdhocReport.run_report", "retries: 0"),
    ("Warning", "policy-runs", "AdhocReport", "max_active_runs: 16"),  # Airflow's default
    ("Warning", "policy-scheduled", "AdhocReport", "schedule: none"),
    ("Warning", "policy-team-tag", "AdhocReport", "tags: prod"),
]

PASSWORD_IN_CODE = "Hunter2-pw"
#: Airflow 3.3 never writes this type itself any more; older releases did. Written as they wrote it.
POOL_WARNING = """
from airflow.models.dagwarning import DagWarning, DagWarningType
from airflow.utils.session import create_session

with create_session() as session:
    session.merge(DagWarning("payments_reconcile", DagWarningType.NONEXISTENT_POOL,
                             "Dag 'payments_reconcile' references non-existent pools: ['etl_pool']"))
"""


@pytest.fixture(scope="module")
def policy_server():
    """A real API server of the installed Airflow serving the policy DAGs, after one pass of the DAG
    processor (which writes the runtime-varying-value warning) and one older warning of a pool."""
    from support.airflow_server import REPARSE_AT_ONCE, AirflowApiServer

    with AirflowApiServer(FIXTURES / "policy_dags", extra_env=REPARSE_AT_ONCE) as server:
        server.reparse()
        server.run_python(POOL_WARNING, what="a non-existent pool warning")
        yield server


def cli(server, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AF_PASSWORD": server.password}
    command = [sys.executable, "-m", "airflow_provider_coremodels", *argv]
    if argv[0] == "export":
        command += [
            "--base-url",
            server.base_url,
            "--username",
            server.username,
            "--password-env",
            "AF_PASSWORD",
        ]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=180)


def policy_findings(document: dict) -> list[tuple[str, str, str, str]]:
    return [
        (f["severity"], f["code"], f["subject"], f["detail"])
        for f in document["findings"]
        if f["section"] == "Policy"
    ]


def test_export_checks_the_teams_rules_and_reports_airflows_warnings(policy_server, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    sink = tmp_path / "sink"
    result = cli(policy_server, "export", "--rules", str(rules), "--sink", str(sink), "--format", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert policy_findings(document) == EXPECTED
    assert document["policy"]["notChecked"] == {}
    assert [r["code"] for r in document["policy"]["rules"]] == [
        "policy-team-tag", "policy-owners", "policy-dag-id", "policy-scheduled", "policy-retries",
        "policy-runs", "policy-no-bash", "policy-description",
    ]  # fmt: skip

    # Airflow's own warnings: both of the one DAG, the credentials in its code scrubbed, each bounded
    warnings = [(f["subject"], f["detail"]) for f in document["findings"] if f["code"] == "airflow-warning"]
    kinds = [("payments_reconcile", "non-existent pool")]
    kinds += [("payments_reconcile", "runtime varying value")] if RUNTIME_VARYING_WARNINGS else []
    assert [(subject, detail.split(":")[0]) for subject, detail in warnings] == kinds
    assert (
        warnings[0][1]
        == "non-existent pool: Dag 'payments_reconcile' references non-existent pools: ['etl_pool']"
    )
    stored = (sink / "latest.json").read_text()
    assert PASSWORD_IN_CODE not in result.stdout + result.stderr + stored
    if RUNTIME_VARYING_WARNINGS:  # its message quotes the DAG's code, credentials and all
        runtime = warnings[1][1]
        assert runtime.startswith(
            "runtime varying value: This Dag uses runtime-variable values in Dag construction. It causes "
            "the Dag version to increase as values change on every Dag parse. Line 13, Col 5 Code: DAG("
        )
        assert len(runtime) <= len("runtime varying value: ") + 300
        assert "postgresql://etl:***@db" in stored  # the code's URL is shown, its password is not
    table = cli(policy_server, "audit", "--snapshot", str(sink / "latest.json"), "--rules", str(rules))
    assert "Warning   Conformance  airflow-warning     payments_reconcile" in table.stdout
    assert PASSWORD_IN_CODE not in table.stdout


def test_a_re_audit_gives_the_same_findings_only_with_the_same_rules(policy_server, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    sink = tmp_path / "sink"
    exported = cli(policy_server, "export", "--rules", str(rules), "--sink", str(sink), "--format", "json")
    assert exported.returncode == 0, exported.stderr
    latest = str(sink / "latest.json")
    again = cli(policy_server, "audit", "--snapshot", latest, "--rules", str(rules), "--format", "json")
    assert json.loads(again.stdout)["findings"] == json.loads(exported.stdout)["findings"]
    bare = cli(policy_server, "audit", "--snapshot", latest)
    digest = json.loads(exported.stdout)["policy"]["digest"]
    assert bare.returncode == 0 and "policy-" not in bare.stdout.split("\n\n")[1]
    assert (
        f"policy: not checked (the snapshot was checked against rules {digest}; give --rules" in bare.stdout
    )


def test_fail_on_counts_policy_findings_and_waivers_waive_them(policy_server, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    failing = cli(policy_server, "export", "--rules", str(rules), "--fail-on", "error")
    assert failing.returncode == 1, failing.stderr  # policy-owners is an Error
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        "- {code: policy-owners, subject: Adhoc*, reason: 'bob''s report, retired in March'}\n"
    )
    waived = cli(
        policy_server, "export", "--rules", str(rules), "--waivers", str(waivers), "--fail-on", "error"
    )
    assert waived.returncode == 0, waived.stderr
    assert "owners: bob; not in the list: bob; waived: bob's report, retired in March" in waived.stdout


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "rules: [{code: policy-a, require: {dag_id: '(a'}}]",
            "rules[0].require.dag_id '(a' does not compile",
        ),
        ("rules: [{code: team-a, require: {tag: x}}]", "rules[0].code 'team-a' must start with policy-"),
        ("- &a {code: policy-a, require: {tag: x}}\n", "uses a YAML anchor at line 1"),
    ],
)
def test_a_bad_rules_file_is_refused_before_anything_is_captured(
    tmp_path: Path, text: str, says: str
) -> None:
    """Exit 2, one line naming the file, the rule and the key; the API (unreachable here) is never
    asked, or the exit would be 3."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(text)
    sink = tmp_path / "sink"
    command = [
        sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", "http://127.0.0.1:9",
        "--rules", str(rules), "--sink", str(sink),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: rules file {rules} ") and result.stderr.count("\n") == 1
    assert says in result.stderr and "Traceback" not in result.stderr
    assert not sink.exists()
