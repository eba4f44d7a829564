"""The audit rules: conformance over one estate, coverage and drift against a baseline."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.helpers import codes, document_for

from airflow_provider_coremodels.core import Baseline, audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.estate.rules import MESSAGES


def dag(
    dag_id: str, *, paused: bool = False, owners: list[str] | None = None, description: str | None = "ok"
):
    return {
        "dag_id": dag_id,
        "is_paused": paused,
        "owners": ["team"] if owners is None else owners,
        "description": description,
    }


def asset(uri: str, producers: list[str] = (), consumers: list[str] = ()) -> dict[str, Any]:
    return {
        "uri": uri,
        "producing_tasks": [{"dag_id": p, "task_id": "t"} for p in producers],
        "scheduled_dags": [{"dag_id": c} for c in consumers],
    }


def findings(dags: list[Any], assets: list[Any] = ()) -> list[dict[str, Any]]:
    tasks = {d["dag_id"]: [] for d in dags}
    return document_for(dags, tasks, {"assets": list(assets)}, served=True)["findings"]


# -- dag-no-description -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "flagged"),
    [(None, True), ("", True), ("   \n\t", True), ("Loads orders", False)],
    ids=["missing", "empty", "whitespace", "present"],
)
def test_dag_no_description(description: str | None, flagged: bool) -> None:
    result = findings([dag("d", description=description)])
    expected = [
        {
            "section": "Conformance",
            "severity": "Info",
            "code": "dag-no-description",
            "subject": "d",
            "message": "DAG has no description — pipelines without stated intent resist governance.",
            "detail": None,
        }
    ]
    assert result == (expected if flagged else [])


# -- dag-no-owner -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owners", "detail"),
    [
        pytest.param(["airflow"], "owners: airflow", id="default-owner"),
        pytest.param([" airflow "], "owners: airflow", id="default-owner-padded"),
        pytest.param([], "owners: none", id="empty"),
        pytest.param(["", " "], "owners: none", id="only-blanks"),
        pytest.param(["airflow", "ops"], None, id="default-plus-real-owner"),
        pytest.param(["Airflow"], None, id="not-exactly-default"),
        pytest.param(["data-eng"], None, id="real-owner"),
    ],
)
def test_dag_no_owner(owners: list[str], detail: str | None) -> None:
    result = [f for f in findings([dag("d", owners=owners)]) if f["code"] == "dag-no-owner"]
    if detail is None:
        assert result == []
    else:
        assert result == [
            {
                "section": "Conformance",
                "severity": "Warning",
                "code": "dag-no-owner",
                "subject": "d",
                "message": MESSAGES["dag-no-owner"],
                "detail": detail,
            }
        ]


def test_dag_without_owners_field_has_no_owner() -> None:
    document = document_for([{"dag_id": "d", "description": "x"}], {"d": []}, [])
    assert codes(document) == [("dag-no-owner", "d")]


# -- asset-unproduced ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dags", "assets", "expected"),
    [
        pytest.param(
            [dag("c")],
            [asset("s3://x/y", consumers=["c"])],
            [("s3://x/y", "consumers: c")],
            id="consumed-never-produced",
        ),
        pytest.param(
            [dag("c"), dag("d")],
            [asset("s3://x/y", consumers=["d", "c", "elsewhere"])],
            [("s3://x/y", "consumers: c, d")],
            id="detail-lists-described-consumers-sorted",
        ),
        pytest.param(
            [dag("c")],
            [asset("s3://x/y", producers=["elsewhere"], consumers=["c"])],
            [],
            id="external-producer-still-produces",
        ),
        pytest.param(
            [dag("c")], [asset("s3://x/y", consumers=["elsewhere"])], [], id="only-external-consumers"
        ),
        pytest.param([dag("c")], [asset("s3://x/y")], [], id="unused-asset"),
        pytest.param([dag("p")], [asset("s3://x/y", producers=["p"])], [], id="produced-not-consumed"),
    ],
)
def test_asset_unproduced(dags: list[Any], assets: list[Any], expected: list[tuple[str, str]]) -> None:
    result = [(f["subject"], f["detail"]) for f in findings(dags, assets) if f["code"] == "asset-unproduced"]
    assert result == expected


def test_asset_unproduced_through_consuming_tasks_v3_inlets() -> None:
    items = [{"uri": "s3://vendor/fx.csv", "consuming_tasks": [{"dag_id": "c", "task_id": "t"}]}]
    document = document_for([dag("c")], {"c": []}, {"assets": items})
    assert codes(document) == [("asset-unproduced", "s3://vendor/fx.csv")]
    assert document["findings"][0]["severity"] == "Warning"


# -- paused-producer ----------------------------------------------------------------------

PAUSED_PRODUCER = {
    "section": "Conformance",
    "severity": "Warning",
    "code": "paused-producer",
    "subject": "s3://lake/orders.parquet",
    "message": "Every producer of this asset is paused while active DAGs still consume it — "
    "consumers will silently run on stale data.",
    "detail": "producers: load_orders; active consumers: daily_revenue",
}


def test_paused_producer_matches_the_contract_example() -> None:
    result = findings(
        [dag("load_orders", paused=True), dag("daily_revenue")],
        [asset("s3://lake/orders.parquet", producers=["load_orders"], consumers=["daily_revenue"])],
    )
    assert result == [PAUSED_PRODUCER]


@pytest.mark.parametrize(
    ("dags", "item", "detail"),
    [
        pytest.param(
            [dag("p1", paused=True), dag("p2", paused=True), dag("c2"), dag("c1"), dag("c3", paused=True)],
            asset("s3://x/y", ["p2", "p1"], ["c2", "c1", "c3"]),
            "producers: p1, p2; active consumers: c1, c2",
            id="all-paused-sorted-ids",
        ),
        pytest.param(
            [dag("p1", paused=True), dag("p2"), dag("c")],
            asset("s3://x/y", ["p1", "p2"], ["c"]),
            None,
            id="one-paused-one-active-producer",
        ),
        pytest.param(
            [dag("p", paused=True), dag("c", paused=True)],
            asset("s3://x/y", ["p"], ["c"]),
            None,
            id="consumers-paused-too",
        ),
        pytest.param(
            [dag("p", paused=True)],
            asset("s3://x/y", ["p"], ["elsewhere"]),
            None,
            id="external-consumer-unknown-not-active",
        ),
        pytest.param(
            [dag("p", paused=True), dag("c")],
            asset("s3://x/y", ["p", "elsewhere"], ["c"]),
            None,
            id="external-producer-unknown-not-paused",
        ),
        pytest.param(
            [dag("p", paused=True), dag("c")],
            asset("s3://x/y", ["p"], ["c", "elsewhere"]),
            "producers: p; active consumers: c",
            id="external-consumer-ignored",
        ),
        pytest.param([dag("p"), dag("c")], asset("s3://x/y", ["p"], ["c"]), None, id="producer-active"),
        pytest.param([dag("c")], asset("s3://x/y", [], ["c"]), None, id="no-producer"),
    ],
)
def test_paused_producer(dags: list[Any], item: dict[str, Any], detail: str | None) -> None:
    result = [f["detail"] for f in findings(dags, [item]) if f["code"] == "paused-producer"]
    assert result == ([detail] if detail else [])


def test_paused_state_unknown_counts_as_not_paused() -> None:
    producer = {"dag_id": "p", "owners": ["x"], "description": "x"}  # no is_paused at all
    result = findings([producer, dag("c")], [asset("s3://x/y", ["p"], ["c"])])
    assert result == []


def test_findings_are_sorted_by_section_code_subject() -> None:
    dags = [dag("z", owners=[], description=None), dag("a", owners=["airflow"], description="")]
    result = findings(dags, [asset("s3://b", consumers=["a"]), asset("s3://a", consumers=["z"])])
    assert [(f["code"], f["subject"]) for f in result] == [
        ("asset-unproduced", "s3://a"),
        ("asset-unproduced", "s3://b"),
        ("dag-no-description", "a"),
        ("dag-no-description", "z"),
        ("dag-no-owner", "a"),
        ("dag-no-owner", "z"),
    ]


# -- coverage and drift -------------------------------------------------------------------


def estate(dags: list[Any], tasks: Any, assets: list[Any] = ()) -> Any:
    return parse_artifacts(
        json.dumps(dags).encode(), json.dumps(tasks).encode(), json.dumps({"assets": list(assets)}).encode()
    )


def baseline_from(estate_: Any) -> Baseline:
    """Round-trip through the stored document, as a real --baseline does."""
    document = build_document(estate_, audit(estate_))
    return load_document(json.dumps(document)).as_baseline()


def drift_codes(current: Any, previous: Any) -> list[tuple[str, str, str | None]]:
    result = audit(current, baseline_from(previous))
    assert result.baseline.evaluated
    return [(f.code, f.subject, f.detail) for f in result.findings if f.section in ("Coverage", "Drift")]


BASE_DAGS = [dag("keep"), dag("gone")]
BASE_TASKS = {
    "keep": [
        {"task_id": "same", "operator_name": "BashOperator"},
        {"task_id": "retyped", "operator_name": "BashOperator"},
        {"task_id": "dropped", "operator_name": "EmptyOperator"},
    ],
    "gone": [{"task_id": "t"}],
}


def test_drift_against_a_baseline() -> None:
    previous = estate(BASE_DAGS, BASE_TASKS, [asset("s3://old")])
    current = estate(
        [dag("keep"), dag("new")],
        {
            "keep": [
                {"task_id": "same", "operator_name": "BashOperator"},
                {"task_id": "retyped", "operator_name": "PythonOperator"},
                {"task_id": "added", "operator_name": "EmptyOperator"},
            ],
            "new": [{"task_id": "n"}],
        },
        [asset("s3://new")],
    )
    assert drift_codes(current, previous) == [
        ("dataset-unmapped", "new", "new DAG"),
        ("dataset-unmapped", "s3://new", "new asset"),
        ("field-unmapped", "keep.added", None),
        ("dataset-removed", "gone", "was a DAG"),
        ("dataset-removed", "s3://old", "was an asset"),
        ("field-removed", "keep.dropped", None),
        ("field-type-drift", "keep.retyped", "was BashOperator; now PythonOperator"),
    ]


def test_drift_severities_and_sections() -> None:
    previous = estate(BASE_DAGS, BASE_TASKS)
    current = estate([dag("keep"), dag("new")], {"keep": [], "new": []})
    by_code = {
        f.code: (f.section, f.severity.value) for f in audit(current, baseline_from(previous)).findings
    }
    assert by_code["dataset-unmapped"] == ("Coverage", "Info")
    assert by_code["dataset-removed"] == ("Drift", "Warning")
    assert by_code["field-removed"] == ("Drift", "Warning")


def test_identical_estate_has_no_drift() -> None:
    previous = estate(BASE_DAGS, BASE_TASKS, [asset("s3://a", ["keep"])])
    assert drift_codes(previous, previous) == []


def test_dag_whose_tasks_were_not_captured_reports_no_removed_fields() -> None:
    """A DAG missing from the tasks artifact has unknown fields, not zero fields."""
    previous = estate(BASE_DAGS, BASE_TASKS)
    current = estate(BASE_DAGS, {"gone": [{"task_id": "t"}]})  # "keep" missing: its tasks failed to fetch
    assert drift_codes(current, previous) == []


def test_whole_tasks_artifact_missing_reports_no_removed_fields() -> None:
    previous = estate(BASE_DAGS, BASE_TASKS)
    current = parse_artifacts(json.dumps(BASE_DAGS).encode(), None, b"[]")
    assert drift_codes(current, previous) == []


def test_baseline_with_unknown_fields_reports_no_unmapped_fields() -> None:
    previous = estate(BASE_DAGS, {"gone": [{"task_id": "t"}]})
    current = estate(BASE_DAGS, BASE_TASKS)
    assert drift_codes(current, previous) == []


def test_dag_and_asset_with_the_same_identity_are_distinct() -> None:
    previous = estate([dag("orders")], {"orders": []})
    current = estate([dag("orders")], {"orders": []}, [asset("orders")])
    assert drift_codes(current, previous) == [("dataset-unmapped", "orders", "new asset")]


@pytest.mark.parametrize(
    ("baseline", "reason"),
    [
        pytest.param(None, "no baseline given", id="none"),
        pytest.param(
            Baseline("abc", None),
            "the baseline was stored without datasets (it exceeded the snapshot cap)",
            id="stored-over-cap",
        ),
    ],
)
def test_coverage_and_drift_not_evaluated_says_why(baseline: Baseline | None, reason: str) -> None:
    current = estate(BASE_DAGS, BASE_TASKS)
    result = audit(current, baseline)
    assert not result.baseline.evaluated
    assert result.baseline.reason == reason
    assert all(f.section == "Conformance" for f in result.findings)
