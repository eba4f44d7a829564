"""Airflow 3's asset constructs on a real Airflow 3.3 API server: capture, audit, request count.

The server serves example_dags/assets (an @asset chain with a paused upstream, a DAG and asset
sharing a name, Asset.ref by name and URI, an alias producer and consumer, a watched asset,
an ``(A & B) | C`` schedule, a name and a URI conflict, an inlet-only reader, a state store);
the alias producer ran once and the scheduler's asset pass ran, as on a live deployment.
The expected lineage, written by hand from the DAG files, is in tests/support/asset_estate.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from support.airflow_server import VIEWER
from support.asset_estate import EXPECTED_ASSET_LINEAGE
from support.counting_proxy import CountingProxy
from support.helpers import REPO

from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, capture
from airflow_provider_coremodels.core import audit, build_document

pytestmark = pytest.mark.airflow_server


def source(server, base_url: str | None = None) -> ApiSource:
    return ApiSource(base_url or server.base_url, username=server.username, password=server.password)


def test_every_declared_dependency_is_a_typed_edge_and_the_findings_tell_the_truth(assets_server) -> None:
    with AirflowApiClient(source(assets_server)) as client:
        captured = capture(client)
    estate = captured.estate()
    document = build_document(estate, audit(estate))
    lineage = {
        (f"{e['dependentKind']}:{e['dependent']}", f"{e['dependsOnKind']}:{e['dependsOn']}", e.get("via", ""))
        for e in document["lineage"]
    }
    assert lineage == EXPECTED_ASSET_LINEAGE
    assert [(f["code"], f["subject"]) for f in document["findings"]] == [
        ("asset-conflict", "s3://lake/inventory/v2"),
        ("asset-conflict", "s3://lake/sales"),
        ("asset-unproduced", "s3://lake/manual_prices"),
        ("dag-no-owner", "clean_orders"),
        ("dag-no-owner", "raw_orders"),
        ("paused-producer", "s3://lake/raw_orders"),
    ]
    # what it could not represent is declared: the reference that matches no asset, and what no
    # endpoint shows (the inputs the @asset functions read by parameter name)
    assert [(r["artifact"], r.get("subject")) for r in document["lossiness"]] == [
        ("dags", None),
        ("datasets", "orders_by_slash_ref"),
    ]
    assert document["lossiness"][0]["message"].startswith("the inputs of @asset functions")


def test_a_read_only_viewer_captures_everything_an_admin_does(assets_server) -> None:
    """The permissions docs/capture.md states: the simple auth manager's viewer role is enough
    for every request, the asset model's included (no lossiness, the same document)."""
    viewer = ApiSource(assets_server.base_url, username=VIEWER[0], password=VIEWER[1])
    with AirflowApiClient(viewer) as client:
        as_viewer = capture(client)
    with AirflowApiClient(source(assets_server)) as client:
        as_admin = capture(client)
    assert as_viewer.lossiness == []
    viewed, administered = (c.estate() for c in (as_viewer, as_admin))
    assert (
        build_document(viewed, audit(viewed))["fingerprint"]
        == (build_document(administered, audit(administered))["fingerprint"])
    )
    # and the role is really the least one: it may read, not change, nor read connections
    token = requests.post(
        f"{assets_server.base_url}/auth/token",
        json={"username": VIEWER[0], "password": VIEWER[1]},
        timeout=30,
    ).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    pause = requests.patch(
        f"{assets_server.base_url}/api/v2/dags/raw_orders",
        json={"is_paused": True},
        headers=headers,
        timeout=30,
    )
    connections = requests.get(f"{assets_server.base_url}/api/v2/connections", headers=headers, timeout=30)
    assert (pause.status_code, connections.status_code) == (403, 403)


def test_request_count_is_the_minimum_plus_the_asset_model(assets_server) -> None:
    """The minimum (version, token, DAG page, a tasks request per DAG, asset page), plus one details
    request per DAG scheduled on assets or without a description, one alias page, one warnings
    page, one import errors page, one page of every asset (refused ones too), the dependency graph,
    and one events page per asset reached through an alias; for the freshness rules, one page of
    the DAGs whose latest run failed; and one deadline-alerts request per DAG (Airflow 3.3's UI
    route takes one DAG). Counted on the wire."""
    with CountingProxy(assets_server.base_url) as proxy:
        with AirflowApiClient(source(assets_server, proxy.base_url)) as client:
            captured = capture(client)
        requests = sorted(path for _, path in proxy.requests)
    scheduled_on_assets = sorted(
        d["dag_id"] for d in captured.dags["dags"] if (d["timetable_summary"] or "").startswith("Asset")
    )
    assert scheduled_on_assets == [
        "clean_orders",
        "export_by_name_ref",
        "exports_consumer",
        "inbox_orders_loader",
        "orders_by_name_ref",
        "orders_by_slash_ref",
        "orders_by_uri_ref",
        "orders_sync_consumer",
        "price_snapshot",
        "valuation",
    ]
    details = sorted(path.split("/")[4] for path in requests if path.endswith("/details"))
    assert details == scheduled_on_assets
    assert [p for p in requests if p.startswith("/api/v2/assets/events")] == [
        p for p in requests if p.startswith("/api/v2/assets/events?asset_id=")
    ]
    minimum = 2 + 1 + len(captured.tasks) + 1
    aliases, warnings, alias_events, failed_runs = 1, 1, 1, 1
    import_errors, every_asset, graph = 1, 1, 1
    model = aliases + warnings + alias_events + failed_runs + import_errors + every_asset + graph
    deadlines = sorted(path.split("/")[3] for path in requests if "/deadlineAlerts" in path)
    assert deadlines == sorted(captured.tasks)
    total = minimum + len(details) + model + len(deadlines)
    assert captured.summary.requests == len(proxy.requests) == total
    summary = captured.summary
    assert (summary.schedules, summary.alias_writers, summary.freshness) == (10, 1, 1)
    assert summary.deadlines == len(captured.tasks)
    assert (
        f"(10 for asset schedules, {len(deadlines)} for deadline alerts, 1 for alias writers, "
        "1 for freshness)" in captured.summary.line()
    )


def test_an_offline_audit_of_the_captured_files_gives_the_exports_answer(
    assets_server, tmp_path: Path
) -> None:
    with AirflowApiClient(source(assets_server)) as client:
        exported = capture(client).estate()
    expected = build_document(exported, audit(exported))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_coremodels",
            "capture",
            "--base-url",
            assets_server.base_url,
            "--username",
            assets_server.username,
            "--password-env",
            "AF_PASSWORD",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={"AF_PASSWORD": assets_server.password, "PATH": "/usr/bin:/bin"},
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    audited = subprocess.run(
        [
            sys.executable,
            "-m",
            "airflow_provider_coremodels",
            "audit",
            *(f"--{name}={tmp_path / f'{name}.json'}" for name in ("dags", "tasks", "datasets")),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert audited.returncode == 0, audited.stderr
    offline = json.loads(audited.stdout)
    for key in ("fingerprint", "datasets", "lineage", "findings", "lossiness"):
        assert offline[key] == expected[key], key


def test_the_asset_folder_parsed_before_the_merge_is_the_estate_the_server_holds(
    assets_server, tmp_path: Path
) -> None:
    """Two doors, one estate: ``audit --dag-folder`` of the folder the server serves, against the
    snapshot captured from it, gives its fingerprint, lineage and findings, and no change; what
    only run time resolves (the alias's asset, the ``Asset.ref`` to it) is the baseline's. A pull
    request that drops the alias outlet loses those edges, and says whom that affects."""
    with AirflowApiClient(source(assets_server)) as client:
        captured = capture(client).estate()
    document = build_document(captured, audit(captured))
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(document))
    assert any((edge.get("via") or "").startswith("alias:") for edge in document["lineage"])

    def check(folder: Path) -> dict:
        result = subprocess.run(
            [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", str(folder),
             "--baseline", str(baseline), "--format", "json"],
            capture_output=True, text=True, timeout=300, cwd=REPO,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    same = check(REPO / "example_dags" / "assets")
    assert same["fingerprint"] == document["fingerprint"]
    assert same["lineage"] == document["lineage"]
    assert [(f["code"], f["subject"]) for f in same["findings"]] == [
        (f["code"], f["subject"]) for f in document["findings"]
    ]
    assert same["change"]["findingsOpened"] == same["change"]["lineageRemoved"] == []
    assert any(
        r["message"].startswith("alias 'daily_exports': the assets written") for r in same["lossiness"]
    )

    changed = Path(shutil.copytree(REPO / "example_dags" / "assets", tmp_path / "pr"))
    producer = changed / "alias.py"
    text = producer.read_text()
    producer.write_text(text.replace("@task(outlets=[EXPORTS_ALIAS])", "@task()"))
    assert producer.read_text() != text
    dropped = check(changed)
    removed = {(e["dependent"], e["dependsOn"]) for e in dropped["change"]["lineageRemoved"]}
    assert ("s3://lake/exports/2026-01-01", "exports_producer") in removed
    assert "exports_consumer" in {a["dag"] for a in dropped["change"]["affected"]}
