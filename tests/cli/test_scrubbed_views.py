"""Every view of an audit whose import errors quote credentials shows none of them (issue 34).

The dags artifact is the recorded Airflow 3 estate's with one import error per shape of
``support/secret_shapes.py``, a description, a DAG warning and a capture lossiness record
quoting credentials (what the REST capture or a DAG folder's parse hands the core). Each view
must keep the broken file and its exception type, and lose the secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import artifact_paths
from support.secret_shapes import INNOCENT, SHAPES, leaks, shape_file, traceback_of, with_leaky_errors

from airflow_provider_coremodels.cli.main import main


@pytest.fixture
def leaky_dags(tmp_path: Path) -> Path:
    path = tmp_path / "dags.json"
    path.write_text(
        json.dumps(with_leaky_errors(json.loads(artifact_paths("airflow3")["dags"].read_bytes())))
    )
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert leaks(err) == []
    return out


def readable(out: str, fmt: str) -> str:
    """The text as a reader reads it: JSON's and markdown's escapes undone (so an escaped secret is
    found too)."""
    if fmt in ("json", "sarif"):
        return out.replace('\\"', '"').replace("\\\\", "\\")
    if fmt == "markdown":
        return out.replace("`", "").replace("\\_", "_").replace("\\*", "*").replace("\\|", "|")
    return out


@pytest.mark.parametrize("fmt", ["table", "json", "sarif", "markdown"])
def test_each_view_keeps_the_failure_and_loses_the_secret(
    fmt: str, leaky_dags: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = artifact_paths("airflow3")
    out = run(
        capsys, "audit", "--dags", str(leaky_dags), "--tasks", str(paths["tasks"]),
        "--datasets", str(paths["datasets"]), "--format", fmt,
    )  # fmt: skip
    shown = readable(out, fmt)
    assert leaks(shown) == []
    missing = [s.name for s in SHAPES if shape_file(s) not in shown or s.kept not in shown]
    assert missing == []
    assert "***" in shown


def test_the_lineage_views_and_openlineage_events_lose_the_secret(
    leaky_dags: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The drawings name DAGs and assets; the OpenLineage events carry the description."""
    pytest.importorskip("openlineage.client")
    paths = artifact_paths("airflow3")
    inputs = ("--dags", str(leaky_dags), "--tasks", str(paths["tasks"]), "--datasets", str(paths["datasets"]))
    for fmt in ("mermaid", "dot"):
        assert leaks(run(capsys, "lineage", *inputs, "--format", fmt)) == []
    events = run(capsys, "audit", *inputs, "--format", "openlineage")
    assert leaks(events) == []
    assert "postgresql://etl:***@db/dw" in events  # the description, scrubbed, still documents the job


def test_ordinary_import_errors_are_shown_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No over-scrubbing: ``tokenizer.py``, ``password_reset_dag``, ``KeyError: 'api_key'`` stay."""
    dags = json.loads(artifact_paths("airflow3")["dags"].read_bytes())
    dags["import_errors"] = [
        {"import_error_id": n, "filename": f"innocent_{n}.py", "stack_trace": traceback_of(line, "x.py")}
        for n, line in enumerate(INNOCENT)
    ]
    (tmp_path / "dags.json").write_text(json.dumps(dags))
    document = json.loads(run(capsys, "audit", "--dags", str(tmp_path / "dags.json"), "--format", "json"))
    shown = {e["file"]: e["error"] for e in document["importErrors"]}
    assert shown == {f"innocent_{n}.py": line for n, line in enumerate(INNOCENT)}
