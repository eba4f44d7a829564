"""A parsed bundle put in place of the baseline's (``core/comparing/change.py``), and what the change does.

The estates here are built from small REST-shaped artifacts through the same parse a capture
feeds: bundle ``orders`` (``load_orders`` produces ``s3://lake/orders``) and bundle ``finance``
(``daily_revenue`` consumes it and produces ``s3://lake/revenue``, which ``board_report`` reads).
The folder's parse is stood in for by artifacts of bundle ``orders`` alone, as the DAG-folder parse
gives them (tests/capture/ test that parse against a real server).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import jsonschema
import pytest
from support.helpers import SARIF_SCHEMA

from airflow_provider_coremodels.core import audit, build_document, load_document
from airflow_provider_coremodels.core.checks.audit import Baseline
from airflow_provider_coremodels.core.comparing.change import (
    Target,
    change_json,
    deployed,
    describe,
    parsed_bundle,
    splice,
)
from airflow_provider_coremodels.core.comparing.locations import Spot, locate
from airflow_provider_coremodels.core.estate.model import Estate, State
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.core.reading.parse import build_estate
from airflow_provider_coremodels.core.snapshots.document import encode, governed_fingerprint
from airflow_provider_coremodels.core.views.render import change_lines
from airflow_provider_coremodels.core.views.sarif import render_sarif

ROOT = "/opt/airflow/dags"
STATE = State(connector_version="test")


def dag(dag_id: str, bundle: str, path: str, owner: str, *, paused: bool = False) -> dict[str, Any]:
    return {
        "dag_id": dag_id,
        "bundle_name": bundle,
        "relative_fileloc": path,
        "fileloc": f"{ROOT}/{bundle}/{path}",
        "description": f"{dag_id} does its work",
        "owners": [owner],
        "tags": [],
        "is_paused": paused,
        "is_stale": False,
        "timetable_summary": "@daily",
    }


def asset(uri: str, producers: list[str], consumers: list[str]) -> dict[str, Any]:
    return {
        "uri": uri,
        "name": uri,
        "group": "asset",
        "producing_tasks": [{"dag_id": d, "task_id": "publish"} for d in producers],
        "scheduled_dags": [{"dag_id": d} for d in consumers],
        "consuming_tasks": [],
        "aliases": [],
        "watchers": [],
    }


def orders_bundle() -> dict[str, Any]:
    """Bundle ``orders`` as its folder parses: one DAG producing one asset."""
    return {
        "dags": [dag("load_orders", "orders", "load_orders.py", "ingest")],
        "tasks": {"load_orders": {"tasks": [{"task_id": "publish", "operator_name": "BashOperator"}]}},
        "assets": [asset("s3://lake/orders", ["load_orders"], [])],
    }


def finance_bundle() -> dict[str, Any]:
    return {
        "dags": [
            dag("daily_revenue", "finance", "revenue.py", "finance"),
            dag("board_report", "finance", "report.py", "board"),
        ],
        "tasks": {
            "daily_revenue": {"tasks": [{"task_id": "publish", "operator_name": "PythonOperator"}]},
            "board_report": {"tasks": [{"task_id": "send", "operator_name": "EmailOperator"}]},
        },
        "assets": [
            asset("s3://lake/orders", [], ["daily_revenue"]),
            asset("s3://lake/revenue", ["daily_revenue"], ["board_report"]),
        ],
    }


def estate_of(*bundles: dict[str, Any], import_errors: list[dict[str, Any]] | None = None) -> Estate:
    dags = [d for b in bundles for d in b["dags"]]
    tasks = {k: v for b in bundles for k, v in b["tasks"].items()}
    assets: dict[str, dict[str, Any]] = {}
    for b in bundles:
        for a in b["assets"]:
            seen = assets.setdefault(a["uri"], copy.deepcopy(a))
            if seen is not a:
                for key in ("producing_tasks", "scheduled_dags"):
                    seen[key] = [*seen[key], *(x for x in a[key] if x not in seen[key])]
    dags_doc = {"dags": dags, "includes_stale": True, "import_errors": import_errors or []}
    return build_estate(dags_doc, tasks, {"assets": list(assets.values())})


def stored(estate: Estate) -> Estate:
    """The estate as a sink stores it and a baseline reads it back."""
    snapshot = load_document(encode(build_document(estate, audit(estate))))
    assert snapshot.estate is not None
    return snapshot.estate


@pytest.fixture
def baseline() -> Estate:
    return stored(estate_of(orders_bundle(), finance_bundle()))


def judged(baseline: Estate, parsed: Estate, target: Target | None = None):
    after = splice(baseline, parsed, target or Target("orders"))
    then = audit(baseline).findings
    now = audit(after, Baseline(None, baseline)).findings
    return after, describe(baseline, after, then, now, bundle="orders")


def codes(findings: Any) -> list[tuple[str, str]]:
    return sorted((f.code, f.subject) for f in findings)


def test_an_unchanged_bundle_is_the_baseline_itself(baseline: Estate) -> None:
    after, change = judged(baseline, estate_of(orders_bundle()))
    assert governed_fingerprint(after.datasets, after.lineage) == governed_fingerprint(
        baseline.datasets, baseline.lineage
    )
    assert change.empty and change.affected == ()
    assert change_lines(change_json(change)) == [
        "This change (bundle orders, no baseline): no change: "
        "the folder parses to the estate the baseline holds"
    ]


def test_a_dropped_outlet_opens_the_starved_asset_and_names_every_dag_downstream(baseline: Estate) -> None:
    bundle = orders_bundle()
    bundle["assets"] = []  # the refactor lost the outlet
    _, change = judged(baseline, estate_of(bundle))
    assert codes(change.opened) == [
        ("asset-unproduced", "s3://lake/orders"),
        ("lineage-removed", "load_orders -> s3://lake/orders"),
    ]
    assert [(e.dependent, e.depends_on) for e in change.lineage_removed] == [
        ("s3://lake/orders", "load_orders")
    ]
    # daily_revenue reads the asset; board_report reads what daily_revenue makes: both, with owners
    assert [(a.dag, a.owners, a.through, a.cut) for a in change.affected] == [
        ("board_report", ("board",), "s3://lake/orders", True),
        ("daily_revenue", ("finance",), "s3://lake/orders", True),
    ]
    # only daily_revenue loses what it depends on; board_report's own input is still made
    assert change_json(change)["breaks"] == [
        {
            "finding": {"code": "asset-unproduced", "subject": "s3://lake/orders"},
            "dependent": "daily_revenue",
            "owners": ["finance"],
            "team": None,
            "through": "s3://lake/orders",
        }
    ]
    assert change.dags_changed == ("load_orders",)  # an outlet removed changes its DAG
    lines = change_lines(change_json(change))
    assert lines[0] == (
        "This change (bundle orders, no baseline): opens 2 findings (2 Warning), closes 0, 1 DAG changed, "
        "lineage +0 -1"
    )
    assert lines[1] == "breaks: daily_revenue (finance) through s3://lake/orders: Warning asset-unproduced"
    assert lines[2] == (
        "affects: board_report (board) through s3://lake/orders; daily_revenue (finance) through s3://lake/orders"
    )
    assert lines[3] == (
        "opens: Warning asset-unproduced s3://lake/orders; Warning lineage-removed load_orders -> s3://lake/orders"
    )


def test_a_deleted_dag_is_removed_and_the_other_bundle_is_never(baseline: Estate) -> None:
    bundle = orders_bundle()
    bundle["dags"].append(dag("orders_extra", "orders", "extra.py", "ingest"))
    bundle["tasks"]["orders_extra"] = {"tasks": []}
    with_extra = stored(estate_of(bundle, finance_bundle()))
    after, change = judged(with_extra, estate_of(orders_bundle()))
    assert change.dags_removed == ("orders_extra",) and change.dags_added == ()
    assert ("dataset-removed", "orders_extra") in codes(change.opened)
    assert {d.identity for d in after.dags()} == {"load_orders", "daily_revenue", "board_report"}


def test_a_renamed_asset_starves_its_consumers_in_the_other_bundle(baseline: Estate) -> None:
    bundle = orders_bundle()
    bundle["assets"] = [asset("s3://lake/orders_v2", ["load_orders"], [])]
    after, change = judged(baseline, estate_of(bundle))
    assert ("asset-unproduced", "s3://lake/orders") in codes(change.opened)
    assert {a.identity for a in after.assets()} == {
        "s3://lake/orders",
        "s3://lake/orders_v2",
        "s3://lake/revenue",
    }
    assert [a.dag for a in change.affected] == ["board_report", "daily_revenue"]


def test_a_file_that_breaks_keeps_its_dags_as_last_parsed_and_is_an_error(baseline: Estate) -> None:
    trace = "Traceback (most recent call last):\n  File x\nNameError: name 'x' is not defined"
    errors = [{"filename": "load_orders.py", "bundle_name": "orders", "stack_trace": trace}]
    # the bundle's only file no longer imports: no DAG at all, which is a change, not unusable input
    parsed = parsed_bundle(
        {"dags": [], "includes_stale": True, "import_errors": errors}, {}, {"assets": []}, state=STATE
    )
    after, change = judged(baseline, parsed)
    assert "load_orders" in {d.identity for d in after.dags()}  # kept as last parsed, as Airflow keeps it
    assert [(f.file, f.dags) for f in after.import_errors] == [("orders/load_orders.py", ("load_orders",))]
    opened = codes(change.opened)
    assert ("dag-import-error", "orders/load_orders.py") in opened
    assert ("asset-unproduced", "s3://lake/orders") in opened
    error = next(f for f in change.opened if f.code == "dag-import-error")
    assert "NameError: name 'x' is not defined" in (error.detail or "")
    assert "daily_revenue" in [a.dag for a in change.affected]


def test_a_file_that_stops_importing_keeps_the_assets_only_its_dags_named() -> None:
    """Issue 43 item 7: Airflow keeps a broken file's DAGs and their asset references, so it keeps
    the assets they alone named; the change opens its import error, not a dataset-removed for an
    asset the deployment still lists."""
    bundle = orders_bundle()
    bundle["dags"].append(dag("archive_orders", "orders", "archive.py", "ingest"))
    bundle["tasks"]["archive_orders"] = {"tasks": [{"task_id": "publish", "operator_name": "BashOperator"}]}
    bundle["assets"].append(asset("s3://lake/archive", ["archive_orders"], []))
    baseline = stored(estate_of(bundle, finance_bundle()))
    trace = "Traceback (most recent call last):\n  File x\nNameError: name 'x' is not defined"
    errors = [{"filename": "archive.py", "bundle_name": "orders", "stack_trace": trace}]
    parsed = estate_of(orders_bundle(), import_errors=errors)
    after, change = judged(baseline, parsed)
    assert codes(change.opened) == [("dag-import-error", "orders/archive.py")]
    assert "s3://lake/archive" in {a.identity for a in after.assets()}
    # the file's DAG's own edge goes with its import, as before: it runs nowhere
    assert [(e.dependent, e.depends_on) for e in change.lineage_removed] == [
        ("s3://lake/archive", "archive_orders")
    ]


def test_a_new_dag_takes_the_pause_a_new_dag_would_and_the_baseline_root() -> None:
    base = stored(estate_of(orders_bundle(), finance_bundle()))
    known = deployed(base, Target("orders"))
    assert known.root == f"{ROOT}/orders" and known.paused == {"load_orders": False} and known.known
    assert deployed(base, Target("nowhere")).known is False


def test_a_merged_baseline_replaces_one_deployments_bundle_only(baseline: Estate) -> None:
    merged = stored(
        merge(
            [
                Part("prod", estate_of(orders_bundle(), finance_bundle())),
                Part("staging", estate_of(orders_bundle())),
            ]
        )
    )
    bundle = orders_bundle()
    bundle["assets"] = []
    after, change = judged(merged, estate_of(bundle), Target("orders", "prod"))
    dags = {d.identity for d in after.dags()}
    assert dags == {"prod/load_orders", "prod/daily_revenue", "prod/board_report", "staging/load_orders"}
    # staging still produces the asset, so prod's consumers are not starved, but the edge is gone
    assert [(e.dependent, e.depends_on) for e in change.lineage_removed] == [
        ("s3://lake/orders", "prod/load_orders")
    ]
    assert ("asset-unproduced", "s3://lake/orders") not in codes(change.opened)
    unchanged, none = judged(merged, estate_of(orders_bundle()), Target("orders", "prod"))
    assert none.empty
    assert governed_fingerprint(unchanged.datasets, unchanged.lineage) == governed_fingerprint(
        merged.datasets, merged.lineage
    )


def test_sarif_points_the_findings_a_change_opens_at_the_line_defining_their_dag() -> None:
    finance = finance_bundle()
    finance["dags"][1]["description"] = None  # a finding the estate already has
    baseline = stored(estate_of(orders_bundle(), finance))
    bundle = orders_bundle()
    bundle["dags"].append(dag("orders_audit", "orders", "load_orders.py", "airflow"))  # no owner
    bundle["tasks"]["orders_audit"] = {"tasks": []}
    after, change = judged(baseline, estate_of(bundle))
    change = dataclasses.replace(change, lines={"orders_audit": 42, "load_orders": 7})
    document = build_document(after, audit(after, Baseline(None, baseline)))
    document["change"] = change_json(change)
    sarif = json.loads(render_sarif(document, tool_version="t", source_root="dags"))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    by_key = {(r["ruleId"], r["properties"]["subject"]): r for r in sarif["runs"][0]["results"]}
    opened = by_key[("dag-no-owner", "orders_audit")]
    assert opened["properties"]["change"] == "opened"
    region = opened["locations"][0]["physicalLocation"]
    assert region == {"artifactLocation": {"uri": "dags/orders/load_orders.py"}, "region": {"startLine": 42}}
    # a finding the estate already had stays at the file's first line, and is not marked
    assert ("dag-no-owner", "orders_audit") in codes(change.opened)
    kept = by_key[("dag-no-description", "board_report")]
    assert "change" not in kept["properties"]
    assert kept["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}


def test_compare_of_two_snapshots_shows_the_same_change_part(baseline: Estate) -> None:
    from airflow_provider_coremodels.core.comparing.compare import compare, comparison_json, read_side

    bundle = orders_bundle()
    bundle["assets"] = []
    after, change = judged(baseline, estate_of(bundle))
    then = encode(build_document(baseline, audit(baseline)))
    now = encode(build_document(after, audit(after, Baseline(None, baseline))))
    part = comparison_json(compare(read_side("old", "old.json", then), read_side("new", "new.json", now)))[
        "change"
    ]
    ours = change_json(change)
    for key in ("lineageAdded", "lineageRemoved", "dagsAdded", "dagsRemoved", "dagsChanged", "affected"):
        assert part[key] == ours[key], key
    assert [(f["code"], f["subject"]) for f in part["findingsOpened"]] == [
        (f["code"], f["subject"]) for f in ours["findingsOpened"]
    ]
    assert part["affected"] and part["baseline"] == load_document(then).fingerprint


def test_records_about_a_replaced_dag_or_its_tasks_go_with_it() -> None:
    from airflow_provider_coremodels.core.comparing.change import _about

    replaced = {"fanout", "team.load"}
    assert _about("fanout", replaced) and _about("fanout.kick_missing", replaced)
    assert _about("team.load.publish", replaced)  # a dag_id with a dot of its own
    assert not _about("fanout_v2.kick", replaced) and not _about("s3://lake/fanout", replaced)
    assert not _about(None, replaced)


def _with_sensor(*bundles: dict[str, Any]) -> Estate:
    """``estate_of``'s artifacts, with finance's board_report waiting on load_orders through a
    sensor task, and the sensor in the dependency graph as Airflow draws it."""
    dags = [d for b in bundles for d in b["dags"]]
    tasks = {k: copy.deepcopy(v) for b in bundles for k, v in b["tasks"].items()}
    sensor = {"task_id": "wait", "class_ref": {"class_name": "ExternalTaskSensor"}}
    tasks["board_report"]["tasks"].append(sensor)
    node = "sensor:load_orders:board_report:wait"
    graph = [
        {"source_id": "dag:load_orders", "target_id": node},
        {"source_id": node, "target_id": "dag:board_report"},
    ]
    # one entry per URI, as the API lists them: orders.parquet's consumer joins its producer's entry
    assets = [
        copy.deepcopy(a)
        for b in bundles
        for a in b["assets"]
        if not (a["uri"] == "s3://lake/orders" and not a["producing_tasks"])
    ]
    orders = next(a for a in assets if a["uri"] == "s3://lake/orders")
    orders["scheduled_dags"] = [{"dag_id": "daily_revenue"}]
    dags_doc = {"dags": dags, "includes_stale": True, "import_errors": []}
    return build_estate(dags_doc, tasks, {"assets": assets, "dependencies": {"edges": graph}})


def test_a_sensor_on_a_deleted_dag_is_external_as_a_capture_of_the_deployed_change_has_it() -> None:
    """The sensor belongs to the other bundle: its edge stays, and once the DAG it waits on is gone
    it is external (its far end is the DAG waited for, not the waiting one) and its task's
    dag-link-missing opens."""
    baseline = stored(_with_sensor(orders_bundle(), finance_bundle()))
    link = next(e for e in baseline.lineage if e.dag_link)
    assert (link.dependent, link.depends_on, link.via, link.external) == (
        "board_report",
        "load_orders",
        "sensor",
        False,
    )
    gone = parsed_bundle(
        {"dags": [], "includes_stale": True, "import_errors": []}, {}, {"assets": []}, state=STATE
    )
    after, change = judged(baseline, gone)
    kept = next(e for e in after.lineage if e.dag_link)
    assert (kept.dependent, kept.depends_on, kept.external) == ("board_report", "load_orders", True)
    assert ("dag-link-missing", "board_report.wait") in codes(change.opened)
    assert change.dags_removed == ("load_orders",)


def breaks_of(change: Any) -> list[tuple[str, str, str, str]]:
    return [(b.code, b.subject, b.dependent, b.through) for b in change.breaks]


def test_a_renamed_task_changes_its_dag_and_breaks_and_affects_nobody(baseline: Estate) -> None:
    """Issue 43 item 1: a harmless task rename opened field-removed and listed every consumer as
    affected. It changes its DAG, cuts no edge: no break, nobody downstream."""
    bundle = orders_bundle()
    bundle["tasks"]["load_orders"]["tasks"][0]["task_id"] = "publish_orders"
    bundle["assets"][0]["producing_tasks"][0]["task_id"] = "publish_orders"
    _, change = judged(baseline, estate_of(bundle))
    assert change.dags_changed == ("load_orders",)
    assert ("field-removed", "load_orders.publish") in codes(change.opened)
    assert (change.breaks, change.affected, change.lineage_removed) == ((), (), ())
    lines = change_lines(change_json(change))
    assert lines[1:3] == [
        "breaks: nothing (no other DAG loses an asset or a DAG it depends on)",
        "affects: no DAG downstream of a cut or changed edge",
    ]


def test_a_file_moved_to_another_folder_is_no_change(baseline: Estate) -> None:
    """Issue 43 item 6: a file moved, its DAGs as they were, changes no DAG and affects nobody."""
    bundle = orders_bundle()
    bundle["dags"][0] = {
        **bundle["dags"][0],
        "relative_fileloc": "ingest/load_orders.py",
        "fileloc": f"{ROOT}/orders/ingest/load_orders.py",
    }
    after, change = judged(baseline, estate_of(bundle))
    assert next(d for d in after.dags() if d.identity == "load_orders").physical_name.endswith(
        "ingest/load_orders.py"
    )
    assert change.empty and change.affected == () and change.breaks == ()


def test_a_file_that_stops_importing_breaks_its_consumers_once_by_its_error(baseline: Estate) -> None:
    """The import error and the asset it starves both say daily_revenue lost s3://lake/orders: one
    break, named by the most severe finding (the Error that is the cause)."""
    trace = "Traceback (most recent call last):\n  File x\nNameError: name 'x' is not defined"
    errors = [{"filename": "load_orders.py", "bundle_name": "orders", "stack_trace": trace}]
    parsed = parsed_bundle(
        {"dags": [], "includes_stale": True, "import_errors": errors}, {}, {"assets": []}, state=STATE
    )
    _, change = judged(baseline, parsed)
    assert ("asset-unproduced", "s3://lake/orders") in codes(change.opened)
    assert breaks_of(change) == [
        ("dag-import-error", "orders/load_orders.py", "daily_revenue", "s3://lake/orders")
    ]
    assert [(a.dag, a.cut) for a in change.affected] == [("board_report", True), ("daily_revenue", True)]


def test_a_sensor_on_a_deleted_dag_is_a_break_of_the_waiting_dag() -> None:
    baseline = stored(_with_sensor(orders_bundle(), finance_bundle()))
    gone = parsed_bundle(
        {"dags": [], "includes_stale": True, "import_errors": []}, {}, {"assets": []}, state=STATE
    )
    _, change = judged(baseline, gone)
    assert breaks_of(change) == [
        ("asset-unproduced", "s3://lake/orders", "daily_revenue", "s3://lake/orders"),
        ("dag-link-missing", "board_report.wait", "board_report", "load_orders"),
    ]


def test_what_a_deleted_dag_opens_points_at_the_references_that_still_name_it() -> None:
    """Contract 10.2: the consumer's reference for an asset or DAG the change removed. With the
    parse's records of the waiting and consuming DAGs' files, the sensor that waits on the deleted
    DAG, and the schedule on the asset it made, are where SARIF points; a DAG no line names any
    more is its deleted file, as a whole."""
    baseline = stored(_with_sensor(orders_bundle(), finance_bundle()))
    gone = parsed_bundle(
        {"dags": [], "includes_stale": True, "import_errors": []}, {}, {"assets": []}, state=STATE
    )
    after, change = judged(baseline, gone)
    declared = {
        "board_report": {"line": 3, "sensors": {"load_orders": 9}, "tasks": {"wait": 8, "send": 11}},
        "daily_revenue": {"line": 4, "schedule": {"s3://lake/orders": 6}},
    }
    located = locate(change.opened, baseline, after, declared=declared, error_lines={})
    by_key = {(x.code, x.subject): x.at for x in located}
    sensor = Spot("report.py", "finance", 9, "sensor", "board_report")
    assert by_key[("dag-link-missing", "board_report.wait")] == (sensor,)
    assert by_key[("dataset-removed", "load_orders")] == (sensor,)
    assert by_key[("asset-unproduced", "s3://lake/orders")] == (
        Spot("revenue.py", "finance", 6, "schedule", "daily_revenue"),
    )
    change = dataclasses.replace(change, locations=located)
    document = build_document(after, audit(after, Baseline(None, baseline)))
    document["change"] = change_json(change)
    sarif = json.loads(render_sarif(document, tool_version="t", source_root={"finance": "fin"}))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    results = {(r["ruleId"], r["properties"]["subject"]): r for r in sarif["runs"][0]["results"]}
    assert results[("dataset-removed", "load_orders")]["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": "fin/report.py"}, "region": {"startLine": 9}}}
    ]


def test_a_removed_dag_no_line_names_is_its_deleted_file_as_a_whole(baseline: Estate) -> None:
    """A finding with no line in the work tree names the file the diff deleted (the baseline knows
    its path in the bundle), with no region: never a logical location alone, which code scanning
    refuses to upload."""
    gone = parsed_bundle(
        {"dags": [], "includes_stale": True, "import_errors": []}, {}, {"assets": []}, state=STATE
    )
    after, change = judged(baseline, gone)
    located = locate(change.opened, baseline, after, declared={}, error_lines={})
    removed = next(x for x in located if (x.code, x.subject) == ("dataset-removed", "load_orders"))
    assert removed.at == (Spot("load_orders.py", "orders", None, "file", "load_orders"),)
    document = build_document(after, audit(after, Baseline(None, baseline)))
    document["change"] = change_json(dataclasses.replace(change, locations=located))
    sarif = json.loads(render_sarif(document, tool_version="t", source_root={"orders": "orders/dags"}))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    result = next(r for r in sarif["runs"][0]["results"] if r["properties"]["subject"] == "load_orders")
    assert result["properties"]["change"] == "opened"
    assert result["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": "orders/dags/load_orders.py"}}}
    ]


def test_a_waived_finding_or_a_paused_consumer_breaks_nothing() -> None:
    """Waivers apply to breaks (a waived finding breaks nothing), and an asset left unproduced breaks
    only its active consumers; teams name the broken DAG's team."""
    from airflow_provider_coremodels.core.checks.policy import parse_rules
    from airflow_provider_coremodels.core.checks.waivers import parse_waivers

    bundle = orders_bundle()
    bundle["assets"] = []
    finance = finance_bundle()
    finance["dags"].append(dag("orders_archive", "finance", "archive.py", "archive", paused=True))
    finance["tasks"]["orders_archive"] = {"tasks": []}
    finance["assets"][0]["scheduled_dags"].append({"dag_id": "orders_archive"})
    base = stored(estate_of(orders_bundle(), finance))
    after = splice(base, estate_of(bundle), Target("orders"))
    teams = parse_rules("rules: []\nteams: {money: {owners: [finance]}}\n").teams

    def change_with(waivers: Any) -> Any:
        then, now = audit(base, waivers=waivers).findings, audit(after, Baseline(None, base), waivers=waivers)
        return describe(base, after, then, now.findings, teams=teams)

    change = change_with(())
    assert [(b.dependent, b.team) for b in change.breaks] == [
        ("daily_revenue", "money")
    ]  # not the paused one
    waived = parse_waivers('[{"code": "asset-unproduced", "subject": "s3://lake/*", "reason": "moving"}]')
    assert change_with(waived).breaks == ()
