"""Provider registration, read by Airflow's ProvidersManager through the entry point.

Kept free of imports so that ``airflow providers list`` and ``airflow --help`` stay fast.
"""

from __future__ import annotations

from typing import Any

DOCUMENTATION_URL = "https://github.com/coremodels/airflow-provider-coremodels/blob/main/README.md"


def get_provider_info() -> dict[str, Any]:
    from airflow_provider_coremodels import __version__
    from airflow_provider_coremodels.hooks.forms import (
        AIRFLOW_API,
        AIRFLOW_API_COMPOSER,
        AIRFLOW_API_MWAA,
        COREMODELS,
        FORMS,
        HOOK_CLASSES,
    )

    return {
        "package-name": "airflow-provider-coremodels",
        "name": "CoreModels",
        "description": "Maps an Airflow estate (DAGs, tasks, assets) into CoreModels, lineage first: "
        "capture through the REST API, audit locally, export a fingerprinted snapshot.",
        "versions": [__version__],
        # Airflow's provider-info schema has no documentation-url; an integration's
        # external-doc-url is where it keeps one (the project's Documentation URL).
        "integrations": [
            {
                "integration-name": "CoreModels",
                "external-doc-url": DOCUMENTATION_URL,
                "tags": ["software"],
            }
        ],
        # The forms (display name, extra fields, field behaviour) Airflow 3.2+ reads from here;
        # 3.0 and 3.1 ignore the extra keys and ask the hooks (get_ui_field_behaviour).
        "connection-types": [
            {
                "hook-class-name": HOOK_CLASSES[AIRFLOW_API],
                "connection-type": AIRFLOW_API,
                **FORMS[AIRFLOW_API],
            },
            {
                "hook-class-name": HOOK_CLASSES[AIRFLOW_API_MWAA],
                "connection-type": AIRFLOW_API_MWAA,
                **FORMS[AIRFLOW_API_MWAA],
            },
            {
                "hook-class-name": HOOK_CLASSES[AIRFLOW_API_COMPOSER],
                "connection-type": AIRFLOW_API_COMPOSER,
                **FORMS[AIRFLOW_API_COMPOSER],
            },
            {
                "hook-class-name": HOOK_CLASSES[COREMODELS],
                "connection-type": COREMODELS,
                **FORMS[COREMODELS],
            },
        ],
        # The export task's link to the page (operators/links.py), which Airflow must know to
        # serialize the operators that carry it.
        "extra-links": ["airflow_provider_coremodels.operators.links.CoreModelsPageLink"],
        # `airflow coremodels`: read by Airflow 3.2+ only; before it, `python -m airflow_provider_coremodels`.
        "cli": ["airflow_provider_coremodels.cli.definition.get_coremodels_cli_commands"],
        "config": {
            "coremodels": {
                "description": "The CoreModels page in the Airflow UI (Browse → CoreModels).",
                "options": {
                    "ui_snapshot_dir": {
                        "description": "Where the page reads the latest snapshot: where a sink of "
                        "the export writes (a directory, or an object-storage URI such as "
                        "s3://bucket/prefix read with ui_snapshot_conn_id; either holds latest.json "
                        "and history/), or one snapshot document (.json). Read by the API server; "
                        "empty, the page says how to set it.\n",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "s3://governance/airflow",
                        "default": "",
                    },
                    "ui_snapshot_conn_id": {
                        "description": "The connection the API server reads an object-storage "
                        "ui_snapshot_dir with (an aws connection for s3://, google_cloud_platform "
                        "for gs://, ...): the one the export's sink_conn_id names. Empty, the "
                        "store's own default credentials are used.\n",
                        "version_added": "0.3.0",
                        "type": "string",
                        "example": "aws_default",
                        "default": "",
                    },
                },
            },
        },
    }
