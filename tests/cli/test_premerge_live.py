"""``audit --dag-folder``: a pull request's DAG files judged, before the merge, in the estate they land in.

A real Airflow 3.3 API server serves two bundles (``orders`` and ``finance``, each a folder of its
own, as a platform team runs one repository per bundle) and ``export`` stores its snapshot: the
baseline, as the export DAG would store it. Then, with no server, each pull request to the
``orders`` bundle (a copy of its folder, changed) is checked with ``audit --dag-folder``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from support.airflow_server import AirflowApiServer
from support.helpers import REPO

pytestmark = pytest.mark.airflow_server

LOCAL_BUNDLE = "airflow.dag_processing.bundles.local.LocalDagBundle"

ORDERS = {
    "load_orders.py": '''
        """Loads the orders."""
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG, Asset

        with DAG("load_orders", schedule="@daily", start_date=pendulum.datetime(2026, 1, 1),
                 description="Loads the orders", default_args={"owner": "ingest"}, catchup=False):
            EmptyOperator(task_id="publish", outlets=[Asset("s3://lake/orders")])
    ''',
    "orders_cleanup.py": """
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG

        with DAG("orders_cleanup", schedule="@weekly", start_date=pendulum.datetime(2026, 1, 1),
                 description="Vacuums the orders", default_args={"owner": "ingest"}, catchup=False,
                 tags=["team:ingest"]):
            EmptyOperator(task_id="vacuum")
    """,
}
FINANCE = {
    "revenue.py": """
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG, Asset

        with DAG("daily_revenue", schedule=[Asset("s3://lake/orders")],
                 start_date=pendulum.datetime(2026, 1, 1), description="Sums the revenue",
                 default_args={"owner": "finance"}, catchup=False):
            EmptyOperator(task_id="compute", outlets=[Asset("s3://lake/revenue")])
    """,
    "report.py": """
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG, Asset

        with DAG("board_report", schedule=[Asset("s3://lake/revenue")],
                 start_date=pendulum.datetime(2026, 1, 1), description="Tells the board",
                 default_args={"owner": "board"}, catchup=False):
            EmptyOperator(task_id="send")
    """,
}


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two bundles served by a real Airflow 3.3, and the snapshot the export stored of them."""
    root = tmp_path_factory.mktemp("estate")
    orders, finance = write(root / "orders", ORDERS), write(root / "finance", FINANCE)
    bundles = [
        {"name": "orders", "classpath": LOCAL_BUNDLE, "kwargs": {"path": str(orders), "refresh_interval": 0}},
        {
            "name": "finance",
            "classpath": LOCAL_BUNDLE,
            "kwargs": {"path": str(finance), "refresh_interval": 0},
        },
    ]
    env = {"AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles)}
    sink = root / "sink"
    (root / "empty").mkdir()  # [core] dags_folder: the two bundles hold every DAG
    with AirflowApiServer(root / "empty", extra_env=env) as server:
        exported = subprocess.run(
            [sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", server.base_url,
             "--username", server.username, "--password-env", "AF_PASSWORD", "--sink", str(sink)],
            capture_output=True, text=True, env={**os.environ, "AF_PASSWORD": server.password},
            cwd=REPO, timeout=180,
        )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    return {"orders": orders, "finance": finance, "sink": sink}


def check(folder: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "airflow_provider_coremodels",
        "audit",
        "--dag-folder",
        str(folder),
        *argv,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, timeout=300, env={**os.environ, **(env or {})}
    )


def judged(
    estate: dict[str, Path], folder: Path, *argv: str, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    result = check(
        folder, "--bundle", "orders", "--baseline", str(estate["sink"]), "--format", "json", *argv, env=env
    )
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout), result


def pull_request(estate: dict[str, Path], tmp_path: Path) -> Path:
    """The orders bundle's folder as a pull request's checkout has it, ready to change."""
    return Path(shutil.copytree(estate["orders"], tmp_path / "pr"))


def opened(document: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f["code"], f["subject"]) for f in document["change"]["findingsOpened"])


def affected(document: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(a["dag"], a["owners"]) for a in document["change"]["affected"]]


def breaks(document: dict[str, Any]) -> list[tuple[str, str, list[str], str]]:
    """The change's breaks: (finding code, dependent DAG, its owners, what it loses)."""
    return [
        (b["finding"]["code"], b["dependent"], b["owners"], b["through"])
        for b in document["change"]["breaks"]
    ]


def gate(estate: dict[str, Path], folder: Path, *argv: str) -> int:
    """The documented gate's exit code for the folder (``--fail-on-break --fail-on-new error``)."""
    result = check(folder, "--bundle", "orders", "--baseline", str(estate["sink"]), *argv)
    assert "Traceback" not in result.stderr
    return result.returncode


def test_an_unchanged_folder_reports_no_change_and_the_baseline_fingerprint(estate, tmp_path: Path) -> None:
    baseline = json.loads((estate["sink"] / "latest.json").read_text())
    document, _ = judged(estate, pull_request(estate, tmp_path))
    assert document["fingerprint"] == baseline["fingerprint"]
    assert document["lineage"] == baseline["lineage"]
    assert sorted((f["code"], f["subject"]) for f in document["findings"]) == sorted(
        (f["code"], f["subject"]) for f in baseline["findings"]
    )
    change = document["change"]
    assert change["findingsOpened"] == change["findingsClosed"] == []
    assert change["dagsAdded"] == change["dagsRemoved"] == change["dagsChanged"] == []
    assert change["affected"] == [] and change["baseline"] == baseline["fingerprint"]
    table = check(
        pull_request(estate, tmp_path / "again"), "--bundle", "orders", "--baseline", str(estate["sink"])
    )
    assert table.stdout.splitlines()[0] == (
        f"This change (bundle orders, against baseline {baseline['fingerprint']}): no change: "
        "the folder parses to the estate the baseline holds"
    )


def test_a_file_that_breaks_is_reported_with_the_dags_it_starves(estate, tmp_path: Path) -> None:
    folder = pull_request(estate, tmp_path)
    (folder / "load_orders.py").write_text((folder / "load_orders.py").read_text() + "\nundefined_name\n")
    document, result = judged(estate, folder, "--fail-on-new", "error")
    assert result.returncode == 1  # the break is an Error the change opens
    assert ("dag-import-error", "orders/load_orders.py") in opened(document)
    error = next(f for f in document["change"]["findingsOpened"] if f["code"] == "dag-import-error")
    assert "NameError: name 'undefined_name' is not defined" in error["detail"]
    assert "load_orders" in {d["identity"] for d in document["datasets"]}  # kept as last parsed
    assert affected(document) == [("board_report", ["board"]), ("daily_revenue", ["finance"])]
    assert {"daily_revenue", "board_report"} <= {d["identity"] for d in document["datasets"]}
    assert breaks(document) == [("dag-import-error", "daily_revenue", ["finance"], "s3://lake/orders")]
    assert gate(estate, folder, "--fail-on-break") == 1


def test_a_dropped_outlet_starves_the_other_bundle_s_consumers(estate, tmp_path: Path) -> None:
    folder = pull_request(estate, tmp_path)
    text = (folder / "load_orders.py").read_text()
    (folder / "load_orders.py").write_text(text.replace(', outlets=[Asset("s3://lake/orders")]', ""))
    document, _ = judged(estate, folder)
    assert ("asset-unproduced", "s3://lake/orders") in opened(document)
    assert [(e["dependent"], e["dependsOn"]) for e in document["change"]["lineageRemoved"]] == [
        ("s3://lake/orders", "load_orders")
    ]
    assert affected(document) == [("board_report", ["board"]), ("daily_revenue", ["finance"])]
    assert document["change"]["dagsChanged"] == ["load_orders"]  # an outlet removed changes its DAG
    # board_report's own input is still made: only daily_revenue loses what it depends on
    assert breaks(document) == [("asset-unproduced", "daily_revenue", ["finance"], "s3://lake/orders")]
    assert gate(estate, folder, "--fail-on-new", "error") == 0  # Warnings only: issue 43's gap
    assert gate(estate, folder, "--fail-on-break", "--fail-on-new", "error") == 1
    markdown = check(folder, "--bundle", "orders", "--baseline", str(estate["sink"]), "--format", "markdown")
    assert markdown.stdout.startswith("## This change\n")
    assert "daily\\_revenue" in markdown.stdout or "`daily_revenue`" in markdown.stdout


def test_a_renamed_asset_and_a_deleted_dag(estate, tmp_path: Path) -> None:
    folder = pull_request(estate, tmp_path)
    text = (folder / "load_orders.py").read_text()
    (folder / "load_orders.py").write_text(text.replace("s3://lake/orders", "s3://lake/orders_v2"))
    (folder / "orders_cleanup.py").unlink()
    document, _ = judged(estate, folder)
    found = opened(document)
    assert ("asset-unproduced", "s3://lake/orders") in found
    assert ("dataset-removed", "orders_cleanup") in found
    assert document["change"]["dagsRemoved"] == ["orders_cleanup"]
    assert ("daily_revenue", ["finance"]) in affected(document)
    # the other bundle is never reported removed
    removed = {f["subject"] for f in document["change"]["findingsOpened"] if f["code"] == "dataset-removed"}
    assert removed == {"orders_cleanup"}
    # the outlet renamed in the producer only starves daily_revenue; orders_cleanup fed nobody
    assert breaks(document) == [("asset-unproduced", "daily_revenue", ["finance"], "s3://lake/orders")]
    assert gate(estate, folder, "--fail-on-break", "--fail-on-new", "error") == 1


def test_a_deleted_producer_breaks_the_other_team_and_fails_the_gate(estate, tmp_path: Path) -> None:
    folder = pull_request(estate, tmp_path)
    (folder / "load_orders.py").unlink()
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules: []\nteams:\n  ingest: {owners: [ingest]}\n  finance: {owners: [finance]}\n")
    document, result = judged(estate, folder, "--rules", str(rules), "--fail-on-break")
    assert result.returncode == 1
    assert document["change"]["breaks"] == [
        {
            "finding": {"code": "asset-unproduced", "subject": "s3://lake/orders"},
            "dependent": "daily_revenue",
            "owners": ["finance"],
            "team": "finance",
            "through": "s3://lake/orders",
        }
    ]
    assert gate(estate, folder, "--fail-on-new", "error") == 0


def test_a_renamed_task_changes_its_dag_and_passes_the_gate(estate, tmp_path: Path) -> None:
    """Issue 43 item 1: a task rename opens field-removed (a Warning), breaks nothing and affects
    nobody downstream."""
    folder = pull_request(estate, tmp_path)
    text = (folder / "load_orders.py").read_text()
    (folder / "load_orders.py").write_text(text.replace('task_id="publish"', 'task_id="publish_orders"'))
    document, result = judged(estate, folder, "--fail-on-break", "--fail-on-new", "error")
    assert result.returncode == 0
    assert ("field-removed", "load_orders.publish") in opened(document)
    change = document["change"]
    assert (change["dagsChanged"], change["breaks"], change["affected"]) == (["load_orders"], [], [])


def test_a_new_dag_that_breaks_the_team_rules(estate, tmp_path: Path) -> None:
    folder = pull_request(estate, tmp_path)
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - code: policy-team-tag\n    require: {tag: "team:*"}\n')
    (folder / "adhoc.py").write_text(
        "import pendulum\nfrom airflow.sdk import DAG\n"
        "with DAG('adhoc_export', schedule=None, start_date=pendulum.datetime(2026, 1, 1)):\n    pass\n"
    )
    paused = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True"}
    document, result = judged(estate, folder, "--rules", str(rules), "--fail-on-new", "warning", env=paused)
    assert result.returncode == 1
    assert document["change"]["dagsAdded"] == ["adhoc_export"]
    assert document["change"]["breaks"] == []  # a new DAG of nobody's cuts nothing
    gated = ("--fail-on-break", "--fail-on-new", "error", "--rules", str(rules))
    assert gate(estate, folder, *gated) == 0
    assert ("policy-team-tag", "adhoc_export") in opened(document)
    # the estate's existing rule findings were there before the change: not opened by it
    assert ("policy-team-tag", "daily_revenue") not in opened(document)
    new = next(d for d in document["datasets"] if d["identity"] == "adhoc_export")
    assert new["metadata"]["airflow.paused"] == "true"  # as [core] dags_are_paused_at_creation says
    kept = next(d for d in document["datasets"] if d["identity"] == "load_orders")
    assert kept["metadata"]["airflow.paused"] == "false"  # as the deployment has it
    sarif = check(folder, "--bundle", "orders", "--baseline", str(estate["sink"]), "--rules", str(rules),
                  "--format", "sarif", "--source-root", "orders=dags")  # fmt: skip
    results = json.loads(sarif.stdout)["runs"][0]["results"]
    new_rule = next(r for r in results if r["properties"]["subject"] == "adhoc_export")
    assert new_rule["properties"]["change"] == "opened"
    assert new_rule["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "dags/adhoc.py"},
        "region": {"startLine": 3},  # the line of its DAG(...) call: code scanning marks the diff there
    }


def test_a_file_that_hangs_or_exits_is_its_own_import_error(estate, tmp_path: Path) -> None:
    folder = pull_request(estate, tmp_path)
    (folder / "hangs.py").write_text("# airflow DAG\nimport time\nwhile True:\n    time.sleep(1)\n")
    (folder / "exits.py").write_text("# airflow DAG\nimport os\nos._exit(3)\n")
    started = time.monotonic()
    document, _ = judged(estate, folder, "--parse-timeout", "5")
    assert time.monotonic() - started < 120  # not the hang's forever
    broken = {f["file"]: f["error"] for f in document["importErrors"]}
    assert {"orders/hangs.py", "orders/exits.py"} <= broken.keys()
    assert {d["identity"] for d in document["datasets"] if d["materialization"] == "dag"} >= {
        "load_orders",
        "orders_cleanup",
        "daily_revenue",
        "board_report",
    }


def test_the_dag_code_sees_only_the_variables_it_is_given(estate, tmp_path: Path) -> None:
    """An allow list: a variable reaches the parse only when --parse-env names it, and never when
    it is also withheld (a connection's, the CI job's token, or --withhold-env's)."""
    folder = pull_request(estate, tmp_path)
    (folder / "leaks.py").write_text(
        "# airflow DAG\nimport os\n"
        "raise RuntimeError('seen: ' + ','.join(sorted(k for k in os.environ if k in "
        "('AIRFLOW_CONN_AIRFLOW_API_DEFAULT', 'GITHUB_TOKEN', 'MY_DEPLOY_KEY', 'HARMLESS'))))\n"
    )
    env = {
        "AIRFLOW_CONN_AIRFLOW_API_DEFAULT": "http://user:pw@host",
        "GITHUB_TOKEN": "ghp_notreal",
        "MY_DEPLOY_KEY": "k",
        "HARMLESS": "1",
    }
    result = check(
        folder,
        "--bundle",
        "orders",
        *("--parse-env", "HARMLESS", "--parse-env", "MY_DEPLOY_KEY", "--parse-env", "GITHUB_TOKEN"),
        *("--withhold-env", "MY_DEPLOY_KEY", "--format", "json"),
        env=env,
    )
    document = json.loads(result.stdout)
    error = next(f["error"] for f in document["importErrors"] if f["file"] == "orders/leaks.py")
    assert error == "RuntimeError: seen: HARMLESS"


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = check(tmp_path / "nowhere")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "does not exist" in missing.stderr
    folder = write(tmp_path / "dags", {"a.py": "# airflow DAG\n"})
    both = check(folder, "--dags", "x.json")
    assert both.returncode == 2 and "--dag-folder alone" in both.stderr
    stray = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--example", "--fail-on-new", "error"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert stray.returncode == 2 and "--fail-on-new goes with --dag-folder" in stray.stderr
