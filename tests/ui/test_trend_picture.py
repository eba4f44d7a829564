"""The history chart over a month of exports, as a person sees it: the real file sink stores each
day's snapshot (against the previous one as its baseline, as export does), the page is rendered
from what the page's source reads back, and a headless Chromium draws it. The picture in
docs/ui.md is this test's screenshot (test-artifacts/coremodels-trend-month.png)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.browser import Browser
from support.helpers import REPO, as_served

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.sinks import FileSink
from airflow_provider_coremodels.ui.page import render_snapshot_page
from airflow_provider_coremodels.ui.source import Snapshot, read_snapshot, read_trend

ARTIFACTS = REPO / "test-artifacts"
ORDERS, REVENUE = "s3://lake/orders.parquet", "s3://lake/revenue.parquet"


def dag(dag_id: str, **extra: Any) -> dict[str, Any]:
    return {"dag_id": dag_id, "is_paused": False, "is_stale": False, "description": f"the {dag_id} pipeline",
            "owners": ["data-eng"], "bundle_name": "dags-folder", "relative_fileloc": f"{dag_id}.py",
            "fileloc": f"/opt/airflow/dags/{dag_id}.py", **extra}  # fmt: skip


def asset(uri: str, asset_id: int, producers: list[str], consumers: list[str]) -> dict[str, Any]:
    return {"id": asset_id, "uri": uri, "name": uri, "group": "asset", "watchers": [], "consuming_tasks": [],
            "producing_tasks": [{"dag_id": d, "task_id": "t"} for d in producers],
            "scheduled_dags": [{"dag_id": d, "task_id": "t"} for d in consumers]}  # fmt: skip


Day = dict[str, Any]
#: What changes in the estate over the month, day by day (a day not named repeats the one before).
CHANGES: dict[int, Callable[[Day], None]] = {
    1: lambda d: None,
    4: lambda d: d["dags"].append(dag("crm_sync", owners=[])),
    7: lambda d: d["dags"].append(dag("legacy_cleanup", owners=["airflow"], description=None)),
    11: lambda d: d.update(
        import_errors=[
            {
                "filename": "load_orders.py",
                "bundle_name": "dags-folder",
                "stack_trace": "Traceback (most recent call last):\n"
                '  File "/opt/airflow/dags/load_orders.py", line 3, in <module>\n'
                "    import pandas\nModuleNotFoundError: No module named 'pandas'",
            }
        ],
        broken={"load_orders"},
    ),
    14: lambda d: d.update(import_errors=[], broken=set()),
    17: lambda d: d["dags"].append(dag("fx_rates", owners=[])),
    20: lambda d: d["waivers"].append(Waiver("dag-no-owner", "crm_sync", "owned by ops")),
    24: lambda d: d.update(dags=[x for x in d["dags"] if x["dag_id"] != "legacy_cleanup"]),
    27: lambda d: d["dags"].__setitem__(-1, dag("fx_rates")),
}


def month(root: Path) -> list[dict[str, Any]]:
    """Thirty daily exports into one file sink; the documents stored, oldest first."""
    day: Day = {"dags": [dag("load_orders"), dag("daily_revenue")], "import_errors": [], "broken": set(),
                "waivers": []}  # fmt: skip
    stored = []
    for number in range(1, 31):
        if number in CHANGES:
            CHANGES[number](day)
        dags = [
            {**d, "is_stale": d["dag_id"] in day["broken"], "has_import_errors": d["dag_id"] in day["broken"]}
            for d in day["dags"]
        ]
        assets = [
            asset(ORDERS, 1, ["load_orders"], ["daily_revenue"]),
            asset(REVENUE, 2, ["daily_revenue"], []),
        ]
        dags_doc, datasets = as_served(
            {"dags": dags, "import_errors": day["import_errors"]}, {"assets": assets}
        )
        estate = parse_artifacts(
            json.dumps(dags_doc),
            json.dumps({d["dag_id"]: [{"task_id": "t"}] for d in dags}),
            json.dumps(datasets),
        )
        sink = FileSink(root)
        baseline = sink.read_baseline()
        result = audit(
            estate, load_document(baseline).as_baseline() if baseline else None, waivers=day["waivers"]
        )
        document = build_document(estate, result)
        document["state"]["capturedAt"] = f"2026-11-{number:02d}T06:00:00Z"
        if not sink.push(document).unchanged:
            stored.append(document)
    return stored


def test_a_month_of_history_as_a_person_sees_it(browser: Browser, tmp_path: Path) -> None:
    stored = month(tmp_path / "coremodels")
    found = read_snapshot(str(tmp_path / "coremodels"))
    assert isinstance(found, Snapshot)
    trend = read_trend(found)
    assert trend is not None and trend.total == len(stored) >= 8
    page = tmp_path / "page.html"
    page.write_text(render_snapshot_page(found.document, source=found.shown, trend=trend), encoding="utf-8")
    browser.navigate(page.as_uri())
    drawn = browser.evaluate(
        'Array.from(document.querySelectorAll("svg.coremodels-trend g.entry")).map((g) => ['
        "g.dataset.captured, Number(g.dataset.open),"
        " Array.from(g.querySelectorAll('rect.sev')).map((r) => r.getAttribute('class').split(' ')[1])])"
    )
    assert [captured for captured, _, _ in drawn] == [d["state"]["capturedAt"] for d in stored]
    opened = [Counter(f["severity"] for f in d["findings"] if not f.get("waived")) for d in stored]
    assert [n for _, n, _ in drawn] == [sum(c.values()) for c in opened]
    assert [set(kinds) for _, _, kinds in drawn] == [{f"sev-{s}" for s in c} for c in opened]
    assert any(c["Error"] for c in opened)  # the import error's days
    assert browser.exceptions == []
    browser.screenshot(ARTIFACTS / "coremodels-trend-month.png", selector="#history")
