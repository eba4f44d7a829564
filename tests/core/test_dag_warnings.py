"""Airflow's own DAG warnings as findings (``airflow-warning``): every type but asset conflicts."""

from __future__ import annotations

import json
from typing import Any

from support.helpers import as_served

from airflow_provider_coremodels.capture.crawl import scrubbed_warning
from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.estate.text import MAX_WARNING_CHARS
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.redaction import SECRETS


def warned(warnings: list[dict[str, Any]], dags: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    raw = {
        "dags": [{"dag_id": d, "owners": ["team"], "description": d * 3} for d in dags],
        "dag_warnings": warnings,
    }
    dags_doc, _ = as_served(raw)
    estate = parse_artifacts(json.dumps(dags_doc).encode())
    return build_document(estate, audit(estate))


def warning(dag_id: str, kind: str, message: str) -> dict[str, Any]:
    return {"dag_id": dag_id, "warning_type": kind, "message": message}


def findings(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["subject"], f["detail"]) for f in document["findings"] if f["code"] == "airflow-warning"]


def test_each_warning_is_a_finding_with_its_type_and_message() -> None:
    document = warned(
        [
            warning("a", "non-existent pool", "Dag 'a' references non-existent pools: ['etl']"),
            warning(
                "a", "runtime varying value", "This Dag uses runtime-variable values.\n\nLine 3, Col 1\n"
            ),
            warning("b", "asset conflict", "not an asset conflict line"),  # asset-conflict's, not this rule's
        ]
    )
    assert findings(document) == [
        ("a", "non-existent pool: Dag 'a' references non-existent pools: ['etl']"),
        ("a", "runtime varying value: This Dag uses runtime-variable values. Line 3, Col 1"),
    ]
    [finding] = [f for f in document["findings"] if f["code"] == "airflow-warning"][:1]
    assert (finding["section"], finding["severity"]) == ("Conformance", "Warning")


def test_a_message_is_scrubbed_of_url_passwords_and_bounded() -> None:
    message = "Code: DAG(doc_md='postgresql://etl:Hunter2-pw@db/x') " + "padding " * 500
    [(_, detail)] = findings(warned([warning("a", "runtime varying value", message)]))
    assert "Hunter2-pw" not in detail and "postgresql://etl:***@db/x" in detail
    assert len(detail) == len("runtime varying value: ") + MAX_WARNING_CHARS and detail.endswith("…")


def test_the_capture_scrubs_the_secrets_it_knows_even_for_capture_out() -> None:
    SECRETS.add("api-S3cret-token")
    kept = scrubbed_warning(
        {"dag_id": "a", "warning_type": "x", "message": "token api-S3cret-token", "extra": 1}
    )
    assert kept == {"dag_id": "a", "warning_type": "x", "message": "token ***"}


def test_a_warning_of_a_dag_outside_the_estate_is_lossiness_and_repeats_are_one() -> None:
    document = warned(
        [
            warning("a", "non-existent pool", "first"),
            warning("a", "non-existent pool", "again, from a page that moved"),
            warning("ghost", "non-existent pool", "gone"),
        ]
    )
    assert findings(document) == [("a", "non-existent pool: first")]
    assert [r["message"] for r in document["lossiness"] if r.get("subject") == "ghost"] == [
        "a non-existent pool DAG warning names DAG 'ghost', which is not in the estate"
    ]


def test_a_stored_document_and_a_merge_keep_the_warnings() -> None:
    """They ride in the DAG's metadata (airflow.warnings): a re-audit, and a merge under the merged
    identity, say the same."""
    document = warned([warning("a", "non-existent pool", "p")])
    stored = load_document(encode(document)).estate
    assert stored is not None
    assert findings(build_document(stored, audit(stored))) == findings(document)
    merged = merge([Part("etl", stored)])
    assert [(f.subject, f.detail) for f in audit(merged).findings if f.code == "airflow-warning"] == [
        ("etl/a", "non-existent pool: p")
    ]
