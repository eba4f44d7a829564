"""``ComposerApiHook``: the capture of a Google Cloud Composer environment, from a connection of
type ``airflow_api_composer``.

Host: the environment's Airflow web server URL (``airflowUri`` in ``gcloud composer environments
describe``). Extras: ``gcp_conn_id`` (the google provider's connection whose credentials make the
access token; default ``google_cloud_default``; empty, or without the google provider,
application-default credentials), ``verify``/``ca_bundle``, and the capture's ``concurrency``,
``pacing``, ``pacing_share``, ``timeout``, ``connect_timeout``, ``deadline_alerts``. Needs google-auth (the
``composer`` extra).
"""

from __future__ import annotations

import logging
from typing import Any

from airflow_provider_coremodels.capture import ApiSource
from airflow_provider_coremodels.errors import ConnectionConfigError
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook, capture_settings
from airflow_provider_coremodels.hooks.connection_fields import base_url, share_with_other_hooks, tls_verify
from airflow_provider_coremodels.hooks.forms import AIRFLOW_API_COMPOSER, FORMS, ui_field_behaviour

log = logging.getLogger(__name__)

DEFAULT_GCP_CONN_ID = "google_cloud_default"


class ComposerApiHook(AirflowApiHook):
    """Reads a Composer environment's REST API with a Google access token, refreshed as it expires."""

    conn_type = AIRFLOW_API_COMPOSER
    hook_name = FORMS[AIRFLOW_API_COMPOSER]["hook-name"]

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return ui_field_behaviour(AIRFLOW_API_COMPOSER)

    @classmethod
    def source_from(cls, conn: Any, conn_id: str) -> ApiSource:
        return composer_source(conn, conn_id)


def composer_source(conn: Any, conn_id: str) -> ApiSource:
    """The source of an ``airflow_api_composer`` connection: its web server, with Google credentials."""
    try:
        import google.auth  # noqa: F401
    except ImportError:
        raise ConnectionConfigError(
            f"connection {conn_id!r} is a Composer connection, and google-auth is not installed: "
            "pip install 'airflow-provider-coremodels[composer]'"
        ) from None
    from airflow_provider_coremodels.capture.composer import ComposerAccess

    extra = conn.extra_dejson
    gcp_conn_id = extra.get("gcp_conn_id", DEFAULT_GCP_CONN_ID)
    if gcp_conn_id is not None and not isinstance(gcp_conn_id, str):
        raise ConnectionConfigError(f"connection {conn_id!r}: extra 'gcp_conn_id' must be a string")
    try:
        url = base_url(conn.host, conn.schema or "https", conn.port)
        return ApiSource(
            base_url=url,
            verify=tls_verify(extra, conn_id),
            managed=ComposerAccess(_credentials(gcp_conn_id or None, conn_id)),
            **capture_settings(extra, conn_id),
        )
    except (TypeError, ValueError) as exc:
        raise ConnectionConfigError(f"connection {conn_id!r} is not usable: {exc}") from None


def _credentials(gcp_conn_id: str | None, conn_id: str) -> Any:
    """The credentials factory: the google provider's connection, else application-default credentials."""
    from airflow_provider_coremodels.capture.composer import application_default

    if gcp_conn_id is None:
        return application_default
    try:
        from airflow.providers.google.common.hooks.base_google import GoogleBaseHook
    except ImportError:
        if gcp_conn_id != DEFAULT_GCP_CONN_ID:
            raise ConnectionConfigError(
                f"connection {conn_id!r} names the Google Cloud connection {gcp_conn_id!r}, and the "
                "google provider is not installed: install apache-airflow-providers-google, or leave "
                "gcp_conn_id empty for application-default credentials"
            ) from None
        log.info("no google provider: Composer is called with application-default credentials")
        return application_default
    hook = GoogleBaseHook(gcp_conn_id=gcp_conn_id)
    try:  # a connection kept in the metadata database, made visible to the provider's lookup
        share_with_other_hooks(hook, gcp_conn_id)
    except ConnectionConfigError:
        if gcp_conn_id != DEFAULT_GCP_CONN_ID:
            raise
        log.info("no connection %s: Composer is called with application-default credentials", gcp_conn_id)
        return application_default

    def from_connection(request: Any) -> Any:
        # the provider scopes them by the connection's own "scope" extra (default: cloud-platform)
        return hook.get_credentials()

    return from_connection
