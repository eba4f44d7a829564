"""A real S3-compatible server on 127.0.0.1 for the tests: moto's server mode, in a thread.

The provider reaches it the way a deployment reaches S3: Airflow's ``ObjectStoragePath``
resolves an ``aws`` connection (its extra points ``endpoint_url`` here) through the amazon
provider's s3 filesystem (s3fs). What was stored is read back with boto3, straight from the
server. The keys are fake; the tests check that they never appear in any output.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

BUCKET = "coremodels-snapshots"
REGION = "us-east-1"
ACCESS_KEY = "AKIACOREMODELSTEST01"
SECRET_KEY = "coremodels-test-secret-0123456789"
SECRETS = (ACCESS_KEY, SECRET_KEY)


def aws_connection(endpoint: str, **extra: Any) -> str:
    """An ``aws`` connection in Airflow's JSON form: the fake keys, the local endpoint."""
    return json.dumps(
        {
            "conn_type": "aws",
            "login": ACCESS_KEY,
            "password": SECRET_KEY,
            "extra": {"endpoint_url": endpoint, "region_name": REGION, **extra},
        }
    )


def new_conn_id() -> str:
    # Airflow caches one filesystem per (scheme, conn_id) for the whole process: a fresh id
    # keeps a test's connection from meeting a cached store pointing elsewhere.
    return f"coremodels_test_s3_{secrets.token_hex(4)}"


@dataclass(frozen=True)
class S3Store:
    endpoint: str
    client: Any  # a boto3 S3 client on the local server

    def keys(self, prefix: str, bucket: str = BUCKET) -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{prefix}/")
        return sorted(obj["Key"] for page in pages for obj in page.get("Contents", []))

    def get(self, key: str) -> bytes:
        data: bytes = self.client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        return data

    def put(self, key: str, body: bytes) -> None:
        self.client.put_object(Bucket=BUCKET, Key=key, Body=body)

    def connection(self, **extra: Any) -> str:
        return aws_connection(self.endpoint, **extra)


@contextlib.contextmanager
def running_s3() -> Iterator[S3Store]:
    """A moto S3 server on a free port of 127.0.0.1 with one bucket, ``BUCKET``. Without moto and
    boto3 (the oldest-Airflow venv installs no object-storage extras) the test skips, saying so."""
    import pytest

    boto3 = pytest.importorskip("boto3", reason="no boto3 here: make test installs the object-storage extras")
    pytest.importorskip("moto", reason="no moto here: make test installs the object-storage extras")
    from moto.server import ThreadedMotoServer

    werkzeug = logging.getLogger("werkzeug")  # one log line per request: keep failures readable
    level = werkzeug.level
    werkzeug.setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
        )
        client.create_bucket(Bucket=BUCKET)
        yield S3Store(endpoint, client)
    finally:
        server.stop()
        werkzeug.setLevel(level)
