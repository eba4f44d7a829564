"""Two stored snapshots compared (comparing/compare.py): findings opened and closed, the estate in full."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from support.helpers import document_for, recorded_document

from airflow_provider_coremodels.core import audit, load_document, parse_artifacts
from airflow_provider_coremodels.core.comparing.compare import (
    Comparison,
    compare,
    comparison_json,
    read_side,
    render_comparison_markdown,
    render_comparison_table,
)
from airflow_provider_coremodels.core.snapshots.document import for_storage
from airflow_provider_coremodels.errors import SnapshotDocumentError


def dag(dag_id: str, *, owners: list[str] | None = None, description: str | None = "ok") -> dict[str, Any]:
    return {"dag_id": dag_id, "is_paused": False, "owners": ["team"] if owners is None else owners,
            "description": description}  # fmt: skip


def asset(uri: str, producers: list[str] = (), consumers: list[str] = ()) -> dict[str, Any]:
    return {
        "uri": uri,
        "producing_tasks": [{"dag_id": p, "task_id": "t"} for p in producers],
        "scheduled_dags": [{"dag_id": c} for c in consumers],
    }


def doc(dags: list[Any], tasks: dict[str, Any] | None = None, assets: list[Any] = (), **kw: Any) -> dict:
    tasks = {d["dag_id"]: [] for d in dags} if tasks is None else tasks
    return document_for(dags, tasks, {"assets": list(assets)}, served=True, **kw)


def side(document: dict[str, Any], name: str = "x") -> Any:
    return read_side(name, f"/data/{name}.json", json.dumps(document).encode())


def between(old: dict[str, Any], new: dict[str, Any]) -> Comparison:
    return compare(side(old, "old"), side(new, "new"))


def findings_of(changes: Any) -> list[tuple[str, str, str]]:
    return [(c.finding.code, c.finding.subject, c.how) for c in changes]


# -- findings -------------------------------------------------------------------------------


def test_findings_open_and_close_by_code_and_subject() -> None:
    old = doc([dag("a", owners=[]), dag("b")])
    new = doc([dag("a"), dag("b", owners=[])])
    c = between(old, new)
    assert findings_of(c.opened) == [("dag-no-owner", "b", "new")]
    assert findings_of(c.closed) == [("dag-no-owner", "a", "resolved")]
    assert c.failing("warning") == [c.opened[0].as_dict()]
    assert c.failing("error") == [] and c.failing("never") == []


def test_a_finding_whose_detail_changed_is_the_same_finding() -> None:
    old = doc([dag("a", owners=[])])
    new = copy.deepcopy(old)
    new["findings"][0]["detail"] = "owners: somebody else"
    assert between(old, new).unchanged


def test_a_waiver_closes_a_finding_and_its_end_opens_it_again() -> None:
    plain = doc([dag("a", owners=[]), dag("b", description=None)])
    waived = copy.deepcopy(plain)
    for finding in waived["findings"]:
        if finding["code"] == "dag-no-owner":
            finding["waived"] = {"reason": "ops owns it", "expires": None}
    assert findings_of(between(plain, waived).closed) == [("dag-no-owner", "a", "waived")]
    assert findings_of(between(waived, plain).opened) == [("dag-no-owner", "a", "unwaived")]
    assert between(plain, waived).opened == () and between(waived, plain).closed == ()


def test_opened_findings_are_listed_most_severe_first() -> None:
    old = doc([dag("a")])
    new = doc([dag("a", owners=[], description=None), dag("z", owners=[])])
    assert [(c.finding.severity, c.finding.subject) for c in between(old, new).opened] == [
        ("Warning", "a"), ("Warning", "z"), ("Info", "a"),
    ]  # fmt: skip
    assert len(between(old, new).failing("info")) == 3


# -- the estate -----------------------------------------------------------------------------

OLD_TASKS = {
    "keep": [
        {"task_id": "same", "operator_name": "BashOperator"},
        {"task_id": "retyped", "operator_name": "BashOperator"},
        {"task_id": "dropped", "operator_name": "EmptyOperator"},
    ],
    "gone": [{"task_id": "g1"}, {"task_id": "g2"}],
}
NEW_TASKS = {
    "keep": [
        {"task_id": "same", "operator_name": "BashOperator"},
        {"task_id": "retyped", "operator_name": "PythonOperator"},
        {"task_id": "added", "operator_name": "EmptyOperator"},
    ],
    "new": [{"task_id": "n1"}],
}
OLD = doc([dag("keep"), dag("gone")], OLD_TASKS, [asset("s3://a", ["keep"], ["gone"]), asset("s3://old")])
NEW = doc(
    [dag("keep"), dag("new")], NEW_TASKS, [asset("s3://a", ["keep"], ["new"]), asset("s3://new", ["new"])]
)


def test_datasets_fields_and_edges_added_removed_and_changed() -> None:
    c = between(OLD, NEW)
    assert c.datasets_added == (("asset", "s3://new"), ("dag", "new"))
    assert c.datasets_removed == (("asset", "s3://old"), ("dag", "gone"))
    assert [f.subject for f in c.fields_added] == ["keep.added", "new.n1"]
    assert [f.subject for f in c.fields_removed] == ["gone.g1", "gone.g2", "keep.dropped"]
    assert [(f.subject, f.was, f.native_type) for f in c.fields_changed] == [
        ("keep.retyped", "BashOperator", "PythonOperator")
    ]
    added = {(e.depends_on, e.dependent) for e in c.edges_added}
    removed = {(e.depends_on, e.dependent) for e in c.edges_removed}
    assert added == {("s3://a", "new"), ("new", "s3://new")}
    assert removed == {("s3://a", "gone")}
    assert c.not_compared == ()
    counts = c.counts()
    assert counts["datasets"] == {"added": 2, "removed": 2}
    assert counts["lineage"] == {"added": 2, "removed": 1}
    # the counts reconcile with what each document says of itself
    assert counts["lineage"]["added"] - counts["lineage"]["removed"] == (
        NEW["state"]["counts"]["lineageEdges"] - OLD["state"]["counts"]["lineageEdges"]
    )
    assert counts["fields"]["added"] - counts["fields"]["removed"] == (
        NEW["state"]["facts"]["tasks"] - OLD["state"]["facts"]["tasks"]
    )


def test_the_same_document_is_unchanged() -> None:
    c = between(OLD, copy.deepcopy(OLD))
    assert c.unchanged
    assert "unchanged: the same open findings and the same estate" in render_comparison_table(c)


PAIRS = [
    pytest.param(OLD, NEW, id="hand-made"),
    pytest.param(NEW, OLD, id="hand-made-reversed"),
    pytest.param(recorded_document(), OLD, id="recorded-to-hand-made"),
    pytest.param(
        doc([dag("p")], None, [asset("s3://x", ["p"])]),
        doc([dag("p"), dag("c")], None, [asset("s3://x", ["p"], ["c"])]),
        id="consumer-added",
    ),
]


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_every_drift_finding_of_an_audit_is_in_the_comparison(old: dict, new: dict) -> None:
    """The comparison agrees with the core's drift rules: whatever an audit of NEW against OLD
    reports as coverage or drift, the comparison lists; and what it lists beyond them belongs to
    a DAG or asset that came or went (drift says such a change once, by its dataset)."""
    old_estate = load_document(json.dumps(old)).estate
    new_estate = load_document(json.dumps(new)).estate
    assert old_estate is not None and new_estate is not None
    drift = audit(new_estate, load_document(json.dumps(old)).as_baseline()).findings
    c = between(old, new)
    came = {i for _, i in c.datasets_added}
    went = {i for _, i in c.datasets_removed}
    listed = {
        "dataset-unmapped": came,
        "dataset-removed": went,
        "field-unmapped": {f.subject for f in c.fields_added},
        "field-removed": {f.subject for f in c.fields_removed},
        "field-type-drift": {f.subject for f in c.fields_changed},
        "lineage-added": {f"{e.depends_on} -> {e.dependent}" for e in c.edges_added},
        "lineage-removed": {f"{e.depends_on} -> {e.dependent}" for e in c.edges_removed},
    }
    said = {(f.code, f.subject) for f in drift if f.code in listed}
    assert said, "the pair must differ for this test to test anything"
    assert {(code, subject) for code, subject in said if subject not in listed[code]} == set()
    beyond = {(code, s) for code, subjects in listed.items() for s in subjects} - said
    for code, subject in beyond:
        if code.startswith("lineage-"):
            ends = subject.split(" -> ")
            assert set(ends) & (came | went), (code, subject)
        elif code.startswith("field-"):
            assert subject.partition(".")[0] in came | went, (code, subject)
        else:
            pytest.fail(f"{code} {subject} is listed but drift does not say it")


def test_tasks_a_capture_could_not_read_are_never_called_removed() -> None:
    old = doc([dag("keep")], {"keep": [{"task_id": "t"}]})
    estate = parse_artifacts(json.dumps({"dags": [dag("keep")], "import_errors": []}), None, None)
    from airflow_provider_coremodels.core import build_document

    new = build_document(estate, audit(estate))
    c = between(old, new)
    assert c.fields_removed == ()
    assert any(note.startswith("tasks of 1 DAG:") for note in c.not_compared)
    assert any(
        note.startswith("lineage: the datasets artifact of NEW was not read") for note in c.not_compared
    )
    assert c.edges_removed == ()


def test_a_snapshot_stored_over_the_cap_compares_its_findings_only() -> None:
    over = for_storage(doc([dag("keep", owners=[])], max_snapshot_bytes=100))
    assert "datasets" not in over
    c = between(OLD, over)
    assert c.datasets_added == c.datasets_removed == c.edges_added == ()
    assert findings_of(c.opened) == [("dag-no-owner", "keep", "new")]
    [note] = c.not_compared
    assert note.startswith("datasets, fields and lineage: NEW (new) was stored without datasets and lineage")
    assert comparison_json(c)["new"]["snapshotStored"] is False


# -- reading a side -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"{not json", "is not valid JSON"),
        (b'{"connector": "dbt", "schemaVersion": 2}', 'has connector "dbt"'),
        (
            json.dumps({**OLD, "findings": [{"code": "x"}]}).encode(),
            "has invalid findings: Object missing required field",
        ),
    ],
)
def test_a_side_that_is_no_document_names_its_location(data: bytes, problem: str) -> None:
    with pytest.raises(SnapshotDocumentError) as raised:
        read_side("OLD", "/data/old.json", data)
    assert str(raised.value).startswith("snapshot document /data/old.json ")
    assert problem in str(raised.value)


# -- the views ------------------------------------------------------------------------------


def test_the_table_lists_each_section_and_escapes_the_estate() -> None:
    hostile = "evil\x1b[2J\nname"
    new = doc([dag("keep"), dag(hostile, owners=[])], {"keep": [], hostile: [{"task_id": "t"}]})
    text = render_comparison_table(between(doc([dag("keep")]), new))
    assert "\x1b" not in text and "evil\\x1b[2J\\nname" in text
    assert "findings opened (1)" in text and "datasets added (1)" in text and "fields added (1)" in text
    assert "Warning   dag-no-owner  evil\\x1b[2J\\nname  new" in text
    lines = text.splitlines()
    assert lines[0].startswith("old: /data/old.json · fingerprint ")
    assert lines[2] == (
        "findings: 1 opened, 0 closed · datasets: 1 added, 0 removed · fields: 1 added, 0 removed, "
        "0 changed · lineage edges: 0 added, 0 removed"
    )


def test_markdown_makes_the_estate_inert_and_cuts_long_sections() -> None:
    new = doc([dag(f"d{i:02d}", owners=[]) for i in range(8)] + [dag("a|`<b>`", owners=[])])
    c = between(doc([dag("d00")]), new)
    text = render_comparison_markdown(c, max_rows=3)
    assert text.startswith("## CoreModels: what changed between two snapshots\n")
    assert "### Findings opened (9)" in text
    assert "… and 6 more: `compare --format table` lists them all." in text
    # an identity is code, its pipe escaped and its backticks fenced: it neither ends a cell nor
    # becomes markup
    assert "| Warning | `dag-no-owner` | `` a\\|`<b>` `` | new | owners: none |" in text


def test_json_is_the_whole_comparison() -> None:
    c = between(OLD, NEW)
    out = comparison_json(c)
    assert out["counts"] == c.counts()
    assert out["old"]["location"] == "/data/old.json" and out["new"]["source"] == "new"
    assert {e["dependent"] for e in out["lineage"]["added"]} == {"new", "s3://new"}
    assert out["fields"]["changed"] == [
        {"subject": "keep.retyped", "dataset": "keep", "name": "retyped", "nativeType": "PythonOperator",
         "was": "BashOperator"}
    ]  # fmt: skip
    json.dumps(out)  # JSON-safe
