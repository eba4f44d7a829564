"""Capture from an Airflow 2 (/api/v1) deployment: a local server replaying v1-shaped responses.

No Airflow 2 server can run beside Airflow 3 here, so AirflowV1ReplayServer serves the
hand-written fixtures in tests/fixtures/airflow2 with basic auth and v1 pagination.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import artifact_paths
from support.replay_server import AirflowV1ReplayServer

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.errors import AuthError

PASSWORD = "admin-v1-pw"


def fixture_document() -> dict:
    """The fixtures as a capture reads them: each dataset-triggered DAG with its details' condition."""
    paths = artifact_paths("airflow2")
    dags = json.loads(paths["dags"].read_bytes())
    details = json.loads((paths["dags"].parent / "dag_details.json").read_bytes())
    dags["dags"] = [{**dag, **details.get(dag["dag_id"], {})} for dag in dags["dags"]]
    estate = parse_artifacts(
        json.dumps(dags).encode(), paths["tasks"].read_bytes(), paths["datasets"].read_bytes()
    )
    return build_document(estate, audit(estate))


@pytest.mark.parametrize("max_page_limit", [100, 2])
def test_v1_capture_matches_the_fixtures(max_page_limit: int) -> None:
    with AirflowV1ReplayServer(max_page_limit=max_page_limit, password=PASSWORD) as server:
        with AirflowApiClient(ApiSource(server.base_url, username="admin", password=PASSWORD)) as client:
            result = capture(client)
        requests = server.requests
    assert result.state.api_version == "v1"
    assert result.state.airflow_version == "2.10.5"
    estate = result.estate()
    document = build_document(estate, audit(estate))
    assert document["fingerprint"] == fixture_document()["fingerprint"]
    assert document["findings"] == fixture_document()["findings"]
    # what Airflow 2 cannot tell is said, not guessed: the latest run states, deadline alerts
    # (Airflow 2 has none), owner links (its API shows none), and task inlets (the offline parse of
    # the fixtures, which list no import errors, says that too)
    inlets = "task inlets unknown: this Airflow's API lists no consuming_tasks"
    assert [r["message"].split(" (")[0] for r in document["lossiness"]] == [
        "deadline alerts unknown: Airflow 2.10.5 has no deadline alerts",
        "latest run states unknown on Airflow 2",
        "owner links",
        inlets,
    ]
    assert [r["message"].split(" (")[0] for r in fixture_document()["lossiness"]] == [
        "import errors unknown: the dags artifact carries no import_errors",
        inlets,
    ]
    datasets = {d["identity"]: d for d in document["datasets"]}
    assert datasets["daily_revenue"]["metadata"]["airflow.assetCondition"] == (
        '{"all":[{"asset":"s3://lake/orders.parquet"}]}'
    )
    # Airflow 2 has no token endpoint: basic auth on every request
    assert ("POST", "/auth/token") not in requests
    assert requests[:2] == [("GET", "/api/v2/version"), ("GET", "/api/v1/version")]
    # the details of the one dataset-triggered DAG and of the one without a description (its
    # doc_md), and no Airflow 3 alias or warning listing
    assert sorted(path for _, path in requests if "/details" in path) == [
        "/api/v1/dags/daily_revenue/details",
        "/api/v1/dags/legacy_cleanup/details",
    ]
    assert ("GET", "/api/v1/importErrors?limit=100&offset=0&order_by=import_error_id") in requests
    assert not any("alias" in path or "dagWarnings" in path for _, path in requests)


def test_datasets_total_entries_that_ignores_filters_stops_on_the_empty_page() -> None:
    """Airflow 2's datasets count can overstate the list: paging stops at the first empty page."""
    with AirflowV1ReplayServer(max_page_limit=2, password=PASSWORD) as server:
        with AirflowApiClient(ApiSource(server.base_url, username="admin", password=PASSWORD)) as client:
            result = capture(client)
        dataset_pages = sorted(p for _, p in server.requests if p.startswith("/api/v1/datasets?"))
    assert len(result.datasets["datasets"]) == 4
    # total_entries says 6: offsets 0 and 2 hold the 4 datasets, offset 4 is empty and ends it
    assert dataset_pages == [f"/api/v1/datasets?limit=100&offset={o}&order_by=id" for o in (0, 2, 4)]
    assert [r for r in result.lossiness if r.artifact == "datasets"] == []


def test_v1_wrong_password_is_an_auth_failure() -> None:
    refused = r"authentication refused by http://127\.0\.0\.1:\d+/api/v1/(dags|datasets): HTTP 401"
    with AirflowV1ReplayServer(password=PASSWORD) as server:
        client = AirflowApiClient(ApiSource(server.base_url, username="admin", password="nope"))
        with client, pytest.raises(AuthError, match=refused):
            capture(client)


def test_v1_capture_command_writes_the_documented_files(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("V1_PASSWORD", PASSWORD)
    with AirflowV1ReplayServer(password=PASSWORD) as server:
        code = main(
            [
                "capture",
                "--base-url",
                server.base_url,
                "--username",
                "admin",
                "--password-env",
                "V1_PASSWORD",
                "--out",
                str(tmp_path),
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("captured 5 DAGs, 9 tasks, 4 assets: ")
    datasets = json.loads((tmp_path / "datasets.json").read_bytes())
    # the server's own wrapper, and the newest events riding along (Airflow 2 has no last event per asset)
    assert set(datasets) == {"datasets", "total_entries", "recent_events"}
    assert len(datasets["recent_events"]["events"]) == 3
    tasks = json.loads((tmp_path / "tasks.json").read_bytes())
    assert sorted(tasks) == [
        "backfill_customers",
        "daily_revenue",
        "legacy_cleanup",
        "load_orders",
        "sync_crm",
    ]
    assert PASSWORD not in out + err
