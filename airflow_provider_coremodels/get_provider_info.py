"""Provider registration, read by Airflow's ProvidersManager through the entry point.

Kept free of imports so that ``airflow providers list`` and ``airflow --help`` stay fast.
"""

from __future__ import annotations

from typing import Any


def get_provider_info() -> dict[str, Any]:
    from airflow_provider_coremodels import __version__

    return {
        "package-name": "airflow-provider-coremodels",
        "name": "CoreModels",
        "description": "Maps an Airflow estate (DAGs, tasks, assets) into CoreModels, lineage first: "
        "capture through the REST API, audit locally, export a fingerprinted snapshot.",
        "versions": [__version__],
        "connection-types": [
            {
                "hook-class-name": "airflow_provider_coremodels.hooks.airflow_api.AirflowApiHook",
                "connection-type": "airflow_api",
            },
            {
                "hook-class-name": "airflow_provider_coremodels.hooks.coremodels.CoreModelsHook",
                "connection-type": "coremodels",
            },
        ],
        "cli": ["airflow_provider_coremodels.cli.definition.get_coremodels_cli_commands"],
    }
