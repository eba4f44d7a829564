"""An alias written before the scheduler's asset pass, on a real Airflow 3.3 API server.

The server serves example_dags/assets; the alias producer ran once and no scheduler ran, so the
asset it wrote through ``daily_exports`` is inactive: ``GET /assets`` lacks it, while
``GET /assets?only_active=false``, ``GET /assets/aliases`` and its events show the write. The
estate still knows the asset and its edges, and says it is not active yet.
"""

from __future__ import annotations

import pytest
from support.airflow_server import AirflowApiServer
from support.asset_estate import EXPECTED_ASSET_LINEAGE
from support.helpers import REPO

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.core import audit, build_document

pytestmark = pytest.mark.airflow_server

EXPORT = "s3://lake/exports/2026-01-01"


@pytest.fixture(scope="module")
def unscheduled_server():
    """The alias producer ran, and no scheduler pass activated what it wrote."""
    with AirflowApiServer(REPO / "example_dags" / "assets", run_dags=("exports_producer",)) as server:
        yield server


def test_an_alias_written_before_the_scheduler_pass_gives_its_assets_and_edges(unscheduled_server) -> None:
    server = unscheduled_server
    listed = {raw["uri"] for raw in server.get("/api/v2/assets", limit=100).json()["assets"]}
    assert EXPORT not in listed  # the case itself: Airflow does not list the asset as active yet
    source = ApiSource(server.base_url, username=server.username, password=server.password)
    with AirflowApiClient(source) as client:
        captured = capture(client)
    assert [raw["uri"] for raw in captured.datasets["inactive_assets"] if raw.get("aliases")] == [EXPORT]
    assert captured.summary.alias_writers == 1  # its one page of events, as for an active asset
    estate = captured.estate()
    document = build_document(estate, audit(estate))
    lineage = {
        (f"{e['dependentKind']}:{e['dependent']}", f"{e['dependsOnKind']}:{e['dependsOn']}", e.get("via", ""))
        for e in document["lineage"]
    }
    assert {edge for edge in lineage if EXPORT in edge[0] + edge[1]} == {
        (f"asset:{EXPORT}", "dag:exports_producer", "alias:daily_exports"),
        ("dag:exports_consumer", f"asset:{EXPORT}", "alias:daily_exports"),
        ("dag:export_by_name_ref", f"asset:{EXPORT}", "ref"),
    }
    assert lineage == EXPECTED_ASSET_LINEAGE  # the same lineage the scheduler's pass leads to
    [export] = [d for d in document["datasets"] if d["identity"] == EXPORT]
    assert export["metadata"]["airflow.aliases"] == "daily_exports"
    about_alias = [r for r in document["lossiness"] if r.get("subject") == "daily_exports"]
    assert len(about_alias) == 1
    assert f"'{EXPORT}', which GET /assets does not list yet" in about_alias[0]["message"]
    assert not any("nothing has been written" in r["message"] for r in document["lossiness"])
    assert "asset-unproduced" not in {f["code"] for f in document["findings"] if f["subject"] == EXPORT}
