"""Where the API is silent or stale: broken files, stale DAGs, references that outlive the code,
what a line's API cannot show, refused twins, example bundles, lineage drift (issue 22).

Each test builds small artifacts as a capture of the line named writes them and pins one rule of
the parse or the audit. The same behaviours on real servers: tests/capture/test_lifecycle.py
(Airflow 3.3, changed step by step) and tests/capture/test_versions.py (every line, recorded).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.helpers import as_served, document_for

from airflow_provider_coremodels.cli.commands import source_roots
from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.reading.broken import error_line
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.core.views.sarif import render_sarif

ORDERS = "s3://lake/orders"


def dag(dag_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "dag_id": dag_id,
        "is_paused": False,
        "is_stale": False,
        "description": f"the {dag_id} pipeline",
        "owners": ["team"],
        "bundle_name": "dags-folder",
        "relative_fileloc": f"{dag_id}.py",
        "fileloc": f"/opt/airflow/dags/{dag_id}.py",
        **extra,
    }


def stale(dag_id: str, **extra: Any) -> dict[str, Any]:
    return dag(dag_id, is_stale=True, **extra)


def asset(uri: str, asset_id: int = 1, **refs: list[str]) -> dict[str, Any]:
    raw: dict[str, Any] = {"id": asset_id, "uri": uri, "name": uri, "group": "asset", "watchers": []}
    for key in ("producing_tasks", "scheduled_dags", "consuming_tasks"):
        raw[key] = [{"dag_id": d, "task_id": "t"} for d in refs.get(key, [])]
    return raw


def broken_file(filename: str, trace: str = "Traceback (most recent call last):\n  File x\nNameError: boom"):
    return {"filename": filename, "bundle_name": "dags-folder", "stack_trace": trace}


def served(
    dags: list[Any], assets: list[Any], *, datasets_extra: dict[str, Any] | None = None, **dags_doc: Any
) -> dict[str, Any]:
    """Artifacts as a capture of Airflow 3.3 writes them, audited."""
    dags_artifact, datasets = as_served(
        {"dags": dags, **dags_doc}, {"assets": assets, **(datasets_extra or {})}
    )
    return document_for(dags_artifact, {d["dag_id"]: [] for d in dags}, datasets)


def without(document_key: str, dags: list[Any], assets: list[Any]) -> dict[str, Any]:
    """Served artifacts whose asset objects lack one key, as an older line's do."""
    dags_artifact, datasets = as_served({"dags": dags}, {"assets": assets})
    datasets["assets"] = [{k: v for k, v in raw.items() if k != document_key} for raw in datasets["assets"]]
    return document_for(dags_artifact, {d["dag_id"]: [] for d in dags}, datasets)


def codes(document: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    return {(f["code"], f["subject"]): f["detail"] for f in document["findings"]}


def edges(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(e["dependent"], e["dependsOn"]) for e in document["lineage"]}


def messages(document: dict[str, Any], subject: str | None = None) -> list[str]:
    return [r["message"] for r in document["lossiness"] if r.get("subject") == subject]


# -- broken files --------------------------------------------------------------------------


def test_a_broken_files_dag_is_kept_and_produces_nothing() -> None:
    """The DAG of a file that does not import stays as last parsed (not removed) with no edges; the
    asset only it produced is unproduced, naming the file; the file's finding names who starves."""
    document = served(
        [stale("load_orders", has_import_errors=True), dag("report")],
        [asset(ORDERS, producing_tasks=["load_orders"], scheduled_dags=["report"])],
        import_errors=[broken_file("load_orders.py")],
    )
    assert "load_orders" in {d["identity"] for d in document["datasets"]}
    assert edges(document) == {("report", ORDERS)}
    assert codes(document) == {
        ("dag-import-error", "dags-folder/load_orders.py"): "dags: load_orders; NameError: boom; "
        "starves: report (through s3://lake/orders); owners: team",  # who must fix it, last
        ("asset-unproduced", ORDERS): "consumers: report; its producer load_orders does not import "
        "(dags-folder/load_orders.py)",
    }
    [finding] = [f for f in document["findings"] if f["code"] == "dag-import-error"]
    assert (finding["section"], finding["severity"]) == ("Conformance", "Error")
    assert document["importErrors"] == [
        {
            "file": "dags-folder/load_orders.py",
            "bundle": "dags-folder",
            "path": "load_orders.py",
            "error": "NameError: boom",
            "dags": ["load_orders"],
            "outlets": {"load_orders": [ORDERS]},
        }
    ]
    [said] = messages(document, "load_orders")
    assert "does not import" in said and "not counted as lineage" in said


def test_a_broken_files_finding_names_the_owners_of_its_dags_who_must_fix_it() -> None:
    """Issue 37: the detail ends with the owners of every DAG the file last held, each once, sorted;
    a DAG the capture does not describe adds none, and a file that held none names none."""
    first = dag("load_orders", is_stale=True, has_import_errors=True, owners=["data-eng", "ops"])
    second = dag("load_refunds", is_stale=True, has_import_errors=True, owners=["ops"])
    second["fileloc"] = first["fileloc"]
    second["relative_fileloc"] = first.get("relative_fileloc", "load_orders.py")
    document = served([first, second, dag("report")], [], import_errors=[broken_file("load_orders.py")])
    detail = codes(document)[("dag-import-error", "dags-folder/load_orders.py")]
    assert detail == "dags: load_orders, load_refunds; NameError: boom; owners: data-eng, ops"


def test_a_file_that_never_imported_holds_no_dags() -> None:
    document = served([dag("report")], [], import_errors=[broken_file("new.py")])
    assert codes(document) == {("dag-import-error", "dags-folder/new.py"): "dags: none; NameError: boom"}


def test_a_dag_that_says_it_has_import_errors_is_broken_even_unlisted() -> None:
    """Airflow lists an error only to a user who may read every DAG of the file; has_import_errors says it."""
    document = served([stale("a", has_import_errors=True), dag("b")], [], import_errors=[])
    [(key, detail)] = [(k, d) for k, d in codes(document).items() if k[0] == "dag-import-error"]
    assert key == ("dag-import-error", "dags-folder/a.py")
    assert detail is not None and detail.startswith("dags: a; the error is not listed")


def test_a_file_of_many_unlisted_broken_dags_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of generated DAGs that all say they have import errors, its error unlisted: its DAGs
    are gathered and the file built once, not rebuilt (and its DAG list sorted again) per DAG, which
    made the work grow with the square of the DAGs in the file."""
    from airflow_provider_coremodels.core.reading import broken

    sorted_ids = []
    real = broken._ids
    monkeypatch.setattr(
        broken, "_ids", lambda dag_ids: sorted_ids.append(len(list(dag_ids))) or real(dag_ids)
    )
    many = [
        stale(f"gen_{i:04d}", has_import_errors=True, relative_fileloc="generated.py") for i in range(2000)
    ]
    estate = parse_artifacts(json.dumps({"dags": [*many, dag("report")], "import_errors": []}))
    [file] = estate.import_errors
    assert (file.file, len(file.dags)) == ("dags-folder/generated.py", 2000)
    assert sum(sorted_ids) <= 2 * len(many)


class _Counted(tuple):  # type: ignore[type-arg]
    """A tuple that counts the items every pass over it yields: the work done on it."""

    steps = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for item in tuple.__iter__(self):
            _Counted.steps += 1
            yield item


def test_what_a_broken_file_starves_costs_one_pass_over_its_outlets() -> None:
    """A broken file of generated DAGs, each the only producer of its own asset: the audit names
    each asset's producers from one index of the file's outlets, not a scan of them all per asset
    (the outlets times the assets they starve)."""
    import dataclasses

    k = 300
    estate = parse_artifacts(
        json.dumps({"dags": [*(stale(f"gen_{i:03d}", has_import_errors=True, relative_fileloc="gen.py")
                               for i in range(k)), dag("report")],
                    "import_errors": [broken_file("gen.py")]}),
        None,
        json.dumps({"assets": [asset(f"s3://lake/t{i:03d}", i + 1, producing_tasks=[f"gen_{i:03d}"],
                                     scheduled_dags=["report"]) for i in range(k)]}),
    )  # fmt: skip
    [file] = estate.import_errors
    assert len(file.outlets) == k
    counted = dataclasses.replace(file, outlets=_Counted(file.outlets))
    _Counted.steps = 0
    result = audit(dataclasses.replace(estate, import_errors=(counted,)))
    unproduced = [f for f in result.findings if f.code == "asset-unproduced"]
    assert len(unproduced) == k
    assert unproduced[7].detail.endswith("its producer gen_007 does not import (dags-folder/gen.py)")
    assert _Counted.steps <= 4 * k


def test_airflow_30s_absolute_filename_is_named_inside_its_bundle() -> None:
    """Airflow 3.0 gives the file's absolute path beside its bundle: the finding names it in the bundle."""
    trace = "Traceback (most recent call last):\nValueError: no"
    errors = [{"filename": "/opt/airflow/dags/sub/x.py", "bundle_name": "dags-folder", "stack_trace": trace}]
    other = dag("x", is_stale=True, relative_fileloc="sub/x.py", fileloc="/opt/airflow/dags/sub/x.py")
    document = served([other, dag("y")], [], import_errors=errors)
    assert ("dag-import-error", "dags-folder/sub/x.py") in codes(document)
    assert (
        codes(document)[("dag-import-error", "dags-folder/sub/x.py")]
        == "dags: x; ValueError: no; owners: team"
    )


def test_what_a_broken_dag_produced_is_recalled_from_the_baseline() -> None:
    """Once any file is deleted Airflow clears a stale DAG's references: the baseline still knows
    what the broken DAG produced, so the verdict and its detail do not depend on that history."""
    good = served(
        [dag("load"), dag("report")], [asset(ORDERS, producing_tasks=["load"], scheduled_dags=["report"])]
    )
    cleared = [asset(ORDERS, scheduled_dags=["report"])]  # the broken DAG's outlet is gone from /assets
    dags_doc, datasets = as_served(
        {
            "dags": [stale("load", has_import_errors=True), dag("report")],
            "import_errors": [broken_file("load.py")],
        },
        {"assets": cleared},
    )
    estate = parse_artifacts(
        json.dumps(dags_doc), json.dumps({"load": [], "report": []}), json.dumps(datasets)
    )
    baseline = load_document(json.dumps(good)).as_baseline()
    document = build_document(estate, audit(estate, baseline))
    assert codes(document)[("asset-unproduced", ORDERS)] == (
        "consumers: report; its producer load does not import (dags-folder/load.py)"
    )
    assert "starves: report" in (codes(document)[("dag-import-error", "dags-folder/load.py")] or "")
    assert ("dataset-removed", "load") not in codes(document)  # broken, not removed
    # the stored document keeps what the baseline told: its re-audit without a baseline agrees
    again = load_document(json.dumps(document)).estate
    assert again is not None
    assert (
        codes(build_document(again, audit(again)))[("asset-unproduced", ORDERS)]
        == (codes(document)[("asset-unproduced", ORDERS)])
    )


@pytest.mark.parametrize(
    ("trace", "line"),
    [
        (
            "Traceback (most recent call last):\n  File \"x.py\", line 1\n    y\nNameError: name 'y'",
            "NameError: name 'y'",
        ),
        (
            "Traceback (most recent call last):\n  File a\nKeyError: 'a'\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n  File b\nValueError: second\nmore",
            "ValueError: second",
        ),
        ("DagBag import timeout for x.py after 30.0s.", "DagBag import timeout for x.py after 30.0s."),
        (
            "REDACTED - you do not have read permission on all Dags in the file",
            "REDACTED - you do not have read permission on all Dags in the file",
        ),
        ("", "no error text"),
    ],
    ids=["traceback", "chained", "plain", "redacted", "empty"],
)
def test_the_error_line_is_the_last_exceptions_first(trace: str, line: str) -> None:
    assert error_line(trace) == line


def test_the_error_line_is_bounded() -> None:
    assert len(error_line("x" * 100_000)) == 300


# -- stale DAGs ------------------------------------------------------------------------------


def test_a_stale_dag_is_neither_described_nor_external() -> None:
    """A deleted DAG's inlets and outlets, which Airflow keeps, are dropped with a record."""
    document = served(
        [stale("gone"), dag("report")],
        [asset(ORDERS, producing_tasks=["gone"], scheduled_dags=["report"], consuming_tasks=["gone"])],
    )
    assert "gone" not in {d["identity"] for d in document["datasets"]}
    assert not any(edge["external"] for edge in document["lineage"])
    assert edges(document) == {("report", ORDERS)}
    [said] = messages(document, "gone")
    assert said.startswith("DAG 'gone' is stale") and "producer of 's3://lake/orders'" in said
    assert codes(document) == {("asset-unproduced", ORDERS): "consumers: report"}


def test_an_artifact_that_may_lack_the_stale_dags_says_so() -> None:
    """A plain GET /dags omits stale DAGs: an external DAG may be one of ours, and a record says so."""
    document = document_for(
        {"dags": [dag("report")], "import_errors": []},
        {"report": []},
        {"assets": [asset(ORDERS, producing_tasks=["elsewhere"], scheduled_dags=["report"])]},
    )
    assert [e["external"] for e in document["lineage"] if e["dependsOn"] == "elsewhere"] == [True]
    assert any("does not say whether it lists stale DAGs" in m for m in messages(document))


def test_every_dag_stale_is_the_one_hard_failure_left() -> None:
    from airflow_provider_coremodels.errors import DagsArtifactError

    with pytest.raises(DagsArtifactError, match="all 1 are stale"):
        parse_artifacts(json.dumps({"dags": [stale("gone")], "import_errors": []}))


# -- references that outlive the code --------------------------------------------------------


def test_a_producing_reference_the_code_no_longer_declares_is_not_lineage() -> None:
    """A DAG that lost its only outlet stays in producing_tasks; the dependency graph drawn from its
    serialized DAG does not have the edge: its consumer starves, and a record says why."""
    dags_doc, datasets = as_served(
        {"dags": [dag("loser"), dag("reader")]},
        {"assets": [asset(ORDERS, producing_tasks=["loser"], scheduled_dags=["reader"])]},
    )
    datasets["dependencies"]["edges"] = [
        e for e in datasets["dependencies"]["edges"] if e["source_id"] != "dag:loser"
    ]
    document = document_for(dags_doc, {"loser": [], "reader": []}, datasets)
    assert edges(document) == {("reader", ORDERS)}
    assert codes(document) == {("asset-unproduced", ORDERS): "consumers: reader"}
    [said] = messages(document, "loser")
    assert "outlived the code" in said


def test_an_edge_through_an_alias_node_is_declared() -> None:
    dags_doc, datasets = as_served(
        {"dags": [dag("p"), dag("c")]},
        {"assets": [asset(ORDERS, producing_tasks=["p"], scheduled_dags=["c"])]},
    )
    datasets["dependencies"]["edges"] = [
        {"source_id": "dag:p", "target_id": "asset-alias:a"},
        {"source_id": "asset-alias:a", "target_id": "asset:1"},
        {"source_id": "asset:1", "target_id": "dag:c"},
    ]
    assert edges(document_for(dags_doc, {"p": [], "c": []}, datasets)) == {(ORDERS, "p"), ("c", ORDERS)}


def test_without_a_graph_nothing_is_dropped_and_a_record_says_it_was_not_checked() -> None:
    dags_doc, datasets = as_served(
        {"dags": [dag("p"), dag("c")]},
        {"assets": [asset(ORDERS, producing_tasks=["p"], scheduled_dags=["c"])]},
    )
    del datasets["dependencies"]
    document = document_for(dags_doc, {"p": [], "c": []}, datasets)
    assert edges(document) == {(ORDERS, "p"), ("c", ORDERS)}
    assert any(
        m.startswith("asset references not checked against the DAGs' code") for m in messages(document)
    )


def test_an_inlet_is_current_where_its_file_declares_another_asset() -> None:
    """Airflow refreshes every reference of a file whose DAGs declare some asset: such an inlet is
    current; one of a DAG with nothing else in the graph rests on the reference alone."""
    document = served(
        [dag("both"), dag("only_reads")],
        [
            asset(ORDERS, producing_tasks=["both"], consuming_tasks=["only_reads"]),
            asset("s3://lake/fx", 2, consuming_tasks=["both"]),
        ],
    )
    assert [r["subject"] for r in document["lossiness"] if r["message"].startswith("task inlets rest")] == [
        "only_reads"
    ]


def test_a_finding_that_counts_an_unconfirmed_reader_says_so() -> None:
    """A consumer that reads the asset only through such an inlet may no longer read it."""
    document = served(
        [dag("reader"), dag("report")], [asset(ORDERS, scheduled_dags=["report"], consuming_tasks=["reader"])]
    )
    assert codes(document)[("asset-unproduced", ORDERS)] == (
        "consumers: reader, report; read only through a task inlet Airflow may keep after the code "
        "drops it: reader"
    )


def test_an_asset_read_by_many_unconfirmed_inlets_is_noted_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The readers that read an asset only through a task inlet are worked out once per asset a
    finding notes, not once per consumer (the consumers times the asset's edges)."""
    import importlib

    audit_module = importlib.import_module(
        "airflow_provider_coremodels.core.checks.audit"
    )  # not the function
    calls = []
    real = audit_module.inlet_only_readers
    monkeypatch.setattr(audit_module, "inlet_only_readers", lambda sides: calls.append(1) or real(sides))
    readers = [f"reader_{i:04d}" for i in range(500)]
    document = served(
        [*(dag(r) for r in readers), dag("report")],
        [asset(ORDERS, scheduled_dags=["report"], consuming_tasks=readers)],
    )
    detail = codes(document)[("asset-unproduced", ORDERS)]
    assert detail is not None and detail.endswith(", ".join(readers))
    assert len(calls) <= 3  # asset-unproduced, paused-producer and the freshness rules, at most once each


# -- what a line's API cannot show ---------------------------------------------------------------


def test_before_airflow_32_watchers_are_unknown_and_the_findings_say_so() -> None:
    """Airflow 3.0 and 3.1 list no watchers: an asset nobody produces may be updated by one."""
    document = without("watchers", [dag("report")], [asset(ORDERS, scheduled_dags=["report"])])
    assert codes(document)[("asset-unproduced", ORDERS)] == (
        "consumers: report; watchers unknown: an event-driven trigger Airflow does not list may update it"
    )
    metadata = next(d["metadata"] for d in document["datasets"] if d["identity"] == ORDERS)
    assert metadata["airflow.watched"] == "unknown"
    assert any(
        m.startswith("watchers of 1 asset unknown: this Airflow's API lists no asset watchers")
        for m in messages(document)
    )


def test_watchers_are_unknown_while_every_scheduled_dag_is_paused() -> None:
    """Airflow 3.2+ registers an asset's watchers only while a DAG scheduled on it is unpaused."""
    document = served([dag("report", is_paused=True)], [asset(ORDERS, scheduled_dags=["report"])])
    assert "watchers unknown" in (codes(document)[("asset-unproduced", ORDERS)] or "")
    assert any("every DAG scheduled on them is paused" in m for m in messages(document))
    active = served([dag("report")], [asset(ORDERS, scheduled_dags=["report"])])
    assert codes(active)[("asset-unproduced", ORDERS)] == "consumers: report"  # listed, and none


def test_airflow_2_and_30_list_no_inlets_and_say_so() -> None:
    document = without("consuming_tasks", [dag("p")], [asset(ORDERS, producing_tasks=["p"])])
    assert any(m.startswith("task inlets unknown") for m in messages(document))


def test_an_asset_functions_inputs_are_said_to_be_unseen() -> None:
    dags_doc, datasets = as_served({"dags": [dag("raw_orders")]}, {"assets": []})
    tasks = {"raw_orders": [{"task_id": "raw_orders", "class_ref": {"class_name": "_AssetMainOperator"}}]}
    document = document_for(dags_doc, tasks, datasets)
    assert any(
        m.startswith("the inputs of @asset functions") and "'raw_orders'" in m for m in messages(document)
    )


def test_the_captures_own_records_ride_in_the_files() -> None:
    """What a capture could not get is in the dags artifact: the offline audit says it too, once."""
    record = {
        "artifact": "dags",
        "message": "latest run states unknown on Airflow 2 (producer-failing not judged)",
    }
    document = served([dag("a")], [], lossiness=[record, record])
    assert messages(document).count(record["message"]) == 1


# -- refused twins, example bundles, documentation ----------------------------------------------


def test_a_refused_twin_is_a_conflict_before_the_scheduler_warns() -> None:
    """Only GET /assets?only_active=false shows the asset Airflow refused; the finding is the one
    the scheduler's warning gives later, word for word."""
    v1 = {**asset("s3://lake/inventory/v1", 1, producing_tasks=["first"]), "name": "inventory"}
    v2 = {**asset("s3://lake/inventory/v2", 2, producing_tasks=["second"]), "name": "inventory"}
    before = served([dag("first"), dag("second")], [v1], datasets_extra={"inactive_assets": [v2]})
    warning = (
        'Cannot activate asset Asset(name="inventory", uri="s3://lake/inventory/v2", group="asset"); '
        "name is already associated to 's3://lake/inventory/v1'"
    )
    after = served(
        [dag("first"), dag("second")],
        [v1],
        datasets_extra={"inactive_assets": [v2]},
        dag_warnings=[{"dag_id": "second", "warning_type": "asset conflict", "message": warning}],
    )
    conflict = ("asset-conflict", "s3://lake/inventory/v2")
    assert codes(before)[conflict] == codes(after)[conflict]
    assert codes(before)[conflict].endswith("DAGs naming it: second")
    assert before["fingerprint"] == after["fingerprint"]


def test_every_example_bundle_is_airflows_code() -> None:
    """Airflow 3.3 loads each provider's examples as its own bundle: one finding per bundle, and
    none of its DAGs gets a hygiene finding."""
    examples = [
        dag("example_a", bundle_name="example_dags", owners=["airflow"], description=None),
        dag("example_b", bundle_name="apache-airflow-providers-standard-example-dags", owners=["airflow"]),
    ]
    document = served([*examples, dag("ours")], [])
    assert codes(document) == {
        ("examples-loaded", "example_dags"): "1 example DAG: example_a",
        ("examples-loaded", "apache-airflow-providers-standard-example-dags"): "1 example DAG: example_b",
    }


def test_doc_md_counts_as_a_description_and_the_display_name_rides_along() -> None:
    document = served(
        [dag("documented", description=None, doc_md="# Loads\nthe orders", dag_display_name="Loads")], []
    )
    assert codes(document) == {}
    metadata = document["datasets"][0]["metadata"]
    assert (metadata["airflow.docMd"], metadata["airflow.displayName"]) == ("true", "Loads")
    assert "# Loads" not in json.dumps(document)  # the text itself stays in Airflow


# -- lineage drift --------------------------------------------------------------------------


def test_a_consumer_moving_is_lineage_drift() -> None:
    assets = [asset(ORDERS, 1, producing_tasks=["p"]), asset("s3://lake/b", 2, producing_tasks=["p"])]
    before = served([dag("p"), dag("c")], [assets[0] | {"scheduled_dags": [{"dag_id": "c"}]}, assets[1]])
    after_doc, after_sets = as_served(
        {"dags": [dag("p"), dag("c")]},
        {"assets": [assets[0], assets[1] | {"scheduled_dags": [{"dag_id": "c"}]}]},
    )
    estate = parse_artifacts(json.dumps(after_doc), json.dumps({"p": [], "c": []}), json.dumps(after_sets))
    document = build_document(estate, audit(estate, load_document(json.dumps(before)).as_baseline()))
    assert {k: v for k, v in codes(document).items() if k[0].startswith("lineage-")} == {
        ("lineage-removed", f"{ORDERS} -> c"): f"DAG c consumes asset {ORDERS}",
        ("lineage-added", "s3://lake/b -> c"): "DAG c consumes asset s3://lake/b",
    }


def test_edges_of_new_or_removed_dags_are_the_dataset_findings_to_tell() -> None:
    before = served([dag("p"), dag("old")], [asset(ORDERS, producing_tasks=["p"], scheduled_dags=["old"])])
    after_doc, after_sets = as_served(
        {"dags": [dag("p"), dag("new")]},
        {"assets": [asset(ORDERS, producing_tasks=["p"], scheduled_dags=["new"])]},
    )
    estate = parse_artifacts(json.dumps(after_doc), json.dumps({"p": [], "new": []}), json.dumps(after_sets))
    document = build_document(estate, audit(estate, load_document(json.dumps(before)).as_baseline()))
    assert not any(code.startswith("lineage-") for code, _ in codes(document))
    assert {("dataset-removed", "old"), ("dataset-unmapped", "new")} <= set(codes(document))


def test_no_lineage_drift_where_the_lineage_was_not_read() -> None:
    before = served([dag("p")], [asset(ORDERS, producing_tasks=["p"])])
    estate = parse_artifacts(
        json.dumps({"dags": [dag("p")], "import_errors": []}), json.dumps({"p": []}), None
    )
    document = build_document(estate, audit(estate, load_document(json.dumps(before)).as_baseline()))
    assert not any(code.startswith("lineage-") for code, _ in codes(document))


# -- the document, the merge, SARIF ---------------------------------------------------------------


def test_broken_files_read_back_alike_by_both_readers() -> None:
    document = served(
        [stale("load", has_import_errors=True)],
        [asset(ORDERS, producing_tasks=["load"])],
        import_errors=[broken_file("load.py")],
    )
    typed = load_document(json.dumps(document)).estate
    checked = load_document(
        json.dumps({**document, "schemaVersion": 2, "extra": float("nan")}).replace("NaN", "1")
    ).estate
    assert typed is not None and checked is not None
    assert typed.import_errors == checked.import_errors
    assert typed.import_errors[0].outlets == (("load", ORDERS),)


def test_a_merged_estate_names_each_deployments_broken_files() -> None:
    document = served(
        [stale("load", has_import_errors=True), dag("x")], [], import_errors=[broken_file("load.py")]
    )
    estate = load_document(json.dumps(document)).estate
    assert estate is not None
    merged = merge([Part("etl", estate)])
    assert [(f.file, f.dags) for f in merged.import_errors] == [("etl/dags-folder/load.py", ("etl/load",))]
    assert codes(build_document(merged, audit(merged)))[
        ("dag-import-error", "etl/dags-folder/load.py")
    ].startswith("dags: etl/load;")


def sarif_places(document: dict[str, Any], **kwargs: Any) -> set[tuple[str, str]]:
    sarif = json.loads(render_sarif(document, tool_version="test", **kwargs))
    return {
        (result["ruleId"], location["physicalLocation"]["artifactLocation"]["uri"])
        for result in sarif["runs"][0]["results"]
        for location in result["locations"]
        if "physicalLocation" in location
    }


def test_sarif_places_a_broken_file_and_never_confuses_two_bundles() -> None:
    """Two bundles with the same relative path: each file under its bundle's own folder (or root)."""
    ours = dag("ours", owners=["airflow"], relative_fileloc="jobs.py")
    theirs = dag("theirs", owners=["airflow"], bundle_name="analytics", relative_fileloc="jobs.py")
    document = served([ours, theirs, dag("other")], [], import_errors=[broken_file("broken.py")])
    assert sarif_places(document) >= {
        ("dag-no-owner", "dags-folder/jobs.py"),
        ("dag-no-owner", "analytics/jobs.py"),
        ("dag-import-error", "dags-folder/broken.py"),
    }
    rooted = sarif_places(document, source_root=source_roots(["dags", "analytics=teams/analytics/dags"]))
    assert rooted >= {
        ("dag-no-owner", "dags/dags-folder/jobs.py"),
        ("dag-no-owner", "teams/analytics/dags/jobs.py"),
        ("dag-import-error", "dags/dags-folder/broken.py"),
    }
    one_bundle = served([dag("solo", owners=["airflow"])], [])
    assert sarif_places(one_bundle, source_root=source_roots(["dags"])) == {("dag-no-owner", "dags/solo.py")}
