"""``export`` given the deployment's DAG folder (contract 10.3): a real Airflow API server serves
``tests/fixtures/sql_dags``; the export captures it over REST and adds what the folder's SQL and
transfer operators read and write, parsed in the sandbox. Without the folder the snapshot infers
nothing and says so in one record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openlineage_sql", reason="the [lineage] extra is not installed")
pytest.importorskip("airflow.providers.amazon", reason="the fixture's transfers need the amazon provider")

from support.helpers import REPO

from airflow_provider_coremodels.capture.lineage_resolve import NEEDS_FOLDER

pytestmark = pytest.mark.airflow_server
FOLDER = Path(__file__).parents[1] / "fixtures" / "sql_dags"


@pytest.fixture(scope="module")
def sql_server():
    from support.airflow_server import AirflowApiServer

    with AirflowApiServer(FOLDER) as server:
        yield server


def export(server, *argv: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env["AF_PASSWORD"] = server.password
    command = [
        sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", server.base_url,
        "--username", server.username, "--password-env", "AF_PASSWORD", "--format", "json", *argv,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_dag_folder_adds_the_inferred_lineage_to_the_capture(sql_server, tmp_path: Path) -> None:
    document = export(sql_server, "--sink", str(tmp_path / "out"), "--dag-folder", str(FOLDER))
    inferred = {(e["dependsOn"], e["dependent"], e["source"]) for e in document["lineage"] if e.get("via")}
    daily = "postgres://<postgres_dw>/analytics/orders_daily"
    assert ("load_orders", daily, "load_orders.build_daily") in inferred
    assert (daily, "report", "report.summarise") in inferred
    assert len(inferred) == 8 and all(e.get("via") == "inferred" for e in document["lineage"])
    said = [r["message"] for r in document["lossiness"]]
    assert NEEDS_FOLDER not in said
    assert "task report.dynamic: its statement cannot be rendered at parse time: 'var' is undefined" in said
    stored = json.loads((tmp_path / "out" / "latest.json").read_text())
    assert stored["fingerprint"] == document["fingerprint"]


def test_a_capture_of_the_rest_api_alone_infers_nothing_and_says_so(sql_server, tmp_path: Path) -> None:
    document = export(sql_server, "--sink", str(tmp_path / "out"))
    assert document["lineage"] == []
    assert [r["message"] for r in document["lossiness"]].count(NEEDS_FOLDER) == 1
