"""A pull request that drops a table write another team's DAG reads is a break (contracts 10.2 and
10.3), though neither DAG declares an asset: the write and the read are inferred from their SQL.
A real git repository, the check run as CI runs it, scoped and ``--full``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openlineage_sql", reason="the [lineage] extra is not installed")

WRITER = """\
from datetime import datetime
from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.sdk import DAG

with DAG(dag_id="build_orders", schedule="@daily", start_date=datetime(2026, 1, 1),
         description="Builds the daily orders", default_args={"owner": "data-eng"}):
    SQLExecuteQueryOperator(task_id="build", conn_id="postgres_dw",
                            sql="INSERT INTO analytics.orders_daily SELECT * FROM raw.orders")
"""
READER = """\
from datetime import datetime
from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.sdk import DAG

with DAG(dag_id="revenue", schedule="@daily", start_date=datetime(2026, 1, 1),
         description="Revenue", default_args={"owner": "finance"}):
    SQLExecuteQueryOperator(task_id="sum", conn_id="postgres_dw",
                            sql="INSERT INTO finance.revenue SELECT sum(total) FROM analytics.orders_daily")
"""
RULES = "teams:\n  data-eng: {owners: [data-eng]}\n  finance: {owners: [finance]}\n"
DAILY = "postgres://<postgres_dw>/analytics/orders_daily"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def audit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] = "False"
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", "dags", *args],
        cwd=repo, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return done


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "dags" / "orders").mkdir(parents=True)
    (repo / "dags" / "finance").mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "ci")
    (repo / "rules.yaml").write_text(RULES)
    (repo / ".gitignore").write_text(".coremodels/\n")
    (repo / "dags" / "orders" / "writer.py").write_text(WRITER)
    (repo / "dags" / "finance" / "reader.py").write_text(READER)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the estate")
    (repo / ".coremodels").mkdir()
    (repo / ".coremodels" / "baseline.json").write_text(audit(repo, "--format", "json").stdout)
    git(repo, "checkout", "-q", "-b", "change")
    return repo


def judged(repo: Path) -> tuple[dict, dict]:
    base = ("--baseline", ".coremodels/baseline.json", "--rules", "rules.yaml", "--base", "main")
    scoped = json.loads(audit(repo, *base, "--format", "json").stdout)
    full = json.loads(audit(repo, *base, "--full", "--format", "json").stdout)
    return scoped, full


def test_dropping_a_table_write_another_team_reads_is_a_break(repo: Path) -> None:
    baseline = json.loads((repo / ".coremodels" / "baseline.json").read_text())
    assert {(e["dependsOn"], e["dependent"], e.get("source")) for e in baseline["lineage"]} >= {
        ("build_orders", DAILY, "build_orders.build"),
        (DAILY, "revenue", "revenue.sum"),
    }
    writer = repo / "dags" / "orders" / "writer.py"
    writer.write_text(
        WRITER.replace("INSERT INTO analytics.orders_daily SELECT * FROM raw.orders", "SELECT 1")
    )
    git(repo, "commit", "-qam", "stop building the daily table")
    scoped, full = judged(repo)
    for doc in (scoped, full):
        change = doc["change"]
        assert [
            (b["dependent"], b["through"], b["team"], b["finding"]["code"]) for b in change["breaks"]
        ] == [("revenue", DAILY, "finance", "asset-unproduced")]
        removed = [
            (e["dependsOn"], e["dependent"], e.get("via"), e.get("source")) for e in change["lineageRemoved"]
        ]
        assert ("build_orders", DAILY, "inferred", "build_orders.build") in removed
        (opened,) = [f for f in change["findingsOpened"] if f["code"] == "asset-unproduced"]
        assert opened["detail"] == "consumers: revenue; inferred from revenue.sum"
        # SARIF points at the task whose SQL reads the table, in a file the scoped parse did not run
        (located,) = [x for x in change["locations"] if x["finding"]["code"] == "asset-unproduced"]
        assert [(at["file"], at.get("line"), at.get("kind")) for at in located["at"]] == [
            ("finance/reader.py", 7, "task")
        ]
    assert scoped["change"]["base"]["filesParsed"] == 1  # the writer alone: the reader is the baseline's
    gate = audit(repo, "--baseline", ".coremodels/baseline.json", "--base", "main", "--fail-on-break")
    assert gate.returncode == 1


def test_an_edit_that_keeps_the_write_breaks_nothing(repo: Path) -> None:
    writer = repo / "dags" / "orders" / "writer.py"
    writer.write_text(WRITER.replace("SELECT * FROM raw.orders", "SELECT * FROM raw.orders WHERE total > 0"))
    git(repo, "commit", "-qam", "filter the daily table")
    scoped, full = judged(repo)
    assert scoped["change"]["breaks"] == full["change"]["breaks"] == []
    assert scoped["change"]["lineageRemoved"] == []
