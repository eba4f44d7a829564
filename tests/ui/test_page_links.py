"""The CoreModels page on an estate whose DAGs trigger and wait on each other (issue 35)."""

from __future__ import annotations

from airflow_provider_coremodels.core import audit, build_document, build_estate
from airflow_provider_coremodels.ui.page import render_snapshot_page


def test_the_page_counts_the_links_and_draws_them_in_their_style() -> None:
    dags = [{"dag_id": d, "is_paused": False, "owners": ["team"], "description": d} for d in ("a", "b")]
    graph = [
        {"source_id": "dag:a", "target_id": "trigger:a:b:kick"},
        {"source_id": "trigger:a:b:kick", "target_id": "dag:b"},
    ]
    estate = build_estate(
        {"dags": dags, "import_errors": [], "includes_stale": True},
        {"a": [{"task_id": "kick", "class_ref": {"class_name": "TriggerDagRunOperator"}}]},
        {"assets": [], "dependencies": {"edges": graph}},
    )
    page = render_snapshot_page(build_document(estate, audit(estate)), source="latest.json")
    assert "Links between DAGs" in page
    assert 'class="edge trigger"' in page
