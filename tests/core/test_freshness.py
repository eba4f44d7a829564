"""The freshness facts: read from the artifacts as each Airflow version tells them, kept in the
document's own part, read back, and never part of the fingerprint."""

from __future__ import annotations

import copy
import json

from support.helpers import artifact_paths

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.model import Freshness

DAGS = {
    "dags": [
        {"dag_id": "load", "is_paused": False, "timetable_summary": "0 5 * * *",
         "next_dagrun_run_after": "2026-12-01T05:00:00+00:00", "timetable_partitioned": False},
        {"dag_id": "report", "is_paused": False, "timetable_summary": "Asset",
         "next_dagrun_run_after": None},
        {"dag_id": "parts", "is_paused": False, "timetable_summary": "0 * * * *",
         "timetable_partitioned": True},
    ],
    "captured_at": "2026-12-01T06:00:00Z",
    "failed_latest_run": ["load", "not-described"],
}  # fmt: skip
ASSETS = {
    "assets": [
        {"uri": "s3://lake/orders", "created_at": "2026-11-01T00:00:00Z",
         "last_asset_event": {"id": 7, "timestamp": "2026-11-30T05:01:02.123456Z"},
         "producing_tasks": [{"dag_id": "load", "task_id": "t"}], "scheduled_dags": [{"dag_id": "report"}]},
        {"uri": "s3://lake/never", "created_at": "2026-11-02T00:00:00Z",
         "last_asset_event": {"id": None, "timestamp": None}},
    ]
}  # fmt: skip


def parse(dags: object, datasets: object) -> Freshness:
    return parse_artifacts(json.dumps(dags), None, json.dumps(datasets)).freshness


def test_airflow_3_1_tells_every_asset_its_last_update() -> None:
    freshness = parse(DAGS, ASSETS)
    assert freshness.asset_updates == {"s3://lake/orders": "2026-11-30T05:01:02Z", "s3://lake/never": None}
    assert freshness.updates_since is None
    assert freshness.asset_created == {
        "s3://lake/orders": "2026-11-01T00:00:00Z",
        "s3://lake/never": "2026-11-02T00:00:00Z",
    }
    assert freshness.failed_latest_run == {"load"}  # a DAG not described is nobody's producer
    assert freshness.next_run_after == {"load": "2026-12-01T05:00:00Z"}
    assert freshness.partitioned == {"parts"}


def test_the_capture_time_rides_in_the_dags_artifact() -> None:
    assert parse_artifacts(json.dumps(DAGS)).state.captured_at == "2026-12-01T06:00:00Z"


def test_before_3_1_the_recent_events_tell_what_was_updated_since_when() -> None:
    assets = copy.deepcopy(ASSETS)
    for asset in assets["assets"]:
        del asset["last_asset_event"]
    assets["recent_events"] = {
        "since": "2026-11-24T06:00:00Z",
        "events": [
            {"uri": "s3://lake/orders", "timestamp": "2026-11-29T05:00:00Z"},
            {"uri": "s3://lake/orders", "timestamp": "2026-11-30T05:00:00Z"},
        ],
    }
    freshness = parse(DAGS, assets)
    assert freshness.asset_updates == {"s3://lake/orders": "2026-11-30T05:00:00Z"}
    assert freshness.updates_since == "2026-11-24T06:00:00Z"


def test_without_last_events_or_a_window_the_updates_are_unknown() -> None:
    assets = copy.deepcopy(ASSETS)
    del assets["assets"][0]["last_asset_event"]
    freshness = parse(DAGS, assets)
    assert freshness.asset_updates is None
    assert freshness.failed_latest_run == {"load"}


def test_without_the_failed_list_the_run_states_are_unknown() -> None:
    dags = {key: value for key, value in DAGS.items() if key != "failed_latest_run"}
    freshness = parse(dags, ASSETS)
    assert freshness.failed_latest_run is None
    assert freshness.asset_updates is not None


def test_the_freshness_part_round_trips_and_stays_out_of_the_fingerprint() -> None:
    estate = parse_artifacts(json.dumps(DAGS), None, json.dumps(ASSETS))
    document = build_document(estate, audit(estate))
    assert document["freshness"]["assetUpdates"]["s3://lake/orders"] == "2026-11-30T05:01:02Z"
    assert document["freshness"]["failedLatestRun"] == ["load"]
    stored = load_document(json.dumps(document))
    assert stored.estate is not None
    assert stored.estate.freshness == estate.freshness

    later = copy.deepcopy(ASSETS)
    later["assets"][0]["last_asset_event"] = {"id": 8, "timestamp": "2026-12-01T05:00:00Z"}
    dags = {**DAGS, "failed_latest_run": [], "captured_at": "2026-12-02T06:00:00Z"}
    changed = parse_artifacts(json.dumps(dags), None, json.dumps(later))
    assert changed.freshness != estate.freshness
    assert build_document(changed, audit(changed))["fingerprint"] == document["fingerprint"]


def test_a_document_without_a_freshness_part_knows_nothing() -> None:
    paths = artifact_paths("airflow3")
    estate = parse_artifacts(*(paths[name].read_bytes() for name in ("dags", "tasks", "datasets")))
    document = build_document(estate, audit(estate))
    del document["freshness"]
    stored = load_document(json.dumps(document))
    assert stored.estate is not None and stored.estate.freshness == Freshness()


def test_a_damaged_freshness_part_costs_only_freshness() -> None:
    estate = parse_artifacts(json.dumps(DAGS), None, json.dumps(ASSETS))
    document = build_document(estate, audit(estate))
    document["freshness"] = {"assetUpdates": {"s3://lake/orders": "yesterday"}, "failedLatestRun": "load"}
    stored = load_document(json.dumps(document))
    assert stored.estate is not None
    assert stored.estate.freshness.asset_updates == {}
    assert stored.estate.freshness.failed_latest_run is None
    assert stored.fingerprint == document["fingerprint"]
