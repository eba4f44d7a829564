"""Teams (core/checks/teams.py): the rules file's ``teams`` checked, a DAG's team, each finding's teams.

The three-team estate and the team of every finding in it are written here by hand.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec
import pytest
from support.helpers import as_served

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.checks.policy import parse_rules
from airflow_provider_coremodels.core.checks.teams import (
    UNOWNED,
    document_teams,
    for_team,
    grouped,
    teams_from_json,
    teams_from_value,
)
from airflow_provider_coremodels.core.comparing.change import change_json, describe
from airflow_provider_coremodels.core.estate.model import DAG, Dataset
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.errors import RulesFileError

TEAMS = """
teams:
  team_a:
    owners: [team_a]
  ingest:
    owners: [alice]
    bundles: [ingest-bundle]
  finance:
    tags: [finance]
"""


def dag(
    dag_id: str,
    owners: list[str],
    *,
    bundle: str = "dags-folder",
    tags: tuple[str, ...] = (),
    paused: bool = False,
    description: str | None = "does its work",
) -> dict[str, Any]:
    return {
        "dag_id": dag_id,
        "owners": owners,
        "bundle_name": bundle,
        "tags": [{"name": t} for t in tags],
        "is_paused": paused,
        "description": description,
        "timetable_summary": "@daily",
    }


def asset(uri: str, producers: list[str] = (), consumers: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "uri": uri,
        "producing_tasks": [{"dag_id": p, "task_id": "t"} for p in producers],
        "scheduled_dags": [{"dag_id": c} for c in consumers],
    }


#: The three-team estate: a DAG per case of the matching rule.
DAGS = [
    dag("a_dag", ["team_a"], description=None),  # team_a by owner
    dag("legacy_dag", ["team_a_legacy"], description=None),  # no team: team_a is no substring match
    dag("raw_loader", ["bob"], bundle="ingest-bundle", paused=True),  # ingest by bundle
    dag("report", ["carol"], tags=("finance",)),  # finance by tag
    dag("shared", ["alice"], tags=("finance",), description=None),  # ingest (owner) before finance (tag)
    dag("both", ["nobody", "team_a"], tags=("finance",), description=None),  # team_a: first in file order
]
ASSETS = [
    asset("s3://raw", ["raw_loader"], ["report"]),  # paused-producer: the producer's team
    asset("s3://fx", [], ["report", "legacy_dag"]),  # asset-unproduced: the consumers' teams
]

#: Every finding of the estate with its team, by hand.
EXPECTED = [
    ("asset-unproduced", "s3://fx", ["finance"]),  # legacy_dag is of no team: only report's
    ("dag-no-description", "a_dag", ["team_a"]),
    ("dag-no-description", "both", ["team_a"]),
    ("dag-no-description", "legacy_dag", []),
    ("dag-no-description", "shared", ["ingest"]),
    ("paused-producer", "s3://raw", ["ingest"]),
]


def estate_of(dags: list[dict[str, Any]], assets: list[dict[str, Any]] = ()) -> Any:  # type: ignore[assignment]
    served_dags, served_assets = as_served(dags, {"assets": list(assets)})
    tasks = {d["dag_id"]: {"tasks": [{"task_id": "t", "operator_name": "BashOperator"}]} for d in dags}
    return parse_artifacts(
        json.dumps(served_dags).encode(), json.dumps(tasks).encode(), json.dumps(served_assets).encode()
    )


def document(rules: str = TEAMS, dags: Any = DAGS, assets: Any = ASSETS, **kwargs: Any) -> dict[str, Any]:
    estate = estate_of(dags, assets)
    return build_document(estate, audit(estate, policy=parse_rules(rules), **kwargs))


def teams_of(doc: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(f["code"], f["subject"], f.get("team")) for f in doc["findings"]]


# -- the rules file ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("teams: {a: {owner: [x]}}", "teams.a has unknown key(s) owner; expected owners, bundles, tags"),
        ("teams: {a: {owners: x}}", "teams.a.owners must be a list of names, got 'x'"),
        ("teams: {a: {}}", "teams.a is empty: a team names at least one of owners, bundles, tags"),
        ("teams: {a: }", "teams.a must be a mapping of owners, bundles, tags, got None"),
        ("teams: {a: {tags: []}}", "teams.a.tags is an empty list"),
        ("teams: {a: {owners: [x, '']}}", "teams.a.owners[1] must be a non-empty string"),
        ("teams: {a: {owners: [x, 3]}}", "teams.a.owners[1] must be a non-empty string, got 3"),
        ("teams: {}", "teams names no team"),
        ("teams: [a, b]", "teams must be a mapping of team names"),
        ("teams: {unowned: {owners: [x]}}", "teams.unowned is reserved"),
        ("teams: {'*': {owners: [x]}}", "teams.* is reserved"),
        ("teams: {7: {owners: [x]}}", "teams has a team name 7"),
        ("team: {a: {owners: [x]}}", "has unknown key(s) team; expected rules, teams"),
    ],
)
def test_a_malformed_teams_part_is_refused_in_one_line_naming_the_team_and_key(
    text: str, problem: str
) -> None:
    with pytest.raises(RulesFileError) as caught:
        parse_rules(text)
    message = str(caught.value)
    assert message.startswith("rules file ")
    assert problem in message
    assert "\n" not in message


def test_a_rules_file_may_hold_teams_alone_and_their_order_is_the_files() -> None:
    policy = parse_rules(TEAMS)
    assert policy.rules == ()
    assert policy.teams is not None and policy.teams.names == ("team_a", "ingest", "finance")
    assert parse_rules("rules: []").teams is None


def test_the_digest_of_a_file_without_teams_is_unchanged_and_teams_change_it() -> None:
    rules = "rules: [{code: policy-t, require: {tag: x}}]"
    plain = parse_rules(rules).digest
    with_teams = parse_rules(rules + "\n" + TEAMS).digest
    other_teams = parse_rules(rules + "\n" + TEAMS.replace("alice", "alicia")).digest
    assert len({plain, with_teams, other_teams}) == 3
    # the digest of the rules alone is what it was before teams existed: their JSON, hashed
    body = msgspec.json.encode([r.json() for r in parse_rules(rules).rules], order="sorted")
    assert plain == hashlib.sha256(body).hexdigest()[:16]


# -- a DAG's team -----------------------------------------------------------------------------


def dataset(owners: str, *, bundle: str = "b", tags: tuple[str, ...] = ()) -> Dataset:
    return Dataset("d", "d", DAG, tags=tags, metadata={"airflow.owners": owners, "airflow.bundle": bundle})


@pytest.mark.parametrize(
    ("owners", "bundle", "tags", "team"),
    [
        ("team_a", "b", (), "team_a"),
        ("team_a_legacy", "b", (), None),  # never a substring: airflow#69372's bug
        ("legacy_team_a", "b", (), None),
        ("team_a_legacy,team_a", "b", (), "team_a"),
        ("Team_A", "b", (), None),  # exact: case counts
        ("x", "ingest-bundle", (), "ingest"),
        ("x", "ingest-bundle-2", (), None),
        ("x", "b", ("finance",), "finance"),
        ("x", "b", ("finance-ops",), None),
        ("x", "b", ("finance", "other"), "finance"),
        ("alice", "b", ("finance",), "ingest"),  # ingest comes before finance in the file
        ("x", "ingest-bundle", ("finance",), "ingest"),
        ("nobody,team_a", "ingest-bundle", (), "team_a"),  # team_a is first in the file
        ("", "b", (), None),
    ],
)
def test_a_dags_team_is_the_first_in_file_order_matching_exactly(
    owners: str, bundle: str, tags: tuple[str, ...], team: str | None
) -> None:
    teams = parse_rules(TEAMS).teams
    assert teams is not None
    assert teams.team_of(dataset(owners, bundle=bundle, tags=tags)) == team


# -- each finding's team ----------------------------------------------------------------------


def test_every_finding_of_the_three_team_estate_names_its_team() -> None:
    assert teams_of(document()) == EXPECTED


def test_without_teams_no_finding_carries_a_team_and_the_fingerprint_is_the_same() -> None:
    plain = document(rules="rules: []")
    assert all("team" not in f for f in plain["findings"])
    assert "teams" not in plain["policy"]
    assert document()["fingerprint"] == plain["fingerprint"]
    assert [f["code"] for f in document()["findings"]] == [f["code"] for f in plain["findings"]]


def test_the_document_records_the_teams_and_reads_them_back() -> None:
    doc = document()
    assert document_teams(doc) == ("team_a", "ingest", "finance")
    again = teams_from_json(json.loads(json.dumps(doc))["policy"]["teams"])
    assert again is not None and again.json() == parse_rules(TEAMS).teams.json()  # type: ignore[union-attr]
    stored = load_document(json.dumps(doc))
    assert stored.estate is not None


def test_policy_findings_and_task_findings_carry_their_dags_team() -> None:
    estate = estate_of(DAGS, ASSETS)
    rules = TEAMS + (
        "rules: [{code: policy-small, require: {tag: none-has-it}},"
        " {code: policy-no-bash, require: {task_operator_not_in: [BashOperator]}}]"
    )
    result = audit(estate, policy=parse_rules(rules))
    tasks = {f.subject: f.team for f in result.findings if f.code == "policy-no-bash"}
    assert (
        tasks["a_dag.t"] == ("team_a",) and tasks["legacy_dag.t"] == () and tasks["shared.t"] == ("ingest",)
    )
    found = {f.subject: f.team for f in result.findings if f.code == "policy-small"}
    assert found == {
        "a_dag": ("team_a",),
        "both": ("team_a",),
        "legacy_dag": (),
        "raw_loader": ("ingest",),
        "report": ("finance",),
        "shared": ("ingest",),
    }


def test_drift_of_a_dag_that_is_gone_names_the_team_it_had() -> None:
    before = estate_of(DAGS, ASSETS)
    baseline = load_document(json.dumps(build_document(before, audit(before)))).as_baseline()
    now_dags = [d for d in DAGS if d["dag_id"] != "a_dag"]
    doc = document(dags=now_dags, baseline=baseline)
    removed = [(f["subject"], f["team"]) for f in doc["findings"] if f["code"] == "dataset-removed"]
    assert removed == [("a_dag", ["team_a"])]


def test_an_asset_whose_lineage_crosses_deployments_names_the_team_in_each() -> None:
    """Producer in deployment ``lake`` (team ingest), paused; consumer in ``bi`` (team finance)."""
    lake = estate_of(
        [dag("raw_loader", ["bob"], bundle="ingest-bundle", paused=True)], [asset("s3://raw", ["raw_loader"])]
    )
    bi = estate_of([dag("report", ["carol"], tags=("finance",))], [asset("s3://raw", [], ["report"])])
    merged = merge([Part("lake", lake), Part("bi", bi)])
    result = audit(merged, policy=parse_rules(TEAMS))
    found = {(f.code, f.subject): f.team for f in result.findings}
    assert found[("paused-producer", "s3://raw")] == ("ingest", "finance")
    # within one deployment the same finding is the producers' alone
    assert teams_of(document(dags=DAGS[2:4], assets=ASSETS[:1])) == [
        ("paused-producer", "s3://raw", ["ingest"])
    ]


def test_an_import_error_is_its_dags_team_else_its_bundles() -> None:
    dags, assets = as_served([dag("raw_loader", ["bob"], bundle="ingest-bundle")], {"assets": []})
    dags["import_errors"] = [
        {"filename": "broken.py", "bundle_name": "ingest-bundle", "stack_trace": "SyntaxError: bad"},
        {"filename": "x.py", "bundle_name": "elsewhere", "stack_trace": "SyntaxError: bad"},
    ]
    estate = parse_artifacts(json.dumps(dags).encode(), b"{}", json.dumps(assets).encode())
    result = audit(estate, policy=parse_rules(TEAMS))
    found = {f.subject: f.team for f in result.findings if f.code == "dag-import-error"}
    assert found == {"ingest-bundle/broken.py": ("ingest",), "elsewhere/x.py": ()}


# -- the views' helpers -----------------------------------------------------------------------


def test_one_teams_view_keeps_its_findings_and_unowned_keeps_the_rest() -> None:
    doc = document()
    assert [f["subject"] for f in for_team(doc, "team_a")["findings"]] == ["a_dag", "both"]
    assert [f["subject"] for f in for_team(doc, UNOWNED)["findings"]] == ["legacy_dag"]
    assert [f["subject"] for f in for_team(doc, "finance")["findings"]] == ["s3://fx"]
    assert [name for name, _ in grouped(doc["findings"], document_teams(doc) or ())] == [
        "team_a",
        "ingest",
        "finance",
        UNOWNED,
    ]


def test_owner_in_may_name_a_team_for_its_owners() -> None:
    rules = TEAMS + "rules:\n  - code: policy-owners\n    require: {owner_in: [ingest, carol]}\n"
    estate = estate_of(DAGS, ASSETS)
    result = audit(estate, policy=parse_rules(rules))
    failing = sorted(f.subject for f in result.findings if f.code == "policy-owners")
    # alice (the team ingest's owner) and carol pass; team_a, team_a_legacy, bob, nobody do not
    assert failing == ["a_dag", "both", "legacy_dag", "raw_loader"]
    rule = parse_rules(rules).rules[0]
    assert "the team ingest by its owners" in rule.help


def test_teams_from_value_keeps_file_order() -> None:
    teams = teams_from_value({"z": {"owners": ["a"]}, "a": {"tags": ["t"]}})
    assert teams.names == ("z", "a")


def test_a_changes_teams_are_those_of_its_findings_and_of_the_dags_it_harms() -> None:
    """A pull request that pauses raw_loader (team ingest) opens paused-producer (ingest's) and
    harms report downstream (finance's); a_dag (team_a) is untouched, so team_a is not named."""
    policy = parse_rules(TEAMS)
    before_dags = [{**d, "is_paused": False} if d["dag_id"] == "raw_loader" else d for d in DAGS]
    before, after = estate_of(before_dags, ASSETS), estate_of(DAGS, ASSETS)
    then, now = audit(before, policy=policy), audit(after, policy=policy)
    change = describe(before, after, then.findings, now.findings, teams=policy.teams)
    part = change_json(change)
    assert [(f["code"], f["team"]) for f in part["findingsOpened"]] == [("paused-producer", ["ingest"])]
    assert [(a["dag"], a["team"]) for a in part["affected"]] == [("report", "finance")]
    assert part["teamsAffected"] == ["ingest", "finance"]
    assert "teamsAffected" not in change_json(describe(before, after, then.findings, now.findings))


def test_a_change_names_the_team_of_a_dag_it_changes_even_without_a_finding() -> None:
    policy = parse_rules(TEAMS)
    after_dags = [{**d, "timetable_summary": "@hourly"} if d["dag_id"] == "a_dag" else d for d in DAGS]
    before, after = estate_of(DAGS, ASSETS), estate_of(after_dags, ASSETS)
    then, now = audit(before, policy=policy), audit(after, policy=policy)
    change = describe(before, after, then.findings, now.findings, teams=policy.teams)
    assert (change.dags_changed, change.opened, change.closed) == (("a_dag",), (), ())
    assert change.teams == ("team_a",)


def test_a_dag_that_moved_teams_is_in_both_teams_drift_and_no_other() -> None:
    """compare's team view (core/comparing/compare.py ``of_team``): a_dag passes from team_a (owner team_a) to
    ingest (owner alice); each of the two sees it changed, finance and unowned do not, and each
    view says whose it is."""
    from airflow_provider_coremodels.core.comparing.compare import compare, comparison_json, read_side

    moved = [{**d, "owners": ["alice"]} if d["dag_id"] == "a_dag" else d for d in DAGS]
    old = read_side("old", "old.json", json.dumps(document()).encode())
    new = read_side("new", "new.json", json.dumps(document(dags=moved)).encode())
    seen = {}
    for team in ("team_a", "ingest", "finance", UNOWNED):
        part = comparison_json(compare(old, new, team=team))
        assert part["team"] == team
        seen[team] = part["change"]["dagsChanged"]
    assert seen == {"team_a": ["a_dag"], "ingest": ["a_dag"], "finance": [], UNOWNED: []}
    assert "team" not in comparison_json(compare(old, new))
