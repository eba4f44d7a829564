"""A JSON answer read as its bytes arrive, the items of its one big list handed on one at a time.

A per-DAG answer (a DAG's tasks, its deadline alerts) may run to the 64 MiB cap on one answer, and a
capture reads one per DAG. Decoded whole, each costs several times its size in Python objects, and
the answers in flight add up. Here the bytes are fed in as they come (``feed``), and each item of
the list the caller names is decoded alone (``json``'s own scanner, from the item's first
character) and given to a collector that keeps what the estate needs of it (a task's few keys, the
alerts a document keeps): no more than one item, one chunk of text and what the collectors keep is
ever held, whatever the size of the answer.

The outcome is what ``json.loads`` of the whole answer gives, the named list replaced by what its
collector kept: every other value is decoded whole, a key given twice keeps its last value, the
bytes are strict UTF-8 (a byte-order mark tolerated), and invalid JSON is a ``ValueError`` with a
short reason (``nested too deeply`` where the nesting passes the recursion limit). No I/O: bytes
in, values out.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from typing import Any, Protocol

_WHITESPACE = re.compile(r"[ \t\n\r]*")
#: What may still belong to a number the text cut short ("1.5e" is "1.5" and a bad "e" only if
#: nothing follows: the next piece may bring "+24").
_NUMBER_GOES_ON = re.compile(r"[0-9eE.+\-]*")
_SCAN = json.JSONDecoder().raw_decode
#: What a failed try waits for before the next: this many more characters at least (a value cut
#: by the end of a chunk is tried again once enough has come, never once per chunk).
_MIN_WAIT = 1 << 16


class Collector(Protocol):
    """Keeps what it needs of each item of a list, and gives what it kept once the list ends."""

    def add(self, item: Any) -> None: ...

    def value(self) -> Any: ...


class Kept:
    """The collector of a list kept item by item, each passed through ``reduce`` (``seen``: how many
    items the list held)."""

    def __init__(self, reduce: Callable[[Any], Any] | None = None) -> None:
        self._reduce = reduce
        self._items: list[Any] = []
        self.seen = 0

    def add(self, item: Any) -> None:
        self.seen += 1
        self._items.append(item if self._reduce is None else self._reduce(item))

    def value(self) -> Any:
        return self._items


class _Dropped:
    """A list nobody asked for: its items are read and let go."""

    seen = 0

    def add(self, item: Any) -> None:
        self.seen += 1

    def value(self) -> Any:
        return []


class _Frame:
    """An object or a list being read: where its values go, and what comes next in it."""

    __slots__ = ("collector", "expect", "key", "level", "target")

    def __init__(self, level: int, target: dict[str, Any] | None, collector: Collector | None) -> None:
        self.level = level  # how many of the ``under`` keys lead here
        self.target = target  # an object's members (None for a list)
        self.collector = collector  # a list's collector
        self.key: str | None = None  # the member whose value is being read
        self.expect = "first"  # "first" (a key or the end), "key", "value", "next" (a comma or the end)


class AnswerReader:
    """Read one JSON answer from its bytes, fed in pieces; ``end`` gives the decoded answer.

    ``items``: the key of the list whose items are handed, one by one, to a collector that
    ``collect`` makes (a new one each time the key appears: the last one wins, as in
    ``json.loads``). ``under``: the keys of the envelopes around the answer (MWAA's
    ``RestApiResponse``), followed down from the top. ``bare``: an answer that is itself a list
    is the list of items (a tasks answer may be); otherwise its items are read and dropped.
    """

    def __init__(
        self,
        items: str | None = None,
        collect: Callable[[], Collector] = Kept,
        *,
        under: tuple[str, ...] = (),
        bare: bool = False,
    ) -> None:
        self._items = items
        self._collect = collect
        self._under = under
        self._bare = bare
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")("strict")
        self._text = ""
        self._at = 0
        self._pieces: list[str] = []
        self._pending = 0  # characters in _pieces
        self._wait = 0  # characters to wait for before the next try (after one that needed more)
        self._stack: list[_Frame] = []
        self._done = False
        self._result: Any = None
        self._ended = False

    def within(self, key: str) -> AnswerReader:
        """A new reader of the same answer carried in an envelope's member ``key``."""
        return AnswerReader(self._items, self._collect, under=(key, *self._under), bare=self._bare)

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the answer; raises ValueError as soon as they cannot be JSON."""
        try:
            text = self._decoder.decode(data)
        except UnicodeDecodeError:
            raise ValueError("not UTF-8") from None
        if text:
            self._pieces.append(text)
            self._pending += len(text)
        if self._pending >= self._wait:
            self._run()

    def end(self) -> Any:
        """The answer, once every byte was fed; raises ValueError where it is not whole JSON."""
        try:
            tail = self._decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise ValueError("not UTF-8") from None
        if tail:
            self._pieces.append(tail)
            self._pending += len(tail)
        self._ended = True
        self._run()
        if not self._done:
            raise ValueError("the answer ends before its JSON does")
        return self._result

    # -- reading ---------------------------------------------------------------------------

    def _run(self) -> None:
        if self._pieces:
            self._text = self._text[self._at :] + "".join(self._pieces)
            self._at = 0
            self._pieces.clear()
            self._pending = 0
        try:
            while self._step():
                pass
        except RecursionError:
            raise ValueError("nested too deeply") from None
        # what is left waits for enough more to be worth another try
        left = len(self._text) - self._at
        self._wait = 0 if self._done else max(_MIN_WAIT, left)

    def _skip(self) -> str | None:
        """The next character that is not white space, or None when the text ends first."""
        self._at = _WHITESPACE.match(self._text, self._at).end()  # type: ignore[union-attr]
        return self._text[self._at] if self._at < len(self._text) else None

    def _value(self) -> tuple[bool, Any]:
        """Decode one whole value at the position: (True, value), or (False, None) until more comes."""
        try:
            value, end = _SCAN(self._text, self._at)
        except json.JSONDecodeError as exc:
            if self._ended:
                raise ValueError(_reason(exc)) from None
            return False, None
        if not self._ended and _cut_short(self._text, end, value):
            return False, None
        self._at = end
        return True, value

    def _step(self) -> bool:
        """Read what comes next; False when more text is needed (or all is read)."""
        char = self._skip()
        if self._done:
            if char is not None:
                raise ValueError(f"extra data after the JSON value (char {self._at})")
            return False
        if char is None:
            return False
        if not self._stack:
            return self._open(char, 0)  # the answer itself (tried again from its start until whole)
        frame = self._stack[-1]
        if frame.target is None:
            return self._in_list(frame, char)
        return self._in_object(frame, char)

    def _open(self, char: str, level: int) -> bool:
        """A value at ``level`` (the answer, or an envelope's member) starts with ``char``: an
        object or list to descend into, or a value decoded whole."""
        if char == "{" and level <= len(self._under) and (level < len(self._under) or self._items):
            self._at += 1
            self._stack.append(_Frame(level, {}, None))
            return True
        if char == "[" and level == len(self._under) and self._items:
            # the answer itself is a list: its items, or items nobody asked for
            collector = self._collect() if self._bare else _Dropped()
            self._at += 1
            self._stack.append(_Frame(level, None, collector))
            return True
        ok, value = self._value()
        if not ok:
            return False
        self._place(value)
        return True

    def _place(self, value: Any) -> None:
        """A value read whole: the member of the object being read, or the answer."""
        if not self._stack:
            self._result, self._done = value, True
            return
        frame = self._stack[-1]
        if frame.target is not None and frame.key is not None:
            frame.target[frame.key] = value
            frame.key, frame.expect = None, "next"
            return
        raise ValueError("unexpected JSON")  # pragma: no cover - lists never take a placed value

    def _close(self) -> None:
        frame = self._stack.pop()
        self._at += 1
        value = frame.target if frame.target is not None else frame.collector.value()  # type: ignore[union-attr]
        self._place(value)

    def _in_object(self, frame: _Frame, char: str) -> bool:
        if frame.expect in ("first", "next") and char == "}":
            self._close()
            return True
        if frame.expect == "next":
            if char != ",":
                raise ValueError(f"expecting ',' or '}}' (char {self._at})")
            self._at += 1
            frame.expect = "key"
            return True
        if frame.expect in ("first", "key"):
            if char != '"':
                raise ValueError(f"expecting a property name (char {self._at})")
            ok, key = self._value()
            if not ok:
                return False
            frame.key, frame.expect = key, "colon"
            return True
        if frame.expect == "colon":
            if char != ":":
                raise ValueError(f"expecting ':' (char {self._at})")
            self._at += 1
            frame.expect = "value"
            return True
        # a member's value
        key, level = frame.key, frame.level
        if level < len(self._under) and key == self._under[level]:
            before = len(self._stack)
            progressed = self._open(char, level + 1)
            if len(self._stack) > before:  # descended: the member is set when it closes
                return True
            return progressed
        if level == len(self._under) and key == self._items and char == "[":
            self._at += 1
            self._stack.append(_Frame(level, None, self._collect()))
            return True
        ok, value = self._value()
        if not ok:
            return False
        self._place(value)
        return True

    def _in_list(self, frame: _Frame, char: str) -> bool:
        if frame.expect in ("first", "next") and char == "]":
            self._close()
            return True
        if frame.expect == "next":
            if char != ",":
                raise ValueError(f"expecting ',' or ']' (char {self._at})")
            self._at += 1
            frame.expect = "key"  # here: an item must follow
            return True
        return self._items_run(frame)

    def _items_run(self, frame: _Frame) -> bool:
        """Items, one after another, until the list ends or the text does: the one loop every item
        of a long list goes through (``_value``'s and ``_step``'s work, without their calls)."""
        text, add, ended = self._text, frame.collector.add, self._ended  # type: ignore[union-attr]
        size, at = len(text), self._at
        while True:  # at: where an item starts
            try:
                item, end = _SCAN(text, at)
            except json.JSONDecodeError as exc:
                if ended:
                    raise ValueError(_reason(exc)) from None
                self._at = at
                return False
            if not ended and (end >= size or _cut_short(text, end, item)):
                self._at = at
                return False
            add(item)
            at = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
            if at < size and text[at] == ",":
                at = _WHITESPACE.match(text, at + 1).end()  # type: ignore[union-attr]
                frame.expect = "key"  # an item must follow
                if at < size:
                    continue
                self._at = at
                return False
            self._at, frame.expect = at, "next"  # the end of the list, of the text, or an error
            return at < size


def read_answer(data: bytes, reader: AnswerReader, *, piece: int = 1 << 20) -> Any:
    """``reader`` fed all of ``data`` (in pieces, so that no text of the whole is ever made)."""
    view = memoryview(data)
    for start in range(0, len(view), piece):
        reader.feed(bytes(view[start : start + piece]))
    return reader.end()


def _cut_short(text: str, end: int, value: Any) -> bool:
    """Whether a value read up to ``end`` may go on in the next piece of text: the text ends there,
    or a number is followed by nothing but what could still be part of it."""
    if end >= len(text):
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _NUMBER_GOES_ON.match(text, end).end() >= len(text)  # type: ignore[union-attr]
    return False


def _reason(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} (char {exc.pos})"
