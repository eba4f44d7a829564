"""Capture against a real Airflow 3.3 API server on 127.0.0.1 (SQLite, the example estate)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import jwt
import pytest
from support.counting_proxy import CountingProxy
from support.helpers import CLI_GROUP, REPO, artifact_paths

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.core import audit, build_document, parse_artifacts

pytestmark = pytest.mark.airflow_server

ESTATE = REPO / "example_dags" / "estate"


def fixture_document() -> dict:
    """The audit of the recorded fixtures, with fileloc moved to this checkout.

    The fixtures were recorded in a checkout at /work/main; a DAG's fileloc is an absolute
    path, so a checkout elsewhere (CI) sees the same estate under another root. They were recorded
    before the capture read Airflow 3.3's deadline alerts: each DAG gets the ``[]`` a capture now
    reads for it (the estate declares no deadline alert).
    """
    recorded_root = json.loads(artifact_paths("airflow3")["dags"].read_bytes())["dags"][0]["fileloc"]
    recorded_root = recorded_root[: recorded_root.index("/example_dags/")]
    data = {
        name: path.read_bytes().replace(
            recorded_root.encode() + b"/example_dags/", str(REPO).encode() + b"/example_dags/"
        )
        for name, path in artifact_paths("airflow3").items()
    }
    dags = json.loads(data["dags"])
    for dag in dags["dags"]:
        dag.setdefault("deadline_alerts", [])
    estate = parse_artifacts(json.dumps(dags).encode(), data["tasks"], data["datasets"])
    return build_document(estate, audit(estate))


def governed(document: dict) -> dict:
    """What must match between a live capture and the recording: everything but provenance and
    the volatile freshness facts (times of this server's own asset events)."""
    return {key: value for key, value in document.items() if key not in ("state", "freshness")} | {
        "counts": document["state"]["counts"],
        "facts": document["state"]["facts"],
    }


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        cwd=REPO,
    )


def test_capture_then_offline_audit_matches_the_recorded_fixtures(airflow_server, tmp_path: Path) -> None:
    out = tmp_path / "captured"
    result = cli(
        "capture",
        "--base-url",
        airflow_server.base_url,
        "--username",
        airflow_server.username,
        "--password-env",
        "AF_PASSWORD",
        "--out",
        str(out),
        env={"AF_PASSWORD": airflow_server.password},
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dags.json", "datasets.json", "tasks.json"]
    assert result.stdout.startswith(
        "captured 6 DAGs, 11 tasks, 4 assets: 25 requests (2 for asset schedules, 1 for doc_md, "
        "6 for deadline alerts, 1 for freshness), 0 retries, "
    )
    assert airflow_server.password not in result.stdout + result.stderr

    audited = cli(
        "audit",
        "--dags",
        str(out / "dags.json"),
        "--tasks",
        str(out / "tasks.json"),
        "--datasets",
        str(out / "datasets.json"),
        "--format",
        "json",
    )
    assert audited.returncode == 0, audited.stderr
    assert governed(json.loads(audited.stdout)) == governed(fixture_document())


def test_captured_files_have_the_documented_shapes(airflow_server, tmp_path: Path) -> None:
    source = ApiSource(
        airflow_server.base_url, username=airflow_server.username, password=airflow_server.password
    )
    with AirflowApiClient(source) as client:
        result = capture(client, keep_raw=True)
    assert set(result.dags) == {
        "dags",
        "total_entries",
        "dag_warnings",
        "captured_at",
        "failed_latest_run",
        "import_errors",  # none here: every file imports
        "includes_stale",  # the list holds the stale DAGs too
        "lossiness",  # what the capture could not get: nothing here
    }
    assert (result.dags["import_errors"], result.dags["includes_stale"], result.dags["lossiness"]) == (
        [],
        True,
        [],
    )
    assert result.dags["captured_at"] == result.state.captured_at
    assert result.dags["failed_latest_run"] == []  # no DAG has run on this server
    assert result.dags["total_entries"] == len(result.dags["dags"]) == 6
    assert all(set(response) >= {"tasks"} for response in result.tasks.values())
    assert set(result.datasets) == {
        "assets",
        "total_entries",
        "asset_aliases",
        "asset_events",
        "inactive_assets",  # none here: no asset was refused
        "dependencies",  # the dependency graph the references are checked against
    }
    # the asset-scheduled DAGs carry their condition, from their details
    conditions = {d["dag_id"]: d.get("asset_expression") for d in result.dags["dags"]}
    assert [dag_id for dag_id, condition in conditions.items() if condition] == [
        "customer_report",
        "daily_revenue",
    ]
    # raw objects are kept whole for --out: volatile fields included
    assert "last_parsed_time" in result.dags["dags"][0]
    assert result.state.api_version == "v2"
    assert result.state.airflow_version == "3.3.2"
    assert result.state.captured_at.endswith("Z")


def test_reduced_capture_gives_the_same_snapshot_as_raw(airflow_server) -> None:
    """Without --out, objects are cut down as they arrive; the snapshot must not change."""
    source = ApiSource(
        airflow_server.base_url, username=airflow_server.username, password=airflow_server.password
    )
    documents = []
    for keep_raw in (True, False):
        with AirflowApiClient(source) as client:
            estate = capture(client, keep_raw=keep_raw).estate()
        documents.append(build_document(estate, audit(estate)))
    raw, reduced = documents
    assert reduced["fingerprint"] == raw["fingerprint"]
    assert governed(reduced) == governed(raw)
    with AirflowApiClient(source) as client:
        small = capture(client, keep_raw=False)
    assert set(small.dags["dags"][0]) <= {
        "dag_id",
        "description",
        "fileloc",
        "tags",
        "owners",
        "is_paused",
        "schedule_interval",
        "timetable_summary",
        "timetable_description",
        "bundle_name",
        "relative_fileloc",
        "asset_expression",
        "doc_md",  # from the details of a DAG without a description
        "deadline_alerts",  # from /ui/dags/{dag_id}/deadlineAlerts (Airflow 3.3), reduced
        "dag_display_name",
        "max_active_runs",  # read by the team's rules (core/checks/policy.py)
        "is_stale",  # a stale DAG is broken or gone (core/reading/broken.py)
        "has_import_errors",
        "next_dagrun_run_after",  # volatile: read by the freshness rules, never fingerprinted
        "timetable_partitioned",
    }


def test_request_count_is_the_minimum(airflow_server) -> None:
    """version + token + 1 DAG page (stale DAGs too) + 1 tasks request per DAG + 1 asset page; for
    the asset model the details of the 2 asset-scheduled DAGs, 1 alias page, 1 page of DAG warnings,
    1 page of every asset (refused ones too) and the dependency graph (no asset here is reached
    through an alias: no event request); 1 page of import errors and the details of the 1 DAG
    without a description (its doc_md); for the freshness rules 1 page of the DAGs whose latest run
    failed (Airflow 3.3 says each asset's last update in the asset list itself); and 1 deadline-alerts
    request per DAG (Airflow 3.3's UI route takes one DAG). Counted on the wire."""
    with CountingProxy(airflow_server.base_url) as proxy:
        source = ApiSource(proxy.base_url, username=airflow_server.username, password=airflow_server.password)
        with AirflowApiClient(source) as client:
            result = capture(client)
        assert sorted(proxy.requests) == sorted(
            [
                ("GET", "/api/v2/version"),
                ("POST", "/auth/token"),
                ("GET", "/api/v2/dags?exclude_stale=false&limit=100&offset=0&order_by=dag_id"),
                ("GET", "/api/v2/assets?limit=100&offset=0&order_by=id"),
                ("GET", "/api/v2/assets?only_active=false&limit=100&offset=0&order_by=id"),
                ("GET", "/api/v2/assets/aliases?limit=100&offset=0&order_by=id"),
                ("GET", "/api/v2/dagWarnings?limit=100&offset=0&order_by=dag_id"),
                ("GET", "/api/v2/importErrors?limit=100&offset=0&order_by=import_error_id"),
                ("GET", "/ui/dependencies"),
                ("GET", "/api/v2/dags?last_dag_run_state=failed&limit=100&offset=0&order_by=dag_id"),
                ("GET", "/api/v2/dags/customer_report/details"),
                ("GET", "/api/v2/dags/daily_revenue/details"),
                ("GET", "/api/v2/dags/legacy_cleanup/details"),
            ]
            + [("GET", f"/api/v2/dags/{dag_id}/tasks") for dag_id in sorted(result.tasks)]
            + [("GET", f"/ui/dags/{dag_id}/deadlineAlerts?limit=100") for dag_id in sorted(result.tasks)]
        )
    assert (result.summary.requests, result.summary.freshness, result.summary.deadlines) == (25, 1, 6)
    assert (result.summary.schedules, result.summary.alias_writers, result.summary.documentation) == (2, 0, 1)
    assert result.summary.retries == 0


def test_wrong_password_exits_3_naming_url_and_status(airflow_server, tmp_path: Path) -> None:
    canary = "canary-Wr0ng-pa55word"
    result = cli(
        "capture",
        "--base-url",
        airflow_server.base_url,
        "--username",
        "admin",
        "--password-env",
        "AF_PASSWORD",
        "--out",
        str(tmp_path),
        env={"AF_PASSWORD": canary},
    )
    assert result.returncode == 3
    assert result.stderr == (
        f"error: authentication refused by {airflow_server.base_url}/auth/token: HTTP 401 "
        "(check the username and password)\n"
    )
    assert canary not in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []


def test_expired_token_is_renewed_once(airflow_server) -> None:
    """A JWT that expires mid-capture is renewed with one POST /auth/token, and the capture completes."""
    source = ApiSource(
        airflow_server.base_url, username=airflow_server.username, password=airflow_server.password
    )
    with AirflowApiClient(source) as client:
        client.connect()
        claims = jwt.decode(client._bearer, options={"verify_signature": False})
        claims.update(iat=int(time.time()) - 7200, nbf=int(time.time()) - 7200, exp=int(time.time()) - 3600)
        client._bearer = jwt.encode(
            claims, airflow_server.env["AIRFLOW__API_AUTH__JWT_SECRET"], algorithm="HS512"
        )
        result = capture(client)
    assert result.summary.dags == 6
    assert result.lossiness == []


def test_a_rejected_static_token_is_an_auth_failure(airflow_server, tmp_path: Path) -> None:
    result = cli(
        "capture",
        "--base-url",
        airflow_server.base_url,
        "--token-env",
        "AF_TOKEN",
        "--out",
        str(tmp_path),
        env={"AF_TOKEN": "not-a-jwt"},
    )
    assert result.returncode == 3
    # Airflow 3 answers 403 to a token it cannot decode (401 is for an expired one); the DAG and
    # asset lists are requested at once, so either may be the one that reports it
    denied = re.escape(f"error: access denied by {airflow_server.base_url}/api/v2/") + r"(dags|assets)"
    assert re.fullmatch(denied + r": HTTP 403: Invalid JWT token\n", result.stderr)
    assert "not-a-jwt" not in result.stderr


@CLI_GROUP
def test_airflow_cli_capture_with_a_connection(airflow_server, tmp_path: Path) -> None:
    """`airflow coremodels capture --conn-id` with the connection from an AIRFLOW_CONN_* variable."""
    connection = json.dumps(
        {
            "conn_type": "airflow_api",
            "host": airflow_server.base_url,
            "login": airflow_server.username,
            "password": airflow_server.password,
        }
    )
    env = {**os.environ, "AIRFLOW_CONN_AIRFLOW_API": connection, "AIRFLOW_HOME": str(tmp_path / "home")}
    airflow = str(Path(sys.executable).with_name("airflow"))
    result = subprocess.run(
        [airflow, "coremodels", "capture", "--conn-id", "airflow_api", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("captured 6 DAGs, 11 tasks, 4 assets")
    assert airflow_server.password not in result.stdout + result.stderr
    # Airflow's lookup would cache the connection as a URI and warn about airflow_api's underscore
    assert "shall not contain '_'" not in result.stdout + result.stderr
    assert json.loads((tmp_path / "out" / "dags.json").read_bytes())["total_entries"] == 6


def test_python_m_capture_with_an_undefined_connection_exits_2(capsys, tmp_path: Path) -> None:
    code = main(["capture", "--conn-id", "nowhere", "--out", str(tmp_path)])
    assert code == 2
    assert capsys.readouterr().err == (
        "error: connection 'nowhere' is not defined: add it to Airflow (airflow connections add, or the UI) "
        "or set AIRFLOW_CONN_NOWHERE\n"
    )


@pytest.fixture(scope="module")
def capped_server():
    """A second real server whose pages hold at most 2 items."""
    from support.airflow_server import AirflowApiServer

    with AirflowApiServer(ESTATE, extra_env={"AIRFLOW__API__MAXIMUM_PAGE_LIMIT": "2"}) as server:
        yield server


def test_server_capping_pages_still_yields_every_dag_and_asset(capped_server) -> None:
    with CountingProxy(capped_server.base_url) as proxy:
        source = ApiSource(proxy.base_url, username=capped_server.username, password=capped_server.password)
        with AirflowApiClient(source) as client:
            result = capture(client)
        dag_pages = sorted(
            path for _, path in proxy.requests if path.startswith("/api/v2/dags?exclude_stale=false&limit")
        )
        asset_pages = sorted(path for _, path in proxy.requests if path.startswith("/api/v2/assets?limit"))
    assert sorted(d["dag_id"] for d in result.dags["dags"]) == [
        "backfill_customers",
        "customer_report",
        "daily_revenue",
        "legacy_cleanup",
        "load_orders",
        "sync_crm",
    ]
    assert len(result.datasets["assets"]) == 4
    assert dag_pages == [
        f"/api/v2/dags?exclude_stale=false&limit=100&offset={o}&order_by=dag_id" for o in (0, 2, 4)
    ]
    assert asset_pages == [f"/api/v2/assets?limit=100&offset={o}&order_by=id" for o in (0, 2)]
    assert all("limit=0" not in path for _, path in proxy.requests)
    # version, token, 3 DAG pages, 6 tasks, 2 asset pages, 2 pages of every asset, 3 details, 1 alias
    # page, 1 warnings page, 1 import errors page, the dependency graph, 1 page of failed latest runs,
    # 6 deadline-alerts requests
    assert result.summary.requests == 2 + 3 + 6 + 2 + 2 + 3 + 1 + 1 + 1 + 1 + 1 + 6
    estate = result.estate()
    assert build_document(estate, audit(estate))["fingerprint"] == fixture_document()["fingerprint"]


@pytest.mark.parametrize(
    "airflow_cli",
    [pytest.param(False, id="python-m"), pytest.param(True, id="airflow-coremodels", marks=CLI_GROUP)],
)
def test_a_connection_stored_in_the_metadata_database_works_from_the_command_line(
    airflow_server, tmp_path: Path, airflow_cli: bool
) -> None:
    """`airflow connections add` keeps it in the database, where the SDK's lookup outside a task
    does not look: both front doors still find it, as `airflow connections get` does."""
    from support.airflow_server import migrated_home

    env = migrated_home(tmp_path / "home", tmp_path / "dags")
    airflow = str(Path(sys.executable).with_name("airflow"))
    added = subprocess.run(
        [airflow, "connections", "add", "stored_api", "--conn-type", "airflow_api",
         "--conn-host", airflow_server.base_url, "--conn-login", airflow_server.username,
         "--conn-password", airflow_server.password],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert not any(key.startswith("AIRFLOW_CONN_") for key in env)
    python_m = [sys.executable, "-m", "airflow_provider_coremodels"]
    front_door = [airflow, "coremodels"] if airflow_cli else python_m
    result = subprocess.run(
        [*front_door, "capture", "--conn-id", "stored_api", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("captured 6 DAGs, 11 tasks, 4 assets")
    assert airflow_server.password not in result.stdout + result.stderr
    # Airflow's lookup would cache the connection as a URI and warn about airflow_api's underscore
    assert "shall not contain '_'" not in result.stdout + result.stderr
