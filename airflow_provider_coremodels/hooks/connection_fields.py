"""Reading the fields and extras of an Airflow connection, shared by the provider's hooks."""

from __future__ import annotations

import logging
from typing import Any

from airflow_provider_coremodels.errors import ConnectionConfigError
from airflow_provider_coremodels.redaction import SECRETS

_NOT_FOUND = ("AirflowNotFoundException", "AirflowException")

log = logging.getLogger(__name__)


def get_connection(hook: Any, conn_id: str) -> Any:
    """The connection ``conn_id`` wherever Airflow keeps it; an undefined one is a
    ConnectionConfigError that says how to define it.

    In a task, the SDK's lookup asks the API server, which reads environment variables, secrets
    backends and the metadata database. Outside one (``airflow coremodels``, ``python -m``) it
    reads only the first two, so a connection made with ``airflow connections add`` or in the UI
    is then read as ``airflow connections get`` reads it: through core Airflow, database included.
    Airflow 3.0's hooks read through core Airflow already, outside a task, but through its cache,
    which warns about the connection type's underscore: there the same lookup is made uncached.
    """
    in_task = _in_task()
    if not in_task and _looks_up_through_core(hook):
        # Airflow 3.0's hooks ask core Airflow, whose lookup caches (and warns): the same, uncached
        stored = _from_metadata_database(conn_id)
    else:
        try:
            return _known(hook.get_connection(conn_id))
        except Exception as exc:  # the secrets backends raise Airflow's own not-found error
            if type(exc).__name__ not in _NOT_FOUND:
                raise
        stored = None if in_task else _from_metadata_database(conn_id)
    if stored is None:
        hint = f"add it to Airflow (airflow connections add, or the UI) or set AIRFLOW_CONN_{conn_id.upper()}"
        raise ConnectionConfigError(f"connection {conn_id!r} is not defined: {hint}")
    return _known(stored)


def _known(conn: Any) -> Any:
    """``conn``, its secrets registered (``redaction.SECRETS``): every connection the provider
    reads comes through here, so none of their secrets is ever written, whoever quotes it."""
    SECRETS.add_connection(conn)
    return conn


def share_with_other_hooks(hook: Any, conn_id: str) -> None:
    """Make ``conn_id`` visible to another provider's hooks in this process, wherever it is kept.

    The object-storage filesystems (the amazon provider's s3fs, say) look their connection up
    through the SDK themselves; outside a task that lookup misses a connection kept in the
    metadata database, and the store's client then falls back to anonymous access without an
    error. Such a connection is handed to this process's environment
    (``AIRFLOW_CONN_<ID>``, which every lookup reads first) so the filesystem finds it; one the
    SDK already sees is left alone. Nothing is written anywhere: the variable lives and dies with
    this process. An undefined connection is a ConnectionConfigError saying how to define it.
    """
    import os

    try:
        _known(hook.get_connection(conn_id))
        return
    except Exception as exc:
        if type(exc).__name__ not in _NOT_FOUND:
            raise
    stored = get_connection(hook, conn_id)
    os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = stored.as_json()


def _in_task() -> bool:
    """Whether this process runs a task (it talks to its supervisor, never to the database)."""
    import sys

    runner = sys.modules.get("airflow.sdk.execution_time.task_runner")
    return getattr(runner, "SUPERVISOR_COMMS", None) is not None


def _looks_up_through_core(hook: Any) -> bool:
    """Whether the hook's ``get_connection`` is core Airflow's (3.0), not the Task SDK's (3.1+)."""
    method = getattr(hook.get_connection, "__func__", hook.get_connection)
    return getattr(method, "__module__", "") == "airflow.hooks.base"


def _from_metadata_database(conn_id: str) -> Any:
    """The connection as core Airflow finds it: each secrets backend in Airflow's order
    (environment, the configured backends, the metadata database), the first that has it.

    This is the loop of ``Connection.get_connection_from_secrets`` without its cache. That
    method writes every connection it finds into Airflow's secrets cache as a URI, and building
    the URI of a connection type with an underscore logs "Connection schemes (type: airflow_api)
    shall not contain '_'" on every command-line run (the URI round-trips all the same:
    Airflow reads ``airflow-api://`` back as ``airflow_api``). A command line runs once, so the
    cache gains it nothing; the connection type keeps its name, and stored connections work.
    """
    try:
        from airflow.configuration import ensure_secrets_loaded
    except ImportError:  # an SDK-only install: no metadata database to read
        return None
    for backend in ensure_secrets_loaded():
        try:
            found = backend.get_connection(conn_id=conn_id)
        except Exception as exc:
            if type(exc).__name__ == "AirflowSecretsBackendAccessDenied":
                raise  # an authoritative refusal, as Airflow treats it: never ask a laxer backend
            log.debug("secrets backend %s: no %s", type(backend).__name__, conn_id, exc_info=True)
            continue
        if found is not None:
            return found
    return None


def base_url(host: str | None, schema: str | None, port: int | None) -> str:
    """``http://host:port[/path]`` from a connection's fields; a host may carry its own scheme and path."""
    if not host:
        raise ValueError("the connection has no host")
    if "://" not in host:
        host = f"{schema or 'http'}://{host}"
    scheme, _, rest = host.partition("://")
    authority, slash, path = rest.partition("/")
    if port and ":" not in authority.rpartition("@")[2].rpartition("]")[2]:
        authority = f"{authority}:{port}"
    return f"{scheme}://{authority}{slash}{path}".rstrip("/")


def extra_or_default(extra: dict[str, Any], key: str, default: Any) -> Any:
    """An extra's value, or ``default`` where it is missing or the connection form left it empty
    (the form stores an empty number as null, or ""): the caller converts and checks it."""
    value = extra.get(key)
    return default if value is None or value == "" else value


def extra_str(extra: dict[str, Any], key: str, conn_id: str) -> str | None:
    value = extra_or_default(extra, key, None)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConnectionConfigError(f"connection {conn_id!r}: extra {key!r} must be a string")
    return value


def tls_verify(extra: dict[str, Any], conn_id: str) -> bool | str:
    """TLS verification from the extras: a ``ca_bundle`` path, else ``verify`` (default true)."""
    return extra_str(extra, "ca_bundle", conn_id) or _bool(extra.get("verify", True), "verify", conn_id)


def extra_bool(extra: dict[str, Any], key: str, conn_id: str, *, default: bool) -> bool:
    """A true/false extra (a boolean, or the text true or false), ``default`` where it is missing or empty."""
    return _bool(extra_or_default(extra, key, default), key, conn_id)


def _bool(value: Any, key: str, conn_id: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConnectionConfigError(f"connection {conn_id!r}: extra {key!r} must be true or false")


def mask(*secrets: str | None) -> None:
    """Register secrets with Airflow's masker, so no task log line can show them."""
    from airflow.sdk.log import mask_secret

    for secret in secrets:
        if secret:
            mask_secret(secret)
