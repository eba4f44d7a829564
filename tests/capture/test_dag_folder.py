"""The DAG-folder parse without a server: hostile files are import errors of their own file, the usual
layouts (``.airflowignore``, ``include/`` helpers, zip files) parse as Airflow parses them, and the
DAG code never sees the environment variables withheld from it. Runs on Airflow 3.0 and 3.3.

Every file of one folder is parsed in one call, so the bad ones are shown not to stop the good
ones: the call returns within about the timeout although one file sleeps forever and another
allocates until it fails.
"""

from __future__ import annotations

import os
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from airflow_provider_coremodels.capture.dag_folder import DagFolderError, FolderArtifacts, parse_dag_folder
from airflow_provider_coremodels.core import audit, build_estate

SECRET_NAME = "COREMODELS_TEST_WITHHELD_TOKEN"
SECRET = "s3cr3t-value-the-dag-must-not-see"
#: A small allowance above what the parse server holds: the memory bomb fails fast.
MEMORY = 512 << 20


def dag_file(
    dag_id: str, body: str = "", *, header: str = "", task: str = "EmptyOperator(task_id='t')"
) -> str:
    return textwrap.dedent(
        """\
        from datetime import datetime

        from airflow.providers.standard.operators.empty import EmptyOperator
        from airflow.sdk import DAG, Asset
        {header}
        {body}
        with DAG(dag_id={dag_id!r}, schedule=None, start_date=datetime(2026, 1, 1), description=DESCRIPTION):
            {task}
        """
    ).format(header=header, body=body or "DESCRIPTION = 'fine'", dag_id=dag_id, task=task)


HOSTILE = {
    "sleeps.py": dag_file("sleeps", "import time\nwhile True:\n    time.sleep(1000)\nDESCRIPTION = ''"),
    "exits.py": dag_file("exits", "import os\nos._exit(3)\nDESCRIPTION = ''"),
    "segfaults.py": dag_file("segfaults", "import ctypes\nctypes.string_at(0)\nDESCRIPTION = ''"),
    "hoards.py": dag_file(
        "hoards", "hoard = []\nwhile True:\n    hoard.append(bytearray(64 << 20))\nDESCRIPTION = ''"
    ),
    # deaf to Airflow's own timeout (SIGALRM): only the deadline ends it
    "deaf.py": dag_file(
        "deaf",
        "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "time.sleep(10**6)\nDESCRIPTION = ''",
    ),
    "syntax.py": "from airflow.sdk import DAG\nwith DAG(dag_id='syntax' schedule=None):\n    pass\n",
}
GOOD = {
    # prints the withheld variable, and keeps what it saw where the artifacts show it
    "peeks.py": dag_file(
        "peeks",
        f"import os\nprint(os.environ.get({SECRET_NAME!r}))\n"
        f"DESCRIPTION = 'saw ' + repr(os.environ.get({SECRET_NAME!r}))",
    ),
    "uses_helper.py": dag_file(
        "uses_helper",
        "from include.naming import table_uri\nDESCRIPTION = 'writes ' + table_uri('orders')",
        task="EmptyOperator(task_id='t', outlets=[Asset(table_uri('orders'))])",
    ),
    "reads_helper.py": dag_file(
        "reads_helper", task="EmptyOperator(task_id='t', inlets=[Asset('s3://lake/orders')])"
    ),
    "nested/deeper.py": dag_file("nested_deeper"),
    "ignored/not_parsed.py": dag_file("not_parsed", "raise RuntimeError('an ignored file was parsed')"),
}


@pytest.fixture(scope="module")
def parsed(tmp_path_factory) -> tuple[Path, FolderArtifacts]:
    folder = tmp_path_factory.mktemp("dags")
    for name, text in {**HOSTILE, **GOOD}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    (folder / "include").mkdir()
    (folder / "include" / "__init__.py").write_text("")
    (folder / "include" / "naming.py").write_text("def table_uri(name):\n    return f's3://lake/{name}'\n")
    (folder / ".airflowignore").write_text("ignored/\n")
    with zipfile.ZipFile(folder / "packed.zip", "w") as archive:
        archive.writestr("zipped_dag.py", dag_file("zipped"))
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET_NAME, SECRET)
        artifacts = parse_dag_folder(
            folder, timeout=3, workers=2, memory=MEMORY, withheld_env=[SECRET_NAME], paused={"peeks": True}
        )
    # a bound, not a timing: two files never end by themselves, yet the parse does, near the timeout
    assert time.monotonic() - started < 90
    return folder, artifacts


def test_each_bad_file_is_an_import_error_of_its_own(parsed) -> None:
    _, artifacts = parsed
    # Airflow 3.0 names the file by its absolute path, later lines by its path in the bundle
    errors = {
        os.path.relpath(e["filename"], parsed[0]) if e["filename"].startswith("/") else e["filename"]: e[
            "stack_trace"
        ]
        for e in artifacts.dags["import_errors"]
    }
    assert sorted(errors) == sorted(HOSTILE)
    assert errors["exits.py"] == "the parse of this file exited with code 3"
    assert errors["segfaults.py"] == "the parse of this file was killed by SIGSEGV"
    assert errors["syntax.py"].startswith("SyntaxError")
    assert "MemoryError" in errors["hoards.py"]
    # Airflow's own import timeout fires first, as in the dag-processor; else the deadline ends it
    assert errors["sleeps.py"].endswith(f"DagBag import timeout for {parsed[0] / 'sleeps.py'} after 3.0s.")
    assert errors["deaf.py"] == "the parse of this file timed out after 3 s"
    assert all(e["bundle_name"] == "dags-folder" for e in artifacts.dags["import_errors"])


def test_the_good_files_parse_as_airflow_parses_them(parsed) -> None:
    folder, artifacts = parsed
    dags = {d["dag_id"]: d for d in artifacts.dags["dags"]}
    # .airflowignore keeps ignored/ out; the zip file's DAG is read; include/ imports
    assert sorted(dags) == ["nested_deeper", "peeks", "reads_helper", "uses_helper", "zipped"]
    assert dags["uses_helper"]["description"] == "writes s3://lake/orders"
    assert dags["nested_deeper"]["relative_fileloc"] == "nested/deeper.py"
    assert dags["nested_deeper"]["fileloc"] == str(folder / "nested" / "deeper.py")
    assert dags["zipped"]["fileloc"].startswith(str(folder / "packed.zip"))
    assert artifacts.files == len(HOSTILE) + 5  # the ignored file is not one of them
    assert [t["task_id"] for t in artifacts.tasks["uses_helper"]["tasks"]] == ["t"]
    assert (dags["peeks"]["is_paused"], dags["uses_helper"]["is_paused"]) == (True, True)  # 2nd: at creation
    # the asset the helper names, with its producer and its inlet reader (Airflow 3.1+ lists inlets)
    (asset,) = artifacts.datasets["assets"]
    assert asset["uri"] == "s3://lake/orders"
    assert asset["producing_tasks"] == [{"task_id": "t", "dag_id": "uses_helper"}]
    if "consuming_tasks" in asset:
        assert asset["consuming_tasks"] == [{"task_id": "t", "dag_id": "reads_helper"}]
    assert artifacts.lines["uses_helper"] == 8 and "zipped" not in artifacts.lines


def test_the_dag_code_cannot_see_a_withheld_variable(parsed) -> None:
    _, artifacts = parsed
    (peeks,) = [d for d in artifacts.dags["dags"] if d["dag_id"] == "peeks"]
    assert peeks["description"] == "saw None"
    assert SECRET not in repr(artifacts)


def test_the_artifacts_build_an_estate_whose_findings_name_the_broken_files(parsed) -> None:
    _, artifacts = parsed
    estate = build_estate(artifacts.dags, artifacts.tasks, artifacts.datasets)
    codes = {(f.code, f.subject) for f in audit(estate).findings}
    assert {("dag-import-error", f"dags-folder/{name}") for name in HOSTILE} <= codes
    messages = [r.message for r in artifacts.lossiness]
    assert any(m.startswith("paused flags of 4 DAGs the baseline does not know") for m in messages)


def test_deployed_root_names_the_files_where_the_deployment_has_them(tmp_path) -> None:
    (tmp_path / "one.py").write_text(dag_file("one"))
    artifacts = parse_dag_folder(tmp_path, deployed_root="/opt/airflow/dags/", bundle="team-a", timeout=20)
    (dag,) = artifacts.dags["dags"]
    assert (dag["fileloc"], dag["bundle_name"]) == ("/opt/airflow/dags/one.py", "team-a")
    assert artifacts.dags["import_errors"] == [] and artifacts.files == 1


def test_a_folder_that_is_not_there_is_one_clear_error(tmp_path) -> None:
    with pytest.raises(DagFolderError, match="is not a directory"):
        parse_dag_folder(tmp_path / "missing")


def test_airflowignore_in_regexp_syntax_is_read_as_airflow_reads_it(tmp_path, monkeypatch) -> None:
    """``[core] dag_ignore_file_syntax = regexp``: each line a regular expression over the path."""
    (tmp_path / "kept.py").write_text(dag_file("kept"))
    (tmp_path / "scratch_one.py").write_text(dag_file("scratch_one", "raise RuntimeError('parsed')"))
    (tmp_path / ".airflowignore").write_text("scratch_.*\n")
    monkeypatch.setenv("AIRFLOW__CORE__DAG_IGNORE_FILE_SYNTAX", "regexp")
    artifacts = parse_dag_folder(tmp_path, timeout=20)
    assert [d["dag_id"] for d in artifacts.dags["dags"]] == ["kept"]
    assert (artifacts.files, artifacts.dags["import_errors"]) == (1, [])


@pytest.mark.parametrize(
    ("airflow_version", "said"),
    [
        ("3.0.6", "Airflow 3.0.6 has no deadline alerts"),
        ("3.2.2", "Airflow 3.2.2 shows a DAG's deadline alerts in no endpoint"),
        ("3.3.2", None),
    ],
)
def test_a_parse_says_what_a_capture_of_its_line_says_of_deadline_alerts(airflow_version, said) -> None:
    """Run with an Airflow before 3.3 the parse gives no deadline alerts (a capture of such a
    deployment cannot read them, and the two doors must agree), and the same record says so."""
    from airflow_provider_coremodels.capture.dag_folder import _records

    records = [
        r.message for r in _records({"airflow_version": airflow_version}, False) if "deadline" in r.message
    ]
    assert [m.split(" (")[0] for m in records] == ([f"deadline alerts unknown: {said}"] if said else [])
