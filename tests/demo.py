"""The local demo: a real Airflow 3 serving the example estate, its artifacts, and the audit.

Run with ``make demo`` (it creates the virtualenv first). Starts a real ``airflow api-server``
on 127.0.0.1 with SQLite and example_dags/estate as its DAG folder, fetches the dags, tasks and
assets responses into ./coremodels-out/artifacts/, runs ``airflow coremodels audit`` on them
(table in the terminal, the snapshot document in ./coremodels-out/snapshot.json), and stops
everything it started.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from airflow_server import AirflowApiServer
from record_fixtures import fetch_artifacts

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "coremodels-out"


def main() -> int:
    artifacts_dir = OUT / "artifacts"
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    print("starting a real Airflow API server on 127.0.0.1 with the example estate ...", flush=True)
    with AirflowApiServer(REPO / "example_dags" / "estate") as server:
        print(f"  up at {server.base_url}", flush=True)
        for name, body in fetch_artifacts(server).items():
            (artifacts_dir / name).write_bytes(body)
        env = server.env
    print(f"fetched the estate into {artifacts_dir.relative_to(REPO)}/; the server is stopped\n", flush=True)

    airflow = str(Path(sys.executable).with_name("airflow"))
    audit = [
        airflow,
        "coremodels",
        "audit",
        *(f"--{n}={artifacts_dir / f'{n}.json'}" for n in ("dags", "tasks", "datasets")),
    ]
    print("$ airflow coremodels audit --dags ... --tasks ... --datasets ...", flush=True)
    subprocess.run(audit, env=env, check=True)
    snapshot = subprocess.run([*audit, "--format", "json"], env=env, check=True, capture_output=True).stdout
    (OUT / "snapshot.json").write_bytes(snapshot)
    print(f"\nsnapshot document: {(OUT / 'snapshot.json').relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
