"""What alerts call new and resolved (``core/comparing/changes.py``), and that ``compare`` counts the same."""

from __future__ import annotations

import copy
import json
from typing import Any

from support.helpers import document_for

from airflow_provider_coremodels.core.comparing.changes import (
    finding_changes,
    opened_and_closed,
    stored_findings,
)
from airflow_provider_coremodels.core.comparing.compare import compare, read_side


def finding(code: str, subject: str, severity: str = "warning", **extra: Any) -> dict[str, Any]:
    return {"section": "Conformance", "severity": severity, "code": code, "subject": subject,
            "message": f"{code} {subject}", **extra}  # fmt: skip


def keys(findings: Any) -> list[tuple[str, str]]:
    return [(f["code"], f["subject"]) for f in findings]


def test_without_a_previous_snapshot_every_open_finding_is_new() -> None:
    now = [finding("dag-no-owner", "a"), finding("dag-no-owner", "b", waived={"reason": "r"})]
    changes = finding_changes(now, None)
    assert changes.first and keys(changes.new) == [("dag-no-owner", "a")] and changes.resolved == ()
    assert changes.summary() == {"new": 1, "resolved": 0, "waived": 0}


def test_new_and_resolved_are_known_by_code_and_subject_not_by_wording() -> None:
    before = [finding("dag-no-owner", "a"), finding("dag-no-description", "a")]
    now = [
        finding("dag-no-owner", "a", detail="reworded"),  # the same finding, still open
        finding("dag-no-owner", "b", severity="error"),
    ]
    changes = finding_changes(now, before)
    assert keys(changes.new) == [("dag-no-owner", "b")]
    assert keys(changes.resolved) == [("dag-no-description", "a")]
    assert changes.by_severity == {"error": 1, "warning": 1}
    assert changes.text("prod").splitlines() == [
        "1 CoreModels finding in prod new since the last export:",
        "- error dag-no-owner b: dag-no-owner b",
        "1 resolved since the last export:",
        "- warning dag-no-description a: dag-no-description a",
    ]


def test_a_waived_finding_is_neither_open_nor_new_and_its_waiver_ending_makes_it_new() -> None:
    before = [finding("dag-no-owner", "a", waived={"reason": "r"})]
    now = [finding("dag-no-owner", "a")]
    assert keys(finding_changes(now, before).new) == [("dag-no-owner", "a")]
    # open, then waived: not resolved (issue 45), but waived
    waived_since = finding_changes(before, now)
    assert waived_since.resolved == () and keys(waived_since.waived) == [("dag-no-owner", "a")]


def test_each_key_counts_once_in_the_order_given() -> None:
    then = [{"k": 1}, {"k": 2}, {"k": 2}]
    now = [{"k": 4}, {"k": 3}, {"k": 3}, {"k": 1}]
    opened, closed = opened_and_closed(then, now, lambda f: ("code", str(f["k"])))
    assert opened == [{"k": 4}, {"k": 3}] and closed == [{"k": 2}]


def test_alerts_and_compare_count_the_same_changes_between_two_stored_documents() -> None:
    dags = [{"dag_id": d, "is_paused": False, "owners": [], "description": None} for d in ("a", "b")]
    old = document_for(dags, {"a": [], "b": []}, {"assets": []}, served=True)
    new = copy.deepcopy(old)
    new["findings"] = [f for f in new["findings"] if f["subject"] != "a"]
    new["findings"].append(finding("dag-no-tags", "c"))
    old_bytes, new_bytes = json.dumps(old).encode(), json.dumps(new).encode()

    alerts = finding_changes(stored_findings(new_bytes) or [], stored_findings(old_bytes))
    comparison = compare(read_side("old", "old", old_bytes), read_side("new", "new", new_bytes))
    assert alerts.new and alerts.resolved  # the test compares something
    assert sorted(keys(alerts.new)) == sorted((c.finding.code, c.finding.subject) for c in comparison.opened)
    assert sorted(keys(alerts.resolved)) == sorted(
        (c.finding.code, c.finding.subject) for c in comparison.closed
    )


def test_a_digest_at_a_minimum_severity_lists_those_at_or_above_it_and_counts_the_rest() -> None:
    """``at_least``: what notifiers are told at ``notify_min_severity``; what is open stays whole."""
    before = [finding("dag-no-owner", "gone", severity="Info"),
              finding("dag-no-owner", "fixed", severity="Warning")]  # fmt: skip
    now = [
        finding("dag-no-description", "a", severity="Info"),
        finding("dag-no-owner", "b", severity="Warning"),
        finding("dag-import-error", "c", severity="Error"),
        finding("dag-no-description", "d", severity="Info"),
    ]
    digest = finding_changes(now, before).at_least("Warning")
    assert keys(digest.new) == [("dag-no-owner", "b"), ("dag-import-error", "c")]
    assert keys(digest.resolved) == [("dag-no-owner", "fixed")]
    assert digest.held_back == 2 and len(digest.open) == 4
    assert digest.text("prod").splitlines() == [
        "2 CoreModels findings in prod new since the last export:",
        "- Error dag-import-error c: dag-import-error c",
        "- Warning dag-no-owner b: dag-no-owner b",
        "1 resolved since the last export:",
        "- Warning dag-no-owner fixed: dag-no-owner fixed",
        "2 more new below Warning, not listed",
    ]
    assert finding_changes(now, before).at_least("Info").new == finding_changes(now, before).new
    assert finding_changes(now, before).at_least("Info").held_back == 0


def test_a_finding_waived_since_is_announced_as_waived_not_resolved() -> None:
    """Open before, still there now but waived: nothing was fixed, so it is not among the resolved
    (it was); one gone altogether is."""
    before = [finding("dag-no-owner", subject, "Warning") for subject in ("a", "b", "c")]
    now = [
        finding("dag-no-owner", "a", "Warning", waived={"reason": "owned by ops", "expires": None}),
        finding("dag-no-owner", "c", "Warning"),
    ]
    changes = finding_changes(now, before)
    assert keys(changes.resolved) == [("dag-no-owner", "b")]
    assert keys(changes.waived) == [("dag-no-owner", "a")]
    assert changes.waived[0]["waived"] == {"reason": "owned by ops", "expires": None}  # as it is now
    assert keys(changes.new) == [] and keys(changes.open) == [("dag-no-owner", "c")]
    assert changes.summary() == {"new": 0, "resolved": 1, "waived": 1}
    text = changes.text("prod")
    assert "1 resolved since the last export:\n- Warning dag-no-owner b: " in text
    assert "1 waived since the last export (still there, not resolved):\n- Warning dag-no-owner a: " in text
    assert "dag-no-owner a" not in text.split("1 waived since")[0]
    # a digest at a higher severity leaves out the waived ones below it, as it does the resolved
    assert changes.at_least("Error").waived == () and changes.at_least("Info").waived == changes.waived
