"""``CoreModelsHook``: the endpoint a snapshot is pushed to, from a connection of type ``coremodels``.

Host is the endpoint URL (scheme, port and path included); password is the bearer token.
Extras: ``verify`` (true/false) or ``ca_bundle``, ``timeout``.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.capture import RetryPolicy
from airflow_provider_coremodels.compat import BaseHook
from airflow_provider_coremodels.errors import ConnectionConfigError, CoreModelsError
from airflow_provider_coremodels.hooks.connection_fields import (
    base_url,
    extra_or_default,
    get_connection,
    mask,
    tls_verify,
)
from airflow_provider_coremodels.hooks.forms import COREMODELS, FORMS, ui_field_behaviour
from airflow_provider_coremodels.redaction import scrub
from airflow_provider_coremodels.sinks.endpoint import EndpointSink


class CoreModelsHook(BaseHook):
    """Pushes snapshot documents to a CoreModels endpoint with a bearer token."""

    conn_name_attr = "coremodels_conn_id"
    default_conn_name = "coremodels_default"
    conn_type = COREMODELS
    hook_name = FORMS[COREMODELS]["hook-name"]

    def __init__(self, coremodels_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.coremodels_conn_id = coremodels_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """For Airflow before 3.2, which asks the hook: the same form provider info declares."""
        return ui_field_behaviour(COREMODELS)

    def get_sink(self, url: str | None = None, retry: RetryPolicy | None = None) -> EndpointSink:
        """An endpoint sink for ``url`` (default: the connection's host) with the connection's token."""
        conn = get_connection(self, self.coremodels_conn_id)
        extra = conn.extra_dejson
        mask(conn.password)
        try:
            endpoint = url or base_url(conn.host, conn.schema or "https", conn.port)
            return EndpointSink(
                endpoint,
                token=conn.password or None,
                verify=tls_verify(extra, self.coremodels_conn_id),
                timeout=float(extra_or_default(extra, "timeout", defaults.READ_TIMEOUT)),
                retry=retry,
            )
        except (TypeError, ValueError) as exc:
            raise ConnectionConfigError(
                f"connection {self.coremodels_conn_id!r} is not usable: {exc}"
            ) from None

    def test_connection(self) -> tuple[bool, str]:
        """Reach the endpoint with the connection's token, without pushing a snapshot."""
        try:
            sink = self.get_sink(retry=RetryPolicy(max_attempts=2, budget=10))
            status = sink.probe()
        except CoreModelsError as exc:
            return False, scrub(str(exc))
        if status in (401, 403):
            return False, f"{sink.uri} refused the token: HTTP {status}"
        if status < 300 or status == 405:
            return (
                True,
                f"Reached {sink.uri}: HTTP {status} to a GET, with the token accepted or not asked for",
            )
        return False, f"{sink.uri} answered HTTP {status} to a GET: check the endpoint URL"
