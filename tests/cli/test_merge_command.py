"""``merge``: stored snapshots of several deployments, as one audited estate (both front doors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.test_audit_command import front_doors, run
from support.helpers import CLI_GROUP, document_for

from airflow_provider_coremodels.sinks import FileSink


def dag(dag_id: str, *, paused: bool = False, schedule: str = "0 5 * * *") -> dict:
    return {"dag_id": dag_id, "description": dag_id, "owners": ["team"], "is_paused": paused,
            "timetable_summary": schedule}  # fmt: skip


def snapshot(path: Path, deployment: str | None, dags: list[dict], assets: list[dict], **state) -> Path:
    document = document_for(dags, {d["dag_id"]: [] for d in dags}, {"assets": assets}, served=True)
    document["state"].update(deployment=deployment, **state)
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def etl(tmp_path: Path) -> Path:
    """A file sink's directory: the producer of the orders, paused, captured a day ago."""
    document = json.loads(
        snapshot(tmp_path / "etl.json", "etl", [dag("load_orders", paused=True)],
                 [{"uri": "s3://lake/orders", "producing_tasks": [{"dag_id": "load_orders"}]}],
                 capturedAt="2026-11-30T06:00:00Z").read_text()
    )  # fmt: skip
    FileSink(tmp_path / "etl").push(document)  # a plain source is named by its location: etl
    return tmp_path / "etl"


@pytest.fixture
def bi(tmp_path: Path) -> Path:
    """A document that names no deployment: its consumer of the orders, active."""
    return snapshot(tmp_path / "bi.json", None, [dag("daily_revenue", schedule="Asset")],
                    [{"uri": "s3://lake/orders", "scheduled_dags": [{"dag_id": "daily_revenue"}]}],
                    capturedAt="2026-12-01T06:00:00Z")  # fmt: skip


def test_merge_finds_what_no_single_deployment_shows(capsys, etl: Path, bi: Path) -> None:
    code, out, err = run(capsys, "merge", str(etl), f"bi={bi}", "--format", "json", "--fail-on", "warning")
    assert (code, err) == (1, "")
    document = json.loads(out)
    assert [(f["code"], f["detail"]) for f in document["findings"] if f["section"] == "Conformance"] == [
        ("paused-producer", "producers: etl/load_orders; active consumers: bi/daily_revenue")
    ]
    assert document["state"]["deployments"] == ["bi", "etl"]
    assert all(edge["crossDeployment"] for edge in document["lineage"])


def test_merge_runs_the_teams_rules_on_the_merged_estate(capsys, tmp_path: Path, etl: Path, bi: Path) -> None:
    """A policy finding's subject is the merged identity; the deployment scope picks one deployment's
    DAGs; a malformed file is refused before any snapshot is read."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n  - code: policy-tagged\n    require: {tag: 'team:*'}\n"
        "  - code: policy-etl-manual\n    require: {schedule: false}\n    where: {deployment: etl}\n"
    )
    code, out, err = run(capsys, "merge", str(etl), f"bi={bi}", "--rules", str(rules), "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert [
        (f["code"], f["subject"], f["detail"]) for f in document["findings"] if f["section"] == "Policy"
    ] == [
        ("policy-etl-manual", "etl/load_orders", "schedule: 0 5 * * *"),
        ("policy-tagged", "bi/daily_revenue", "tags: none"),
        ("policy-tagged", "etl/load_orders", "tags: none"),
    ]
    rules.write_text("rules: [{code: policy-x, require: {tag: x}, where: {deployment: ''}}]\n")
    code, out, err = run(capsys, "merge", str(etl), "bi=/nonexistent.json", "--rules", str(rules))
    assert (code, out) == (2, "")
    assert err == f"error: rules file {rules} rules[0].where.deployment must be a non-empty string\n"


def test_an_old_snapshot_is_merged_and_named(capsys, etl: Path, bi: Path) -> None:
    code, out, _ = run(capsys, "merge", str(etl), f"bi={bi}", "--stale-before", "2026-12-01T00:00:00Z")
    assert code == 0
    assert (
        "snapshot: deployment etl: not captured since 2026-12-01T00:00:00Z; its last good snapshot "
        "(from 2026-11-30T06:00:00Z, 24 hours old) stands in for it"
    ) in out


def test_a_plain_source_is_named_by_its_location_never_by_its_document(
    capsys, tmp_path: Path, etl: Path, bi: Path
) -> None:
    """A document naming itself as another deployment takes over nothing: the caller's list names
    every deployment (NAME=PATH, else the path), and the claim is a record beside it."""
    impostor = snapshot(
        tmp_path / "impostor.json", "etl", [dag("intruder")], [], capturedAt="2026-12-01T06:00:00Z"
    )
    code, out, err = run(capsys, "merge", str(etl), f"bi={bi}", str(impostor), "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["state"]["deployments"] == ["bi", "etl", "impostor"]
    assert "impostor/intruder" in {d["identity"] for d in document["datasets"]}
    assert any(
        r["message"].startswith("deployment impostor: the snapshot at")
        and "names itself 'etl'" in r["message"]
        for r in document["lossiness"]
    )


def test_a_capture_time_in_the_future_is_clamped_to_the_merges_clock(
    capsys, tmp_path: Path, etl: Path
) -> None:
    """A part that says it was captured in 9999 moves no judging time there, and says so."""
    future = snapshot(tmp_path / "future.json", None, [dag("later")], [], capturedAt="9999-12-31T23:59:59Z")
    code, out, err = run(capsys, "merge", str(etl), str(future), "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["state"]["capturedAt"] < "2100"
    assert (document["freshness"]["judgedAt"] or "") < "2100", document["freshness"]
    assert any(
        "captured at 9999-12-31T23:59:59Z, after the merge's clock" in r["message"]
        for r in document["lossiness"]
    )


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("bi=https://coremodels.example/api/snapshots", "an HTTP endpoint keeps no snapshot to read back"),
        ("bi=openlineage://", "an OpenLineage sink keeps no snapshot to read back"),
    ],
)
def test_a_sink_that_keeps_nothing_is_no_source(capsys, etl: Path, source: str, says: str) -> None:
    code, out, err = run(capsys, "merge", str(etl), source)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and says in err


def test_two_snapshots_of_one_deployment_are_refused(capsys, etl: Path) -> None:
    code, _, err = run(capsys, "merge", str(etl), str(etl))
    assert code == 2
    assert "deployment etl is given twice" in err


def test_a_sink_s_stored_files_are_named_after_the_sink(capsys, tmp_path: Path, etl: Path, bi: Path) -> None:
    """Issue 37: ``merge a/latest.json b/latest.json`` names each deployment after its sink's
    directory, as the directories themselves would be (not ``latest``, given twice); a history
    entry too; a plain document keeps its own name."""
    FileSink(tmp_path / "bi_sink").push(json.loads(bi.read_text()))
    [entry] = (etl / "history").glob("*.json")
    for sources in (
        [str(etl / "latest.json"), str(tmp_path / "bi_sink" / "latest.json")],
        [str(entry), str(tmp_path / "bi_sink" / "latest.json")],
    ):
        code, out, err = run(capsys, "merge", *sources, "--format", "json")
        assert (code, err) == (0, ""), sources
        document = json.loads(out)
        assert document["state"]["deployments"] == ["bi_sink", "etl"], sources
        assert not [r for r in document["lossiness"] if "names itself" in r["message"]]  # etl is etl
    code, out, _ = run(capsys, "merge", str(etl / "latest.json"), str(bi), "--format", "json")
    assert code == 0 and json.loads(out)["state"]["deployments"] == ["bi", "etl"]


@CLI_GROUP
def test_both_front_doors_merge_alike(tmp_path: Path, etl: Path, bi: Path) -> None:
    module, airflow = front_doors(tmp_path, "merge", str(etl), f"bi={bi}")
    assert (module.returncode, module.stdout) == (airflow.returncode, airflow.stdout)
    assert b"paused-producer" in module.stdout


def test_merge_pushes_to_its_sinks_and_then_reports_unchanged(
    capsys, tmp_path: Path, etl: Path, bi: Path
) -> None:
    out_dir = tmp_path / "merged"
    code, out, _ = run(capsys, "merge", str(etl), f"bi={bi}", "--sink", str(out_dir))
    assert code == 0
    fingerprint = json.loads((out_dir / "latest.json").read_bytes())["fingerprint"]
    assert out.rstrip().endswith(f"merge: 2 deployments, fingerprint {fingerprint}; {out_dir} (written)")
    _, again, _ = run(capsys, "merge", str(etl), f"bi={bi}", "--sink", str(out_dir))
    assert f"coverage and drift: evaluated against baseline {fingerprint}" in again
    assert again.rstrip().endswith(f"{out_dir} (unchanged)")


def test_a_deployment_that_never_stored_a_snapshot_is_said_not_dropped(
    capsys, tmp_path: Path, etl: Path, bi: Path
) -> None:
    empty = tmp_path / "never-exported"
    empty.mkdir()
    code, out, _ = run(capsys, "merge", str(etl), f"bi={bi}", f"crm={empty}", "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert document["state"]["deployments"] == ["bi", "etl"]
    record = {
        "artifact": "snapshot",
        "subject": "crm",
        "message": f"deployment crm: no snapshot stored at {empty} yet",
    }
    assert record in document["lossiness"]
