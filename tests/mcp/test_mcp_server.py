"""The MCP server over stdio, driven by the SDK's own client: every tool on the example estate, its
answers checked against what the command line prints for the same snapshot."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from support.helpers import CLI_GROUP
from support.mcp_client import ask, call, call_error, server

from airflow_provider_coremodels.cli.main import main

pytestmark = pytest.mark.slow  # the MCP server in subprocesses, over stdio

TOOLS = {
    "snapshot_facts",
    "list_findings",
    "describe_dataset",
    "lineage_around",
    "downstream_impact",
    "drift_from_baseline",
}
#: A Mermaid node line: ``n3["label"]`` (a DAG) or ``n3[("label")]`` (an asset).
_NODE = re.compile(r'^  n\d+\[\(?"(.*)"\)?\]$')


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What ``python -m airflow_provider_coremodels`` prints on stdout (in this process)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    return out


def printed_findings(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = json.loads(cli(capsys, "audit", *argv, "--format", "json"))["findings"]
    return findings


def identities(document: dict[str, Any]) -> list[str]:
    return sorted({d["identity"] for d in document["datasets"]})


def test_six_read_only_tools_with_described_arguments(example_snapshot: Path, tmp_path: Path) -> None:
    async def questions(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    tools = ask(server("--snapshot", str(example_snapshot)), questions, errlog=tmp_path / "err")
    assert {tool.name for tool in tools} == TOOLS
    for tool in tools:
        assert tool.annotations and tool.annotations.read_only_hint is True
        assert tool.annotations.destructive_hint is False and tool.annotations.open_world_hint is False
        assert tool.description and len(tool.description) > 80, tool.name
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
    # nothing but the protocol on stdout: the start-up line went to stderr
    log = (tmp_path / "err").read_text()
    assert log.startswith("coremodels mcp: serving ") and "Traceback" not in log


def test_findings_equal_what_audit_prints_page_by_page(
    example_snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = printed_findings(capsys, "--snapshot", str(example_snapshot))

    async def questions(session: ClientSession) -> Any:
        whole = await call(session, "list_findings")
        pages, offset = [], 0
        while offset is not None:
            answer = await call(session, "list_findings", offset=offset, limit=1)
            pages.append(answer["findings"])
            offset = answer["findings"]["nextOffset"]
        warnings = await call(session, "list_findings", severity="warning", subject="s3://*")
        owner = await call(session, "list_findings", code="dag-no-owner")
        past_the_end = await call(session, "list_findings", offset=10)
        return whole, pages, warnings, owner, past_the_end

    whole, pages, warnings, owner, past_the_end = ask(
        server("--snapshot", str(example_snapshot)), questions, errlog=tmp_path / "err"
    )
    assert whole["findings"]["items"] == printed
    assert (whole["findings"]["total"], whole["findings"]["truncated"]) == (4, False)
    assert [p["items"][0] for p in pages] == printed
    assert [(p["offset"], p["limit"], p["total"], p["truncated"], p["nextOffset"]) for p in pages] == [
        (0, 1, 4, True, 1),
        (1, 1, 4, True, 2),
        (2, 1, 4, True, 3),
        (3, 1, 4, False, None),
    ]
    assert [f["code"] for f in warnings["findings"]["items"]] == ["asset-unproduced", "paused-producer"]
    assert warnings["counts"]["bySeverity"] == {"Warning": 2}
    assert [f["subject"] for f in owner["findings"]["items"]] == ["legacy_cleanup"]
    assert past_the_end["findings"]["items"] == [] and past_the_end["findings"]["total"] == 4


def test_lineage_equals_what_lineage_prints(
    example_snapshot: Path,
    example_document: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Around every DAG and asset, at depths 1 and 2: the same drawing, and the same nodes."""
    centres = identities(example_document)
    asked = [(centre, depth) for centre in centres for depth in (1, 2)]

    async def questions(session: ClientSession) -> list[dict[str, Any]]:
        return [
            await call(session, "lineage_around", identity=centre, depth=depth, include_mermaid=True)
            for centre, depth in asked
        ]

    answers = ask(server("--snapshot", str(example_snapshot)), questions, errlog=tmp_path / "err")
    for (centre, depth), answer in zip(asked, answers, strict=True):
        drawn = cli(
            capsys, "lineage", "--snapshot", str(example_snapshot), "--around", centre, "--depth", str(depth)
        )
        assert answer["mermaid"] == drawn.rstrip("\n"), (centre, depth)
        labels = [m.group(1) for m in map(_NODE.match, drawn.splitlines()) if m]
        nodes = answer["nodes"]["items"]
        assert [label.split(" (")[0] for label in labels] == [n["identity"] for n in nodes], (centre, depth)
        assert answer["nodes"]["total"] == len(labels) and not answer["nodes"]["truncated"]
        edge_lines = [line for line in drawn.splitlines() if re.match(r"^  n\d+ -", line)]
        assert answer["edges"]["total"] == len(edge_lines)


def test_facts_a_dataset_and_its_downstream_impact(
    example_snapshot: Path, example_document: dict[str, Any], tmp_path: Path
) -> None:
    async def questions(session: ClientSession) -> Any:
        return (
            await call(session, "snapshot_facts"),
            await call(session, "describe_dataset", identity="load_orders", limit=1),
            await call(session, "describe_dataset", identity="s3://lake/orders.parquet"),
            await call(session, "downstream_impact", identity="load_orders"),
            await call(session, "downstream_impact", identity="load_orders", depth=1),
        )

    facts, dag, asset, impact, near = ask(
        server("--snapshot", str(example_snapshot)), questions, errlog=tmp_path / "err"
    )
    state = example_document["state"]
    assert facts["fingerprint"] == example_document["fingerprint"]
    assert (facts["counts"], facts["facts"], facts["capturedAt"]) == (
        state["counts"],
        state["facts"],
        state["capturedAt"],
    )
    assert facts["findings"]["bySeverity"] == {
        "Warning": {"open": 3, "waived": 0},
        "Info": {"open": 1, "waived": 0},
    }
    assert facts["lossiness"]["total"] == 0

    stored = next(d for d in example_document["datasets"] if d["identity"] == "load_orders")
    assert dag["dataset"]["metadata"] == stored["metadata"] and dag["dataset"]["paused"] is True
    assert dag["dataset"]["fields"]["items"] == stored["fields"][:1]
    assert (dag["dataset"]["fields"]["total"], dag["dataset"]["fields"]["truncated"]) == (2, True)
    assert [n["identity"] for n in dag["downstream"]["items"]] == ["s3://lake/orders.parquet"]
    assert [n["identity"] for n in asset["upstream"]["items"]] == ["load_orders"]
    assert [n["identity"] for n in asset["downstream"]["items"]] == ["daily_revenue"]
    assert [f["code"] for f in asset["findings"]["items"]] == ["paused-producer"]

    # what breaks if load_orders stays paused: its asset, the active DAG reading it, and what that makes
    assert impact["start"]["paused"] is True
    affected = [(a["identity"], a["kind"], a["distance"]) for a in impact["affected"]["items"]]
    assert affected == [
        ("s3://lake/orders.parquet", "asset", 1),
        ("daily_revenue", "dag", 2),
        ("s3://lake/revenue.parquet", "asset", 3),
    ]
    assert impact["summary"] == {
        "assets": 2,
        "dags": 1,
        "activeDags": 1,
        "pausedDags": 0,
        "externalDags": 0,
        "maxDistance": 3,
    }
    assert [a["identity"] for a in near["affected"]["items"]] == ["s3://lake/orders.parquet"]


def test_a_file_sink_directory_is_served_from_its_latest_json(
    example_sink: Path, example_document: dict[str, Any], tmp_path: Path
) -> None:
    async def questions(session: ClientSession) -> Any:
        return await call(session, "snapshot_facts"), await call(session, "list_findings")

    facts, findings = ask(server("--snapshot", str(example_sink)), questions, errlog=tmp_path / "err")
    assert facts["fingerprint"] == example_document["fingerprint"]
    assert facts["source"] == str(example_sink)
    assert findings["findings"]["items"] == example_document["findings"]


def test_drift_equals_what_audit_prints_against_the_baseline(
    example_snapshot: Path,
    baseline_snapshot: Path,
    example_sink: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    printed = printed_findings(
        capsys, "--snapshot", str(example_snapshot), "--baseline", str(baseline_snapshot)
    )
    expected = [f for f in printed if f["section"] in ("Coverage", "Drift")]
    assert {f["code"] for f in expected} == {
        "dataset-unmapped",
        "dataset-removed",
        "field-removed",
        "field-type-drift",
    }

    async def questions(session: ClientSession) -> Any:
        return (
            await call(session, "drift_from_baseline"),
            await call(session, "drift_from_baseline", code="field-type-drift"),
            await call(session, "drift_from_baseline", baseline=str(example_sink)),
            await call(session, "list_findings"),
            await call(session, "snapshot_facts"),
        )

    given, typed, sink, findings, facts = ask(
        server("--snapshot", str(example_snapshot), "--baseline", str(baseline_snapshot)),
        questions,
        errlog=tmp_path / "err",
    )
    assert given["findings"]["items"] == expected
    assert given["baseline"]["evaluated"] is True and given["unchanged"] is False
    assert [f["subject"] for f in typed["findings"]["items"]] == ["load_orders.extract"]
    # the same estate as its own baseline: nothing drifted
    assert sink["unchanged"] is True and sink["findings"]["total"] == 0
    # the snapshot's own findings stay its own: drift is asked for apart
    assert all(f["section"] not in ("Coverage", "Drift") for f in findings["findings"]["items"])
    assert facts["baseline"]["source"] == str(baseline_snapshot)


def test_waivers_re_audit_the_snapshot_as_audit_does(
    example_snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        "- {code: dag-no-owner, subject: 'legacy_*', reason: owned by the ops rota}\n"
        "- {code: dag-no-description, subject: '*', reason: old, expires: 2020-01-01}\n"
    )
    printed = printed_findings(capsys, "--snapshot", str(example_snapshot), "--waivers", str(waivers))

    async def questions(session: ClientSession) -> Any:
        return (
            await call(session, "list_findings"),
            await call(session, "list_findings", waived="only"),
            await call(session, "list_findings", waived="exclude", section="waivers"),
        )

    everything, waived, expired = ask(
        server("--snapshot", str(example_snapshot), "--waivers", str(waivers)),
        questions,
        errlog=tmp_path / "err",
    )
    assert everything["findings"]["items"] == printed
    assert everything["source"].startswith("re-audited under the waivers of ")
    assert [(f["code"], f["waived"]["reason"]) for f in waived["findings"]["items"]] == [
        ("dag-no-owner", "owned by the ops rota")
    ]
    assert [f["code"] for f in expired["findings"]["items"]] == ["waiver-expired"]


def test_unknown_identities_and_filters_are_tool_errors_that_say_what_was_meant(
    example_snapshot: Path, tmp_path: Path
) -> None:
    async def questions(session: ClientSession) -> list[str]:
        return [
            await call_error(session, "describe_dataset", identity="load_order"),
            await call_error(session, "lineage_around", identity="orders.parquet"),
            await call_error(session, "downstream_impact", identity="nothing_like_it_at_all"),
            await call_error(session, "list_findings", code="paused-producers"),
            await call_error(session, "list_findings", limit=501),
            await call_error(session, "drift_from_baseline"),
            await call_error(session, "drift_from_baseline", baseline=str(tmp_path / "missing.json")),
        ]

    errors = ask(server("--snapshot", str(example_snapshot)), questions, errlog=tmp_path / "err")
    assert "no DAG or asset 'load_order' in this snapshot; did you mean 'load_orders'?" in errors[0]
    assert "did you mean 's3://lake/orders.parquet'?" in errors[1]  # found by the asset's name
    assert "no DAG or asset 'nothing_like_it_at_all'" in errors[2]
    assert "unknown finding code 'paused-producers'; did you mean 'paused-producer'" in errors[3]
    assert "limit" in errors[4] and "500" in errors[4]
    assert "no baseline" in errors[5]
    assert "missing.json cannot be read: No such file or directory" in errors[6]
    log = (tmp_path / "err").read_text()
    assert "Traceback" not in log


@CLI_GROUP
def test_airflow_coremodels_mcp_serves_the_same(example_snapshot: Path, tmp_path: Path) -> None:
    """The same command through the ``airflow coremodels`` group: nothing of Airflow's start-up on stdout."""

    async def questions(session: ClientSession) -> Any:
        tools = (await session.list_tools()).tools
        return {tool.name for tool in tools}, await call(session, "snapshot_facts")

    names, facts = ask(
        server("--snapshot", str(example_snapshot), airflow_cli=True), questions, errlog=tmp_path / "err"
    )
    assert names == TOOLS
    assert facts["facts"]["dags"] == 6
