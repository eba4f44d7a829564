"""Asset conflicts: the assets Airflow refuses to activate because their name or URI is taken.

In Airflow 3 an asset is a (name, URI) pair, and among active assets both must be unique.
When two declarations clash, Airflow keeps the one already active, hides the other from the
default asset listing and writes an ``asset conflict`` DAG warning on every DAG that references
the refused one, one line per refused asset::

    Cannot activate asset Asset(name="inventory", uri="s3://lake/inventory/v2", group="asset"); name is
    already associated to 's3://lake/inventory/v1'

The parse keeps these lines on the DAG (``airflow.assetConflict``); the audit and SARIF read
them back through ``read_conflicts``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Literal

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
