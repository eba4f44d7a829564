"""Every event validates against the OpenLineage spec, and every facet against its own schema.

The schemas are pinned in tests/fixtures/openlineage (OpenLineage.json 2-0-2 and the facet
schemas at the versions openlineage-python 1.54.0 writes into ``schemaURL``/``_schemaURL``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from cli.test_audit_command import run
from cli.test_merge_command import dag, snapshot
from support.helpers import FIXTURES
from support.openlineage_kit import SCHEMAS, event_errors, facets_of, lines

ESTATES = {
    "example": ("--example",),
    "assets": tuple(
        f"--{n}={FIXTURES / 'airflow3_assets' / f'{n}.json'}" for n in ("dags", "tasks", "datasets")
    ),
    "airflow2": tuple(f"--{n}={FIXTURES / 'airflow2' / f'{n}.json'}" for n in ("dags", "tasks", "datasets")),
}
SHIPPED = {json.loads(p.read_text())["$id"] for p in SCHEMAS.rglob("*.json")}


@pytest.mark.parametrize("events", ["run", "job"])
@pytest.mark.parametrize("estate", sorted(ESTATES))
def test_every_event_and_facet_validates(capsys, estate: str, events: str) -> None:
    code, out, _ = run(
        capsys, "audit", *ESTATES[estate], "--format", "openlineage", "--openlineage-events", events
    )
    assert code == 0
    emitted = lines(out)
    assert emitted
    for event in emitted:
        assert event_errors(event) == [], event["job"]["name"]
        # every schema the event names is one of the pinned ones (so none was skipped unresolved)
        named = {event["schemaURL"], *(facet["_schemaURL"] for _, facet in facets_of(event))}
        assert {url.partition("#")[0] for url in named} <= SHIPPED


def test_a_merged_estate_validates(capsys, tmp_path: Path) -> None:
    etl = snapshot(tmp_path / "etl.json", "etl", [dag("load_orders")],
                   [{"uri": "s3://lake/orders", "producing_tasks": [{"dag_id": "load_orders"}]}])  # fmt: skip
    bi = snapshot(tmp_path / "bi.json", "bi", [dag("daily_revenue", schedule="Asset")],
                  [{"uri": "s3://lake/orders", "scheduled_dags": [{"dag_id": "daily_revenue"}]}])  # fmt: skip
    code, out, _ = run(capsys, "merge", str(etl), str(bi), "--format", "openlineage")
    assert code == 0
    assert [event_errors(event) for event in lines(out)] == [[], []]


def test_the_validation_really_looks_at_facets(capsys) -> None:
    """A control: an event whose facet breaks its own schema (not the spec's base facet) fails."""
    _, out, _ = run(capsys, "audit", "--example", "--format", "openlineage")
    event = copy.deepcopy(lines(out)[0])
    del event["job"]["facets"]["jobType"]["integration"]
    event["job"]["facets"]["ownership"]["owners"] = [{"type": "MAINTAINER"}]
    event["run"]["runId"] = "not-a-uuid"
    errors = event_errors(event)
    assert "run/runId: 'not-a-uuid' is not a 'uuid'" in errors
    assert "job.jobType: : 'integration' is a required property" in errors
    assert "job.ownership: owners/0: 'name' is a required property" in errors
