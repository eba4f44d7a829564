"""The files a team writes by hand (waivers, rules): YAML or JSON, read safely and in bounded time.

One reader for all of them, so each refuses a hostile file the same way, before anything of it
is used: no anchors or aliases (so no "billion laughs"), at most ``MAX_DEPTH`` levels of nesting,
no number too long to convert, dates left as text for the file's own check, and no error message
quoting more than ``QUOTE_CHARS`` characters of what the file holds.
"""

from __future__ import annotations

import reprlib
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no annotations

from airflow_provider_coremodels.errors import InputError

#: The deepest nesting a hand-written file may use, counting the leaf values.
MAX_DEPTH = 16
#: The most characters of a value an error message quotes.
QUOTE_CHARS = 80


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """Safe YAML without anchors, aliases or deep nesting, that leaves dates as text."""

    def __init__(self, stream: str, kind: str, needs: str, error: type[InputError]) -> None:
        super().__init__(stream)
        self.depth = 0
        self.kind, self.needs, self.error = kind, needs, error

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Refuse an alias or anchor before it is resolved, and nesting past ``MAX_DEPTH``, by line."""
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise self.error(self._no_anchors("alias", line))
        if getattr(event, "anchor", None) is not None:
            raise self.error(self._no_anchors("anchor", line))
        if self.depth >= MAX_DEPTH:
            raise self.error(
                f"nests more than {MAX_DEPTH} levels deep at line {line}; a {self.kind} needs {self.needs}"
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def _no_anchors(self, what: str, line: int) -> str:
        return f"uses a YAML {what} at line {line}: anchors and aliases are not allowed in {self.kind}s"

    def construct_yaml_int(self, node: Any) -> int:
        """An integer too long for Python to convert is a YAML error at its line, not a ValueError."""
        try:
            value: int = super().construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, "found a number too long to read", node.start_mark
            ) from None
        return value


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# An explicit ``!!timestamp`` is text too, so it meets the file's own date check like any other.
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_str)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def read_team_file(data: bytes | str, *, kind: str, needs: str, error: type[InputError]) -> Any:
    """The value a hand-written YAML or JSON file holds (None when it is empty).

    ``kind`` names the file in messages (``waiver file``), ``needs`` is the nesting a real one
    uses, and every problem is an ``error`` saying where.
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise error("is not UTF-8 text") from None
    loader = _Loader(data, kind, needs, error)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"is not valid YAML or JSON{where}: {cut(problem)}") from None
    except RecursionError:  # a last resort: the nesting limit above refuses deep files first
        raise error("nests too deeply to read") from None
    finally:
        loader.dispose()


_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxstring, _repr.maxother = 3, QUOTE_CHARS, QUOTE_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = _repr.maxfrozenset = 4


def quote(value: Any) -> str:
    """``repr(value)`` cut to ``QUOTE_CHARS``, built without ever rendering a huge value whole."""
    return cut(_repr.repr(value))


def cut(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."


def unknown_keys(entry: dict[Any, Any], known: tuple[str, ...]) -> str | None:
    """``has unknown key(s) a, b; expected x, y``, or None when every key is known."""
    unknown = sorted(cut(str(k)) for k in entry if k not in known)
    if not unknown:
        return None
    listed = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
    return f"has unknown key(s) {listed}; expected {', '.join(known)}"
