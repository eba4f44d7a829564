"""The federation DAG against two real Airflow API servers: lineage across deployments.

Deployment "etl" produces s3://lake/orders with a paused DAG; deployment "bi" consumes it with an
active one (tests/fixtures/federation). Both have a DAG called ``report``. The example DAG
``coremodels_federation`` runs once with ``dag.test()``: a mapped export per deployment, then
the merge. Then "bi" goes down, and the next run keeps its last snapshot, named stale.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.airflow_server import AirflowApiServer
from support.dag_runs import api_connection, dag_home, run_dag
from support.helpers import REPO, WATCHERS_NOTE

pytestmark = pytest.mark.airflow_server

FIXTURES = REPO / "tests" / "fixtures" / "federation"
ORDERS = "s3://lake/orders"


@pytest.fixture(scope="module")
def etl():
    with AirflowApiServer(FIXTURES / "etl") as server:
        yield server


@pytest.fixture(scope="module")
def bi():
    server = AirflowApiServer(FIXTURES / "bi")
    server.start()
    yield server
    server.stop()  # a test may have stopped it already: stop() is safe twice


@pytest.fixture(scope="module")
def runner(tmp_path_factory, etl, bi) -> tuple[dict[str, str], Path]:
    """An Airflow home whose DAG folder holds only the federation DAG; the root and sinks it uses."""
    env = dag_home(tmp_path_factory, "coremodels_federation.py")
    home = Path(env["AIRFLOW_HOME"])
    # The example DAG waits 30 s before an export's retry; the test's copy waits 1 s, else the
    # down deployment's test would spend half a minute asleep. Nothing else of the DAG changes.
    copy = Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / "coremodels_federation.py"
    text, waits = copy.read_text(), '"retry_delay": timedelta(seconds=30)'
    assert text.count(waits) == 1
    copy.write_text(text.replace(waits, '"retry_delay": timedelta(seconds=1)'))
    env.update(
        AIRFLOW_CONN_ETL=api_connection(etl),
        AIRFLOW_CONN_BI=api_connection(bi),
        AIRFLOW_VAR_COREMODELS_DEPLOYMENTS="etl,bi",
        AIRFLOW_VAR_COREMODELS_FEDERATION_ROOT=str(home / "root"),
        AIRFLOW_VAR_COREMODELS_SINKS=str(home / "merged"),
    )
    return env, home


def run_federation(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_dag(env, "coremodels_federation.py")


def test_the_merged_estate_joins_the_deployments_on_their_asset(runner) -> None:
    env, home = runner
    result = run_federation(env)
    log = result.stdout + result.stderr
    assert "STATE success success" in result.stdout, log[-4000:]
    merged = json.loads((home / "merged" / "latest.json").read_bytes())
    assert merged["state"]["deployments"] == ["bi", "etl"]
    assert sorted(d["identity"] for d in merged["datasets"] if d["materialization"] == "dag") == [
        "bi/daily_revenue", "bi/report", "etl/load_orders", "etl/report",
    ]  # fmt: skip
    edges = [(e["dependent"], e["dependsOn"], e.get("crossDeployment")) for e in merged["lineage"]]
    assert edges == [("bi/daily_revenue", ORDERS, True), (ORDERS, "etl/load_orders", True)]
    codes = [(f["code"], f["subject"], f["detail"]) for f in merged["findings"]]
    assert (
        "paused-producer",
        ORDERS,
        f"producers: etl/load_orders; active consumers: bi/daily_revenue{WATCHERS_NOTE}",
    ) in codes
    assert not [c for c in codes if c[0] == "asset-unproduced"]
    # each deployment alone: bi would call the orders unproduced
    bi_alone = json.loads((home / "root" / "bi" / "latest.json").read_bytes())
    assert [f["code"] for f in bi_alone["findings"]] == ["asset-unproduced"]
    assert "merge: 2 deployments, fingerprint" in log


def test_a_deployment_that_is_down_keeps_its_last_snapshot_named_stale(runner, bi) -> None:
    env, home = runner
    if not (home / "root" / "bi" / "latest.json").exists():  # run alone: a first run stores it
        assert "STATE success success" in run_federation(env).stdout
    bi.stop()
    result = run_federation(env)
    log = result.stdout + result.stderr
    assert "STATE" in result.stdout, log[-4000:]
    merged = json.loads((home / "merged" / "latest.json").read_bytes())
    assert "bi/daily_revenue" in {d["identity"] for d in merged["datasets"]}  # never dropped
    [stale] = [r for r in merged["lossiness"] if r["artifact"] == "snapshot"]
    assert stale["subject"] == "bi"
    assert stale["message"].startswith(
        "deployment bi: its export did not succeed in this run; its last good snapshot (from "
    )
    assert "merge: 2 deployments (1 stale: bi), fingerprint" in log
