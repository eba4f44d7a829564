"""A plain sequential crawl with the official apache-airflow-client: what a user would write.

Benchmark 3's competitor, run by ``bench_vs_client.py`` with the Python of a virtualenv of its
own that holds ``apache-airflow-client`` and ``requests`` (neither is in the project's
environment, and this file must not import the project)::

    BENCH_USERNAME=admin BENCH_PASSWORD=... python benchmarks/client_crawl.py http://127.0.0.1:PORT

A JWT from ``POST /auth/token`` (as the client's README does it), the DAG list page by page
(limit 100), ``get_tasks`` for each DAG, the asset list page by page, one request after
another, with the same ``order_by`` as the capture. It times itself after its imports and
prints one JSON line: counts, requests, wall and CPU seconds, and a digest over what it saw
(the same lines ``bench_vs_client.py`` digests for the capture and the planned estate).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any

import airflow_client.client
import requests
from airflow_client.client.api.asset_api import AssetApi
from airflow_client.client.api.dag_api import DAGApi
from airflow_client.client.api.task_api import TaskApi


def get_access_token(host: str, username: str, password: str) -> str:
    response = requests.post(
        f"{host}/auth/token",
        json={"username": username, "password": password},
        headers={"Content-Type": "application/json"},
    )
    if response.status_code != 201:
        raise RuntimeError(f"Failed to get access token: {response.status_code} {response.text}")
    return str(response.json()["access_token"])


def main() -> None:
    host = sys.argv[1]
    wall0, cpu0 = time.monotonic(), time.process_time()
    token = get_access_token(host, os.environ["BENCH_USERNAME"], os.environ["BENCH_PASSWORD"])
    calls = 1
    configuration = airflow_client.client.Configuration(host=host, access_token=token)
    with airflow_client.client.ApiClient(configuration) as api_client:
        dag_api, task_api, asset_api = DAGApi(api_client), TaskApi(api_client), AssetApi(api_client)

        dags: list[Any] = []
        offset = 0
        while True:
            page = dag_api.get_dags(limit=100, offset=offset, order_by=["dag_id"])
            calls += 1
            dags.extend(page.dags)
            offset += len(page.dags)
            if not page.dags or offset >= page.total_entries:
                break

        tasks = {}
        for dag in dags:
            tasks[dag.dag_id] = task_api.get_tasks(dag.dag_id).tasks
            calls += 1

        assets: list[Any] = []
        offset = 0
        while True:
            page = asset_api.get_assets(limit=100, offset=offset, order_by=["id"])
            calls += 1
            assets.extend(page.assets)
            offset += len(page.assets)
            if not page.assets or offset >= page.total_entries:
                break
    wall1, cpu1 = time.monotonic(), time.process_time()

    lines = [f"dag {dag.dag_id}" for dag in dags]
    lines += [f"task {dag_id} {task.task_id}" for dag_id, ts in tasks.items() for task in ts]
    for asset in assets:
        lines.append(f"asset {asset.uri}")
        lines += [f"produces {asset.uri} {ref.dag_id}" for ref in asset.producing_tasks]
        lines += [f"schedules {asset.uri} {ref.dag_id}" for ref in asset.scheduled_dags]
    print(
        json.dumps(
            {
                "dags": len(dags),
                "tasks": sum(len(ts) for ts in tasks.values()),
                "assets": len(assets),
                "requests": calls,
                "retries": 0,
                "lost": 0,
                "started": wall0,
                "ended": wall1,
                "seconds": wall1 - wall0,
                "cpu": cpu1 - cpu0,
                "digest": hashlib.sha256("\n".join(sorted(lines)).encode()).hexdigest()[:16],
            }
        )
    )


if __name__ == "__main__":
    main()
