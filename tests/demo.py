"""The local demo: a real Airflow 3 serving the example estate, exported and audited.

Run with ``make demo`` (it creates the virtualenv first). It starts a real ``airflow api-server``
on 127.0.0.1 with SQLite and example_dags/ as its DAG folder (the estate and the export DAG),
defines the connection ``airflow_api`` in the environment, and then:

1. ``airflow coremodels export --conn-id airflow_api --sink ./coremodels-out`` prints the
   findings table and writes ./coremodels-out/latest.json and history/;
2. ``airflow dags test coremodels_export`` runs the export DAG once, so the findings show in a
   task log (same estate, so it reports ``unchanged``);

and stops everything it started. Run it twice: the second run's export reports ``unchanged``.
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


def airflow(*args: str, env: dict[str, str]) -> None:
    print("\n$ airflow " + " ".join(args), flush=True)
    subprocess.run([str(Path(sys.executable).with_name("airflow")), *args], env=env, check=True)


def main() -> int:
    print("starting a real Airflow API server on 127.0.0.1 with the example estate ...", flush=True)
    with AirflowApiServer(REPO / "example_dags") as server:
        print(f"  up at {server.base_url}", flush=True)
        connection = {
            "conn_type": "airflow_api",
            "host": server.base_url,
            "login": server.username,
            "password": server.password,
        }
        env = {
            **server.env,
            "AIRFLOW_CONN_AIRFLOW_API": json.dumps(connection),
            "AIRFLOW_VAR_COREMODELS_SINKS": str(OUT),
        }
        airflow("coremodels", "export", "--conn-id", "airflow_api", "--sink", str(OUT), env=env)
        airflow("dags", "test", "coremodels_export", env=env)
    print(f"\nthe server is stopped. The snapshot: {OUT.relative_to(REPO)}/latest.json and history/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
