"""Links between DAGs beyond assets: triggers and sensors read from a hand-written dependency graph.

The graphs are written as Airflow 3.0 draws them (``GET /ui/dependencies``: a node
``trigger:<triggering dag>:<triggered dag>:<task_id>`` or ``sensor:<dag waited for>:<waiting
dag>:<task_id>`` between two DAG nodes), with the target exactly as the code wrote it: a static
DAG id, a template, a DAG the estate does not have, a paused DAG.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_coremodels.core import audit, build_document, build_estate, load_document
from airflow_provider_coremodels.core.estate.model import DAG_LINKS_KEY, OWNER_LINKS_KEY
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_dot, to_mermaid, to_svg
from airflow_provider_coremodels.core.views.render import summary_line

ORDERS = "s3://lake/orders"


def dag(dag_id: str, *, paused: bool = False, **extra: Any) -> dict:
    return {"dag_id": dag_id, "description": dag_id, "owners": ["team"], "is_paused": paused,
            "timetable_summary": "0 5 * * *", "fileloc": f"/dags/{dag_id}.py", **extra}  # fmt: skip


def trigger(source: str, target: str, task: str) -> list[dict]:
    node = f"trigger:{source}:{target}:{task}"
    end = target if ":" in target else f"dag:{target}"
    return [{"source_id": f"dag:{source}", "target_id": node}, {"source_id": node, "target_id": end}]


def sensor(waited: str, waiting: str, task: str) -> list[dict]:
    node = f"sensor:{waited}:{waiting}:{task}"
    start = waited if ":" in waited else f"dag:{waited}"
    return [{"source_id": start, "target_id": node}, {"source_id": node, "target_id": f"dag:{waiting}"}]


def estate_of(dags: list[dict], tasks: dict[str, list[tuple[str, str]]], graph: list[dict] | None, **kw: Any):
    datasets: dict[str, Any] = {"assets": []}
    if graph is not None:
        datasets["dependencies"] = {"edges": graph}
    tasks_doc = {
        dag_id: [{"task_id": t, "class_ref": {"class_name": cls}} for t, cls in found]
        for dag_id, found in tasks.items()
    }
    return build_estate(
        {"dags": dags, "import_errors": [], "includes_stale": True}, tasks_doc, datasets, **kw
    )


def links(estate) -> list[tuple[str, str, str | None, bool]]:
    return [(e.dependent, e.depends_on, e.via, e.external) for e in estate.lineage if e.dag_link]


def findings(estate) -> list[tuple[str, str, str | None]]:
    return [(f.code, f.subject, f.detail) for f in audit(estate).findings if f.code.startswith("dag-link")]


TRIGGER = "TriggerDagRunOperator"
SENSOR = "ExternalTaskSensor"


@pytest.fixture
def estate():
    """load_orders triggers orders_reconcile (static); finance_month_end waits on revalue_ledger;
    fanout triggers a template and a DAG that does not exist; nightly_audit (active) waits on
    archive_ledger (paused)."""
    dags = [dag(d) for d in ("load_orders", "orders_reconcile", "revalue_ledger", "finance_month_end",
                              "fanout", "nightly_audit")]  # fmt: skip
    dags.append(dag("archive_ledger", paused=True))
    tasks = {
        "load_orders": [("kick_reconcile", TRIGGER)],
        "finance_month_end": [("wait_revalued", SENSOR)],
        "fanout": [("kick_templated", TRIGGER), ("kick_missing", TRIGGER)],
        "nightly_audit": [("wait_archive", SENSOR)],
    }
    graph = [
        *trigger("load_orders", "orders_reconcile", "kick_reconcile"),
        *sensor("revalue_ledger", "finance_month_end", "wait_revalued"),
        *trigger("fanout", "{{ params.target }}", "kick_templated"),
        *trigger("fanout", "no_such_dag", "kick_missing"),
        *sensor("archive_ledger", "nightly_audit", "wait_archive"),
    ]
    return estate_of(dags, tasks, graph)


def test_a_known_target_is_an_edge_between_two_dags(estate) -> None:
    """The triggered DAG depends on the triggering one; the waiting DAG on the one it waits for;
    a DAG the estate does not have is an external end."""
    assert links(estate) == [
        ("finance_month_end", "revalue_ledger", "sensor", False),
        ("nightly_audit", "archive_ledger", "sensor", False),
        ("no_such_dag", "fanout", "trigger", True),
        ("orders_reconcile", "load_orders", "trigger", False),
    ]
    document = build_document(estate, audit(estate))
    assert {
        "dependent": "orders_reconcile", "dependentKind": "dag", "dependsOn": "load_orders",
        "dependsOnKind": "dag", "external": False, "via": "trigger",
    } in document["lineage"]  # fmt: skip
    assert document["state"]["counts"]["lineageEdgesSkipped"] == 1
    dags = {d.identity: d for d in estate.dags()}
    assert json.loads(dags["load_orders"].metadata[DAG_LINKS_KEY]) == [
        {"dag": "orders_reconcile", "task": "kick_reconcile", "via": "trigger"}
    ]
    assert DAG_LINKS_KEY not in dags["orders_reconcile"].metadata


def test_a_templated_target_is_one_record_naming_the_task(estate) -> None:
    records = [r for r in estate.lossiness if r.subject == "fanout.kick_templated"]
    assert len(records) == 1
    assert "names its DAG by a template" in records[0].message
    assert "'{{ params.target }}'" in records[0].message
    assert [r for r in estate.lossiness if r.subject and r.subject.startswith("fanout.kick_missing")] == []


def test_missing_and_paused_targets_are_findings(estate) -> None:
    assert findings(estate) == [
        (
            "dag-link-missing",
            "fanout.kick_missing",
            "triggers DAG no_such_dag, which the estate does not have",
        ),
        ("dag-link-paused", "nightly_audit.wait_archive", "waits on DAG archive_ledger, which is paused"),
    ]


def test_a_paused_dag_linking_to_a_paused_dag_is_no_finding() -> None:
    estate = estate_of(
        [dag("a", paused=True), dag("b", paused=True)], {"a": [("kick", TRIGGER)]}, trigger("a", "b", "kick")
    )
    assert links(estate) == [("b", "a", "trigger", False)]
    assert findings(estate) == []


def test_a_trigger_the_graph_does_not_show_is_one_record() -> None:
    """Airflow 3.3 leaves a trigger of a DAG the user may not read (one that does not exist) out of
    the graph, and a mapped target is never in it: the task is named, no edge is invented."""
    estate = estate_of([dag("a"), dag("b")], {"a": [("kick", TRIGGER), ("run", "BashOperator")]}, [])
    assert links(estate) == []
    records = [r for r in estate.lossiness if r.subject == "a.kick"]
    assert len(records) == 1 and "the dependency graph does not show it" in records[0].message
    assert [r for r in estate.lossiness if r.subject == "a.run"] == []


def test_without_a_graph_each_link_task_is_one_record() -> None:
    estate = estate_of([dag("a")], {"a": [("wait", SENSOR)]}, None)
    records = [r for r in estate.lossiness if r.subject == "a.wait"]
    assert len(records) == 1 and "no dependency graph was read" in records[0].message


def test_the_asset_check_ignores_link_nodes() -> None:
    """A sensor's node leads into a DAG node and a trigger's out of one: neither is an outlet or a
    schedule, so neither DAG counts as declaring an asset (which would confirm its task inlets)."""
    from airflow_provider_coremodels.core.reading.references import read_graph, reduce_graph

    graph = [*sensor("a", "b", "wait"), *trigger("c", "d", "kick")]
    assert reduce_graph({"edges": graph, "nodes": []}) == {"edges": graph}  # the capture keeps them
    declared = read_graph({"dependencies": {"edges": graph}})
    assert declared is not None and declared.dags_with_assets == set()


def test_a_sensor_and_a_trigger_of_one_pair_are_one_edge() -> None:
    estate = estate_of(
        [dag("a"), dag("b")],
        {"a": [("kick", TRIGGER)], "b": [("wait", SENSOR)]},
        [*trigger("a", "b", "kick"), *sensor("a", "b", "wait")],
    )
    assert len(links(estate)) == 1
    assert findings(estate) == []


def test_a_stored_document_reads_back_with_its_links_and_findings(estate) -> None:
    document = build_document(estate, audit(estate))
    stored = load_document(json.dumps(document))
    assert stored.estate is not None
    again = build_document(stored.estate, audit(stored.estate))
    assert (again["fingerprint"], again["lineage"], again["findings"]) == (
        document["fingerprint"],
        document["lineage"],
        document["findings"],
    )


def test_an_edge_joining_two_dags_without_a_link_via_is_refused() -> None:
    from airflow_provider_coremodels.errors import SnapshotDocumentError

    estate = estate_of([dag("a"), dag("b")], {"a": [("kick", TRIGGER)]}, trigger("a", "b", "kick"))
    document = build_document(estate, audit(estate))
    for edge in document["lineage"]:
        edge["via"] = "ref"
    with pytest.raises(SnapshotDocumentError, match="two DAGs"):
        load_document(json.dumps(document))


def test_lineage_views_draw_links_in_a_style_of_their_own(estate) -> None:
    document = build_document(estate, audit(estate))
    graph = LineageGraph.from_document(document)
    mermaid = to_mermaid(graph)
    assert "|trigger|" in mermaid and "|sensor|" in mermaid
    assert "linkStyle" in mermaid and "stroke-dasharray:6 3" in mermaid
    dot = to_dot(graph)
    assert 'style="bold", color="#bf8700", label="trigger"' in dot
    assert 'style="bold,dashed", color="#bf8700", label="sensor"' in dot
    svg = to_svg(graph)
    assert 'class="edge trigger"' in svg and 'class="edge sensor"' in svg
    assert "trigger or sensor link" in graph.summary()
    around = graph.neighbourhood("load_orders", 1)
    assert {node.id for node in around.nodes} == {"load_orders", "orders_reconcile"}
    assert "between DAGs" in summary_line(document)


def test_lineage_drift_names_a_link(estate) -> None:
    from airflow_provider_coremodels.core.checks.audit import Baseline

    before = estate_of(
        [dag("load_orders"), dag("orders_reconcile")],
        {"load_orders": [("kick_reconcile", "BashOperator")]},
        [],
    )
    after = estate_of(
        [dag("load_orders"), dag("orders_reconcile")],
        {"load_orders": [("kick_reconcile", TRIGGER)]},
        trigger("load_orders", "orders_reconcile", "kick_reconcile"),
    )
    added = [
        (f.subject, f.detail)
        for f in audit(after, Baseline("x", before)).findings
        if f.code == "lineage-added"
    ]
    assert added == [("load_orders -> orders_reconcile", "DAG load_orders triggers DAG orders_reconcile")]


def test_merge_renames_both_ends_and_keeps_the_findings(estate) -> None:
    stored = load_document(json.dumps(build_document(estate, audit(estate)))).estate
    other = estate_of([dag("x")], {}, [])
    merged = merge([Part("etl", stored), Part("bi", other)])
    assert ("etl/orders_reconcile", "etl/load_orders", "trigger", False) in links(merged)
    assert ("etl/no_such_dag", "etl/fanout", "trigger", True) in links(merged)
    assert not any(e.cross_deployment for e in merged.lineage if e.dag_link)
    assert findings(merged) == [
        (
            "dag-link-missing",
            "etl/fanout.kick_missing",
            "triggers DAG no_such_dag, which the estate does not have",
        ),
        ("dag-link-paused", "etl/nightly_audit.wait_archive", "waits on DAG archive_ledger, which is paused"),
    ]


def test_owner_links_are_carried_scrubbed_and_canonical() -> None:
    estate = estate_of(
        [
            dag("a", owner_links={"team": "https://wiki/team\x1b[31m", "ops": "mailto:ops@example.com"}),
            dag("b"),
        ],
        {},
        [],
    )
    dags = {d.identity: d for d in estate.dags()}
    assert dags["a"].metadata[OWNER_LINKS_KEY] == (
        '{"ops":"mailto:ops@example.com","team":"https://wiki/team\\\\x1b[31m"}'
    )
    assert OWNER_LINKS_KEY not in dags["b"].metadata


def test_a_change_reaches_the_dags_a_link_leads_to_with_their_owner_links() -> None:
    """The change's affected DAGs follow triggers as they follow assets, each with how to reach its
    owners where the capture read them (the pull request's report shows both)."""
    from airflow_provider_coremodels.core.comparing.change import change_json, describe
    from airflow_provider_coremodels.core.reading.owner_links import owners_of
    from airflow_provider_coremodels.core.views.render import change_lines

    links_of = {"team": "https://wiki.example.com/team"}
    dags = [dag("load_orders"), dag("orders_reconcile", owner_links=links_of)]
    before = estate_of(dags, {"load_orders": [("kick", "BashOperator")]}, [])
    after = estate_of(
        dags, {"load_orders": [("kick", TRIGGER)]}, trigger("load_orders", "orders_reconcile", "kick")
    )
    change = describe(before, after, audit(before).findings, audit(after).findings, bundle="b")
    part = change_json(change)
    assert part["affected"] == [
        {
            "dag": "orders_reconcile",
            "owners": ["team"],
            "through": "load_orders",
            "cut": False,  # a trigger added cuts nothing
            "ownerLinks": links_of,
        }
    ]
    assert part["breaks"] == []
    assert (
        "orders_reconcile (team <https://wiki.example.com/team>) through load_orders" in change_lines(part)[2]
    )
    document = build_document(after, audit(after))
    assert owners_of(document, ["orders_reconcile", "load_orders", "nowhere"]) == {
        "load_orders": {"owners": ["team"]},
        "orders_reconcile": {"owners": ["team"], "ownerLinks": links_of},
    }


def test_a_new_trigger_to_a_dag_that_does_not_exist_breaks_the_dag_making_it() -> None:
    """Section 10.2: a new trigger or sensor to a DAG the estate does not have is a break, of the DAG
    whose task makes it (the one DAG the change touches that it breaks), through the missing DAG;
    the same trigger to a DAG that exists breaks nothing."""
    from airflow_provider_coremodels.core.comparing.change import change_json, describe

    dags = [dag("load_orders"), dag("orders_reconcile")]
    before = estate_of(dags, {"load_orders": [("kick", "BashOperator")]}, [])
    for target, breaks in (
        ("orders_reconcle", [("load_orders.kick", "load_orders", "orders_reconcle")]),
        ("orders_reconcile", []),
    ):
        after = estate_of(dags, {"load_orders": [("kick", TRIGGER)]}, trigger("load_orders", target, "kick"))
        part = change_json(describe(before, after, audit(before).findings, audit(after).findings))
        assert [(b["finding"]["subject"], b["dependent"], b["through"]) for b in part["breaks"]] == breaks
        assert all(b["finding"]["code"] == "dag-link-missing" for b in part["breaks"])


def test_a_sensor_on_its_own_dag_is_no_link() -> None:
    """Waiting on the DAG's own earlier run (``external_dag_id`` its own id) joins no two DAGs: no
    edge, no record, nothing for the picture to loop on."""
    estate = estate_of([dag("a")], {"a": [("wait_yesterday", SENSOR)]}, sensor("a", "a", "wait_yesterday"))
    assert links(estate) == []
    assert [r for r in estate.lossiness if r.subject == "a.wait_yesterday"] == []
    assert DAG_LINKS_KEY not in estate.dags()[0].metadata


def test_the_report_counts_and_draws_the_links(estate) -> None:
    from airflow_provider_coremodels.core.views.markdown import render_markdown

    document = build_document(estate, audit(estate))
    report = render_markdown(document)
    assert "(1 external, 4 between DAGs (trigger or sensor))" in report
    assert "linkStyle" in report  # the diagram draws them in their style
