"""Every tool on a snapshot of 10,000 DAGs: each answer right and each list paged.

How fast they answer is measured by ``benchmarks/bench_mcp.py`` (each call against the time
``json.loads`` takes on the same snapshot, in one run), not here: a timed assertion in a test
fails on a busy machine and proves nothing on an idle one. The seconds per call are printed.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
from mcp import ClientSession
from support.mcp_client import ask, call_error, server, timed_call


class _Edge(msgspec.Struct, rename="camel"):
    dependent: str
    dependent_kind: str
    depends_on: str


class _Document(msgspec.Struct):
    lineage: list[_Edge]
    findings: list[dict[str, Any]]


def test_every_tool_answers_a_10000_dag_snapshot_paged(large_snapshot: Path, tmp_path: Path) -> None:
    document = msgspec.json.decode(large_snapshot.read_bytes(), type=_Document)
    producing = [edge for edge in document.lineage if edge.dependent_kind == "asset"]
    dag = producing[0].depends_on
    busiest = Counter(
        edge.dependent if edge.dependent_kind == "asset" else edge.depends_on for edge in document.lineage
    )
    hub = busiest.most_common(1)[0][0]
    findings = len(document.findings)
    copy = tmp_path / "baseline.json"
    shutil.copyfile(large_snapshot, copy)
    assert findings > 1000  # enough to page

    async def questions(session: ClientSession) -> tuple[dict[str, float], dict[str, Any]]:
        times: dict[str, float] = {}
        answers: dict[str, Any] = {}
        calls: list[tuple[str, str, dict[str, Any]]] = [
            ("facts", "snapshot_facts", {}),
            ("findings", "list_findings", {"limit": 500}),
            ("findings last page", "list_findings", {"offset": findings - 10, "limit": 500}),
            ("findings filtered", "list_findings", {"severity": "warning", "subject": "*_0*", "limit": 500}),
            ("dataset", "describe_dataset", {"identity": dag, "limit": 500}),
            ("asset", "describe_dataset", {"identity": hub}),
            ("lineage depth 2", "lineage_around", {"identity": hub, "include_mermaid": True}),
            (
                "lineage depth 50",
                "lineage_around",
                {"identity": hub, "depth": 50, "include_mermaid": True, "limit": 500},
            ),
            ("impact", "downstream_impact", {"identity": dag, "limit": 500}),
            ("impact of the hub", "downstream_impact", {"identity": hub, "limit": 500}),
            ("drift", "drift_from_baseline", {"limit": 500}),
            # the slowest: a baseline named in the call is read (42 MB) and compared at first ask
            ("drift, baseline by path", "drift_from_baseline", {"baseline": str(copy), "limit": 500}),
        ]
        for label, tool, arguments in calls:
            times[label], answers[label] = await timed_call(session, tool, **arguments)
        started = time.perf_counter()
        answers["unknown"] = await call_error(session, "describe_dataset", identity=dag + "_typo")
        times["unknown identity"] = time.perf_counter() - started
        return times, answers

    times, answers = ask(
        server("--snapshot", str(large_snapshot), "--baseline", str(large_snapshot)),
        questions,
        errlog=tmp_path / "err",
    )
    sys.stderr.write(
        "\nseconds per call on 10,000 DAGs: "
        + ", ".join(f"{label} {seconds:.3f}" for label, seconds in times.items())
        + "\n"
    )

    facts = answers["facts"]
    assert facts["facts"]["dags"] == 10_000 and facts["findings"]["total"] == findings
    page = answers["findings"]["findings"]
    assert (len(page["items"]), page["total"], page["truncated"], page["nextOffset"]) == (
        500,
        findings,
        True,
        500,
    )
    last = answers["findings last page"]["findings"]
    assert (len(last["items"]), last["truncated"], last["nextOffset"]) == (10, False, None)
    assert answers["findings filtered"]["findings"]["total"] > 0
    assert answers["dataset"]["dataset"]["fields"]["total"] == 20
    whole = answers["lineage depth 50"]
    assert (
        whole["nodes"]["total"] > 5000 and len(whole["nodes"]["items"]) == 500 and whole["nodes"]["truncated"]
    )
    assert whole["edges"]["nextOffset"] == 500
    assert whole["mermaid"] is None and "ask for a smaller depth" in whole["mermaidOmitted"]
    assert answers["lineage depth 2"]["mermaid"].startswith("flowchart LR")
    hub_impact = answers["impact of the hub"]["affected"]
    assert len(hub_impact["items"]) == min(500, hub_impact["total"])
    assert answers["drift"]["unchanged"] is True and answers["drift"]["findings"]["total"] == 0
    assert answers["drift, baseline by path"]["baseline"]["source"] == str(copy)
    assert f"did you mean '{dag}'" in answers["unknown"]
