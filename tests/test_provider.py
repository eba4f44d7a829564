"""Provider registration: entry point, provider info, and an import-light CLI definition."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import entry_points

import pytest
import requests
from support.helpers import PROVIDER_FORMS, REPO, WITHOUT_UI_PAGE

from airflow_provider_coremodels import __version__


def test_entry_point_registers_the_provider() -> None:
    [entry] = [
        e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("airflow_provider_")
    ]
    info = entry.load()()
    assert info["package-name"] == "airflow-provider-coremodels"
    assert info["versions"] == [__version__]
    assert info["cli"] == ["airflow_provider_coremodels.cli.definition.get_coremodels_cli_commands"]
    assert {c["connection-type"]: c["hook-class-name"] for c in info["connection-types"]} == {
        "airflow_api": "airflow_provider_coremodels.hooks.airflow_api.AirflowApiHook",
        "airflow_api_mwaa": "airflow_provider_coremodels.hooks.mwaa.MwaaApiHook",
        "airflow_api_composer": "airflow_provider_coremodels.hooks.composer.ComposerApiHook",
        "coremodels": "airflow_provider_coremodels.hooks.coremodels.CoreModelsHook",
    }


def test_the_package_registers_the_ui_plugin_and_the_provider_its_option() -> None:
    """The plugin is an ``airflow.plugins`` entry point (always loaded, unlike provider-info plugins,
    which Airflow loads only with lazy_discover_providers off), and the page's option is declared."""
    from airflow_provider_coremodels.get_provider_info import get_provider_info
    from airflow_provider_coremodels.ui.plugin import CoreModelsPlugin

    [entry] = [
        e for e in entry_points(group="airflow.plugins") if e.value.startswith("airflow_provider_coremodels")
    ]
    assert (entry.name, entry.load()) == ("coremodels", CoreModelsPlugin)
    assert CoreModelsPlugin.name == "coremodels"
    info = get_provider_info()
    assert "plugins" not in info  # declared twice, Airflow would report the second as an import error
    option = info["config"]["coremodels"]["options"]["ui_snapshot_dir"]
    assert (option["type"], option["default"]) == ("string", "")


def test_airflow_reads_the_page_option_from_its_environment_variable(monkeypatch) -> None:
    from airflow.configuration import conf

    assert conf.get("coremodels", "ui_snapshot_dir", fallback="") == ""
    monkeypatch.setenv("AIRFLOW__COREMODELS__UI_SNAPSHOT_DIR", "/data/coremodels")
    assert conf.get("coremodels", "ui_snapshot_dir", fallback="") == "/data/coremodels"


def test_provider_info_and_cli_definition_import_nothing_heavy() -> None:
    """Airflow imports these on every CLI start: of the core they may load only the finding catalogue
    (the --fail-on choices) and what a finding is, never the model, the parse, the audit, requests,
    pydantic or msgspec."""
    code = (
        "import sys\n"
        "import airflow_provider_coremodels.get_provider_info\n"
        "import airflow_provider_coremodels.cli.definition\n"
        "print(sorted(m for m in sys.modules if m.startswith(('airflow', 'requests', 'pydantic', 'json', "
        "'msgspec', 'yaml'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(ast.literal_eval(out))
    core = {m for m in loaded if m.startswith("airflow_provider_coremodels.core")}
    assert core <= {
        "airflow_provider_coremodels.core",
        "airflow_provider_coremodels.core.estate",  # (a docstring)
        "airflow_provider_coremodels.core.estate.findings",
        "airflow_provider_coremodels.core.estate.rules",
    }
    assert not loaded & {"requests", "pydantic", "airflow", "msgspec", "yaml"}


def test_cli_commands_build_for_airflow() -> None:
    from airflow_provider_coremodels.cli.definition import get_coremodels_cli_commands

    [group] = get_coremodels_cli_commands()
    assert group.name == "coremodels"
    assert [c.name for c in group.subcommands] == [
        "audit",
        "lineage",
        "impact",
        "merge",
        "capture",
        "export",
        "history",
        "compare",
        "teams",
        "mcp",
        "generate",
    ]


@pytest.mark.airflow_server
@WITHOUT_UI_PAGE
def test_where_the_ui_cannot_show_the_page_the_plugin_adds_nothing(airflow_server) -> None:
    """Airflow 3.0's UI has no external views and its API server ignores the UI's cookie: the
    plugin still loads (the API server lists it, and started with it) but mounts no page."""
    plugins = airflow_server.get("/api/v2/plugins").json()["plugins"]
    [plugin] = [p for p in plugins if p["name"] == "coremodels"]
    assert plugin["fastapi_apps"] == []
    icon = requests.get(f"{airflow_server.base_url}/coremodels/icon.svg", timeout=30)
    assert not icon.headers["content-type"].startswith("image/svg")  # the UI's own page, not ours


@pytest.mark.airflow_server
@PROVIDER_FORMS
def test_the_connection_forms_reach_a_real_api_servers_hook_meta(airflow_server) -> None:
    """Airflow 3.2+ builds the connection forms from provider info: display names, labels,
    placeholders, hidden fields and typed extra fields, as /ui/connections/hook_meta serves them."""
    response = airflow_server.get("/ui/connections/hook_meta")
    assert response.status_code == 200
    meta = {item["connection_type"]: item for item in response.json()}
    api, coremodels = meta["airflow_api"], meta["coremodels"]
    assert api["hook_name"] == "Airflow REST API (CoreModels capture)"
    assert api["standard_fields"]["host"] == {
        "hidden": False,
        "title": "API server URL or host",
        "placeholder": "http://airflow-api-server:8080",
    }
    assert set(api["extra_fields"]) == {
        "verify",
        "ca_bundle",
        "concurrency",
        "pacing",
        "pacing_share",
        "timeout",
        "connect_timeout",
        "deadline_alerts",
        "token",
    }
    assert api["extra_fields"]["concurrency"]["value"] == 8
    assert api["extra_fields"]["pacing"]["value"] == "adaptive"
    assert api["extra_fields"]["pacing_share"]["value"] == 0.5
    assert api["extra_fields"]["deadline_alerts"]["value"] is True
    assert api["extra_fields"]["token"]["schema"]["format"] == "password"  # masked in the form
    assert coremodels["hook_name"] == "CoreModels"
    assert [name for name, field in coremodels["standard_fields"].items() if field and field["hidden"]] == [
        "url_schema",
        "port",
        "login",
    ]
    assert coremodels["standard_fields"]["password"]["title"] == "API token"


@pytest.mark.airflow_server
@PROVIDER_FORMS
def test_the_managed_connection_forms_reach_a_real_api_servers_hook_meta(airflow_server) -> None:
    """The MWAA and Composer types: their names, the host relabelled, the fields they do not use
    hidden, and their typed extras, as the API server serves the forms."""
    meta = {item["connection_type"]: item for item in airflow_server.get("/ui/connections/hook_meta").json()}
    mwaa, composer = meta["airflow_api_mwaa"], meta["airflow_api_composer"]
    assert mwaa["hook_name"] == "Amazon MWAA REST API (CoreModels capture)"
    assert composer["hook_name"] == "Google Cloud Composer REST API (CoreModels capture)"
    assert mwaa["standard_fields"]["host"]["title"] == "MWAA environment name"
    assert composer["standard_fields"]["host"]["title"] == "Airflow web server URL"
    for form in (mwaa, composer):
        hidden = {name for name, field in form["standard_fields"].items() if field and field["hidden"]}
        assert hidden == {"url_schema", "port", "login", "password"}
    capture = {"concurrency", "pacing", "pacing_share", "timeout", "connect_timeout", "deadline_alerts"}
    assert (
        set(mwaa["extra_fields"])
        == {"aws_conn_id", "region_name", "endpoint_url", "inject_host_prefix"} | capture
    )
    assert set(composer["extra_fields"]) == {"gcp_conn_id", "verify", "ca_bundle"} | capture
    assert mwaa["extra_fields"]["aws_conn_id"]["value"] == "aws_default"
    assert composer["extra_fields"]["gcp_conn_id"]["value"] == "google_cloud_default"


def test_provider_info_is_valid_for_airflow_and_links_the_documentation() -> None:
    """Checked against the provider-info schema of the installed Airflow (which names no
    documentation-url: an integration's external-doc-url carries it), and the link is the
    project's Documentation URL."""
    import json
    from pathlib import Path

    import airflow
    import jsonschema
    import tomllib

    from airflow_provider_coremodels.get_provider_info import get_provider_info

    info = get_provider_info()
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(info, schema)
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert [i["external-doc-url"] for i in info["integrations"]] == [project["urls"]["Documentation"]]


def test_the_export_task_link_survives_dag_serialization() -> None:
    """Airflow serializes a DAG for the scheduler and the UI: the export task's CoreModels link,
    registered in provider info, must come out of that (as the XCom the task stores when done)."""
    import runpy

    from airflow.providers_manager import ProvidersManager

    link = "airflow_provider_coremodels.operators.links.CoreModelsPageLink"
    assert link in ProvidersManager().extra_links_class_names
    dag = runpy.run_path(str(REPO / "example_dags" / "coremodels_export.py"))["dag"]
    try:
        from airflow.serialization.serialized_objects import DagSerialization as serializer
    except ImportError:  # Airflow 3.0 to 3.2
        from airflow.serialization.serialized_objects import SerializedDAG as serializer
    task = serializer.from_dict(serializer.to_dict(dag)).get_task("export_estate")
    assert list(task.operator_extra_link_dict) == ["CoreModels"]
