"""Airflow 3's asset model: kinds, @asset, Asset.ref, aliases, watchers, names, conditions, conflicts.

Small artifacts shaped as Airflow 3.3 answers them (the recorded shapes are in
tests/fixtures/airflow3_assets/), parsed and audited; each test pins one construct.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.helpers import document_for

ACTIVE = {"is_paused": False, "description": "d", "owners": ["team"]}
PAUSED = {**ACTIVE, "is_paused": True}


def dag(dag_id: str, *, paused: bool = False, expression: Any = None, **extra: Any) -> dict[str, Any]:
    raw = {"dag_id": dag_id, **(PAUSED if paused else ACTIVE), **extra}
    if expression is not None:
        raw.update(timetable_summary="Asset", asset_expression=expression)
    return raw


def asset(uri: str, name: str | None = None, **refs: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"uri": uri, "name": name or uri, "group": "asset"}
    for key, value in refs.items():
        if key in ("producing_tasks", "scheduled_dags", "consuming_tasks"):
            raw[key] = [{"dag_id": d, "task_id": "t"} for d in value]
        else:
            raw[key] = value
    return raw


def on(uri: str, name: str | None = None) -> dict[str, Any]:
    """An ``asset`` leaf of asset_expression as Airflow 3.3 writes it."""
    return {"asset": {"uri": uri, "name": name or uri, "group": "asset", "id": 1}}


def audit_of(dags: list[dict[str, Any]], assets: list[dict[str, Any]], **datasets: Any) -> dict[str, Any]:
    tasks = {d["dag_id"]: [] for d in dags}
    return document_for(
        {"dags": dags, **datasets.pop("dags_extra", {})}, tasks, {"assets": assets, **datasets}, served=True
    )


def edges(document: dict[str, Any]) -> list[tuple[str, ...]]:
    """Each edge as (dependent kind:id, dependsOn kind:id, via), in document order."""
    return [
        (f"{e['dependentKind']}:{e['dependent']}", f"{e['dependsOnKind']}:{e['dependsOn']}", e.get("via", ""))
        for e in document["lineage"]
    ]


def findings(document: dict[str, Any], code: str | None = None) -> list[tuple[str, str, str | None]]:
    return [(f["code"], f["subject"], f["detail"]) for f in document["findings"] if code in (None, f["code"])]


def lossiness(document: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [(r["artifact"], r.get("subject"), r["message"]) for r in document["lossiness"]]


# -- 1. a DAG and an asset that share a name -----------------------------------------------


def test_a_paused_asset_decorator_upstream_is_a_paused_producer() -> None:
    """@asset raw_orders is a DAG raw_orders producing the asset raw_orders; clean_orders runs on it."""
    document = audit_of(
        [dag("raw_orders", paused=True), dag("clean_orders", expression=on("raw_orders"))],
        [asset("raw_orders", producing_tasks=["raw_orders"], scheduled_dags=["clean_orders"])],
    )
    assert edges(document) == [
        ("dag:clean_orders", "asset:raw_orders", ""),
        ("asset:raw_orders", "dag:raw_orders", ""),
    ]
    assert findings(document, "paused-producer") == [
        ("paused-producer", "raw_orders", "producers: raw_orders; active consumers: clean_orders")
    ]


def test_a_consumer_named_like_its_asset_is_never_read_as_a_producer() -> None:
    """Version 1 read the edge (orders -> orders) as producing: the asset looked produced."""
    document = audit_of([dag("orders")], [asset("orders", scheduled_dags=["orders"])])
    assert edges(document) == [("dag:orders", "asset:orders", "")]
    assert findings(document, "asset-unproduced") == [("asset-unproduced", "orders", "consumers: orders")]


# -- 2. Asset.ref ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "resolved"),
    [
        pytest.param({"asset_ref": {"name": "orders_sync"}}, True, id="by-name"),
        pytest.param({"asset_ref": {"uri": "s3://lake/orders_sync"}}, True, id="by-uri"),
        pytest.param({"asset_ref": {"uri": "s3://lake/orders_sync/"}}, False, id="by-uri-with-slash"),
        pytest.param({"asset_ref": {"name": "s3://lake/orders_sync"}}, False, id="a-uri-is-not-a-name"),
    ],
)
def test_schedules_on_asset_ref_resolve_by_name_or_uri_as_airflow_does(
    ref: dict[str, Any], resolved: bool
) -> None:
    """Only the DAG's details tell of a schedule on Asset.ref: /assets never lists such a DAG."""
    document = audit_of(
        [dag("orders_sync", paused=True), dag("report", expression=ref)],
        [asset("s3://lake/orders_sync", "orders_sync", producing_tasks=["orders_sync"])],
    )
    if resolved:
        assert ("dag:report", "asset:s3://lake/orders_sync", "ref") in edges(document)
        assert findings(document, "paused-producer") == [
            ("paused-producer", "s3://lake/orders_sync", "producers: orders_sync; active consumers: report")
        ]
        assert lossiness(document) == []
    else:
        assert edges(document) == [("asset:s3://lake/orders_sync", "dag:orders_sync", "")]
        [(artifact, subject, message)] = lossiness(document)
        assert (artifact, subject) == ("datasets", "report")
        assert "which matches no asset" in message and "it never runs on it" in message
        if ref["asset_ref"].get("uri", "").endswith("/"):
            assert "matches a reference's URI as written" in message


# -- 3. aliases ------------------------------------------------------------------------------

ALIAS = {"alias": {"name": "daily_exports", "group": "asset"}}
EXPORT = "s3://lake/exports/2026-01-01"


def exported(*, producing: list[str] = (), events: Any = None, **extra: Any) -> dict[str, Any]:
    datasets: dict[str, Any] = {"asset_aliases": [{"id": 1, "name": "daily_exports", "group": "asset"}]}
    if events is not None:
        datasets["asset_events"] = events
    return {
        "assets": [
            asset(EXPORT, "export", producing_tasks=list(producing), aliases=[{"name": "daily_exports"}])
        ],
        **datasets,
        **extra,
    }


def event(dag_id: str | None) -> dict[str, Any]:
    return {"uri": EXPORT, "source_dag_id": dag_id, "source_task_id": "t" if dag_id else None}


def test_an_alias_consumer_depends_on_what_the_alias_resolved_to() -> None:
    datasets = exported(events=[event("exports_producer")])
    document = audit_of([dag("exports_producer"), dag("exports_consumer", expression=ALIAS)], **datasets)
    assert edges(document) == [
        ("dag:exports_consumer", f"asset:{EXPORT}", "alias:daily_exports"),
        (f"asset:{EXPORT}", "dag:exports_producer", "alias:daily_exports"),
    ]
    [export] = [d for d in document["datasets"] if d["identity"] == EXPORT]
    assert export["metadata"] == {"airflow.name": "export", "airflow.aliases": "daily_exports"}
    assert lossiness(document) == []


def test_an_asset_an_active_dag_keeps_fresh_through_an_alias_is_not_a_paused_producer() -> None:
    """Its only direct producer is paused, but an active DAG writes it through the alias."""
    datasets = exported(producing=["old_loader"], events=[event("exports_producer"), event("old_loader")])
    document = audit_of(
        [dag("old_loader", paused=True), dag("exports_producer"), dag("reader", expression=on(EXPORT))],
        **datasets,
    )
    assert findings(document) == []
    assert (f"asset:{EXPORT}", "dag:old_loader", "") in edges(document)  # direct beats alias


def test_every_known_writer_paused_through_an_alias_is_a_paused_producer() -> None:
    datasets = exported(events=[event("exports_producer"), event(None)])  # None: an API-made event
    document = audit_of(
        [dag("exports_producer", paused=True), dag("reader", expression=on(EXPORT))], **datasets
    )
    assert findings(document, "paused-producer") == [
        ("paused-producer", EXPORT, "producers: exports_producer; active consumers: reader")
    ]


@pytest.mark.parametrize(
    ("events", "why"),
    [
        pytest.param(None, "no asset events were captured", id="not-captured"),
        pytest.param([event(None)], "no asset event names a DAG for it", id="no-dag-named"),
    ],
)
def test_unknown_alias_writers_are_lossiness_and_never_all_paused(events: Any, why: str) -> None:
    datasets = exported(producing=["old_loader"], events=events)
    document = audit_of([dag("old_loader", paused=True), dag("reader", expression=on(EXPORT))], **datasets)
    assert findings(document) == []  # not "every producer is paused": some writers are unknown
    assert lossiness(document) == [
        (
            "datasets",
            EXPORT,
            f"asset '{EXPORT}' is written through alias 'daily_exports', but by whom is unknown: {why}",
        )
    ]


def test_an_aliased_asset_nothing_else_produces_is_not_unproduced() -> None:
    document = audit_of([dag("reader", expression=on(EXPORT))], **exported(events=[]))
    assert findings(document, "asset-unproduced") == []


def test_an_alias_that_resolves_to_nothing_yet_is_lossiness_once() -> None:
    document = audit_of(
        [dag("first", expression=ALIAS), dag("second", expression={"any": [ALIAS, on("s3://x")]})],
        [asset("s3://x", producing_tasks=["first"])],
        asset_aliases=[{"id": 1, "name": "daily_exports", "group": "asset"}],
        asset_events=[],
    )
    assert [r[:2] for r in lossiness(document)] == [("datasets", "daily_exports")]
    assert "resolves to no asset in the datasets artifact" in lossiness(document)[0][2]


def not_active(uri: str = EXPORT, name: str = "export") -> dict[str, Any]:
    """An asset an alias created at run time, as ``GET /assets?only_active=false`` shows it before
    the scheduler's asset pass: no references, only the alias."""
    return {**asset(uri, name), "id": 13, "aliases": [{"id": 1, "name": "daily_exports", "group": "asset"}]}


def test_an_alias_written_before_the_scheduler_activates_its_assets_resolves_from_the_inactive_list() -> None:
    """Before the scheduler's asset pass GET /assets lacks what the alias wrote; only_active=false and
    the events show it: its assets and edges are known, and the record says they are not active yet,
    never that nothing was written."""
    second = "s3://lake/exports/2026-01-02"
    document = audit_of(
        [dag("exports_producer"), dag("exports_consumer", expression=ALIAS)],
        [asset("s3://x", producing_tasks=["exports_producer"])],
        asset_aliases=[{"id": 1, "name": "daily_exports", "group": "asset"}],
        inactive_assets=[not_active(), not_active(second, "export_2")],
        asset_events=[event("exports_producer"), {**event("exports_producer"), "uri": second}],
    )
    assert sorted(e for e in edges(document) if e[2]) == sorted(
        [
            ("dag:exports_consumer", f"asset:{EXPORT}", "alias:daily_exports"),
            ("dag:exports_consumer", f"asset:{second}", "alias:daily_exports"),
            (f"asset:{EXPORT}", "dag:exports_producer", "alias:daily_exports"),
            (f"asset:{second}", "dag:exports_producer", "alias:daily_exports"),
        ]
    )
    [(artifact, subject, message)] = lossiness(document)
    assert (artifact, subject) == ("datasets", "daily_exports")
    assert f"'{EXPORT}', '{second}'" in message and "GET /assets does not list yet" in message
    assert "nothing has been written" not in message
    assert findings(document, "asset-unproduced") == []


def test_an_inactive_aliased_asset_without_events_says_its_writers_are_unknown() -> None:
    document = audit_of(
        [dag("exports_consumer", expression=ALIAS)],
        [asset("s3://x", watchers=[])],  # an active asset: this API lists watchers
        asset_aliases=[{"id": 1, "name": "daily_exports", "group": "asset"}],
        inactive_assets=[not_active()],
    )
    assert edges(document) == [("dag:exports_consumer", f"asset:{EXPORT}", "alias:daily_exports")]
    assert [r[:2] for r in lossiness(document)] == [("datasets", "daily_exports"), ("datasets", EXPORT)]
    assert "no asset events were captured" in lossiness(document)[1][2]


def test_an_inactive_aliased_asset_whose_name_is_taken_is_said_to_stay_inactive() -> None:
    document = audit_of(
        [dag("exports_producer")],
        [asset("s3://other", "export", producing_tasks=["exports_producer"])],
        asset_aliases=[{"id": 1, "name": "daily_exports", "group": "asset"}],
        inactive_assets=[not_active()],
        asset_events=[event("exports_producer")],
    )
    [(_, subject, message)] = lossiness(document)
    assert subject == "daily_exports"
    assert (
        f"'{EXPORT}' will not be activated while its name belongs to the active asset 's3://other'" in message
    )


def test_without_the_inactive_list_an_unresolved_alias_does_not_claim_nothing_was_written() -> None:
    """An artifact without inactive_assets cannot tell "nothing written" from "not active yet"."""
    aliases = [{"id": 1, "name": "daily_exports", "group": "asset"}]
    listed = audit_of([dag("c", expression=ALIAS)], [], asset_aliases=aliases, inactive_assets=[])
    unlisted = audit_of([dag("c", expression=ALIAS)], [], asset_aliases=aliases)
    assert "nothing has been written through it yet" in lossiness(listed)[0][2]
    [(_, subject, message)] = lossiness(unlisted)
    assert subject == "daily_exports"
    assert "does not list the inactive assets" in message and "nothing has been written" not in message


# -- 4. watchers ---------------------------------------------------------------------------


def test_a_watched_asset_is_updated_from_outside_never_unproduced_nor_starved() -> None:
    watched = asset("file:///inbox/orders.csv", "inbox", scheduled_dags=["loader"], watchers=[{"name": "w"}])
    document = audit_of([dag("loader")], [watched])
    assert findings(document) == []
    assert document["datasets"][0]["metadata"] == {"airflow.name": "inbox", "airflow.watched": "true"}
    paused_producer = {**watched, "producing_tasks": [{"dag_id": "p", "task_id": "t"}]}
    assert findings(audit_of([dag("loader"), dag("p", paused=True)], [paused_producer])) == []


# -- 5. names, groups and conflicts ---------------------------------------------------------


def test_name_and_group_ride_as_metadata_the_default_group_does_not() -> None:
    document = audit_of(
        [dag("a")], [asset("s3://x", "x"), {"uri": "s3://y", "name": "y", "group": "finance"}]
    )
    metadata = {d["identity"]: d["metadata"] for d in document["datasets"] if d["materialization"] == "asset"}
    assert metadata == {
        "s3://x": {"airflow.name": "x"},
        "s3://y": {"airflow.name": "y", "airflow.group": "finance"},
    }


NAME_CLASH = (
    'Cannot activate asset Asset(name="inventory", uri="s3://lake/inventory/v2", group="asset"); '
    "name is already associated to 's3://lake/inventory/v1'"
)
URI_CLASH = (
    'Cannot activate asset Asset(name="sales_feed", uri="s3://lake/sales", group="asset"); '
    "uri is already associated to 'sales_ledger'"
)


def warning(dag_id: str, message: str, kind: str = "asset conflict") -> dict[str, Any]:
    return {"dag_id": dag_id, "warning_type": kind, "message": message, "timestamp": "2026-12-01T00:00:00Z"}


def test_asset_conflicts_come_from_airflows_own_dag_warnings() -> None:
    document = audit_of(
        [dag("inventory_v2"), dag("sales_feed"), dag("other")],
        [],
        dags_extra={
            "dag_warnings": [
                warning("inventory_v2", NAME_CLASH),
                warning("sales_feed", URI_CLASH),
                warning("other", "Dag 'other' references non-existent pools: 'p'", "non-existent pool"),
            ]
        },
    )
    assert findings(document) == [
        # any other warning is a finding of its own (tests/core/test_policy.py has the rule)
        ("airflow-warning", "other", "non-existent pool: Dag 'other' references non-existent pools: 'p'"),
        (
            "asset-conflict",
            "s3://lake/inventory/v2",
            'name "inventory" belongs to the active asset s3://lake/inventory/v1; the asset '
            "s3://lake/inventory/v2 declared with it is refused; DAGs naming it: inventory_v2",
        ),
        (
            "asset-conflict",
            "s3://lake/sales",
            'URI s3://lake/sales belongs to the active asset "sales_ledger"; the asset "sales_feed" '
            "declared with it is refused; DAGs naming it: sales_feed",
        ),
    ]
    [inventory] = [d for d in document["datasets"] if d["identity"] == "inventory_v2"]
    assert inventory["metadata"]["airflow.assetConflict"] == NAME_CLASH


def test_one_refused_asset_named_by_several_dags_is_one_finding() -> None:
    document = audit_of(
        [dag("a"), dag("b")],
        [],
        dags_extra={"dag_warnings": [warning("a", NAME_CLASH), warning("b", f"{URI_CLASH}\n{NAME_CLASH}")]},
    )
    assert [(code, subject, detail.rsplit("; ", 1)[1]) for code, subject, detail in findings(document)] == [
        ("asset-conflict", "s3://lake/inventory/v2", "DAGs naming it: a, b"),
        ("asset-conflict", "s3://lake/sales", "DAGs naming it: b"),
    ]


def test_a_warning_this_version_cannot_read_is_lossiness_not_a_guess() -> None:
    document = audit_of(
        [dag("a")],
        [],
        dags_extra={
            "dag_warnings": [
                warning("a", "Cannot activate asset: a new wording"),
                warning("gone", NAME_CLASH),
            ]
        },
    )
    assert findings(document) == []
    assert [(artifact, subject) for artifact, subject, _ in lossiness(document)] == [
        ("dags", "a"),
        ("dags", "gone"),
    ]


# -- 6. conditions: required and alternative inputs -----------------------------------------


def test_an_unproduced_alternative_input_says_the_dag_runs_without_it() -> None:
    condition = {"any": [{"all": [on("s3://prices"), on("s3://fx")]}, on("s3://manual")]}
    document = audit_of(
        [
            dag("market"),
            dag("valuation", expression=condition),
            dag("report", expression={"all": [on("s3://manual")]}),
        ],
        [
            asset("s3://prices", producing_tasks=["market"], scheduled_dags=["valuation"]),
            asset("s3://fx", producing_tasks=["market"], scheduled_dags=["valuation"]),
            asset("s3://manual", scheduled_dags=["valuation", "report"]),
        ],
    )
    assert findings(document) == [
        (
            "asset-unproduced",
            "s3://manual",
            "consumers: report, valuation; only an alternative input of: valuation",
        )
    ]
    [valuation] = [d for d in document["datasets"] if d["identity"] == "valuation"]
    assert valuation["metadata"]["airflow.assetCondition"] == (
        '{"any":[{"all":[{"asset":"s3://prices"},{"asset":"s3://fx"}]},{"asset":"s3://manual"}]}'
    )


def test_a_required_input_gets_no_note() -> None:
    condition = {"all": [on("s3://a"), on("s3://b")]}
    document = audit_of(
        [dag("p"), dag("c", expression=condition)],
        [asset("s3://a", scheduled_dags=["c"]), asset("s3://b", producing_tasks=["p"])],
    )
    assert findings(document) == [("asset-unproduced", "s3://a", "consumers: c")]


def test_an_asset_scheduled_dag_without_its_condition_is_lossiness() -> None:
    bare = {"dag_id": "c", **ACTIVE, "timetable_summary": "Asset"}
    document = audit_of([bare], [asset("s3://a", scheduled_dags=["c"])])
    [(artifact, subject, message)] = lossiness(document)
    assert (artifact, subject) == ("dags", "c") and "lacks its condition" in message
    assert edges(document) == [("dag:c", "asset:s3://a", "")]  # what /assets says still holds


def test_an_unreadable_condition_is_lossiness() -> None:
    document = audit_of([dag("c", expression={"someday": []})], [])
    assert lossiness(document) == [
        ("dags", "c", "the asset_expression of DAG 'c' was not understood: unknown key 'someday'")
    ]


# -- 7. inlets and state stores -------------------------------------------------------------


def test_an_inlet_reader_is_a_consumer_that_says_so_and_a_state_store_is_no_loop() -> None:
    document = audit_of(
        [dag("sync"), dag("audit_orders"), dag("incremental")],
        [
            asset("s3://orders", producing_tasks=["sync"], consuming_tasks=["audit_orders"]),
            asset("s3://watermark", producing_tasks=["incremental"], consuming_tasks=["incremental"]),
        ],
    )
    assert edges(document) == [
        ("dag:audit_orders", "asset:s3://orders", "inlet"),
        ("asset:s3://orders", "dag:sync", ""),
        ("asset:s3://watermark", "dag:incremental", ""),
    ]


def test_a_dag_scheduled_on_an_asset_it_also_reads_keeps_the_plain_edge() -> None:
    document = audit_of([dag("c")], [asset("s3://a", scheduled_dags=["c"], consuming_tasks=["c"])])
    assert edges(document) == [("dag:c", "asset:s3://a", "")]


# -- 8. Airflow's example DAGs ---------------------------------------------------------------


def test_examples_loaded_is_one_finding_instead_of_hygiene_findings_on_airflows_code() -> None:
    examples = [
        {"dag_id": f"example_{i}", "is_paused": False, "owners": ["airflow"], "bundle_name": "example_dags"}
        for i in range(7)
    ]
    document = audit_of(
        [
            *examples,
            {"dag_id": "mine", "is_paused": False, "owners": ["airflow"], "bundle_name": "dags-folder"},
        ],
        [],
    )
    assert findings(document) == [
        ("dag-no-description", "mine", None),
        ("dag-no-owner", "mine", "owners: airflow"),
        (
            "examples-loaded",
            "example_dags",
            "7 example DAGs: example_0, example_1, example_2, example_3, example_4, ...",
        ),
    ]


def test_airflow2_examples_are_known_by_their_file() -> None:
    example = {
        "dag_id": "example_bash_operator",
        "is_paused": False,
        "fileloc": "/usr/local/lib/python3.11/site-packages/airflow/example_dags/example_bash_operator.py",
    }
    document = audit_of([example], [])
    assert findings(document) == [("examples-loaded", "example_dags", "1 example DAG: example_bash_operator")]


def test_every_reference_that_matches_nothing_is_its_own_record() -> None:
    condition = {"all": [{"asset_ref": {"name": "gone"}}, {"asset_ref": {"uri": "s3://gone"}}]}
    document = audit_of([dag("c", expression=condition)], [])
    assert [
        (subject, "name='gone'" in m or "uri='s3://gone'" in m) for _, subject, m in lossiness(document)
    ] == [
        ("c", True),
        ("c", True),
    ]


def test_aliased_assets_in_a_bare_array_have_unknown_writers() -> None:
    """A bare array carries no events: who writes through the alias is unknown, and said so."""
    aliased = asset("s3://x", aliases=[{"name": "a"}], producing_tasks=["p"])
    document = document_for(
        {"dags": [dag("p", paused=True), dag("c", expression=on("s3://x"))]}, None, [aliased]
    )
    assert findings(document, "paused-producer") == []
    assert [(a, s) for a, s, _ in lossiness(document) if a == "datasets" and s] == [("datasets", "s3://x")]


def test_airflow2_dataset_expressions_and_aliases_where_its_api_tells_them() -> None:
    """Airflow 2.10's dataset_expression: URI strings, and an alias by name that /datasets never resolves."""
    dags = [
        {"dag_id": "p", "is_paused": True, "description": "d", "owners": ["t"], "is_active": True},
        {
            "dag_id": "c",
            "is_paused": False,
            "description": "d",
            "owners": ["t"],
            "is_active": True,
            "timetable_description": "Triggered by datasets",
            "dataset_expression": {"any": ["s3://a", {"alias": "nightly"}]},
        },
    ]
    datasets = {
        "datasets": [
            {
                "uri": "s3://a",
                "producing_tasks": [{"dag_id": "p", "task_id": "t"}],
                "consuming_dags": [{"dag_id": "c"}],
            }
        ]
    }
    document = document_for(dags, {"p": [], "c": []}, datasets)
    assert edges(document) == [("dag:c", "asset:s3://a", ""), ("asset:s3://a", "dag:p", "")]
    assert findings(document) == [
        ("paused-producer", "s3://a", "producers: p; active consumers: c; only an alternative input of: c")
    ]
    [(artifact, subject, message)] = [record for record in lossiness(document) if record[1]]
    assert (artifact, subject) == ("datasets", "nightly") and "on Airflow 2, the API does not say" in message
    # and what Airflow 2's API cannot show, said once each: no import errors were given, and it
    # lists no task inlets (its references need no check: Airflow 2 deletes what the code drops)
    unsubjected = [message for _, subject, message in lossiness(document) if not subject]
    assert [m.split(":")[0] for m in unsubjected] == ["import errors unknown", "task inlets unknown"]
