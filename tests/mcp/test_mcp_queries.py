"""The questions behind the MCP tools (``integrations/assistant/``), asked directly: no SDK, no subprocess."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from support.helpers import artifact_paths, as_served, document_for, recorded_document

from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_mermaid
from airflow_provider_coremodels.errors import SnapshotDocumentError
from airflow_provider_coremodels.integrations.assistant import MAX_LIMIT, QueryError, SnapshotQueries, page


def queries(document: dict[str, Any], **kwargs: Any) -> SnapshotQueries:
    return SnapshotQueries(encode(document), source="snapshot.json", **kwargs)


def chain_document() -> dict[str, Any]:
    """A (paused) feeds x; B reads x and feeds y; C reads y; D, active and independent, also feeds y;
    E, elsewhere (an external DAG), feeds z, which B reads; "orders" is both a DAG and an asset; lone
    has no asset lineage at all."""
    dags = [
        {"dag_id": dag_id, "is_paused": dag_id == "A", "owners": ["team"], "description": "d"}
        for dag_id in ("A", "B", "C", "D", "lone", "orders")
    ]
    tasks = {"B": {"tasks": [{"task_id": f"t{i:02d}", "operator_name": "BashOperator"} for i in range(7)]}}
    assets = {
        "assets": [
            {
                "uri": "x",
                "producing_tasks": [{"dag_id": "A", "task_id": "t"}],
                "scheduled_dags": [{"dag_id": "B"}],
            },
            {
                "uri": "y",
                "producing_tasks": [{"dag_id": "B", "task_id": "t"}, {"dag_id": "D", "task_id": "t"}],
                "scheduled_dags": [{"dag_id": "C"}],
            },
            {
                "uri": "z",
                "producing_tasks": [{"dag_id": "elsewhere", "task_id": "t"}],
                "scheduled_dags": [{"dag_id": "B"}],
            },
            {"uri": "orders", "producing_tasks": [{"dag_id": "orders", "task_id": "t"}]},
        ]
    }
    return document_for(dags, tasks, assets)


# -- pages ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offset", "limit", "items", "truncated", "next_offset"),
    [
        (0, 3, [0, 1, 2], True, 3),
        (3, 3, [3, 4, 5], True, 6),
        (6, 3, [6], False, None),
        (7, 3, [], False, None),
        (50, 3, [], False, None),
        (0, 10, list(range(7)), False, None),
    ],
)
def test_a_page_says_how_much_there_is_and_where_the_rest_starts(
    offset: int, limit: int, items: list[int], truncated: bool, next_offset: int | None
) -> None:
    answer = page(list(range(7)), offset, limit)
    assert answer == {
        "items": items,
        "total": 7,
        "offset": offset,
        "limit": limit,
        "truncated": truncated,
        "nextOffset": next_offset,
    }


def test_a_page_is_never_longer_than_the_maximum_and_refuses_nonsense() -> None:
    answer = page(list(range(2000)), 0, 10_000)
    assert (len(answer["items"]), answer["limit"], answer["nextOffset"]) == (MAX_LIMIT, MAX_LIMIT, MAX_LIMIT)
    with pytest.raises(QueryError, match="offset must be 0 or more"):
        page([], -1, 5)
    with pytest.raises(QueryError, match="limit must be 1 or more"):
        page([], 0, 0)
    converted = page(["a", "b"], 0, 1, str.upper)
    assert converted["items"] == ["A"]


# -- facts and findings ---------------------------------------------------------------------


def test_facts_of_the_example_estate() -> None:
    document = recorded_document()
    facts = queries(document).facts()
    assert facts["fingerprint"] == document["fingerprint"]
    assert facts["facts"] == {"dags": 6, "pausedDags": 2, "assets": 4, "tasks": 11}
    assert facts["findings"]["openByCode"] == {
        "asset-unproduced": 1,
        "dag-no-description": 1,
        "dag-no-owner": 1,
        "paused-producer": 1,
    }
    assert list(facts["findings"]["bySeverity"]) == ["Warning", "Info"]  # most severe first
    assert facts["hasLineage"] is True and facts["baseline"] is None


def test_facts_page_the_lossiness_and_name_an_edited_document() -> None:
    document = recorded_document()
    document["lossiness"] = [{"artifact": "tasks", "message": f"record {i}"} for i in range(25)]
    document["fingerprint"] = "0000000000000000"
    lossiness = queries(document).facts(lossiness_offset=20, lossiness_limit=10)["lossiness"]
    assert lossiness["total"] == 26 and lossiness["offset"] == 20 and not lossiness["truncated"]
    assert lossiness["byArtifact"] == {"snapshot": 1, "tasks": 25}
    assert "does not match the stored content" in lossiness["items"][-1]["message"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["asset-unproduced", "dag-no-description", "dag-no-owner", "paused-producer"]),
        ({"severity": "warning"}, ["asset-unproduced", "dag-no-owner", "paused-producer"]),
        ({"severity": "WARNING", "subject": "s3://*"}, ["asset-unproduced", "paused-producer"]),
        ({"severity": "error"}, []),
        ({"code": "dag-no-owner"}, ["dag-no-owner"]),
        ({"subject": "legacy_*"}, ["dag-no-description", "dag-no-owner"]),
        ({"subject": "LEGACY_*"}, []),  # case-sensitive, as waivers match
        ({"section": "conformance", "code": "paused-producer"}, ["paused-producer"]),
        ({"section": "Drift"}, []),
    ],
)
def test_findings_are_filtered(filters: dict[str, Any], expected: list[str]) -> None:
    answer = queries(recorded_document()).findings_page(**filters)
    assert [f["code"] for f in answer["findings"]["items"]] == expected
    assert sum(answer["counts"]["bySeverity"].values()) == len(expected)


def test_waived_findings_are_marked_and_can_be_left_out_or_asked_for_alone() -> None:
    waiver = Waiver("dag-no-owner", "legacy_*", "owned by ops", dt.date(2999, 1, 1))
    document = recorded_document(waivers=(waiver,))
    served = queries(document)
    assert [f["code"] for f in served.findings_page(waived="only")["findings"]["items"]] == ["dag-no-owner"]
    assert "dag-no-owner" not in [
        f["code"] for f in served.findings_page(waived="exclude")["findings"]["items"]
    ]
    marked = served.findings_page(code="dag-no-owner")["findings"]["items"][0]
    assert marked["waived"] == {"reason": "owned by ops", "expires": "2999-01-01"}
    assert served.facts()["findings"]["bySeverity"]["Warning"] == {"open": 2, "waived": 1}


def test_waivers_given_to_the_server_re_audit_the_stored_estate() -> None:
    document = recorded_document()
    waiver = Waiver("paused-producer", "*", "migration", dt.date(2999, 1, 1))
    served = queries(document, waivers=(waiver,), waivers_source="w.yaml")
    assert served.findings_source == "re-audited under the waivers of w.yaml"
    assert served.findings == recorded_document(waivers=(waiver,))["findings"]
    # a waived finding no longer marks the node in the picture
    assert served.lineage("s3://lake/orders.parquet", depth=0)["nodes"]["items"][0]["openFindings"] == []


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"severity": "fatal"}, "unknown severity 'fatal'; expected one of Info, Warning, Error"),
        ({"code": "dag-no-owners"}, "unknown finding code 'dag-no-owners'; did you mean 'dag-no-owner'"),
        ({"code": "zzz"}, "unknown finding code 'zzz'; known codes: airflow-warning, asset-conflict, "),
        ({"section": "Style"}, "unknown section 'Style'; expected one of Conformance, Coverage, Drift"),
        ({"waived": "maybe"}, "waived must be include, exclude or only"),
    ],
)
def test_a_filter_that_names_nothing_is_an_error_saying_what_there_is(
    filters: dict[str, Any], message: str
) -> None:
    with pytest.raises(QueryError, match=message.replace("(", r"\(").replace("'", ".")):
        queries(recorded_document()).findings_page(**filters)


# -- a dataset, lineage, impact -------------------------------------------------------------


def test_a_dag_with_its_tasks_paged_its_neighbours_and_findings() -> None:
    served = queries(chain_document())
    answer = served.dataset("B", offset=5, limit=5)
    assert [f["name"] for f in answer["dataset"]["fields"]["items"]] == ["t05", "t06"]
    assert answer["dataset"]["fields"]["total"] == 7 and answer["dataset"]["paused"] is False
    assert [(n["identity"], n["kind"]) for n in answer["upstream"]["items"]] == [
        ("x", "asset"),
        ("z", "asset"),
    ]
    assert [n["identity"] for n in answer["downstream"]["items"]] == ["y"]
    legacy = queries(recorded_document()).dataset("legacy_cleanup")
    assert [f["code"] for f in legacy["findings"]["items"]] == ["dag-no-description", "dag-no-owner"]
    assert legacy["upstream"]["total"] == legacy["downstream"]["total"] == 0


def test_an_asset_an_external_dag_and_a_name_that_is_both() -> None:
    served = queries(chain_document())
    asset = served.dataset("y")
    assert asset["dataset"]["materialization"] == "asset" and "paused" not in asset["dataset"]
    assert [n["identity"] for n in asset["upstream"]["items"]] == ["B", "D"]
    external = served.dataset("elsewhere")
    assert external["dataset"]["materialization"] == "external"
    assert [n["identity"] for n in external["downstream"]["items"]] == ["z"]
    assert served.dataset("z")["upstream"]["items"][0] | {"openFindings": []} == {
        "identity": "elsewhere",
        "kind": "external",
        "paused": None,  # unknown: never assumed paused or active
        "openFindings": [],
        "severity": None,
    }
    with pytest.raises(QueryError, match=r"'orders' names both a DAG and an asset .*give kind dag or asset"):
        served.dataset("orders")
    assert served.dataset("orders", kind="asset")["dataset"]["materialization"] == "asset"
    assert served.dataset("orders", kind="dag")["dataset"]["materialization"] == "dag"
    with pytest.raises(QueryError, match="no asset 'B' in this snapshot"):
        served.dataset("B", kind="asset")


@pytest.mark.parametrize("estate", ["airflow3", "airflow3_assets", "chain"])
def test_the_indexed_neighbourhood_is_the_lineage_command_s(estate: str) -> None:
    """Every centre, every depth from 0 to 4: the same nodes, edges and drawing as
    ``LineageGraph.neighbourhood``, which ``lineage --around`` draws (aliases, refs, inlets, the
    @asset chain's shared names, an external DAG)."""
    document = chain_document() if estate == "chain" else recorded_document(estate)
    served = queries(document)
    graph = LineageGraph.from_document(document)
    centres = sorted({d["identity"] for d in document["datasets"]})
    for centre in centres:
        for depth in range(5):
            ours = served.neighbourhood(centre, depth)
            theirs = graph.neighbourhood(centre, depth)
            assert (ours.nodes, ours.edges, dict(ours.via), ours.crossing) == (
                theirs.nodes,
                theirs.edges,
                dict(theirs.via),
                theirs.crossing,
            ), (centre, depth)
            assert to_mermaid(ours) == to_mermaid(theirs)


def test_lineage_pages_nodes_and_edges_and_names_edges_with_the_data() -> None:
    served = queries(chain_document())
    answer = served.lineage("B", depth=1, limit=2)
    assert [n["identity"] for n in answer["nodes"]["items"]] == ["B", "x"]
    assert answer["nodes"]["total"] == 4 and answer["nodes"]["nextOffset"] == 2
    edges = served.lineage("B", depth=1)["edges"]["items"]
    assert {(e["from"], e["fromKind"], e["to"], e["toKind"]) for e in edges} == {
        ("B", "dag", "y", "asset"),
        ("x", "asset", "B", "dag"),
        ("z", "asset", "B", "dag"),
    }
    assert "mermaid" not in answer
    lone = served.lineage("lone", depth=3, mermaid=True)
    assert [n["identity"] for n in lone["nodes"]["items"]] == ["lone"]
    with pytest.raises(QueryError, match="depth must be 0 to 50"):
        served.lineage("B", depth=51)


def test_downstream_impact_follows_the_data_and_says_what_is_paused() -> None:
    served = queries(chain_document())
    impact = served.impact("A")
    assert impact["start"] == {
        "identity": "A",
        "kind": "dag",
        "paused": True,
        "openFindings": [],
        "severity": None,
        "owners": ["team"],  # as the DAG names them
        "team": None,  # no rules file named teams
    }
    affected = [(a["identity"], a["distance"], a["reachedFrom"]) for a in impact["affected"]["items"]]
    assert affected == [("x", 1, "A"), ("B", 2, "x"), ("y", 3, "B"), ("C", 4, "y")]
    y = next(a for a in impact["affected"]["items"] if a["identity"] == "y")
    assert y["independentActiveProducers"] == ["D"]  # D may keep y fresh while A is paused
    assert impact["summary"] == {
        "assets": 2,
        "dags": 2,
        "activeDags": 2,
        "pausedDags": 0,
        "externalDags": 0,
        "maxDistance": 4,
    }
    assert [a["identity"] for a in served.impact("A", depth=2)["affected"]["items"]] == ["x", "B"]
    assert served.impact("elsewhere")["start"]["kind"] == "external"
    assert served.impact("lone")["affected"]["total"] == 0
    assert served.impact("orders", kind="dag")["affected"]["items"][0]["identity"] == "orders"
    with pytest.raises(QueryError, match="depth must be 1 or more"):
        served.impact("A", depth=0)


def test_upstream_impact_walks_against_the_data_with_the_same_answer_shape() -> None:
    """``upstream=True`` (the ``impact --upstream`` command): what C depends on, nearest first;
    no independent producers (every producer upstream is in the walk); an external DAG's kind."""
    served = queries(chain_document())
    impact = served.impact("C", upstream=True)
    assert impact["direction"] == "upstream" and served.impact("C")["direction"] == "downstream"
    affected = [
        (a["identity"], a["kind"], a["distance"], a["reachedFrom"]) for a in impact["affected"]["items"]
    ]
    assert affected == [
        ("y", "asset", 1, "C"),
        ("B", "dag", 2, "y"),
        ("D", "dag", 2, "y"),
        ("x", "asset", 3, "B"),
        ("z", "asset", 3, "B"),
        ("A", "dag", 4, "x"),
        ("elsewhere", "external", 4, "z"),
    ]
    assert not any("independentActiveProducers" in a for a in impact["affected"]["items"])
    assert impact["summary"] == {
        "assets": 3,
        "dags": 3,
        "activeDags": 2,
        "pausedDags": 1,
        "externalDags": 1,
        "maxDistance": 4,
    }
    assert [a["identity"] for a in served.impact("C", upstream=True, depth=1)["affected"]["items"]] == ["y"]
    assert served.impact("A", upstream=True)["affected"]["total"] == 0


def linked_document() -> dict[str, Any]:
    """load triggers reconcile (task kick); month_end waits on reconcile (task wait): no asset."""
    from airflow_provider_coremodels.core import audit, build_document, build_estate

    dags = [
        {"dag_id": dag_id, "is_paused": False, "owners": ["team"], "description": "d"}
        for dag_id in ("load", "reconcile", "month_end")
    ]
    graph = [
        {"source_id": "dag:load", "target_id": "trigger:load:reconcile:kick"},
        {"source_id": "trigger:load:reconcile:kick", "target_id": "dag:reconcile"},
        {"source_id": "dag:reconcile", "target_id": "sensor:reconcile:month_end:wait"},
        {"source_id": "sensor:reconcile:month_end:wait", "target_id": "dag:month_end"},
    ]
    tasks = {
        "load": [{"task_id": "kick", "class_ref": {"class_name": "TriggerDagRunOperator"}}],
        "month_end": [{"task_id": "wait", "class_ref": {"class_name": "ExternalTaskSensor"}}],
    }
    estate = build_estate(
        {"dags": dags, "import_errors": [], "includes_stale": True},
        tasks,
        {"assets": [], "dependencies": {"edges": graph}},
    )
    return build_document(estate, audit(estate))


def test_upstream_impact_marks_the_trigger_and_the_sensor_it_came_through() -> None:
    impact = queries(linked_document()).impact("month_end", upstream=True)
    assert [(a["identity"], a["reachedFrom"], a.get("via")) for a in impact["affected"]["items"]] == [
        ("reconcile", "month_end", "sensor"),
        ("load", "reconcile", "trigger"),
    ]


def test_an_impact_without_a_limit_is_one_page_of_every_node_past_the_cap() -> None:
    """``limit=None``, what the command line asks: one page, however many nodes (the cap is an
    assistant's, MAX_LIMIT); a limit still pages as before."""
    count = MAX_LIMIT + 20
    dags = [{"dag_id": "hub", "is_paused": False, "owners": ["t"], "description": "d"}]
    dags += [
        {"dag_id": f"c{i:04d}", "is_paused": False, "owners": ["t"], "description": "d"} for i in range(count)
    ]
    assets = {
        "assets": [
            {"uri": "hub_out", "producing_tasks": [{"dag_id": "hub", "task_id": "t"}],
             "scheduled_dags": [{"dag_id": f"c{i:04d}"} for i in range(count)]}
        ]
    }  # fmt: skip
    served = queries(document_for(dags, {}, assets))
    whole = served.impact("hub", limit=None)["affected"]
    assert (whole["total"], len(whole["items"]), whole["truncated"]) == (count + 1, count + 1, False)
    paged = served.impact("hub", limit=10_000)["affected"]
    assert (len(paged["items"]), paged["truncated"], paged["nextOffset"]) == (MAX_LIMIT, True, MAX_LIMIT)
    assert paged["items"] == whole["items"][:MAX_LIMIT]


@pytest.mark.parametrize(
    ("asked", "suggested"),
    [
        ("load_order", "'load_orders'"),
        ("LOAD_ORDERS", "'load_orders'"),
        ("orders.parquet", "'s3://lake/orders.parquet'"),  # an asset by its name
        ("s3://lake/order.parquet", "'s3://lake/orders.parquet'"),
    ],
)
def test_an_unknown_identity_is_named_with_what_was_probably_meant(asked: str, suggested: str) -> None:
    served = queries(recorded_document())
    for question in (served.dataset, served.lineage, served.impact):
        with pytest.raises(
            QueryError, match=f"no DAG or asset '{asked}' in this snapshot; did you mean .*{suggested}"
        ):
            question(asked)


def test_nothing_alike_suggests_nothing() -> None:
    with pytest.raises(QueryError, match=r"^no DAG or asset 'qqqq' in this snapshot$"):
        queries(recorded_document()).dataset("qqqq")


# -- drift ----------------------------------------------------------------------------------


def test_drift_against_a_baseline_read_once(tmp_path: Path) -> None:
    baseline = recorded_document()
    baseline["datasets"] = [d for d in baseline["datasets"] if d["identity"] != "legacy_cleanup"]
    reads: list[str] = []

    def reader(path: str) -> Any:
        from airflow_provider_coremodels.integrations.assistant import read_baseline

        reads.append(path)
        return read_baseline(path)

    path = tmp_path / "baseline.json"
    path.write_bytes(encode(baseline))
    served = queries(recorded_document(), baseline_reader=reader)
    with pytest.raises(QueryError, match="no baseline: give the path"):
        served.drift()
    answer = served.drift(baseline=str(path))
    assert [(f["code"], f["subject"]) for f in answer["findings"]["items"]] == [
        ("dataset-unmapped", "legacy_cleanup")
    ]
    assert answer["counts"]["byCode"] == {"dataset-unmapped": 1}
    served.drift(baseline=str(path), code="dataset-unmapped")
    assert reads == [str(path)]  # the second question reused the first read
    with pytest.raises(QueryError, match=r"baseline snapshot document .*nope.json cannot be read"):
        served.drift(baseline=str(tmp_path / "nope.json"))


# -- a document stored over the cap ---------------------------------------------------------


def test_a_document_stored_over_the_cap_serves_facts_and_findings_only() -> None:
    document = recorded_document()
    del document["datasets"], document["lineage"]
    document["snapshotStored"] = False
    served = queries(document)
    assert served.facts()["hasLineage"] is False
    assert served.findings_page()["findings"]["total"] == 4
    for question in (served.dataset, served.lineage, served.impact):
        with pytest.raises(QueryError, match="stored without datasets and lineage"):
            question("load_orders")
    with pytest.raises(QueryError, match="stored without datasets and lineage"):
        served.drift(baseline="anything.json")
    with pytest.raises(SnapshotDocumentError, match="cannot be audited again under --waivers"):
        queries(document, waivers=(Waiver("dag-no-owner", "*", "r"),))


def test_findings_that_are_not_findings_are_refused_naming_the_key() -> None:
    document = recorded_document()
    document["findings"][1]["subject"] = 7
    with pytest.raises(SnapshotDocumentError, match=r"snapshot.json has an invalid findings\[1\].subject"):
        queries(document)


# -- the team's rules ---------------------------------------------------------------------------

RULES = (
    "rules:\n  - code: policy-retries\n    require: {task_retries_min: 1}\n    where: {dag_id: load_*}\n"
    "  - code: policy-described\n    require: {description_min: 20}\n"
)


def test_policy_findings_are_served_and_placed_at_their_dag() -> None:
    """Stored policy findings are served as stored; a task check's finding is about its DAG."""
    from airflow_provider_coremodels.core.checks.policy import parse_rules

    served = queries(recorded_document(policy=parse_rules(RULES)))
    policy = served.findings_page(section="Policy")["findings"]
    assert [(f["code"], f["subject"]) for f in policy["items"]] == [
        ("policy-described", "legacy_cleanup"),
        ("policy-described", "sync_crm"),
        ("policy-retries", "load_orders.extract"),
        ("policy-retries", "load_orders.publish"),
    ]
    assert served.findings_page(code="policy-retries")["counts"]
    about = [f["code"] for f in served.dataset("load_orders")["findings"]["items"]]
    assert about == ["policy-retries", "policy-retries"]


def test_rules_given_to_the_server_re_audit_the_stored_estate() -> None:
    """--rules re-audits as audit --snapshot S --rules R does; --waivers alone drops the stored
    policy findings, as that re-audit runs no rules."""
    from airflow_provider_coremodels.core.checks.policy import parse_rules

    policy = parse_rules(RULES)
    plain = recorded_document()
    served = queries(plain, policy=policy)
    assert served.findings == recorded_document(policy=policy)["findings"]
    assert served.findings_source == f"re-audited and the rules {policy.digest}"
    waiver = Waiver("dag-no-owner", "*", "ops", dt.date(2999, 1, 1))
    only_waivers = queries(recorded_document(policy=policy), waivers=(waiver,))
    assert not any(f["section"] == "Policy" for f in only_waivers.findings)


def test_impact_follows_a_trigger_and_a_sensor_and_says_which() -> None:
    """A DAG's impact reaches the DAG it triggers and the DAG that waits on it, each marked with the
    link it was reached by; the DAG's neighbours say it too."""
    served = queries(linked_document())
    impact = served.impact("load")
    assert [
        (a["identity"], a["distance"], a["reachedFrom"], a.get("via")) for a in impact["affected"]["items"]
    ] == [
        ("reconcile", 1, "load", "trigger"),
        ("month_end", 2, "reconcile", "sensor"),
    ]
    assert impact["summary"]["dags"] == 2


def test_the_answers_quote_no_credential_of_an_import_error_or_a_description() -> None:
    """Issue 34: what an assistant reads (facts, findings, a DAG) holds the scrubbed import errors
    and description; each broken file and exception type is still named."""
    from support.secret_shapes import SHAPES, leaks, shape_file, with_leaky_errors

    dags = with_leaky_errors(json.loads(artifact_paths("airflow3")["dags"].read_bytes()))
    asked = queries(document_for(dags))
    found = asked.findings_page(code="dag-import-error", limit=100)
    answers = json.dumps([asked.facts(), found, asked.dataset(dags["dags"][0]["dag_id"])])
    assert leaks(answers) == []
    details = " ".join(f["detail"] for f in found["findings"]["items"])
    assert [s.name for s in SHAPES if shape_file(s) not in answers or s.kept not in details] == []


# -- teams ----------------------------------------------------------------------------------


def team_document() -> dict[str, Any]:
    """Two teams of the rules file and a DAG of neither: ingest's DAG and finance's each lack a
    description, and legacy (owned by ``ingest_legacy``, no substring match) is unowned."""
    from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
    from airflow_provider_coremodels.core.checks.policy import parse_rules

    dags = [
        {"dag_id": "load", "owners": ["ingest"], "description": None, "tags": []},
        {"dag_id": "report", "owners": ["carol"], "description": None, "tags": [{"name": "finance"}]},
        {"dag_id": "legacy", "owners": ["ingest_legacy"], "description": None, "tags": []},
    ]
    tasks = {d["dag_id"]: {"tasks": [{"task_id": "t", "operator_name": "BashOperator"}]} for d in dags}
    served_dags, served_assets = as_served(dags, {"assets": []})
    estate = parse_artifacts(
        json.dumps(served_dags).encode(), json.dumps(tasks).encode(), json.dumps(served_assets).encode()
    )
    rules = "teams:\n  ingest: {owners: [ingest]}\n  finance: {tags: [finance]}\n"
    return build_document(estate, audit(estate, policy=parse_rules(rules)))


def test_findings_are_filtered_by_team_and_the_facts_name_the_teams() -> None:
    served = queries(team_document())
    subjects = {
        team: sorted({f["subject"] for f in served.findings_page(team=team, limit=100)["findings"]["items"]})
        for team in ("ingest", "finance", "unowned")
    }
    assert subjects == {"ingest": ["load"], "finance": ["report"], "unowned": ["legacy"]}
    answer = served.findings_page(team="finance", code="dag-no-description")
    assert answer["filters"]["team"] == "finance"
    assert [f["team"] for f in answer["findings"]["items"]] == [["finance"]]
    facts = served.facts()
    assert facts["teams"] == ["ingest", "finance"]
    by_team = facts["findings"]["openByTeam"]
    assert list(by_team) == ["ingest", "finance", "unowned"]
    assert sum(by_team.values()) == facts["findings"]["open"]  # each finding here is of one team


def test_a_team_the_snapshot_does_not_name_is_a_clear_error() -> None:
    with pytest.raises(
        QueryError, match=r"^crm: no such team; the teams are ingest, finance \(and unowned\)$"
    ):
        queries(team_document()).findings_page(team="crm")
    untagged = queries(recorded_document())
    assert untagged.facts()["teams"] is None
    assert untagged.facts()["findings"]["openByTeam"] is None
    with pytest.raises(QueryError, match="crm: this snapshot names no teams"):
        untagged.findings_page(team="crm")


def test_a_stored_findings_team_of_the_wrong_shape_is_refused() -> None:
    document = team_document()
    document["findings"][0]["team"] = "ingest"
    with pytest.raises(SnapshotDocumentError, match=r"findings\[0\]\.team: expected a list of team names"):
        queries(document)
