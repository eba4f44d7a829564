"""The page's snapshot read from object storage: a real local S3 server (moto), the real sink.

The store is opened as the page opens it (``open_object_storage`` with a connection), written by
the object-storage sink, and read back by ``read_store``: what it shows, where it says it read
from, and each way a store fails (refused, too large, empty) as a Problem naming the store.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from moto import settings as moto_settings
from support.helpers import recorded_estate
from support.s3_server import BUCKET, SECRETS, S3Store, new_conn_id, running_s3

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.export import open_object_storage
from airflow_provider_coremodels.ui.source import Problem, Snapshot, read_store


@pytest.fixture(scope="module")
def store() -> Iterator[tuple[S3Store, str]]:
    with running_s3() as s3, pytest.MonkeyPatch.context() as env:
        conn_id = new_conn_id()
        env.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", s3.connection())
        yield s3, conn_id


def document(captured_at: str, **kwargs: Any) -> dict[str, Any]:
    estate = recorded_estate()
    doc = build_document(estate, audit(estate), **kwargs)
    doc["state"]["capturedAt"] = captured_at
    return doc


def opened(store: tuple[S3Store, str]) -> tuple[str, Any, Any]:
    """A fresh prefix: its URI, the sink writing there, and the path the page reads."""
    uri = f"s3://{BUCKET}/pages/{secrets.token_hex(6)}"
    sink = open_object_storage(uri, store[1])
    return uri, sink, sink.root


def test_it_shows_latest_json_and_names_the_store_without_the_connection(store) -> None:
    uri, sink, root = opened(store)
    doc = document("2026-11-29T06:00:00Z")
    sink.push(doc)
    found = read_store(root)
    assert isinstance(found, Snapshot), found
    assert found.document["fingerprint"] == doc["fingerprint"] and found.note is None
    assert found.shown == f"{uri}/latest.json"
    assert store[1] not in found.shown
    assert found.raw == store[0].get(f"{uri.split(BUCKET + '/')[1]}/latest.json")


def test_an_empty_prefix_is_no_snapshot_yet(store) -> None:
    uri, _, root = opened(store)
    found = read_store(root)
    assert isinstance(found, Problem) and (found.status, found.title) == (200, "No snapshot yet")
    assert found.detail.startswith(f"{uri} has no latest.json")
    assert f"--sink {uri}" in found.fix


def test_a_newer_snapshot_over_the_cap_in_history_is_the_one_shown(store) -> None:
    uri, sink, root = opened(store)
    sink.push(document("2026-11-28T06:00:00Z"))
    over = document("2026-11-29T06:00:00Z", max_snapshot_bytes=100)
    over["datasets"] = over["datasets"][:-1]
    over["fingerprint"] = "0123456789abcdef"
    assert sink.push(over).baseline_replaced is False
    found = read_store(root)
    assert isinstance(found, Snapshot) and found.document["snapshotStored"] is False
    assert found.shown.startswith(f"{uri}/history/")
    assert found.note is not None and "did not replace latest.json" in found.note


def test_a_document_over_the_bound_is_refused(store, monkeypatch: pytest.MonkeyPatch) -> None:
    uri, sink, root = opened(store)
    sink.push(document("2026-11-29T06:00:00Z"))
    monkeypatch.setattr(defaults, "MAX_DOCUMENT_BYTES", 1000)
    found = read_store(root)
    assert isinstance(found, Problem) and found.status == 500
    assert found.detail.startswith(f"{uri}/latest.json is ") and "over the 1,000-byte limit" in found.detail


def test_a_store_that_refuses_is_a_502_naming_it_without_its_keys(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never "no snapshot yet" for a request that was denied: the store's refusal is named."""
    uri, sink, root = opened(store)
    sink.push(document("2026-11-29T06:00:00Z"))
    monkeypatch.setattr(moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # IAM knows no such key: 403
    found = read_store(root)
    monkeypatch.undo()
    assert isinstance(found, Problem) and found.status == 502, found
    assert found.title == "The snapshot store cannot be read"
    assert found.detail.startswith(f"{uri}: ")
    assert "ui_snapshot_conn_id" in found.fix
    for secret in SECRETS:
        assert secret not in found.detail + found.fix
