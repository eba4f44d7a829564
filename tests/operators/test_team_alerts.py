"""Alerts routed by team, end to end: ``dag.test()`` of an export DAG against a real Airflow 3.3
API server serving example_dags/estate, Airflow's own ``SmtpNotifier`` delivering to a real SMTP
server on 127.0.0.1, and the metrics read from a UDP socket as StatsD receives them.

Two runs into one sink (tests/fixtures/alert_dags/coremodels_team_alerts.py): the first export,
with legacy_cleanup's missing description waived, then the waiver withdrawn. Which mail reaches
which team is worked out by hand from the estate: orders owns paused-producer
s3://lake/orders.parquet (its producer load_orders, owner data-eng), finance owns
asset-unproduced s3://vendor/fx_rates.csv (its consumer daily_revenue, tag finance), crm owns no
finding, and legacy_cleanup's are no team's. Nothing is mocked.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from email.message import Message
from typing import Any

import pytest
from support.airflow_server import migrated_home
from support.dag_runs import api_connection, run_dag
from support.helpers import AIRFLOW_VERSION, REPO
from support.listeners import SmtpServer, StatsdListener, running_smtp

from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.jobs.alerts import team_routes

pytestmark = pytest.mark.airflow_server

#: Airflow 3.0's API reports no task inlets, so finance's asset-unproduced is not raised there
#: (support/helpers.py's SERVED_ESTATE): finance then owns no finding, as crm.
FINANCE_WARNED = not AIRFLOW_VERSION.startswith("3.0.")

DAG_FILE = "coremodels_team_alerts.py"
WAIVER = [{"code": "dag-no-description", "subject": "legacy_cleanup", "reason": "retired in Q1"}]


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    yield from running_smtp()


@pytest.fixture(scope="module")
def runs(tmp_path_factory, airflow_server, smtp) -> list[dict[str, Any]]:
    home = tmp_path_factory.mktemp("team-alerts")
    dags = home / "dags"
    dags.mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "alert_dags" / DAG_FILE, dags)
    env = migrated_home(home, dags)
    waivers = home / "waivers.json"
    waivers.write_text(json.dumps(WAIVER))
    notes = home / "notes.jsonl"
    env.update(
        AIRFLOW_CONN_AIRFLOW_API_DEFAULT=api_connection(airflow_server),
        AIRFLOW_CONN_SMTP_LOCAL=smtp.connection(),
        AIRFLOW_VAR_COREMODELS_SINKS=str(home / "sink"),
        COREMODELS_TEST_NOTES=str(notes),
    )
    results = []
    with StatsdListener() as statsd:
        env.update(statsd.env())
        for waived in (True, False):
            mails_before = len(smtp.messages)
            notes_before = len(notes.read_text().splitlines()) if notes.exists() else 0
            result = run_dag(
                {**env, "AIRFLOW_VAR_COREMODELS_WAIVERS": str(waivers) if waived else ""}, DAG_FILE
            )
            log = result.stdout + result.stderr
            assert "STATE success success" in result.stdout, log[-4000:]
            lines = notes.read_text().splitlines() if notes.exists() else []
            results.append(
                {
                    "log": log,
                    "mails": {mail["To"]: mail for mail in smtp.messages[mails_before:]},
                    "count": len(smtp.messages) - mails_before,
                    "notes": [json.loads(line) for line in lines[notes_before:]],
                    "metrics": StatsdListener.values(statsd.take(), "airflow.coremodels."),
                }
            )
    return results


def body(mail: Message) -> str:
    if mail.is_multipart():
        return str(mail.get_payload(0).get_payload(decode=True).decode())  # type: ignore[union-attr]
    return str(mail.get_payload())


def subjects(mail: Message) -> list[str]:
    """The findings a mail names, as ``code subject``."""
    return sorted(
        " ".join(line[2:].split(" ")[1:3]).rstrip(":")
        for line in body(mail).splitlines()
        if line.startswith("- ")
    )


def test_each_team_is_mailed_its_own_new_findings_and_crm_nothing(runs) -> None:
    first = runs[0]
    told = ["finance", "orders", "platform"] if FINANCE_WARNED else ["orders", "platform"]
    assert sorted(first["mails"]) == [f"{team}@example.com" for team in told]
    assert first["count"] == len(told)  # one mail each: crm, which owns no finding, gets none
    orders, platform = (first["mails"][f"{t}@example.com"] for t in ("orders", "platform"))
    assert subjects(orders) == ["paused-producer s3://lake/orders.parquet"]
    assert orders["Subject"] == "1 new findings for orders"
    assert body(orders).startswith("<pre>Team orders: 1 CoreModels finding in airflow_api_default open")
    if FINANCE_WARNED:
        assert subjects(first["mails"]["finance@example.com"]) == [
            "asset-unproduced s3://vendor/fx_rates.csv"
        ]
    assert subjects(platform) == ["dag-no-owner legacy_cleanup"]  # its description is waived today


def test_star_gets_every_new_finding_with_no_team_prefix(runs) -> None:
    [note] = runs[0]["notes"]
    assert note["team"] == "*"
    expected = [("dag-no-owner", []), ("paused-producer", ["orders"])]
    if FINANCE_WARNED:
        expected.insert(0, ("asset-unproduced", ["finance"]))
    assert sorted((f["code"], f["team"]) for f in note["new_findings"]) == expected
    assert note["text"].startswith(f"{len(expected)} CoreModels findings in airflow_api_default open")


def test_a_finding_that_opens_reaches_its_team_alone(runs) -> None:
    """The waiver withdrawn: legacy_cleanup's description opens, no team's; only the platform
    address (unowned) and the catch-all hear of it."""
    second = runs[1]
    assert sorted(second["mails"]) == ["platform@example.com"] and second["count"] == 1
    mail = second["mails"]["platform@example.com"]
    assert mail["Subject"] == "1 new findings for unowned"
    assert subjects(mail) == ["dag-no-description legacy_cleanup"]
    assert body(mail).startswith("<pre>Team unowned: 1 CoreModels finding in airflow_api_default new since")
    [note] = second["notes"]
    assert [f["code"] for f in note["new_findings"]] == ["dag-no-description"]


def test_metrics_are_sent_per_team_tagged_and_by_name(runs) -> None:
    first, second = (run["metrics"] for run in runs)
    legacy = "airflow.coremodels.findings.team."
    assert first[f"{legacy}open.airflow_api_default.orders.Warning"] == "1|g"
    assert first[f"{legacy}open.airflow_api_default.finance.Warning"] == ("1|g" if FINANCE_WARNED else "0|g")
    assert first[f"{legacy}open.airflow_api_default.crm.Warning"] == "0|g"
    assert first[f"{legacy}open.airflow_api_default.unowned.Warning"] == "1|g"
    assert first[f"{legacy}open.airflow_api_default.unowned.Info"] == "0|g"
    assert first[f"{legacy}new.airflow_api_default.orders"] == "1|g"
    assert second[f"{legacy}open.airflow_api_default.unowned.Info"] == "1|g"
    assert second[f"{legacy}new.airflow_api_default.unowned"] == "1|g"
    assert second[f"{legacy}new.airflow_api_default.orders"] == "0|g"


@pytest.mark.parametrize(
    ("value", "teams", "says"),
    [
        (
            {"ordres": []},
            ("orders", "crm"),
            "on_new_findings names 'ordres', which is no team of the rules file",
        ),
        ({"orders": []}, None, "on_new_findings maps teams to notifiers, but the rules name no teams"),
        ({3: []}, ("orders",), "on_new_findings names 3"),
    ],
)
def test_a_mapping_naming_no_team_is_refused_before_the_capture(value: Any, teams: Any, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        team_routes(value, teams)


def test_a_plain_notifier_list_is_no_route_and_each_value_is_a_list() -> None:
    assert team_routes([object()], ("orders",)) is None
    note = object()
    assert team_routes({"orders": note, "*": [note, note], "unowned": None}, ("orders",)) == {
        "orders": (note,),
        "*": (note, note),
        "unowned": (),
    }
