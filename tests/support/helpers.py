"""Small helpers shared by the tests (``tests/`` is on the path through pytest's ``pythonpath``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from airflow_provider_coremodels.core import Estate, audit, build_document, parse_artifacts

TESTS = Path(__file__).parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
#: The example estate's recording ships inside the package (``audit --example`` reads it); the
#: tests read that one copy.
EXAMPLE_ESTATE = REPO / "airflow_provider_coremodels" / "example_estate"
# The official OASIS SARIF 2.1.0 schema (errata 01), shipped as test data.
SARIF_SCHEMA = FIXTURES / "schemas" / "sarif-schema-2.1.0.json"


def fixture_dir(generation: str) -> Path:
    """The folder of one recording: ``airflow3`` is the example estate, the others are test data."""
    return EXAMPLE_ESTATE if generation == "airflow3" else FIXTURES / generation


def artifact_paths(generation: str) -> dict[str, Path]:
    """The recorded dags, tasks and datasets artifacts of one API generation."""
    folder = fixture_dir(generation)
    return {name: folder / f"{name}.json" for name in ("dags", "tasks", "datasets")}


def document_for(dags: Any, tasks: Any = None, datasets: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Parse Python values (encoded to JSON here; None: not provided), audit, and build the document."""

    def encode(value: Any) -> bytes | None:
        return None if value is None else json.dumps(value).encode()

    estate = parse_artifacts(encode(dags), encode(tasks), encode(datasets))
    return build_document(estate, audit(estate), **kwargs)


def codes(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["code"], f["subject"]) for f in document["findings"]]


def recorded_estate(generation: str = "airflow3") -> Estate:
    """The estate of the recorded fixtures (example_dags/estate as a real server served it)."""
    paths = artifact_paths(generation)
    return parse_artifacts(*(paths[name].read_bytes() for name in ("dags", "tasks", "datasets")))


def recorded_document(generation: str = "airflow3", **audit_kwargs: Any) -> dict[str, Any]:
    estate = recorded_estate(generation)
    return build_document(estate, audit(estate, **audit_kwargs))
