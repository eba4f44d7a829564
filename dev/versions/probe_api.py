"""Record what each Airflow line's REST API answers, on real servers, as raw JSON.

    .venv/bin/python dev/versions/probe_api.py [VERSION ...]       # default: every line
    .venv/bin/python dev/versions/probe_api.py --out DIR 3.1.8

For each line (its venv from dev/versions/make_venvs.sh; 3.3.2 is the dev venv) it runs, one
server at a time:

* ``examples``: load_examples=True, no DAG folder of ours, after ``dags reserialize``; then
  ``examples_scheduler``: the same after one scheduler asset pass (3.x; 2.11 too, its dataset
  orphanage pass).
* ``lifecycle_a`` .. ``lifecycle_h``: a DAG folder written here (see ``write_dags``) through
  (a) reserialize + DAG-processor pass, (b) ``load_orders``'s file broken (NameError) + pass,
  (c) ``loser``'s only outlet removed + pass, (d) ``reader``'s only inlet removed + pass,
  (e) ``gone``'s file deleted + pass, (f) a scheduler asset pass, (g) every DAG scheduled on the
  watched asset paused (PATCH) + a scheduler pass, (h) one more DAG-processor pass (watchers
  are decided at parse time).

Each answer is written to ``OUT/<version>/<step>/<endpoint>.json`` as
``{"method", "path", "params", "status", "body"}`` (``body`` is the parsed JSON, or text).
A list answer with more entries than one page gets ``<endpoint>.offset<N>.json`` files too.
The Airflow homes (logs, airflow.db) are kept in ``OUT/<version>/home-<run>``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from support.version_servers import VersionServer  # noqa: E402

VENVS = {
    "2.11.2": Path("/work/venvs/af-2.11.2"),
    "3.0.6": Path("/work/venvs/af-3.0.6"),
    "3.1.8": Path("/work/venvs/af-3.1.8"),
    "3.2.2": Path("/work/venvs/af-3.2.2"),
    "3.3.2": REPO / ".venv",
}
DEFAULT_OUT = Path("/work/versions-scratch/probe")
PAGE = 100

# ---------------------------------------------------------------------------- the DAG folder
HEAD_3 = """\
import pendulum
from airflow.sdk import DAG, Asset
from airflow.providers.standard.operators.empty import EmptyOperator

START = pendulum.datetime(2024, 1, 1, tz="UTC")
"""
HEAD_2 = """\
import pendulum
from airflow import DAG
from airflow.datasets import Dataset as Asset
from airflow.operators.empty import EmptyOperator

START = pendulum.datetime(2024, 1, 1, tz="UTC")
"""


def _dag(dag_id: str, schedule: str = "None", task: str = "EmptyOperator(task_id='work')", **kw: str) -> str:
    extra = "".join(f", {key}={value}" for key, value in kw.items())
    return (
        f"\nwith DAG({dag_id!r}, schedule={schedule}, start_date=START, catchup=False{extra}):\n    {task}\n"
    )


def dag_files(major: int) -> dict[str, str]:
    """File name -> source of the lifecycle DAG folder, for Airflow ``major``."""
    head = HEAD_2 if major == 2 else HEAD_3
    orders = "Asset('s3://lake/orders.parquet')"
    files = {
        "load_orders.py": _dag("load_orders", task=f"EmptyOperator(task_id='extract', outlets=[{orders}])"),
        "daily_revenue.py": _dag("daily_revenue", schedule=f"[{orders}]"),
        "reader.py": _dag("reader", task=f"EmptyOperator(task_id='read', inlets=[{orders}])"),
        "loser.py": _dag("loser", task="EmptyOperator(task_id='write', outlets=[Asset('s3://lake/lost')])"),
        "lost_consumer.py": _dag("lost_consumer", schedule="[Asset('s3://lake/lost')]"),
        "gone.py": _dag(
            "gone",
            task="EmptyOperator(task_id='move', inlets=[Asset('s3://lake/gone_in')], "
            "outlets=[Asset('s3://lake/gone_out')])",
        ),
        "gone_consumer.py": _dag("gone_consumer", schedule="[Asset('s3://lake/gone_out')]"),
        "documented.py": _dag(
            "documented",
            doc_md=repr("# Documented\n\nThis DAG has **doc_md** and no description."),
            dag_display_name=repr("Pretty name"),
        ),
    }
    if major == 2:
        # 2.x datasets have no name: the two "inventory" datasets are two URIs only.
        v1, v2 = "Asset('s3://lake/inventory/v1')", "Asset('s3://lake/inventory/v2')"
    else:
        v1 = "Asset(name='inventory', uri='s3://lake/inventory/v1')"
        v2 = "Asset(name='inventory', uri='s3://lake/inventory/v2')"
        watched = (
            "Asset('s3://lake/watched', watchers=[AssetWatcher(name='w', "
            "trigger=FileDeleteTrigger(filepath='/tmp/coremodels-probe-watched-file'))])"
        )
        files["watched_consumer.py"] = (
            "from airflow.sdk import AssetWatcher\n"
            "from airflow.providers.standard.triggers.file import FileDeleteTrigger\n"
            + _dag("watched_consumer", schedule=f"[{watched}]")
        )
    files["inventory_v1.py"] = _dag("inventory_v1", task=f"EmptyOperator(task_id='write', outlets=[{v1}])")
    files["inventory_v2.py"] = _dag("inventory_v2", task=f"EmptyOperator(task_id='write', outlets=[{v2}])")
    files["inventory_consumer.py"] = _dag("inventory_consumer", schedule=f"[{v2}]")
    return {name: head + body for name, body in files.items()}


def write_dags(folder: Path, major: int) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, text in dag_files(major).items():
        (folder / name).write_text(text)


# ---------------------------------------------------------------------------- recording
class Recorder:
    def __init__(self, server: VersionServer, out: Path) -> None:
        self.server = server
        self.out = out

    def _save(
        self, step_dir: Path, name: str, method: str, path: str, params: dict[str, Any], response: Any
    ) -> Any:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text[:20000]
        record = {
            "method": method,
            "path": path,
            "params": params,
            "status": response.status_code,
            "body": body,
        }
        (step_dir / f"{name}.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        return body

    def get(self, step_dir: Path, name: str, path: str, *, ui: bool = False, **params: Any) -> Any:
        fetch = self.server.ui_get if ui else self.server.get
        response = fetch(path, **params)
        body = self._save(step_dir, name, "GET", path, params, response)
        # Further pages of a list answer.
        if isinstance(body, dict) and "total_entries" in body and "limit" in params:
            items = next((v for k, v in body.items() if isinstance(v, list)), [])
            offset = len(items)
            while items and offset < body["total_entries"]:
                page_params = {**params, "offset": offset}
                response = fetch(path, **page_params)
                page = self._save(step_dir, f"{name}.offset{offset}", "GET", path, page_params, response)
                items = (
                    next((v for k, v in page.items() if isinstance(v, list)), [])
                    if isinstance(page, dict)
                    else []
                )
                offset += len(items)
        return body

    def snapshot(self, step: str, dag_ids: tuple[str, ...] = ()) -> None:
        s = self.server
        api = s.api
        step_dir = self.out / step
        step_dir.mkdir(parents=True, exist_ok=True)
        self.get(step_dir, "version", f"{api}/version")
        self.get(step_dir, "dags", f"{api}/dags", limit=PAGE)
        if s.major == 2:
            self.get(step_dir, "dags_all", f"{api}/dags", limit=PAGE, only_active="false")
            self.get(step_dir, "datasets", f"{api}/datasets", limit=PAGE)
            self.get(step_dir, "datasets_all", f"{api}/datasets", limit=PAGE, only_active="false")
        else:
            self.get(step_dir, "dags_all", f"{api}/dags", limit=PAGE, exclude_stale="false")
            self.get(step_dir, "assets", f"{api}/assets", limit=PAGE)
            self.get(step_dir, "assets_all", f"{api}/assets", limit=PAGE, only_active="false")
        self.get(step_dir, "importErrors", f"{api}/importErrors", limit=PAGE)
        self.get(step_dir, "dagWarnings", f"{api}/dagWarnings", limit=PAGE)
        deps = "/object/dataset_dependencies" if s.major == 2 else "/ui/dependencies"
        self.get(step_dir, "ui_dependencies", deps, ui=True)
        import requests  # an unauthenticated try: does the UI endpoint need auth?

        response = requests.get(f"{s.base_url}{deps}", timeout=30, allow_redirects=False)
        self._save(step_dir, "ui_dependencies_noauth", "GET", deps, {}, response)
        if s.major == 2:
            # The /object views with basic auth alone (no login session).
            response = s.request("GET", deps, allow_redirects=False)
            self._save(step_dir, "ui_dependencies_basic_auth", "GET", deps, {}, response)
        if step.endswith("_a"):
            # Does the list endpoint refuse the other line's filter parameter?
            foreign = {"exclude_stale": "false"} if s.major == 2 else {"only_active": "false"}
            self.get(step_dir, "dags_foreign_param", f"{api}/dags", limit=PAGE, **foreign)
        for dag_id in dag_ids:
            self.get(step_dir, f"details_{dag_id}", f"{api}/dags/{dag_id}/details")
            self.get(step_dir, f"tasks_{dag_id}", f"{api}/dags/{dag_id}/tasks")


def probe_examples(version: str, out: Path) -> None:
    home = out / "home-examples"
    shutil.rmtree(home, ignore_errors=True)
    with VersionServer(VENVS[version], None, load_examples=True, home=home) as server:
        recorder = Recorder(server, out)
        recorder.snapshot("examples")
        server.scheduler_asset_pass()
        recorder.snapshot("examples_scheduler")


LIFECYCLE_DAGS = ("load_orders", "gone", "loser", "reader", "documented")


def probe_lifecycle(version: str, out: Path) -> None:
    home = out / "home-lifecycle"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    dags = home / "dags"
    server = VersionServer(VENVS[version], dags, load_examples=False, home=home)
    write_dags(dags, server.major)
    log = (out / "steps.log").open("a")

    def note(text: str) -> None:
        log.write(text + "\n")
        log.flush()
        print(f"  [{version}] {text}", flush=True)

    with server:
        rec = Recorder(server, out)
        server.dag_processor_pass()
        rec.snapshot("lifecycle_a", LIFECYCLE_DAGS)
        note("a: reserialize + DAG-processor pass")

        with (dags / "load_orders.py").open("a") as file:
            file.write("\nthis_name_is_not_defined  # raises NameError at import\n")
        server.dag_processor_pass()
        rec.snapshot("lifecycle_b", LIFECYCLE_DAGS)
        note("b: load_orders.py broken (NameError) + pass")

        text = (dags / "loser.py").read_text()
        (dags / "loser.py").write_text(text.replace("outlets=[Asset('s3://lake/lost')]", "outlets=[]"))
        server.dag_processor_pass()
        rec.snapshot("lifecycle_c", LIFECYCLE_DAGS)
        note("c: loser's only outlet removed + pass")

        text = (dags / "reader.py").read_text()
        (dags / "reader.py").write_text(
            text.replace("inlets=[Asset('s3://lake/orders.parquet')]", "inlets=[]")
        )
        server.dag_processor_pass()
        rec.snapshot("lifecycle_d", LIFECYCLE_DAGS)
        note("d: reader's only inlet removed + pass")

        (dags / "gone.py").unlink()
        server.dag_processor_pass()
        rec.snapshot("lifecycle_e", LIFECYCLE_DAGS)
        note("e: gone.py deleted + pass")

        server.scheduler_asset_pass()
        rec.snapshot("lifecycle_f", LIFECYCLE_DAGS)
        note("f: scheduler asset pass")

        if server.major == 2:
            note("g, h: skipped (no AssetWatcher on 2.x)")
            return
        step_dir = out / "lifecycle_g"
        step_dir.mkdir(parents=True, exist_ok=True)
        assets = server.get(f"{server.api}/assets", limit=PAGE, only_active="false").json()["assets"]
        watched = next(asset for asset in assets if asset["uri"] == "s3://lake/watched")
        key = "scheduled_dags" if "scheduled_dags" in watched else "consuming_dags"
        for ref in watched.get(key, []):
            path = f"{server.api}/dags/{ref['dag_id']}"
            response = server.patch(path, {"is_paused": True})
            rec._save(step_dir, f"patch_{ref['dag_id']}", "PATCH", path, {"is_paused": True}, response)
        server.scheduler_asset_pass()
        rec.snapshot("lifecycle_g", LIFECYCLE_DAGS)
        note(f"g: paused {[ref['dag_id'] for ref in watched.get(key, [])]} (from {key}) + scheduler pass")

        server.dag_processor_pass()
        rec.snapshot("lifecycle_h", LIFECYCLE_DAGS)
        note("h: one more DAG-processor pass")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("versions", nargs="*", default=list(VENVS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", choices=("examples", "lifecycle"))
    args = parser.parse_args()
    failed = []
    for version in args.versions:
        out = args.out / version
        out.mkdir(parents=True, exist_ok=True)
        for name, probe in (("examples", probe_examples), ("lifecycle", probe_lifecycle)):
            if args.only and args.only != name:
                continue
            print(f"{version}: {name}", flush=True)
            try:
                probe(version, out)
            except Exception:
                failed.append(f"{version} {name}")
                (out / f"{name}.error.txt").write_text(traceback.format_exc())
                print(textwrap.indent(traceback.format_exc(), "    "), flush=True)
    if failed:
        print("FAILED:", ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
