"""What a notifier's templates see of the owners of a new finding's DAG (``coremodels.owners``)."""

from __future__ import annotations

from airflow_provider_coremodels.capture.crawl import CaptureSummary
from airflow_provider_coremodels.core import audit, build_document, build_estate
from airflow_provider_coremodels.core.comparing.changes import FindingChanges
from airflow_provider_coremodels.jobs.alerts import alert_context, notify, notify_teams
from airflow_provider_coremodels.jobs.export import ExportResult


def test_a_new_findings_dag_comes_with_its_owners_and_their_links() -> None:
    """A finding on a task names its DAG's owners too; owner links only where they are known."""
    dags = [
        {"dag_id": "nightly_audit", "owners": ["ops", "data-eng"], "is_paused": False,
         "owner_links": {"ops": "mailto:ops@example.com"}},
        {"dag_id": "archive_ledger", "owners": ["airflow"], "is_paused": True, "description": "Archives"},
    ]  # fmt: skip
    tasks = {
        "nightly_audit": [{"task_id": "wait_archive", "class_ref": {"class_name": "ExternalTaskSensor"}}]
    }
    graph = [
        {"source_id": "dag:archive_ledger", "target_id": "sensor:archive_ledger:nightly_audit:wait_archive"},
        {"source_id": "sensor:archive_ledger:nightly_audit:wait_archive", "target_id": "dag:nightly_audit"},
    ]
    estate = build_estate(
        {"dags": dags, "import_errors": [], "includes_stale": True},
        tasks,
        {"assets": [], "dependencies": {"edges": graph}},
    )
    document = build_document(estate, audit(estate))
    new = tuple(document["findings"])
    assert {(f["code"], f["subject"]) for f in new} >= {
        ("dag-link-paused", "nightly_audit.wait_archive"),
        ("dag-no-owner", "archive_ledger"),
    }
    result = ExportResult(document, CaptureSummary(), [], FindingChanges(new, new, (), first=True))
    assert alert_context(result, None)["owners"] == {
        "nightly_audit": {"owners": ["data-eng", "ops"], "ownerLinks": {"ops": "mailto:ops@example.com"}},
        "archive_ledger": {"owners": ["airflow"]},
    }


def test_a_broken_files_finding_comes_with_the_owners_of_the_dags_it_held() -> None:
    """Issue 37: who must fix a file that does not import is the owner of its DAGs."""
    dags = [
        {"dag_id": "load_orders", "owners": ["data-eng"], "is_paused": False, "is_stale": True,
         "has_import_errors": True, "description": "d", "bundle_name": "dags-folder",
         "relative_fileloc": "orders.py", "fileloc": "/opt/airflow/dags/orders.py"},
    ]  # fmt: skip
    errors = [{"filename": "orders.py", "bundle_name": "dags-folder", "stack_trace": "NameError: boom"}]
    estate = build_estate({"dags": dags, "import_errors": errors, "includes_stale": True}, {}, {"assets": []})
    document = build_document(estate, audit(estate))
    new = tuple(f for f in document["findings"] if f["code"] == "dag-import-error")
    assert [f["subject"] for f in new] == ["dags-folder/orders.py"]
    assert new[0]["detail"].endswith("; owners: data-eng")
    result = ExportResult(document, CaptureSummary(), [], FindingChanges(new, new, ()))
    assert alert_context(result, None)["owners"] == {"load_orders": {"owners": ["data-eng"]}}


def test_each_teams_digest_counts_only_its_own_findings_below_the_minimum() -> None:
    """Team routing and ``notify_min_severity`` together: each team's digest lists its findings at
    the minimum and above, and counts only its own below it (not another team's)."""
    dags = [{"dag_id": "orders_load", "owners": ["orders"], "is_paused": False}]
    estate = build_estate({"dags": dags, "import_errors": [], "includes_stale": True}, {}, {"assets": []})
    document = build_document(estate, audit(estate))

    def finding(subject: str, severity: str, team: str) -> dict[str, object]:
        return {
            "code": "dag-no-owner",
            "subject": subject,
            "severity": severity,
            "message": "m",
            "team": [team],
        }

    new = (
        finding("orders_load", "Error", "orders"),
        finding("orders_tidy", "Info", "orders"),
        finding("finance_close", "Info", "finance"),
        finding("finance_fx", "Info", "finance"),
    )
    told: dict[str, list[dict[str, object]]] = {"orders": [], "finance": [], "*": []}

    def recorder(team: str) -> object:
        return lambda context: told[team].append(context["coremodels"])

    routes = {team: [recorder(team)] for team in told}
    result = ExportResult(document, CaptureSummary(), [], FindingChanges(new, new, ()))
    notify_teams(routes, {}, result, None, min_severity="Warning")

    assert [f["subject"] for f in told["orders"][0]["new_findings"]] == ["orders_load"]
    assert told["orders"][0]["text"].endswith("1 more new below Warning, not listed")
    assert told["finance"] == []  # nothing of its own at Warning or above: not told
    assert told["*"][0]["text"].endswith("3 more new below Warning, not listed")


def test_each_teams_notifier_summary_line_names_the_team() -> None:
    """Issue 45: routed by team, each ``notifiers: ...`` line of the task log says whose notifiers
    it counts (they all read alike); unrouted, the line is as it was."""
    import logging

    dags = [{"dag_id": "orders_load", "owners": ["orders"], "is_paused": False}]
    estate = build_estate({"dags": dags, "import_errors": [], "includes_stale": True}, {}, {"assets": []})
    document = build_document(estate, audit(estate))
    new = tuple(
        {"code": "dag-no-owner", "subject": s, "severity": "Warning", "message": "m", "team": t}
        for s, t in (("orders_load", ["orders"]), ("legacy", []))
    )
    lines: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("test.notifier.lines")
    logger.addHandler(Lines())
    logger.setLevel(logging.INFO)
    routes = {"orders": [lambda context: None], "unowned": [lambda context: None], "*": [lambda c: None]}
    result = ExportResult(document, CaptureSummary(), [], FindingChanges(new, new, ()))
    notify_teams(routes, {}, result, None, logger=logger)
    assert lines == [
        "notifiers of team orders: 1 called (deadline 10 s each): 1 sent, 0 failed, 0 abandoned",
        "notifiers of the unowned findings: 1 called (deadline 10 s each): 1 sent, 0 failed, 0 abandoned",
        "notifiers of every team: 1 called (deadline 10 s each): 1 sent, 0 failed, 0 abandoned",
    ]
    lines.clear()
    notify([lambda context: None], {}, result, None, logger=logger)
    assert lines == ["notifiers: 1 called (deadline 10 s each): 1 sent, 0 failed, 0 abandoned"]


def test_a_finding_waived_since_is_told_as_waived_in_the_log_and_the_templates() -> None:
    from airflow_provider_coremodels.core.comparing.changes import finding_changes
    from airflow_provider_coremodels.operators.export import changes_line

    dags = [{"dag_id": "a", "owners": ["ops"], "is_paused": False}]
    estate = build_estate({"dags": dags, "import_errors": [], "includes_stale": True}, {}, {"assets": []})
    document = build_document(estate, audit(estate))
    before = [{"code": "dag-no-owner", "subject": s, "severity": "Warning", "message": "m"} for s in "ab"]
    now = [{**before[0], "waived": {"reason": "retired", "expires": None}}]
    result = ExportResult(document, CaptureSummary(), [], finding_changes(now, before))
    assert changes_line(result) == "findings since the last export: 0 new, 1 resolved, 1 waived"
    context = alert_context(result, None)
    assert [f["subject"] for f in context["resolved_findings"]] == ["b"]
    assert [f["subject"] for f in context["waived_findings"]] == ["a"]
    assert result.summary()["waivedFindings"] == 1 and result.summary()["resolvedFindings"] == 1
