"""The link estate on every Airflow line, replayed: triggers, sensors, owner links and deadline alerts.

``tests/fixtures/versions/<line>/links.json.gz`` is a real server of each line (2.11.2, 3.0.6, 3.1.8,
3.2.2, 3.3.2) serving ``tests/fixtures/link_dags`` and answering the provider's capture
(``dev/record_versions.py --scenario links``). What the code declares is written here by hand from
that file: three links between DAGs with a static target (``load_orders`` triggers
``orders_reconcile``; ``finance_month_end`` waits on ``revalue_ledger``; the active ``nightly_audit``
waits on the paused ``archive_ledger``), a trigger of a templated target and one of a DAG that does
not exist (both in ``fanout``), owner links on ``owned_by_team`` (whose details the capture reads)
and ``owned_described`` (whose it does not), and a deadline alert on ``revalue_ledger`` where the
line has them (3.1+). What each line shows of it is stated per line below, and where a line cannot
show something, the record that says so.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

import pytest
from support.helpers import FIXTURES
from support.recording import ReplayServer, capture_clock, load_recording

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.core import Estate, audit, build_document
from airflow_provider_coremodels.core.checks.policy import rules_from_value
from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY, OWNER_LINKS_KEY

LINES = ("2.11.2", "3.0.6", "3.1.8", "3.2.2", "3.3.2")
DAGS = (
    "archive_ledger",
    "fanout",
    "finance_month_end",
    "load_orders",
    "nightly_audit",
    "orders_reconcile",
    "owned_by_team",
    "owned_described",
    "revalue_ledger",
)
#: (dependent, dependsOn, via, external): the links whose target is a DAG id the code states.
STATIC = [
    ("finance_month_end", "revalue_ledger", "sensor", False),
    ("nightly_audit", "archive_ledger", "sensor", False),
    ("orders_reconcile", "load_orders", "trigger", False),
]
MISSING = ("no_such_dag", "fanout", "trigger", True)
LINK_TASKS = [
    "fanout.kick_missing",
    "fanout.kick_templated",
    "finance_month_end.wait_revalued",
    "load_orders.kick_reconcile",
    "nightly_audit.wait_archive",
]
ALERT = [{"interval": 7200, "name": "late-close", "reference": "DagRunQueuedAtDeadline"}]


@dataclass(frozen=True)
class Line:
    """What one line's output says of the link estate, by hand."""

    edges: list[tuple[str, str, str, bool]]
    link_findings: list[tuple[str, str]]
    #: task -> the words its record must hold (a target no edge shows)
    unseen: dict[str, str]
    owner_links: bool  # owned_by_team's links carried
    deadlines: bool  # the alerts read (else one record says why not)
    deadline_record: str | None


NO_GRAPH = "no dependency graph was read: Airflow 2 serves none"
TEMPLATE = "names its DAG by a template or a value that is no DAG id ('{{ params.target }}')"
HIDDEN = "the dependency graph does not show it"
NO_ALERTS = "has no deadline alerts (DAG(deadline=...) is new in 3.1)"
NO_ROUTE = "shows a DAG's deadline alerts in no endpoint (GET /ui/dags/{dag_id}/deadlineAlerts is new in 3.3)"

#: 3.0 to 3.2 draw every target as the code wrote it: the missing DAG is an external edge and
#: dag-link-missing, the template a record. 3.3 draws only DAGs the user may read: both are a record.
AS_WRITTEN = dict(
    edges=sorted([*STATIC, MISSING]),  # as the document lists them: by dependent
    link_findings=[
        ("dag-link-missing", "fanout.kick_missing"),
        ("dag-link-paused", "nightly_audit.wait_archive"),
    ],
    unseen={"fanout.kick_templated": TEMPLATE},
    owner_links=True,
)
EXPECTED = {
    # Airflow 2 has no dependency graph (each link task a record), no owner_links in its details
    "2.11.2": Line([], [], {task: NO_GRAPH for task in LINK_TASKS}, False, False, NO_ALERTS),
    "3.0.6": Line(**AS_WRITTEN, deadlines=False, deadline_record=NO_ALERTS),
    "3.1.8": Line(**AS_WRITTEN, deadlines=False, deadline_record=NO_ROUTE),
    "3.2.2": Line(**AS_WRITTEN, deadlines=False, deadline_record=NO_ROUTE),
    "3.3.2": Line(
        STATIC,
        [("dag-link-paused", "nightly_audit.wait_archive")],
        {"fanout.kick_missing": HIDDEN, "fanout.kick_templated": HIDDEN},
        True,
        True,
        None,
    ),
}


@dataclass(frozen=True)
class Replayed:
    estate: Estate
    document: dict[str, Any]
    unrecorded: list[str]
    summary: Any


@functools.cache
def replayed(line: str) -> Replayed:
    recording = load_recording(FIXTURES / "versions" / line / "links.json.gz")
    assert recording["airflow"] == line and recording["scenario"] == "links"
    with ReplayServer(recording["exchanges"]) as server, capture_clock(recording["captured_at"]):
        source = ApiSource(server.base_url, username=recording["username"], password="replayed-password")
        with AirflowApiClient(source) as client:
            captured = capture(client)
        unrecorded = list(server.unrecorded)
    estate = captured.estate()
    return Replayed(estate, build_document(estate, audit(estate)), unrecorded, captured.summary)


@pytest.mark.parametrize("line", LINES)
def test_the_replay_is_the_whole_link_estate(line: str) -> None:
    replay = replayed(line)
    assert replay.unrecorded == []
    assert replay.estate.state.airflow_version == line
    assert sorted(d.identity for d in replay.estate.dags()) == list(DAGS)


@pytest.mark.parametrize("line", LINES)
def test_links_between_dags_where_the_line_shows_them(line: str) -> None:
    edges = [
        (e["dependent"], e["dependsOn"], e["via"], e["external"])
        for e in replayed(line).document["lineage"]
        if e.get("via") in ("trigger", "sensor")
    ]
    assert edges == EXPECTED[line].edges


@pytest.mark.parametrize("line", LINES)
def test_link_findings(line: str) -> None:
    found = [
        (f["code"], f["subject"]) for f in replayed(line).document["findings"] if "dag-link" in f["code"]
    ]
    assert found == EXPECTED[line].link_findings


@pytest.mark.parametrize("line", LINES)
def test_every_link_the_line_cannot_show_is_one_record_naming_its_task(line: str) -> None:
    records = {
        r.get("subject"): r["message"]
        for r in replayed(line).document["lossiness"]
        if "links to is not known" in r["message"] or "names its DAG by a template" in r["message"]
    }
    expected = EXPECTED[line].unseen
    assert sorted(records) == sorted(expected)
    for task, words in expected.items():
        assert words in records[task], (task, records[task])


@pytest.mark.parametrize("line", LINES)
def test_owner_links(line: str) -> None:
    """``owned_by_team``'s details are read (it has no description); ``owned_described``'s are not,
    on any line. Airflow 2's details have no ``owner_links``: one record says so."""
    replay = replayed(line)
    dags = {d.identity: d for d in replay.estate.dags()}
    links = dags["owned_by_team"].metadata.get(OWNER_LINKS_KEY)
    if EXPECTED[line].owner_links:
        assert json.loads(links or "") == {"data-eng": "https://wiki.example.com/teams/data-eng"}
        assert any(r["message"].startswith("owner links") for r in replay.document["lossiness"])
    else:
        assert links is None
        assert [
            r["message"] for r in replay.document["lossiness"] if r["message"].startswith("owner links")
        ] == ["owner links (owner_links) unknown: Airflow 2's REST API shows them for no DAG"]
    assert OWNER_LINKS_KEY not in dags["owned_described"].metadata


@pytest.mark.parametrize("line", LINES)
def test_deadline_alerts(line: str) -> None:
    """3.3: one request per DAG, every DAG's alerts known (``[]`` for none). Before: none read, one
    record saying why, and the rules' ``deadline`` check judges no DAG."""
    replay = replayed(line)
    expected = EXPECTED[line]
    metadata = {d.identity: d.metadata.get(DEADLINE_KEY) for d in replay.estate.dags()}
    records = [r["message"] for r in replay.document["lossiness"] if "deadline alerts" in r["message"]]
    rules = rules_from_value([{"code": "policy-deadline", "require": {"deadline": True}}])
    judged = build_document(replay.estate, audit(replay.estate, policy=rules))
    failing = [f["subject"] for f in judged["findings"] if f["code"] == "policy-deadline"]
    if expected.deadlines:
        assert json.loads(metadata.pop("revalue_ledger") or "") == ALERT
        assert set(metadata.values()) == {"[]"}
        assert records == []
        assert replay.summary.deadlines == len(DAGS)
        assert failing == [d for d in DAGS if d != "revalue_ledger"]
        assert judged["policy"]["notChecked"] == {}
    else:
        assert set(metadata.values()) == {None}
        assert records == [
            f"deadline alerts unknown: Airflow {line} {expected.deadline_record}; "
            "the rules' deadline check is not judged"
        ]
        assert replay.summary.deadlines == 0
        assert failing == []
        assert judged["policy"]["notChecked"] == {"deadline alerts unknown": len(DAGS)}
