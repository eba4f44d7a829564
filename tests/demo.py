"""The local demo: a real Airflow 3 serving the example estate, captured and audited.

Run with ``make demo`` (it creates the virtualenv first). Starts a real ``airflow api-server``
on 127.0.0.1 with SQLite and example_dags/estate as its DAG folder, defines the connection
``airflow_api`` in the environment, runs ``airflow coremodels capture`` into
./coremodels-out/artifacts/ and ``airflow coremodels audit`` on what it saved (the findings
table in the terminal, the snapshot document in ./coremodels-out/snapshot.json), then stops
everything it started.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from airflow_server import AirflowApiServer

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "coremodels-out"


def airflow(*args: str, env: dict[str, str], capture: bool = False) -> bytes:
    print("$ airflow " + " ".join(args), flush=True)
    command = [str(Path(sys.executable).with_name("airflow")), *args]
    return subprocess.run(command, env=env, check=True, capture_output=capture).stdout


def main() -> int:
    artifacts = OUT / "artifacts"
    print("starting a real Airflow API server on 127.0.0.1 with the example estate ...", flush=True)
    with AirflowApiServer(REPO / "example_dags" / "estate") as server:
        print(f"  up at {server.base_url}\n", flush=True)
        connection = {
            "conn_type": "airflow_api",
            "host": server.base_url,
            "login": server.username,
            "password": server.password,
        }
        env = {**server.env, "AIRFLOW_CONN_AIRFLOW_API": json.dumps(connection)}
        airflow("coremodels", "capture", "--conn-id", "airflow_api", "--out", str(artifacts), env=env)
    print("\nthe server is stopped; the audit needs only the captured files\n", flush=True)

    files = [f"--{name}={artifacts / f'{name}.json'}" for name in ("dags", "tasks", "datasets")]
    airflow("coremodels", "audit", *files, env=env)
    snapshot = airflow("coremodels", "audit", *files, "--format", "json", env=env, capture=True)
    (OUT / "snapshot.json").write_bytes(snapshot)
    print(f"\nsnapshot document: {(OUT / 'snapshot.json').relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
