"""Triggers, sensors and owner links captured from a real Airflow API server of the installed line.

The server serves tests/fixtures/link_dags: a static trigger, a deferrable sensor, a trigger of a
templated target, a trigger of a DAG that does not exist, an active DAG waiting on a paused one,
two DAGs with owner links (one whose details the capture reads, one whose it does not), and one DAG
with a deadline alert (revalue_ledger) among eight without. What each must give is written here by
hand from that code.
"""

from __future__ import annotations

import json

import pytest
from support.helpers import FIXTURES, fingerprint_without_deadlines

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.checks.policy import rules_from_value
from airflow_provider_coremodels.core.estate.model import DAG_LINKS_KEY, DEADLINE_KEY, OWNER_LINKS_KEY
from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_mermaid
from airflow_provider_coremodels.core.views.render import summary_line

pytestmark = pytest.mark.airflow_server


@pytest.fixture(scope="module")
def server():
    from support.airflow_server import AirflowApiServer

    with AirflowApiServer(FIXTURES / "link_dags") as running:
        yield running


def capture_of(server, **settings):
    source = ApiSource(server.base_url, username=server.username, password=server.password, **settings)
    with AirflowApiClient(source) as client:
        result = capture(client)
    estate = result.estate()
    return result, estate, build_document(estate, audit(estate))


@pytest.fixture(scope="module")
def captured(server):
    return capture_of(server)


def test_known_targets_are_edges_between_dags(captured) -> None:
    _, estate, document = captured
    assert [e for e in document["lineage"] if e["dependentKind"] == e["dependsOnKind"]] == [
        {"dependent": "finance_month_end", "dependentKind": "dag", "dependsOn": "revalue_ledger",
         "dependsOnKind": "dag", "external": False, "via": "sensor"},
        {"dependent": "nightly_audit", "dependentKind": "dag", "dependsOn": "archive_ledger",
         "dependsOnKind": "dag", "external": False, "via": "sensor"},
        {"dependent": "orders_reconcile", "dependentKind": "dag", "dependsOn": "load_orders",
         "dependsOnKind": "dag", "external": False, "via": "trigger"},
    ]  # fmt: skip
    dags = {d.identity: d for d in estate.dags()}
    assert json.loads(dags["finance_month_end"].metadata[DAG_LINKS_KEY]) == [
        {"dag": "revalue_ledger", "task": "wait_revalued", "via": "sensor"}
    ]
    assert "3 between DAGs (trigger or sensor)" in summary_line(document)
    assert "|trigger|" in to_mermaid(LineageGraph.from_document(document))


def test_an_active_dag_waiting_on_a_paused_one_is_a_finding(captured) -> None:
    _, _, document = captured
    assert [(f["code"], f["subject"], f["detail"]) for f in document["findings"] if "link" in f["code"]] == [
        ("dag-link-paused", "nightly_audit.wait_archive", "waits on DAG archive_ledger, which is paused"),
    ]


def test_targets_the_graph_hides_are_one_record_each(captured) -> None:
    """Airflow 3.3 draws only links between DAGs the user may read: a template (no DAG id) and a DAG
    that does not exist are left out of the graph, so each task is named, never guessed at."""
    _, _, document = captured
    named = {
        r.get("subject"): r["message"]
        for r in document["lossiness"]
        if "links to is not known" in r["message"]
    }
    assert sorted(named) == ["fanout.kick_missing", "fanout.kick_templated"]
    assert all("the dependency graph does not show it" in message for message in named.values())


def test_owner_links_are_carried_where_the_details_were_read(captured) -> None:
    result, estate, document = captured
    dags = {d.identity: d for d in estate.dags()}
    assert json.loads(dags["owned_by_team"].metadata[OWNER_LINKS_KEY]) == {
        "data-eng": "https://wiki.example.com/teams/data-eng"
    }
    assert OWNER_LINKS_KEY not in dags["owned_described"].metadata  # its details were not read
    records = [r["message"] for r in document["lossiness"] if r["message"].startswith("owner links")]
    assert records == [
        "owner links (owner_links) known only for the 1 of 9 DAGs whose details were read (those "
        "scheduled on assets or without a description); the others' are unknown"
    ]
    assert result.summary.documentation == 1  # the one details request, asked for its doc_md anyway


def test_deadline_alerts_are_read_one_request_per_dag(captured) -> None:
    """Airflow 3.3 serves a DAG's deadline alerts only to its UI, one DAG per request: the one DAG
    with an alert carries it (no id or creation time, which change at each re-serialization), every
    other DAG carries ``[]`` (read: none), and nothing says they are unknown."""
    result, estate, document = captured
    dags = {d.identity: d for d in estate.dags()}
    assert json.loads(dags["revalue_ledger"].metadata[DEADLINE_KEY]) == [
        {"interval": 7200, "name": "late-close", "reference": "DagRunQueuedAtDeadline"}
    ]
    assert {dag_id: d.metadata[DEADLINE_KEY] for dag_id, d in dags.items() if dag_id != "revalue_ledger"} == {
        dag_id: "[]" for dag_id in dags if dag_id != "revalue_ledger"
    }
    assert result.summary.deadlines == len(dags) == 9
    assert "9 for deadline alerts" in result.summary.line()
    assert not [r for r in document["lossiness"] if "deadline" in r["message"]]


def test_the_deadline_rule_judges_every_dag(captured) -> None:
    _, estate, _ = captured
    policy = rules_from_value([{"code": "policy-deadline", "require": {"deadline": True}}])
    document = build_document(estate, audit(estate, policy=policy))
    failing = {f["subject"]: f["detail"] for f in document["findings"] if f["code"] == "policy-deadline"}
    assert sorted(failing) == sorted(d.identity for d in estate.dags() if d.identity != "revalue_ledger")
    assert set(failing.values()) == {"deadline alerts: none"}
    assert document["policy"]["notChecked"] == {}
    none = rules_from_value([{"code": "policy-no-deadline", "require": {"deadline": False}}])
    document = build_document(estate, audit(estate, policy=none))
    assert [
        (f["subject"], f["detail"]) for f in document["findings"] if f["code"] == "policy-no-deadline"
    ] == [("revalue_ledger", "deadline alerts: late-close: 2h after DagRunQueuedAtDeadline")]


def test_deadline_alerts_turned_off_are_not_asked_for_and_said_unknown(server, captured) -> None:
    """``deadline_alerts=False`` (the connection's extra, ``--no-deadline-alerts``): no request per
    DAG, no DAG carries alerts (unknown, not none), one record says why, the rules' check judges
    no DAG, and everything else is the capture with them."""
    result, estate, document = capture_of(server, deadline_alerts=False)
    assert result.summary.deadlines == 0
    assert "deadline alerts" not in result.summary.line()
    assert result.summary.requests == captured[0].summary.requests - 9
    assert not [d.identity for d in estate.dags() if DEADLINE_KEY in d.metadata]
    assert [r["message"] for r in document["lossiness"] if "deadline" in r["message"]] == [
        "deadline alerts unknown: not read, as the source asks (the connection's deadline_alerts "
        "extra is false, or --no-deadline-alerts); the rules' deadline check is not judged"
    ]
    policy = rules_from_value([{"code": "policy-deadline", "require": {"deadline": True}}])
    judged = build_document(estate, audit(estate, policy=policy))
    assert not [f for f in judged["findings"] if f["code"] == "policy-deadline"]
    assert judged["policy"]["notChecked"] == {"deadline alerts unknown": 9}
    with_alerts = captured[2]
    assert document["lineage"] == with_alerts["lineage"]
    assert document["findings"] == with_alerts["findings"]
    # the fingerprint is that of a capture that cannot read them (a line before 3.3, MWAA)
    assert document["fingerprint"] == fingerprint_without_deadlines(captured[1])
    assert document["fingerprint"] != with_alerts["fingerprint"]
