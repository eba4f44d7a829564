"""Asset conflicts: the assets Airflow refuses to activate because their name or URI is taken.

In Airflow 3 an asset is a (name, URI) pair, and among active assets both must be unique.
When two declarations clash, Airflow keeps the one already active, hides the other from the
default asset listing and writes an ``asset conflict`` DAG warning on every DAG that references
the refused one, one line per refused asset::

    Cannot activate asset Asset(name="inventory", uri="s3://lake/inventory/v2", group="asset"); name is
    already associated to 's3://lake/inventory/v1'

The parse keeps these lines on the DAG (``airflow.assetConflict``); the audit and SARIF read
them back through ``read_conflicts``. The scheduler writes the warning at its next asset pass; until
then the refused asset is only in ``GET /assets?only_active=false``, which the capture lists too
(``inactive_assets``), and ``refused_twins`` words the same lines from it, so the finding is there
from the first capture and the same after the scheduler's pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

#: ``GET /api/v2/dagWarnings``'s ``warning_type`` for these warnings.
ASSET_CONFLICT = "asset conflict"

_LINE = re.compile(
    r'^Cannot activate asset Asset\(name="(?P<name>.*)", uri="(?P<uri>.*)", group="(?P<group>.*)"\); '
    r"(?P<clash>name|uri) is already associated to (?P<holder>'.*'|\".*\")$"
)


@dataclass(frozen=True, slots=True)
class AssetConflict:
    """An asset Airflow refused: its ``clash`` (name or URI) is held by ``holder``, the active
    asset's URI (when the name clashes) or name (when the URI clashes)."""

    name: str
    uri: str
    group: str
    clash: Literal["name", "uri"]
    holder: str

    def describe(self) -> str:
        """Both sides, for a finding's detail."""
        if self.clash == "uri":
            return (
                f'URI {self.uri} belongs to the active asset "{self.holder}"; '
                f'the asset "{self.name}" declared with it is refused'
            )
        return (
            f'name "{self.name}" belongs to the active asset {self.holder}; '
            f"the asset {self.uri} declared with it is refused"
        )


def read_conflicts(message: str) -> tuple[list[AssetConflict], list[str]]:
    """The conflicts in a DAG warning's message, and the lines this version could not read."""
    conflicts: list[AssetConflict] = []
    unreadable: list[str] = []
    for line in message.splitlines():
        found = _LINE.match(line)
        holder = _literal(found.group("holder")) if found else None
        if found is None or holder is None:
            unreadable.append(line)
            continue
        clash: Literal["name", "uri"] = "name" if found.group("clash") == "name" else "uri"
        name, uri, group = found.group("name", "uri", "group")
        conflicts.append(AssetConflict(name, uri, group, clash, holder))
    return conflicts, unreadable


def _literal(text: str) -> str | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def conflict_line(name: str, uri: str, group: str, clash: Literal["name", "uri"], holder: str) -> str:
    """A refused asset's line, worded exactly as Airflow's scheduler words it."""
    return (
        f'Cannot activate asset Asset(name="{name}", uri="{uri}", group="{group}"); '
        f"{clash} is already associated to {holder!r}"
    )


#: The keys of an asset object that name the DAGs referencing it, across API versions.
_REFERENCE_KEYS = ("producing_tasks", "scheduled_dags", "consuming_dags", "consuming_tasks")


def refused_twins(active: Iterable[Any], inactive: Iterable[Any]) -> dict[str, list[str]]:
    """The conflict lines for the inactive assets whose name or URI an active asset holds, by the
    DAG that references each (as the scheduler decides: the name first, then the URI)."""
    name_to_uri: dict[str, str] = {}
    uri_to_name: dict[str, str] = {}
    for raw in active:
        uri, name = _field(raw, "uri"), _field(raw, "name")
        if uri:
            name_to_uri.setdefault(name or uri, uri)
            uri_to_name.setdefault(uri, name or uri)
    lines: dict[str, list[str]] = {}
    for raw in inactive:
        uri = _field(raw, "uri")
        if not uri:
            continue
        name, group = _field(raw, "name") or uri, _field(raw, "group") or "asset"
        holder_uri, holder_name = name_to_uri.get(name), uri_to_name.get(uri)
        if holder_uri is not None and holder_uri != uri:
            line = conflict_line(name, uri, group, "name", holder_uri)
        elif holder_name is not None and holder_name != name:
            line = conflict_line(name, uri, group, "uri", holder_name)
        else:
            continue  # not a twin: an asset no DAG references any more (the scheduler orphaned it)
        for dag_id in _referencing(raw):
            lines.setdefault(dag_id, []).append(line)
    return lines


def _referencing(raw: Mapping[str, Any]) -> set[str]:
    found = set()
    for key in _REFERENCE_KEYS:
        refs = raw.get(key)
        for ref in refs if isinstance(refs, list) else ():
            dag_id = ref.get("dag_id") if isinstance(ref, dict) else None
            if isinstance(dag_id, str) and dag_id:
                found.add(dag_id)
    return found


def _field(raw: Any, key: str) -> str | None:
    value = raw.get(key) if isinstance(raw, dict) else None
    return value if isinstance(value, str) and value else None
