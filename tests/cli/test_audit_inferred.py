"""``audit --dag-folder`` infers the tables SQL and transfer operators read and write (contract 10.3):
a real parse, in the sandbox where the machine gives one, of ``tests/fixtures/sql_dags`` (two teams'
DAGs, a template file under ``template_searchpath``, a statement that cannot be rendered, a DAG with
no SQL). Connections are resolved outside the sandbox from ``AIRFLOW_CONN_*`` and from the metadata
database; neither a login nor a password reaches the document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openlineage_sql", reason="the [lineage] extra is not installed")
pytest.importorskip("airflow.providers.amazon", reason="the fixture's transfers need the amazon provider")

FOLDER = Path(__file__).parents[1] / "fixtures" / "sql_dags"
LOGIN, PASSWORD = "loader", "pw-S3cr3t-n0t-for-the-document"


def audit(*args: str, env: dict[str, str] | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", str(FOLDER), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode in (0, 1), done.stderr
    return {"doc": json.loads(done.stdout), "stderr": done.stderr, "stdout": done.stdout}


def edges(doc: dict) -> set[tuple[str, str, str | None, str | None]]:
    return {(e["dependsOn"], e["dependent"], e.get("via"), e.get("source")) for e in doc["lineage"]}


@pytest.fixture(scope="module")
def unresolved() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    return audit("--format", "json", env=env)


def test_tables_and_objects_become_inferred_edges_naming_their_task(unresolved: dict) -> None:
    doc = unresolved["doc"]
    daily = "postgres://<postgres_dw>/analytics/orders_daily"
    staging = "redshift://<redshift_dw>/staging/orders"
    assert edges(doc) == {
        ("load_orders", daily, "inferred", "load_orders.build_daily"),
        ("postgres://<postgres_dw>/raw/orders", "load_orders", "inferred", "load_orders.build_daily"),
        ("s3://lake/raw/orders/", "load_orders", "inferred", "load_orders.copy_raw"),
        ("load_orders", staging, "inferred", "load_orders.copy_raw"),
        # team B reads what team A writes, through the one asset of that URI
        (daily, "report", "inferred", "report.summarise"),
        ("report", "postgres://<postgres_dw>/reporting/order_summary", "inferred", "report.summarise"),
        (staging, "report", "inferred", "report.unload"),
        ("report", "s3://exports/orders/", "inferred", "report.unload"),
    }
    assets = {d["identity"]: d for d in doc["datasets"] if d["materialization"] == "asset"}
    assert assets[daily]["name"] == "orders_daily"
    assert assets[daily]["metadata"] == {"coremodels.inferred": "true"}


def test_what_is_not_known_is_said_once_per_task(unresolved: dict) -> None:
    said = {(r.get("subject"), r["message"]) for r in unresolved["doc"]["lossiness"] if r.get("subject")}
    assert (
        "report.dynamic",
        "task report.dynamic: its statement cannot be rendered at parse time: 'var' is undefined",
    ) in said
    unknown = sorted(subject for subject, message in said if "is not known to this run" in message)
    assert unknown == ["load_orders.build_daily", "load_orders.copy_raw", "report.summarise", "report.unload"]
    assert not any(s and s.startswith("plain.") for s, _ in said)  # a Python callable: nothing inferred


def test_findings_about_inferred_edges_say_so(unresolved: dict) -> None:
    found = {f["subject"]: f for f in unresolved["doc"]["findings"] if f["code"] == "asset-unproduced"}
    assert found["postgres://<postgres_dw>/raw/orders"]["detail"] == (
        "consumers: load_orders; inferred from load_orders.build_daily"
    )


def test_a_known_connection_gives_host_port_and_database_and_no_secret() -> None:
    env = {
        "AIRFLOW_CONN_POSTGRES_DW": f"postgres://{LOGIN}:{PASSWORD}@db.internal:5433/warehouse?sslmode=require",
        "AIRFLOW_CONN_REDSHIFT_DW": json.dumps(
            {
                "conn_type": "redshift",
                "host": "dw.example.com",
                "login": LOGIN,
                "password": PASSWORD,
                "schema": "dev",
                "extra": {"iam": False, "secret_key": PASSWORD},
            }
        ),
    }
    ran = audit("--format", "json", env=env)
    doc = ran["doc"]
    found = edges(doc)
    assert (
        "load_orders",
        "postgres://db.internal:5433/warehouse/analytics/orders_daily",
        "inferred",
        "load_orders.build_daily",
    ) in found
    assert (
        "redshift://dw.example.com:5439/dev/staging/orders",
        "report",
        "inferred",
        "report.unload",
    ) in found
    assert not [r for r in doc["lossiness"] if "is not known to this run" in r["message"]]
    for text in (PASSWORD, f"{LOGIN}:", f"{LOGIN}@"):
        assert text not in ran["stdout"] and text not in ran["stderr"]


def test_a_connection_stored_in_the_metadata_database_is_resolved(tmp_path: Path) -> None:
    from support.airflow_server import migrated_home

    env = migrated_home(tmp_path / "home", FOLDER)
    env = {k: v for k, v in env.items() if not k.startswith("AIRFLOW_CONN_")}
    airflow = str(Path(sys.executable).with_name("airflow"))
    added = subprocess.run(
        [airflow, "connections", "add", "postgres_dw", "--conn-type", "postgres", "--conn-host", "pg.stored",
         "--conn-port", "6543", "--conn-schema", "shop", "--conn-login", LOGIN, "--conn-password", PASSWORD],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", str(FOLDER),
         "--format", "json"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    daily = "postgres://pg.stored:6543/shop/analytics/orders_daily"
    assert (daily, "report", "inferred", "report.summarise") in edges(doc)
    assert PASSWORD not in done.stdout + done.stderr


def test_without_inference_the_fingerprint_of_a_folder_without_sql_is_unchanged(tmp_path: Path) -> None:
    """An estate with no SQL gives the same document with inference as without it."""
    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder

    plain = tmp_path / "dags"
    plain.mkdir()
    (plain / "plain.py").write_text((FOLDER / "plain.py").read_text())
    with_it = parse_dag_folder(plain, infer=True)
    without = parse_dag_folder(plain, infer=False)
    assert "inferred" not in with_it.datasets
    assert with_it.datasets == without.datasets
    assert [r.message for r in with_it.lossiness] == [r.message for r in without.lossiness]


@pytest.mark.parametrize("folder", ["example_dags/estate", "tests/fixtures/link_dags"])
def test_existing_folders_without_sql_keep_their_fingerprint(folder: str) -> None:
    """The project's own DAG folders, which use no SQL or transfer operator: the same estate, and the
    same fingerprint, with inference as without it."""
    from support.helpers import REPO

    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder
    from airflow_provider_coremodels.core import audit, build_estate
    from airflow_provider_coremodels.core.snapshots.document import build_document

    def fingerprint(infer: bool) -> str:
        parsed = parse_dag_folder(REPO / folder, infer=infer)
        estate = build_estate(parsed.dags, parsed.tasks, parsed.datasets)
        return str(build_document(estate, audit(estate))["fingerprint"])

    assert fingerprint(True) == fingerprint(False)


HOSTILE = """\
from datetime import datetime

from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
from airflow.sdk import DAG


class Raises(SQLExecuteQueryOperator):
    @property
    def postgres_conn_id(self):  # only the inference asks (the operator has no conn_id here)
        raise RuntimeError("read me and fail")


with DAG(dag_id="hostile", schedule=None, start_date=datetime(2026, 1, 1), description="d",
         template_searchpath=["/etc", ".."]):
    Raises(task_id="raises", sql="SELECT 1")
    SQLExecuteQueryOperator(task_id="huge", conn_id="pg", sql="SELECT 1 FROM t " + "x" * (2 << 20))
    SQLExecuteQueryOperator(task_id="escapes", conn_id="pg", sql="../outside.sql")
    SQLExecuteQueryOperator(task_id="fine", conn_id="pg", sql="INSERT INTO ok SELECT * FROM src")
"""


def test_hostile_operators_are_records_of_their_task_and_the_rest_is_read(tmp_path: Path) -> None:
    """An operator whose connection id raises, a statement over the bound, and a template file outside the
    DAG folder (a search path of ``/etc`` and ``..``) are each said of their task; nothing outside the
    folder is read, and the other task of the DAG is inferred as ever."""
    from airflow_provider_coremodels.capture.dag_folder import parse_dag_folder

    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "hostile.py").write_text(HOSTILE)
    (tmp_path / "outside.sql").write_text("INSERT INTO stolen SELECT * FROM secrets")
    parsed = parse_dag_folder(folder, connections=lambda conn: None)
    assert parsed.dags["import_errors"] == []
    rows = {(r["task_id"], r["role"], r["uri"]) for r in parsed.datasets["inferred"]}
    assert rows == {
        ("fine", "reads", "postgres://<pg>/public/src"),
        ("fine", "writes", "postgres://<pg>/public/ok"),
    }
    said = {r.subject: r.message for r in parsed.lossiness if r.subject}
    assert said["hostile.raises"] == "task hostile.raises: its operator could not be read (RuntimeError)"
    assert "is over 1,048,576 characters" in said["hostile.huge"]
    assert "template file ../outside.sql is not found in the DAG folder" in said["hostile.escapes"]
