"""The fingerprint: blind to order, page overlap and volatile fields; moved by every governed change;
and exactly the first 16 hex digits of SHA-256 over the canonical JSON of datasets and lineage.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import EXAMPLE_ESTATE, FIXTURES

from airflow_provider_coremodels.core import State, audit, build_document, parse_artifacts

EXAMPLES = int(os.environ.get("COREMODELS_FUZZ_EXAMPLES", "200"))
Artifacts = dict[str, Any]  # decoded "dags", "tasks" and "datasets"

SOURCES = {
    "airflow3": (
        EXAMPLE_ESTATE / "dags.json",
        EXAMPLE_ESTATE / "tasks.json",
        EXAMPLE_ESTATE / "datasets.json",
    ),
    "airflow2": ("airflow2/dags.json", "airflow2/tasks.json", "airflow2/datasets.json"),
    "airflow2-list": ("airflow2/dags.json", "airflow2/tasks_list_shape.json", "airflow2/datasets.json"),
}
_DECODED = {
    version: {
        name: json.loads((FIXTURES / path).read_bytes())
        for name, path in zip(("dags", "tasks", "datasets"), paths, strict=True)
    }
    for version, paths in SOURCES.items()
}
VERSIONS = ["airflow3", "airflow2"]


def real(version: str) -> Artifacts:
    """A fresh decoded copy of the recorded artifacts of one version."""
    return copy.deepcopy(_DECODED[version])


def document(artifacts: Artifacts, **kwargs: Any) -> dict[str, Any]:
    """Encode the artifacts to bytes, parse, audit and build the snapshot document."""
    blobs = {name: json.dumps(value).encode("utf-8") for name, value in artifacts.items()}
    estate = parse_artifacts(blobs["dags"], blobs["tasks"], blobs["datasets"], **kwargs)
    return build_document(estate, audit(estate))


def fingerprint(artifacts: Artifacts) -> str:
    return str(document(artifacts)["fingerprint"])


ORIGINAL = {version: fingerprint(real(version)) for version in SOURCES}


# -- helpers to reach into the decoded artifacts ------------------------------------------


def dags_of(a: Artifacts) -> list[dict[str, Any]]:
    return a["dags"]["dags"]


def dag(a: Artifacts, dag_id: str) -> dict[str, Any]:
    return next(d for d in dags_of(a) if d["dag_id"] == dag_id)


def assets_of(a: Artifacts) -> list[dict[str, Any]]:
    return a["datasets"].get("assets") or a["datasets"]["datasets"]


def asset(a: Artifacts, uri: str) -> dict[str, Any]:
    return next(x for x in assets_of(a) if x["uri"] == uri)


def tasks_of(a: Artifacts, dag_id: str) -> list[dict[str, Any]]:
    tasks = a["tasks"]
    if isinstance(tasks, list):
        return next(item["tasks"] for item in tasks if item["dag_id"] == dag_id)
    return tasks[dag_id]["tasks"]


def set_everywhere(value: Any, wanted: Callable[[str], bool], new: Any) -> int:
    """Set every key matching ``wanted`` at any depth to ``new``; returns how many were set."""
    count = 0
    if isinstance(value, dict):
        for key in value:
            if wanted(key):
                value[key] = copy.deepcopy(new)
                count += 1
            else:
                count += set_everywhere(value[key], wanted, new)
    elif isinstance(value, list):
        count += sum(set_everywhere(item, wanted, new) for item in value)
    return count


def shuffle_all(value: Any, rng: random.Random) -> Any:
    """Permute the keys of every object and the items of every array, at every depth.

    That covers the order of DAGs, of tasks within a DAG, of the tasks artifact's dag_id keys,
    of assets, of producing_tasks/scheduled_dags/consuming_* lists, of tags and of owners.
    """
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: shuffle_all(value[key], rng) for key in keys}
    if isinstance(value, list):
        items = [shuffle_all(item, rng) for item in value]
        rng.shuffle(items)
        return items
    return value


def reverse_all(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: reverse_all(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reverse_all(item) for item in reversed(value)]
    return value


# -- (a) order does not matter -------------------------------------------------------------


@settings(max_examples=EXAMPLES, deadline=None)
@given(version=st.sampled_from(sorted(SOURCES)), rng=st.randoms(use_true_random=True))
def test_shuffled_order_keeps_the_fingerprint(version: str, rng: random.Random) -> None:
    """Any permutation of keys, DAGs, tasks, dag_id keys, assets and reference lists keeps the fingerprint."""
    shuffled = {name: shuffle_all(value, rng) for name, value in real(version).items()}
    assert fingerprint(shuffled) == ORIGINAL[version]


@pytest.mark.parametrize("version", sorted(SOURCES))
def test_reversed_order_keeps_the_fingerprint(version: str) -> None:
    """Reversing every object's keys and every array (a fixed permutation) keeps the fingerprint."""
    reversed_ = {name: reverse_all(value) for name, value in real(version).items()}
    assert dags_of(reversed_)[0]["dag_id"] != dags_of(real(version))[0]["dag_id"]  # really reordered
    assert fingerprint(reversed_) == ORIGINAL[version]


def test_both_tasks_shapes_give_the_same_fingerprint() -> None:
    """The tasks artifact as {dag_id: response} or as [{"dag_id", "tasks"}] hashes the same."""
    assert ORIGINAL["airflow2"] == ORIGINAL["airflow2-list"]


# -- (b) volatile fields, capture state and page overlap do not matter ----------------------

VOLATILE: dict[str, tuple[str, Callable[[str], bool], Any]] = {
    "last_parsed_time": ("dags", lambda k: k == "last_parsed_time", "2031-01-02T03:04:05Z"),
    "next_dagrun": ("dags", lambda k: k.startswith("next_dagrun"), "2031-01-02T03:04:05Z"),
    "file_token": ("dags", lambda k: k == "file_token", "a-completely-different-token"),
    "created_at": ("datasets", lambda k: k == "created_at", "2031-01-02T03:04:05Z"),
    "updated_at": ("datasets", lambda k: k == "updated_at", "2031-01-02T03:04:05Z"),
    "asset-id": ("datasets", lambda k: k == "id", 987654),
}


def renumber_assets(artifacts: dict[str, Any], offset: int) -> int:
    """Every asset's id moved by ``offset``, in the asset list and in the dependency graph that
    names assets by id alike (another metadata database holds the same estate under other ids)."""
    assets = assets_of(artifacts)
    for raw in assets:
        raw["id"] += offset
    graph = artifacts["datasets"].get("dependencies", {"edges": []})
    for edge in graph["edges"]:
        for end in ("source_id", "target_id"):
            kind, _, number = edge[end].partition(":")
            if kind == "asset":
                edge[end] = f"asset:{int(number) + offset}"
    return len(assets)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("field", list(VOLATILE))
def test_volatile_fields_do_not_change_the_fingerprint(field: str, version: str) -> None:
    """A new parse time, next run, token, timestamp or asset id keeps the fingerprint."""
    artifact, wanted, new = VOLATILE[field]
    a = real(version)
    if field == "asset-id" and "dependencies" in a["datasets"]:  # ids are consistent within a capture
        assert renumber_assets(a, 987654) > 0
    else:
        assert set_everywhere(a[artifact], wanted, new) > 0, f"{field} not in the {version} {artifact}"
    assert fingerprint(a) == ORIGINAL[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_duplicated_dag_page_keeps_the_fingerprint(version: str) -> None:
    """The same DAGs listed twice (overlapping pages) hash as if listed once."""
    a = real(version)
    a["dags"]["dags"] = dags_of(a) + copy.deepcopy(dags_of(a))
    assert fingerprint(a) == ORIGINAL[version]


@pytest.mark.parametrize("version", VERSIONS)
def test_duplicated_asset_page_keeps_the_fingerprint(version: str) -> None:
    """The same assets listed twice hash as if listed once."""
    a = real(version)
    assets = assets_of(a)
    assets.extend(copy.deepcopy(assets))
    assert fingerprint(a) == ORIGINAL[version]


def test_capture_state_does_not_change_the_fingerprint() -> None:
    """Versions and capture time live in state, outside the fingerprint."""
    state = State(
        connector_version="9.9.9",
        airflow_version="3.3.2",
        api_version="v2",
        captured_at="2031-01-01T00:00:00Z",
    )
    doc = document(real("airflow3"), state=state)
    assert doc["state"]["capturedAt"] == "2031-01-01T00:00:00Z"
    assert doc["fingerprint"] == ORIGINAL["airflow3"]


# -- (c) every governed change moves the fingerprint ----------------------------------------


def _description(a: Artifacts) -> None:
    dag(a, "load_orders")["description"] = "Loads orders, now hourly"


def _paused(a: Artifacts) -> None:
    dag(a, "load_orders")["is_paused"] = not dag(a, "load_orders")["is_paused"]


def _owners(a: Artifacts) -> None:
    dag(a, "load_orders")["owners"].append("platform")


def _schedule(a: Artifacts) -> None:
    d = dag(a, "load_orders")
    if "timetable_summary" in d:
        d["timetable_summary"] = "0 6 * * *"
    else:
        d["schedule_interval"] = {"__type": "CronExpression", "value": "0 6 * * *"}


def _tag(a: Artifacts) -> None:
    dag(a, "load_orders")["tags"].append({"name": "gold"})


def _fileloc(a: Artifacts) -> None:
    dag(a, "load_orders")["fileloc"] = "/opt/airflow/dags/moved/orders.py"


def _task_added(a: Artifacts) -> None:
    tasks = tasks_of(a, "load_orders")
    tasks.append({**copy.deepcopy(tasks[0]), "task_id": "validate"})


def _task_removed(a: Artifacts) -> None:
    tasks_of(a, "load_orders").pop()


def _operator_class(a: Artifacts) -> None:
    tasks_of(a, "load_orders")[0]["class_ref"]["class_name"] = "KubernetesPodOperator"


def _asset_uri(a: Artifacts) -> None:
    x = asset(a, "s3://lake/orders.parquet")
    x["uri"] = "s3://lake/orders_v2.parquet"
    x.pop("name", None)


def _declared(a: Artifacts, source: str, target: str) -> None:
    """The dependency graph (Airflow 3) gains the edge: the DAG's code declares the new reference."""
    graph = a["datasets"].get("dependencies")
    if graph is not None:
        graph["edges"].append({"source_id": source, "target_id": target})


def _producer_added(a: Artifacts) -> None:
    x = asset(a, "s3://vendor/fx_rates.csv")
    x["producing_tasks"].append({"dag_id": "sync_crm", "task_id": "sync_account"})
    _declared(a, "dag:sync_crm", f"asset:{x.get('id')}")


def _consumer_added(a: Artifacts) -> None:
    x = asset(a, "s3://lake/revenue.parquet")
    key = "scheduled_dags" if "scheduled_dags" in x else "consuming_dags"
    x[key].append({"dag_id": "legacy_cleanup"})
    _declared(a, f"asset:{x.get('id')}", "dag:legacy_cleanup")


def _dag_removed(a: Artifacts) -> None:
    a["dags"]["dags"] = [d for d in dags_of(a) if d["dag_id"] != "legacy_cleanup"]


GOVERNED: dict[str, Callable[[Artifacts], None]] = {
    "dag-description": _description,
    "dag-is_paused": _paused,
    "dag-owners": _owners,
    "dag-schedule": _schedule,
    "dag-tag": _tag,
    "dag-fileloc": _fileloc,
    "task-added": _task_added,
    "task-removed": _task_removed,
    "task-operator-class": _operator_class,
    "asset-uri": _asset_uri,
    "producer-added": _producer_added,
    "consumer-added": _consumer_added,
    "dag-removed": _dag_removed,
}


@pytest.mark.parametrize("version", [*VERSIONS, "airflow2-list"])
@pytest.mark.parametrize("change", list(GOVERNED))
def test_governed_change_moves_the_fingerprint(change: str, version: str) -> None:
    """Each governed change (DAG, task, asset or lineage) gives a different fingerprint."""
    a = real(version)
    GOVERNED[change](a)
    assert fingerprint(a) != ORIGINAL[version]


def test_governed_changes_are_all_distinct() -> None:
    """No two governed changes collide on one fingerprint."""
    prints = {}
    for change, apply in GOVERNED.items():
        a = real("airflow3")
        apply(a)
        prints[change] = fingerprint(a)
    assert len(set(prints.values())) == len(prints), prints


# -- (d) the exact definition ---------------------------------------------------------------


def independent_fingerprint(doc: dict[str, Any]) -> tuple[str, bytes]:
    canonical = json.dumps(
        {"datasets": doc["datasets"], "lineage": doc["lineage"]},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    return hashlib.sha256(canonical).hexdigest()[:16], canonical


@pytest.mark.parametrize("version", sorted(SOURCES))
def test_fingerprint_is_sha256_of_the_canonical_json(version: str) -> None:
    """The fingerprint is the first 16 hex digits of SHA-256 over the canonical governed JSON."""
    doc = document(real(version))
    expected, _ = independent_fingerprint(doc)
    assert doc["fingerprint"] == expected
    assert len(doc["fingerprint"]) == 16 and doc["fingerprint"] == doc["fingerprint"].lower()


def test_non_ascii_is_kept_as_utf8_in_the_canonical_form() -> None:
    """A non-ASCII description is hashed as UTF-8 bytes, not as \\u escapes."""
    description = "Données — été"
    a = real("airflow3")
    dag(a, "load_orders")["description"] = description
    doc = document(a)
    (load_orders,) = [d for d in doc["datasets"] if d["identity"] == "load_orders"]
    assert load_orders["description"] == description

    expected, canonical = independent_fingerprint(doc)
    assert doc["fingerprint"] == expected
    assert description.encode("utf-8") in canonical
    assert b"\\u00e9" not in canonical and b"\\u2014" not in canonical

    escaped = json.dumps(
        {"datasets": doc["datasets"], "lineage": doc["lineage"]}, sort_keys=True, separators=(",", ":")
    ).encode("ascii")
    assert doc["fingerprint"] != hashlib.sha256(escaped).hexdigest()[:16]
