"""The pre-merge gate on what a change breaks (``--fail-on-break``), and every view of one run
(``--output FORMAT=PATH``), through ``python -m airflow_provider_coremodels`` and Airflow's own parse.

No server: the baseline is the document a parse of the folder before the change gives, with new DAGs
unpaused at creation (as a deployment that runs its DAGs has them); each pull request is a copy of
that folder, changed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.helpers import REPO, SARIF_SCHEMA

LOAD = """
    import pendulum
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.sdk import DAG, Asset

    with DAG("load_orders", schedule="@daily", start_date=pendulum.datetime(2026, 1, 1),
             description="Loads the orders", default_args={"owner": "ingest"}, catchup=False):
        EmptyOperator(task_id="publish", outlets=[Asset("s3://lake/orders")])
"""
REVENUE = """
    import pendulum
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.sdk import DAG, Asset

    with DAG("daily_revenue", schedule=[Asset("s3://lake/orders")], start_date=pendulum.datetime(2026, 1, 1),
             description="Sums the revenue", default_args={"owner": "finance"}, catchup=False):
        EmptyOperator(task_id="compute")
"""
RUNNING = {"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "airflow_provider_coremodels", "audit", *argv]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, timeout=300, env={**os.environ, **(env or {})}
    )


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The folder as deployed, and the baseline its parse gives."""
    root = tmp_path_factory.mktemp("deployed")
    folder = root / "dags"
    (folder / "ingest").mkdir(parents=True)
    (folder / "ingest" / "load_orders.py").write_text(textwrap.dedent(LOAD).lstrip())
    (folder / "revenue.py").write_text(textwrap.dedent(REVENUE).lstrip())
    parsed = run("--dag-folder", str(folder), "--format", "json", env=RUNNING)
    assert parsed.returncode == 0, parsed.stderr
    baseline = root / "baseline.json"
    baseline.write_text(parsed.stdout)
    return folder, baseline


def pull_request(deployed: tuple[Path, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(deployed[0], tmp_path / "pr"))


def judged(deployed: tuple[Path, Path], folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    result = run("--dag-folder", str(folder), "--baseline", str(deployed[1]), *argv, env=RUNNING)
    assert "Traceback" not in result.stderr
    return result


def test_a_deleted_producer_fails_on_break_where_fail_on_new_error_lets_it_through(
    deployed: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 43 item 1: the producer another team consumes, deleted, opens only Warnings."""
    folder = pull_request(deployed, tmp_path)
    (folder / "ingest" / "load_orders.py").unlink()
    assert judged(deployed, folder, "--fail-on-new", "error").returncode == 0
    result = judged(deployed, folder, "--fail-on-break", "--fail-on-new", "error", "--format", "json")
    assert result.returncode == 1, result.stderr
    change = json.loads(result.stdout)["change"]
    assert change["breaks"] == [
        {
            "finding": {"code": "asset-unproduced", "subject": "s3://lake/orders"},
            "dependent": "daily_revenue",
            "owners": ["finance"],
            "team": None,
            "through": "s3://lake/orders",
        }
    ]
    table = judged(deployed, folder, "--fail-on-break").stdout.splitlines()
    assert table[1].startswith("isolation: the DAG code ran in ")  # said second, before what it breaks
    assert table[2] == "breaks: daily_revenue (finance) through s3://lake/orders: Warning asset-unproduced"


def test_a_renamed_task_and_a_moved_file_pass_the_gate(deployed: tuple[Path, Path], tmp_path: Path) -> None:
    renamed = pull_request(deployed, tmp_path / "renamed")
    path = renamed / "ingest" / "load_orders.py"
    path.write_text(path.read_text().replace('"publish"', '"publish_orders"'))
    result = judged(deployed, renamed, "--fail-on-break", "--format", "json")
    assert result.returncode == 0, result.stderr
    change = json.loads(result.stdout)["change"]
    assert (change["dagsChanged"], change["breaks"], change["affected"]) == (["load_orders"], [], [])

    moved = pull_request(deployed, tmp_path / "moved")
    (moved / "orders").mkdir()
    (moved / "ingest" / "load_orders.py").rename(moved / "orders" / "load_orders.py")
    result = judged(deployed, moved, "--fail-on-break")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].endswith(
        "no change: the folder parses to the estate the baseline holds"
    )


def test_one_run_writes_every_view_and_exits_as_the_gate_says(
    deployed: tuple[Path, Path], tmp_path: Path
) -> None:
    folder = pull_request(deployed, tmp_path)
    (folder / "ingest" / "load_orders.py").unlink()
    out = tmp_path / "out"
    out.mkdir()
    names = {"json": "doc.json", "sarif": "x.sarif", "markdown": "report.md", "table": "t.txt"}
    argv = [f"{view}={out / name}" for view, name in names.items()]
    result = judged(
        deployed,
        folder,
        "--fail-on-break",
        "--source-root",
        "dags",
        *(a for v in argv for a in ("--output", v)),
    )
    assert result.returncode == 1, result.stderr  # the gate's code: the change breaks daily_revenue
    assert result.stdout == (out / "t.txt").read_text()  # stdout keeps --format (table)
    document = json.loads((out / "doc.json").read_text())
    assert [b["dependent"] for b in document["change"]["breaks"]] == ["daily_revenue"]
    sarif = json.loads((out / "x.sarif").read_text())
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("## This change\n") and "### Breaks (1)" in markdown
    assert sorted(p.name for p in out.iterdir()) == [
        "doc.json",
        "report.md",
        "t.txt",
        "x.sarif",
    ]  # no leftovers


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("yaml=out.yaml", "FORMAT one of json, sarif, markdown, table, got 'yaml=out.yaml'"),
        ("json", "expected FORMAT=PATH"),
        ("json=/no/d/doc.json", "--output json=/no/d/doc.json: directory /no/d does not exist"),
        ("json=.", "--output json=.: is a directory"),
    ],
)  # fmt: skip
def test_a_bad_output_is_one_line_and_exit_2_before_any_parse(tmp_path: Path, value: str, says: str) -> None:
    folder = tmp_path / "dags"
    folder.mkdir()
    (folder / "hangs.py").write_text("# airflow DAG\nimport time\ntime.sleep(600)\n")  # never reached
    started = time.monotonic()
    result = run("--dag-folder", str(folder), "--output", value)
    assert time.monotonic() - started < 25  # not the hanging file's parse timeout (30 s)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr


def test_fail_on_break_goes_with_dag_folder() -> None:
    result = run("--example", "--fail-on-break")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "--fail-on-break goes with --dag-folder" in result.stderr


def test_output_writes_the_views_of_an_audit_of_artifacts_too(tmp_path: Path) -> None:
    target = tmp_path / "report.md"
    result = run("--example", "--format", "json", "--output", f"markdown={target}")
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    assert target.read_text().startswith("## CoreModels audit of the Airflow estate")
    assert f"fingerprint `{document['fingerprint']}`" in target.read_text()  # the same run's document


# -- where SARIF points the findings a change opens (contract 10.2, issue 43 item 4) -------------

LOCATED = {
    "ingest/load_orders.py": """
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG, Asset

        with DAG("load_orders", schedule="@daily", start_date=pendulum.datetime(2026, 1, 1),
                 description="Loads the orders", default_args={"owner": "ingest"}, catchup=False):
            EmptyOperator(
                task_id="publish",
                outlets=[Asset("s3://lake/orders")],
            )
    """,
    "revenue.py": """
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG, Asset

        with DAG("daily_revenue", start_date=pendulum.datetime(2026, 1, 1),
                 description="Sums the revenue", default_args={"owner": "finance"}, catchup=False,
                 schedule=[Asset("s3://lake/orders")]):
            EmptyOperator(task_id="compute")
    """,
    "report.py": """
        import pendulum
        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG
        from include.helpers import RECIPIENTS

        with DAG("board_report", schedule="@weekly", start_date=pendulum.datetime(2026, 1, 1),
                 description="Tells the board", default_args={"owner": "board"}, catchup=False):
            EmptyOperator(task_id="send", doc=",".join(RECIPIENTS))
    """,
    "include/__init__.py": "",
    "include/helpers.py": """
        RECIPIENTS = ["board@example.com"]
    """,
}


@pytest.fixture(scope="module")
def located(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A folder whose declarations lie on lines of their own, and the baseline its parse gives."""
    root = tmp_path_factory.mktemp("located")
    folder = root / "dags"
    for name, text in LOCATED.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    parsed = run("--dag-folder", str(folder), "--format", "json", env=RUNNING)
    assert parsed.returncode == 0, parsed.stderr
    baseline = root / "baseline.json"
    baseline.write_text(parsed.stdout)
    return folder, baseline


def opened_at(deployed: tuple[Path, Path], folder: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Each opened finding's SARIF locations, by (code, subject)."""
    result = judged(deployed, folder, "--format", "sarif", "--source-root", "dags")
    assert result.returncode == 0, result.stderr
    sarif = json.loads(result.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(sarif)
    opened = [r for r in sarif["runs"][0]["results"] if r["properties"].get("change") == "opened"]
    for r in opened:  # every one has a file code scanning can show (a logical location alone fails upload)
        assert r["locations"] and all("physicalLocation" in loc for loc in r["locations"]), r
    return {
        (r["ruleId"], r["properties"]["subject"]): [loc["physicalLocation"] for loc in r["locations"]]
        for r in opened
    }


def at(uri: str, line: int | None = None) -> dict[str, Any]:
    return {"artifactLocation": {"uri": uri}, **({"region": {"startLine": line}} if line else {})}


def test_a_dropped_outlet_points_at_the_consumers_reference_and_the_producer(
    located: tuple[Path, Path], tmp_path: Path
) -> None:
    """The asset left with no producer is shown where its consumer still schedules on it (line 7,
    not its DAG(...) on line 5); the removed edge at the producer that dropped it."""
    folder = pull_request(located, tmp_path)
    path = folder / "ingest" / "load_orders.py"
    path.write_text(path.read_text().replace('outlets=[Asset("s3://lake/orders")],', ""))
    found = opened_at(located, folder)
    assert found[("asset-unproduced", "s3://lake/orders")] == [at("dags/revenue.py", 7)]
    assert found[("lineage-removed", "load_orders -> s3://lake/orders")] == [
        at("dags/ingest/load_orders.py", 5)
    ]


def test_an_import_error_in_a_helper_points_at_the_dag_files_import_of_it(
    located: tuple[Path, Path], tmp_path: Path
) -> None:
    """The error is raised in include/helpers.py (no DAG file): the innermost frame in the DAG file
    is its import on line 4, not line 1."""
    folder = pull_request(located, tmp_path)
    (folder / "include" / "helpers.py").write_text(
        'RECIPIENTS = ["board@example.com"]\nraise KeyError("smtp")\n'
    )
    found = opened_at(located, folder)
    assert found == {("dag-import-error", "dags-folder/report.py"): [at("dags/report.py", 4)]}


def test_a_deleted_producer_points_at_the_consumer_and_names_the_deleted_file(
    located: tuple[Path, Path], tmp_path: Path
) -> None:
    """The asset the deleted DAG made is shown at its consumer's reference; the DAG itself, which no
    line of the work tree names, at the file the change deleted, as a whole (no region)."""
    folder = pull_request(located, tmp_path)
    (folder / "ingest" / "load_orders.py").unlink()
    found = opened_at(located, folder)
    assert found[("asset-unproduced", "s3://lake/orders")] == [at("dags/revenue.py", 7)]
    assert found[("dataset-removed", "load_orders")] == [at("dags/ingest/load_orders.py")]
