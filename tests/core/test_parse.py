"""The parse: artifact shapes, hard failures, lossiness, and the DAG, asset and task mappings."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.helpers import document_for

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.core import parse_artifacts
from airflow_provider_coremodels.core.reading import parse as parse_module
from airflow_provider_coremodels.core.reading.parse import asset_name
from airflow_provider_coremodels.errors import DagsArtifactError

DAG_A = {"dag_id": "a", "description": "A", "owners": ["team"], "is_paused": False}
DAG_B = {"dag_id": "b", "description": "B", "owners": ["team"], "is_paused": False}


def dataset(document: dict[str, Any], identity: str) -> dict[str, Any]:
    return next(d for d in document["datasets"] if d["identity"] == identity)


def lossiness(document: dict[str, Any], artifact: str) -> list[str]:
    return [r["message"] for r in document["lossiness"] if r["artifact"] == artifact]


# -- the dags artifact --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        pytest.param(None, "dags artifact is missing", id="missing"),
        pytest.param(
            b"{not json", "dags artifact is not valid JSON: Expecting property name", id="invalid-json"
        ),
        pytest.param(b"\xff\xfe\x00garbage", "dags artifact is not valid JSON", id="not-utf8"),
        pytest.param(b"[" * 100_000, "dags artifact is not valid JSON", id="nesting-bomb"),
        pytest.param(
            b'{"items": [], "total_entries": 0}',
            'dags artifact has an unrecognized shape: expected {"dags": [...]} or a JSON array, '
            'got an object with keys ["items", "total_entries"]',
            id="object-without-dags",
        ),
        pytest.param(b'"dags"', "got a string", id="scalar"),
        pytest.param(b'{"dags": {"a": 1}}', "unrecognized shape", id="dags-not-a-list"),
        pytest.param(b'{"dags": [], "total_entries": 0}', "dags artifact has no DAGs", id="zero-dags"),
        pytest.param(b"[]", "dags artifact has no DAGs", id="zero-dags-bare"),
        pytest.param(
            b'[{"description": "no id"}, 7]',
            "dags artifact has no usable DAGs: all 2 entries were skipped (entry 0 has no dag_id)",
            id="no-usable-dag",
        ),
    ],
)
def test_unusable_dags_artifact_fails_naming_the_problem(data: bytes | None, problem: str) -> None:
    with pytest.raises(DagsArtifactError) as excinfo:
        parse_artifacts(data)
    assert problem in str(excinfo.value)
    assert "\n" not in str(excinfo.value)


IMPORT_ERRORS_UNKNOWN = (
    "import errors unknown: the dags artifact carries no import_errors (GET /importErrors), so a DAG "
    "file that does not import is not reported"
)


@pytest.mark.parametrize(
    "dags",
    [
        pytest.param({"dags": [DAG_A], "total_entries": 1}, id="wrapped"),
        pytest.param([DAG_A], id="bare-array"),
    ],
)
def test_dags_artifact_shapes(dags: Any) -> None:
    document = document_for(dags)
    assert [d["identity"] for d in document["datasets"]] == ["a"]


def test_dag_without_id_is_skipped_with_lossiness() -> None:
    document = document_for([DAG_A, {"description": "orphan"}, "junk", {"dag_id": ""}])
    assert [d["identity"] for d in document["datasets"]] == ["a"]
    assert lossiness(document, "dags") == [
        "dags artifact entry 1 has no dag_id; skipped",
        "dags artifact entry 2 is a string, not a DAG object; skipped",
        "dags artifact entry 3 has no dag_id; skipped",
        IMPORT_ERRORS_UNKNOWN,  # a bare array carries no import errors
    ]


def test_duplicate_dag_from_page_overlap_is_added_once() -> None:
    document = document_for({"dags": [DAG_A, DAG_B, DAG_A]})
    assert [d["identity"] for d in document["datasets"]] == ["a", "b"]
    assert document["state"]["facts"]["dags"] == 2


def test_dag_mapping() -> None:
    raw = {
        "dag_id": "load_orders",
        "description": "Loads orders",
        "fileloc": "/opt/airflow/dags/orders.py",
        "tags": [{"name": "orders"}, {"name": "lake"}],
        "owners": ["data-eng"],
        "is_paused": True,
        "timetable_summary": "0 5 * * *",
        "last_parsed_time": "2026-11-29T06:00:00Z",
    }
    dag = dataset(document_for([raw]), "load_orders")
    assert dag == {
        "identity": "load_orders",
        "name": "load_orders",
        "materialization": "dag",
        "physicalName": "/opt/airflow/dags/orders.py",
        "description": "Loads orders",
        "tags": ["lake", "orders"],
        "mapsTo": {"standard": "airflow", "uri": "load_orders"},
        "metadata": {"airflow.paused": "true", "airflow.owners": "data-eng", "airflow.schedule": "0 5 * * *"},
        "fields": [],
    }


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        pytest.param({"description": None}, None, id="null"),
        pytest.param({}, None, id="missing"),
        pytest.param({"description": 42}, None, id="not-a-string"),
        pytest.param({"description": "  padded  "}, "  padded  ", id="kept-as-given"),
    ],
)
def test_description(extra: dict[str, Any], expected: str | None) -> None:
    assert dataset(document_for([{"dag_id": "d", **extra}]), "d")["description"] == expected


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        pytest.param([{"name": "b"}, {"name": "a"}], ["a", "b"], id="objects-v1"),
        pytest.param(["b", "a"], ["a", "b"], id="strings"),
        pytest.param([{"name": "x", "dag_id": "d"}, "y", {"nope": 1}, 3, None], ["x", "y"], id="mixed-junk"),
        pytest.param("not-a-list", [], id="not-a-list"),
        pytest.param(["a", "a"], ["a"], id="duplicates"),
    ],
)
def test_tags(tags: Any, expected: list[str]) -> None:
    assert dataset(document_for([{"dag_id": "d", "tags": tags}]), "d")["tags"] == expected


@pytest.mark.parametrize(
    ("owners", "expected"),
    [
        pytest.param(["data-eng"], "data-eng", id="one"),
        pytest.param(["data-eng", " ops"], "data-eng,ops", id="airflow2-spaces"),
        pytest.param([" finance "], "finance", id="padded"),
        pytest.param(["ops", "", "  "], "ops", id="empties-dropped"),
        pytest.param(["orders-oncall", "data-eng"], "data-eng,orders-oncall", id="sorted-set-order"),
        pytest.param([], "", id="empty-list"),
        pytest.param(["airflow"], "airflow", id="default"),
    ],
)
def test_owners(owners: list[str], expected: str) -> None:
    metadata = dataset(document_for([{"dag_id": "d", "owners": owners}]), "d")["metadata"]
    assert metadata["airflow.owners"] == expected


def test_owners_absent_leave_the_key_out() -> None:
    assert "airflow.owners" not in dataset(document_for([{"dag_id": "d"}]), "d")["metadata"]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"schedule_interval": "@daily"}, "@daily", id="plain-string"),
        pytest.param(
            {"schedule_interval": {"__type": "CronExpression", "value": "0 6 * * *"}},
            "0 6 * * *",
            id="cron-object",
        ),
        pytest.param(
            {"schedule_interval": {"__type": "TimeDelta", "days": 1, "seconds": 0, "microseconds": 0}},
            "TimeDelta",
            id="timedelta-object",
        ),
        pytest.param(
            {"schedule_interval": {"__type": "RelativeDelta", "months": 1}},
            "RelativeDelta",
            id="relativedelta",
        ),
        pytest.param({"timetable_summary": "6:00:00"}, "6:00:00", id="airflow3-summary"),
        pytest.param(
            {"schedule_interval": None, "timetable_summary": "Asset"}, "Asset", id="null-falls-back"
        ),
        pytest.param(
            {"schedule_interval": "0 1 * * *", "timetable_summary": "0 2 * * *"},
            "0 1 * * *",
            id="interval-wins",
        ),
        pytest.param({"schedule_interval": {"days": 1}}, None, id="object-without-value-or-type"),
        pytest.param({"schedule_interval": None, "timetable_summary": None}, None, id="no-schedule"),
        pytest.param({"timetable_summary": "   "}, None, id="blank"),
    ],
)
def test_schedule_shapes(fields: dict[str, Any], expected: str | None) -> None:
    metadata = dataset(document_for([{"dag_id": "d", **fields}]), "d")["metadata"]
    assert metadata.get("airflow.schedule") == expected
    assert ("airflow.schedule" in metadata) == (expected is not None)


@pytest.mark.parametrize(
    ("paused", "expected"),
    [(True, "true"), (False, "false"), ("yes", None), (None, None)],
)
def test_paused(paused: Any, expected: str | None) -> None:
    metadata = dataset(document_for([{"dag_id": "d", "is_paused": paused}]), "d")["metadata"]
    assert metadata.get("airflow.paused") == expected


# -- the tasks artifact -------------------------------------------------------------------

TASKS = [
    {"task_id": "t2", "class_ref": {"class_name": "BashOperator", "module_path": "x"}, "owner": "ops"},
    {"task_id": "t1", "operator_name": "@task"},
]


@pytest.mark.parametrize(
    "tasks",
    [
        pytest.param({"a": {"tasks": TASKS, "total_entries": 2}}, id="response-objects"),
        pytest.param({"a": TASKS}, id="bare-lists"),
        pytest.param([{"dag_id": "a", "tasks": TASKS}], id="list-of-dag-entries"),
    ],
)
def test_tasks_artifact_shapes(tasks: Any) -> None:
    document = document_for([DAG_A], tasks)
    assert dataset(document, "a")["fields"] == [
        {
            "name": "t1",
            "nativeType": "@task",
            "type": "String",
            "approximate": True,
            "tags": [],
            "metadata": {},
        },
        {
            "name": "t2",
            "nativeType": "BashOperator",
            "type": "String",
            "approximate": True,
            "tags": [],
            "metadata": {"airflow.owner": "ops"},
        },
    ]
    assert lossiness(document, "tasks") == []


@pytest.mark.parametrize(
    ("task", "native_type"),
    [
        pytest.param(
            {"class_ref": {"class_name": "PythonOperator"}, "operator_name": "@task"},
            "PythonOperator",
            id="class-ref-first",
        ),
        pytest.param(
            {"class_ref": {"class_name": ""}, "operator_name": "BashOperator"},
            "BashOperator",
            id="empty-class-name",
        ),
        pytest.param(
            {"class_ref": None, "operator_name": "EmptyOperator"}, "EmptyOperator", id="operator-name"
        ),
        pytest.param({"class_ref": "weird"}, "task", id="literal-task"),
        pytest.param({}, "task", id="nothing"),
    ],
)
def test_operator_class_fallback(task: dict[str, Any], native_type: str) -> None:
    document = document_for([DAG_A], {"a": [{"task_id": "t", **task}]})
    assert dataset(document, "a")["fields"][0]["nativeType"] == native_type


@pytest.mark.parametrize(
    ("retries", "expected"),
    [
        pytest.param(0.0, "0", id="airflow-3-float"),
        pytest.param(3, "3", id="int"),
        pytest.param(2.0**53 - 1, str(2**53 - 1), id="largest-exact-float"),
        pytest.param(2.0**53, None, id="float-too-large-to-be-exact"),
        pytest.param(10**30, str(10**30), id="big-int"),
        pytest.param(2.5, None, id="fraction"),
        pytest.param(-1, None, id="negative-int"),
        pytest.param(-1.0, None, id="negative-float"),
        pytest.param(True, None, id="bool"),
        pytest.param("3", None, id="string"),
        pytest.param(None, None, id="null"),
    ],
)
def test_retries_are_kept_as_whole_numbers_only(retries: Any, expected: str | None) -> None:
    document = document_for([DAG_A], {"a": [{"task_id": "t", "retries": retries}]})
    assert dataset(document, "a")["fields"][0]["metadata"].get("airflow.retries") == expected


@pytest.mark.parametrize(
    ("task", "name", "native_type", "owner"),
    [
        pytest.param({"task_id": "t", "owner": "  ops "}, "t", "task", "ops", id="owner-stripped"),
        pytest.param({"task_id": "t", "owner": "   "}, "t", "task", None, id="blank-owner"),
        pytest.param({"task_id": "t", "owner": ["ops"]}, "t", "task", None, id="owner-not-text"),
        pytest.param({"task_id": "t", "operator_name": 7}, "t", "task", None, id="operator-not-text"),
        pytest.param(
            {"task_id": "café", "operator_name": "Opé", "owner": "Zoë"}, "café", "Opé", "Zoë", id="non-ascii"
        ),
        pytest.param(
            {"task_id": "t\ud800", "class_ref": {"class_name": "C\udfff"}, "owner": "o\ud800"},
            "t?",
            "C?",
            "o?",
            id="lone-surrogates",
        ),
    ],
)
def test_task_values_are_read_as_text_safe_to_encode(
    task: dict[str, Any], name: str, native_type: str, owner: str | None
) -> None:
    [field] = dataset(document_for([DAG_A], {"a": [task]}), "a")["fields"]
    assert (field["name"], field["nativeType"], field["metadata"].get("airflow.owner")) == (
        name,
        native_type,
        owner,
    )


@pytest.mark.parametrize("task_id", [7, "", None, ["t"]], ids=["number", "empty", "null", "list"])
def test_a_task_id_that_is_not_text_skips_the_task(task_id: Any) -> None:
    document = document_for([DAG_A], {"a": [{"task_id": task_id}, {"task_id": "ok"}]})
    assert [f["name"] for f in dataset(document, "a")["fields"]] == ["ok"]
    assert lossiness(document, "tasks") == ["task entry 0 of DAG 'a' has no task_id; skipped"]


def test_duplicate_task_ids_are_added_once() -> None:
    tasks = [
        {"dag_id": "a", "tasks": [{"task_id": "t", "operator_name": "X"}]},
        {"dag_id": "a", "tasks": [{"task_id": "t", "operator_name": "Y"}, {"task_id": "u"}]},
    ]
    fields = dataset(document_for([DAG_A], tasks), "a")["fields"]
    assert [(f["name"], f["nativeType"]) for f in fields] == [("t", "X"), ("u", "task")]


def test_tasks_of_undescribed_dag_are_skipped_with_lossiness() -> None:
    document = document_for([DAG_A], {"a": [], "ghost": [{"task_id": "t"}]})
    assert document["state"]["facts"]["tasks"] == 0
    assert lossiness(document, "tasks") == [
        "tasks artifact lists DAG 'ghost', which is not in the dags artifact; its tasks were skipped"
    ]


def test_task_without_id_is_skipped_with_lossiness() -> None:
    document = document_for([DAG_A], {"a": [{"task_id": "ok"}, {"operator_name": "X"}, 5]})
    assert [f["name"] for f in dataset(document, "a")["fields"]] == ["ok"]
    assert lossiness(document, "tasks") == [
        "task entry 1 of DAG 'a' has no task_id; skipped",
        "task entry 2 of DAG 'a' has no task_id; skipped",
    ]


def test_dag_missing_from_tasks_artifact_has_unknown_fields() -> None:
    document = document_for([DAG_A, DAG_B], {"a": []})
    assert document["lossiness"] == [
        {"artifact": "dags", "message": IMPORT_ERRORS_UNKNOWN},
        {
            "artifact": "tasks",
            "message": "tasks artifact has no entry for DAG 'b': its fields are unknown",
            "subject": "b",
        },
        {"artifact": "datasets", "message": "datasets artifact not provided: no asset lineage"},
    ]


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        pytest.param(
            b"{oops", "tasks artifact ignored: not valid JSON (Expecting property name", id="invalid-json"
        ),
        pytest.param(b"42", "tasks artifact ignored: unrecognized shape", id="scalar"),
        pytest.param(
            b"[" * 50_000, "tasks artifact ignored: not valid JSON (nested too deeply)", id="nesting-bomb"
        ),
        pytest.param(None, "tasks artifact not provided: DAGs carry no fields", id="absent"),
    ],
)
def test_unusable_tasks_artifact_is_lossiness_not_failure(tasks: bytes | None, message: str) -> None:
    estate = parse_artifacts(json.dumps([DAG_A]).encode(), tasks, b"[]")
    [record] = [r for r in estate.lossiness if r.artifact == "tasks"]
    assert (record.artifact, record.subject) == ("tasks", None)
    assert record.message.startswith(message)
    assert estate.fields_unknown() is None


def test_tasks_entry_of_wrong_type_is_lossiness_for_that_dag() -> None:
    document = document_for([DAG_A, DAG_B], {"a": "nope", "b": []})
    assert lossiness(document, "tasks") == [
        "tasks artifact entry for DAG 'a' ignored: expected {\"tasks\": [...]} or a list, got a string"
    ]


@pytest.mark.parametrize(
    "tasks",
    [
        pytest.param(
            {"a": {"tasks": [{"task_id": "x", "class_ref": {"class_name": "B", "module_path": "m"}}]}},
            id="object",
        ),
        pytest.param([{"dag_id": "a", "tasks": [{"task_id": "x", "operator_name": "O"}]}], id="list"),
        pytest.param({"a": {"tasks": [{"task_id": "x", "class_ref": None}]}}, id="class-ref-null"),
        pytest.param(
            {"a": {"tasks": [{"task_id": "x", "class_ref": "weird"}]}}, id="class-ref-not-an-object"
        ),
        pytest.param(
            {"a": {"tasks": [{"operator_name": "X"}, {"task_id": "t"}]}, "b": 7}, id="entry-a-number"
        ),
        pytest.param(
            {"a": {"tasks": [{"task_id": "t"}, 5, "s"]}, "b": {"tasks": "no"}}, id="tasks-not-objects"
        ),
        pytest.param(
            [{"dag_id": "a", "tasks": [{"task_id": "t"}]}, 3, {"tasks": []}], id="list-items-untyped"
        ),
        pytest.param({"a": {"tasks": [{"task_id": "t", "owner": "o", "retries": 2.0}]}, "b": []}, id="mixed"),
    ],
)
def test_the_typed_decode_of_the_tasks_artifact_gives_the_estate_the_full_decode_gives(
    tasks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dags, data = json.dumps([DAG_A, DAG_B]).encode(), json.dumps(tasks).encode()
    estate = parse_artifacts(dags, data, b"[]")
    with _full_decode(monkeypatch):
        assert parse_artifacts(dags, data, b"[]") == estate


@pytest.mark.parametrize(
    "tasks",
    [{"a": {"tasks": [{"task_id": "t"}]}, "b": []}, [{"dag_id": "a", "tasks": [{"task_id": "t"}]}]],
    ids=["object", "list"],
)
def test_the_parse_takes_apart_only_a_tasks_artifact_it_decoded_itself(tasks: Any) -> None:
    held = json.loads(json.dumps(tasks))
    estate = parse_module.build_estate([DAG_A, DAG_B], held, [])
    assert held == tasks  # a caller's values (a capture's answers) are read, never taken apart
    assert parse_artifacts(json.dumps([DAG_A, DAG_B]).encode(), json.dumps(tasks).encode(), b"[]") == estate
    owned = parse_module._decode_tasks(json.dumps(tasks).encode())
    assert parse_module.build_estate([DAG_A, DAG_B], owned, []) == estate
    assert not any(owned.value), owned.value  # each DAG's tasks were let go once read


def test_the_tasks_artifact_is_decoded_into_small_structs() -> None:
    task = {"task_id": "x", "class_ref": {"class_name": "B", "module_path": "m"}, "ui_color": "#fff"}
    data = json.dumps({"a": {"tasks": [task]}}).encode()
    [decoded] = parse_module._decode_tasks(data).value["a"]["tasks"]
    assert decoded == parse_module._Task(task_id="x", class_ref=parse_module._ClassRef(class_name="B"))


def test_an_entry_no_decoder_takes_leaves_the_whole_artifact_ignored_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # valid JSON that Python refuses (an int of 5,000 digits): neither the entry nor the whole decodes
    data = b'{"a": {"tasks": [{"task_id": "t"}]}, "b": {"tasks": [{"task_id": "t", "retries": ' + b"9" * 5000
    data += b"}]}}"
    dags = json.dumps([DAG_A, DAG_B]).encode()
    estate = parse_artifacts(dags, data, b"[]")
    [record] = [r for r in estate.lossiness if r.artifact == "tasks"]
    assert record.message.startswith("tasks artifact ignored: not valid JSON (Exceeds the limit")
    assert record.subject is None and estate.fields_unknown() is None
    with _full_decode(monkeypatch):
        assert parse_artifacts(dags, data, b"[]") == estate


@contextlib.contextmanager
def _full_decode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The parse with the tasks artifact decoded in full by the standard library, as dicts."""
    with monkeypatch.context() as patch:
        patch.setattr(parse_module, "_decode_tasks", parse_module.decode)
        yield


# -- the datasets artifact ----------------------------------------------------------------


def asset(uri: str, **refs: list[str]) -> dict[str, Any]:
    return {"uri": uri, **{key: [{"dag_id": d, "task_id": "t"} for d in dags] for key, dags in refs.items()}}


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(lambda items: {"assets": items, "total_entries": len(items)}, id="airflow3-assets"),
        pytest.param(lambda items: {"datasets": items, "total_entries": len(items)}, id="airflow2-datasets"),
        pytest.param(lambda items: items, id="bare-array"),
    ],
)
def test_datasets_artifact_shapes(wrap: Any) -> None:
    items = [
        {**asset("s3://lake/orders.parquet", producing_tasks=["a"], consuming_dags=["b"]), "watchers": []}
    ]
    document = document_for([DAG_A, DAG_B], {"a": [], "b": []}, wrap(items))
    assert dataset(document, "s3://lake/orders.parquet") == {
        "identity": "s3://lake/orders.parquet",
        "name": "orders.parquet",
        "materialization": "asset",
        "physicalName": "s3://lake/orders.parquet",
        "description": None,
        "tags": [],
        "mapsTo": {"standard": "airflow", "uri": "s3://lake/orders.parquet"},
        "metadata": {},
        "fields": [],
    }
    assert document["lineage"] == [
        {
            "dependent": "b",
            "dependentKind": "dag",
            "dependsOn": "s3://lake/orders.parquet",
            "dependsOnKind": "asset",
            "external": False,
        },
        {
            "dependent": "s3://lake/orders.parquet",
            "dependentKind": "asset",
            "dependsOn": "a",
            "dependsOnKind": "dag",
            "external": False,
        },
    ]


@pytest.mark.parametrize(
    ("key", "via"), [("consuming_dags", {}), ("scheduled_dags", {}), ("consuming_tasks", {"via": "inlet"})]
)
def test_every_consumer_key_makes_the_dag_depend_on_the_asset(key: str, via: dict[str, str]) -> None:
    """A schedule is a plain consuming edge; a task inlet that does not schedule the DAG says so."""
    document = document_for([DAG_A], {"a": []}, {"assets": [asset("s3://x/y", **{key: ["a"]})]})
    assert document["lineage"] == [
        {
            "dependent": "a",
            "dependentKind": "dag",
            "dependsOn": "s3://x/y",
            "dependsOnKind": "asset",
            "external": False,
        }
        | via
    ]


def test_duplicate_declarations_are_deduplicated() -> None:
    items = [
        asset("s3://x/y", producing_tasks=["a", "a"], scheduled_dags=["b"], consuming_tasks=["b", "b"]),
        asset("s3://x/y", producing_tasks=["a"]),
    ]
    document = document_for([DAG_A, DAG_B], {"a": [], "b": []}, items)
    assert [(e["dependent"], e["dependsOn"]) for e in document["lineage"]] == [
        ("b", "s3://x/y"),
        ("s3://x/y", "a"),
    ]
    assert document["state"]["facts"]["assets"] == 1


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [asset("s3://x/y", producing_tasks=["elsewhere"], consuming_dags=["a"])],
            [("a", "s3://x/y", False), ("s3://x/y", "elsewhere", True)],
            id="external-producer",
        ),
        pytest.param(
            [asset("s3://x/y", producing_tasks=["a"], consuming_dags=["elsewhere"])],
            [("elsewhere", "s3://x/y", True), ("s3://x/y", "a", False)],
            id="external-consumer",
        ),
    ],
)
def test_edges_to_undescribed_dags_are_kept_as_external(items: Any, expected: list[Any]) -> None:
    document = document_for([DAG_A], {"a": []}, items)
    assert [(e["dependent"], e["dependsOn"], e["external"]) for e in document["lineage"]] == expected
    assert document["lineageEdgesSkipped"] == 1
    assert document["state"]["counts"]["lineageEdgesSkipped"] == 1
    assert document["state"]["counts"]["lineageEdges"] == 2


@pytest.mark.parametrize(
    ("datasets", "message"),
    [
        pytest.param(b"{broken", "datasets artifact ignored: not valid JSON (", id="invalid-json"),
        pytest.param(
            b'{"items": []}',
            'datasets artifact ignored: unrecognized shape: expected {"assets": [...]}, {"datasets": [...]} '
            'or a JSON array, got an object with keys ["items"]',
            id="unknown-wrapper",
        ),
        pytest.param(b"null", "datasets artifact ignored: unrecognized shape", id="null"),
    ],
)
def test_unusable_datasets_artifact_is_lossiness_not_failure(datasets: bytes, message: str) -> None:
    estate = parse_artifacts(json.dumps([DAG_A]).encode(), b"{}", datasets)
    assert next(r.message for r in estate.lossiness if r.artifact == "datasets").startswith(message)
    assert estate.lineage == ()


def test_bad_asset_entries_are_lossiness() -> None:
    items = [
        {"name": "no uri"},
        {"uri": "s3://x/y", "producing_tasks": "a", "consuming_dags": [{"task_id": "t"}]},
    ]
    document = document_for([DAG_A], {"a": []}, items)
    assert lossiness(document, "datasets") == [
        "datasets artifact entry 0 has no uri; skipped",
        "task inlets unknown: this Airflow's API lists no consuming_tasks (they appear in Airflow 3.1), so "
        "a DAG that reads an asset only through a task inlet is not among its consumers",
        "an entry of consuming_dags of asset 's3://x/y' has no dag_id; ignored",
        "producing_tasks of asset 's3://x/y' is a string, not a list; ignored",
    ]


def test_asset_extra_is_not_carried() -> None:
    """Asset ``extra`` may hold secrets: it never reaches the snapshot."""
    items = [{"uri": "s3://x/y", "extra": {"password": "hunter2"}}]
    assert "hunter2" not in json.dumps(document_for([DAG_A], {"a": []}, items))


@pytest.mark.parametrize(
    ("uri", "name"),
    [
        ("s3://lake/orders.parquet", "orders.parquet"),
        ("s3://lake/raw/events/", "events"),
        ("s3://lake", "s3://lake"),
        ("s3://lake/", "s3://lake/"),
        ("postgres://db:5432/schema/table?sslmode=require", "table"),
        ("file:///tmp/data.csv", "data.csv"),
        ("orders", "orders"),
        ("http://[::1/broken", "broken"),
    ],
)
def test_asset_name_is_last_path_segment(uri: str, name: str) -> None:
    assert asset_name(uri) == name


# -- state and facts ----------------------------------------------------------------------


def test_facts_and_counts() -> None:
    dags = [DAG_A, {**DAG_B, "is_paused": True}]
    tasks = {"a": [{"task_id": "t1"}, {"task_id": "t2"}], "b": [{"task_id": "t3"}]}
    items = [asset("s3://x/y", producing_tasks=["a"], consuming_dags=["b", "outside"])]
    state = document_for(dags, tasks, items)["state"]
    assert state["facts"] == {"dags": 2, "pausedDags": 1, "assets": 1, "tasks": 3}
    assert state["counts"] == {"datasets": 3, "fields": 3, "lineageEdges": 3, "lineageEdgesSkipped": 1}


@pytest.mark.parametrize(
    ("dags", "datasets", "api"),
    [
        pytest.param([{"dag_id": "a", "is_stale": False}], None, "v2", id="airflow3-dag"),
        pytest.param([{"dag_id": "a", "is_active": True}], None, "v1", id="airflow2-dag"),
        pytest.param([{"dag_id": "a"}], {"assets": []}, "v2", id="assets-wrapper"),
        pytest.param([{"dag_id": "a"}], {"datasets": []}, "v1", id="datasets-wrapper"),
        pytest.param([{"dag_id": "a"}], [], None, id="unknown"),
    ],
)
def test_offline_state_fills_what_the_artifacts_tell(dags: Any, datasets: Any, api: str | None) -> None:
    state = document_for(dags, None, datasets)["state"]
    assert state["apiVersion"] == api
    assert (state["airflowVersion"], state["capturedAt"]) == (None, None)
    assert state["connectorVersion"] == __version__
