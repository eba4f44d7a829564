"""The inferred lineage of a DAG-folder parse, made into asset URIs outside the sandbox.

The sandboxed child (``lineage_inference``) names a table by its connection id; here, in the
process that judges the parse, each connection id is resolved to its type, host, port and
database where this run knows the connection (an ``AIRFLOW_CONN_*`` variable, else Airflow's own
lookup: its secrets backends and metadata database). Nothing else of a connection is read: no
login, password or extra beyond an account or project name. A connection this run does not know
stays in the URI as ``<conn_id>`` in place of the host, and one lossiness record per task says so.

The result rides in the datasets artifact as ``"inferred": [{"dag_id", "task_id", "role", "uri"}]``
(role ``reads`` or ``writes``), which ``core/reading/inferred.py`` turns into assets and edges.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from airflow_provider_coremodels.core import Lossiness
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.redaction import SECRETS

log = logging.getLogger(__name__)

#: The lossiness record of a parse whose SQL statements could not be read (transfers still were).
OFF = (
    "lineage inference read no SQL: {why}; the statements of {count} were not read, so the tables "
    "they read and write are no lineage: {tasks}"
)
#: The record of a capture that had no DAG folder to infer from (the REST API alone).
NEEDS_FOLDER = (
    "inferred lineage (tables read and written by SQL and transfer operators) needs the DAG folder: "
    "this capture read the REST API alone"
)

#: A connection type (as Airflow spells it) -> the system the URI names.
_TYPES = {
    "postgres": "postgres",
    "postgresql": "postgres",
    "redshift": "redshift",
    "snowflake": "snowflake",
    "mysql": "mysql",
    "google_cloud_platform": "bigquery",
    "gcpbigquery": "bigquery",
    "trino": "trino",
    "mssql": "mssql",
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "databricks": "databricks",
}
_PORTS = {"postgres": 5432, "redshift": 5439, "mysql": 3306, "mssql": 1433, "trino": 8080}
#: Systems whose unquoted names fold to lower case: written so, the same table meets itself.
_FOLDS_LOWER = frozenset(("postgres", "redshift", "mysql"))
#: Systems with no schema between the database and the table.
_NO_SCHEMA = frozenset(("mysql",))


@dataclass(frozen=True)
class Known:
    """What a URI may say of a connection: never a login, a password or an extra's secret."""

    system: str | None
    host: str | None
    port: int | None
    database: str | None


Lookup = Callable[[str], Known | None]
_LOOKING_UP = threading.Lock()


def _from_uri(text: str) -> Known | None:
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        port = data.get("port")
        given = data.get("extra")
        extra: dict[str, Any] = given if isinstance(given, dict) else {}
        return _known(
            str(data.get("conn_type") or ""),
            data.get("host"),
            port if isinstance(port, int) else None,
            data.get("schema"),
            extra,
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
    database = unquote(parts.path.lstrip("/")) or None
    return _known(parts.scheme.replace("-", "_"), parts.hostname, port, database, query)


def _known(conn_type: str, host: Any, port: int | None, database: Any, extra: Mapping[str, Any]) -> Known:
    # a type no system here names ("generic", a provider's own) leaves the operator's word to say it
    system = _TYPES.get(conn_type.lower())
    host = host if isinstance(host, str) and host else None
    database = database if isinstance(database, str) and database else None
    if system == "snowflake":  # the account names the deployment; the host is usually empty
        account = extra.get("account") or extra.get("extra__snowflake__account")
        host = account if isinstance(account, str) and account else host
        named = extra.get("database") or extra.get("extra__snowflake__database")
        database = named if isinstance(named, str) and named else database
    if system == "bigquery":
        project = extra.get("project") or extra.get("extra__google_cloud_platform__project")
        host = project if isinstance(project, str) and project else host
    return Known(system, host, port, database)


def environment_lookup(environ: Mapping[str, str] | None = None) -> Lookup:
    """A connection from ``AIRFLOW_CONN_<ID>`` (a URI or JSON), as Airflow's env backend reads it."""
    env = os.environ if environ is None else environ

    def lookup(conn_id: str) -> Known | None:
        text = env.get(f"AIRFLOW_CONN_{conn_id.upper()}")
        return _from_uri(text) if text else None

    return lookup


def airflow_lookup(conn_id: str) -> Known | None:
    """A connection through Airflow's own lookup: each secrets backend in Airflow's order (the
    environment, the configured backends, the metadata database), as ``airflow connections get``
    reads it (the loop of ``hooks.connection_fields``, which stands a floor above capture); None
    where none has it or none can be asked (no database here, a refusal)."""
    import contextlib
    import sys

    # one lookup at a time: the stdout redirect is the process's, and two parses (a change's head
    # and base) resolve at once; interleaved, one would restore the other's redirect for good
    with _LOOKING_UP, contextlib.redirect_stdout(sys.stderr):  # Airflow's log lines: not our output
        try:
            from airflow.configuration import ensure_secrets_loaded

            backends = list(ensure_secrets_loaded())
        except Exception:  # an SDK-only install, or no configuration: nothing to ask
            return None
        conn = None
        for backend in backends:
            try:
                conn = backend.get_connection(conn_id=conn_id)
            except Exception as exc:  # not there, or unreachable: the next backend
                if type(exc).__name__ == "AirflowSecretsBackendAccessDenied":
                    return None  # an authoritative refusal, as Airflow treats it: no laxer backend asked
                continue
            if conn is not None:
                break
    if conn is None:
        return None
    try:
        extra = conn.extra_dejson if isinstance(conn.extra_dejson, dict) else {}
    except Exception:
        extra = {}
    port = conn.port if isinstance(conn.port, int) else None
    return _known(str(conn.conn_type or ""), conn.host, port, conn.schema, extra)


def chained(*lookups: Lookup) -> Lookup:
    cache: dict[str, Known | None] = {}

    def lookup(conn_id: str) -> Known | None:
        if conn_id not in cache:
            cache[conn_id] = next((k for f in lookups if (k := f(conn_id)) is not None), None)
        return cache[conn_id]

    return lookup


def default_lookup() -> Lookup:
    return chained(environment_lookup(), airflow_lookup)


def table_uri(item: Mapping[str, Any], known: Known | None) -> tuple[str, bool]:
    """A table's URI by Airflow's scheme for its system, and whether the connection was known.

    Known: ``postgres://host:5432/database/schema/table``; unknown: ``postgres://<conn_id>/...``
    with what the statement itself says of the database and schema.
    """
    conn = item.get("conn") or "unknown"  # an operator that names no connection
    system = (known.system if known and known.system else None) or item.get("system") or "sql"
    database = item.get("database") or (known.database if known else None)
    schema, table = item.get("schema"), item["table"]
    if known is not None and known.host:
        port = known.port or _PORTS.get(system)
        authority = f"{known.host}:{port}" if port else known.host
    else:
        authority = f"<{conn}>"
    if system in _NO_SCHEMA:  # MySQL's "schema" is its database
        database, schema = schema or database, None
    if system == "bigquery":  # bigquery://project/dataset/table: the project is the authority
        project = item.get("database") or (known.host if known else None)
        authority = project or f"<{conn}>"
        database = None
        resolved = bool(project)
        return f"bigquery://{authority}/{'/'.join(p for p in (schema, table) if p)}", resolved
    parts = [p for p in (database, schema, table) if p]
    if system in _FOLDS_LOWER:
        parts = [p.lower() for p in parts]
    path = "/".join(parts)
    return f"{system}://{authority}/{path}", known is not None and bool(known.host)


def is_inference_record(record: Lossiness) -> bool:
    """Whether ``attach`` wrote the record (a task's, or the SQL parser's absence)."""
    return record.artifact == "datasets" and (
        record.message.startswith("lineage inference")
        or bool(record.subject and record.message.startswith("task "))
    )


def attach(
    inferred: Mapping[str, Any], status: str | None, lookup: Lookup | None = None
) -> tuple[list[dict[str, str]], list[Lossiness]]:
    """The server's inference (``dag_id -> task_id -> reads/writes/notes``) as the datasets
    artifact's ``inferred`` entries, and the lossiness records: inference off, a task whose
    statement could not be read, a task whose connection this run does not know."""
    records: list[Lossiness] = []
    unparsed = sorted(
        f"{d}.{t}" for d, tasks in inferred.items() for t, task in tasks.items() if task.get("unparsed")
    )
    if unparsed:
        count = f"{len(unparsed)} task" + ("s" if len(unparsed) != 1 else "")
        shown = ", ".join(unparsed[:10]) + (f" and {len(unparsed) - 10} more" if len(unparsed) > 10 else "")
        why = status if status not in (None, "on") else "no SQL parser"
        records.append(Lossiness("datasets", OFF.format(why=why, count=count, tasks=shown)))
    lookup = lookup or default_lookup()
    entries: set[tuple[str, str, str, str]] = set()
    for dag_id, tasks in inferred.items():
        for task_id, task in tasks.items():
            source = f"{dag_id}.{task_id}"
            unknown: set[str] = set()
            for role in ("reads", "writes"):
                for item in task.get(role) or ():
                    if "uri" in item:
                        uri = item["uri"]
                    else:
                        conn = item.get("conn")
                        known = lookup(conn) if conn else None
                        uri, resolved = table_uri(item, known)
                        if not resolved:
                            unknown.add(conn or "")
                    entries.add((dag_id, task_id, role, SECRETS.scrub(uri)))
            for note in task.get("notes") or ():
                records.append(
                    Lossiness("datasets", f"task {source}: {printable(SECRETS.scrub(note))}", source)
                )
            if unknown:
                named = sorted(c for c in unknown if c)
                what = (
                    f"connection {', '.join(named)} is not known to this run"
                    if named
                    else "names no connection"
                )
                shown = ", ".join(f"<{c}>" for c in named) or "<unknown>"
                records.append(
                    Lossiness(
                        "datasets",
                        f"task {source}: {what}, so its inferred tables name {shown} in place of host, "
                        "port and database",
                        source,
                    )
                )
    rows = [
        {"dag_id": dag_id, "task_id": task_id, "role": role, "uri": uri}
        for dag_id, task_id, role, uri in sorted(entries)
    ]
    return rows, records
