"""The object-storage sink against a real S3-compatible server on 127.0.0.1: nothing is mocked.

A moto server runs in a thread for this module. The sink reaches it the way a deployment
would: Airflow's ``ObjectStoragePath`` resolves an ``aws`` connection (given as an
``AIRFLOW_CONN_<ID>`` variable whose extra points ``endpoint_url`` at the server) through the
amazon provider's s3 filesystem (s3fs). What the sink stored is read back with boto3,
straight from the server.
"""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto import settings as moto_settings
from support.helpers import document_for
from support.s3_server import BUCKET, SECRETS, S3Store, aws_connection, new_conn_id, running_s3

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.snapshots.document import encode, for_storage, stored_version
from airflow_provider_coremodels.errors import SinkError
from airflow_provider_coremodels.jobs.export import open_sink
from airflow_provider_coremodels.sinks import ObjectStorageSink
from airflow_provider_coremodels.sinks.history import Retention, StoreHistory, list_history

CAPTURED_AT = "2026-11-29T06:00:00Z"
LATER = "2026-11-30T06:00:00Z"


@dataclass(frozen=True)
class Store:
    """The local server, and a connection to it that the sinks of this module use."""

    server: S3Store
    conn_id: str

    @property
    def client(self) -> Any:
        return self.server.client

    def keys(self, prefix: str, bucket: str = BUCKET) -> list[str]:
        return self.server.keys(prefix, bucket)

    def get(self, key: str) -> bytes:
        return self.server.get(key)

    def sink(self, prefix: str) -> ObjectStorageSink:
        return ObjectStorageSink(f"s3://{BUCKET}/{prefix}", conn_id=self.conn_id)


@pytest.fixture(scope="module")
def s3() -> Iterator[Store]:
    with running_s3() as server, pytest.MonkeyPatch.context() as env:
        conn_id = new_conn_id()
        env.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", server.connection())
        yield Store(server, conn_id)


@pytest.fixture
def prefix() -> str:
    """A prefix of its own for each test, so the tests share the server but not their objects."""
    return f"estates/{secrets.token_hex(6)}"


# -- documents -----------------------------------------------------------------------------


def estate(*dag_ids: str, captured_at: str = CAPTURED_AT, **kwargs: Any) -> dict[str, Any]:
    """The document of an estate: the first DAG produces an asset the others consume."""
    dags = [
        {
            "dag_id": dag_id,
            "description": f"{dag_id} pipeline",
            "owners": ["data-eng"],
            "is_paused": False,
            "fileloc": f"/opt/airflow/dags/{dag_id}.py",
        }
        for dag_id in dag_ids
    ]
    tasks = {dag_id: [{"task_id": "run", "operator_name": "BashOperator"}] for dag_id in dag_ids}
    datasets = {
        "assets": [
            {
                "uri": "s3://lake/orders.parquet",
                "producing_tasks": [{"dag_id": dag_ids[0], "task_id": "run"}],
                "scheduled_dags": [{"dag_id": dag_id} for dag_id in dag_ids[1:]],
            }
        ]
    }
    document = document_for(dags, tasks, datasets, **kwargs)
    document["state"]["capturedAt"] = captured_at  # an offline audit has no capture time
    return document


def history_key(prefix: str, document: dict[str, Any]) -> str:
    stamp = document["state"]["capturedAt"].replace("-", "").replace(":", "")
    return f"{prefix}/history/{stamp}-{document['fingerprint']}.json"


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


# -- pushing -------------------------------------------------------------------------------


def test_first_push_writes_history_and_latest_with_the_exact_bytes(s3: Store, prefix: str) -> None:
    document = estate("load_orders", "daily_revenue")

    result = s3.sink(prefix).push(document)

    latest = f"{prefix}/latest.json"
    history = history_key(prefix, document)
    assert s3.keys(prefix) == sorted([history, latest])
    assert s3.get(history) == encode(document)
    assert s3.get(latest) == encode(document)
    assert result.sink == f"s3://{BUCKET}/{prefix}"
    assert result.unchanged is False
    assert result.baseline_replaced is True
    assert len(result.written) == 2
    assert result.written[0].endswith(history)  # history first: latest always has its twin
    assert result.written[1].endswith(latest)
    assert_no_secret(json.dumps(result.as_dict()))


def test_read_baseline_is_none_before_the_first_push_then_the_stored_latest(s3: Store, prefix: str) -> None:
    sink = s3.sink(prefix)
    assert sink.read_baseline() is None

    document = estate("load_orders", "daily_revenue")
    sink.push(document)

    assert sink.read_baseline() == s3.get(f"{prefix}/latest.json") == encode(document)


def test_same_fingerprint_again_writes_nothing(s3: Store, prefix: str) -> None:
    first = estate("load_orders", "daily_revenue")
    sink = s3.sink(prefix)
    sink.push(first)
    before = s3.keys(prefix)

    # The same estate captured a day later: same fingerprint, so not even a new history entry.
    again = estate("load_orders", "daily_revenue", captured_at=LATER)
    assert again["fingerprint"] == first["fingerprint"]
    result = sink.push(again)

    assert result.unchanged is True
    assert result.written == []
    assert result.baseline_replaced is False
    assert s3.keys(prefix) == before
    assert s3.get(f"{prefix}/latest.json") == encode(first)


def test_changed_estate_adds_history_and_replaces_latest(s3: Store, prefix: str) -> None:
    first = estate("load_orders", "daily_revenue")
    changed = estate("load_orders", "daily_revenue", "weekly_report", captured_at=LATER)
    assert changed["fingerprint"] != first["fingerprint"]
    sink = s3.sink(prefix)
    sink.push(first)

    result = sink.push(changed)

    assert result.unchanged is False
    assert result.baseline_replaced is True
    assert s3.keys(prefix) == sorted(
        [history_key(prefix, first), history_key(prefix, changed), f"{prefix}/latest.json"]
    )
    assert s3.get(history_key(prefix, first)) == encode(first)
    assert s3.get(history_key(prefix, changed)) == encode(changed)
    assert s3.get(f"{prefix}/latest.json") == encode(changed)
    assert sink.read_baseline() == encode(changed)


def test_over_the_cap_goes_to_history_without_datasets_and_keeps_latest(s3: Store, prefix: str) -> None:
    baseline = estate("load_orders", "daily_revenue")
    capped = estate(
        "load_orders", "daily_revenue", "weekly_report", captured_at=LATER, max_snapshot_bytes=100
    )
    assert capped["snapshotStored"] is False
    sink = s3.sink(prefix)
    sink.push(baseline)

    result = sink.push(capped)

    assert result.unchanged is False
    assert result.baseline_replaced is False
    assert len(result.written) == 1
    assert result.written[0].endswith(history_key(prefix, capped))
    assert s3.keys(prefix) == sorted(
        [history_key(prefix, baseline), history_key(prefix, capped), f"{prefix}/latest.json"]
    )
    raw = s3.get(history_key(prefix, capped))
    assert raw == encode(for_storage(capped))
    stored = json.loads(raw)
    assert "datasets" not in stored
    assert "lineage" not in stored
    assert stored["state"] == capped["state"]
    assert stored["findings"] == capped["findings"]
    assert stored["lossiness"] == capped["lossiness"]
    assert stored["lossiness"][-1]["artifact"] == "snapshot"
    assert stored["snapshotStored"] is False
    assert stored["fingerprint"] == capped["fingerprint"]
    # The baseline is never replaced by a capped document.
    assert s3.get(f"{prefix}/latest.json") == encode(baseline)
    assert sink.read_baseline() == encode(baseline)


def test_over_the_cap_on_the_first_push_leaves_no_baseline(s3: Store, prefix: str) -> None:
    capped = estate("load_orders", "daily_revenue", max_snapshot_bytes=100)
    sink = s3.sink(prefix)

    result = sink.push(capped)

    assert result.baseline_replaced is False
    assert s3.keys(prefix) == [history_key(prefix, capped)]
    assert sink.read_baseline() is None


# -- history: listed back, and kept within its retention ----------------------------------


def test_the_history_lists_back_what_the_store_holds(s3: Store, prefix: str, monkeypatch) -> None:
    sink = s3.sink(prefix)
    docs = [
        estate("load_orders", captured_at="2026-11-27T06:00:00Z"),
        estate("load_orders", "daily_revenue", captured_at="2026-11-28T06:00:00Z"),
        estate(
            "load_orders", "daily_revenue", "x", captured_at="2026-11-29T06:00:00Z", max_snapshot_bytes=100
        ),
    ]
    for doc in docs:
        sink.push(doc)
    s3.server.put(f"{prefix}/history/20261130T060000Z-{'e' * 16}.json", b"{damaged")
    s3.server.put(f"{prefix}/history/notes.txt", b"not an entry")
    reader = StoreHistory(sink.root, sink.uri)
    listing = list_history(reader)
    assert listing.total == 4 and listing.location == f"s3://{BUCKET}/{prefix}"
    damaged, *stored = listing.entries
    assert damaged.summary is None and damaged.problem.startswith("is not valid JSON")
    assert [e.fingerprint for e in stored] == [d["fingerprint"] for d in docs[::-1]]
    assert [e.over_the_cap for e in stored] == [True, False, False]
    assert [e.latest for e in stored] == [False, True, False]  # latest.json holds the second
    assert stored[1].location == f"s3://{BUCKET}/{history_key(prefix, docs[1])}"
    assert_no_secret(json.dumps(listing.as_dict()))
    # an object over the bound is refused on its size, not read
    monkeypatch.setattr(defaults, "MAX_DOCUMENT_BYTES", 64)
    fresh = StoreHistory(s3.sink(prefix).root, f"{sink.uri}/again")  # another location: no cached summaries
    assert all(e.problem and "over the 64-byte limit" in e.problem for e in list_history(fresh).entries[1:])


def test_retention_removes_old_history_objects_and_keeps_the_twin(s3: Store, prefix: str) -> None:
    sink = ObjectStorageSink(f"s3://{BUCKET}/{prefix}", conn_id=s3.conn_id, retention=Retention(keep=2))
    whole = [estate("a", captured_at=f"2026-11-{day}T06:00:00Z") for day in (24,)] + [
        estate("a", *(f"d{i}" for i in range(day - 24)), captured_at=f"2026-11-{day}T06:00:00Z")
        for day in (25, 26, 27)
    ]
    results = [sink.push(doc) for doc in whole]
    assert [len(r.removed) for r in results] == [0, 0, 1, 1]
    assert s3.keys(prefix) == sorted([*(history_key(prefix, d) for d in whole[2:]), f"{prefix}/latest.json"])
    over = [estate("a", "big", f"b{day}", captured_at=f"2026-11-{day}T06:00:00Z", max_snapshot_bytes=100)
            for day in (28, 29, 30)]  # fmt: skip
    for doc in over:
        sink.push(doc)
    # keep 2: the newest, and the one before it... but latest.json's twin stays too
    assert s3.keys(prefix) == sorted(
        [history_key(prefix, over[-1]), history_key(prefix, over[-2]), history_key(prefix, whole[-1]),
         f"{prefix}/latest.json"]
    )  # fmt: skip
    assert results[2].removed == [f"s3://{BUCKET}/{history_key(prefix, whole[0])}"]


# -- opening -------------------------------------------------------------------------------


def test_open_sink_gives_an_object_storage_sink_whose_uri_carries_no_secret(s3: Store, prefix: str) -> None:
    uri = f"s3://{BUCKET}/{prefix}"

    sink = open_sink(uri, sink_conn_id=s3.conn_id)

    assert isinstance(sink, ObjectStorageSink)
    assert sink.uri == uri
    assert_no_secret(sink.uri)
    # It reaches the store through the connection, and reports without its keys.
    document = estate("load_orders")
    result = sink.push(document)
    assert result.sink == uri
    assert s3.keys(prefix) == sorted([history_key(prefix, document), f"{prefix}/latest.json"])
    assert_no_secret(json.dumps(result.as_dict()))


# -- failures ------------------------------------------------------------------------------


def test_denied_store_raises_sink_error_naming_the_uri(
    s3: Store, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = f"s3://{BUCKET}/{prefix}"
    sink = open_sink(uri, sink_conn_id=s3.conn_id)
    # From now on the server checks every request against IAM, which knows no such key: 403.
    monkeypatch.setattr(moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)

    with pytest.raises(SinkError) as read_error:
        sink.read_baseline()
    with pytest.raises(SinkError) as push_error:
        sink.push(estate("load_orders"))

    for error in (read_error.value, push_error.value):
        assert error.exit_code == 3
        assert uri in str(error)
        assert_no_secret(str(error))
    monkeypatch.undo()
    assert s3.keys(prefix) == []


def test_missing_bucket_raises_sink_error_and_is_not_created(s3: Store) -> None:
    bucket = f"coremodels-missing-{secrets.token_hex(4)}"
    uri = f"s3://{bucket}/estates"
    sink = open_sink(uri, sink_conn_id=s3.conn_id)
    assert sink.read_baseline() is None  # nothing stored there: no baseline

    try:
        with pytest.raises(SinkError) as error:
            sink.push(estate("load_orders"))
        assert error.value.exit_code == 3
        assert uri in str(error.value)
        assert_no_secret(str(error.value))
    finally:
        with pytest.raises(ClientError):
            s3.client.head_bucket(Bucket=bucket)


def test_unreachable_store_raises_sink_error_naming_the_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        host, port = closed.getsockname()
        conn_id = new_conn_id()
        monkeypatch.setenv(
            f"AIRFLOW_CONN_{conn_id.upper()}",
            aws_connection(
                f"http://{host}:{port}",
                config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 2},
            ),
        )
        uri = f"s3://{BUCKET}/estates"
        sink = open_sink(uri, sink_conn_id=conn_id)

        with pytest.raises(SinkError) as error:
            sink.push(estate("load_orders"))

    assert error.value.exit_code == 3
    assert uri in str(error.value)
    assert_no_secret(str(error.value))


def test_a_waiver_added_to_an_unchanged_estate_is_stored_again(s3: Store, prefix: str) -> None:
    """Same fingerprint, other findings: latest.json and history get the new findings."""
    finding = {"section": "Conformance", "severity": "Warning", "code": "dag-no-owner",
               "subject": "daily_revenue", "message": "...", "detail": "owners: airflow"}  # fmt: skip
    first = estate("load_orders", "daily_revenue")
    first["findings"] = [finding]
    waived = estate("load_orders", "daily_revenue", captured_at=LATER)
    waived["findings"] = [{**finding, "waived": {"reason": "ops owns it", "expires": None}}]
    sink = s3.sink(prefix)
    sink.push(first)

    result = sink.push(waived)
    assert (result.unchanged, result.findings_changed, result.baseline_replaced) == (False, True, True)
    assert s3.get(f"{prefix}/latest.json") == encode(waived)
    assert s3.keys(prefix) == sorted(
        [
            history_key(prefix, first),
            history_key(prefix, waived).replace(waived["fingerprint"], stored_version(waived)),
            f"{prefix}/latest.json",
        ]
    )
    assert sink.push(waived).unchanged is True  # and then nothing again


@pytest.mark.airflow_server
def test_export_reaches_the_store_with_a_connection_kept_in_the_metadata_database(
    airflow_server, s3: Store, prefix: str, tmp_path: Path
) -> None:
    """`airflow connections add` keeps it in the database, where s3fs's own lookup outside a task
    does not look (it would write anonymously, or not at all): the export finds it and uses it."""
    from support.airflow_server import migrated_home

    home = migrated_home(tmp_path / "home", tmp_path / "dags")
    env = {key: value for key, value in home.items() if not key.startswith("AIRFLOW_CONN_")}  # this module's
    airflow = str(Path(sys.executable).with_name("airflow"))
    added = subprocess.run(
        [airflow, "connections", "add", "stored_s3", "--conn-json", s3.server.connection()],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    uri = f"s3://{BUCKET}/{prefix}"
    result = subprocess.run(
        [sys.executable, "-m", "airflow_provider_coremodels", "export", "--base-url", airflow_server.base_url,
         "--username", airflow_server.username, "--password-env", "AF_PASSWORD",
         "--sink", uri, "--sink-conn-id", "stored_s3"],
        capture_output=True, text=True, env={**env, "AF_PASSWORD": airflow_server.password}, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith(f"{uri} (written)")
    assert f"{prefix}/latest.json" in s3.keys(prefix)
    assert_no_secret(result.stdout + result.stderr)
