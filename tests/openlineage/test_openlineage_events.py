"""``--format openlineage``: the declared estate as OpenLineage events, checked by hand.

Names are those the OpenLineage Airflow provider gives at runtime: a job per DAG named by its
dag_id in the provider's namespace, datasets named by the converters providers register (the
amazon provider's for s3://, common.io's for file://), each compared with the converter itself.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from cli.test_audit_command import run
from cli.test_merge_command import dag, snapshot
from support.helpers import EXAMPLE_ESTATE, FIXTURES, document_for
from support.openlineage_kit import cli, lines

from airflow_provider_coremodels.integrations.openlineage import (
    CONVERTER,
    FALLBACK,
    PRODUCER,
    UNSCOPED,
    DatasetName,
    Options,
    build_events,
    dataset_name,
)

EXAMPLE = ("audit", "--example", "--format", "openlineage")
CAPTURED_AT = json.loads((EXAMPLE_ESTATE / "dags.json").read_bytes())["captured_at"]
ASSETS = FIXTURES / "airflow3_assets"


def jobs(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {event["job"]["name"]: event for event in events}


def named(datasets: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in datasets]


def test_the_example_estate_by_hand(capsys) -> None:
    code, out, err = run(capsys, *EXAMPLE)
    assert (code, err) == (0, "")
    events = lines(out)
    # one job per DAG, named by its dag_id, in the provider's namespace ("default": nothing configured)
    assert [(e["job"]["namespace"], e["job"]["name"]) for e in events] == [
        ("default", "backfill_customers"),
        ("default", "customer_report"),
        ("default", "daily_revenue"),
        ("default", "legacy_cleanup"),
        ("default", "load_orders"),
        ("default", "sync_crm"),
    ]
    by_job = jobs(events)
    # s3://lake/orders.parquet: namespace s3://lake, name orders.parquet, as the amazon converter names it
    assert named(by_job["load_orders"]["inputs"]) == []
    assert named(by_job["load_orders"]["outputs"]) == [("s3://lake", "orders.parquet")]
    assert named(by_job["daily_revenue"]["inputs"]) == [
        ("s3://lake", "orders.parquet"),
        ("s3://vendor", "fx_rates.csv"),  # a task inlet: read, though it does not schedule the DAG
    ]
    assert named(by_job["daily_revenue"]["outputs"]) == [("s3://lake", "revenue.parquet")]
    assert named(by_job["sync_crm"]["outputs"]) == [("s3://lake", "customers.parquet")]
    assert named(by_job["backfill_customers"]["outputs"]) == [("s3://lake", "customers.parquet")]
    assert named(by_job["customer_report"]["inputs"]) == [("s3://lake", "customers.parquet")]
    assert named(by_job["legacy_cleanup"]["inputs"]) == named(by_job["legacy_cleanup"]["outputs"]) == []

    for event in events:  # the default kind: a RunEvent COMPLETE at the capture time
        assert event["eventType"] == "COMPLETE"
        assert event["eventTime"] == CAPTURED_AT
        assert event["producer"] == PRODUCER
        assert event["schemaURL"].endswith("#/$defs/RunEvent")
        assert uuid.UUID(event["run"]["runId"]).version == 5


def test_the_facets_of_a_dag_are_the_providers(capsys) -> None:
    """Same keys and shapes as the provider's job of a DAG run, plus where the DAG's file is."""
    _, out, _ = run(capsys, *EXAMPLE)
    facets = jobs(lines(out))["load_orders"]["job"]["facets"]
    assert {
        key: {k: v for k, v in facet.items() if not k.startswith("_")} for key, facet in facets.items()
    } == {
        "jobType": {"integration": "AIRFLOW", "jobType": "DAG", "processingType": "BATCH"},
        "ownership": {"owners": [{"name": "data-eng"}, {"name": "orders-oncall"}]},
        "documentation": {
            "description": "Loads orders from the shop database into the lake",
            "contentType": "text/plain",
        },
        "tags": {
            "tags": [
                {"key": "lake", "value": "lake", "source": "AIRFLOW"},
                {"key": "orders", "value": "orders", "source": "AIRFLOW"},
            ]
        },
        "sourceCodeLocation": {
            "type": "file",
            "url": facets["sourceCodeLocation"]["url"],
            "path": "orders.py",  # inside its bundle (dags-folder)
        },
    }
    assert facets["sourceCodeLocation"]["url"].startswith("file:///")
    assert facets["sourceCodeLocation"]["url"].endswith("/example_dags/estate/orders.py")
    assert all(facet["_producer"] == PRODUCER for facet in facets.values())
    # no description, no documentation facet; the default owner is reported as the provider does
    legacy = jobs(lines(out))["legacy_cleanup"]["job"]["facets"]
    assert "documentation" not in legacy and "tags" not in legacy
    assert legacy["ownership"]["owners"] == [{"name": "airflow"}]


def test_job_events_on_request(capsys) -> None:
    code, out, _ = run(capsys, *EXAMPLE, "--openlineage-events", "job")
    assert code == 0
    events = lines(out)
    assert len(events) == 6
    for event in events:
        assert event["schemaURL"].endswith("#/$defs/JobEvent")
        assert "run" not in event and "eventType" not in event
    assert named(jobs(events)["daily_revenue"]["outputs"]) == [("s3://lake", "revenue.parquet")]


def test_the_namespace_is_the_providers_unless_given(capsys) -> None:
    os.environ["AIRFLOW__OPENLINEAGE__NAMESPACE"] = "prod-airflow"  # [openlineage] namespace
    _, out, _ = run(capsys, *EXAMPLE)
    assert {e["job"]["namespace"] for e in lines(out)} == {"prod-airflow"}

    del os.environ["AIRFLOW__OPENLINEAGE__NAMESPACE"]
    os.environ["OPENLINEAGE_NAMESPACE"] = "legacy-env"  # the provider's older spelling
    _, out, _ = run(capsys, *EXAMPLE)
    assert {e["job"]["namespace"] for e in lines(out)} == {"legacy-env"}

    _, out, _ = run(capsys, *EXAMPLE, "--openlineage-namespace", "given")
    assert {e["job"]["namespace"] for e in lines(out)} == {"given"}


def test_run_ids_follow_the_declaration(capsys) -> None:
    """The same DAG declared the same way has the same run id at every export (no run per export);
    a DAG whose declaration changed gets a new one, the others keep theirs."""
    _, first, _ = run(capsys, *EXAMPLE)
    _, again, _ = run(capsys, *EXAMPLE)
    assert first == again
    document = json.loads(run(capsys, "audit", "--example", "--format", "json")[1])
    dag = next(d for d in document["datasets"] if d["identity"] == "sync_crm")
    dag["description"] = "Syncs CRM accounts nightly"
    before = {e.job.name: e.run.runId for e in build_events(document).events}  # type: ignore[union-attr]
    ids = {e["job"]["name"]: e["run"]["runId"] for e in lines(first)}
    assert before.pop("sync_crm") != ids.pop("sync_crm")
    assert before == ids


# -- asset URIs, as the provider names them ---------------------------------------------------------


def _converted(converter: Any, uri: str) -> DatasetName:
    from airflow.sdk import Asset

    dataset = converter(Asset(uri=uri), None)
    return DatasetName(dataset.namespace, dataset.name, CONVERTER)


def test_s3_is_named_by_the_amazon_converter() -> None:
    # the test extra installs the amazon provider; a lean install (the oldest Airflow's) has none
    s3 = pytest.importorskip("airflow.providers.amazon.aws.assets.s3", reason="no amazon provider")
    convert_asset_to_openlineage = s3.convert_asset_to_openlineage

    for uri in ("s3://lake/orders.parquet", "s3://lake/raw/events/", "s3://vendor/fx_rates.csv"):
        assert dataset_name(uri) == _converted(convert_asset_to_openlineage, uri.rstrip("/"))
    assert dataset_name("s3://lake/raw/events/") == DatasetName("s3://lake", "raw/events", CONVERTER)


def test_file_is_named_by_the_common_io_converter(capsys) -> None:
    from airflow.providers.common.io.assets.file import convert_asset_to_openlineage

    uri = "file:///tmp/coremodels-inbox/orders.csv"
    assert dataset_name(uri) == _converted(convert_asset_to_openlineage, uri)
    assert dataset_name(uri) == DatasetName("file", "/tmp/coremodels-inbox/orders.csv", CONVERTER)
    # and in the events of the recorded asset estate: the loader reads the inbox file
    artifacts = [f"--{name}={ASSETS / f'{name}.json'}" for name in ("dags", "tasks", "datasets")]
    code, out, _ = run(capsys, "audit", *artifacts, "--format", "openlineage")
    assert code == 0
    assert named(jobs(lines(out))["inbox_orders_loader"]["inputs"]) == [
        ("file", "/tmp/coremodels-inbox/orders.csv")
    ]


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        # no converter installed for the scheme: the provider's generic rule for a URI
        ("gs://bucket/path/to/file", DatasetName("gs://bucket", "path/to/file", FALLBACK)),
        ("x-queue://broker:9092/orders", DatasetName("x-queue", "broker:9092/orders", FALLBACK)),
        # no scheme (Asset("orders"), @asset): nothing outside Airflow to place it in
        ("daily_orders_ready", DatasetName("airflow", "daily_orders_ready", UNSCOPED)),
    ],
)
def test_uris_no_converter_knows(uri: str, expected: DatasetName) -> None:
    assert dataset_name(uri) == expected


def _odd_estate(tmp_path: Path) -> Path:
    dags = [
        {"dag_id": "feeder", "description": "feeds", "owners": ["team"], "is_paused": False},
        {"dag_id": "reader", "description": "reads", "owners": ["team"], "is_paused": False},
    ]
    assets = [
        {"uri": "x-queue://broker:9092/orders", "producing_tasks": [{"dag_id": "feeder", "task_id": "t"}],
         "scheduled_dags": [{"dag_id": "reader"}]},
        {"uri": "daily_orders_ready", "producing_tasks": [{"dag_id": "feeder", "task_id": "t"}],
         "scheduled_dags": [{"dag_id": "reader"}, {"dag_id": "elsewhere"}]},
    ]  # fmt: skip
    document = document_for(dags, {"feeder": [], "reader": []}, {"assets": assets})
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(document))
    return path


def test_unnamed_uris_are_kept_and_said_on_stderr(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "audit", "--snapshot", str(_odd_estate(tmp_path)), "--format", "openlineage")
    assert code == 0
    by_job = jobs(lines(out))
    assert set(by_job) == {"feeder", "reader"}  # "elsewhere" is not in the snapshot: no job
    both = [("airflow", "daily_orders_ready"), ("x-queue", "broker:9092/orders")]
    assert named(by_job["feeder"]["outputs"]) == both
    assert named(by_job["reader"]["inputs"]) == both
    assert err.splitlines() == [
        "warning: openlineage: 1 asset URI(s) with no OpenLineage converter installed for their scheme, "
        "named by the provider's generic URI rule (the provider itself emits no dataset for them): "
        "x-queue://broker:9092/orders -> x-queue broker:9092/orders",
        "warning: openlineage: 1 asset URI(s) without a scheme, named in namespace airflow: "
        "daily_orders_ready",
        "warning: openlineage: 1 lineage edge(s) name a DAG absent from the snapshot: no job for it",
    ]


# -- a merged estate: a namespace per deployment -------------------------------------------------


@pytest.fixture
def deployments(tmp_path: Path) -> tuple[Path, Path]:
    """etl produces s3://lake/orders, bi consumes it; each has a DAG called report."""
    etl = snapshot(tmp_path / "etl.json", "etl", [dag("load_orders"), dag("report")],
                   [{"uri": "s3://lake/orders", "producing_tasks": [{"dag_id": "load_orders"}]}],
                   capturedAt="2026-12-01T06:00:00Z")  # fmt: skip
    bi = snapshot(tmp_path / "bi.json", "bi", [dag("daily_revenue", schedule="Asset"), dag("report")],
                  [{"uri": "s3://lake/orders", "scheduled_dags": [{"dag_id": "daily_revenue"}]}],
                  capturedAt="2026-12-01T06:00:00Z")  # fmt: skip
    return etl, bi


def test_a_merged_estate_has_a_namespace_per_deployment(capsys, deployments: tuple[Path, Path]) -> None:
    etl, bi = deployments
    code, out, _ = run(capsys, "merge", str(etl), str(bi), "--format", "openlineage")
    assert code == 0
    events = lines(out)
    # the job name is the dag_id (mapsTo.uri), never <deployment>/<dag_id>: the provider's name
    assert [(e["job"]["namespace"], e["job"]["name"]) for e in events] == [
        ("bi", "daily_revenue"),
        ("bi", "report"),
        ("etl", "load_orders"),
        ("etl", "report"),
    ]
    by_job = {(e["job"]["namespace"], e["job"]["name"]): e for e in events}
    # the asset joins the deployments: one dataset, written in one and read in the other
    assert named(by_job["etl", "load_orders"]["outputs"]) == [("s3://lake", "orders")]
    assert named(by_job["bi", "daily_revenue"]["inputs"]) == [("s3://lake", "orders")]

    code, out, _ = run(
        capsys, "merge", str(etl), str(bi), "--format", "openlineage",
        "--openlineage-namespace", "etl=airflow-etl", "--openlineage-namespace", "bi=airflow-bi",
    )  # fmt: skip
    assert {(e["job"]["namespace"], e["job"]["name"]) for e in lines(out)} == {
        ("airflow-bi", "daily_revenue"),
        ("airflow-bi", "report"),
        ("airflow-etl", "load_orders"),
        ("airflow-etl", "report"),
    }


def test_two_dags_named_alike_in_one_namespace_are_refused(
    tmp_path: Path, deployments: tuple[Path, Path]
) -> None:
    etl, bi = deployments
    result = cli("merge", str(etl), str(bi), "--format", "openlineage", "--openlineage-namespace", "shared")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "error: openlineage: DAGs bi/report and etl/report would both be job report in namespace shared: "
        "give their deployments namespaces of their own (--openlineage-namespace DEPLOYMENT=NAMESPACE)\n"
    )


def test_options_read_deployment_namespaces() -> None:
    options = Options.parse("job", ["base", "etl=airflow-etl", "bi=airflow://bi.example.com"])
    assert options == Options("job", "base", {"etl": "airflow-etl", "bi": "airflow://bi.example.com"})
    assert options.updated(None, ["etl=other"]).namespaces["etl"] == "other"
