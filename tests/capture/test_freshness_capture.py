"""What the capture adds for the freshness rules, per Airflow version (scripted local servers).

Airflow 3.1+ says each asset's last update in the asset list: only the DAGs whose latest run
failed are asked for, in one filtered list. Airflow 3.0 does not: the newest events of the last
week are listed too, newest first and no further than RECENT_EVENTS_MAX. The live capture tests
(test_live_capture.py, test_live_assets.py) count these requests on a real Airflow 3.3.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

import pytest
from support.local_http import FAILED_RUNS, ScriptedServer, json_reply, no_aliases_no_warnings

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.capture.crawl import RECENT_EVENTS_DAYS, RECENT_EVENTS_MAX

DAGS = {"dags": [{"dag_id": d, "is_paused": False} for d in ("load", "report")], "total_entries": 2}
ASSET = {
    "id": 1,
    "uri": "s3://lake/orders",
    "created_at": "2026-11-01T00:00:00Z",
    "producing_tasks": [{"dag_id": "load", "task_id": "t"}],
    "scheduled_dags": [{"dag_id": "report"}],
}


def airflow(version: str, asset: dict) -> dict:
    return {
        "/api/v2/version": json_reply({"version": version}),
        "/auth/token": json_reply({"access_token": "t"}, status=201),
        "/api/v2/dags": json_reply(DAGS),
        "/api/v2/dags/load/tasks": json_reply({"tasks": [], "total_entries": 0}),
        "/api/v2/dags/report/tasks": json_reply({"tasks": [], "total_entries": 0}),
        "/api/v2/assets": json_reply({"assets": [asset], "total_entries": 1}),
        **no_aliases_no_warnings(),
    }


def run(server: ScriptedServer):
    with AirflowApiClient(ApiSource(server.base_url, username="u", password="p", concurrency=2)) as client:
        return capture(client)


@pytest.fixture
def airflow_3_3() -> Iterator[ScriptedServer]:
    asset = {**ASSET, "last_asset_event": {"id": 9, "timestamp": "2026-11-30T05:00:00Z"}}
    with ScriptedServer(airflow("3.3.2", asset)) as server:
        yield server


@pytest.fixture
def airflow_3_0() -> Iterator[ScriptedServer]:
    with ScriptedServer(airflow("3.0.6", ASSET)) as server:
        yield server


def test_airflow_3_3_asks_only_for_the_failed_latest_runs(airflow_3_3: ScriptedServer) -> None:
    airflow_3_3.set_default(FAILED_RUNS, json_reply({"dags": [{"dag_id": "load"}], "total_entries": 1}))
    result = run(airflow_3_3)
    assert result.dags["failed_latest_run"] == ["load"]
    assert "recent_events" not in result.datasets
    assert not [p for _, p in airflow_3_3.requests if p.startswith("/api/v2/assets/events")]
    freshness = result.estate().freshness
    assert freshness.asset_updates == {"s3://lake/orders": "2026-11-30T05:00:00Z"}
    assert freshness.failed_latest_run == {"load"}
    assert result.summary.freshness == 1


def test_a_user_who_may_not_list_failed_runs_gets_a_lossiness_record(airflow_3_3: ScriptedServer) -> None:
    airflow_3_3.set_default(FAILED_RUNS, json_reply({"detail": "Forbidden"}, status=403))
    result = run(airflow_3_3)
    assert "failed_latest_run" not in result.dags
    assert [r.message.split(":")[0] for r in result.lossiness] == [
        "latest run states unknown (producer-failing not judged)"
    ]
    assert result.estate().freshness.failed_latest_run is None


def test_airflow_3_0_lists_the_last_weeks_events_newest_first(airflow_3_0: ScriptedServer) -> None:
    events = [
        {"id": 2, "asset_id": 1, "uri": "s3://lake/orders", "timestamp": "2026-11-30T05:00:00.5Z"},
        {"id": 1, "asset_id": 1, "uri": "s3://lake/orders", "timestamp": "2026-11-29T05:00:00Z"},
    ]
    airflow_3_0.set_default("/api/v2/assets/events", json_reply({"asset_events": events, "total_entries": 2}))
    result = run(airflow_3_0)
    [target] = [p for _, p in airflow_3_0.requests if p.startswith("/api/v2/assets/events")]
    query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items()}
    captured = datetime.strptime(result.state.captured_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    since = (captured - timedelta(days=RECENT_EVENTS_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert query == {"timestamp_gte": since, "order_by": "-timestamp", "limit": "100", "offset": "0"}
    freshness = result.estate().freshness
    assert freshness.asset_updates == {"s3://lake/orders": "2026-11-30T05:00:00Z"}
    assert freshness.updates_since == since
    assert result.summary.freshness == 2  # the failed runs and one page of events


def test_a_busy_week_is_read_no_further_than_the_cap(airflow_3_0: ScriptedServer) -> None:
    """More events than the cap: the newest are read, and the window starts at the oldest of them."""
    start = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
    total = RECENT_EVENTS_MAX + 1_000
    pages = []
    for offset in range(0, total, 100):
        events = [
            {"id": total - i, "asset_id": 1, "uri": "s3://lake/orders",
             "timestamp": (start - timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")}
            for i in range(offset, offset + 100)
        ]  # fmt: skip
        pages.append(json_reply({"asset_events": events, "total_entries": total}))
    airflow_3_0.script("/api/v2/assets/events", *pages)
    result = run(airflow_3_0)
    event_pages = [p for _, p in airflow_3_0.requests if p.startswith("/api/v2/assets/events")]
    assert len(event_pages) == RECENT_EVENTS_MAX // 100
    freshness = result.estate().freshness
    oldest_read = (start - timedelta(seconds=RECENT_EVENTS_MAX - 1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert freshness.updates_since == oldest_read
    assert freshness.asset_updates == {"s3://lake/orders": "2026-11-30T12:00:00Z"}
