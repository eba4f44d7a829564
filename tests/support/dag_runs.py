"""Running an example DAG with ``dag.test()`` in an Airflow home of its own, against real servers.

``dag_home`` makes the home (a migrated SQLite database) whose DAG folder holds one example DAG
file; ``run_dag`` runs it in a process of its own through ``dag_test_runner.py`` and returns what
that printed; ``api_connection`` is an ``airflow_api`` connection to a test server, in the form of
an ``AIRFLOW_CONN_*`` variable.

The runs of one home are forked from one ``airflow_forks`` server, which imported Airflow and built
``dag.test()``'s in-process execution API once (about 9 of a run's 13 s), started with everything of
the environment but what may differ from run to run (``airflow_forks.PER_RUN``); a run whose other
settings differ gets a server of its own. Each run is still a process of its own, with its own
output, exit code and environment.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import dag_test_runner
from support.airflow_forks import KeptServers
from support.airflow_server import AirflowApiServer, migrated_home
from support.helpers import REPO

#: Fork servers kept at once (a module's home, and a variant of it a test makes).
KEPT = 3


def api_connection(server: AirflowApiServer, password: str | None = None) -> str:
    return json.dumps(
        {
            "conn_type": "airflow_api",
            "host": server.base_url,
            "login": server.username,
            "password": password or server.password,
        }
    )


def dag_home(factory: pytest.TempPathFactory, dag_file: str) -> dict[str, str]:
    """The environment of a fresh Airflow home whose DAG folder holds ``example_dags/<dag_file>``."""
    home = factory.mktemp("runner")
    dags = home / "dags"
    dags.mkdir()
    shutil.copy(REPO / "example_dags" / dag_file, dags)
    return migrated_home(home, dags)


_servers = KeptServers(warm=("dag_test",), kept=KEPT)


def run_dag(env: dict[str, str], dag_file: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``dag.test()`` of the home's ``dag_file``: its output carries the runner's marker lines."""
    path = Path(env["AIRFLOW__CORE__DAGS_FOLDER"]) / dag_file
    args = [sys.executable, str(Path(dag_test_runner.__file__)), str(path)]
    return _servers.server(env).run({"dag_file": str(path)}, env=env, timeout=timeout, args=args)
