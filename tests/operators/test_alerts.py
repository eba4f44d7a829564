"""Alerts and metrics of the export task, end to end: ``dag.test()`` against a real API server.

Four runs of one export DAG (tests/fixtures/alert_dags/coremodels_alerts.py), as an estate's
findings change between days. Into one sink: the first export (no previous snapshot: quiet by
default, the baseline recorded), two findings that open (their waivers withdrawn, a Warning and an
Info, with ``notify_min_severity="warning"``), and the same findings waived again (the waivers back:
counted as waived, not resolved). Into a second, empty sink: a first export told anyway
(``notify_first_export=True``). What the notifiers received is checked where it arrives: Airflow's
own ``SmtpNotifier`` delivers to a real SMTP server on 127.0.0.1, a recording notifier writes the
context it was given, and the metrics are read as a StatsD daemon receives them, from a UDP socket.
Between a notifier that always fails and the others, one waits on a service that never answers (a
real TCP server that accepts and stays silent until the test ends): it is abandoned at its deadline,
the others are called, and the task's process ends with it still waiting. Nothing is mocked.
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
WAIVER = [
    {"code": "dag-no-description", "subject": "legacy_cleanup", "reason": "retired in Q1"},
    {"code": "dag-no-owner", "subject": "legacy_cleanup", "reason": "retired in Q1"},
]
#: Each run: its sink, whether the waivers hold, and the DAG's options (environment variables).
RUNS = (
    ("sink", True, {}),
    ("sink", False, {"COREMODELS_TEST_MIN_SEVERITY": "warning"}),
    ("sink", True, {}),
    ("told", True, {"COREMODELS_TEST_FIRST": "1"}),
)


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpServer]:
    yield from running_smtp()


@pytest.fixture(scope="module")
def silent() -> Iterator[SilentServer]:
    with SilentServer() as server:
        yield server


@pytest.fixture(scope="module")
def runs(tmp_path_factory, airflow_server, smtp, silent):
    """The four runs, in order; each with what arrived by mail, by StatsD and at the notifier."""
    home = tmp_path_factory.mktemp("alerts")
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
        COREMODELS_TEST_NOTES=str(notes),
        COREMODELS_TEST_SILENT=silent.address,
    )
    results = []
    with StatsdListener() as statsd:
        env.update(statsd.env())
        for sink, waived, options in RUNS:
            mails_before, notes_before = len(smtp.messages), _lines(notes)
            run_env = {
                **env,
                **options,
                "AIRFLOW_VAR_COREMODELS_SINKS": str(home / sink),
                "AIRFLOW_VAR_COREMODELS_WAIVERS": str(waivers) if waived else "",
            }
            result = run_dag(run_env, DAG_FILE)
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


def test_the_first_export_records_the_baseline_and_tells_no_one(runs) -> None:
    """The first export into an empty sink: every open finding would be new, so nobody is called,
    and one line says why; the summary and the metrics still count them as new."""
    first = runs[0]
    open_now = SERVED_ESTATE.warnings - 1  # legacy_cleanup's dag-no-owner is waived
    assert first["xcom"]["newFindings"] == open_now and first["xcom"]["snapshotStored"] is True
    assert first["notes"] == [] and first["mails"] == []
    assert "notifiers:" not in first["log"] and "HangingNotifier" not in first["log"]
    said = (
        f"first export (no previous snapshot): the baseline is recorded with {open_now} open finding(s) "
        "and no notifier is called (notify_first_export=True would call them)"
    )
    # once (Airflow 3.0's dag.test() writes each task log line twice: to the console and again)
    assert first["log"].count(said) == (2 if AIRFLOW_VERSION.startswith("3.0.") else 1)


def test_a_first_export_told_anyway_is_one_digest_of_every_open_finding(runs) -> None:
    """``notify_first_export=True``: each notifier is called once, with every open finding."""
    told = runs[3]
    open_now = SERVED_ESTATE.warnings - 1
    assert told["xcom"]["newFindings"] == open_now and told["xcom"]["resolvedFindings"] == 0
    [note] = told["notes"]
    assert note["title"] == f"{open_now} new in airflow_api_default"  # the notifier's own template
    assert note["first_export"] is True
    assert len(note["new_findings"]) == open_now and "paused-producer" in {
        f["code"] for f in note["new_findings"]
    }
    since = "open (the first export: no previous snapshot):"
    plural = "" if open_now == 1 else "s"
    assert note["text"].startswith(f"{open_now} CoreModels finding{plural} in airflow_api_default {since}")
    [mail] = told["mails"]  # one mail for all of them: a digest, not a mail per finding
    assert mail["Subject"] == f"{open_now} new CoreModels findings in airflow_api_default"
    assert mail["To"] == "platform@example.com"
    assert "first export (no previous snapshot)" not in told["log"]
    # the failing notifier is one error line, and the others and the task went on
    # (Airflow 3.0's BaseNotifier catches its own notify's errors and logs them itself)
    said = (
        "Failed to send notification: the chat service is down"
        if AIRFLOW_VERSION.startswith("3.0.")
        else "CoreModels notifier BrokenNotifier failed: RuntimeError: the chat service is down"
    )
    assert said in told["log"]


def test_a_notifier_that_never_returns_is_abandoned_and_holds_nothing(runs, silent) -> None:
    """The hung notifier is one line, at its deadline (the DAG sets 2 s); the notifiers after it
    were called (the mail and the note above); each run that told of new findings called it once,
    and ended, in success, while it still waited: its process went, and its connection with it."""
    for run in (runs[1], runs[3]):
        assert "CoreModels notifier HangingNotifier did not return within 2 s: abandoned" in run["log"]
        assert "notifiers: 4 called (deadline 2 s each): " in run["log"]
        assert run["notes"] and run["mails"]
    for run in (runs[0], runs[2]):  # quiet, then nothing new: no notifier called
        assert "HangingNotifier" not in run["log"]
    assert silent.accepted == 2
    for _ in range(50):  # the server sees each client's end on its next turn (0.2 s at most)
        if silent.hung_up == silent.accepted:
            break
        time.sleep(0.1)
    assert silent.hung_up == 2  # the server never answered: each process's end closed them


def test_findings_that_open_reach_the_notifiers_as_one_digest_at_the_minimum_severity(runs) -> None:
    """Two findings open, a Warning and an Info; at ``notify_min_severity="warning"`` the digest
    lists the Warning and counts the Info, and the task's summary counts both."""
    second = runs[1]
    assert second["xcom"]["newFindings"] == 2 and second["xcom"]["resolvedFindings"] == 0
    [note] = second["notes"]
    assert note["first_export"] is False
    [new] = note["new_findings"]
    assert (new["code"], new["subject"], new["severity"]) == ("dag-no-owner", "legacy_cleanup", "Warning")
    assert note["text"] == (
        "1 CoreModels finding in airflow_api_default new since the last export:\n"
        f"- Warning dag-no-owner legacy_cleanup: {new['message']} (owners: airflow)\n"
        "1 more new below Warning, not listed"
    )
    [mail] = second["mails"]
    assert mail["Subject"] == "1 new CoreModels findings in airflow_api_default"
    body = (
        mail.get_payload(0).get_payload(decode=True).decode() if mail.is_multipart() else mail.get_payload()
    )
    assert "dag-no-owner legacy_cleanup" in body and "1 more new below Warning, not listed" in body
    assert "dag-no-description" not in body
    assert f"/coremodels/?fingerprint={second['xcom']['fingerprint']}" in body
    assert "findings since the last export: 2 new, 0 resolved" in second["log"]


def test_findings_waived_again_are_counted_as_waived_and_tell_no_one(runs) -> None:
    """Issue 45: the findings are still there, waived; they were announced as resolved."""
    third = runs[2]
    assert third["xcom"]["newFindings"] == 0 and third["xcom"]["resolvedFindings"] == 0
    assert third["xcom"]["waivedFindings"] == 2
    assert third["notes"] == [] and third["mails"] == []
    assert "findings since the last export: 0 new, 0 resolved, 2 waived" in third["log"]


def test_the_metrics_reach_statsd_with_and_without_tags(runs) -> None:
    first, second, third, _ = (run["metrics"] for run in runs)
    warnings = SERVED_ESTATE.warnings
    prefix = "airflow.coremodels."
    legacy = f"{prefix}findings.open.airflow_api_default."
    # plain StatsD takes no tags: the tagged names carry the last value sent; the legacy names one each
    assert first[f"{legacy}Warning"] == f"{warnings - 1}|g"
    assert first[f"{legacy}Info"] == "0|g" and first[f"{legacy}Error"] == "0|g"
    assert first[f"{legacy}Warning.paused-producer"] == "1|g"
    assert first[f"{prefix}findings.new.airflow_api_default"] == f"{warnings - 1}|g"  # quiet, yet counted
    assert second[f"{legacy}Info"] == "1|g" and second[f"{legacy}Info.dag-no-description"] == "1|g"
    assert second[f"{legacy}Warning"] == f"{warnings}|g"
    assert second[f"{prefix}findings.new.airflow_api_default"] == "2|g"  # the digest's minimum aside
    assert third[f"{legacy}Info"] == "0|g"
    assert third[f"{legacy}Info.dag-no-description"] == "0|g"  # set back to 0 as it closed
    assert third[f"{legacy}Warning.dag-no-owner"] == "0|g"
    assert third[f"{prefix}findings.resolved.airflow_api_default"] == "0|g"
    assert third[f"{prefix}findings.waived.airflow_api_default"] == "2|g"
    for run in (first, second, third):
        assert run[f"{prefix}capture.duration"].endswith("|ms")
        assert int(run[f"{prefix}capture.requests.airflow_api_default"].split("|")[0]) > 5
        assert run[f"{prefix}capture.retries.airflow_api_default"] == "0|g"
        assert run[f"{prefix}sinks.failed.airflow_api_default"] == "0|g"


def test_the_task_links_to_the_page_on_its_own_snapshot(runs) -> None:
    for run in runs:
        assert run["links"] == {"CoreModels": f"/coremodels/?fingerprint={run['xcom']['fingerprint']}"}
