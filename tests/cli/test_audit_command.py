"""The ``audit`` and ``generate`` commands: output, exit codes and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import CLI_GROUP, REPO, artifact_paths

from airflow_provider_coremodels.cli.main import main

REAL = artifact_paths("airflow3")
REAL_ARGS = ["--dags", str(REAL["dags"]), "--tasks", str(REAL["tasks"]), "--datasets", str(REAL["datasets"])]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_table_shows_summary_findings_and_rules(capsys) -> None:
    code, out, err = run(capsys, "audit", *REAL_ARGS)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(
        "6 DAGs (2 paused) · 4 assets · 11 tasks · 7 lineage edges (0 external) · fingerprint "
    )
    assert lines[1] == "asset model: 1 edge from a task inlet"  # daily_revenue reads fx_rates.csv
    assert lines[2] == "coverage and drift: not evaluated (no baseline given)"
    # judged at the recording's capture time: only customers.parquet has an active, scheduled producer
    captured_at = json.loads(REAL["dags"].read_bytes())["captured_at"]
    assert lines[3] == (
        f"freshness at {captured_at} (tolerance 2): 1 asset judged, 0 stale, 0 with failing producers"
    )
    assert lines[4] == "findings: 4 (3 Warning, 1 Info)"
    rows = [line.split() for line in lines if line.startswith(("Warning ", "Info "))]
    assert [row[:4] for row in rows] == [
        ["Warning", "Conformance", "asset-unproduced", "s3://vendor/fx_rates.csv"],
        ["Warning", "Conformance", "dag-no-owner", "legacy_cleanup"],
        ["Warning", "Conformance", "paused-producer", "s3://lake/orders.parquet"],
        ["Info", "Conformance", "dag-no-description", "legacy_cleanup"],
    ]
    assert "producers: load_orders; active consumers: daily_revenue" in out
    assert (
        "dag-no-description  DAG has no description — pipelines without stated intent resist governance."
        in out
    )


def test_json_prints_the_snapshot_document(capsys) -> None:
    code, out, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json")
    document = json.loads(out)
    assert code == 0
    assert document["connector"] == "airflow"
    assert [(f["code"], f["subject"]) for f in document["findings"]] == [
        ("asset-unproduced", "s3://vendor/fx_rates.csv"),
        ("dag-no-description", "legacy_cleanup"),
        ("dag-no-owner", "legacy_cleanup"),
        ("paused-producer", "s3://lake/orders.parquet"),
    ]


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [("never", 0), ("error", 0), ("warning", 1), ("info", 1)],
)
def test_fail_on_threshold_sets_the_exit_code(capsys, fail_on: str, code: int) -> None:
    assert run(capsys, "audit", *REAL_ARGS, "--fail-on", fail_on)[0] == code


def test_fail_on_info_counts_info_findings(tmp_path: Path, capsys) -> None:
    dags = tmp_path / "dags.json"
    dags.write_text(json.dumps([{"dag_id": "d", "owners": ["team"]}]))
    assert run(capsys, "audit", "--dags", str(dags), "--fail-on", "warning")[0] == 0
    assert run(capsys, "audit", "--dags", str(dags), "--fail-on", "info")[0] == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(None, "cannot be read: No such file or directory", id="missing-file"),
        pytest.param(
            b"{oops", "is not valid JSON: Expecting property name enclosed in double quotes", id="invalid"
        ),
        pytest.param(b'{"items": []}', "has an unrecognized shape", id="shape"),
        pytest.param(b'{"dags": []}', "has no DAGs", id="zero"),
    ],
)
def test_unusable_dags_artifact_is_one_line_and_exit_2(tmp_path: Path, capsys, content, problem: str) -> None:
    path = tmp_path / "dags.json"
    if content is not None:
        path.write_bytes(content)
    code, out, err = run(capsys, "audit", "--dags", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: dags artifact {path} {problem}")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_unreadable_tasks_and_datasets_are_lossiness(tmp_path: Path, capsys) -> None:
    code, out, err = run(
        capsys,
        "audit",
        "--dags",
        str(REAL["dags"]),
        "--tasks",
        str(tmp_path / "nope.json"),
        "--datasets",
        str(REAL["dags"]),
        "--format",
        "json",
    )
    assert (code, err) == (0, "")
    messages = [(r["artifact"], r["message"]) for r in json.loads(out)["lossiness"]]
    assert messages == [
        (
            "tasks",
            f"tasks artifact ignored: {tmp_path / 'nope.json'} cannot be read: No such file or directory",
        ),
        (
            "datasets",
            'datasets artifact ignored: unrecognized shape: expected {"assets": [...]}, '
            '{"datasets": [...]} or a JSON array, got an object with keys '
            '["dags", "total_entries", "includes_stale", "import_errors", "captured_at", "dag_warnings", '
            '"failed_latest_run", "lossiness"]',
        ),
    ]


def test_table_lists_lossiness(tmp_path: Path, capsys) -> None:
    _, out, _ = run(capsys, "audit", "--dags", str(REAL["dags"]))
    assert "lossiness: 2 records" in out
    assert "  tasks: tasks artifact not provided: DAGs carry no fields" in out


def test_reaudit_of_a_stored_snapshot(tmp_path: Path, capsys) -> None:
    _, first, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json")
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(first)
    code, again, err = run(capsys, "audit", "--snapshot", str(snapshot), "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(again) == json.loads(first)


def test_baseline_reports_drift(tmp_path: Path, capsys) -> None:
    _, first, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json")
    document = json.loads(first)
    legacy = next(d for d in document["datasets"] if d["identity"] == "legacy_cleanup")
    legacy["fields"][0]["nativeType"] = "BashOperator"
    document["datasets"] = [d for d in document["datasets"] if d["identity"] != "sync_crm"]
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(document))

    _, out, _ = run(capsys, "audit", *REAL_ARGS, "--baseline", str(baseline), "--format", "json")
    result = json.loads(out)
    drift = [
        (f["code"], f["subject"], f["detail"]) for f in result["findings"] if f["section"] != "Conformance"
    ]
    assert drift == [
        ("dataset-unmapped", "sync_crm", "new DAG"),
        ("field-type-drift", "legacy_cleanup.cleanup", "was BashOperator; now EmptyOperator"),
    ]
    assert result["baseline"] == {"evaluated": True, "fingerprint": document["fingerprint"], "reason": None}
    _, table, _ = run(capsys, "audit", *REAL_ARGS, "--baseline", str(baseline))
    assert f"coverage and drift: evaluated against baseline {document['fingerprint']}" in table


def test_snapshot_cap_on_the_command_line(tmp_path: Path, capsys) -> None:
    _, out, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json", "--max-snapshot-bytes", "1000")
    document = json.loads(out)
    assert document["snapshotStored"] is False
    assert document["lossiness"][-1]["artifact"] == "snapshot"
    stored = tmp_path / "stored.json"
    stored.write_text(json.dumps({k: v for k, v in document.items() if k not in ("datasets", "lineage")}))
    code, _, err = run(capsys, "audit", "--snapshot", str(stored))
    assert code == 2
    assert err.startswith(f"error: snapshot document {stored} was stored without datasets and lineage")
    code, out, _ = run(capsys, "audit", *REAL_ARGS, "--baseline", str(stored))
    assert code == 0
    assert "coverage and drift: not evaluated (the baseline was stored without datasets" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["audit"],
            "error: audit needs --dags F (with --tasks and --datasets) or --snapshot S",
            id="no-input",
        ),
        pytest.param(
            ["audit", "--dags", "d.json", "--snapshot", "s.json"],
            "error: audit takes either --dags",
            id="both-inputs",
        ),
        pytest.param(
            ["audit", "--dags", "d.json", "--format", "yaml"],
            "error: python -m airflow_provider_coremodels audit: argument --format: invalid choice",
            id="bad-format",
        ),
        pytest.param(
            ["audit", "--snapshot", "missing.json"],
            "error: snapshot document missing.json cannot be read",
            id="missing-snapshot",
        ),
        pytest.param(["audit", "--max-snapshot-bytes", "0"], "argument --max-snapshot-bytes", id="bad-cap"),
        pytest.param([], "the following arguments are required: COMMAND", id="no-command"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert message in err
    assert err.count("\n") == 1


def test_generate_is_refused_by_the_capability_gate(capsys) -> None:
    assert run(capsys, "generate", "--anything", "goes") == (
        2,
        "",
        "Connector 'airflow' does not support generation.\n",
    )


# -- both front doors, for real -----------------------------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}


def front_doors(tmp_path: Path, *argv: str) -> list[subprocess.CompletedProcess[bytes]]:
    """Run the same command through ``python -m`` and ``airflow coremodels``."""
    airflow = str(Path(sys.executable).with_name("airflow"))
    commands = [[sys.executable, "-m", "airflow_provider_coremodels", *argv], [airflow, "coremodels", *argv]]
    return [
        subprocess.run(c, capture_output=True, cwd=REPO, env=_env(tmp_path), timeout=120) for c in commands
    ]


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["audit", *REAL_ARGS], id="table"),
        pytest.param(["audit", *REAL_ARGS, "--format", "json", "--fail-on", "warning"], id="json-fail-on"),
        pytest.param(["audit", "--dags", "no/such/dags.json"], id="missing-dags"),
        pytest.param(["generate"], id="generate"),
    ],
)
@CLI_GROUP
def test_both_front_doors_give_identical_output(tmp_path: Path, argv: list[str]) -> None:
    module, airflow = front_doors(tmp_path, *argv)
    assert module.returncode == airflow.returncode
    assert module.stdout == airflow.stdout
    assert module.stderr.decode().splitlines()[-1:] == airflow.stderr.decode().splitlines()[-1:]


@CLI_GROUP
def test_airflow_cli_lists_the_coremodels_group(tmp_path: Path) -> None:
    airflow = str(Path(sys.executable).with_name("airflow"))
    result = subprocess.run(
        [airflow, "coremodels", "--help"], capture_output=True, env=_env(tmp_path), timeout=120
    )
    assert result.returncode == 0
    assert b"audit" in result.stdout and b"generate" in result.stdout


def test_a_multi_gigabyte_dags_artifact_is_refused_before_it_is_read(tmp_path: Path, capsys) -> None:
    """Limits: a 3 GB artifact (a sparse file: no disk used) fails at once with a clear error."""
    huge = tmp_path / "dags.json"
    with open(huge, "wb") as handle:
        handle.truncate(3 * 1024**3)
    code, out, err = run(capsys, "audit", "--dags", str(huge))
    assert (code, out) == (2, "")
    assert err == (
        f"error: dags artifact {huge} is 3,221,225,472 bytes, over the 1,073,741,824-byte limit "
        "(--max-artifact-bytes)\n"
    )


def test_an_oversized_tasks_artifact_is_lossiness(tmp_path: Path, capsys) -> None:
    code, out, _ = run(capsys, "audit", *REAL_ARGS, "--max-artifact-bytes", "10000", "--format", "json")
    assert code == 0
    [record] = json.loads(out)["lossiness"]
    assert record["artifact"] == "tasks"
    assert record["message"].startswith(f"tasks artifact ignored: {REAL['tasks']} is ")
    assert record["message"].endswith("bytes, over the 10,000-byte limit (--max-artifact-bytes)")


def test_asset_extra_is_left_out_unless_asked_for(tmp_path: Path, capsys) -> None:
    datasets = tmp_path / "datasets.json"
    datasets.write_text(
        json.dumps({"assets": [{"uri": "s3://x/y", "extra": {"password": "hunter2", "tier": 1}}]})
    )
    args = ["audit", "--dags", str(REAL["dags"]), "--datasets", str(datasets), "--format", "json"]
    _, out, _ = run(capsys, *args)
    assert "hunter2" not in out
    _, out, _ = run(capsys, *args, "--include-asset-extra")
    asset = next(d for d in json.loads(out)["datasets"] if d["identity"] == "s3://x/y")
    assert asset["metadata"] == {"airflow.extra": '{"password":"hunter2","tier":1}'}


@pytest.mark.parametrize("option", ["--dags", "--snapshot", "--baseline", "--waivers", "--rules"])
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path, capsys, option: str) -> None:
    """Inputs are read as regular files only: a FIFO with no writer would block the read forever."""
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    args = ["audit", option, str(fifo)]
    if option != "--dags" and option != "--snapshot":
        args += ["--dags", str(REAL["dags"])]
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert err.endswith(f" {fifo} is not a regular file\n")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("option", ["--dags", "--waivers", "--rules"])
def test_a_directory_is_refused_as_what_it_is(tmp_path: Path, capsys, option: str) -> None:
    """A directory where a file belongs (``--snapshot`` and ``--baseline`` take a file sink's) is
    one line naming it, not an unexpected error."""
    args = ["audit", option, str(tmp_path)]
    if option != "--dags":
        args += ["--dags", str(REAL["dags"])]
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith("error: ") and err.endswith(f" {tmp_path} is not a regular file\n"), err
    assert len(err.splitlines()) == 1


def test_a_device_is_refused_as_tasks_artifact_with_a_lossiness_record(capsys) -> None:
    """/dev/zero never ends: it is refused for what it is, not read until the limit."""
    code, out, _ = run(capsys, "audit", *REAL_ARGS[:2], "--tasks", "/dev/zero", "--format", "json")
    assert code == 0
    [record] = [r for r in json.loads(out)["lossiness"] if r["artifact"] == "tasks"]
    assert record["message"] == "tasks artifact ignored: /dev/zero is not a regular file"


def test_example_audits_the_recorded_estate_shipped_with_the_package(capsys) -> None:
    """``--example``: the first command of the README, the same document as the recorded files."""
    example = run(capsys, "audit", "--example", "--format", "json")
    recorded = run(capsys, "audit", *REAL_ARGS, "--format", "json")
    assert example[0] == 0
    assert example == recorded
    assert json.loads(example[1])["state"]["facts"]["dags"] == 6


def test_example_draws_the_lineage_too(capsys) -> None:
    code, out, err = run(capsys, "lineage", "--example", "--around", "daily_revenue")
    assert (code, err) == (0, "")
    assert "load_orders (paused)" in out


@pytest.mark.parametrize("other", [["--dags", "x.json"], ["--snapshot", "s.json"], ["--tasks", "t.json"]])
def test_example_goes_alone(capsys, other: list[str]) -> None:
    code, out, err = run(capsys, "audit", "--example", *other)
    assert (code, out) == (2, "")
    assert err == "error: audit takes --example alone, without --dags, --tasks, --datasets or --snapshot\n"


def test_rules_give_policy_findings_and_fail_the_run(capsys, tmp_path: Path) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps([{"code": "policy-owners", "severity": "Error", "require": {"owner_in": ["finance"]}}])
    )
    code, out, err = run(capsys, "audit", "--example", "--rules", str(rules), "--fail-on", "error")
    assert (code, err) == (1, "")
    assert "findings: 9 (5 Error, 3 Warning, 1 Info)" in out
    row = "Error     Policy       policy-owners       backfill_customers        owners: crm-team; "
    assert row + "not in the list: crm-team" in out
    assert any(
        line.startswith("policy: 1 rule (digest ") and line.endswith(", 5 findings")
        for line in out.splitlines()
    )
    code, out, _ = run(capsys, "lineage", "--example", "--rules", str(rules))
    assert code == 0 and "customer_report (1 finding)" in out  # the DAG's policy finding marks it


def test_a_bad_rules_file_is_one_line_and_exit_2(capsys, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - code: policy-a\n    require: {dag_id: '(a|b'}\n")
    code, out, err = run(capsys, "audit", "--example", "--rules", str(rules))
    assert (code, out) == (2, "")
    assert err == (
        f"error: rules file {rules} rules[0].require.dag_id '(a|b' does not compile: missing ), "
        "unterminated subpattern at position 0\n"
    )
    code, _, err = run(capsys, "audit", "--example", "--rules", str(tmp_path / "missing.yaml"))
    assert code == 2 and err.startswith(f"error: rules file {tmp_path / 'missing.yaml'} cannot be read")
    rules.write_text(
        "rules:\n  - {code: policy-a, require: {dag_id: '(a|b'}}\n"
        "  - {code: policy-b, severity: High, require: {tag: x}}\n"
    )
    code, out, err = run(capsys, "audit", "--example", "--rules", str(rules))
    assert (code, out) == (2, "")  # every error at once, still one line
    assert err == (
        f"error: rules file {rules} has 2 errors: rules[0].require.dag_id '(a|b' does not compile: "
        "missing ), unterminated subpattern at position 0; rules[1].severity 'High' is not a severity; "
        "expected Info, Warning or Error\n"
    )
