"""The team's own rules (core/checks/policy.py): the checks, the scopes, the file's refusals, and the views.

The example estate's rules and the findings they must give are written here by hand, from the
recorded DAGs (airflow_provider_coremodels/example_estate/, example_dags/estate/).
"""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from typing import Any

import jsonschema
import pytest
from support.helpers import SARIF_SCHEMA, recorded_estate

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.checks.linear_regex import WholeMatch
from airflow_provider_coremodels.core.checks.policy import DagId, Policy, parse_rules, rules_from_value
from airflow_provider_coremodels.core.checks.waivers import Waiver, parse_waivers
from airflow_provider_coremodels.core.estate.rules import FAIL_ON, catalogue, failing_findings
from airflow_provider_coremodels.core.reading.merge import Part, merge
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.core.views.lineage import LineageGraph
from airflow_provider_coremodels.core.views.markdown import render_markdown
from airflow_provider_coremodels.core.views.render import finding_line, policy_line, render_table
from airflow_provider_coremodels.core.views.sarif import render_sarif
from airflow_provider_coremodels.errors import RulesFileError

EXAMPLE_RULES = """
# The conventions of a made-up platform team, checked on the example estate.
rules:
  - code: policy-team-tag
    message: Every active DAG carries a team tag.
    require: {tag: "team:*"}
    where: {paused: false}
  - code: policy-owners
    severity: Error
    require: {owner_in: [data-eng, orders-oncall, finance, crm-team]}
  - code: policy-dag-id
    require: {dag_id: "[a-z]+_(orders|revenue|crm|customers|report)"}
  - code: policy-scheduled
    require: {schedule: true}
  - code: policy-retries
    severity: Info
    require: {task_retries_min: 1}
    where: {tag: orders}
  - code: policy-description
    require: {description_min: 20}
  - code: policy-runs
    require: {max_active_runs_max: 4}
    where: {dag_id: "sync_*"}
  - code: policy-no-bash
    require: {task_operator_not_in: [BashOperator]}
    where: {bundle: dags-folder}
  - code: policy-small
    require: {tasks_max: 2}
  - code: policy-elsewhere
    require: {tag: anything}
    where: {bundle: another-bundle}
"""

#: What EXAMPLE_RULES must find in the example estate, worked out by hand from its six DAGs:
#: sorted by (code, subject) as every finding list is.
EXPECTED = [
    ("Warning", "policy-dag-id", "legacy_cleanup", "dag_id: legacy_cleanup"),
    ("Warning", "policy-description", "legacy_cleanup", "description: none"),
    ("Warning", "policy-description", "sync_crm", "description: 18 characters"),  # "Syncs CRM accounts"
    ("Warning", "policy-no-bash", "load_orders.extract", "operator: BashOperator"),
    ("Warning", "policy-no-bash", "load_orders.publish", "operator: BashOperator"),
    ("Error", "policy-owners", "customer_report", "owners: analytics, crm-team; not in the list: analytics"),
    ("Error", "policy-owners", "legacy_cleanup", "owners: airflow; not in the list: airflow"),
    ("Info", "policy-retries", "load_orders.extract", "retries: 0"),
    ("Info", "policy-retries", "load_orders.publish", "retries: 0"),
    ("Warning", "policy-runs", "sync_crm", "max_active_runs: 16"),
    ("Warning", "policy-scheduled", "backfill_customers", "schedule: none"),  # schedule=None
    ("Warning", "policy-small", "sync_crm", "tasks: 3"),
    ("Warning", "policy-team-tag", "customer_report", "tags: none"),
    ("Warning", "policy-team-tag", "daily_revenue", "tags: finance"),
    ("Warning", "policy-team-tag", "legacy_cleanup", "tags: none"),
    ("Warning", "policy-team-tag", "sync_crm", "tags: none"),  # backfill_customers and load_orders are paused
]


def policy_findings(document: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [
        (f["severity"], f["code"], f["subject"], f["detail"])
        for f in document["findings"]
        if f["section"] == "Policy"
    ]


def example_document(rules: str = EXAMPLE_RULES, **kwargs: Any) -> dict[str, Any]:
    estate = recorded_estate()
    return build_document(estate, audit(estate, policy=parse_rules(rules), **kwargs))


def test_the_example_estate_gives_the_findings_worked_out_by_hand() -> None:
    document = example_document()
    assert policy_findings(document) == EXPECTED
    # the built-in rules are untouched by the team's
    assert [f["code"] for f in document["findings"] if f["section"] != "Policy"] == [
        "asset-unproduced",
        "dag-no-description",
        "dag-no-owner",
        "paused-producer",
    ]
    [tag] = [f for f in document["findings"] if f["subject"] == "daily_revenue"]
    assert tag["message"] == "Every active DAG carries a team tag."  # the rule's own message
    part = document["policy"]
    assert (len(part["rules"]), part["notChecked"]) == (10, {})
    assert part["rules"][1] == {
        "code": "policy-owners",
        "severity": "Error",
        "message": "DAG has an owner outside the list (data-eng, orders-oncall, finance, crm-team), or none.",
        "help": "A rule of the team's rules file: for DAGs, it holds when the DAG has an owner and every "
        "owner is one of data-eng, orders-oncall, finance, crm-team. Fix the DAG, or waive the finding "
        "with a reason in the waiver file.",
        "about": "dag",
        "require": {"owner_in": ["data-eng", "orders-oncall", "finance", "crm-team"]},
    }


def test_json_and_yaml_rules_files_are_the_same_rules() -> None:
    as_json = json.dumps(
        {"rules": [{"code": "policy-a", "require": {"tag": "x"}, "where": {"paused": False}}]}
    )
    as_yaml = "- code: policy-a\n  require: {tag: x}\n  where: {paused: false}\n"
    assert parse_rules(as_json).digest == parse_rules(as_yaml).digest
    assert parse_rules(as_json).digest != parse_rules(as_yaml.replace("tag: x", "tag: y")).digest


# -- each check and scope, on small estates -----------------------------------------------------


def dag(dag_id: str, **raw: Any) -> dict[str, Any]:
    return {"dag_id": dag_id, "is_paused": False, "owners": ["team-a"], "tags": [], **raw}


def run(rules: list[dict[str, Any]], dags: list[dict[str, Any]], tasks: Any = None) -> dict[str, Any]:
    estate = parse_artifacts(
        json.dumps({"dags": dags}).encode(), json.dumps(tasks).encode() if tasks is not None else None
    )
    return build_document(estate, audit(estate, policy=rules_from_value(rules)))


@pytest.mark.parametrize(
    ("require", "raw", "detail"),
    [
        ({"tag": "team:*"}, {"tags": [{"name": "team:a"}]}, None),
        ({"tag": "team:*"}, {"tags": [{"name": "daily"}, {"name": "pii"}]}, "tags: daily, pii"),
        ({"owner_in": ["team-a", "team-b"]}, {"owners": ["team-b", "team-a"]}, None),
        ({"owner_in": ["team-a"]}, {"owners": []}, "owners: none"),
        (
            {"owner_in": ["team-a"]},
            {"owners": ["team-a", "bob"]},
            "owners: bob, team-a; not in the list: bob",
        ),
        ({"dag_id": "[a-z]+_v[0-9]+"}, {}, "dag_id: d"),
        ({"schedule": True}, {"timetable_summary": "0 5 * * *"}, None),
        ({"schedule": True}, {"timetable_summary": "Asset"}, None),  # scheduled on assets
        ({"schedule": True}, {"timetable_summary": None}, "schedule: none"),
        ({"schedule": False}, {"timetable_summary": "@daily"}, "schedule: @daily"),
        ({"schedule": False}, {}, None),
        ({"description_min": 10}, {"description": "  short  "}, "description: 5 characters"),
        ({"description_min": 10}, {"description": "long enough text"}, None),
        ({"max_active_runs_max": 1}, {"max_active_runs": 3}, "max_active_runs: 3"),
        ({"max_active_runs_max": 3}, {"max_active_runs": 3}, None),
    ],
)
def test_a_dag_check_holds_or_says_what_it_found(
    require: dict[str, Any], raw: dict[str, Any], detail: str | None
) -> None:
    document = run([{"code": "policy-x", "require": require}], [dag("d", **raw)])
    assert [f["detail"] for f in document["findings"] if f["code"] == "policy-x"] == (
        [detail] if detail else []
    )


def test_task_checks_name_each_task_and_count_what_they_could_not_read() -> None:
    tasks = {
        "d": [
            {"task_id": "ok", "retries": 2.0, "operator_name": "PythonOperator"},
            {"task_id": "fragile", "retries": 0, "class_ref": {"class_name": "BashOperator"}},
            {"task_id": "unknown", "operator_name": "EmptyOperator"},  # no retries given: not guessed
        ]
    }
    document = run(
        [
            {"code": "policy-retries", "require": {"task_retries_min": 1}},
            {"code": "policy-no-bash", "require": {"task_operator_not_in": ["BashOperator", "SSHOperator"]}},
            {"code": "policy-runs", "require": {"max_active_runs_max": 2}},  # max_active_runs not given
        ],
        [dag("d")],
        tasks,
    )
    assert policy_findings(document) == [
        ("Warning", "policy-no-bash", "d.fragile", "operator: BashOperator"),
        ("Warning", "policy-retries", "d.fragile", "retries: 0"),
    ]
    assert document["policy"]["notChecked"] == {"max_active_runs unknown": 1, "retries unknown": 1}
    assert policy_line(document) == (
        f"policy: 3 rules (digest {document['policy']['digest']}), 2 findings; "
        "2 not checked (max_active_runs unknown: 1, retries unknown: 1)"
    )


@pytest.mark.parametrize(
    ("where", "flagged"),
    [
        ({}, ["dev_job", "prod_job", "team_b_job"]),
        ({"tag": "prod"}, ["prod_job"]),
        ({"dag_id": "*_job"}, ["dev_job", "prod_job", "team_b_job"]),
        ({"dag_id": "prod_*"}, ["prod_job"]),
        ({"bundle": "team-b"}, ["team_b_job"]),
        ({"paused": True}, ["dev_job"]),
        ({"paused": False, "tag": "prod"}, ["prod_job"]),  # every condition given must hold
        ({"deployment": "eu"}, ["dev_job", "prod_job", "team_b_job"]),  # the estate's own name
        ({"deployment": "us"}, []),
    ],
)
def test_a_scope_picks_the_dags_a_rule_applies_to(where: dict[str, Any], flagged: list[str]) -> None:
    dags = [
        dag("prod_job", tags=[{"name": "prod"}]),
        dag("dev_job", is_paused=True),
        dag("team_b_job", bundle_name="team-b", relative_fileloc="b.py"),
    ]
    estate = parse_artifacts(json.dumps({"dags": dags}).encode())
    estate = dataclasses.replace(estate, state=dataclasses.replace(estate.state, deployment="eu"))
    policy = rules_from_value([{"code": "policy-x", "require": {"owner_in": ["nobody"]}, "where": where}])
    result = audit(estate, policy=policy)
    assert [f.subject for f in result.findings if f.code == "policy-x"] == flagged


def test_airflows_example_bundles_are_never_checked() -> None:
    document = run(
        [{"code": "policy-x", "require": {"tag": "team:*"}}],
        [dag("mine"), dag("example_bash_operator", bundle_name="example_dags", relative_fileloc="e.py")],
    )
    assert [f["subject"] for f in document["findings"] if f["code"] == "policy-x"] == ["mine"]


def test_rules_run_on_a_merged_estate_with_the_merged_identities() -> None:
    """merge: a DAG's subject is <deployment>/<dag_id>, a task's <deployment>/<dag_id>.<task_id>;
    the dag_id check and scope read the dag_id Airflow knows, the deployment scope the part's name."""
    parts = []
    for name in ("bi", "etl"):
        estate = parse_artifacts(
            json.dumps({"dags": [dag("load_orders"), dag("Bad-Name")]}).encode(),
            json.dumps({"load_orders": [{"task_id": "t", "retries": 0}], "Bad-Name": []}).encode(),
        )
        parts.append(Part(name, estate))
    merged = merge(parts)
    policy = rules_from_value(
        [
            {"code": "policy-id", "require": {"dag_id": "[a-z_]+"}},
            {"code": "policy-retries", "require": {"task_retries_min": 1}, "where": {"deployment": "etl"}},
            {"code": "policy-load", "require": {"tag": "x"}, "where": {"dag_id": "load_*"}},
        ]
    )
    assert [
        (f.code, f.subject, f.detail) for f in audit(merged, policy=policy).findings if f.section == "Policy"
    ] == [
        ("policy-id", "bi/Bad-Name", "dag_id: Bad-Name"),
        ("policy-id", "etl/Bad-Name", "dag_id: Bad-Name"),
        ("policy-load", "bi/load_orders", "tags: none"),
        ("policy-load", "etl/load_orders", "tags: none"),
        ("policy-retries", "etl/load_orders.t", "retries: 0"),
    ]


# -- waivers, --fail-on, the stored document --------------------------------------------------


def test_policy_findings_are_waived_and_counted_like_any_other() -> None:
    waivers = parse_waivers(
        "- code: policy-team-tag\n  subject: '*_*'\n  reason: tags arrive with the next release\n"
        "  expires: 2099-01-31\n- code: policy-owners\n  subject: legacy_*\n  reason: ops owns it\n"
    )
    document = example_document(waivers=waivers)
    waived = {(f["code"], f["subject"]) for f in document["findings"] if f.get("waived")}
    assert waived == {
        ("policy-team-tag", "customer_report"),
        ("policy-team-tag", "daily_revenue"),
        ("policy-team-tag", "legacy_cleanup"),
        ("policy-team-tag", "sync_crm"),
        ("policy-owners", "legacy_cleanup"),
    }
    failing = failing_findings(document["findings"], "error")
    assert [(f["code"], f["subject"]) for f in failing] == [("policy-owners", "customer_report")]
    assert "error" in FAIL_ON


def test_a_waiver_file_takes_any_well_formed_policy_code_but_not_a_malformed_one() -> None:
    assert parse_waivers("- {code: policy-not-in-any-file, subject: '*', reason: r}")[0] == Waiver(
        "policy-not-in-any-file", "*", "r"
    )
    with pytest.raises(Exception, match=r"waivers\[0\]\.code 'policy-Bad_Code' is not a finding code"):
        parse_waivers("- {code: policy-Bad_Code, subject: '*', reason: r}")


def test_a_stored_snapshots_re_audit_gives_the_same_findings_only_with_the_same_rules() -> None:
    document = example_document()
    stored = load_document(encode(document))
    assert stored.policy_digest == document["policy"]["digest"]
    assert stored.estate is not None
    again = build_document(stored.estate, audit(stored.estate, policy=parse_rules(EXAMPLE_RULES)))
    assert policy_findings(again) == EXPECTED
    assert again["policy"] == document["policy"]
    # other rules, other findings; no rules, none (and the line says what the snapshot was checked against)
    other = build_document(
        stored.estate, audit(stored.estate, policy=parse_rules(EXAMPLE_RULES.replace("team:*", "*")))
    )
    assert len(policy_findings(other)) == len(EXPECTED) - 1  # daily_revenue's tag now matches any glob
    reason = (
        f"the snapshot was checked against rules {stored.policy_digest}; give --rules to check them again"
    )
    bare = build_document(stored.estate, audit(stored.estate, no_policy=reason))
    assert policy_findings(bare) == []
    assert policy_line(bare) == f"policy: not checked ({reason})"


def test_the_fingerprint_does_not_depend_on_the_rules() -> None:
    assert example_document()["fingerprint"] == example_document("rules: []")["fingerprint"]


# -- the views ---------------------------------------------------------------------------------


def test_every_view_shows_policy_findings_with_their_rules() -> None:
    document = example_document()
    table = render_table(document)
    assert "Error     Policy       policy-owners" in table
    assert policy_line(document) in table.splitlines()
    assert "policy-owners       DAG has an owner outside the list" in table  # what the code means
    assert finding_line(next(f for f in document["findings"] if f["code"] == "policy-retries")) == (
        "Info policy-retries load_orders.extract: Task retries fewer than 1 time — one failure fails "
        "its run. (retries: 0)"
    )
    markdown = render_markdown(document)
    assert "`policy-owners`" in markdown and "A rule of the team's rules file" in markdown

    sarif = json.loads(render_sarif(document, tool_version="0"))
    jsonschema.validate(sarif, json.loads(SARIF_SCHEMA.read_text()))
    rules = {rule["id"]: rule for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["policy-owners"]["help"] == {
        "text": document["policy"]["rules"][1]["help"]
    }  # text, not markdown
    assert rules["policy-owners"]["defaultConfiguration"] == {"level": "error"}
    assert rules["airflow-warning"]["help"]["markdown"]  # built-in rules keep their markdown
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "policy-retries"]
    assert [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results] == [
        "orders.py",  # a task finding sits at its DAG's file
        "orders.py",
    ]
    for result in sarif["runs"][0]["results"]:
        assert sarif["runs"][0]["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]

    graph = LineageGraph.from_document(document)
    assert graph.node("dag:daily_revenue").findings == ("policy-team-tag",)  # it marks its DAG


def test_the_catalogue_reads_a_documents_policy_rules_leniently() -> None:
    document = example_document()
    rules = catalogue(document)
    assert rules["policy-retries"].about == "task" and rules["policy-retries"].section == "Policy"
    damaged = {
        "policy": {
            "rules": [{"code": "policy-x"}, "junk", {**document["policy"]["rules"][0], "about": "asset"}]
        }
    }
    assert not any(code.startswith("policy-") for code in catalogue(damaged))


# -- a rules file is refused whole, naming the rule and the key ---------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "rules:\n  - code: policy-a\n    require: {tag: x}\n    requires: {tag: y}\n",
            "rules[0] has unknown key(s) requires; expected code, severity, message, help, require, where",
        ),
        (
            "rules: [{code: policy-a, require: {tagg: x}}]",
            "rules[0].require has unknown key(s) tagg; expected tag, owner_in, dag_id",
        ),
        (
            "rules: [{code: policy-a, require: {tag: x, schedule: true}}]",
            "rules[0].require names 2 checks (schedule, tag); a rule has exactly one",
        ),
        ("rules: [{code: policy-a}]", "rules[0].require must be a mapping naming exactly one check"),
        ("rules: [{code: team-tag, require: {tag: x}}]", "rules[0].code 'team-tag' must start with policy-"),
        (
            "rules: [{code: policy-Team_Tag, require: {tag: x}}]",
            "rules[0].code 'policy-Team_Tag' must be policy- then",
        ),
        (
            "rules: [{code: policy-a, require: {tag: x}}, {code: policy-a, require: {tag: y}}]",
            "rules[1].code policy-a repeats the code of rules[0]",
        ),
        (
            "rules: [{code: policy-a, severity: Critical, require: {tag: x}}]",
            "rules[0].severity 'Critical' is not a severity; expected Info, Warning or Error",
        ),
        (
            "rules: [{code: policy-a, require: {dag_id: 'x('}}]",
            "rules[0].require.dag_id 'x(' does not compile: missing ), unterminated subpattern at position 1",
        ),
        (
            "rules: [{code: policy-a, require: {dag_id: '(a)\\1'}}]",
            "rules[0].require.dag_id '(a)\\\\1' backreferences and octal escapes are not supported",
        ),
        (
            "rules: [{code: policy-a, require: {dag_id: '(?=a)a'}}]",
            "rules[0].require.dag_id '(?=a)a' lookaheads are not supported",
        ),
        (
            "rules: [{code: policy-a, require: {dag_id: '(x{100}){100}'}}]",
            "is too costly: it expands to more than 2000 states",
        ),
        ("rules: [{code: policy-a, require: {dag_id: 'a{5000}'}}]", "a repeat count above 100 is too costly"),
        (
            "rules: [{code: policy-a, require: {task_retries_min: -1}}]",
            "rules[0].require.task_retries_min must be a whole number from 0 to 1,000,000, got -1",
        ),
        ("rules: [{code: policy-a, require: {task_retries_min: true}}]", "got True"),
        (
            "rules: [{code: policy-a, require: {schedule: 'yes please'}}]",
            "rules[0].require.schedule must be true or false",
        ),
        (
            "rules: [{code: policy-a, require: {owner_in: []}}]",
            "rules[0].require.owner_in must be a non-empty list of names",
        ),
        (
            "rules: [{code: policy-a, require: {owner_in: [a, 7]}}]",
            "rules[0].require.owner_in[1] must be a non-empty string",
        ),
        (
            "rules: [{code: policy-a, require: {tag: x}, where: {team: a}}]",
            "rules[0].where has unknown key(s) team; expected tag, dag_id, bundle, deployment, paused",
        ),
        (
            "rules: [{code: policy-a, require: {tag: x}, where: {paused: maybe}}]",
            "rules[0].where.paused must be true or false",
        ),
        ("rules: [{code: policy-a, require: {tag: ''}}]", "rules[0].require.tag must be a non-empty glob"),
        (
            "rules: [{code: policy-a, message: '', require: {tag: x}}]",
            "rules[0].message must be a non-empty string",
        ),
        ("rule: []", "has unknown key(s) rule; expected rules"),
        ("rules: {code: policy-a}", 'must be a list of rules (or {"rules": [...]})'),
        ("rules: [policy-a]", "rules[0] must be a mapping with code and require"),
        (
            "- &r {code: policy-a, require: {tag: x}}\n- *r\n",
            "uses a YAML anchor at line 1: anchors and aliases are not allowed in rules files",
        ),
        ("rules:\n  - code: policy-a\n    require:\n      owner_in: *who\n", "uses a YAML alias at line 4"),
        ("[" * 17 + "]" * 17, "nests more than 16 levels deep at line 1; a rules file needs six"),
        ("rules: [{code: policy-a, require: {tag: [unclosed}}]", "is not valid YAML or JSON at line 1"),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_a_malformed_rules_file_is_refused_naming_the_rule_and_the_key(
    text: str | bytes, problem: str
) -> None:
    with pytest.raises(RulesFileError) as caught:
        parse_rules(text)
    message = str(caught.value)
    assert message.startswith("rules file ")
    assert problem in message
    assert "\n" not in message and len(message) < 400  # one line, quoting little of the file


def test_a_rules_file_s_every_error_is_said_at_once_in_one_line() -> None:
    """Issue 37: not only the first. Each rule, and each part of a rule, is checked: an unknown key
    does not hide a missing check, a bad severity does not hide a bad regex; in file order."""
    text = (
        "rules:\n"
        "  - {code: policy-team-tag, requires: {tag: 'team:*'}}\n"
        "  - {code: policy-fine, require: {tag: x}}\n"
        "  - {code: policy-bad, severity: Critical, require: {dag_id: 'team_('}}\n"
        "  - {code: policy-team-tag, require: {schedule: maybe}}\n"
        "  - {code: team-tag, require: {tag: x}, where: {paused: maybe}}\n"
    )
    with pytest.raises(RulesFileError) as caught:
        parse_rules(text)
    message = str(caught.value)
    assert "\n" not in message
    head, _, listed = message.partition(": ")
    assert head == "rules file has 8 errors"
    said = [
        "rules[0] has unknown key(s) requires",
        "rules[0].require must be a mapping naming exactly one check",
        "rules[2].severity 'Critical' is not a severity",
        "rules[2].require.dag_id 'team_(' does not compile",
        "rules[3].require.schedule must be true or false",
        "rules[3].code policy-team-tag repeats the code of rules[0]",
        "rules[4].code 'team-tag' must start with policy-",
        "rules[4].where.paused must be true or false",
    ]
    positions = [listed.find(part) for part in said]
    assert -1 not in positions and positions == sorted(positions), listed
    assert "rules[1]" not in listed


def test_a_rules_file_with_many_errors_lists_ten_and_counts_the_rest() -> None:
    text = "rules:\n" + "".join(f"  - {{code: policy-r{i}, require: {{tagg: x}}}}\n" for i in range(25))
    with pytest.raises(RulesFileError) as caught:
        parse_rules(text)
    message = str(caught.value)
    assert message.startswith("rules file has 25 errors: rules[0].require has unknown key(s) tagg")
    assert "rules[9].require" in message and "rules[10]" not in message
    assert message.endswith("; and 15 more") and "\n" not in message


def test_a_rules_file_of_six_levels_is_accepted_at_the_waiver_files_bound() -> None:
    """The deepest real rules file (rules > list > rule > require > owner_in > name) is six levels."""
    assert len(parse_rules("rules:\n  - code: policy-a\n    require:\n      owner_in: [a]\n").rules) == 1
    assert parse_rules("").rules == ()  # an empty file has no rules


def test_an_alias_bomb_is_refused_before_it_is_expanded() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )
    tracemalloc.start()
    try:
        with pytest.raises(RulesFileError, match="anchors and aliases are not allowed in rules files"):
            parse_rules(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # expanded, the bomb is 9 * 4**9 (2.4 million) strings


@pytest.mark.parametrize(
    "pattern",
    [r"(a|a)*b", r"(a+)+b", r"(a*)*b", r"\w*\w*\w*\w*\w*\w*\w*!", r"(x+x+)+y", r"(.*a){20}"],
)
def test_a_regex_that_would_backtrack_runs_in_linear_time(pattern: str) -> None:
    """Each of these takes Python's re seconds to years on a 250-character dag_id it does not match."""
    policy = rules_from_value([{"code": "policy-id", "require": {"dag_id": pattern}}])
    dags = [dag("a" * 200 + str(i) + "x" * 48) for i in range(200)]  # Airflow's longest: 250 characters
    estate = parse_artifacts(json.dumps({"dags": dags}).encode())
    rule = policy.rules[0]
    # never re: RE2, linear in time and bounded in memory (tests/core/test_linear_regex.py bounds it)
    assert isinstance(rule.check, DagId) and isinstance(rule.check.regex, WholeMatch)
    result = audit(estate, policy=policy)
    assert sum(f.code == "policy-id" for f in result.findings) == 200


def test_rules_do_not_change_when_given_as_a_mapping_or_a_list() -> None:
    rules = [{"code": "policy-a", "require": {"tag": "x"}}]
    assert rules_from_value({"rules": rules}).digest == rules_from_value(rules).digest
    assert isinstance(rules_from_value(rules), Policy)
