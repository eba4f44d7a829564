"""``--format sarif|markdown``, ``--waivers`` and ``lineage`` on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from support.helpers import CLI_GROUP, REPO, SARIF_SCHEMA, artifact_paths, dense_artifacts

from airflow_provider_coremodels.cli.main import main
from airflow_provider_coremodels.core.views.layout import MAX_EDGES

REAL = artifact_paths("airflow3")
REAL_ARGS = ["--dags", str(REAL["dags"]), "--tasks", str(REAL["tasks"]), "--datasets", str(REAL["datasets"])]
SCHEMA = json.loads(SARIF_SCHEMA.read_text())


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def waiver_file(tmp_path: Path, text: str, name: str = "waivers.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_sarif_on_stdout_validates(capsys) -> None:
    code, out, err = run(capsys, "audit", *REAL_ARGS, "--format", "sarif", "--source-root", "dags")
    assert (code, err) == (0, "")
    sarif = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    locations = {
        (r["ruleId"], loc["physicalLocation"]["artifactLocation"]["uri"])
        for r in sarif["runs"][0]["results"]
        for loc in r["locations"]
    }
    assert ("dag-no-owner", "dags/legacy.py") in locations


def test_markdown_report(capsys) -> None:
    code, out, _ = run(capsys, "audit", *REAL_ARGS, "--format", "markdown", "--fail-on", "warning")
    assert code == 1
    assert out.startswith("## CoreModels audit of the Airflow estate\n")
    assert "```mermaid\nflowchart LR" in out


def test_waivers_mark_findings_and_release_fail_on(tmp_path: Path, capsys) -> None:
    path = waiver_file(
        tmp_path,
        """
- {code: dag-no-owner, subject: "legacy_*", reason: ops owns it, expires: 2999-12-31}
- {code: asset-unproduced, subject: "s3://vendor/*", reason: the vendor drops it}
- {code: paused-producer, subject: "*", reason: orders are being migrated}
""",
    )
    code, out, err = run(
        capsys, "audit", *REAL_ARGS, "--waivers", path, "--format", "json", "--fail-on", "warning"
    )
    assert (code, err) == (0, "")  # every warning is waived; the one Info does not reach --fail-on
    waived = {f["code"]: f["waived"] for f in json.loads(out)["findings"] if f.get("waived")}
    assert waived == {
        "dag-no-owner": {"reason": "ops owns it", "expires": "2999-12-31"},
        "asset-unproduced": {"reason": "the vendor drops it", "expires": None},
        "paused-producer": {"reason": "orders are being migrated", "expires": None},
    }
    code, out, _ = run(capsys, "audit", *REAL_ARGS, "--waivers", path, "--fail-on", "info")
    assert code == 1  # dag-no-description is not waived
    assert "findings: 1 (1 Info); 3 waived" in out
    assert "owners: airflow; waived: ops owns it, until 2999-12-31" in out


def test_an_expired_waiver_is_a_finding_that_fails_a_run(tmp_path: Path, capsys) -> None:
    path = waiver_file(
        tmp_path,
        '[{"code": "dag-no-owner", "subject": "legacy_*", "reason": "r", "expires": "2001-01-01"}]',
        "w.json",
    )
    code, out, _ = run(
        capsys, "audit", *REAL_ARGS, "--waivers", path, "--format", "json", "--fail-on", "warning"
    )
    assert code == 1
    expired = [f for f in json.loads(out)["findings"] if f["code"] == "waiver-expired"]
    assert [(f["section"], f["severity"], f["subject"]) for f in expired] == [
        ("Waivers", "Warning", "dag-no-owner legacy_*")
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- {code: dag-no-owner, reason: r}", "waivers[0].subject must be a non-empty string"),
        ("- {code: nope, subject: x, reason: r}", "waivers[0].code 'nope' is not a finding code"),
        ("[unclosed", "is not valid YAML or JSON at line 1"),
    ],
)
def test_a_malformed_waiver_file_is_exit_2_naming_file_and_problem(
    tmp_path: Path, capsys, text: str, message: str
) -> None:
    path = waiver_file(tmp_path, text)
    for command in ("audit", "lineage"):
        code, out, err = run(capsys, command, *REAL_ARGS, "--waivers", path)
        assert (code, out) == (2, "")
        assert err.startswith(f"error: waiver file {path} ")
        assert message in err and err.count("\n") == 1


def test_a_missing_waiver_file_is_exit_2(capsys) -> None:
    code, _, err = run(capsys, "audit", *REAL_ARGS, "--waivers", "no/such/waivers.yaml")
    assert code == 2
    assert err == "error: waiver file no/such/waivers.yaml cannot be read: No such file or directory\n"


def test_lineage_mermaid_and_dot(capsys) -> None:
    code, out, err = run(capsys, "lineage", *REAL_ARGS)
    assert (code, err) == (0, "")
    assert out.startswith("flowchart LR\n")
    assert '[("s3://lake/orders.parquet (1 finding)")]' in out and '["load_orders (paused)"]' in out
    code, out, _ = run(
        capsys, "lineage", *REAL_ARGS, "--format", "dot", "--around", "load_orders", "--depth", "1"
    )
    assert code == 0
    assert out.splitlines()[1] == "  // 1 DAG, 0 external DAGs, 1 asset, 1 edge"
    assert '"dag:load_orders" -> "asset:s3://lake/orders.parquet";' in out


@pytest.mark.parametrize(
    ("argv", "query"),
    [
        pytest.param([], {}, id="whole"),
        pytest.param(
            ["--around", "load_orders", "--depth", "1"], {"around": "load_orders", "depth": "1"}, id="around"
        ),
    ],
)
def test_lineage_svg_is_the_picture_the_ui_page_draws(
    tmp_path: Path, capsys, argv: list[str], query: dict[str, str]
) -> None:
    """`lineage --format svg` of a stored snapshot writes the very <svg> the page embeds for it."""
    from airflow_provider_coremodels.ui.page import render_snapshot_page

    snapshot = tmp_path / "latest.json"
    _, out, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json")
    snapshot.write_text(out)
    code, svg, err = run(capsys, "lineage", "--snapshot", str(snapshot), "--format", "svg", *argv)
    assert (code, err) == (0, "")
    page = render_snapshot_page(json.loads(out), source=str(snapshot), **query)
    start = page.index('<svg xmlns="http://www.w3.org/2000/svg" class="coremodels-lineage"')
    assert svg == page[start : page.index("</svg>", start) + len("</svg>")] + "\n"


def test_lineage_around_an_unknown_id_suggests_the_nearest_names(capsys) -> None:
    code, _, err = run(capsys, "lineage", *REAL_ARGS, "--around", "daily_revenu")
    assert code == 2
    assert err == (
        "error: --around: no DAG or asset named 'daily_revenu' in the lineage;"
        " did you mean 'daily_revenue'?\n"
    )
    _, _, err = run(capsys, "lineage", *REAL_ARGS, "--around", "orders.parquet", "--format", "svg")
    assert err.endswith("; did you mean 's3://lake/orders.parquet'?\n")
    _, _, err = run(capsys, "lineage", *REAL_ARGS, "--around", "nosuchdag")
    assert err == "error: --around: no DAG or asset named 'nosuchdag' in the lineage\n"  # nothing near


def test_lineage_around_a_neighbourhood_over_the_cap_cuts_it_and_says_so(tmp_path: Path, capsys) -> None:
    dags = {"dags": [{"dag_id": "producer", "owners": ["t"], "description": "d", "is_paused": False}]}
    dags["dags"] += [
        {"dag_id": f"consumer_{i:03}", "owners": ["t"], "description": "d", "is_paused": False}
        for i in range(400)
    ]
    hub = {
        "uri": "s3://lake/hub",
        "producing_tasks": [{"dag_id": "producer", "task_id": "t"}],
        "scheduled_dags": [{"dag_id": f"consumer_{i:03}"} for i in range(400)],
    }
    (tmp_path / "dags.json").write_text(json.dumps(dags))
    (tmp_path / "datasets.json").write_text(json.dumps({"assets": [hub]}))
    inputs = ["--dags", str(tmp_path / "dags.json"), "--datasets", str(tmp_path / "datasets.json")]
    code, out, err = run(capsys, "lineage", *inputs, "--around", "s3://lake/hub", "--depth", "1")
    assert code == 0
    assert out.splitlines()[1] == "  %% 299 DAGs, 0 external DAGs, 1 asset, 299 edges"
    assert err.startswith(
        "note: The neighbourhood of 's3://lake/hub' at depth 1 holds more than the 300 nodes"
    )
    code, out, err = run(capsys, "lineage", *inputs, "--format", "svg")  # the whole estate: 402 nodes
    assert code == 0 and out.count('<g class="node') == 300
    assert err.startswith("note: The whole estate has 402 nodes, over the 300 one picture draws")


def test_lineage_reads_a_stored_snapshot_and_applies_waivers(tmp_path: Path, capsys) -> None:
    snapshot = tmp_path / "snapshot.json"
    _, out, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json")
    snapshot.write_text(out)
    path = waiver_file(tmp_path, "- {code: paused-producer, subject: '*', reason: migrating}")
    code, out, _ = run(capsys, "lineage", "--snapshot", str(snapshot), "--waivers", path)
    assert code == 0
    assert '[("s3://lake/orders.parquet")]' in out  # its one finding is waived: no mark


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["lineage", *REAL_ARGS, "--around", "nope"],
            "error: --around: no DAG or asset named 'nope' in the lineage",
        ),
        (["lineage"], "error: lineage needs --dags F"),
        (["lineage", *REAL_ARGS, "--format", "png"], "argument --format: invalid choice"),
        (["lineage", *REAL_ARGS, "--depth", "-1"], "argument --depth: expected a depth from 0 to 50"),
    ],
)
def test_lineage_usage_errors(capsys, argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert message in err and err.count("\n") == 1


def test_lineage_of_a_snapshot_over_the_cap_is_exit_2(tmp_path: Path, capsys) -> None:
    _, out, _ = run(capsys, "audit", *REAL_ARGS, "--format", "json", "--max-snapshot-bytes", "100")
    document = json.loads(out)
    stored = {k: v for k, v in document.items() if k not in ("datasets", "lineage")}
    (tmp_path / "s.json").write_text(json.dumps(stored))
    code, _, err = run(capsys, "lineage", "--snapshot", str(tmp_path / "s.json"))
    assert code == 2
    assert "was stored without datasets and lineage" in err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["audit", *REAL_ARGS, "--format", "sarif"], id="sarif"),
        pytest.param(["lineage", *REAL_ARGS, "--format", "dot"], id="lineage-dot"),
        pytest.param(["lineage", *REAL_ARGS, "--format", "svg"], id="lineage-svg"),
    ],
)
@CLI_GROUP
def test_both_front_doors_agree(tmp_path: Path, argv: list[str]) -> None:
    env = {"AIRFLOW_HOME": str(tmp_path / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    airflow = str(Path(sys.executable).with_name("airflow"))
    results = [
        subprocess.run(c, capture_output=True, cwd=REPO, env={**os.environ, **env}, timeout=120)
        for c in (
            [sys.executable, "-m", "airflow_provider_coremodels", *argv],
            [airflow, "coremodels", *argv],
        )
    ]
    assert results[0].returncode == results[1].returncode == 0
    assert results[0].stdout == results[1].stdout


def test_lineage_svg_of_a_dense_estate_is_bounded_and_says_what_it_left_out(tmp_path: Path, capsys) -> None:
    """300 nodes and 3,000 edges (issue 34: not drawn in 120 s): the picture keeps to the layout's
    limits, and both the picture (its caption) and stderr say what it left out."""
    docs = dense_artifacts("3000")
    (tmp_path / "dags.json").write_text(json.dumps(docs["dags"]))
    (tmp_path / "datasets.json").write_text(json.dumps(docs["datasets"]))
    inputs = ["--dags", str(tmp_path / "dags.json"), "--datasets", str(tmp_path / "datasets.json")]
    code, out, err = run(capsys, "lineage", *inputs, "--format", "svg")
    assert code == 0
    assert err.startswith("note: The whole estate has 3,000 edges, over the 600 one picture draws")
    assert "is too dense for one picture" in err and len(err.splitlines()) == 1
    assert 0 < out.count('<g class="node') <= 300 and 0 < out.count('<path class="edge') <= MAX_EDGES
    assert '<text class="caption"' in out and "Pick a DAG or asset to draw what surrounds it." in out
    code, out, err = run(capsys, "lineage", *inputs, "--format", "svg", "--around", "dag_000", "--depth", "6")
    assert code == 0 and err.startswith("note: The neighbourhood of 'dag_000' at depth 6 ")
    assert '<text class="caption"' in out
