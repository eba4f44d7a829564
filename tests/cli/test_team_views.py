"""``--team NAME`` on audit, merge, history and compare, and the views grouped by team (issue 36).

The example estate (example_dags/estate) with three teams: ``orders`` (owner data-eng: load_orders),
``finance`` (tag finance: daily_revenue), ``crm`` (owner crm-team: customer_report, sync_crm,
backfill_customers); legacy_cleanup (owner airflow) is no team's. Its findings, by hand:
asset-unproduced s3://vendor/fx_rates.csv (its consumer daily_revenue: finance), paused-producer
s3://lake/orders.parquet (its producer load_orders: orders), dag-no-owner and dag-no-description
legacy_cleanup (unowned).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli.test_audit_command import run
from support.helpers import AIRFLOW_VERSION, REPO, SARIF_SCHEMA

from airflow_provider_coremodels.sinks import FileSink

TEAMS = """
teams:
  orders: {owners: [data-eng]}
  finance: {tags: [finance]}
  crm: {owners: [crm-team]}
"""

#: Each team's findings in the example estate, by hand (code, subject).
BY_TEAM = {
    "orders": [("paused-producer", "s3://lake/orders.parquet")],
    "finance": [("asset-unproduced", "s3://vendor/fx_rates.csv")],
    "crm": [],
    "unowned": [("dag-no-description", "legacy_cleanup"), ("dag-no-owner", "legacy_cleanup")],
}


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(TEAMS)
    return path


def audit_json(capsys: Any, rules: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(capsys, "audit", "--example", "--rules", str(rules), "--format", "json", *extra)
    return code, json.loads(out) if out else {}, err


def pairs(findings: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((f["code"], f["subject"]) for f in findings)


@pytest.mark.parametrize("team", sorted(BY_TEAM))
def test_audit_team_keeps_that_teams_findings(capsys: Any, rules: Path, team: str) -> None:
    code, document, err = audit_json(capsys, rules, "--team", team)
    assert (code, err) == (0, "")
    assert pairs(document["findings"]) == BY_TEAM[team]


def test_every_finding_names_its_team_and_the_whole_document_has_them_all(capsys: Any, rules: Path) -> None:
    code, document, _ = audit_json(capsys, rules)
    assert code == 0
    said = {(f["code"], f["subject"]): f["team"] for f in document["findings"]}
    expected = {
        pair: ([] if team == "unowned" else [team]) for team, found in BY_TEAM.items() for pair in found
    }
    assert said == expected
    assert [t["name"] for t in document["policy"]["teams"]] == ["orders", "finance", "crm"]


def test_fail_on_counts_the_teams_findings_alone(capsys: Any, rules: Path) -> None:
    assert (
        run(capsys, "audit", "--example", "--rules", str(rules), "--team", "crm", "--fail-on", "info")[0] == 0
    )
    assert (
        run(capsys, "audit", "--example", "--rules", str(rules), "--team", "orders", "--fail-on", "warning")[
            0
        ]
        == 1
    )
    assert run(capsys, "audit", "--example", "--rules", str(rules), "--fail-on", "warning")[0] == 1


@pytest.mark.parametrize(
    ("given", "rules_text", "says"),
    [
        (
            "nosuch",
            TEAMS,
            "error: --team nosuch: no such team; the teams are orders, finance, crm (and unowned)\n",
        ),
        (
            "crm",
            "rules: []\n",
            "error: --team crm: the document names no teams (give --rules with a teams: part)\n",
        ),
    ],
)
def test_a_team_the_document_does_not_have_is_exit_2_in_one_line(
    capsys: Any, tmp_path: Path, given: str, rules_text: str, says: str
) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(rules_text)
    code, out, err = run(capsys, "audit", "--example", "--rules", str(path), "--team", given)
    assert (code, out, err) == (2, "", says)


def test_the_table_groups_findings_by_team_in_file_order_then_unowned(capsys: Any, rules: Path) -> None:
    code, out, _ = run(capsys, "audit", "--example", "--rules", str(rules))
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("team ")]
    assert heads == ["team orders: 1 finding", "team finance: 1 finding", "team unowned: 2 findings"]
    lines = out.splitlines()
    at = lines.index("team unowned: 2 findings")
    assert "legacy_cleanup" in lines[at + 1] and "legacy_cleanup" in lines[at + 2]


def test_markdown_groups_by_team_and_sarif_carries_the_team(capsys: Any, rules: Path) -> None:
    _, out, _ = run(capsys, "audit", "--example", "--rules", str(rules), "--format", "markdown")
    heads = [line for line in out.splitlines() if line.startswith("#### Team ")]
    assert heads == ["#### Team orders (1)", "#### Team finance (1)", "#### Team unowned (2)"]
    _, out, _ = run(capsys, "audit", "--example", "--rules", str(rules), "--format", "sarif")
    sarif = json.loads(out)
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text()))
    teams = {r["ruleId"]: r["properties"]["team"] for r in sarif["runs"][0]["results"]}
    assert teams == {
        "asset-unproduced": ["finance"],
        "dag-no-description": ["unowned"],
        "dag-no-owner": ["unowned"],
        "paused-producer": ["orders"],
    }
    _, out, _ = run(capsys, "audit", "--example", "--format", "sarif")  # no teams: no property
    assert all("team" not in r["properties"] for r in json.loads(out)["runs"][0]["results"])


# -- merge ----------------------------------------------------------------------------------


def test_merge_team_gives_each_deployment_its_share_of_a_cross_deployment_finding(
    capsys: Any, tmp_path: Path
) -> None:
    """etl's producer (team ingest) is paused, bi's consumer (team reports) is active: the
    paused-producer finding of the merge is both teams', and each team's view has it."""
    from cli.test_merge_command import snapshot

    def dag(dag_id: str, owner: str, paused: bool) -> dict[str, Any]:
        return {"dag_id": dag_id, "description": dag_id, "owners": [owner], "is_paused": paused,
                "timetable_summary": "0 5 * * *"}  # fmt: skip

    etl = snapshot(tmp_path / "etl.json", "etl", [dag("load_orders", "ingest-team", True)],
                   [{"uri": "s3://lake/orders", "producing_tasks": [{"dag_id": "load_orders"}]}])  # fmt: skip
    bi = snapshot(tmp_path / "bi.json", "bi", [dag("daily_revenue", "bi-team", False)],
                  [{"uri": "s3://lake/orders", "scheduled_dags": [{"dag_id": "daily_revenue"}]}])  # fmt: skip
    rules = tmp_path / "teams.yaml"
    rules.write_text(
        "teams:\n  ingest: {owners: [ingest-team]}\n  reports: {owners: [bi-team]}\n  idle: {tags: [x]}\n"
    )
    base = ("merge", f"etl={etl}", f"bi={bi}", "--rules", str(rules), "--format", "json")
    code, out, err = run(capsys, *base)
    assert (code, err) == (0, "")
    found = {f["code"]: f["team"] for f in json.loads(out)["findings"]}
    assert found == {"paused-producer": ["ingest", "reports"]}
    for team in ("ingest", "reports"):
        code, out, _ = run(capsys, *base, "--team", team, "--fail-on", "warning")
        assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == ["paused-producer"]
    code, out, _ = run(capsys, *base, "--team", "idle", "--fail-on", "warning")
    assert code == 0 and json.loads(out)["findings"] == []


# -- history and compare --------------------------------------------------------------------


@pytest.fixture
def sink(capsys: Any, tmp_path: Path, rules: Path) -> Path:
    """Two exports of the example estate: the second one with load_orders owned by crm-team, so the
    paused-producer moves from orders to crm."""
    _, first, _ = audit_json(capsys, rules)
    first["state"]["capturedAt"] = "2026-11-20T06:00:00Z"
    moved = rules.parent / "moved.yaml"
    moved.write_text(TEAMS.replace("orders: {owners: [data-eng]}", "orders: {owners: [nobody]}").replace(
        "crm: {owners: [crm-team]}", "crm: {owners: [crm-team, data-eng]}"
    ))  # fmt: skip
    _, second, _ = audit_json(capsys, moved)
    second["state"]["capturedAt"] = "2026-11-21T06:00:00Z"
    root = tmp_path / "sink"
    FileSink(root).push(first)
    assert FileSink(root).push(second).unchanged is False  # the same estate, the findings' teams changed
    return root


def test_history_team_counts_that_teams_open_findings(capsys: Any, sink: Path) -> None:
    listings = {}
    for team in ("orders", "crm", "unowned"):
        code, out, err = run(capsys, "history", "--sink", str(sink), "--format", "json", "--team", team)
        assert (code, err) == (0, "")
        listings[team] = [entry["open"] for entry in json.loads(out)["entries"]]  # newest first
    assert listings["orders"] == [{}, {"Warning": 1}]
    assert listings["crm"] == [{"Warning": 1}, {}]
    assert listings["unowned"] == [{"Warning": 1, "Info": 1}, {"Warning": 1, "Info": 1}]
    code, out, err = run(capsys, "history", "--sink", str(sink), "--team", "nosuch")
    assert (code, out) == (2, "") and err.startswith("error: --team nosuch: no such team")


def test_compare_team_shows_what_opened_and_closed_for_that_team(capsys: Any, sink: Path) -> None:
    old, new = f"{sink}@~1", f"{sink}@latest"
    code, out, _ = run(
        capsys, "compare", old, new, "--format", "json", "--team", "crm", "--fail-on", "warning"
    )
    comparison = json.loads(out)
    assert code == 1  # paused-producer opened for crm
    assert [(f["code"], f["team"]) for f in comparison["findings"]["opened"]] == [
        ("paused-producer", ["crm"])
    ]
    assert comparison["findings"]["closed"] == []
    code, out, _ = run(
        capsys, "compare", old, new, "--format", "json", "--team", "orders", "--fail-on", "warning"
    )
    comparison = json.loads(out)
    assert code == 0
    assert [f["code"] for f in comparison["findings"]["closed"]] == ["paused-producer"]
    code, out, err = run(capsys, "compare", old, new, "--team", "nosuch")
    assert code == 2 and err.startswith("error: --team nosuch: no such team")


# -- the team report ------------------------------------------------------------------------


def test_teams_reports_each_teams_dags_and_open_findings_then_the_unowned(capsys: Any, rules: Path) -> None:
    code, out, err = run(capsys, "teams", "--example", "--rules", str(rules))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("3 teams · 6 DAGs: 5 owned by a team, 1 unowned · fingerprint ")
    table = [line.split() for line in lines[2:7]]
    assert table == [
        ["TEAM", "DAGS", "ERROR", "WARNING", "INFO", "WAIVED", "MATCHED", "BY"],
        ["orders", "1", "0", "1", "0", "0", "owners:", "data-eng"],
        ["finance", "1", "0", "1", "0", "0", "tags:", "finance"],
        ["crm", "3", "0", "0", "0", "0", "owners:", "crm-team"],
        ["unowned", "1", "0", "1", "1", "0"],
    ]
    assert lines[8:] == [
        "orders: load_orders",
        "finance: daily_revenue",
        "crm: backfill_customers, customer_report, sync_crm",
        "unowned: legacy_cleanup",
    ]


def test_teams_as_json_counts_waived_findings_apart(capsys: Any, rules: Path, tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("- {code: dag-no-owner, subject: legacy_cleanup, reason: retired}\n")
    code, out, _ = run(
        capsys, "teams", "--example", "--rules", str(rules), "--waivers", str(waivers), "--format", "json"
    )
    assert code == 0
    report = {team["name"]: team for team in json.loads(out)["teams"]}
    assert list(report) == ["orders", "finance", "crm", "unowned"]
    assert report["unowned"] == {
        "name": "unowned",
        "dags": ["legacy_cleanup"],
        "open": {"Info": 1},
        "waived": 1,
    }
    assert report["crm"]["owners"] == ["crm-team"] and report["crm"]["open"] == {}


@pytest.mark.parametrize(
    ("rules_text", "says"),
    [
        (None, "error: teams needs --rules FILE, a rules file with a teams: part\n"),
        ("rules: []\n", "names no teams (it has no teams: part)\n"),
    ],
)
def test_teams_without_teams_is_exit_2(
    capsys: Any, tmp_path: Path, rules_text: str | None, says: str
) -> None:
    argv = ["teams", "--example"]
    if rules_text is not None:
        path = tmp_path / "r.yaml"
        path.write_text(rules_text)
        argv += ["--rules", str(path)]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "") and err.endswith(says) and err.count("\n") == 1


def test_a_pull_requests_change_names_the_teams_it_touches(capsys: Any, rules: Path) -> None:
    """example_dags/estate parsed as a new bundle (no baseline): every DAG is added, so every team
    is touched; --team keeps one team's opened findings."""
    folder = str(REPO / "example_dags" / "estate")
    code, out, err = run(capsys, "audit", "--dag-folder", folder, "--rules", str(rules), "--format", "json")
    assert code == 0, err
    change = json.loads(out)["change"]
    assert change["teamsAffected"] == ["orders", "finance", "crm", "unowned"]
    assert {a["dag"]: a["team"] for a in change["affected"]} == {
        "customer_report": "crm",
        "daily_revenue": "finance",
    }
    code, out, _ = run(capsys, "audit", "--dag-folder", folder, "--rules", str(rules), "--team", "finance")
    assert "teams: orders, finance, crm, unowned" in out.splitlines()
    # finance's one finding needs task inlets, which Airflow 3.0's parse does not collect
    if not AIRFLOW_VERSION.startswith("3.0."):
        assert "opens: Warning asset-unproduced s3://vendor/fx_rates.csv" in out.splitlines()
    else:
        assert not any(line.startswith("opens: ") for line in out.splitlines())
    # every DAG is new: the change cuts no dependency of a DAG it does not touch
    assert "breaks: nothing (no other DAG loses an asset or a DAG it depends on)" in out.splitlines()


@pytest.mark.parametrize(
    ("with_rules", "says"),
    [
        (False, "error: --team crm needs --rules FILE, a rules file with a teams: part\n"),
        (True, "error: --team ordres: no such team; the teams are orders, finance, crm (and unowned)\n"),
    ],
)
def test_export_and_merge_check_team_before_anything_is_captured_or_read(
    capsys: Any, rules: Path, with_rules: bool, says: str
) -> None:
    """Port 9 answers nothing and the snapshot does not exist: exit 2 (not 3) shows neither was tried."""
    team = "ordres" if with_rules else "crm"
    extra = ["--rules", str(rules)] if with_rules else []
    for argv in (
        ["export", "--base-url", "http://127.0.0.1:9", "--team", team, *extra],
        ["merge", "/nonexistent/a.json", "--team", team, *extra],
    ):
        code, out, err = run(capsys, *argv)
        assert (code, out, err) == (2, "", says)


# -- each team's drift on history and compare ------------------------------------------------

#: Two snapshots of a three-team estate (tests/core/test_teams.py's teams: team_a by owner, ingest
#: by owner alice or bundle ingest-bundle, finance by tag). From OLD to NEW: team_a changes a_dag,
#: adds a_new (producing s3://a_out) and removes a_gone (a consumer of s3://raw); ingest adds
#: ingest_new (by its bundle) and changes raw_loader; finance's report stops consuming s3://raw and
#: consumes s3://a_out instead (a change of its own edges: report is changed, and team_a's a_new
#: reaches it downstream); the DAGs owned by
#: team_a_legacy, no team's (never a substring match of team_a), add legacy_new and lose legacy_gone.
DRIFT_OLD = (
    [
        ("a_dag", ["team_a"], {}),
        ("a_gone", ["team_a"], {}),
        ("legacy_dag", ["team_a_legacy"], {}),
        ("legacy_gone", ["team_a_legacy"], {}),
        ("raw_loader", ["bob"], {"bundle": "ingest-bundle"}),
        ("report", ["carol"], {"tags": ("finance",)}),
    ],
    [("s3://raw", ["raw_loader"], ["report", "a_gone"])],
)
DRIFT_NEW = (
    [
        ("a_dag", ["team_a"], {"description": "does other work"}),
        ("a_new", ["team_a"], {}),
        ("legacy_dag", ["team_a_legacy"], {}),
        ("legacy_new", ["team_a_legacy"], {}),
        ("raw_loader", ["bob"], {"bundle": "ingest-bundle", "description": "loads more"}),
        ("ingest_new", ["dave"], {"bundle": "ingest-bundle"}),
        ("report", ["carol"], {"tags": ("finance",)}),
    ],
    [("s3://raw", ["raw_loader"], []), ("s3://a_out", ["a_new"], ["report"])],
)

#: Each team's drift from OLD to NEW, by hand: DAGs (and assets) added and removed, DAGs changed,
#: the edges added and removed (as ``dependsOn -> dependent``), the DAGs affected downstream.
DRIFT = {
    "team_a": {
        "added": [("asset", "s3://a_out"), ("dag", "a_new")],
        "removed": [("dag", "a_gone")],
        "changed": ["a_dag"],
        "edges_added": ["a_new -> s3://a_out"],
        "edges_removed": ["s3://raw -> a_gone"],
        "affected": [],
    },
    "ingest": {
        "added": [("dag", "ingest_new")],
        "removed": [],
        "changed": ["raw_loader"],
        "edges_added": [],
        "edges_removed": [],
        "affected": [],
    },
    "finance": {
        "added": [("asset", "s3://a_out")],
        "removed": [],
        "changed": ["report"],
        "edges_added": ["s3://a_out -> report"],
        "edges_removed": ["s3://raw -> report"],
        "affected": ["report"],
    },
    "unowned": {
        "added": [("dag", "legacy_new")],
        "removed": [("dag", "legacy_gone")],
        "changed": [],
        "edges_added": [],
        "edges_removed": [],
        "affected": [],
    },
}


def _drift_document(side: Any, rules_text: str, captured: str) -> dict[str, Any]:
    from core.test_teams import asset as served_asset
    from core.test_teams import dag as served_dag
    from core.test_teams import estate_of

    from airflow_provider_coremodels.core import audit, build_document
    from airflow_provider_coremodels.core.checks.policy import parse_rules

    dags, assets = side
    estate = estate_of(
        [served_dag(dag_id, owners, **extra) for dag_id, owners, extra in dags],
        [served_asset(uri, producers, consumers) for uri, producers, consumers in assets],
    )
    doc = build_document(estate, audit(estate, policy=parse_rules(rules_text)))
    doc = json.loads(json.dumps(doc))
    doc["state"]["capturedAt"] = captured
    return doc


@pytest.fixture(params=["recorded", "rules"])
def drift_sink(request: Any, tmp_path: Path) -> tuple[Path, list[str]]:
    """A sink holding OLD then NEW. ``recorded``: both audited with the teams, so history and
    compare take them from the snapshots; ``rules``: audited without teams, so --rules gives them."""
    from core.test_teams import TEAMS as THREE_TEAMS

    rules = tmp_path / "teams.yaml"
    rules.write_text(THREE_TEAMS)
    audited_with = THREE_TEAMS if request.param == "recorded" else "rules: []\n"
    root = tmp_path / "sink"
    FileSink(root).push(_drift_document(DRIFT_OLD, audited_with, "2026-11-20T06:00:00Z"))
    FileSink(root).push(_drift_document(DRIFT_NEW, audited_with, "2026-11-21T06:00:00Z"))
    return root, ([] if request.param == "recorded" else ["--rules", str(rules)])


def _edge(e: dict[str, Any]) -> str:
    return f"{e['dependsOn']} -> {e['dependent']}"


@pytest.mark.parametrize("team", sorted(DRIFT))
def test_compare_team_shows_exactly_that_teams_dag_and_edge_changes(
    capsys: Any, drift_sink: tuple[Path, list[str]], team: str
) -> None:
    root, extra = drift_sink
    code, out, err = run(
        capsys, "compare", f"{root}@~1", f"{root}@latest", "--team", team, "--format", "json", *extra
    )
    assert (code, err) == (0, "")
    c = json.loads(out)
    want = DRIFT[team]
    assert c["team"] == team
    assert [(d["materialization"], d["identity"]) for d in c["datasets"]["added"]] == want["added"]
    assert [(d["materialization"], d["identity"]) for d in c["datasets"]["removed"]] == want["removed"]
    assert [_edge(e) for e in c["lineage"]["added"]] == want["edges_added"]
    assert [_edge(e) for e in c["lineage"]["removed"]] == want["edges_removed"]
    dags = lambda kind: [i for m, i in want[kind] if m == "dag"]  # noqa: E731
    change = c["change"]
    assert (change["dagsAdded"], change["dagsRemoved"]) == (dags("added"), dags("removed"))
    assert change["dagsChanged"] == want["changed"]
    assert [_edge(e) for e in change["lineageAdded"]] == want["edges_added"]
    assert [_edge(e) for e in change["lineageRemoved"]] == want["edges_removed"]
    assert [a["dag"] for a in change["affected"]] == want["affected"]
    tasks = sorted(f["dataset"] for f in c["fields"]["added"] + c["fields"]["removed"])
    assert tasks == sorted(dags("added") + dags("removed"))  # a DAG that came or went brings its task


def test_the_teams_views_of_compare_together_are_the_whole(
    capsys: Any, drift_sink: tuple[Path, list[str]]
) -> None:
    """The whole comparison (no --team, no team key) holds exactly the changes the views share out."""
    root, _ = drift_sink
    code, out, _ = run(capsys, "compare", f"{root}@~1", f"{root}@latest", "--format", "json")
    whole = json.loads(out)
    assert code == 0 and "team" not in whole
    added = sorted({pair for want in DRIFT.values() for pair in want["added"]})
    assert sorted((d["materialization"], d["identity"]) for d in whole["datasets"]["added"]) == added
    assert sorted(whole["change"]["dagsChanged"]) == ["a_dag", "raw_loader", "report"]
    edges = sorted({e for want in DRIFT.values() for e in want["edges_added"] + want["edges_removed"]})
    assert sorted(_edge(e) for e in whole["lineage"]["added"] + whole["lineage"]["removed"]) == edges


@pytest.mark.parametrize("team", sorted(DRIFT))
def test_history_team_shows_each_entrys_drift_of_that_teams_dags(
    capsys: Any, drift_sink: tuple[Path, list[str]], team: str
) -> None:
    root, extra = drift_sink
    code, out, err = run(capsys, "history", "--sink", str(root), "--team", team, "--format", "json", *extra)
    assert (code, err) == (0, "")
    listing = json.loads(out)
    assert listing["team"] == team
    newest, oldest = listing["entries"]
    assert oldest["drift"] is None  # nothing older to compare it with
    drift, want = newest["drift"], DRIFT[team]
    assert drift["since"] == oldest["name"]
    assert drift["dagsAdded"] == [i for m, i in want["added"] if m == "dag"]
    assert drift["dagsRemoved"] == [i for m, i in want["removed"] if m == "dag"]
    assert drift["dagsChanged"] == want["changed"]
    assert [_edge(e) for e in drift["lineageAdded"]] == want["edges_added"]
    assert [_edge(e) for e in drift["lineageRemoved"]] == want["edges_removed"]


def test_the_table_and_markdown_say_whose_view_they_are(
    capsys: Any, drift_sink: tuple[Path, list[str]]
) -> None:
    root, extra = drift_sink
    old, new = f"{root}@~1", f"{root}@latest"
    _, out, _ = run(capsys, "compare", old, new, "--team", "team_a", *extra)
    lines = out.splitlines()
    assert lines[0].startswith("team team_a: its findings, and the changes of its DAGs")
    assert "datasets: 2 added, 1 removed" in lines[3] and "lineage edges: 1 added, 1 removed" in lines[3]
    assert "legacy_new" not in out and "ingest_new" not in out and "a_new" in out
    _, out, _ = run(capsys, "compare", old, new, "--team", "team_a", "--format", "markdown", *extra)
    assert out.splitlines()[2].startswith("_team team\\_a: its findings")
    assert "legacy" not in out and "ingest" not in out and "`a_gone`" in out
    _, out, _ = run(capsys, "history", "--sink", str(root), "--team", "unowned", *extra)
    lines = out.splitlines()
    assert lines[2].startswith("team unowned: its open findings, and the drift of its DAGs")
    header, newest, oldest = lines[4], lines[5], lines[6]
    assert "TEAM DRIFT" in header
    assert "+legacy_new -legacy_gone" in newest and "a_new" not in newest
    assert oldest.split()[-1] == "-"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["--rules", "RULES"],
            "error: --rules RULES: it decides the teams of --team NAME; give --team too\n",
        ),
        (
            ["--rules", "RULES", "--team", "team_b"],
            "error: --team team_b: no such team; the teams are team_a, ingest, finance (and unowned)\n",
        ),
    ],
)
def test_rules_on_history_and_compare_is_checked_before_a_sink_is_read(
    capsys: Any, tmp_path: Path, argv: list[str], says: str
) -> None:
    from core.test_teams import TEAMS as THREE_TEAMS

    rules = tmp_path / "teams.yaml"
    rules.write_text(THREE_TEAMS)
    argv = [str(rules) if a == "RULES" else a for a in argv]
    said = says.replace("RULES", str(rules))
    for command in (
        ["history", "--sink", "/nonexistent/sink"],
        ["compare", "/nonexistent/a", "/nonexistent/b"],
    ):
        assert run(capsys, *command, *argv) == (2, "", said)


def test_history_team_drift_skips_an_entry_it_cannot_read(capsys: Any, tmp_path: Path) -> None:
    """A damaged entry between OLD and NEW has no drift of its own, and NEW's drift is since OLD."""
    from core.test_teams import TEAMS as THREE_TEAMS

    root = tmp_path / "sink"
    FileSink(root).push(_drift_document(DRIFT_OLD, THREE_TEAMS, "2026-11-20T06:00:00Z"))
    FileSink(root).push(_drift_document(DRIFT_NEW, THREE_TEAMS, "2026-11-22T06:00:00Z"))
    (root / "history" / "20261121T060000Z-0123456789abcdef.json").write_text("{not json")
    code, out, err = run(capsys, "history", "--sink", str(root), "--team", "ingest", "--format", "json")
    assert (code, err) == (0, "")
    newest, damaged, oldest = json.loads(out)["entries"]
    assert damaged["problem"] and damaged["drift"] is None and oldest["drift"] is None
    assert newest["drift"]["since"] == oldest["name"]
    assert (newest["drift"]["dagsAdded"], newest["drift"]["dagsChanged"]) == (["ingest_new"], ["raw_loader"])


# -- one count: history --team and teams say the same (issue 45) -----------------------------


@pytest.fixture
def waived_drift_sink(capsys: Any, tmp_path: Path, rules: Path) -> Path:
    """A sink whose latest export was audited against a baseline (customer_report, crm's, is gone:
    dataset-removed) with a waiver (legacy_cleanup's dag-no-owner, unowned): what a re-audit of the
    stored document without them would not see."""
    example = REPO / "airflow_provider_coremodels" / "example_estate"
    _, before, _ = audit_json(capsys, rules)
    before["state"]["capturedAt"] = "2026-11-20T06:00:00Z"
    baseline = tmp_path / "before.json"
    baseline.write_text(json.dumps(before))
    dags = json.loads((example / "dags.json").read_text())
    dags["dags"] = [d for d in dags["dags"] if d["dag_id"] != "customer_report"]
    dags["total_entries"] = len(dags["dags"])
    (tmp_path / "dags.json").write_text(json.dumps(dags))
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text("- {code: dag-no-owner, subject: legacy_cleanup, reason: retired}\n")
    code, out, err = run(
        capsys, "audit", "--dags", str(tmp_path / "dags.json"), "--tasks", str(example / "tasks.json"),
        "--datasets", str(example / "datasets.json"), "--baseline", str(baseline), "--waivers", str(waivers),
        "--rules", str(rules), "--format", "json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    after = json.loads(out)
    after["state"]["capturedAt"] = "2026-11-21T06:00:00Z"
    root = tmp_path / "sink"
    FileSink(root).push(before)
    FileSink(root).push(after)
    return root


def test_history_team_counts_that_teams_own_waived_findings(capsys: Any, waived_drift_sink: Path) -> None:
    """The estate-wide waived count was shown for every team."""
    waived = {}
    for team in ("orders", "finance", "crm", "unowned"):
        code, out, err = run(
            capsys, "history", "--sink", str(waived_drift_sink), "--format", "json", "--team", team
        )
        assert (code, err) == (0, "")
        waived[team] = [entry["waived"] for entry in json.loads(out)["entries"]]  # newest first
    assert waived == {"orders": [0, 0], "finance": [0, 0], "crm": [0, 0], "unowned": [1, 0]}
    code, out, _ = run(capsys, "history", "--sink", str(waived_drift_sink), "--team", "orders")
    assert code == 0 and "waived" in out.lower()


def test_teams_and_history_team_say_one_count_without_a_baseline(
    capsys: Any, waived_drift_sink: Path, rules: Path
) -> None:
    """``teams --snapshot SINK`` reports the stored findings (its drift, its waivers), as
    ``history --team`` counts them: it re-audited them, losing both, unless --baseline was given."""
    code, out, err = run(
        capsys, "teams", "--snapshot", str(waived_drift_sink), "--rules", str(rules), "--format", "json"
    )
    assert (code, err) == (0, "")
    report = {team["name"]: team for team in json.loads(out)["teams"]}
    assert report["crm"]["open"] == {"Warning": 1}  # dataset-removed customer_report
    assert report["unowned"]["waived"] == 1 and report["unowned"]["open"] == {"Info": 1}
    for team, said in report.items():
        code, out, _ = run(
            capsys, "history", "--sink", str(waived_drift_sink), "--format", "json", "--team", team
        )
        newest = json.loads(out)["entries"][0]
        assert (said["open"], said["waived"]) == (newest["open"], newest["waived"]), team


def test_teams_with_other_teams_works_each_stored_findings_team_out_again(
    capsys: Any, waived_drift_sink: Path, tmp_path: Path
) -> None:
    """Rules naming other teams than the export's: the stored findings, each given the teams the
    new rules make of its subject (load_orders moved from orders to crm)."""
    moved = tmp_path / "moved.yaml"
    moved.write_text(TEAMS.replace("orders: {owners: [data-eng]}", "orders: {owners: [nobody]}").replace(
        "crm: {owners: [crm-team]}", "crm: {owners: [crm-team, data-eng]}"
    ))  # fmt: skip
    code, out, err = run(
        capsys, "teams", "--snapshot", str(waived_drift_sink), "--rules", str(moved), "--format", "json"
    )
    assert (code, err) == (0, "")
    report = {team["name"]: team for team in json.loads(out)["teams"]}
    assert report["orders"]["open"] == {}
    assert report["crm"]["open"] == {"Warning": 1}  # paused-producer; customer_report is gone from the estate
    assert report["unowned"]["waived"] == 1
