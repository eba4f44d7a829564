"""The connection forms of the provider's connection types, declared once.

Airflow 3.2+ reads a connection type's display name, its extra fields (``conn-fields``) and
how the standard fields are shown (``ui-field-behaviour``) from provider info, without
importing the hook; older Airflow asks the hook (``get_ui_field_behaviour``). Both read these
dicts. Import-light (the defaults and nothing else): provider registration imports it.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_coremodels import defaults

AIRFLOW_API = "airflow_api"
#: A managed Airflow's API: Amazon MWAA through InvokeRestApi, Google Cloud Composer with a Google token.
AIRFLOW_API_MWAA = "airflow_api_mwaa"
AIRFLOW_API_COMPOSER = "airflow_api_composer"
COREMODELS = "coremodels"

#: The hook class of each connection type, by name (nothing imported): provider info lists them,
#: and a capture hook asked for a type whose class is not yet imported imports it from here.
HOOK_CLASSES = {
    AIRFLOW_API: "airflow_provider_coremodels.hooks.airflow_api.AirflowApiHook",
    AIRFLOW_API_MWAA: "airflow_provider_coremodels.hooks.mwaa.MwaaApiHook",
    AIRFLOW_API_COMPOSER: "airflow_provider_coremodels.hooks.composer.ComposerApiHook",
    COREMODELS: "airflow_provider_coremodels.hooks.coremodels.CoreModelsHook",
}


def _field(label: str, kind: str, description: str, default: Any = None, **schema: Any) -> dict[str, Any]:
    """One extra field of a form, as provider info's ``conn-fields`` declares it."""
    spec: dict[str, Any] = {"type": [kind, "null"], **schema}
    if default is not None:
        spec["default"] = default
    return {"label": label, "schema": spec, "description": description}


_TLS = {
    "verify": _field("Verify TLS", "boolean", "Check the server's certificate (default: on).", True),
    "ca_bundle": _field("CA bundle", "string", "Path of a CA bundle to verify the server against."),
}

#: What every capture connection tunes: the requests in flight, their pacing, their timeouts, and
#: whether the deadline alerts are read.
_CAPTURE = {
    "concurrency": _field(
        "Concurrent requests",
        "integer",
        "Requests in flight during a capture; 14 or fewer against a one-worker API server.",
        defaults.CONCURRENCY,
        minimum=1,
        maximum=64,
    ),
    "pacing": _field(
        "Pacing",
        "string",
        "adaptive: fewer requests in flight while the server slows down, each slot resting "
        "after its answer, so the server keeps room for its workers; fixed: always the "
        "concurrency, no rest.",
        defaults.PACING,
        enum=["adaptive", "fixed"],
    ),
    "pacing_share": _field(
        "Pacing share",
        "number",
        "adaptive: how much of each slot's time its requests may take at the server (over 0, "
        "at most 1); after an answer the slot rests for the rest. 1: no rest.",
        defaults.PACING_SHARE,
        exclusiveMinimum=0,
        maximum=1,
    ),
    "timeout": _field(
        "Read timeout (s)",
        "number",
        "Seconds per response, its whole body included.",
        defaults.READ_TIMEOUT,
    ),
    "connect_timeout": _field(
        "Connect timeout (s)", "number", "Seconds to open a connection.", defaults.CONNECT_TIMEOUT
    ),
    "deadline_alerts": _field(
        "Read deadline alerts",
        "boolean",
        "Airflow 3.3+: read each DAG's deadline alerts, one request per DAG (default: on). Off, "
        "they are unknown and the rules' deadline check is not judged.",
        True,
    ),
}

#: Provider info's ``connection-types`` entries, less the hook's class name.
FORMS: dict[str, dict[str, Any]] = {
    AIRFLOW_API: {
        "hook-name": "Airflow REST API (CoreModels capture)",
        "conn-fields": {
            **_TLS,
            **_CAPTURE,
            "token": _field(
                "Bearer token",
                "string",
                "A static token, instead of a JWT requested with Username and Password.",
                format="password",
            ),
        },
        "ui-field-behaviour": {
            "hidden-fields": [],
            "relabeling": {
                "host": "API server URL or host",
                "schema": "Scheme (http or https)",
                "login": "Username (empty to use a token)",
                "password": "Password, or the bearer token when Username is empty",
            },
            "placeholders": {
                "host": "http://airflow-api-server:8080",
                "schema": "http",
                "login": "coremodels-exporter",
                "port": "8080",
            },
        },
    },
    AIRFLOW_API_MWAA: {
        "hook-name": "Amazon MWAA REST API (CoreModels capture)",
        "conn-fields": {
            "aws_conn_id": _field(
                "AWS connection",
                "string",
                "The amazon provider's AWS connection (keys, role, region) that calls InvokeRestApi; "
                "empty, or without the amazon provider: boto3's default credential chain.",
                "aws_default",
            ),
            "region_name": _field(
                "Region", "string", "The environment's AWS region (default: the AWS connection's)."
            ),
            "endpoint_url": _field(
                "MWAA endpoint URL",
                "string",
                "Another MWAA endpoint than AWS's regional one (a VPC endpoint).",
            ),
            "inject_host_prefix": _field(
                "Host prefix",
                "boolean",
                "Put InvokeRestApi's env. before the endpoint's host, as AWS's endpoints need "
                "(off only for an endpoint URL that serves it at its own host).",
                True,
            ),
            **_CAPTURE,
        },
        "ui-field-behaviour": {
            "hidden-fields": ["schema", "login", "password", "port"],
            "relabeling": {"host": "MWAA environment name"},
            "placeholders": {"host": "MyAirflowEnvironment"},
        },
    },
    AIRFLOW_API_COMPOSER: {
        "hook-name": "Google Cloud Composer REST API (CoreModels capture)",
        "conn-fields": {
            "gcp_conn_id": _field(
                "Google Cloud connection",
                "string",
                "The google provider's connection whose credentials make the access token; empty, "
                "or without the google provider: application-default credentials.",
                "google_cloud_default",
            ),
            **_TLS,
            **_CAPTURE,
        },
        "ui-field-behaviour": {
            "hidden-fields": ["schema", "login", "password", "port"],
            "relabeling": {"host": "Airflow web server URL"},
            "placeholders": {"host": "https://example-dot-europe-west1.composer.googleusercontent.com"},
        },
    },
    COREMODELS: {
        "hook-name": "CoreModels",
        "conn-fields": {
            **_TLS,
            "timeout": _field(
                "Read timeout (s)", "number", "Seconds per answer of the endpoint.", defaults.READ_TIMEOUT
            ),
        },
        "ui-field-behaviour": {
            "hidden-fields": ["schema", "login", "port"],
            "relabeling": {"host": "Endpoint URL", "password": "API token"},
            "placeholders": {"host": "https://coremodels.example.com/api/connectors/airflow/snapshots"},
        },
    },
}


def ui_field_behaviour(connection_type: str) -> dict[str, Any]:
    """The form's field behaviour as a hook's ``get_ui_field_behaviour`` returns it (snake_case keys)."""
    behaviour = FORMS[connection_type]["ui-field-behaviour"]
    return {key.replace("-", "_"): value for key, value in behaviour.items()}
