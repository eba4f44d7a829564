"""One real Airflow 3.3 estate, changed step by step the way estates change, exported after each step.

The server's DAG processor parses the bundles after every change (``reparse``), as a running
deployment's would, so each step meets what Airflow really does: a broken file's DAGs turn
stale while Airflow still names them as producers, a deleted file makes Airflow clear every
stale DAG's references, a DAG that loses its only outlet keeps its producing reference, an
unreferenced asset is orphaned by the scheduler. After each step ``export --sink DIR`` runs as
a user runs it (``python -m airflow_provider_coremodels``, a file sink holding the baseline) and
the findings and the lineage are compared with the truth, written by hand below from the DAG
files of that step. What Airflow's history changes (whether it still names a broken DAG's
outlets) must not change the verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.airflow_server import REPARSE_AT_ONCE, AirflowApiServer

pytestmark = pytest.mark.airflow_server

ORDERS, REVENUE, EXTRA, LOST, TMP, NAMED = (
    "s3://lake/orders",
    "s3://lake/revenue",
    "s3://lake/extra",
    "s3://lake/lost",
    "s3://lake/tmp",
    "s3://lake/named",
)

HEADER = """\
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset
"""


def dag_file(
    dag_id: str, *, schedule: str = "None", outlets: str = "", inlets: str = "", owner: str = "team"
) -> str:
    """A DAG file of one DAG with one task: its schedule, outlets and inlets as Python source."""
    task = ", ".join(
        part
        for part in (
            'task_id="run"',
            f"outlets=[{outlets}]" if outlets else "",
            f"inlets=[{inlets}]" if inlets else "",
        )
        if part
    )
    return HEADER + textwrap.dedent(
        f"""
        with DAG({dag_id!r}, schedule={schedule}, description="the {dag_id} pipeline",
                 default_args={{"owner": {owner!r}}}):
            EmptyOperator({task})
        """
    )


def asset(uri: str) -> str:
    return f"Asset({uri!r})"


#: The estate before the first step: one file per DAG.
FIRST = {
    "orders.py": dag_file("load_orders", schedule='"@daily"', outlets=asset(ORDERS)),
    "revenue.py": dag_file(
        "daily_revenue", schedule=f"[{asset(ORDERS)}]", outlets=f"{asset(REVENUE)}, {asset(EXTRA)}"
    ),
    "reader.py": dag_file("orders_reader", inlets=asset(ORDERS)),
    "mover.py": dag_file("mover", schedule=f"[{asset(ORDERS)}]"),
    "loser.py": dag_file("loser", schedule='"@daily"', outlets=asset(LOST)),
    "lost_consumer.py": dag_file("lost_consumer", schedule=f"[{asset(LOST)}]"),
    "cleanup.py": dag_file("cleanup", schedule='"@daily"', outlets=asset(TMP)),
    "tmp_reader.py": dag_file("tmp_reader", schedule=f"[{asset(TMP)}]"),
    "named.py": dag_file("old_name", schedule='"@daily"', outlets=asset(NAMED)),
    "named_reader.py": dag_file("named_reader", schedule=f"[{asset(NAMED)}]"),
}

EDGES_FIRST = {
    ("produces", "load_orders", ORDERS),
    ("consumes", "daily_revenue", ORDERS),
    ("produces", "daily_revenue", REVENUE),
    ("produces", "daily_revenue", EXTRA),
    ("inlet", "orders_reader", ORDERS),
    ("consumes", "mover", ORDERS),
    ("produces", "loser", LOST),
    ("consumes", "lost_consumer", LOST),
    ("produces", "cleanup", TMP),
    ("consumes", "tmp_reader", TMP),
    ("produces", "old_name", NAMED),
    ("consumes", "named_reader", NAMED),
}
BROKEN = "dags-folder/orders.py"
#: orders_reader reads only through a task inlet, and its file declares no other asset: no endpoint
#: can confirm Airflow's reference is current, and the finding says so.
STARVED_ORDERS = (
    "consumers: daily_revenue, mover, orders_reader; read only through a task inlet Airflow may keep "
    "after the code drops it: orders_reader; its producer load_orders does not import "
    "(dags-folder/orders.py)"
)


def edges(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    """Each edge as (how, DAG, asset): produces, consumes (a schedule) or inlet."""
    out = set()
    for edge in document["lineage"]:
        if edge["dependentKind"] == "asset":
            out.add(("produces", edge["dependsOn"], edge["dependent"]))
        else:
            out.add(
                ("inlet" if edge.get("via") == "inlet" else "consumes", edge["dependent"], edge["dependsOn"])
            )
    return out


def findings(document: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    return {(f["code"], f["subject"]): f["detail"] for f in document["findings"]}


class Estate:
    """The estate's DAG folders, the server that parses them, and the export that reads it."""

    def __init__(self, server: AirflowApiServer, folders: dict[str, Path], sink: Path) -> None:
        self.server, self.folders, self.sink = server, folders, sink

    def write(self, name: str, source: str, bundle: str = "dags-folder") -> None:
        (self.folders[bundle] / name).write_text(source)

    def delete(self, name: str) -> None:
        (self.folders["dags-folder"] / name).unlink()

    def export(self, *, reparse: bool = True) -> dict[str, Any]:
        """Parse the bundles once (unless the step did), export through the file sink, and read
        the document it printed."""
        if reparse:
            self.server.reparse()
        env = {**os.environ, "LIFECYCLE_PASSWORD": self.server.password}
        result = subprocess.run(
            [
                sys.executable, "-m", "airflow_provider_coremodels", "export",
                "--base-url", self.server.base_url, "--username", self.server.username,
                "--password-env", "LIFECYCLE_PASSWORD", "--sink", str(self.sink), "--format", "json",
            ],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        return json.loads(result.stdout)


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("lifecycle")
    folders = {"dags-folder": root / "dags", "analytics": root / "analytics"}
    for folder in folders.values():
        folder.mkdir()
    for name, source in FIRST.items():
        (folders["dags-folder"] / name).write_text(source)
    bundles = [
        {
            "name": "dags-folder",
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {},
        },
        {
            "name": "analytics",
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {"path": str(folders["analytics"])},
        },
    ]
    env = {**REPARSE_AT_ONCE, "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": json.dumps(bundles)}
    with AirflowApiServer(folders["dags-folder"], extra_env=env, allow_import_errors=True) as server:
        yield Estate(server, folders, root / "sink")


@pytest.mark.airflow_server
def test_an_estate_changed_step_by_step(estate: Estate) -> None:
    """Each step's findings and lineage, against the truth of that step's DAG files."""
    # 0. The first export: every DAG imports, every reference is declared; no baseline yet.
    first = estate.export()
    assert edges(first) == EDGES_FIRST
    assert findings(first) == {}
    assert first["importErrors"] == []

    # 1. orders.py stops importing after a good parse (a bad deploy). Airflow marks load_orders
    # stale and still lists it as the producer of s3://lake/orders: it is no producer, the file is
    # named with the consumers it starves, and the DAG is not "removed" (it is still the team's).
    estate.write("orders.py", FIRST["orders.py"] + "\nundefined_name\n")
    broken = estate.export()
    assert edges(broken) == EDGES_FIRST - {("produces", "load_orders", ORDERS)}
    assert "load_orders" in {d["identity"] for d in broken["datasets"]}
    assert findings(broken) == {
        ("dag-import-error", BROKEN): "dags: load_orders; NameError: name 'undefined_name' is not defined; "
        "starves: daily_revenue, mover, orders_reader (through s3://lake/orders); owners: team",
        ("asset-unproduced", ORDERS): STARVED_ORDERS,
    }
    assert [(f["file"], f["dags"]) for f in broken["importErrors"]] == [(BROKEN, ["load_orders"])]

    # 2. cleanup.py is deleted. Airflow now clears the references of every stale DAG (load_orders's
    # too): the verdicts on orders must not change with that history. cleanup is removed, and the
    # asset only it produced has nobody producing it.
    estate.delete("cleanup.py")
    deleted = estate.export()
    assert edges(deleted) == EDGES_FIRST - {
        ("produces", "load_orders", ORDERS),
        ("produces", "cleanup", TMP),
    }
    assert findings(deleted) == {
        ("dag-import-error", BROKEN): "dags: load_orders; NameError: name 'undefined_name' is not defined; "
        "starves: daily_revenue, mover, orders_reader (through s3://lake/orders); owners: team",
        ("asset-unproduced", ORDERS): STARVED_ORDERS,
        ("asset-unproduced", TMP): "consumers: tmp_reader",
        ("dataset-removed", "cleanup"): "was a DAG",
    }
    assert not any(edge["external"] for edge in deleted["lineage"])  # a deleted DAG is never "external"

    # 3. old_name is renamed new_name in its file: one DAG removed, one new, the lineage follows.
    estate.write("named.py", dag_file("new_name", schedule='"@daily"', outlets=asset(NAMED)))
    renamed = estate.export()
    assert ("produces", "new_name", NAMED) in edges(renamed)
    assert ("produces", "old_name", NAMED) not in edges(renamed)
    assert {key for key in findings(renamed) if key[0] in ("dataset-removed", "dataset-unmapped")} == {
        ("dataset-removed", "old_name"),
        ("dataset-unmapped", "new_name"),
    }
    assert not any(key[0].startswith("lineage-") for key in findings(renamed))  # said by the DAG findings

    # 4. daily_revenue stops producing s3://lake/extra, which nothing else references: the scheduler
    # orphans it, and it is gone from the estate.
    estate.write(
        "revenue.py", dag_file("daily_revenue", schedule=f"[{asset(ORDERS)}]", outlets=asset(REVENUE))
    )
    estate.server.reparse()
    estate.server.scheduler_pass_now()  # what a scheduler does within a minute: orphan it
    orphaned = estate.export(reparse=False)
    assert EXTRA not in {d["identity"] for d in orphaned["datasets"]}
    assert ("dataset-removed", EXTRA) in findings(orphaned)

    # 5. loser is paused while lost_consumer still runs on what it produces.
    assert estate.server.patch("/api/v2/dags/loser", {"is_paused": True}).ok
    paused = estate.export()
    assert findings(paused)[("paused-producer", LOST)] == "producers: loser; active consumers: lost_consumer"

    # 6. mover moves from s3://lake/orders to s3://lake/revenue: lineage drift says both.
    estate.write("mover.py", dag_file("mover", schedule=f"[{asset(REVENUE)}]"))
    moved = estate.export()
    assert ("consumes", "mover", REVENUE) in edges(moved)
    assert ("consumes", "mover", ORDERS) not in edges(moved)
    found = findings(moved)
    assert found[("lineage-removed", f"{ORDERS} -> mover")] == f"DAG mover consumes asset {ORDERS}"
    assert found[("lineage-added", f"{REVENUE} -> mover")] == f"DAG mover consumes asset {REVENUE}"
    assert "mover" not in found[("asset-unproduced", ORDERS)]

    # 7. loser loses its only outlet. Airflow keeps listing it as the producer; its code does not
    # declare it: no producer, lost_consumer starves, and the paused producer is no more.
    estate.write("loser.py", dag_file("loser", schedule='"@daily"'))
    lost = estate.export()
    assert ("produces", "loser", LOST) not in edges(lost)
    found = findings(lost)
    assert found[("asset-unproduced", LOST)] == "consumers: lost_consumer"
    assert ("paused-producer", LOST) not in found
    assert found[("lineage-removed", f"loser -> {LOST}")] == f"DAG loser produces asset {LOST}"
    assert any("outlived the code" in r["message"] for r in lost["lossiness"] if r.get("subject") == "loser")

    # 8. A second bundle gains a file of the same relative path as the broken one: two files, never
    # one, in every view (SARIF places each at its own bundle's path).
    estate.write("orders.py", dag_file("analytics_orders", outlets=asset(ORDERS)), bundle="analytics")
    two = estate.export()
    assert ("produces", "analytics_orders", ORDERS) in edges(two)
    assert ("asset-unproduced", ORDERS) not in findings(two)
    assert ("dag-import-error", BROKEN) in findings(two)  # still broken; but nothing starves
    assert "starves" not in findings(two)[("dag-import-error", BROKEN)]
    from airflow_provider_coremodels.core.views.sarif import render_sarif

    sarif = json.loads(render_sarif(two, tool_version="test"))
    places = {
        (r["ruleId"], loc["physicalLocation"]["artifactLocation"]["uri"])
        for r in sarif["runs"][0]["results"]
        for loc in r.get("locations", [])
        if "physicalLocation" in loc
    }
    assert ("dag-import-error", "dags-folder/orders.py") in places
    assert ("dataset-unmapped", "analytics/orders.py") in places

    # 9. orders.py imports again: load_orders is a producer once more, and nothing is broken.
    estate.write("orders.py", FIRST["orders.py"])
    fixed = estate.export()
    assert ("produces", "load_orders", ORDERS) in edges(fixed)
    assert fixed["importErrors"] == []
    assert not any(code == "dag-import-error" for code, _ in findings(fixed))
