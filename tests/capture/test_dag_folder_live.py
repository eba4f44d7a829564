"""Two doors, one estate: a DAG folder parsed by ``parse_dag_folder`` gives the estate a capture of a
real Airflow 3.3 API server serving the same folder gives (CONTRACT.md section 9.1).

The server serves a copy of ``example_dags/`` (the example estate, Airflow 3's asset constructs, the
freshness DAGs, the exporters) after ``airflow dags reserialize``, as a deployment whose
dag-processor parsed it; the parse reads the same copy, with the server's paused flags (what a
baseline gives) and its path as ``deployed_root``. What only a live server can know is left out of
the comparison, each named below: the freshness facts (when the capture ran, asset creation times)
and the DAG warnings (none here, since no scheduler pass runs; the parse emits a lossiness record
saying it cannot know them).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.airflow_server import AirflowApiServer
from support.helpers import REPO

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.capture.dag_folder import FolderArtifacts, parse_dag_folder
from airflow_provider_coremodels.core import audit, build_estate
from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY
from airflow_provider_coremodels.core.snapshots.document import build_document, governed_fingerprint

pytestmark = pytest.mark.airflow_server

#: A file that does not import, beside a good one: the import error both doors must report alike.
BROKEN = """
from airflow.sdk import DAG

raise ValueError("the vendor feed moved")
"""
GOOD = """
from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset

with DAG(dag_id="beside_the_broken", schedule=None, start_date=datetime(2026, 1, 1), tags=["t"]):
    EmptyOperator(task_id="only", outlets=[Asset("s3://lake/beside")])
"""


def _compare(served: Path, server: AirflowApiServer) -> tuple[dict, dict, FolderArtifacts]:
    with AirflowApiClient(
        ApiSource(server.base_url, username=server.username, password=server.password)
    ) as client:
        captured = capture(client)
    paused = {d["dag_id"]: d["is_paused"] for d in captured.dags["dags"]}
    parsed = parse_dag_folder(served, deployed_root=str(served), paused=paused, timeout=60)
    live = captured.estate()
    folder = build_estate(parsed.dags, parsed.tasks, parsed.datasets)
    return (
        {"estate": live, "document": build_document(live, audit(live))},
        {"estate": folder, "document": build_document(folder, audit(folder))},
        parsed,
    )


def _findings(document: dict) -> list[tuple[str, str, str]]:
    # freshness findings depend on when each door looked (asset creation times, the capture's
    # clock): left out, as no parse has runs or events
    volatile = {"asset-stale", "producer-failing"}
    return sorted(
        (f["code"], f["subject"], f.get("detail", ""))
        for f in document["findings"]
        if f["code"] not in volatile
    )


@pytest.fixture(scope="module")
def served_examples(tmp_path_factory):
    served = tmp_path_factory.mktemp("served") / "dags"
    shutil.copytree(REPO / "example_dags", served, ignore=shutil.ignore_patterns("__pycache__"))
    with AirflowApiServer(served) as server:
        yield served, server


def test_the_example_dags_parse_to_the_estate_the_server_serves(served_examples) -> None:
    served, server = served_examples
    live, folder, parsed = _compare(served, server)
    live_estate, folder_estate = live["estate"], folder["estate"]
    assert len(folder_estate.datasets) > 40  # the whole example folder, assets and DAGs
    assert parsed.dags["import_errors"] == []
    assert {d.identity: d for d in folder_estate.datasets} == {d.identity: d for d in live_estate.datasets}
    assert set(folder_estate.lineage) == set(live_estate.lineage)
    assert governed_fingerprint(folder_estate.datasets, folder_estate.lineage) == governed_fingerprint(
        live_estate.datasets, live_estate.lineage
    )
    assert live["document"]["fingerprint"] == folder["document"]["fingerprint"]
    assert _findings(folder["document"]) == _findings(live["document"])
    # the DAGs' own lines, for SARIF: where each DAG(...) or @dag is written
    assert (parsed.lines["broken_feed"], parsed.lines["raw_orders"], parsed.lines["clean_orders"]) == (
        35,
        10,
        23,
    )
    # the DAGs freshness/consumers.py makes in a loop have no literal id: they take the line of the
    # file's one DAG(...) call, so every DAG has a line
    assert set(parsed.lines) == {d["dag_id"] for d in parsed.dags["dags"]}


@pytest.fixture(scope="module")
def served_broken(tmp_path_factory):
    served = tmp_path_factory.mktemp("served-broken") / "dags"
    (served / "feeds").mkdir(parents=True)
    (served / "feeds" / "vendor_feed.py").write_text(BROKEN)
    (served / "beside.py").write_text(GOOD)
    with AirflowApiServer(served, allow_import_errors=True) as server:
        yield served, server


def test_a_broken_file_is_the_import_error_the_server_reports(served_broken) -> None:
    served, server = served_broken
    live, folder, parsed = _compare(served, server)
    assert parsed.files == 2
    live_errors = [(b.file, b.path, b.error, b.bundle, b.dags) for b in live["estate"].import_errors]
    folder_errors = [(b.file, b.path, b.error, b.bundle, b.dags) for b in folder["estate"].import_errors]
    assert live_errors == [
        (
            "dags-folder/feeds/vendor_feed.py",
            "feeds/vendor_feed.py",
            "ValueError: the vendor feed moved",
            "dags-folder",
            (),
        )
    ]
    assert folder_errors == live_errors
    assert _findings(folder["document"]) == _findings(live["document"])
    assert live["document"]["fingerprint"] == folder["document"]["fingerprint"]


@pytest.fixture(scope="module")
def served_links(tmp_path_factory):
    served = tmp_path_factory.mktemp("served-links") / "dags"
    shutil.copytree(
        REPO / "tests" / "fixtures" / "link_dags", served, ignore=shutil.ignore_patterns("__pycache__")
    )
    with AirflowApiServer(served) as server:
        yield served, server


def test_deadline_alerts_parse_as_the_server_serves_them(served_links) -> None:
    """The deadline alert of ``revalue_ledger`` (and the none of every other DAG) comes out of the
    parsed DAG as the capture reads it from ``GET /ui/dags/{dag_id}/deadlineAlerts``: the same
    ``airflow.deadline`` on each DAG. Every DAG is the same through both doors but ``fanout``, whose
    trigger of a DAG that does not exist the code shows and Airflow 3.3's graph leaves out (its
    ``airflow.dagLinks``; a difference of the links, not of the deadlines)."""
    served, server = served_links
    live, folder, _ = _compare(served, server)
    dags = {
        door: {d.identity: d for d in side["estate"].dags()}
        for door, side in (("live", live), ("folder", folder))
    }
    deadline = {
        door: {i: d.metadata.get(DEADLINE_KEY) for i, d in found.items()} for door, found in dags.items()
    }
    assert deadline["folder"] == deadline["live"]
    assert deadline["live"]["revalue_ledger"] == (
        '[{"interval":7200,"name":"late-close","reference":"DagRunQueuedAtDeadline"}]'
    )
    assert set(deadline["live"].values()) == {deadline["live"]["revalue_ledger"], "[]"}
    fanout = {door: dict(found.pop("fanout").metadata) for door, found in dags.items()}
    assert dags["folder"] == dags["live"]
    assert (
        fanout["folder"].pop("airflow.dagLinks")
        == '[{"dag":"no_such_dag","task":"kick_missing","via":"trigger"}]'
    )
    assert fanout["folder"] == fanout["live"]
    assert not [r for r in folder["document"]["lossiness"] if "deadline" in r["message"]]
