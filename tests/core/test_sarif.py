"""SARIF 2.1.0: valid against the official schema, one rule per code, findings at the DAG files."""

from __future__ import annotations

import datetime as dt
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.helpers import SARIF_SCHEMA, document_for, recorded_document, recorded_estate

from airflow_provider_coremodels.core import audit, build_document, load_document, parse_artifacts
from airflow_provider_coremodels.core.checks.waivers import Waiver
from airflow_provider_coremodels.core.estate.rules import RULES
from airflow_provider_coremodels.core.views.sarif import render_sarif


@cache
def validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def sarif(document: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    text = render_sarif(document, tool_version="9.9.9", **kwargs)
    value = json.loads(text)
    errors = sorted(validator().iter_errors(value), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    return value


def results_by(value: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["ruleId"], r["properties"]["subject"]): r for r in value["runs"][0]["results"]}


def uris(result: dict[str, Any]) -> list[str]:
    return [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in result["locations"]]


def test_the_schema_rejects_what_it_should() -> None:
    """The validator is live: a document missing its version fails it."""
    assert list(validator().iter_errors({"runs": []}))


def test_recorded_estate_validates_with_one_rule_per_code() -> None:
    value = sarif(recorded_document())
    driver = value["runs"][0]["tool"]["driver"]
    assert value["version"] == "2.1.0"
    assert (driver["name"], driver["version"]) == ("airflow-provider-coremodels", "9.9.9")
    assert [rule["id"] for rule in driver["rules"]] == [rule.code for rule in RULES]
    owner_rule = driver["rules"][[r.code for r in RULES].index("dag-no-owner")]
    assert owner_rule["defaultConfiguration"] == {"level": "warning"}
    assert "default_args" in owner_rule["help"]["text"]
    for result in value["runs"][0]["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_dag_findings_sit_at_the_dag_file_relative_to_its_bundle() -> None:
    results = results_by(sarif(recorded_document()))
    owner = results[("dag-no-owner", "legacy_cleanup")]
    assert uris(owner) == ["legacy.py"]
    assert owner["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    assert owner["level"] == "warning"
    assert owner["message"]["text"].startswith("legacy_cleanup: DAG has no owner but the default")
    assert results[("dag-no-description", "legacy_cleanup")]["level"] == "note"


def test_asset_findings_sit_at_the_files_of_their_consumers() -> None:
    results = results_by(sarif(recorded_document()))
    # daily_revenue (orders.py) consumes both assets.
    assert uris(results[("paused-producer", "s3://lake/orders.parquet")]) == ["orders.py"]
    assert uris(results[("asset-unproduced", "s3://vendor/fx_rates.csv")]) == ["orders.py"]


def test_source_root_prefixes_every_location() -> None:
    results = results_by(sarif(recorded_document(), source_root="deploy/dags"))
    assert uris(results[("dag-no-owner", "legacy_cleanup")]) == ["deploy/dags/legacy.py"]


def test_airflow2_paths_are_relative_to_the_shared_dag_folder() -> None:
    """The v1 API gives only absolute filelocs: the folder they all share stands in for the bundle."""
    results = results_by(sarif(recorded_document("airflow2")))
    assert uris(results[("dag-no-owner", "legacy_cleanup")]) == ["legacy/cleanup.py"]


def test_consumers_in_several_files_give_several_locations() -> None:
    dags = [
        {"dag_id": d, "fileloc": f"/dags/{d}.py", "owners": ["team"], "description": "x", "is_paused": False}
        for d in ("a", "b")
    ]
    datasets = {"assets": [{"uri": "s3://x", "scheduled_dags": [{"dag_id": "a"}, {"dag_id": "b"}]}]}
    results = results_by(sarif(document_for(dags, None, datasets)))
    assert uris(results[("asset-unproduced", "s3://x")]) == ["a.py", "b.py"]


def test_waived_findings_are_suppressed_with_their_reason() -> None:
    estate = recorded_estate()
    waiver = Waiver("dag-no-owner", "legacy_*", "ops owns it", dt.date(2999, 1, 1))
    document = build_document(estate, audit(estate, waivers=(waiver,)))
    results = results_by(sarif(document))
    assert results[("dag-no-owner", "legacy_cleanup")]["suppressions"] == [
        {"kind": "external", "status": "accepted", "justification": "ops owns it (until 2999-01-01)"}
    ]
    assert "suppressions" not in results[("dag-no-description", "legacy_cleanup")]


def test_expired_waivers_sit_at_the_waiver_file() -> None:
    estate = recorded_estate()
    waiver = Waiver("dag-no-owner", "legacy_*", "ops owns it", dt.date(2000, 1, 1))
    document = build_document(estate, audit(estate, waivers=(waiver,)))
    results = results_by(sarif(document, waivers_path="governance/waivers.yaml"))
    assert uris(results[("waiver-expired", "dag-no-owner legacy_*")]) == ["governance/waivers.yaml"]


def test_drift_findings_sit_at_the_dag_file_or_name_what_is_gone(tmp_path: Path) -> None:
    def dag(dag_id: str, fileloc: str) -> dict[str, Any]:
        return {"dag_id": dag_id, "fileloc": fileloc, "owners": ["t"], "description": "d", "is_paused": False}

    before = document_for(
        [dag("etl.v2", "/dags/etl.py"), dag("gone", "/dags/gone.py")],
        {"etl.v2": [{"task_id": "load", "operator_name": "BashOperator"}]},
    )
    now = document_for(
        [dag("etl.v2", "/dags/etl.py"), dag("other", "/dags/sub/other.py")],
        {"etl.v2": [{"task_id": "load", "operator_name": "PythonOperator"}]},
    )
    estate = load_document(json.dumps(now)).estate
    baseline = load_document(json.dumps(before)).as_baseline()
    assert estate is not None
    results = results_by(sarif(build_document(estate, audit(estate, baseline))))
    assert uris(results[("field-type-drift", "etl.v2.load")]) == ["etl.py"]  # a dag_id with a dot
    assert uris(results[("dataset-unmapped", "other")]) == ["sub/other.py"]
    assert results[("dataset-removed", "gone")]["locations"] == [
        {"logicalLocations": [{"fullyQualifiedName": "gone", "kind": "module"}]}
    ]


def test_partial_fingerprints_follow_code_and_subject_only() -> None:
    first = results_by(sarif(recorded_document()))
    second = results_by(sarif(recorded_document(), source_root="elsewhere"))
    for key, result in first.items():
        assert result["partialFingerprints"] == second[key]["partialFingerprints"]
    assert len({json.dumps(r["partialFingerprints"]) for r in first.values()}) == len(first)


@pytest.mark.parametrize(
    ("hostile", "uri"),
    [
        ('"quoted" \\ back', "%22quoted%22%20%5C%20back.py"),
        ("<script>alert(1)<", "%3Cscript%3Ealert%281%29%3C.py"),
        ("dag\u2028line", "dag%E2%80%A8line.py"),
        ("日本", "%E6%97%A5%E6%9C%AC.py"),
    ],
)
def test_hostile_names_still_validate_and_paths_are_percent_encoded(hostile: str, uri: str) -> None:
    document = document_for([{"dag_id": hostile, "fileloc": f"/dags/{hostile}.py", "owners": ["airflow"]}])
    result = results_by(sarif(document))[("dag-no-owner", hostile)]
    assert uris(result) == [uri]
    assert result["message"]["text"].startswith(f"{hostile}: ")


def test_the_asset_estate_validates_and_locates_conflicts_at_the_refused_assets_dags() -> None:
    results = results_by(sarif(recorded_document("airflow3_assets")))
    assert uris(results[("asset-conflict", "s3://lake/sales")]) == ["conflict_second.py"]
    assert uris(results[("asset-conflict", "s3://lake/inventory/v2")]) == ["conflict_second.py"]
    assert uris(results[("paused-producer", "s3://lake/raw_orders")]) == ["asset_chain.py"]
    assert uris(results[("asset-unproduced", "s3://lake/manual_prices")]) == ["conditional.py"]


def test_examples_loaded_is_a_logical_location() -> None:
    examples = [
        {"dag_id": "example_a", "is_paused": False, "bundle_name": "example_dags", "fileloc": "/x/a.py"}
    ]
    [result] = sarif(document_for({"dags": examples}))["runs"][0]["results"]
    assert result["ruleId"] == "examples-loaded"
    assert result["locations"] == [
        {"logicalLocations": [{"fullyQualifiedName": "example_dags", "kind": "namespace"}]}
    ]


def test_freshness_findings_sit_at_the_active_producers_files() -> None:
    """Their cause is with the producers the detail names: the active ones, not a paused one."""
    dags = [
        {"dag_id": d, "fileloc": f"/dags/{d}.py", "owners": ["team"], "description": "x",
         "is_paused": d == "old", "timetable_summary": "0 5 * * *" if d != "report" else "Asset"}
        for d in ("load", "old", "report")
    ]  # fmt: skip
    datasets = {"assets": [{
        "uri": "s3://x", "created_at": "2026-10-01T00:00:00Z",
        "last_asset_event": {"id": 1, "timestamp": "2026-11-20T00:00:00Z"},
        "producing_tasks": [{"dag_id": "load", "task_id": "t"}, {"dag_id": "old", "task_id": "t"}],
        "scheduled_dags": [{"dag_id": "report"}],
    }]}  # fmt: skip
    estate = parse_artifacts(
        json.dumps({"dags": dags, "captured_at": "2026-12-01T00:00:00Z"}), None, json.dumps(datasets)
    )
    results = results_by(sarif(build_document(estate, audit(estate))))
    assert uris(results[("asset-stale", "s3://x")]) == ["load.py"]


def test_a_merged_estate_names_the_deployments_of_the_run_and_of_each_result() -> None:
    """In a merged estate a DAG file is relative to its own deployment's bundle: each result says
    which deployments the DAGs it points at run in, and the run which deployments it merges."""
    from airflow_provider_coremodels.core.reading.merge import Part, merge

    def part(name: str, dags: list[dict[str, Any]], assets: list[dict[str, Any]]) -> Part:
        estate = parse_artifacts(json.dumps({"dags": dags}), None, json.dumps({"assets": assets}))
        return Part(name, estate)

    orders = "s3://lake/orders"
    etl = part(
        "etl",
        [{"dag_id": "load", "is_paused": True, "owners": ["etl"], "relative_fileloc": "load.py"}],
        [{"uri": orders, "producing_tasks": [{"dag_id": "load", "task_id": "t"}]}],
    )
    bi = part(
        "bi",
        [{"dag_id": "report", "is_paused": False, "owners": ["bi"], "relative_fileloc": "report.py"}],
        [{"uri": orders, "scheduled_dags": [{"dag_id": "report"}]}],
    )
    merged = merge([etl, bi])
    value = sarif(build_document(merged, audit(merged)))
    run = value["runs"][0]
    assert run["properties"]["deployments"] == ["bi", "etl"]
    results = results_by(value)
    assert results[("paused-producer", orders)]["properties"]["deployments"] == ["bi"]  # at its consumers
    assert results[("dag-no-description", "etl/load")]["properties"]["deployments"] == ["etl"]
    one = sarif(build_document(etl.estate, audit(etl.estate)))["runs"][0]
    assert "deployments" not in one["properties"]
    assert all("deployments" not in r["properties"] for r in one["results"])


# -- what the estate says stays inert (issue 23, item 17) ------------------------------------


@pytest.mark.parametrize(
    ("relative", "fileloc", "uri"),
    [
        ("../../.github/workflows/ci.yml", "/opt/airflow/dags/x.py", None),  # out of the root
        ("a/../../../etc/passwd", "/opt/airflow/dags/x.py", None),
        ("..", "/opt/airflow/dags/x.py", None),
        ("sub/./x/../dag.py", "/opt/airflow/dags/sub/dag.py", "dags/sub/dag.py"),  # normalized
        ("/abs/dag.py", "/opt/airflow/dags/abs/dag.py", "dags/abs/dag.py"),  # read inside the root
        (None, "/opt/airflow/dags/../../../etc/shadow", None),  # Airflow 2: relative to the DAG folder
        (None, "/opt/airflow/dags/team/dag.py", "dags/team/dag.py"),
    ],
)
def test_a_location_never_leaves_the_source_root(relative: str | None, fileloc: str, uri: str | None) -> None:
    """Before: ``dags/../../.github/workflows/ci.yml`` was uploaded as the alert's location, a file
    outside the DAG folder the server chose. Now a path is normalized, and one that leaves its
    folder is no location: the alert keeps a logical one and says why."""
    dags = [
        {"dag_id": "victim", "fileloc": fileloc, "relative_fileloc": relative, "owners": ["airflow"]},
        {"dag_id": "good", "fileloc": "/opt/airflow/dags/good.py", "owners": ["team"], "description": "d"},
    ]
    document = document_for([{k: v for k, v in dag.items() if v is not None} for dag in dags])
    result = results_by(sarif(document, source_root="dags"))[("dag-no-owner", "victim")]
    if uri is None:
        assert "physicalLocation" not in result["locations"][0]
        assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "victim"
        assert "leaves its folder" in result["properties"]["locationRefused"]
    else:
        assert uris(result) == [uri]
        assert "locationRefused" not in result["properties"]
    for location in result["locations"]:
        path = location.get("physicalLocation", {}).get("artifactLocation", {}).get("uri", "")
        assert ".." not in path.split("/")


def test_a_broken_file_outside_the_dag_folder_is_no_location() -> None:
    dags = {
        "dags": [
            {"dag_id": "good", "fileloc": "/opt/airflow/dags/good.py", "owners": ["t"], "description": "d"}
        ],
        "import_errors": [
            {"filename": "/opt/airflow/dags/../../../home/runner/.ssh/config", "stack_trace": "boom"},
            {"filename": "/opt/airflow/dags/broken.py", "stack_trace": "boom"},
        ],
    }
    results = sarif(document_for(dags), source_root="dags")["runs"][0]["results"]
    located = sorted(uri for r in results if r["ruleId"] == "dag-import-error" for uri in uris_of(r))
    assert located == ["dags/broken.py"]


def uris_of(result: dict[str, Any]) -> list[str]:
    return [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for loc in result["locations"]
        if "physicalLocation" in loc
    ]


def test_an_embedded_link_in_the_message_is_inert() -> None:
    """Before: a dag_id ``[click here](https://evil.example/...)`` became a live embedded link of the
    alert's message (SARIF 3.11.6). Now its brackets are escaped; the subject property stays exact."""
    hostile = "[click here](https://evil.example/login)"
    document = document_for([{"dag_id": hostile, "fileloc": "/dags/x.py", "owners": ["airflow"]}])
    result = results_by(sarif(document))[("dag-no-owner", hostile)]
    text = result["message"]["text"]
    assert text.startswith(r"\[click here\](https://evil.example/login): DAG has no owner")
    assert "[click" not in text.replace(r"\[", "")
    assert result["properties"]["subject"] == hostile


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("plain", "plain"),
        ("[a](b)", r"\[a\](b)"),
        (r"back\[slash]", r"back\\\[slash\]"),
        ("a \\ b", "a \\ b"),  # a backslash before no bracket is literal
    ],
)
def test_plain_text_escapes_brackets_as_sarif_says(text: str, written: str) -> None:
    from airflow_provider_coremodels.core.views.sarif import plain_text

    assert plain_text(text) == written
