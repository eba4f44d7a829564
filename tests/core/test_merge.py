"""Merging the snapshots of several deployments: one estate joined on asset URIs."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

import pytest
from support.helpers import as_served

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.errors import UsageError

ORDERS = "s3://lake/orders"


def dag(dag_id: str, *, paused: bool = False, schedule: str | None = "0 5 * * *") -> dict:
    return {"dag_id": dag_id, "description": dag_id, "owners": ["team"], "is_paused": paused,
            "timetable_summary": schedule, "fileloc": f"/dags/{dag_id}.py"}  # fmt: skip


def part(name: str, dags: list[dict], assets: list[dict], *, stale: str | None = None, **dags_doc) -> Part:
    """A deployment's stored snapshot, as merge reads it: built, encoded, read back."""
    served_dags, served_assets = as_served({"dags": dags, **dags_doc}, {"assets": assets})
    estate = parse_artifacts(
        json.dumps(served_dags),
        json.dumps({d["dag_id"]: [{"task_id": "run", "operator_name": "BashOperator"}] for d in dags}),
        json.dumps(served_assets),
    )
    stored = load_document(json.dumps(build_document(estate, audit(estate)))).estate
    assert stored is not None
    return Part(name, stored, stale)


def producer(dag_id: str, uri: str = ORDERS) -> dict:
    return {"uri": uri, "producing_tasks": [{"dag_id": dag_id, "task_id": "run"}]}


def consumer(dag_id: str, uri: str = ORDERS) -> dict:
    return {"uri": uri, "scheduled_dags": [{"dag_id": dag_id}]}


@pytest.fixture
def two() -> list[Part]:
    """etl produces the orders, paused; analytics consumes them, active."""
    return [
        part("etl", [dag("load_orders", paused=True)], [producer("load_orders")]),
        part("analytics", [dag("daily_revenue", schedule="Asset")], [consumer("daily_revenue")]),
    ]


def findings(estate) -> list[tuple[str, str, str | None]]:
    return [(f.code, f.subject, f.detail) for f in audit(estate).findings]


def test_alone_each_deployment_misses_the_other_side(two: list[Part]) -> None:
    assert findings(two[1].estate) == [("asset-unproduced", ORDERS, "consumers: daily_revenue")]
    assert findings(two[0].estate) == []


def test_merged_the_asset_is_produced_and_the_paused_producer_starves_the_other_deployment(two) -> None:
    merged = merge(two)
    assert findings(merged) == [
        ("paused-producer", ORDERS, "producers: etl/load_orders; active consumers: analytics/daily_revenue")
    ]
    document = build_document(merged, audit(merged))
    by_id = {d["identity"]: d for d in document["datasets"]}
    assert sorted(by_id) == ["analytics/daily_revenue", "etl/load_orders", ORDERS]
    assert by_id["etl/load_orders"]["mapsTo"]["uri"] == "load_orders"
    assert by_id["etl/load_orders"]["metadata"]["airflow.deployment"] == "etl"
    assert (
        by_id["analytics/daily_revenue.run" if False else "analytics/daily_revenue"]["fields"][0]["name"]
        == "run"
    )
    assert document["lineage"] == [
        {"dependent": "analytics/daily_revenue", "dependentKind": "dag", "dependsOn": ORDERS,
         "dependsOnKind": "asset", "external": False, "crossDeployment": True},
        {"dependent": ORDERS, "dependentKind": "asset", "dependsOn": "etl/load_orders",
         "dependsOnKind": "dag", "external": False, "crossDeployment": True},
    ]  # fmt: skip
    assert document["state"]["deployments"] == ["analytics", "etl"]


def test_the_same_dag_id_in_two_deployments_is_two_dags() -> None:
    merged = merge(
        [
            part("prod", [dag("ingest")], [producer("ingest", "s3://prod/x")]),
            part("staging", [dag("ingest")], [producer("ingest", "s3://staging/x")]),
        ]
    )
    assert [d.identity for d in merged.dags()] == ["prod/ingest", "staging/ingest"]
    assert all(not edge.cross_deployment for edge in merged.lineage)


def test_a_merged_document_reads_back_and_reaudits_to_the_same_answer(two) -> None:
    merged = merge(two)
    document = build_document(merged, audit(merged))
    stored = load_document(json.dumps(document))
    assert stored.estate is not None
    assert [r for r in stored.estate.lossiness if r.artifact == "snapshot"] == []  # its fingerprint holds
    again = build_document(stored.estate, audit(stored.estate))
    assert (again["fingerprint"], again["findings"], again["lineage"]) == (
        document["fingerprint"],
        document["findings"],
        document["lineage"],
    )


def test_drift_works_on_merged_documents(two) -> None:
    before = build_document(merge(two), audit(merge(two)))
    baseline = load_document(json.dumps(before)).as_baseline()
    gone = [two[0], part("analytics", [dag("other", schedule="Asset")], [consumer("other")])]
    codes = [(f.code, f.subject) for f in audit(merge(gone), baseline).findings if f.section == "Drift"]
    assert codes == [("dataset-removed", "analytics/daily_revenue")]


def test_a_stale_part_is_kept_and_named_with_its_age(two) -> None:
    old = part("etl", [dag("load_orders", paused=True)], [producer("load_orders")],
               captured_at="2026-11-30T06:00:00Z", stale="the capture failed")  # fmt: skip
    fresh = part("analytics", [dag("daily_revenue", schedule="Asset")], [consumer("daily_revenue")],
                 captured_at="2026-12-01T06:00:00Z")  # fmt: skip
    merged = merge([old, fresh])
    assert [d.identity for d in merged.dags()] == ["analytics/daily_revenue", "etl/load_orders"]
    [record] = [r for r in merged.lossiness if r.artifact == "snapshot"]
    assert record.subject == "etl"
    assert record.message == (
        "deployment etl: the capture failed; its last good snapshot (from 2026-11-30T06:00:00Z, "
        "24 hours old) stands in for it"
    )
    assert merged.state.captured_at == "2026-12-01T06:00:00Z"


def test_each_deployments_lossiness_says_whose_it_is() -> None:
    merged = merge([part("etl", [dag("a")], []), part("bi", [dag("b")], [])])
    assert all(r.message.startswith(("deployment bi: ", "deployment etl: ")) for r in merged.lossiness)


def test_freshness_facts_merge_with_their_dags_renamed() -> None:
    stale = {**producer("load"), "created_at": "2026-10-01T00:00:00Z",
             "last_asset_event": {"id": 1, "timestamp": "2026-11-20T00:00:00Z"}}  # fmt: skip
    merged = merge(
        [
            part(
                "etl", [dag("load")], [stale], failed_latest_run=["load"], captured_at="2026-12-01T06:00:00Z"
            ),
            part("bi", [dag("report", schedule="Asset")], [consumer("report")]),
        ]
    )
    assert merged.freshness.failed_latest_run == {"etl/load"}
    codes = [(f.code, f.detail) for f in audit(merged).findings if f.section == "Freshness"]
    assert [code for code, _ in codes] == ["asset-stale", "producer-failing"]
    assert codes[1][1] == "producers: etl/load; active consumers: bi/report"


@pytest.mark.parametrize(
    ("names", "says"),
    [
        pytest.param(["etl", "etl"], "deployment etl is given twice", id="twice"),
        pytest.param(["a/b"], "deployment name 'a/b' cannot be merged", id="slash"),
        pytest.param([""], "deployment name '' cannot be merged", id="empty"),
    ],
)
def test_names_that_cannot_tell_deployments_apart_are_refused(names: list[str], says: str) -> None:
    with pytest.raises(UsageError, match=says):
        merge([part(name, [dag("x")], []) for name in names])


def test_the_views_show_the_deployments_and_the_edges_between_them(two) -> None:
    from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_dot, to_mermaid, to_svg
    from airflow_provider_coremodels.core.views.markdown import render_markdown
    from airflow_provider_coremodels.core.views.render import render_table

    old = dataclasses.replace(two[0], stale="its export did not succeed in this run")
    merged = merge([old, two[1]])
    document = build_document(merged, audit(merged))
    joined = f"1 asset across them: {ORDERS} (produced in etl, read in analytics)"
    line = f"deployments: 2 merged (analytics, etl); {joined}; stale: etl"
    assert line in render_table(document).splitlines()
    inert = joined.replace(ORDERS, f"`{ORDERS}`")  # the report makes a URI inline code: no autolink
    assert f"Deployments: 2 merged (analytics, etl); {inert}; stale: etl." in render_markdown(document)
    graph = LineageGraph.from_document(document)
    assert graph.summary().endswith("2 edges (2 across deployments)")
    assert "==>" in to_mermaid(graph) and "-->" not in to_mermaid(graph)
    assert to_dot(graph).count('penwidth=2.5, color="#8250df"') == 2
    # Each deployment's DAGs are grouped in a box of their own; the asset joining them is outside.
    mermaid = to_mermaid(graph).splitlines()
    box = mermaid.index('  subgraph d1["deployment analytics"]')
    assert mermaid[box + 1].endswith('["analytics/daily_revenue"]') and mermaid[box + 2] == "  end"
    assert any(line.startswith('  subgraph d2["deployment etl"]') for line in mermaid)
    assert any(line.startswith("  n") and f'[("{ORDERS}' in line for line in mermaid)  # outside the boxes
    dot = to_dot(graph)
    etl = dot.index('label="deployment etl"')
    assert dot.index('"dag:etl/load_orders" [') > etl > dot.index('label="deployment analytics"')
    assert dot.count("subgraph cluster_") == 2 and dot.index(f'"asset:{ORDERS}" [') < etl
    assert to_svg(graph).count('class="edge cross"') == 2
    around = graph.neighbourhood("analytics/daily_revenue", 2)  # --around works across deployments
    assert {node.id for node in around.nodes} == {"analytics/daily_revenue", ORDERS, "etl/load_orders"}


def test_one_deployments_document_says_nothing_of_deployments() -> None:
    from airflow_provider_coremodels.core.views.render import render_table

    single = part("etl", [dag("a")], [producer("a")])
    document = build_document(single.estate, audit(single.estate))
    assert not any(line.startswith("deployments:") for line in render_table(document).splitlines())


def test_every_asset_joining_deployments_says_who_produces_and_who_reads_it() -> None:
    """A claim from another deployment is visible as such: the joining asset names the deployments
    of its producers and consumers, and the views' deployments line repeats it."""
    from airflow_provider_coremodels.core.views.render import deployments_line

    merged = merge(
        [part("etl", [dag("load")], [producer("load")]), part("bi", [dag("report")], [consumer("report")])]
    )
    asset = next(d for d in merged.datasets if d.identity == ORDERS)
    assert (asset.metadata["airflow.producedIn"], asset.metadata["airflow.consumedIn"]) == ("etl", "bi")
    line = deployments_line(build_document(merged, audit(merged)))
    assert (
        line
        == f"deployments: 2 merged (bi, etl); 1 asset across them: {ORDERS} (produced in etl, read in bi)"
    )


def test_a_parts_times_are_never_later_than_the_merges_clock() -> None:
    """A part dated in 9999 (its capture, its assets' updates) moves neither the merged capture time
    nor another deployment's asset updates there; each clamp is a record."""
    clock = datetime(2026, 12, 1, 6, 0, tzinfo=timezone.utc)
    updated = {"last_asset_event": {"id": 1, "timestamp": "2026-11-20T00:00:00Z"}}
    honest = part("etl", [dag("load")], [{**producer("load"), **updated}], captured_at="2026-12-01T05:00:00Z")
    claim = {"uri": ORDERS, "last_asset_event": {"id": 2, "timestamp": "9999-12-31T00:00:00Z"}}
    liar = part("evil", [dag("x")], [claim], captured_at="9999-12-31T23:59:59Z")
    merged = merge([honest, liar], clock=clock)
    assert merged.state.captured_at == "2026-12-01T06:00:00Z"
    assert merged.freshness.asset_updates is not None
    assert merged.freshness.asset_updates[ORDERS] <= "2026-12-01T06:00:00Z"
    said = [r.message for r in merged.lossiness]
    assert any("captured at 9999-12-31T23:59:59Z, after the merge's clock" in m for m in said)
    assert any("dated after its capture" in m for m in said)


CLOCK = datetime(2026, 12, 1, 6, 0, tzinfo=timezone.utc)
EVIL_TIMES = "deployment evil: 1 asset time dated after"


def _orders_at(when: str) -> dict:
    return {"uri": ORDERS, "last_asset_event": {"id": 2, "timestamp": when}}


@pytest.mark.parametrize(
    ("claim", "captured", "records"),
    [
        pytest.param("2026-12-01T05:30:00Z", "2026-12-01T05:30:00Z", [], id="at-its-capture"),
        pytest.param(
            "9999-12-31T00:00:00Z",
            "2026-12-01T05:30:00Z",
            [f"{EVIL_TIMES} its capture (2026-12-01T05:30:00Z) taken as at its capture"],
            id="after-its-capture",
        ),
        pytest.param(
            "9999-12-31T00:00:00Z",
            "9999-12-31T23:59:59Z",
            [
                f"{EVIL_TIMES} its capture (2026-12-01T06:00:00Z) taken as at its capture",
                "deployment evil: its snapshot says it was captured at 9999-12-31T23:59:59Z, "
                "after the merge's clock (2026-12-01T06:00:00Z): taken as captured then",
            ],
            id="after-the-clock",
        ),
        pytest.param(
            "9999-12-31T00:00:00Z",
            None,
            [f"{EVIL_TIMES} the merge's clock (2026-12-01T06:00:00Z) taken as at the merge's clock"],
            id="no-capture-time",
        ),
    ],
)
def test_a_part_that_claims_an_update_still_silences_another_deployments_stale_asset(
    claim: str, captured: str | None, records: list[str]
) -> None:
    """What docs/federation.md says a merge does not prevent: a part that merely lists another
    deployment's asset (no DAG of its own touches it) with an update no later than its own capture
    (or later, clamped to it) makes that asset's last update its own claim, and ``asset-stale``
    goes. A claim within its capture is taken at its word, without a record; only a later one is
    clamped, with one. What is prevented: neither the judging time (the newest capture) nor the
    claimed update is ever later than the merge's clock, even from a part with no capture time."""
    stale = {**producer("load"), "last_asset_event": {"id": 1, "timestamp": "2026-11-20T00:00:00Z"}}
    etl = part(
        "etl",
        [dag("load"), dag("report", schedule="Asset")],
        [{**stale, "scheduled_dags": [{"dag_id": "report"}]}],
        failed_latest_run=[],
        captured_at="2026-12-01T05:00:00Z",
    )
    alone = merge([etl], clock=CLOCK)
    assert [f.code for f in audit(alone).findings if f.section == "Freshness"] == ["asset-stale"]

    evil = part("evil", [dag("x")], [_orders_at(claim)], captured_at=captured)
    merged = merge([etl, evil], clock=CLOCK)
    assert [f.code for f in audit(merged).findings if f.section == "Freshness"] == []
    assert merged.freshness.asset_updates is not None
    bounded = min(captured or "9999", "2026-12-01T06:00:00Z")
    assert merged.freshness.asset_updates[ORDERS] == bounded
    assert merged.state.captured_at == (bounded if captured else "2026-12-01T05:00:00Z")
    said = sorted(r.message for r in merged.lossiness if r.artifact == "snapshot")
    assert said == records  # nothing else says evil claimed it
    asset = next(d for d in merged.datasets if d.identity == ORDERS)
    assert "airflow.producedIn" not in asset.metadata  # evil declares no edge: nothing names it on the asset
