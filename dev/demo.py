"""The local demo: a real Airflow 3 serving the example estate, exported and audited.

Run with ``make demo`` (it creates the virtualenv first). It starts a real ``airflow api-server``
on 127.0.0.1 with SQLite and example_dags/ as its DAG folder (the estate, Airflow 3's asset
constructs, the freshness producers and the export DAG; the alias producer and the orders
loader run once, the vendor feed fails once, and the scheduler's asset pass runs, as a live
deployment's scheduler would have), defines the connection ``airflow_api_default`` in
the environment, and then:

1. ``airflow coremodels export --sink ./coremodels-out`` (the default connection) prints the
   findings table and writes ./coremodels-out/latest.json and history/;
2. ``airflow dags test coremodels_export`` runs the export DAG once, so the findings show in a
   task log (same estate, so it reports ``unchanged``), with Airflow's own INFO lines left out
   (``QUIET_DAGS_TEST``), so that the findings are what it shows;
3. ``airflow coremodels lineage`` draws one DAG's neighbourhood, and the other views of the
   stored snapshot are written beside it: ``coremodels.sarif``, ``report.md`` and
   ``lineage.svg`` (the UI page's picture);
4. the CoreModels page of the Airflow UI is fetched, as the UI would, and checked.

and stops everything it started. Run it twice: the second run's export reports ``unchanged``.
With ``COREMODELS_DEMO_KEEP=1`` the server stays up until Enter, to open the page in a browser.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the harness: tests/support/

from support.airflow_server import AirflowApiServer

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "coremodels-out"


#: What ``airflow dags test`` shows of its task's log: the provider's lines and Airflow's own
#: ``[DAG TEST]`` markers at INFO, the rest of Airflow at WARNING. At INFO, Airflow logs about 130
#: lines for this one run (filling the DAG bag, each DAG's next run, each task state update)
#: around the dozen that are the export's. A deployment's task log is not changed by this.
QUIET_DAGS_TEST = {
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    "AIRFLOW__LOGGING__NAMESPACE_LEVELS": " ".join(
        f"{name}=INFO"
        for name in (
            "airflow.task.operators.airflow_provider_coremodels",  # the operator's self.log
            "airflow_provider_coremodels",  # the provider's modules (capture, sinks)
            "airflow.sdk.definitions.dag",  # [DAG TEST] starting / end task
        )
    ),
    # `airflow dags test` warns on every run that the optional graphviz package is missing
    "PYTHONWARNINGS": "ignore:Could not import graphviz:UserWarning",
}


def export_env(server: AirflowApiServer, sink: Path) -> dict[str, str]:
    """The server's environment with the export's connection to it and its sink: what the demo's
    ``airflow coremodels export`` and ``airflow dags test coremodels_export`` run with."""
    connection = {
        "conn_type": "airflow_api",
        "host": server.base_url,
        "login": server.username,
        "password": server.password,
    }
    return {
        **server.env,
        "AIRFLOW_CONN_AIRFLOW_API_DEFAULT": json.dumps(connection),
        "AIRFLOW_VAR_COREMODELS_SINKS": str(sink),
    }


def airflow(*args: str, env: dict[str, str]) -> None:
    print("\n$ airflow " + " ".join(args), flush=True)
    subprocess.run([str(Path(sys.executable).with_name("airflow")), *args], env=env, check=True)


def write_view(path: Path, *args: str, env: dict[str, str]) -> None:
    """Run ``python -m airflow_provider_coremodels <args>`` and keep its stdout in ``path``."""
    command = [sys.executable, "-m", "airflow_provider_coremodels", *args]
    print(
        f"\n$ python -m airflow_provider_coremodels {' '.join(args)} > {path.relative_to(REPO)}", flush=True
    )
    path.write_bytes(subprocess.run(command, env=env, check=True, capture_output=True).stdout)


def main() -> int:
    print("starting a real Airflow API server on 127.0.0.1 with the example estate ...", flush=True)
    page_env = {"AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR": str(OUT)}  # the UI page reads the file sink
    with AirflowApiServer(
        REPO / "example_dags",
        extra_env=page_env,
        run_dags=("exports_producer", "orders_loader"),
        failing_dags=("broken_feed",),  # a producer whose latest run failed: producer-failing
        scheduler_pass=True,
    ) as server:
        print(f"  up at {server.base_url}", flush=True)
        env = export_env(server, OUT)
        airflow("coremodels", "export", "--sink", str(OUT), env=env)
        airflow("dags", "test", "coremodels_export", env={**env, **QUIET_DAGS_TEST})

        snapshot = str(OUT / "latest.json")
        airflow("coremodels", "lineage", "--snapshot", snapshot, "--around", "daily_revenue", env=env)
        write_view(OUT / "coremodels.sarif", "audit", "--snapshot", snapshot, "--format", "sarif", env=env)
        write_view(OUT / "report.md", "audit", "--snapshot", snapshot, "--format", "markdown", env=env)
        write_view(OUT / "lineage.svg", "lineage", "--snapshot", snapshot, "--format", "svg", env=env)

        page = requests.get(
            f"{server.base_url}/coremodels/",
            headers={"Authorization": f"Bearer {server.token()}"},
            timeout=60,
        )
        page.raise_for_status()
        assert "CoreModels snapshot" in page.text, page.text[:500]
        print(f"\nthe CoreModels page answers at {server.base_url}/plugin/coremodels (Browse -> CoreModels)")
        if os.environ.get("COREMODELS_DEMO_KEEP") == "1":
            passwords = server.env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
            print(f"  sign in as {server.username}; the password is in {passwords}")
            input("  press Enter to stop the server ... ")
    print(f"\nthe server is stopped. The snapshot: {OUT.relative_to(REPO)}/latest.json and history/,")
    beside = "coremodels.sarif, report.md and lineage.svg"
    print(f"with {beside} beside it (open {OUT.relative_to(REPO)}/report.md).")
    premerge(env)
    return 0


def premerge(env: dict[str, str]) -> None:
    """The pre-merge check, with no server: the folder as it is (no change), then a pull request
    that breaks orders.py (what it breaks, and for whom)."""
    baseline = str(OUT.relative_to(REPO))

    def check(folder: str, *more: str, shown: str | None = None) -> subprocess.CompletedProcess[str]:
        args = ["audit", "--dag-folder", folder, "--baseline", baseline, *more]
        print(
            f"\n$ python -m airflow_provider_coremodels {' '.join([*args[:2], shown or folder, *args[3:]])}"
        )
        command = [sys.executable, "-m", "airflow_provider_coremodels", *args]
        return subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True)

    print("\nbefore the merge: the DAG folder judged in the estate the snapshot holds, with no server")
    unchanged = check("example_dags")
    assert unchanged.returncode == 0, unchanged.stderr
    print(unchanged.stdout.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="coremodels-pr-") as scratch:
        folder = Path(shutil.copytree(REPO / "example_dags", Path(scratch) / "dags"))
        orders = folder / "estate" / "orders.py"
        orders.write_text(orders.read_text().replace("ORDERS = Asset(", "ORDERS = Assett("))
        broken = check(
            str(folder), "--fail-on-new", "error", shown="<a pull request breaking estate/orders.py>"
        )
        assert broken.returncode == 1, broken.stderr  # the change opens an Error: --fail-on-new fails it
        print("\n".join(broken.stdout.splitlines()[:3]))
        print("(exit 1: the change opens an Error)")


if __name__ == "__main__":
    sys.exit(main())
