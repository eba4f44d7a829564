"""Provider registration: entry point, provider info, and an import-light CLI definition."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

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
        "coremodels": "airflow_provider_coremodels.hooks.coremodels.CoreModelsHook",
    }


def test_provider_info_and_cli_definition_import_nothing_heavy() -> None:
    """Airflow imports these on every CLI start: they must not pull in the core, requests or pydantic."""
    code = (
        "import sys\n"
        "import airflow_provider_coremodels.get_provider_info\n"
        "import airflow_provider_coremodels.cli.definition\n"
        "print(sorted(m for m in sys.modules if m.startswith(('airflow', 'requests', 'pydantic', 'json'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "airflow_provider_coremodels.core" not in out
    assert "'requests'" not in out and "'pydantic'" not in out and "'airflow'" not in out


def test_cli_commands_build_for_airflow() -> None:
    from airflow_provider_coremodels.cli.definition import get_coremodels_cli_commands

    [group] = get_coremodels_cli_commands()
    assert group.name == "coremodels"
    assert [c.name for c in group.subcommands] == ["audit", "capture", "export", "generate"]
