"""Alerts and metrics of the export task, end to end: ``dag.test()`` against a real API server.

Three runs of one export DAG (tests/fixtures/alert_dags/coremodels_alerts.py) into one sink, as
an estate's findings change between days: the first export (no previous snapshot), a finding
that opens (a waiver withdrawn), and the same finding closing again (the waiver back). What the
notifiers received is checked where it arrives: Airflow's own ``SmtpNotifier`` delivers to a
real SMTP server on 127.0.0.1, a recording notifier writes the context it was given, and the
metrics are read as a StatsD daemon receives them, from a UDP socket. Between a notifier that
always fails and the others, one waits on a service that never answers (a real TCP server that
accepts and stays silent until the test ends): it is abandoned at its deadline, the others are
called, and the task's process ends with it still waiting. Nothing is mocked.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.airflow_server import migrated_home
from support.dag_runs import api_connection, run_dag
from support.helpers import AIRFLOW_VERSION, REPO, SERVED_ESTATE
from support.listeners import SilentServer, SmtpServer, StatsdListener, running_smtp

pytestmark = pytest.mark.airflow_server

DAG_FILE = "coremodels_alerts.py"
WAIVER = [{"code": "dag-no-description", "subject": "legacy_cleanup", "reason": "retired in Q1"}]


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    yield from running_smtp()


@pytest.fixture(scope="module")
def silent() -> Iterator[SilentServer]:
    with SilentServer() as server:
        yield server


@pytest.fixture(scope="module")
def runs(tmp_path_factory, airflow_server, smtp, silent):
    """The three runs, in order; each with what arrived by mail, by StatsD and at the notifier."""
    home = tmp_path_factory.mktemp("alerts")
    dags = home / "dags"
    dags.mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "alert_dags" / DAG_FILE, dags)
    env = migrated_home(home, dags)
    waivers = home / "waivers.json"
    waivers.write_text(json.dumps(WAIVER))
    notes = home / "notes.jsonl"
    sink = home / "sink"
    env.update(
        AIRFLOW_CONN_AIRFLOW_API_DEFAULT=api_connection(airflow_server),
        AIRFLOW_CONN_SMTP_LOCAL=smtp.connection(),
        AIRFLOW_VAR_COREMODELS_SINKS=str(sink),
        COREMODELS_TEST_NOTES=str(notes),
        COREMODELS_TEST_SILENT=silent.address,
    )
    results = []
    with StatsdListener() as statsd:
        env.update(statsd.env())
        for waived in (True, False, True):
            mails_before, notes_before = len(smtp.messages), _lines(notes)
            result = run_dag(
                {**env, "AIRFLOW_VAR_COREMODELS_WAIVERS": str(waivers) if waived else ""}, DAG_FILE
            )
            log = result.stdout + result.stderr
            assert _marker(result.stdout, "STATE") == "success success", log[-4000:]
            results.append(
                {
                    "log": log,
                    "xcom": json.loads(_marker(result.stdout, "XCOM")),
                    "links": json.loads(_marker(result.stdout, "LINKS")),
                    "mails": smtp.messages[mails_before:],
                    "notes": [json.loads(line) for line in _lines(notes)[len(notes_before) :]],
                    "metrics": StatsdListener.values(statsd.take(), "airflow.coremodels."),
                }
            )
    return results


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _marker(output: str, name: str) -> str:
    return next(line[len(name) + 1 :] for line in output.splitlines() if line.startswith(name + " "))


def test_the_first_export_tells_of_every_open_finding(runs) -> None:
    first = runs[0]
    warnings = SERVED_ESTATE.warnings
    assert first["xcom"]["newFindings"] == warnings and first["xcom"]["resolvedFindings"] == 0
    [note] = first["notes"]
    assert note["title"] == f"{warnings} new in airflow_api_default"  # the notifier's own template
    assert note["first_export"] is True
    assert len(note["new_findings"]) == warnings and "paused-producer" in {
        f["code"] for f in note["new_findings"]
    }
    since = "open (the first export: no previous snapshot):"
    assert note["text"].startswith(f"{warnings} CoreModels findings in airflow_api_default {since}")
    [mail] = first["mails"]
    assert mail["Subject"] == f"{warnings} new CoreModels findings in airflow_api_default"
    assert mail["To"] == "platform@example.com"
    # the failing notifier is one error line, and the others and the task went on
    # (Airflow 3.0's BaseNotifier catches its own notify's errors and logs them itself)
    said = (
        "Failed to send notification: the chat service is down"
        if AIRFLOW_VERSION.startswith("3.0.")
        else "CoreModels notifier BrokenNotifier failed: RuntimeError: the chat service is down"
    )
    assert said in first["log"]


def test_a_notifier_that_never_returns_is_abandoned_and_holds_nothing(runs, silent) -> None:
    """The hung notifier is one line, at its deadline (the DAG sets 2 s); the notifiers after it
    were called (the mail and the note above); each run that told of new findings called it once,
    and ended, in success, while it still waited: its process went, and its connection with it."""
    for run in runs[:2]:
        assert "CoreModels notifier HangingNotifier did not return within 2 s: abandoned" in run["log"]
        assert "notifiers: 4 called (deadline 2 s each): " in run["log"]
        assert run["notes"] and run["mails"]
    assert "HangingNotifier" not in runs[2]["log"]  # nothing new: no notifier called
    assert silent.accepted == 2
    for _ in range(50):  # the server sees each client's end on its next turn (0.2 s at most)
        if silent.hung_up == silent.accepted:
            break
        time.sleep(0.1)
    assert silent.hung_up == 2  # the server never answered: each process's end closed them


def test_a_finding_that_opens_reaches_the_notifiers_alone(runs) -> None:
    second = runs[1]
    assert second["xcom"]["newFindings"] == 1 and second["xcom"]["resolvedFindings"] == 0
    [note] = second["notes"]
    assert note["first_export"] is False
    [new] = note["new_findings"]
    assert (new["code"], new["subject"], new["severity"]) == ("dag-no-description", "legacy_cleanup", "Info")
    assert note["text"] == (
        "1 CoreModels finding in airflow_api_default new since the last export:\n"
        f"- Info dag-no-description legacy_cleanup: {new['message']}"
    )
    [mail] = second["mails"]
    assert mail["Subject"] == "1 new CoreModels findings in airflow_api_default"
    body = (
        mail.get_payload(0).get_payload(decode=True).decode() if mail.is_multipart() else mail.get_payload()
    )
    assert "dag-no-description legacy_cleanup" in body
    assert f"/coremodels/?fingerprint={second['xcom']['fingerprint']}" in body
    assert "findings since the last export: 1 new, 0 resolved" in second["log"]


def test_a_finding_that_closes_is_counted_but_tells_no_one(runs) -> None:
    third = runs[2]
    assert third["xcom"]["newFindings"] == 0 and third["xcom"]["resolvedFindings"] == 1
    assert third["notes"] == [] and third["mails"] == []
    assert "findings since the last export: 0 new, 1 resolved" in third["log"]


def test_the_metrics_reach_statsd_with_and_without_tags(runs) -> None:
    first, second, third = (run["metrics"] for run in runs)
    warnings = SERVED_ESTATE.warnings
    prefix = "airflow.coremodels."
    legacy = f"{prefix}findings.open.airflow_api_default."
    # plain StatsD takes no tags: the tagged names carry the last value sent; the legacy names one each
    assert first[f"{legacy}Warning"] == f"{warnings}|g"
    assert first[f"{legacy}Info"] == "0|g" and first[f"{legacy}Error"] == "0|g"
    assert first[f"{legacy}Warning.paused-producer"] == "1|g"
    assert first[f"{prefix}findings.new.airflow_api_default"] == f"{warnings}|g"
    assert second[f"{legacy}Info"] == "1|g" and second[f"{legacy}Info.dag-no-description"] == "1|g"
    assert second[f"{prefix}findings.new.airflow_api_default"] == "1|g"
    assert third[f"{legacy}Info"] == "0|g"
    assert third[f"{legacy}Info.dag-no-description"] == "0|g"  # set back to 0 as it closed
    assert third[f"{prefix}findings.resolved.airflow_api_default"] == "1|g"
    for run in (first, second, third):
        assert run[f"{prefix}capture.duration"].endswith("|ms")
        assert int(run[f"{prefix}capture.requests.airflow_api_default"].split("|")[0]) > 5
        assert run[f"{prefix}capture.retries.airflow_api_default"] == "0|g"
        assert run[f"{prefix}sinks.failed.airflow_api_default"] == "0|g"


def test_the_task_links_to_the_page_on_its_own_snapshot(runs) -> None:
    for run in runs:
        assert run["links"] == {"CoreModels": f"/coremodels/?fingerprint={run['xcom']['fingerprint']}"}
