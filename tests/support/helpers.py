"""Small helpers shared by the tests (``tests/`` is on the path through pytest's ``pythonpath``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

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


def document_for(
    dags: Any, tasks: Any = None, datasets: Any = None, *, served: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """Parse Python values (encoded to JSON here; None: not provided), audit, and build the document.

    ``served``: complete the artifacts as a capture of Airflow 3.3 would (``as_served``), for a
    test about a rule rather than about what the artifacts may lack."""

    def encode(value: Any) -> bytes | None:
        return None if value is None else json.dumps(value).encode()

    if served:
        dags, datasets = as_served(dags, datasets)

    estate = parse_artifacts(encode(dags), encode(tasks), encode(datasets))
    return build_document(estate, audit(estate), **kwargs)


def dense_artifacts(case: str) -> dict[str, Any]:
    """One of the dense estates of ``benchmarks/dense_estate.py`` (``assets``, ``1600``, ``3000``):
    its dags and datasets artifacts, as Python values."""
    spec = importlib.util.spec_from_file_location("dense_estate", REPO / "benchmarks" / "dense_estate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    artifacts: dict[str, Any] = module.dense_artifacts(case)
    return artifacts


def codes(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["code"], f["subject"]) for f in document["findings"]]


def recorded_estate(generation: str = "airflow3") -> Estate:
    """The estate of the recorded fixtures (example_dags/estate as a real server served it)."""
    paths = artifact_paths(generation)
    return parse_artifacts(*(paths[name].read_bytes() for name in ("dags", "tasks", "datasets")))


def recorded_document(generation: str = "airflow3", **audit_kwargs: Any) -> dict[str, Any]:
    estate = recorded_estate(generation)
    return build_document(estate, audit(estate, **audit_kwargs))


# -- the Airflow these tests run on ---------------------------------------------------------
# The suite runs on the newest Airflow 3.3.x (.venv) and, in part, on the oldest line the
# provider claims (3.0, .venv-oldest: `make test-oldest`). What differs between them is said
# here once, never as version checks scattered through the tests.

#: The installed Airflow (the distribution that holds the ``airflow`` package), read without
#: importing it.
AIRFLOW_VERSION = version("apache-airflow-core")


def needs_airflow(minimum: str, feature: str) -> pytest.MarkDecorator:
    """Skip on an Airflow older than ``minimum``, naming the ``feature`` that needs it."""
    return pytest.mark.skipif(
        Version(AIRFLOW_VERSION) < Version(minimum),
        reason=f"needs Airflow {minimum}+ for {feature}; this is Airflow {AIRFLOW_VERSION}",
    )


#: Airflow 3.2 added the DAG warning "runtime varying value" (a DAG built from values that change
#: at every parse); 3.0 and 3.1 report only the others (a non-existent pool, asset conflicts).
RUNTIME_VARYING_WARNINGS = Version(AIRFLOW_VERSION) >= Version("3.2")

#: ``airflow coremodels``: Airflow reads a provider's ``cli`` section from 3.2 on.
CLI_GROUP = needs_airflow("3.2", "the `airflow coremodels` command group (provider CLI commands)")
#: The connection forms built from provider info (``conn-fields``, ``ui-field-behaviour``).
PROVIDER_FORMS = needs_airflow("3.2", "connection forms from provider info")
#: The CoreModels page: external views in the UI, and the API server reading the UI's cookie.
UI_PAGE = needs_airflow("3.1", "the CoreModels page (UI external views)")
#: Its other side: where the page cannot be shown, the plugin must add nothing.
WITHOUT_UI_PAGE = pytest.mark.skipif(
    Version(AIRFLOW_VERSION) >= Version("3.1"),
    reason=f"Airflow {AIRFLOW_VERSION} shows the CoreModels page (tests/ui/test_live_page.py)",
)


@dataclass(frozen=True)
class ServedEstate:
    """What this Airflow's API server serves of example_dags/estate, as a live export sees it."""

    lineage_edges: int
    warnings: int


#: What a finding about an asset with a DAG scheduled on it adds where the API lists no watchers
#: (before Airflow 3.2): that one may update it, unseen.
WATCHERS_NOTE = (
    ""
    if Version(AIRFLOW_VERSION) >= Version("3.2")
    else "; watchers unknown: an event-driven trigger Airflow does not list may update it"
)

#: Airflow 3.0's REST API reports no task inlets (assets' ``consuming_tasks`` came in 3.1): the
#: estate's one inlet-only edge (daily_revenue reads s3://vendor/fx_rates.csv) is not served, and
#: neither is the asset-unproduced warning it leads to.
SERVED_ESTATE = (
    ServedEstate(lineage_edges=7, warnings=3)
    if Version(AIRFLOW_VERSION) >= Version("3.1")
    else ServedEstate(lineage_edges=6, warnings=2)
)


# -- artifacts as Airflow 3.3 answers them ---------------------------------------------------
#: The keys every Airflow 3.3 asset object carries, empty where the test names none.
ASSET_KEYS_33 = ("producing_tasks", "scheduled_dags", "consuming_tasks", "aliases", "watchers")


def as_served(dags: Any, datasets: Any = None) -> tuple[Any, Any]:
    """Hand-made artifacts completed the way a capture of Airflow 3.3 completes them: the import
    errors listed (none), stale DAGs listed (none), every asset with all its reference keys and an
    id, and the dependency graph drawn from the references (the code declares them all). A test
    about what a capture may lack leaves these out and builds its artifacts itself."""
    if isinstance(dags, list):
        dags = {"dags": dags}
    if isinstance(dags, dict):
        dags = {"import_errors": [], "includes_stale": True, **dags}
    if isinstance(datasets, dict) and isinstance(datasets.get("assets"), list):
        assets = [
            {**{key: [] for key in ASSET_KEYS_33}, "id": index, **raw} if isinstance(raw, dict) else raw
            for index, raw in enumerate(datasets["assets"], start=1)
        ]
        edges = []
        for raw in assets:
            if not isinstance(raw, dict):
                continue
            node = f"asset:{raw['id']}"
            for ref in raw.get("producing_tasks") or ():
                edges.append({"source_id": f"dag:{ref.get('dag_id')}", "target_id": node})
            for ref in raw.get("scheduled_dags") or ():
                edges.append({"source_id": node, "target_id": f"dag:{ref.get('dag_id')}"})
        datasets = {"dependencies": {"edges": edges}, **datasets, "assets": assets}
    return dags, datasets


def fingerprint_without_deadlines(estate: Estate) -> str:
    """The governed fingerprint of an estate's datasets and lineage with ``airflow.deadline`` left
    out: what a capture that cannot read deadline alerts (MWAA, a line before 3.3) shares with one
    that can."""
    from airflow_provider_coremodels.core.estate.model import DEADLINE_KEY
    from airflow_provider_coremodels.core.snapshots.document import governed_fingerprint

    datasets = [
        dataclasses.replace(d, metadata={k: v for k, v in d.metadata.items() if k != DEADLINE_KEY})
        for d in estate.datasets
    ]
    return governed_fingerprint(datasets, estate.lineage)
