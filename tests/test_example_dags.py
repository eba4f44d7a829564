"""Every file in example_dags/ imports into a DagBag with no errors; the estate has the expected DAGs."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import REPO


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "example_dags"))


def test_example_dags_import_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}


def test_example_estate_dags(dagbag) -> None:
    estate = {dag_id for dag_id, dag in dagbag.dags.items() if Path(dag.fileloc).parent.name == "estate"}
    assert estate == {
        "load_orders",
        "daily_revenue",
        "sync_crm",
        "backfill_customers",
        "customer_report",
        "legacy_cleanup",
    }


def test_example_asset_estate_dags(dagbag) -> None:
    """A DAG file per Airflow 3 asset construct (the expected lineage: tests/support/asset_estate.py)."""
    assets = {dag_id for dag_id, dag in dagbag.dags.items() if Path(dag.fileloc).parent.name == "assets"}
    assert assets == {
        "raw_orders",
        "clean_orders",
        "orders_sync",
        "orders_sync_consumer",
        "orders_by_name_ref",
        "orders_by_uri_ref",
        "orders_by_slash_ref",
        "orders_audit",
        "orders_incremental",
        "exports_producer",
        "exports_consumer",
        "export_by_name_ref",
        "inbox_orders_loader",
        "market_data",
        "valuation",
        "price_snapshot",
        "sales_ledger",
        "sales_feed",
        "inventory_v1",
        "inventory_v2",
    }


def test_example_freshness_dags(dagbag) -> None:
    """Producers and consumers for the freshness rules (tests/operators/test_live_freshness.py)."""
    fresh = {dag_id for dag_id, dag in dagbag.dags.items() if Path(dag.fileloc).parent.name == "freshness"}
    assert fresh == {"orders_loader", "broken_feed", "orders_report", "feed_report", "drops_loader"}


def _docs_rules_files() -> list[str]:
    """Every rules file docs/findings.md shows in a YAML block: the first example and the
    conventions to start from."""
    import re

    text = (REPO / "docs" / "findings.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    found = [block for block in blocks if re.search(r"^rules:", block, re.MULTILINE)]
    assert len(found) >= 2, "docs/findings.md shows its rules files in YAML blocks"
    return found


def _audit_folder(folder: Path, rules: Path) -> dict:
    import json
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "audit", "--dag-folder", str(folder),
         "--rules", str(rules), "--format", "json"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("index", range(len(_docs_rules_files())))
def test_the_export_dag_passes_the_rules_files_the_docs_show(tmp_path: Path, index: int) -> None:
    """Issue 37: the export DAG, "safe to copy as it is", follows what docs/findings.md recommends:
    each rules file the page shows, run on it with ``audit --dag-folder``, finds nothing about it,
    nor does any built-in rule. The same DAG without its retry or its team tag fails the
    conventions, so the rules did run on it."""
    import shutil

    rules = tmp_path / "rules.yaml"
    rules.write_text(_docs_rules_files()[index])
    folder = tmp_path / "dags"
    folder.mkdir()
    shutil.copy(REPO / "example_dags" / "coremodels_export.py", folder)
    document = _audit_folder(folder, rules)
    # the file was read: its rules, or its teams alone (a file may hold only teams)
    assert document["policy"]["rules"] or document["policy"].get("teams"), document["policy"]
    about = [f for f in document["findings"] if f["subject"].split(".")[0] == "coremodels_export"]
    assert about == []

    if "policy-retries" in rules.read_text():  # the conventions: a control without retry and team tag
        source = (folder / "coremodels_export.py").read_text()
        careless = source.replace('"retries": 1,', "").replace(', "team:platform"', "")
        assert careless != source
        (folder / "coremodels_export.py").write_text(careless)
        found = {f["code"] for f in _audit_folder(folder, rules)["findings"]}
        assert {"policy-retries", "policy-team-tag"} <= found
