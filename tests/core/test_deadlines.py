"""A DAG's deadline alerts in its metadata (reading/deadlines.py) and the rules file's ``deadline`` check.

The alerts' shape is ``GET /ui/dags/{dag_id}/deadlineAlerts``'s (Airflow 3.3), which the capture
keeps in the DAG's entry as ``deadline_alerts``; a DAG without the key is one whose alerts are
unknown (an older line, a refused viewer), and the check must not judge it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.checks.policy import rules_from_value
from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY
from airflow_provider_coremodels.core.reading.deadlines import deadline_text, deadlines, describe
from airflow_provider_coremodels.errors import RulesFileError

LATE = {
    "id": "0199c0de-0000-7000-8000-000000000001",
    "name": "late",
    "reference_type": "DagRunQueuedAtDeadline",
    "interval": 7200.0,
    "created_at": "2026-12-03T10:00:00Z",
}


@pytest.mark.parametrize(
    ("alerts", "text"),
    [
        pytest.param(None, None, id="unknown"),
        pytest.param({"late": 1}, None, id="not-a-list"),
        pytest.param([], "[]", id="read-none"),
        pytest.param([LATE], '[{"interval":7200,"name":"late","reference":"DagRunQueuedAtDeadline"}]',
                     id="one"),
        pytest.param(
            [{**LATE, "name": None, "interval": None}],
            '[{"interval":null,"reference":"DagRunQueuedAtDeadline"}]',
            id="unnamed-dynamic-interval",
        ),
        pytest.param(
            [{**LATE, "interval": 90.5}, {"reference_type": "DagRunLogicalDateDeadline", "interval": 60}],
            '[{"interval":60,"reference":"DagRunLogicalDateDeadline"},'
            '{"interval":90.5,"name":"late","reference":"DagRunQueuedAtDeadline"}]',
            id="sorted-whatever-the-order",
        ),
        pytest.param([{"name": "x"}, "junk", {**LATE, "interval": True}], '[{"interval":null,"name":"late",'
                     '"reference":"DagRunQueuedAtDeadline"}]', id="malformed-dropped"),
        pytest.param([{**LATE, "name": "a\nb"}],
                     '[{"interval":7200,"name":"a\\\\nb","reference":"DagRunQueuedAtDeadline"}]',
                     id="control-characters-escaped"),
    ],
)  # fmt: skip
def test_the_metadata_text(alerts: Any, text: str | None) -> None:
    assert deadline_text(alerts) == text


def test_the_text_reads_back_and_in_words() -> None:
    text = deadline_text([LATE, {"reference_type": "FixedDatetimeDeadline", "interval": None}])
    read = deadlines({DEADLINE_KEY: text})
    assert read is not None
    assert [describe(a) for a in read] == [
        "late: 2h after DagRunQueuedAtDeadline",
        "an interval set at run time after FixedDatetimeDeadline",
    ]
    assert deadlines({}) is None and deadlines({DEADLINE_KEY: "not json"}) is None
    assert describe({"reference": "R", "interval": 5400}) == "90m after R"
    assert describe({"reference": "R", "interval": 86400 * 2}) == "2d after R"


def _document(rules: list[dict[str, Any]], dags: list[dict[str, Any]]) -> dict[str, Any]:
    estate = parse_artifacts(json.dumps({"dags": dags}).encode())
    return build_document(estate, audit(estate, policy=rules_from_value(rules)))


def _dag(dag_id: str, **raw: Any) -> dict[str, Any]:
    return {"dag_id": dag_id, "is_paused": False, "owners": ["team-a"], "tags": [], **raw}


ESTATE = [
    _dag("guarded", deadline_alerts=[LATE]),
    _dag("unguarded", deadline_alerts=[]),
    _dag("unknown"),  # a line or a viewer that cannot see them
]


def test_deadline_true_fails_only_dags_known_to_have_none() -> None:
    document = _document([{"code": "policy-deadline", "require": {"deadline": True}}], ESTATE)
    assert [(f["subject"], f["detail"]) for f in document["findings"] if f["section"] == "Policy"] == [
        ("unguarded", "deadline alerts: none")
    ]
    assert document["policy"]["notChecked"] == {"deadline alerts unknown": 1}
    [rule] = document["policy"]["rules"]
    assert rule["message"] == "DAG has no deadline alert — a late or stuck run tells no one."
    assert rule["require"] == {"deadline": True}


def test_deadline_false_names_the_alerts() -> None:
    document = _document([{"code": "policy-no-deadline", "require": {"deadline": False}}], ESTATE)
    assert [(f["subject"], f["detail"]) for f in document["findings"] if f["section"] == "Policy"] == [
        ("guarded", "deadline alerts: late: 2h after DagRunQueuedAtDeadline")
    ]
    assert document["policy"]["notChecked"] == {"deadline alerts unknown": 1}


def test_a_deadline_check_that_is_not_a_flag_is_refused() -> None:
    with pytest.raises(RulesFileError, match=r"rules\[0\]\.require\.deadline must be true or false"):
        rules_from_value([{"code": "policy-deadline", "require": {"deadline": "yes"}}])


def test_the_key_rides_in_the_fingerprint_only_where_read() -> None:
    """A DAG whose alerts are unknown has no key, so an estate captured before this change keeps its
    document (and, with no alerts read, its fingerprint) on lines that cannot show them."""
    estate = parse_artifacts(json.dumps({"dags": ESTATE}).encode())
    metadata = {d.identity: d.metadata.get(DEADLINE_KEY) for d in estate.dags()}
    assert metadata == {
        "guarded": '[{"interval":7200,"name":"late","reference":"DagRunQueuedAtDeadline"}]',
        "unguarded": "[]",
        "unknown": None,
    }
