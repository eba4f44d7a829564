"""``AirflowApiHook``: the capture client, built from an Airflow connection of type ``airflow_api``.

The connection's host (with scheme and port, or with ``schema`` as the scheme), login and
password (a JWT is requested with them on Airflow 3; basic auth on Airflow 2), or a password
with no login as a static bearer token. Extras: ``verify`` (true/false), ``ca_bundle`` (a
path), ``concurrency``, ``pacing`` (``adaptive`` or ``fixed``), ``timeout`` (read seconds),
``connect_timeout``, ``deadline_alerts`` (true/false: one request per DAG on Airflow 3.3+), ``token``.

A connection of the managed types (``airflow_api_mwaa``: Amazon MWAA through InvokeRestApi,
``hooks/mwaa.py``; ``airflow_api_composer``: Google Cloud Composer with a Google access token,
``hooks/composer.py``) works wherever an ``airflow_api`` one does: the hook reads the
connection's type and lets the hook class of that type build the source. This module names no
such class: each subclass joins ``AirflowApiHook.by_conn_type`` as it is defined, and a type
not yet joined is imported from provider info's ``connection-types``, which registers every
connection type with its hook class for Airflow anyway.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.capture import AirflowApiClient, ApiSource, RetryPolicy, open_client
from airflow_provider_coremodels.compat import BaseHook
from airflow_provider_coremodels.errors import ConnectionConfigError, CoreModelsError
from airflow_provider_coremodels.hooks.connection_fields import (
    base_url,
    extra_bool,
    extra_or_default,
    extra_str,
    get_connection,
    mask,
    tls_verify,
)
from airflow_provider_coremodels.hooks.forms import AIRFLOW_API, FORMS, ui_field_behaviour


class AirflowApiHook(BaseHook):
    """Reads this deployment's own REST API (Airflow 3 ``/api/v2`` or Airflow 2 ``/api/v1``)."""

    conn_name_attr = "airflow_api_conn_id"
    default_conn_name = "airflow_api_default"
    conn_type = AIRFLOW_API
    hook_name = FORMS[AIRFLOW_API]["hook-name"]

    #: The hook class of each capture connection type: this class, and each subclass that declares
    #: a ``conn_type`` of its own, as it is defined (``__init_subclass__``).
    by_conn_type: ClassVar[dict[str, type[AirflowApiHook]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "conn_type" in cls.__dict__:  # a subclass of a subclass that keeps its type joins nothing
            AirflowApiHook.by_conn_type[cls.conn_type] = cls

    @classmethod
    def for_conn_type(cls, conn_type: str | None) -> type[AirflowApiHook]:
        """The hook class that reads connections of ``conn_type``: one already defined, else the one
        provider info registers for it, imported now. A type no capture hook claims is read as an
        ``airflow_api`` connection, as it always was."""
        if conn_type and conn_type not in cls.by_conn_type:
            _import_registered_hook(conn_type)
        return cls.by_conn_type.get(conn_type or AIRFLOW_API, AirflowApiHook)

    @classmethod
    def source_from(cls, conn: Any, conn_id: str) -> ApiSource:
        """The source of an ``airflow_api`` connection: its host, and a login and password or a token."""
        extra = conn.extra_dejson
        token = extra_str(extra, "token", conn_id) or (None if conn.login else conn.password)
        mask(conn.password, token)
        try:
            return ApiSource(
                base_url=base_url(conn.host, conn.schema, conn.port),
                username=conn.login or None,
                password=conn.password if conn.login else None,
                token=token,
                verify=tls_verify(extra, conn_id),
                **capture_settings(extra, conn_id),
            )
        except (TypeError, ValueError) as exc:
            raise ConnectionConfigError(f"connection {conn_id!r} is not usable: {exc}") from None

    def __init__(self, airflow_api_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.airflow_api_conn_id = airflow_api_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """For Airflow before 3.2, which asks the hook: the same form provider info declares."""
        return ui_field_behaviour(AIRFLOW_API)

    def get_source(self) -> ApiSource:
        """The API's location and credentials, read from the connection; secrets registered for masking."""
        conn = get_connection(self, self.airflow_api_conn_id)
        return self.for_conn_type(conn.conn_type).source_from(conn, self.airflow_api_conn_id)

    def get_conn(self, retry: RetryPolicy | None = None) -> AirflowApiClient:
        return open_client(self.get_source(), retry=retry)

    def test_connection(self) -> tuple[bool, str]:
        """Detect the API, authenticate and read one page of DAGs."""
        try:
            with self.get_conn(RetryPolicy(max_attempts=2, budget=10)) as client:
                info = client.connect()
                page = client.get_json("/dags", {"limit": 1})
        except CoreModelsError as exc:
            return False, str(exc)
        total = page.get("total_entries") if isinstance(page, dict) else None
        return (
            True,
            f"Connected to Airflow {info.airflow_version or '?'} (API {info.api_version}): {total} DAGs",
        )


AirflowApiHook.by_conn_type[AIRFLOW_API] = AirflowApiHook


def _import_registered_hook(conn_type: str) -> None:
    """Import the hook class provider info names for ``conn_type`` (``forms.HOOK_CLASSES``; its
    module joins it to ``by_conn_type`` if it is a capture hook); nothing for a type not listed."""
    from airflow_provider_coremodels.hooks.forms import HOOK_CLASSES

    if conn_type in HOOK_CLASSES:
        module, _, _ = HOOK_CLASSES[conn_type].rpartition(".")
        importlib.import_module(module)


def capture_settings(extra: dict[str, Any], conn_id: str) -> dict[str, Any]:
    """The capture's tuning from a connection's extras (every capture connection type has them);
    a value of the wrong kind raises TypeError or ValueError, for the caller to name the connection
    (a true/false extra that is neither names it itself: ConnectionConfigError)."""
    return {
        "concurrency": int(extra_or_default(extra, "concurrency", defaults.CONCURRENCY)),
        "pacing": str(extra.get("pacing") or defaults.PACING),
        "pacing_share": float(extra_or_default(extra, "pacing_share", defaults.PACING_SHARE)),
        "read_timeout": float(extra_or_default(extra, "timeout", defaults.READ_TIMEOUT)),
        "connect_timeout": float(extra_or_default(extra, "connect_timeout", defaults.CONNECT_TIMEOUT)),
        "deadline_alerts": extra_bool(extra, "deadline_alerts", conn_id, default=True),
    }
