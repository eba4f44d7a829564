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
from airflow_provider_coremodels.jobs.export import open_object_storage
from airflow_provider_coremodels.ui.source import Problem, Snapshot, read_store, read_trend


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


def test_the_chart_reads_the_history_in_the_store(store) -> None:
    uri, sink, root = opened(store)
    docs = [document(f"2026-11-{day}T06:00:00Z") for day in (25, 26, 27)]
    docs[1]["findings"] = docs[1]["findings"][:1]  # the same estate, fewer findings: stored again
    for doc in docs:
        sink.push(doc)
    store[0].put(f"{uri.split(BUCKET + '/')[1]}/history/20261128T060000Z-{'0' * 16}.json", b"[damaged")
    found = read_store(root)
    assert isinstance(found, Snapshot)
    trend = read_trend(found)
    assert trend is not None and trend.total == 4, trend
    assert [p.captured_at for p in trend.points] == [
        "2026-11-25T06:00:00Z", "2026-11-26T06:00:00Z", "2026-11-27T06:00:00Z", "2026-11-28T06:00:00Z",
    ]  # fmt: skip
    assert [sum(n for _, n in p.open) for p in trend.points[:3]] == [len(d["findings"]) for d in docs]
    assert [p.findings_only for p in trend.points[:3]] == [False, True, True]
    assert trend.points[-1].problem is not None and trend.points[-1].problem.startswith("is not a snapshot")
    assert [p.latest for p in trend.points] == [False, False, True, False]
    assert read_trend(found) is trend  # the listing is unchanged: nothing is read again
    # an export in another process adds an entry: the next view lists it (no stale cached listing)
    store[0].put(f"{uri.split(BUCKET + '/')[1]}/history/20261129T060000Z-{'1' * 16}.json", b"{}")
    assert read_trend(read_store(root)).total == 5


def test_a_store_that_refuses_the_listing_is_said_on_the_chart(
    store, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri, sink, root = opened(store)
    sink.push(document("2026-11-29T06:00:00Z"))
    found = read_store(root)
    assert isinstance(found, Snapshot)
    monkeypatch.setattr(moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # every request now refused
    trend = read_trend(found)
    monkeypatch.undo()
    assert trend is not None and trend.points == ()
    assert trend.problem is not None and trend.problem.startswith(f"{uri}/history/ cannot be listed: ")
    for secret in SECRETS:
        assert secret not in trend.problem
    again = read_trend(found)  # the store answers again: nothing of the refusal was kept
    assert again is not None and again.problem is None and again.points[0].problem is None
