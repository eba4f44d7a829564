"""Lineage nobody declared, read off the operators of a parsed DAG (contract section 10.3).

Loaded by the parse server (``dag_folder_worker``) from this file, not imported through the
package, so the sandboxed child that ran a DAG file meets no state of the provider; it uses only
the standard library, Jinja's sandbox and, where installed, ``openlineage_sql`` (OpenLineage's SQL
parser). It runs in that child after the DAG is built, on the operator objects: it never calls a
task's ``execute``, a hook, a connection or the network, and never an operator's own OpenLineage
method (those ask a live connection for the default schema or the database).

What it gives, per task: the tables and objects read and written, each either a whole URI
(``s3://bucket/key``) or a table on a connection (``{"system", "conn", "database", "schema",
"table"}``), and notes saying what could not be read (a statement that cannot be rendered, a
parser error). The judging process, outside the sandbox, resolves each connection to host, port
and database where it knows it and builds the URI (``lineage_resolve``).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

#: What one task may answer: tables per task, characters per name, statements' characters, notes.
MAX_TABLES = 200
MAX_NAME = 512
MAX_SQL = 1 << 20
MAX_NOTES = 5

#: The systems told apart, the words that name them in an operator's class or a connection id,
#: and OpenLineage's dialect for each.
SYSTEMS = {
    "postgres": ("postgres", ("postgres", "postgresql", "pg")),
    "redshift": ("redshift", ("redshift",)),
    "snowflake": ("snowflake", ("snowflake",)),
    "mysql": ("mysql", ("mysql", "mariadb")),
    "bigquery": ("bigquery", ("bigquery", "bq")),
    "trino": ("trino", ("trino", "presto")),
    "mssql": ("mssql", ("mssql", "sqlserver")),
    "sqlite": ("sqlite", ("sqlite",)),
    "duckdb": ("duckdb", ("duckdb",)),
    "databricks": ("databricks", ("databricks",)),
    "athena": ("athena", ("athena",)),
}

#: Systems whose unqualified table sits in a schema every connection starts in.
DEFAULT_SCHEMA = {"postgres": "public", "redshift": "public"}

#: Where a SQL operator keeps its connection id, most specific first.
_CONN_ATTRS = (
    "conn_id",
    "postgres_conn_id",
    "redshift_conn_id",
    "snowflake_conn_id",
    "mysql_conn_id",
    "trino_conn_id",
    "mssql_conn_id",
    "sqlite_conn_id",
    "databricks_conn_id",
    "gcp_conn_id",
    "aws_conn_id",
)


def available() -> str | None:
    """None when inference can run here; else why not, in a sentence."""
    try:
        import openlineage_sql  # noqa: F401
    except ImportError:
        return "openlineage-sql is not installed (the [lineage] extra)"
    return None


def _words(text: str) -> set[str]:
    out, word = set(), []
    for ch in text.lower():
        if ch.isalnum():
            word.append(ch)
        elif word:
            out.add("".join(word))
            word = []
    if word:
        out.add("".join(word))
    return out


def system_of(class_names: Iterable[str], conn_id: str | None) -> str | None:
    """The database system an operator talks to, from its classes' names, else its connection id's
    words (``postgres_default``, ``snowflake_prod``); None when neither says."""
    for name in class_names:
        lowered = name.lower()
        for system, (_, hints) in SYSTEMS.items():
            if any(hint in lowered for hint in hints if len(hint) > 3):
                return system
    words = _words(conn_id or "")
    for system, (_, hints) in SYSTEMS.items():
        if words & set(hints):
            return system
    return None


def _classes(task: Any) -> list[str]:
    return [klass.__name__ for klass in type(task).__mro__]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


# -- rendering --------------------------------------------------------------------------------


class ParserMissing(Exception):
    """OpenLineage's SQL parser is not installed: a statement is not read (transfers still are)."""


class Unrenderable(Exception):
    """A templated value that cannot be rendered at parse time (a variable, an XCom, a macro)."""


_LOGICAL = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)


def _ds_add(ds: str, days: int) -> str:
    return (dt.date.fromisoformat(ds) + dt.timedelta(days=int(days))).isoformat()


def _ds_format(ds: str, input_format: str, output_format: str) -> str:
    return dt.datetime.strptime(ds, input_format).strftime(output_format)


class _Macros:
    """The default macros that need nothing of a run or the database."""

    ds_add = staticmethod(_ds_add)
    ds_format = staticmethod(_ds_format)
    datetime = dt.datetime
    timedelta = dt.timedelta


def context(params: dict[str, Any], logical: dt.datetime = _LOGICAL) -> dict[str, Any]:
    """What a statement may use at parse time: the task's params and the run's dates, for a run
    whose logical date is fixed (table names rarely hang on it; an object key's partition often
    does: ``Reader.key`` keeps the part of a key no date changes)."""
    start, end = logical, logical + dt.timedelta(days=1)
    return {
        "params": params,
        "ds": start.date().isoformat(),
        "ds_nodash": start.strftime("%Y%m%d"),
        "ts": start.isoformat(),
        "ts_nodash": start.strftime("%Y%m%dT%H%M%S"),
        "logical_date": start,
        "data_interval_start": start,
        "data_interval_end": end,
        "macros": _Macros,
    }


_ENVIRONMENT: Any = None


def _environment() -> Any:
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        _ENVIRONMENT = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    return _ENVIRONMENT


def render(text: str, values: dict[str, Any]) -> str:
    """``text`` rendered in Jinja's immutable sandbox with ``values`` alone (no loader, so no
    include; no DAG macro or filter, which are the DAG's code); Unrenderable when it needs more."""
    if len(text) > MAX_SQL:  # a statement this long is no DAG's own: not handed to the parser
        raise Unrenderable(f"it is over {MAX_SQL:,} characters")
    if "{{" not in text and "{%" not in text:
        return text
    try:
        rendered = _environment().from_string(text).render(values)
    except Exception as exc:  # an undefined name, a sandbox refusal, a syntax error
        raise Unrenderable(_first_line(str(exc)) or type(exc).__name__) from None
    if not isinstance(rendered, str) or len(rendered) > MAX_SQL:
        raise Unrenderable("its rendering is too large")
    return rendered


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:200] if lines else ""


def _params(task: Any) -> dict[str, Any]:
    """The task's params (its DAG's included) as plain values."""
    params = getattr(task, "params", None)
    if params is None:
        return {}
    try:
        dumped = params.dump() if hasattr(params, "dump") else dict(params)
    except Exception:
        return {}
    return dumped if isinstance(dumped, dict) else {}


# -- SQL ---------------------------------------------------------------------------------------


def template_file(
    text: str, task: Any, folder: str, dag_file: str | None, max_bytes: int = MAX_SQL
) -> str | None:
    """The text of a template file a statement names (``sql="queries/load.sql"``), looked up where
    Airflow looks (the DAG file's folder, then the DAG's ``template_searchpath``), inside the DAG
    folder only, and bounded; None when ``text`` names no such file."""
    exts = tuple(e for e in getattr(task, "template_ext", ()) or () if isinstance(e, str))
    name = text.strip()
    if not exts or not name.endswith(exts) or "\n" in name or len(name) > 1024:
        return None
    try:
        dag = getattr(task, "dag", None)
    except Exception:  # a task of no DAG (the SDK raises)
        dag = None
    places: list[str] = []
    if dag_file:
        places.append(os.path.dirname(dag_file))
    searchpath = getattr(dag, "template_searchpath", None)
    if isinstance(searchpath, str):
        searchpath = [searchpath]
    for place in searchpath or ():
        if isinstance(place, str):
            places.append(place if os.path.isabs(place) else os.path.join(folder, place))
    root = os.path.realpath(folder)
    for place in places:
        candidate = os.path.realpath(os.path.join(place, name))
        if not (candidate == root or candidate.startswith(root + os.sep)) or not os.path.isfile(candidate):
            continue
        with open(candidate, "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise Unrenderable(f"its template file {name} is over {max_bytes:,} bytes")
        return data.decode("utf-8", errors="replace")
    raise Unrenderable(f"its template file {name} is not found in the DAG folder")


def statements(value: Any) -> list[str]:
    """An operator's ``sql`` as a list of statements' texts (a string or a list of strings)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for item in value if isinstance(item, str)]
    return []


Table = tuple[str | None, str | None, str]  # (database, schema, name)
_PARAMETER = re.compile(r"%\(\w+\)s|%s")


def parse_sql(
    texts: list[str], system: str | None, default_schema: str | None
) -> tuple[list[Table], list[Table], list[str]]:
    """OpenLineage's SQL parser on rendered statements: (tables read, tables written, errors), each
    table as ``(database, schema, name)``. A table the same statements write and read (a staging
    or temporary table, an upsert) is written only."""
    try:
        import openlineage_sql
    except ImportError:
        raise ParserMissing from None

    # a driver's bound parameters (%(name)s, %s) are values to the parser, not syntax it must know
    texts = [_PARAMETER.sub("NULL", text) for text in texts]
    dialect = SYSTEMS[system][0] if system in SYSTEMS else "generic"
    kwargs = {"dialect": dialect}
    if default_schema:
        kwargs["default_schema"] = default_schema
    try:
        meta = openlineage_sql.parse(texts, **kwargs)
    except Exception as exc:  # the parser's own failure: said, never raised into the parse
        return [], [], [_first_line(str(exc)) or type(exc).__name__]
    if meta is None:
        return [], [], ["the SQL parser read nothing of it"]

    def tables(found: Any) -> list[Table]:
        out = []
        for table in found or ():
            name = _text(getattr(table, "name", None))
            if name:
                out.append((_text(table.database), _text(table.schema), name))
        return out

    written = tables(meta.out_tables)
    read = [t for t in tables(meta.in_tables) if t not in written]
    errors = [_first_line(str(getattr(e, "message", e))) for e in getattr(meta, "errors", None) or ()]
    return read, written, errors


# -- operators ---------------------------------------------------------------------------------


class _Task:
    """What one task reads and writes, and what could not be read of it."""

    def __init__(self) -> None:
        self.reads: list[dict[str, Any]] = []
        self.writes: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.operator: str | None = None
        self.unparsed = False  # a statement left unread: no SQL parser here

    def table(self, role: str, system: str | None, conn: str | None, parts: Table) -> None:
        database, schema, name = parts
        entry = {"system": system, "conn": conn, "database": database, "schema": schema, "table": name}
        (self.reads if role == "reads" else self.writes).append(entry)

    def object(self, role: str, uri: str) -> None:
        (self.reads if role == "reads" else self.writes).append({"uri": uri})

    def note(self, text: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text[:300])

    def empty(self) -> bool:
        return not (self.reads or self.writes or self.notes or self.unparsed)

    def as_json(self) -> dict[str, Any]:
        def unique(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            seen, out = set(), []
            for item in items:
                key = tuple(sorted((k, str(v)) for k, v in item.items()))
                if key not in seen:
                    seen.add(key)
                    out.append(item)
            return out[:MAX_TABLES]

        return {
            "operator": self.operator,
            "reads": unique(self.reads),
            "writes": unique(self.writes),
            "notes": self.notes,
            "unparsed": self.unparsed,
        }


class Reader:
    """Reads one DAG's tasks; ``folder`` is the DAG folder, ``dag_file`` the DAG's file."""

    def __init__(self, folder: str, dag_file: str | None) -> None:
        self.folder = folder
        self.dag_file = dag_file
        #: what an argument that cannot be rendered said, for the task being read: one argument
        #: computed at run time (a bucket from an XCom) leaves the others' tables read
        self.unrendered: list[str] = []

    def dag(self, dag: Any) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for task in getattr(dag, "tasks", ()) or ():
            task_id = getattr(task, "task_id", None)
            if not isinstance(task_id, str):
                continue
            found = _Task()
            self.unrendered = []
            try:
                self.task(task, found)
            except Unrenderable as exc:
                found.note(f"its statement cannot be rendered at parse time: {exc}")
            except ParserMissing:
                found.unparsed = True
            except Exception as exc:  # an operator of a shape not foreseen: said, never fatal
                found.note(f"its operator could not be read ({type(exc).__name__})")
            for said in self.unrendered:
                found.note(f"an argument cannot be rendered at parse time: {said}")
            if not found.empty():
                out[task_id] = found.as_json()
        return out

    def value(self, task: Any, value: Any) -> str | None:
        """A templated argument rendered (a string), None when absent or not renderable (said)."""
        text = _text(value)
        if text is None:
            return None
        try:
            return render(text, context(_params(task))).strip() or None
        except Unrenderable as exc:
            self.unrendered.append(str(exc))
            return None

    def key(self, task: Any, value: Any) -> str | None:
        """An object key rendered, cut to the prefix no run's date changes: ``raw/{{ ds }}.csv``
        reads ``raw/``, the same object store prefix every run writes under."""
        text = _text(value)
        if text is None:
            return None
        try:
            first = render(text, context(_params(task))).strip()
            if "{{" not in text:
                return first or None
            other = render(text, context(_params(task), _LOGICAL + dt.timedelta(days=400, hours=1))).strip()
        except Unrenderable as exc:
            self.unrendered.append(str(exc))
            return None
        if other == first:
            return first or None
        same = 0
        while same < min(len(first), len(other)) and first[same] == other[same]:
            same += 1
        return first[: first.rfind("/", 0, same) + 1] or None

    def task(self, task: Any, found: _Task) -> None:
        classes = _classes(task)
        names = set(classes)
        for kind, handler in _HANDLERS:
            if kind in names:
                found.operator = kind
                handler(self, task, found, classes)
                return

    # each handler: what one family of operators holds

    def sql(self, task: Any, found: _Task, classes: list[str], *, role_hint: str | None = None) -> None:
        conn = _conn_id(task)
        system = system_of(classes, conn)
        texts = []
        for text in statements(getattr(task, "sql", None)):
            loaded = template_file(text, task, self.folder, self.dag_file)
            texts.append(render(loaded if loaded is not None else text, context(_params(task))))
        if not texts:
            if getattr(task, "sql", None) is not None:
                found.note("its statement is not text at parse time")
            return
        database = _text(getattr(task, "database", None))
        self.tables(found, texts, system, conn, database)

    def tables(
        self, found: _Task, texts: list[str], system: str | None, conn: str | None, database: str | None
    ) -> None:
        read, written, errors = parse_sql(texts, system, DEFAULT_SCHEMA.get(system or ""))
        for parts in read:
            found.table("reads", system, conn, _with_database(parts, database))
        for parts in written:
            found.table("writes", system, conn, _with_database(parts, database))
        for error in errors[:2]:
            found.note(f"the SQL parser could not read all of its statement: {error}")

    def table_check(self, task: Any, found: _Task, classes: list[str]) -> None:
        conn = _conn_id(task)
        table = self.value(task, getattr(task, "table", None))
        if table:
            system = system_of(classes, conn)
            found.table("reads", system, conn, _split(table, system))

    def s3_to_redshift(self, task: Any, found: _Task, classes: list[str]) -> None:
        bucket = self.value(task, getattr(task, "s3_bucket", None))
        key = self.key(task, getattr(task, "s3_key", None))
        if (uri := _s3(bucket, key)) is not None:
            found.object("reads", uri)
        table = self.value(task, getattr(task, "table", None))
        if table:
            schema = self.value(task, getattr(task, "schema", None))
            conn = _named_conn(task, "redshift_conn_id")
            found.table("writes", "redshift", conn, _split(table, "redshift", schema))

    def redshift_to_s3(self, task: Any, found: _Task, classes: list[str]) -> None:
        conn = _named_conn(task, "redshift_conn_id")
        query = self.value(task, getattr(task, "select_query", None))
        table = self.value(task, getattr(task, "table", None))
        if query:  # the operator unloads its query where given, else the whole table
            self.tables(found, [query], "redshift", conn, None)
            found.writes.clear()  # an unload reads its query: nothing it names is written
        elif table:
            schema = self.value(task, getattr(task, "schema", None))
            found.table("reads", "redshift", conn, _split(table, "redshift", schema))
        bucket = self.value(task, getattr(task, "s3_bucket", None))
        key = self.key(task, getattr(task, "s3_key", None))
        if (uri := _s3(bucket, key)) is not None:
            found.object("writes", uri)

    def sql_to_s3(self, task: Any, found: _Task, classes: list[str]) -> None:
        conn = _named_conn(task, "sql_conn_id")
        query = self.value(task, getattr(task, "query", None))
        if query:
            self.tables(found, [query], system_of([], conn), conn, None)
            found.writes.clear()
        bucket = self.value(task, getattr(task, "s3_bucket", None))
        key = self.key(task, getattr(task, "s3_key", None))
        if (uri := _s3(bucket, key)) is not None:
            found.object("writes", uri)

    def s3_to_sql(self, task: Any, found: _Task, classes: list[str]) -> None:
        bucket = self.value(task, getattr(task, "s3_bucket", None))
        key = self.key(task, getattr(task, "s3_key", None))
        if (uri := _s3(bucket, key)) is not None:
            found.object("reads", uri)
        conn = _named_conn(task, "sql_conn_id")
        table = self.value(task, getattr(task, "table", None))
        if table:
            system = system_of([], conn)
            schema = self.value(task, getattr(task, "schema", None))
            found.table("writes", system, conn, _split(table, system, schema))

    def s3_copy(self, task: Any, found: _Task, classes: list[str]) -> None:
        source = _s3(
            self.value(task, getattr(task, "source_bucket_name", None)),
            self.key(task, getattr(task, "source_bucket_key", None)),
        )
        dest = _s3(
            self.value(task, getattr(task, "dest_bucket_name", None)),
            self.key(task, getattr(task, "dest_bucket_key", None)),
        )
        if source:
            found.object("reads", source)
        if dest:
            found.object("writes", dest)

    def generic_transfer(self, task: Any, found: _Task, classes: list[str]) -> None:
        source = _named_conn(task, "source_conn_id")
        texts = [render(t, context(_params(task))) for t in statements(getattr(task, "sql", None))]
        if texts:
            self.tables(found, texts, system_of([], source), source, None)
            found.writes.clear()
        dest = _named_conn(task, "destination_conn_id")
        table = self.value(task, getattr(task, "destination_table", None))
        if table:
            system = system_of([], dest)
            found.table("writes", system, dest, _split(table, system))

    def gcs_to_bigquery(self, task: Any, found: _Task, classes: list[str]) -> None:
        bucket = self.value(task, getattr(task, "bucket", None))
        objects = getattr(task, "source_objects", None)
        for obj in [objects] if isinstance(objects, str) else list(objects or ()):
            name = self.key(task, obj)
            if bucket and name:
                found.object("reads", f"gs://{bucket}/{name.lstrip('/')}")
        dest = self.value(task, getattr(task, "destination_project_dataset_table", None))
        if dest:
            conn = _named_conn(task, "gcp_conn_id")
            parts = dest.replace(":", ".").split(".")
            if len(parts) == 3:
                found.table("writes", "bigquery", conn, (parts[0], parts[1], parts[2]))
            elif len(parts) == 2:
                found.table("writes", "bigquery", conn, (None, parts[0], parts[1]))


def _named_conn(task: Any, attr: str) -> str | None:
    """A connection id the operator holds under ``attr``; None where it is computed at run time."""
    value = _text(getattr(task, attr, None))
    return None if value is None or "{{" in value or "{%" in value else value


def _conn_id(task: Any) -> str | None:
    """The operator's connection id; None where none is set or it is computed at run time."""
    for attr in _CONN_ATTRS:
        value = _text(getattr(task, attr, None))
        if value:
            return None if "{{" in value or "{%" in value else value
    return None


def _with_database(parts: Table, database: str | None) -> Table:
    return (parts[0] or database, parts[1], parts[2])


def _split(table: str, system: str | None, schema: str | None = None) -> Table:
    """``db.schema.table``, ``schema.table`` or ``table``, with an explicit schema where given."""
    pieces = [p.strip('"`[]') for p in table.split(".")]
    if len(pieces) >= 3:
        return (pieces[-3], pieces[-2], pieces[-1])
    if len(pieces) == 2:
        return (None, pieces[0], pieces[1])
    return (None, schema or DEFAULT_SCHEMA.get(system or ""), pieces[0])


def _s3(bucket: str | None, key: str | None) -> str | None:
    """``s3://bucket/key``, where the key may be a whole ``s3://`` URL of its own; None where the
    bucket or key is not known."""
    key = key or ""
    if key.startswith("s3://"):
        return key
    return f"s3://{bucket}/{key.lstrip('/')}" if bucket and key else None


#: Operator families by the class name that marks them (checked in this order, on the MRO).
_HANDLERS: list[tuple[str, Any]] = [
    ("S3ToRedshiftOperator", Reader.s3_to_redshift),
    ("RedshiftToS3Operator", Reader.redshift_to_s3),
    ("SqlToS3Operator", Reader.sql_to_s3),
    ("S3ToSqlOperator", Reader.s3_to_sql),
    ("S3CopyObjectOperator", Reader.s3_copy),
    ("GenericTransfer", Reader.generic_transfer),
    ("GCSToBigQueryOperator", Reader.gcs_to_bigquery),
    ("SQLTableCheckOperator", Reader.table_check),
    ("SQLColumnCheckOperator", Reader.table_check),
    ("BaseSQLOperator", Reader.sql),  # SQLExecuteQueryOperator and every common-sql operator
    ("RedshiftDataOperator", Reader.sql),
]


def infer(dags: Iterable[Any], folder: str) -> Iterator[tuple[str, dict[str, dict[str, Any]]]]:
    """Each DAG's dag_id with what its tasks read and write (tasks with nothing to say left out)."""
    for dag in dags:
        dag_id = getattr(dag, "dag_id", None)
        if not isinstance(dag_id, str):
            continue
        found = Reader(folder, _text(getattr(dag, "fileloc", None))).dag(dag)
        if found:
            yield dag_id, found


# -- the server's check of a child's answer ----------------------------------------------------


def _short(value: Any) -> str | None:
    return value[:MAX_NAME] if isinstance(value, str) and value else None


def checked(value: Any) -> dict[str, dict[str, Any]]:
    """One DAG's inference as a child answered it, what is misshapen left out (a file's code may
    answer anything)."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(value, dict):
        return out
    for task_id, task in value.items():
        if not (isinstance(task_id, str) and isinstance(task, dict)):
            continue
        kept: dict[str, Any] = {"operator": _short(task.get("operator"))}
        for role in ("reads", "writes"):
            items: list[dict[str, str | None]] = []
            for item in task.get(role) or () if isinstance(task.get(role), list) else ():
                if not isinstance(item, dict):
                    continue
                if "uri" in item:
                    if uri := _short(item.get("uri")):
                        items.append({"uri": uri})
                elif table := _short(item.get("table")):
                    items.append(
                        {
                            "system": _short(item.get("system")),
                            "conn": _short(item.get("conn")),
                            "database": _short(item.get("database")),
                            "schema": _short(item.get("schema")),
                            "table": table,
                        }
                    )
            kept[role] = items[:MAX_TABLES]
        notes = task.get("notes")
        kept["notes"] = (
            [n[:300] for n in notes if isinstance(n, str)][:MAX_NOTES] if isinstance(notes, list) else []
        )
        kept["unparsed"] = task.get("unparsed") is True
        out[task_id[:MAX_NAME]] = kept
    return out
