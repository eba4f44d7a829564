"""Freshness on a real Airflow API server: a producer that succeeded long ago, one whose run
failed, and a watched asset (example_dags/freshness).

``orders_loader`` and ``broken_feed`` run once with ``airflow dags test`` (the second fails);
then the loader's asset event is aged in the metadata database, which no API call can do: a
producer that last succeeded days ago. The audit must name exactly the stale asset and the
failing producer with their consumers, and the export must carry them to the task log,
latest.json, the markdown report and the UI page, while the fingerprint stays that of the estate.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
from support.airflow_server import AirflowApiServer
from support.dag_runs import api_connection, dag_home, run_dag
from support.helpers import REPO, UI_PAGE, WATCHERS_NOTE

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.core import audit
from airflow_provider_coremodels.core.reading.freshness import parse_time
from airflow_provider_coremodels.core.views.markdown import render_markdown

pytestmark = pytest.mark.airflow_server

ORDERS, FEED, DROPS = (
    "s3://lake/fresh/orders",
    "s3://lake/fresh/feed",
    "file:///tmp/coremodels-fresh/drops.csv",
)

AGE_ORDERS = """
import sys
from datetime import datetime, timedelta, timezone
from sqlalchemy import select, update
from airflow.models.asset import AssetEvent, AssetModel
from airflow.utils.session import create_session

with create_session() as session:
    asset_id = session.scalar(select(AssetModel.id).where(AssetModel.uri == "s3://lake/fresh/orders"))
    when = datetime.now(timezone.utc) - timedelta(hours=float(sys.argv[1]))
    done = session.execute(update(AssetEvent).where(AssetEvent.asset_id == asset_id).values(timestamp=when))
    assert done.rowcount == 1, done.rowcount
"""


@pytest.fixture(scope="module")
def sink(tmp_path_factory) -> Path:
    """The export's file sink, which the server's CoreModels page reads."""
    return tmp_path_factory.mktemp("freshness") / "sink"


@pytest.fixture(scope="module")
def server(sink: Path):
    with AirflowApiServer(
        REPO / "example_dags" / "freshness",
        run_dags=("orders_loader",),
        failing_dags=("broken_feed",),
        extra_env={"AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR": str(sink)},
    ) as live:
        yield live


def age_orders(server: AirflowApiServer, hours: float) -> None:
    """The loader's one asset event, moved ``hours`` into the past."""
    server.run_python(
        AGE_ORDERS.replace("sys.argv[1]", repr(str(hours))), what=f"aging the orders event {hours}"
    )


def captured(server: AirflowApiServer):
    source = ApiSource(server.base_url, username=server.username, password=server.password)
    with AirflowApiClient(source) as client:
        return capture(client)


def freshness(findings) -> list[tuple[str, str, str | None]]:
    return [(f.code, f.subject, f.detail) for f in findings if f.section == "Freshness"]


def test_the_audit_names_the_stale_asset_and_the_failing_producer(server) -> None:
    age_orders(server, 24 * 5)
    estate = captured(server).estate()
    result = audit(estate)
    [(stale_code, stale_subject, stale_detail), failing] = freshness(result.findings)
    assert (stale_code, stale_subject) == ("asset-stale", ORDERS)
    assert stale_detail is not None and stale_detail.startswith("last update 5 days ago (")
    assert (
        "; allowed 48 hours (orders_loader runs daily, tolerance 2); producers: orders_loader; "
        in stale_detail
    )
    assert "active consumers: orders_report" in stale_detail
    assert failing == (
        "producer-failing",
        FEED,
        f"producers: broken_feed; active consumers: feed_report{WATCHERS_NOTE}",
    )
    # the watched asset is never judged; the feed (never updated, registered just now) is not stale
    assert result.freshness.judged == 2 and result.freshness.unjudged == {}
    assert DROPS not in {subject for _, subject, _ in freshness(result.findings)}


def test_a_fixed_now_in_the_future_judges_every_asset_by_it(server) -> None:
    age_orders(server, 1)
    estate = captured(server).estate()
    assert freshness(audit(estate).findings)[0][0] == "producer-failing"  # the orders are fresh now
    later = parse_time(estate.state.captured_at or "") + timedelta(days=3)
    codes = [(code, subject) for code, subject, _ in freshness(audit(estate, now=later).findings)]
    assert codes == [("asset-stale", FEED), ("asset-stale", ORDERS), ("producer-failing", FEED)]


@pytest.fixture(scope="module")
def runner_env(tmp_path_factory, server):
    """A separate Airflow home whose DAG folder holds only the export DAG, reading ``server``."""
    env = dag_home(tmp_path_factory, "coremodels_export.py")
    env["AIRFLOW_CONN_AIRFLOW_API_DEFAULT"] = api_connection(server)
    return env


def export_dag(env: dict[str, str], sink: Path) -> str:
    run = run_dag({**env, "AIRFLOW_VAR_COREMODELS_SINKS": str(sink)}, "coremodels_export.py", 300)
    assert "STATE success success" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    return run.stdout + run.stderr


@pytest.fixture(scope="module")
def exported(server, runner_env, sink: Path) -> tuple[str, dict]:
    """The export DAG run once against the producer that last succeeded five days ago."""
    age_orders(server, 24 * 5)
    log = export_dag(runner_env, sink)
    return log, json.loads((sink / "latest.json").read_bytes())


def test_the_task_log_latest_json_and_the_report_carry_freshness(exported) -> None:
    log, stored = exported
    assert f"Warning asset-stale {ORDERS}: Asset has not been updated" in log
    assert f"Warning producer-failing {FEED}: Every active producer of this asset failed" in log
    assert "freshness at " in log and ": 2 assets judged, 1 stale, 1 with failing producers" in log
    assert [(f["code"], f["subject"]) for f in stored["findings"] if f["section"] == "Freshness"] == [
        ("asset-stale", ORDERS),
        ("producer-failing", FEED),
    ]
    report = render_markdown(stored)
    assert f"`{ORDERS}`" in report and "last update 5 days ago" in report
    assert "1 stale, 1 with failing producers" in report


@UI_PAGE
def test_the_ui_page_marks_the_stale_asset(exported, server) -> None:
    """The API server's own CoreModels page, reading the sink the export wrote."""
    page = requests.get(
        f"{server.base_url}/coremodels/", headers={"Authorization": f"Bearer {server.token()}"}, timeout=60
    )
    assert page.status_code == 200
    assert "1 stale, 1 with failing producers" in page.text
    assert f'class="node asset stale has-findings" data-id="{ORDERS}"' in page.text


def test_a_fresh_run_changes_the_findings_not_the_fingerprint(
    exported, server, runner_env, sink: Path
) -> None:
    """The producer runs again (its event is new): the estate is the same, its findings are not."""
    _, stored = exported
    age_orders(server, 1)
    log = export_dag(runner_env, sink)
    again = json.loads((sink / "latest.json").read_bytes())
    assert again["fingerprint"] == stored["fingerprint"]
    assert [f["code"] for f in again["findings"] if f["section"] == "Freshness"] == ["producer-failing"]
    assert f"export: fingerprint {stored['fingerprint']} unchanged, findings changed; {sink} (written)" in log
    assert again["freshness"]["assetUpdates"][ORDERS] > stored["freshness"]["assetUpdates"][ORDERS]
    assert datetime.now(timezone.utc) - parse_time(again["freshness"]["judgedAt"]) < timedelta(minutes=5)
