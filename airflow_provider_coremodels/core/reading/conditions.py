"""Asset conditions: what a DAG scheduled on assets waits for, as Airflow's ``asset_expression`` says.

``schedule=[a, b]`` waits for both; ``schedule=(a & b) | c`` for both of a and b, or for c.
Airflow reports the condition on a DAG's details as nested ``{"all": [...]}`` and
``{"any": [...]}`` objects whose leaves are an asset (``{"asset": {"uri": ...}}``), a
reference by name or URI (``{"asset_ref": {"name": ...}}``, from ``Asset.ref``) or an alias
(``{"alias": {"name": ...}}``); Airflow 2 reports ``dataset_expression`` with URI strings as
leaves. This module reads both into one small tree, writes it back as the compact text the
snapshot keeps (``airflow.assetCondition``), and answers the question the audit asks of it:
is an input *required* (the DAG never runs on assets without it) or only an *alternative*?
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

LeafKind = Literal["asset", "name", "uri", "alias"]


@dataclass(frozen=True, slots=True)
class Leaf:
    """One input: an asset by URI, an ``Asset.ref`` by name or by URI, or an alias by name."""

    kind: LeafKind
    value: str


@dataclass(frozen=True, slots=True)
class AllOf:
    items: tuple[Condition, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    items: tuple[Condition, ...]


Condition = Leaf | AllOf | AnyOf


class ConditionError(ValueError):
    """An ``asset_expression`` this version cannot read; the message says which part."""


def read_expression(raw: Any) -> Condition | None:
    """Airflow's ``asset_expression`` (or Airflow 2's ``dataset_expression``) as a condition.

    None for no condition (``null``, an empty object); ``ConditionError`` for a shape this
    version does not know, so that the caller can record it rather than guess.
    """
    if raw is None or raw == {}:
        return None
    return _read(raw, depth=0)


_MAX_DEPTH = 64  # Airflow nests one level per & or |; deeper is not a real schedule


def _read(raw: Any, depth: int) -> Condition:
    if depth > _MAX_DEPTH:
        raise ConditionError(f"nested deeper than {_MAX_DEPTH} levels")
    if isinstance(raw, str) and raw:  # Airflow 2: a dataset URI
        return Leaf("asset", raw)
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ConditionError(f"unexpected {_describe(raw)}")
    ((key, value),) = raw.items()
    if key in ("all", "any"):
        if not isinstance(value, list) or not value:
            raise ConditionError(f"{key!r} holds {_describe(value)}, not a list of conditions")
        items = tuple(_read(item, depth + 1) for item in value)
        return AllOf(items) if key == "all" else AnyOf(items)
    if key in ("asset", "dataset"):
        return Leaf("asset", _field(value, "uri", key))
    if key == "asset_ref":
        if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"]:
            return Leaf("name", value["name"])
        return Leaf("uri", _field(value, "uri", key))
    if key in ("alias", "dataset_alias"):
        return Leaf("alias", value if isinstance(value, str) and value else _field(value, "name", key))
    raise ConditionError(f"unknown key {key!r}")


def _field(value: Any, name: str, key: str) -> str:
    found = value.get(name) if isinstance(value, dict) else value if isinstance(value, str) else None
    if not isinstance(found, str) or not found:
        raise ConditionError(f"{key!r} has no {name!r}")
    return found


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object with keys {sorted(map(str, value))[:5]}"
    return type(value).__name__ if value is not None else "null"


# -- the compact text the snapshot keeps ----------------------------------------------------


def to_text(condition: Condition) -> str:
    """Canonical JSON: ``{"all": [...]}``, ``{"any": [...]}``, leaves ``{"asset": uri}``,
    ``{"name": n}``, ``{"uri": u}`` (the two ``Asset.ref`` forms) and ``{"alias": name}``."""
    return json.dumps(_plain(condition), separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def _plain(condition: Condition) -> Any:
    if isinstance(condition, Leaf):
        return {condition.kind: condition.value}
    key = "all" if isinstance(condition, AllOf) else "any"
    return {key: [_plain(item) for item in condition.items]}


def from_text(text: str) -> Condition:
    """Read back what ``to_text`` wrote; ``ConditionError`` for anything else."""
    try:
        raw = json.loads(text)
    except ValueError:
        raise ConditionError("not JSON") from None
    return _from_plain(raw, 0)


def _from_plain(raw: Any, depth: int) -> Condition:
    if depth > _MAX_DEPTH or not isinstance(raw, dict) or len(raw) != 1:
        raise ConditionError(f"unexpected {_describe(raw)}")
    ((key, value),) = raw.items()
    if key in ("all", "any") and isinstance(value, list) and value:
        items = tuple(_from_plain(item, depth + 1) for item in value)
        return AllOf(items) if key == "all" else AnyOf(items)
    if key in ("asset", "name", "uri", "alias") and isinstance(value, str) and value:
        return Leaf(key, value)
    raise ConditionError(f"unexpected key {key!r}")


# -- questions ------------------------------------------------------------------------------


def leaves(condition: Condition) -> Iterator[Leaf]:
    """Every input named in the condition, in order (a leaf named twice comes twice)."""
    if isinstance(condition, Leaf):
        yield condition
    else:
        for item in condition.items:
            yield from leaves(item)


def holds(condition: Condition, value: Callable[[Leaf], bool]) -> bool:
    """Whether the condition is met when each input is met as ``value`` says."""
    if isinstance(condition, Leaf):
        return value(condition)
    results = (holds(item, value) for item in condition.items)
    return all(results) if isinstance(condition, AllOf) else any(results)


def required_assets(condition: Condition, resolved: Mapping[Leaf, frozenset[str]]) -> set[str]:
    """The asset URIs without which the condition can never be met: its *required* inputs.

    ``resolved`` gives the URIs each leaf stands for (a reference or an alias may stand for
    several, or none yet). An input is required when the condition fails with every other
    input met; a leaf that resolves to nothing is taken as met, since nothing is known of it.
    Every other asset the condition names is an alternative.
    """
    candidates = {uri for leaf in leaves(condition) for uri in resolved.get(leaf, frozenset())}
    return {uri for uri in candidates if not holds(condition, _met_without(uri, resolved))}


def _met_without(uri: str, resolved: Mapping[Leaf, frozenset[str]]) -> Callable[[Leaf], bool]:
    """Whether each input is met with every asset updated but ``uri``."""

    def met(leaf: Leaf) -> bool:
        uris = resolved.get(leaf)
        return not uris or bool(uris - {uri})

    return met


class AssetIndex:
    """Which asset URIs an input stands for, from the assets' URIs and metadata: an asset by its
    URI, ``Asset.ref`` by name (``airflow.name``) or by URI as written, an alias by the assets
    it was resolved to (``airflow.aliases``)."""

    def __init__(self, assets: Iterable[tuple[str, Mapping[str, str]]]) -> None:
        self.uris: set[str] = set()
        self.by_name: dict[str, list[str]] = {}
        self.by_alias: dict[str, list[str]] = {}
        for uri, metadata in assets:
            self.uris.add(uri)
            if "airflow.name" in metadata:
                self.by_name.setdefault(metadata["airflow.name"], []).append(uri)
            for alias in metadata.get("airflow.aliases", "").split(","):
                if alias:
                    self.by_alias.setdefault(alias, []).append(uri)

    def resolve(self, leaf: Leaf) -> list[str]:
        if leaf.kind == "name":
            return self.by_name.get(leaf.value, [])
        if leaf.kind == "alias":
            return self.by_alias.get(leaf.value, [])
        return [leaf.value] if leaf.value in self.uris else []

    def alternatives(self, condition: Condition) -> set[str]:
        """The assets the condition names that it can do without: its alternative inputs."""
        resolved = {leaf: frozenset(self.resolve(leaf)) for leaf in leaves(condition)}
        named = {uri for uris in resolved.values() for uri in uris}
        return named - required_assets(condition, resolved)
