"""The freshness facts: read from the artifacts as each Airflow version tells them, kept in the
document's own part, read back, and never part of the fingerprint."""

from __future__ import annotations

import copy
import dataclasses
import json
from datetime import datetime, timezone

import pytest
from support.helpers import artifact_paths, as_served

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.estate.model import Freshness
from airflow_provider_coremodels.core.views.render import freshness_line as render_freshness_line

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
    facts = stored.estate.freshness
    assert dataclasses.replace(facts, judged_at=None, tolerance=None) == estate.freshness
    assert (facts.judged_at, facts.tolerance) == ("2026-12-01T06:00:00Z", 2.0)  # how it was judged

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


# -- the rules ----------------------------------------------------------------------------------

NOW = datetime(2026, 12, 1, 6, tzinfo=timezone.utc)


def estate_of(*, dags: list[dict], assets: list[dict], failed: list[str] | None = None, **extra: object):
    doc: dict = {"dags": dags, **({"failed_latest_run": failed} if failed is not None else {}), **extra}
    dags_doc, datasets_doc = as_served(doc, {"assets": assets})
    return parse_artifacts(json.dumps(dags_doc), None, json.dumps(datasets_doc))


ON_ASSETS = "Triggered by assets"  # the timetable_description of a DAG scheduled on assets


def dag(dag_id: str, schedule: str | None = "0 5 * * *", **keys: object) -> dict:
    return {"dag_id": dag_id, "is_paused": False, "timetable_summary": schedule, **keys}


def asset(uri: str, producers: list[str], consumers: list[str], last: str | None, **keys: object) -> dict:
    return {
        "uri": uri,
        "created_at": "2026-10-01T00:00:00Z",
        "last_asset_event": {"id": 1 if last else None, "timestamp": last},
        "producing_tasks": [{"dag_id": p, "task_id": "t"} for p in producers],
        "scheduled_dags": [{"dag_id": c} for c in consumers],
        **keys,
    }


def fresh_findings(estate, **kwargs) -> list[tuple[str, str, str | None]]:
    result = audit(estate, now=kwargs.pop("now", NOW), **kwargs)
    return [(f.code, f.subject, f.detail) for f in result.findings if f.section == "Freshness"]


def test_an_asset_older_than_two_cadences_is_stale_and_says_by_how_much() -> None:
    estate = estate_of(
        dags=[dag("load", next_dagrun_run_after="2026-11-29T05:00:00Z"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-11-28T05:00:00Z")],
    )
    assert fresh_findings(estate) == [
        (
            "asset-stale",
            "s3://lake/orders",
            "last update 3 days ago (2026-11-28T05:00:00Z); allowed 48 hours (load runs daily, "
            "tolerance 2); producers: load; active consumers: report; "
            "overdue: load (next run due 49 hours ago)",
        )
    ]


def test_within_the_tolerance_an_asset_is_fresh() -> None:
    estate = estate_of(
        dags=[dag("load"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-11-29T07:00:00Z")],
    )
    result = audit(estate, now=NOW)
    assert [f for f in result.findings if f.section == "Freshness"] == []
    assert (result.freshness.judged, result.freshness.unjudged) == (1, {})
    assert result.freshness.judged_at == "2026-12-01T06:00:00Z"


@pytest.mark.parametrize(
    ("tags", "tolerance", "stale"),
    [
        pytest.param([], 2.0, True, id="default"),
        pytest.param([], 4.0, False, id="run-tolerance"),
        pytest.param([{"name": "coremodels:stale-tolerance=4"}], 2.0, False, id="dag-tag"),
        pytest.param([{"name": "coremodels:stale-tolerance=1"}], 9.0, True, id="tag-beats-run"),
        pytest.param([{"name": "coremodels:stale-tolerance=soon"}], 2.0, True, id="bad-tag-ignored"),
    ],
)
def test_the_tolerance_comes_from_the_run_or_the_producers_tag(tags, tolerance: float, stale: bool) -> None:
    estate = estate_of(
        dags=[dag("load", tags=tags), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-11-28T05:00:00Z")],
    )
    codes = [code for code, _, _ in fresh_findings(estate, tolerance=tolerance)]
    assert codes == (["asset-stale"] if stale else [])


def test_the_most_frequent_producer_sets_the_pace() -> None:
    estate = estate_of(
        dags=[dag("hourly", "0 * * * *"), dag("monthly", "0 0 1 * *"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["hourly", "monthly"], ["report"], "2026-12-01T01:00:00Z")],
    )
    [(_, _, detail)] = fresh_findings(estate)
    assert "allowed 2 hours (hourly runs hourly, tolerance 2); producers: hourly, monthly" in detail


@pytest.mark.parametrize(
    ("producer", "keys", "reason"),
    [
        pytest.param(dag("load", "Asset"), {}, "cadence unknown", id="asset-triggered"),
        pytest.param(dag("load", None), {}, "cadence unknown", id="manual"),
        # a PartitionedAssetTimetable, as Airflow 3.2 and 3.3 list it (fixtures/versions/*/examples)
        pytest.param(
            dag("load", "Partitioned Asset", timetable_partitioned=True, timetable_description=ON_ASSETS),
            {},
            "partitioned producer",
            id="partitioned-on-assets",
        ),
    ],
)
def test_what_cannot_be_judged_is_counted_not_guessed(producer: dict, keys: dict, reason: str) -> None:
    estate = estate_of(
        dags=[producer, dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-01-01T00:00:00Z", **keys)],
    )
    result = audit(estate, now=NOW)
    assert [f.code for f in result.findings if f.section == "Freshness"] == []
    assert result.freshness.unjudged == {reason: 1}


# -- partitioned producers (issue 35, item 3) ---------------------------------------------------

# A CronPartitionTimetable DAG as Airflow 3.2 and 3.3 list it (GET /dags, recorded in
# tests/fixtures/versions/3.3.2/examples.json.gz: ingest_team_a_player_stats, team_b_player_stats):
# its summary is its cron, presets expanded; PartitionedAtRuntime is not "partitioned" there.
HOURLY_PARTITIONS = {"timetable_partitioned": True, "timetable_description": "Every hour"}
PER_ASSET = "judged per asset (its newest event), not per partition"
PLAIN_LINE = (
    "freshness at 2026-12-01T06:00:00Z (tolerance 2): 3 assets judged, 0 stale, 0 with failing producers"
)


def partitioned(schedule: str, **keys: object) -> dict:
    """A producer ``ingest`` on a partitioned timetable whose summary is ``schedule``."""
    return dag("ingest", schedule, timetable_partitioned=True, **keys)


@pytest.mark.parametrize(
    ("producers", "last", "stale", "unjudged"),
    [
        pytest.param([partitioned("0 * * * *")], "2026-12-01T02:00:00Z", True, {}, id="hourly-stale"),
        pytest.param([partitioned("0 * * * *")], "2026-12-01T05:00:00Z", False, {}, id="hourly-fresh"),
        pytest.param([partitioned("15 * * * *")], "2026-12-01T03:30:00Z", True, {}, id="past-the-hour"),
        pytest.param([partitioned("0 0 * * 1")], "2026-11-20T00:00:00Z", False, {}, id="weekly"),
        pytest.param(
            [partitioned("Partitioned Asset")],
            "2026-01-01T00:00:00Z",
            False,
            {"partitioned producer": 1},
            id="no-cadence-not-judged",
        ),
        pytest.param(
            [partitioned("PartitionTimetable")],
            "2026-01-01T00:00:00Z",
            False,
            {"partitioned producer": 1},
            id="custom-summary-not-judged",
        ),
        pytest.param(
            [partitioned("Partitioned Asset"), dag("daily")],
            "2026-11-28T05:00:00Z",
            True,
            {},
            id="another-producer-sets-the-pace",
        ),
    ],
)
def test_a_partitioned_producer_is_judged_by_the_cadence_its_timetable_states(
    producers: list[dict], last: str, stale: bool, unjudged: dict
) -> None:
    """Before: every asset with a partitioned producer was "not judged", an hourly cron included.
    Now its cadence counts like any other's, against the asset's newest event; only a partitioned
    timetable that states none (or one this version cannot read) is still not judged, and says why."""
    ids = [p["dag_id"] for p in producers]
    estate = estate_of(
        dags=[*producers, dag("report", "Asset")],
        assets=[asset("s3://lake/stats", ids, ["report"], last)],
    )
    result = audit(estate, now=NOW)
    stale_findings = [f for f in result.findings if f.code == "asset-stale"]
    assert bool(stale_findings) is stale
    assert result.freshness.unjudged == unjudged
    assert result.freshness.judged == (0 if unjudged else 1)
    assert result.freshness.partitioned_judged == (0 if unjudged else 1)
    for finding in stale_findings:
        assert finding.detail is not None
        assert f"; {PER_ASSET} (partitioned: ingest); " in finding.detail


def test_a_stale_hourly_partitioned_asset_says_it_is_judged_per_asset() -> None:
    estate = estate_of(
        dags=[
            dag("ingest", "0 * * * *", next_dagrun_run_after="2026-12-01T03:00:00Z", **HOURLY_PARTITIONS),
            dag("report", "Asset"),
        ],
        assets=[asset("s3://lake/stats", ["ingest"], ["report"], "2026-12-01T02:00:00Z")],
        captured_at="2026-12-01T06:00:00Z",
    )
    assert fresh_findings(estate) == [
        (
            "asset-stale",
            "s3://lake/stats",
            "last update 4 hours ago (2026-12-01T02:00:00Z); allowed 2 hours (ingest runs hourly, "
            "tolerance 2); judged per asset (its newest event), not per partition (partitioned: ingest); "
            "producers: ingest; active consumers: report; overdue: ingest (next run due 3 hours ago)",
        )
    ]
    document = build_document(estate, audit(estate))
    assert document["freshness"]["partitionedJudged"] == 1
    assert document["freshness"]["partitioned"] == ["ingest"]
    assert render_freshness_line(document) == (
        "freshness at 2026-12-01T06:00:00Z (tolerance 2): 1 asset judged "
        "(1 with partitioned producers: per asset, not per partition), 1 stale, 0 with failing producers"
    )
    stored = load_document(json.dumps(document)).estate
    assert stored is not None and build_document(stored, audit(stored))["findings"] == document["findings"]


@pytest.mark.parametrize(
    ("part", "line"),
    [
        pytest.param(
            {"judgedAt": "2026-12-01T06:00:00Z", "tolerance": 2.0, "judged": 3, "partitionedJudged": 2,
             "notJudged": {"partitioned producer": 1}},
            "freshness at 2026-12-01T06:00:00Z (tolerance 2): 3 assets judged (2 with partitioned producers: "
            "per asset, not per partition), 0 stale, 0 with failing producers; 1 not judged "
            "(partitioned producer: 1)",
            id="some-partitioned",
        ),
        pytest.param(
            {"judgedAt": "2026-12-01T06:00:00Z", "tolerance": 2.0, "judged": 3, "partitionedJudged": 0},
            PLAIN_LINE,
            id="none-partitioned",
        ),
        pytest.param(
            {"judgedAt": "2026-12-01T06:00:00Z", "tolerance": 2.0, "judged": 3},
            PLAIN_LINE,
            id="stored-before-the-count",
        ),
        pytest.param(
            {"judgedAt": "2026-12-01T06:00:00Z", "tolerance": 2.0, "judged": 3, "partitionedJudged": "2"},
            PLAIN_LINE,
            id="damaged-count-ignored",
        ),
    ],
)  # fmt: skip
def test_the_freshness_line_says_partitioned_assets_are_judged_per_asset(part: dict, line: str) -> None:
    assert render_freshness_line({"freshness": part, "findings": []}) == line


def test_a_watched_asset_is_never_stale() -> None:
    watched = asset(
        "s3://lake/orders", ["load"], ["report"], "2026-01-01T00:00:00Z", watchers=[{"name": "w"}]
    )
    estate = estate_of(dags=[dag("load"), dag("report", "Asset")], assets=[watched])
    assert fresh_findings(estate) == []


def test_an_asset_never_updated_is_as_old_as_its_registration() -> None:
    estate = estate_of(
        dags=[dag("load"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], None)],
    )
    [(code, _, detail)] = fresh_findings(estate)
    assert code == "asset-stale"
    assert detail.startswith("never updated (registered 61 days ago); allowed 48 hours")


def test_a_paused_producer_is_left_to_paused_producer() -> None:
    estate = estate_of(
        dags=[dag("load", is_paused=True), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-01-01T00:00:00Z")],
        failed=["load"],
    )
    result = audit(estate, now=NOW)
    assert [f.code for f in result.findings] == ["dag-no-description", "dag-no-description", "dag-no-owner",
                                                 "dag-no-owner", "paused-producer"]  # fmt: skip


def test_producer_failing_when_every_active_producer_failed() -> None:
    dags = [dag("a"), dag("b"), dag("c", is_paused=True), dag("report", "Asset")]
    assets = [asset("s3://lake/orders", ["a", "b", "c"], ["report"], "2026-12-01T05:30:00Z")]
    assert fresh_findings(estate_of(dags=dags, assets=assets, failed=["a", "b"])) == [
        ("producer-failing", "s3://lake/orders", "producers: a, b; active consumers: report")
    ]
    assert fresh_findings(estate_of(dags=dags, assets=assets, failed=["a"])) == []
    assert fresh_findings(estate_of(dags=dags, assets=assets)) == []  # the run states are unknown


def test_an_external_producer_may_be_the_one_that_succeeds() -> None:
    estate = estate_of(
        dags=[dag("a"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["a", "elsewhere"], ["report"], "2026-12-01T05:30:00Z")],
        failed=["a"],
    )
    assert fresh_findings(estate) == []


def test_before_3_1_an_asset_missing_from_the_window_is_judged_only_when_that_is_conclusive() -> None:
    dags = [dag("daily"), dag("weekly", "0 0 * * 0"), dag("r1", "Asset"), dag("r2", "Asset")]
    assets = [
        {k: v for k, v in asset(uri, [p], [c], None).items() if k != "last_asset_event"}
        for uri, p, c in (("s3://lake/d", "daily", "r1"), ("s3://lake/w", "weekly", "r2"))
    ]
    doc = {"assets": assets, "recent_events": {"since": "2026-11-24T06:00:00Z", "events": []}}
    estate = parse_artifacts(json.dumps({"dags": dags}), None, json.dumps(doc))
    result = audit(estate, now=NOW)
    assert [(f.code, f.subject) for f in result.findings if f.section == "Freshness"] == [
        ("asset-stale", "s3://lake/d")
    ]
    stale = next(f for f in result.findings if f.code == "asset-stale")
    assert stale.detail is not None and stale.detail.startswith(
        "not updated since 2026-11-24T06:00:00Z (7 days ago); allowed 48 hours"
    )
    assert result.freshness.unjudged == {"last update older than the events read": 1}


def test_judged_at_the_capture_time_by_default_so_a_reaudit_agrees() -> None:
    estate = estate_of(
        dags=[dag("load"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-11-28T05:00:00Z")],
        captured_at="2026-12-01T06:00:00Z",
    )
    document = build_document(estate, audit(estate))
    assert [f["code"] for f in document["findings"] if f["section"] == "Freshness"] == ["asset-stale"]
    stored = load_document(json.dumps(document))
    assert stored.estate is not None
    again = build_document(stored.estate, audit(stored.estate))
    assert again["findings"] == document["findings"]
    assert (
        audit(estate, now=datetime(2026, 11, 29, 6, tzinfo=timezone.utc)).findings != audit(estate).findings
    )


def test_without_a_capture_time_nothing_is_judged_and_the_reason_says_so() -> None:
    estate = estate_of(
        dags=[dag("load"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-01-01T00:00:00Z")],
    )
    result = audit(estate)
    assert [f for f in result.findings if f.section == "Freshness"] == []
    assert result.freshness.reason == "no capture time to judge at; give --now"


def test_before_3_1_an_asset_registered_inside_the_window_is_as_old_as_its_registration() -> None:
    """No event in the window, but the asset is younger than the window: never updated, and only
    as old as its registration (a fresh deployment's assets are not a week stale)."""
    young = {
        k: v for k, v in asset("s3://lake/d", ["daily"], ["r1"], None).items() if k != "last_asset_event"
    }
    young["created_at"] = "2026-12-01T05:00:00Z"
    doc = {"assets": [young], "recent_events": {"since": "2026-11-24T06:00:00Z", "events": []}}
    estate = parse_artifacts(json.dumps({"dags": [dag("daily"), dag("r1", "Asset")]}), None, json.dumps(doc))
    result = audit(estate, now=NOW)
    assert [f for f in result.findings if f.section == "Freshness"] == []
    assert (result.freshness.judged, result.freshness.unjudged) == (1, {})
    later = audit(estate, now=datetime(2026, 12, 4, 6, tzinfo=timezone.utc))
    [stale] = [f for f in later.findings if f.code == "asset-stale"]
    assert stale.detail is not None and stale.detail.startswith("never updated (registered 3 days ago)")


def test_a_reaudit_judges_as_the_stored_document_was_judged_unless_told_otherwise() -> None:
    estate = estate_of(
        dags=[dag("load"), dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-11-30T05:00:00Z")],
        captured_at="2026-12-01T06:00:00Z",
    )
    later = datetime(2026, 12, 9, tzinfo=timezone.utc)
    document = build_document(estate, audit(estate, now=later, tolerance=3.0))
    assert document["freshness"]["judgedAt"] == "2026-12-09T00:00:00Z"
    stored = load_document(json.dumps(document)).estate
    assert stored is not None
    again = build_document(stored, audit(stored))
    assert again["findings"] == document["findings"] and [f["code"] for f in again["findings"]][-1:] == [
        "asset-stale"
    ]
    assert (again["freshness"]["judgedAt"], again["freshness"]["tolerance"]) == ("2026-12-09T00:00:00Z", 3.0)
    told = audit(stored, now=datetime(2026, 12, 1, 7, tzinfo=timezone.utc), tolerance=2.0)
    assert (told.freshness.judged_at, told.freshness.tolerance) == ("2026-12-01T07:00:00Z", 2.0)
    assert "asset-stale" not in [f.code for f in told.findings]


@pytest.mark.parametrize(
    ("extra", "stale"),
    [
        pytest.param({"coremodels_stale_tolerance": 4}, False, id="asset-says-4"),
        pytest.param({"coremodels_stale_tolerance": 1, "password": "s3cr3t"}, True, id="asset-says-1"),
        pytest.param({"coremodels_stale_tolerance": "soon"}, False, id="not-a-number-ignored"),
        pytest.param(None, False, id="no-extra"),
    ],
)
def test_an_asset_sets_its_own_tolerance_in_its_extra(extra, stale: bool) -> None:
    """``Asset(uri, extra={"coremodels_stale_tolerance": N})`` wins over the producer's tag and the
    run's; it is the one key of an extra read without --include-asset-extra."""
    producer = dag("load", tags=[{"name": "coremodels:stale-tolerance=9"}])
    estate = estate_of(
        dags=[producer, dag("report", "Asset")],
        assets=[asset("s3://lake/orders", ["load"], ["report"], "2026-11-28T05:00:00Z", extra=extra)],
    )
    [orders] = [d for d in estate.datasets if d.identity == "s3://lake/orders"]
    assert "airflow.extra" not in orders.metadata  # the rest of the extra stays out
    own = (extra or {}).get("coremodels_stale_tolerance")
    assert orders.metadata.get("coremodels.staleTolerance") == (str(own) if isinstance(own, int) else None)
    # without a usable one of its own, the producer's tag (9 days) decides: not stale
    assert [code for code, _, _ in fresh_findings(estate)] == (["asset-stale"] if stale else [])


def test_the_capture_keeps_only_the_tolerance_of_an_extra() -> None:
    from airflow_provider_coremodels.core.reading.parse import reduce_asset

    raw = asset("s3://x", [], [], None, extra={"coremodels_stale_tolerance": 3, "token": "t0k3n"})
    assert reduce_asset(raw)["extra"] == {"coremodels_stale_tolerance": 3}
    assert "extra" not in reduce_asset(asset("s3://x", [], [], None, extra={"token": "t0k3n"}))
    assert reduce_asset(raw, keep_extra=True)["extra"]["token"] == "t0k3n"


# -- times of every year a document can hold (issue 23, item 18) -----------------------------


@pytest.mark.parametrize(
    ("given", "written"),
    [
        ("0999-06-01T00:00:00Z", "0999-06-01T00:00:00Z"),  # before: "999-06-01T00:00:00Z"
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),  # before: "1-01-01T00:00:00Z"
        ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
        ("2026-12-01T08:00:00+02:00", "2026-12-01T06:00:00Z"),
        ("999-06-01T00:00:00Z", "0999-06-01T00:00:00Z"),  # as an older version wrote it: read as meant
    ],
)
def test_a_time_is_written_with_four_digits_and_read_back_as_itself(given: str, written: str) -> None:
    from airflow_provider_coremodels.core.reading.freshness import format_time, parse_time

    assert format_time(parse_time(given)) == written
    assert parse_time(written) == parse_time(given)


@pytest.mark.parametrize(
    "given", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0-01-01T00:00:00Z"]
)
def test_a_time_outside_the_years_a_document_holds_is_unreadable(given: str) -> None:
    """Before: an OverflowError (an ``unexpected`` error at the command line) where UTC fell
    outside years 1 to 9999. Now a ValueError, as every unreadable time."""
    from airflow_provider_coremodels.core.reading.freshness import parse_time

    with pytest.raises(ValueError, match=r"out of range|outside the years 1 to 9999"):
        parse_time(given)
