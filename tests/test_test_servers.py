"""Quick checks of the test utilities: the Airflow 2 replay server and the counting proxy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from requests.adapters import HTTPAdapter
from support.counting_proxy import CountingProxy
from support.replay_server import AirflowV1ReplayServer

FIXTURES = Path(__file__).parent / "fixtures" / "airflow2"
AUTH = ("admin", "admin-v1-pw")


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


@pytest.fixture
def replay() -> Iterator[AirflowV1ReplayServer]:
    with AirflowV1ReplayServer(FIXTURES, max_page_limit=2) as server:
        yield server


@pytest.fixture
def proxy(replay: AirflowV1ReplayServer) -> Iterator[CountingProxy]:
    with CountingProxy(replay.base_url) as counting_proxy:
        yield counting_proxy


# -- replay server ---------------------------------------------------------------------------------


def test_version_endpoints_identify_airflow_2(replay: AirflowV1ReplayServer) -> None:
    v1 = requests.get(f"{replay.base_url}/api/v1/version", timeout=5)  # no auth needed
    assert v1.status_code == 200
    assert v1.json() == {"version": "2.10.5", "git_version": None}

    v2 = requests.get(f"{replay.base_url}/api/v2/version", timeout=5)
    assert v2.status_code == 404
    assert v2.json() == {"detail": "Not Found"}

    assert requests.post(f"{replay.base_url}/auth/token", json={}, timeout=5).status_code == 404
    assert replay.requests == [
        ("GET", "/api/v1/version"),
        ("GET", "/api/v2/version"),
        ("POST", "/auth/token"),
    ]


@pytest.mark.parametrize("auth", [None, ("admin", "wrong"), ("someone", "admin-v1-pw")])
def test_basic_auth_is_required(replay: AirflowV1ReplayServer, auth: tuple[str, str] | None) -> None:
    response = requests.get(f"{replay.base_url}/api/v1/dags", auth=auth, timeout=5)
    assert response.status_code == 401
    assert response.headers["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert problem["title"] == "Unauthorized"
    assert problem["status"] == 401
    assert problem["detail"]
    assert problem["type"].endswith("#section/Errors/Unauthenticated")


def test_dags_are_paged_by_max_page_limit(replay: AirflowV1ReplayServer) -> None:
    expected = sorted(dag["dag_id"] for dag in fixture("dags.json")["dags"])
    seen: list[str] = []
    offset = 0
    while True:
        page = requests.get(
            f"{replay.base_url}/api/v1/dags",
            params={"limit": 100, "offset": offset, "order_by": "dag_id"},
            auth=AUTH,
            timeout=5,
        ).json()
        assert page["total_entries"] == len(expected)
        assert len(page["dags"]) <= 2  # limit=100 is capped by max_page_limit=2
        if not page["dags"]:
            break
        seen += [dag["dag_id"] for dag in page["dags"]]
        offset += len(page["dags"])
    assert seen == expected
    assert len(replay.requests) == 4  # 2 + 2 + 1 DAGs, then the empty page


def test_dags_order_by_descending(replay: AirflowV1ReplayServer) -> None:
    page = requests.get(
        f"{replay.base_url}/api/v1/dags", params={"order_by": "-dag_id"}, auth=AUTH, timeout=5
    ).json()
    everything = sorted((dag["dag_id"] for dag in fixture("dags.json")["dags"]), reverse=True)
    assert [dag["dag_id"] for dag in page["dags"]] == everything[:2]


def test_datasets_total_entries_is_overstated(replay: AirflowV1ReplayServer) -> None:
    real = len(fixture("datasets.json")["datasets"])
    url = f"{replay.base_url}/api/v1/datasets"

    first = requests.get(url, params={"order_by": "id"}, auth=AUTH, timeout=5).json()
    assert first["total_entries"] == real + 2
    assert len(first["datasets"]) == 2

    past_the_end = requests.get(url, params={"offset": real, "order_by": "id"}, auth=AUTH, timeout=5)
    assert past_the_end.status_code == 200
    assert past_the_end.json() == {"datasets": [], "total_entries": real + 2}


def test_datasets_total_entries_can_be_honest() -> None:
    with AirflowV1ReplayServer(FIXTURES, datasets_total_entries_ignores_filters=False) as server:
        page = requests.get(f"{server.base_url}/api/v1/datasets", auth=AUTH, timeout=5).json()
    assert page == fixture("datasets.json")


def test_tasks_of_a_url_encoded_dag_id(replay: AirflowV1ReplayServer) -> None:
    response = requests.get(f"{replay.base_url}/api/v1/dags/daily%5Frevenue/tasks", auth=AUTH, timeout=5)
    assert response.status_code == 200
    assert response.json() == fixture("tasks.json")["daily_revenue"]

    unknown = requests.get(f"{replay.base_url}/api/v1/dags/no%20such%20dag/tasks", auth=AUTH, timeout=5)
    assert unknown.status_code == 404
    assert unknown.json()["status"] == 404
    assert "no such dag" in unknown.json()["detail"]


def test_replay_server_stops_on_exit() -> None:
    with AirflowV1ReplayServer(FIXTURES) as server:
        url = f"{server.base_url}/api/v1/version"
        with requests.Session() as session:  # leaves a kept-alive connection open
            assert session.get(url, timeout=5).status_code == 200
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


# -- counting proxy --------------------------------------------------------------------------------


def test_proxy_forwards_and_counts(replay: AirflowV1ReplayServer, proxy: CountingProxy) -> None:
    direct = requests.get(f"{replay.base_url}/api/v1/dags?limit=2", auth=AUTH, timeout=5)
    proxied = requests.get(f"{proxy.base_url}/api/v1/dags?limit=2", auth=AUTH, timeout=5)
    assert proxied.status_code == 200
    assert proxied.json() == direct.json()
    assert proxied.headers["Content-Length"] == str(len(proxied.content))

    requests.get(f"{proxy.base_url}/api/v1/version", timeout=5)
    assert proxy.requests == [("GET", "/api/v1/dags?limit=2"), ("GET", "/api/v1/version")]
    assert proxy.count() == 2
    assert proxy.count("/api/v1/dags") == 1
    proxy.reset()
    assert proxy.count() == 0


def test_proxy_passes_auth_and_error_status_through(proxy: CountingProxy) -> None:
    unauthorized = requests.get(f"{proxy.base_url}/api/v1/dags", auth=("admin", "wrong"), timeout=5)
    assert unauthorized.status_code == 401
    assert unauthorized.headers["Content-Type"] == "application/problem+json"
    assert unauthorized.json()["title"] == "Unauthorized"

    authorized = requests.get(f"{proxy.base_url}/api/v1/datasets", auth=AUTH, timeout=5)
    assert authorized.status_code == 200

    v2 = requests.get(f"{proxy.base_url}/api/v2/version", timeout=5)
    assert (v2.status_code, v2.json()) == (404, {"detail": "Not Found"})
    assert proxy.count() == 3


def test_proxy_serves_concurrent_pooled_requests(replay: AirflowV1ReplayServer, proxy: CountingProxy) -> None:
    dag_ids = [dag["dag_id"] for dag in fixture("dags.json")["dags"]]
    paths = [f"/api/v1/dags/{dag_ids[i % len(dag_ids)]}/tasks" for i in range(20)]

    with requests.Session() as session:
        session.auth = AUTH
        session.mount("http://", HTTPAdapter(pool_connections=1, pool_maxsize=8))
        with ThreadPoolExecutor(max_workers=8) as pool:
            responses = list(pool.map(lambda path: session.get(proxy.base_url + path, timeout=10), paths))

    tasks = fixture("tasks.json")
    for path, response in zip(paths, responses, strict=True):
        assert response.status_code == 200
        assert response.json() == tasks[path.split("/")[4]]
    assert proxy.count("/api/v1/dags/") == 20
    assert sorted(proxy.requests) == sorted(("GET", path) for path in paths)
    assert len(replay.requests) == 20
