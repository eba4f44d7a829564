"""The hand-written regex engine that ``core/checks/linear_regex.py`` was until issue 34, kept only as
``bench_rules.py``'s baseline: a Thompson NFA run as a lazily built DFA in pure Python. It is not
part of the package and nothing else imports it. Its cost per character is one step over up to
2,000 NFA states, and its DFA cache holds up to 4,000 states of as many NFA ids each, which is
what made an accepted pattern take 33 s and 1.7 GB (RE2 replaced it).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: The longest pattern accepted.
MAX_PATTERN_CHARS = 500
#: The largest bound of a counted repeat ``{m,n}``.
MAX_REPEAT = 100
#: The most NFA states a pattern may expand to: the bound on the work per character.
MAX_STATES = 2000
#: DFA states kept before the cache is dropped and built again (memory stays bounded).
MAX_DFA_STATES = 4000


class PatternError(ValueError):
    """A pattern that cannot be matched here: the message says why, in a phrase."""


CharTest = Callable[[str], bool]


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORIES: dict[str, CharTest] = {
    "d": str.isdecimal,
    "D": lambda ch: not ch.isdecimal(),
    "w": _word,
    "W": lambda ch: not _word(ch),
    "s": str.isspace,
    "S": lambda ch: not ch.isspace(),
}
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_REFUSED_ESCAPES = {
    "b": "word boundaries (\\b) are not supported",
    "B": "word boundaries (\\B) are not supported",
    "N": "named characters (\\N{...}) are not supported; write the character itself",
}


# -- the parse: pattern text -> a small tree --------------------------------------------------
#
# ("char", test) | ("cat", [node, ...]) | ("alt", [node, ...]) | ("rep", node, min, max or None)
Node = tuple[Any, ...]


@dataclass
class _Parser:
    text: str
    pos: int = 0

    def fail(self, why: str) -> PatternError:
        return PatternError(f"{why} (at position {self.pos})")

    def peek(self, ahead: int = 0) -> str | None:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else None

    def take(self) -> str:
        ch = self.text[self.pos]
        self.pos += 1
        return ch

    def parse(self) -> Node:
        node = self.alternation()
        if self.pos != len(self.text):  # an unbalanced ")": re.compile refuses it first
            raise self.fail("unbalanced parenthesis")
        return node

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> Node:
        items: list[Node] = []
        while (ch := self.peek()) is not None and ch not in "|)":
            atom = self.atom()
            if atom is None:
                continue  # an anchor at the very start or end: a no-op for a whole match
            items.append(self.quantified(atom))
        return items[0] if len(items) == 1 else ("cat", items)

    def atom(self) -> Node | None:
        ch = self.take()
        if ch == "(":
            return self.group()
        if ch == "[":
            return ("char", self.char_class())
        if ch == ".":
            return ("char", lambda c: c != "\n")
        if ch == "^":
            if self.pos == 1:
                return None
            raise self.fail("'^' is allowed only at the start (the whole string must match anyway)")
        if ch == "$":
            if self.pos == len(self.text):
                return None
            raise self.fail("'$' is allowed only at the end (the whole string must match anyway)")
        if ch in "*+?":  # re.compile refuses "nothing to repeat" first
            raise self.fail("nothing to repeat")
        if ch == "{" and self.counted(self.pos - 1) is not None:
            raise self.fail("nothing to repeat")
        if ch == "\\":
            return self.escape()
        return ("char", _literal(ch))

    def group(self) -> Node:
        if self.peek() == "?":
            self.take()
            kind = self.peek()
            if kind == ":":
                self.take()
            elif kind == "P" and self.peek(1) == "<":
                end = self.text.find(">", self.pos)
                if end < 0:
                    raise self.fail("unterminated group name")
                self.pos = end + 1
            elif kind is not None and kind in "aiLmsux-":
                raise self.fail("inline flags such as (?i) are not supported")
            else:
                raise self.fail(_GROUP_REFUSALS.get(kind or "", "this kind of group is not supported"))
        node = self.alternation()
        if self.peek() != ")":
            raise self.fail("missing ), unterminated subpattern")
        self.take()
        return node

    def quantified(self, atom: Node) -> Node:
        ch = self.peek()
        if ch is not None and ch in "*+?":
            self.take()
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{" and (bounds := self.counted(self.pos)) is not None:
            low, high, self.pos = bounds
        else:
            return atom
        if self.peek() == "?":
            self.take()  # lazy: the same strings match whole
        elif self.peek() == "+":
            raise self.fail("possessive quantifiers are not supported")
        following = self.peek()
        if following is not None and (following in "*+?" or self.counted(self.pos) is not None):
            raise self.fail("multiple repeat")  # re.compile refuses it first
        return ("rep", atom, low, high)

    def counted(self, at: int) -> tuple[int, int | None, int] | None:
        """At a ``{``: its bounds and where it ends when it is ``{m}``, ``{m,}``, ``{,n}`` or
        ``{m,n}``; None for anything else, which Python reads as a literal ``{``."""
        match = _COUNTED.match(self.text, at)
        if match is None or (not match["low"] and match["comma"] is None):
            return None
        low = int(match["low"]) if match["low"] else 0
        high: int | None = low
        if match["comma"] is not None:
            high = int(match["high"]) if match["high"] else None
        if max(low, high or 0) > MAX_REPEAT:
            raise PatternError(f"a repeat count above {MAX_REPEAT} is too costly (at position {at})")
        return low, high, match.end()

    def escape(self) -> Node | None:
        if self.peek() is None:
            raise self.fail("bad escape (end of pattern)")
        ch = self.take()
        if ch in _CATEGORIES:
            return ("char", _CATEGORIES[ch])
        if ch == "A":
            if self.pos == 2:
                return None
            raise self.fail("'\\A' is allowed only at the start (the whole string must match anyway)")
        if ch == "Z":
            if self.pos == len(self.text):
                return None
            raise self.fail("'\\Z' is allowed only at the end (the whole string must match anyway)")
        return ("char", _literal(self.escaped_char(ch, in_class=False)))

    def escaped_char(self, ch: str, *, in_class: bool) -> str:
        if ch in _CONTROL:
            return _CONTROL[ch]
        if in_class and ch == "b":
            return "\b"
        if ch in _HEX_DIGITS:
            digits = self.text[self.pos : self.pos + _HEX_DIGITS[ch]]
            if len(digits) != _HEX_DIGITS[ch] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise self.fail(f"incomplete escape \\{ch}")
            self.pos += len(digits)
            return chr(int(digits, 16))
        if ch.isdigit():
            raise self.fail("backreferences and octal escapes are not supported")
        if ch in _REFUSED_ESCAPES:
            raise self.fail(_REFUSED_ESCAPES[ch])
        if ch.isascii() and ch.isalpha():
            raise self.fail(f"bad escape \\{ch}")
        return ch

    def char_class(self) -> CharTest:
        negate = self.peek() == "^"
        if negate:
            self.take()
        chars: set[str] = set()
        ranges: list[tuple[str, str]] = []
        tests: list[CharTest] = []
        first = True
        while True:
            ch = self.peek()
            if ch is None:
                raise self.fail("unterminated character set")
            if ch == "]" and not first:
                self.take()
                break
            first = False
            if ch == "[" or self.text.startswith(("--", "&&", "~~", "||"), self.pos):
                raise self.fail("nested sets and set operations are not supported in a character class")
            item = self.class_item()
            if callable(item):
                tests.append(item)
                continue
            if self.peek() == "-" and self.peek(1) not in (None, "]"):
                self.take()
                end = self.class_item()
                if callable(end) or end < item:
                    raise self.fail("bad character range")
                ranges.append((item, end))
            else:
                chars.add(item)
        return _class_test(frozenset(chars), tuple(ranges), tuple(tests), negate)

    def class_item(self) -> str | CharTest:
        ch = self.take()
        if ch != "\\":
            return ch
        if self.peek() is None:
            raise self.fail("bad escape (end of pattern)")
        ch = self.take()
        if ch in _CATEGORIES:
            return _CATEGORIES[ch]
        return self.escaped_char(ch, in_class=True)


_COUNTED = re.compile(r"\{(?P<low>[0-9]*)(?:(?P<comma>,)(?P<high>[0-9]*))?\}")
_GROUP_REFUSALS = {
    "=": "lookaheads are not supported",
    "!": "lookaheads are not supported",
    "<": "lookbehinds are not supported",
    "P": "backreferences are not supported",
    "(": "conditional groups are not supported",
    ">": "atomic groups are not supported",
    "#": "comments are not supported",
}


def _literal(ch: str) -> CharTest:
    return ch.__eq__


def _class_test(
    chars: frozenset[str], ranges: tuple[tuple[str, str], ...], tests: tuple[CharTest, ...], negate: bool
) -> CharTest:
    def test(ch: str) -> bool:
        inside = ch in chars or any(low <= ch <= high for low, high in ranges) or any(t(ch) for t in tests)
        return inside != negate

    return test


# -- the NFA and the lazily built DFA ---------------------------------------------------------


@dataclass(eq=False)
class _DState:
    """A set of NFA states as one DFA state; ``next`` grows as characters are met."""

    ids: frozenset[int]
    accepting: bool
    next: dict[str, _DState] = field(default_factory=dict)


class WholeMatch:
    """A compiled pattern: ``matcher(text)`` says whether the whole of ``text`` matches."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tests: list[CharTest | None] = []  # per state: its character test (None: a split)
        self._outs: list[list[int]] = []  # per state: where it goes (a test: one; a split: two)
        tree = _Parser(pattern).parse()
        accept = self._state(None, [])
        self._start_id = self._compile(tree, accept)
        self._accept = accept
        self._closures: dict[int, frozenset[int]] = {}
        start = self._closure(self._start_id)
        self._start = _DState(start, accept in start)
        self._states: dict[frozenset[int], _DState] = {start: self._start}

    def _state(self, test: CharTest | None, outs: list[int]) -> int:
        if len(self._tests) >= MAX_STATES:
            raise PatternError(f"is too costly: it expands to more than {MAX_STATES} states")
        self._tests.append(test)
        self._outs.append(outs)
        return len(self._tests) - 1

    def _compile(self, node: Node, then: int) -> int:
        """The state that starts ``node``, which goes on to ``then`` once matched."""
        kind = node[0]
        if kind == "char":
            return self._state(node[1], [then])
        if kind == "cat":
            for item in reversed(node[1]):
                then = self._compile(item, then)
            return then
        if kind == "alt":
            return self._state(None, [self._compile(branch, then) for branch in node[1]])
        _, body, low, high = node
        if high is None:  # body{low,}: low copies, then a loop
            loop = self._state(None, [])
            self._outs[loop].extend([self._compile(body, loop), then])
            start = loop
        else:  # body{low,high}: low copies, then high - low optional ones
            start = then
            for _ in range(high - low):
                start = self._state(None, [self._compile(body, start), then])
        for _ in range(low):
            start = self._compile(body, start)
        return start

    def _closure(self, state: int) -> frozenset[int]:
        """The states reachable from ``state`` without reading a character, that read one or accept."""
        cached = self._closures.get(state)
        if cached is not None:
            return cached
        seen, stack, found = {state}, [state], set()
        while stack:
            current = stack.pop()
            if self._tests[current] is not None or current == self._accept:
                found.add(current)
            else:
                for out in self._outs[current]:
                    if out not in seen:
                        seen.add(out)
                        stack.append(out)
        result = frozenset(found)
        self._closures[state] = result
        return result

    def _dstate(self, ids: frozenset[int]) -> _DState:
        known = self._states.get(ids)
        if known is None:
            if len(self._states) >= MAX_DFA_STATES:
                # Bounded memory: start again from an empty cache (a state in use stays valid).
                self._states.clear()
                start = self._start.ids
                self._start = self._states[start] = _DState(start, self._accept in start)
            known = self._states.setdefault(ids, _DState(ids, self._accept in ids))
        return known

    def _step(self, current: _DState, ch: str) -> _DState:
        ids: set[int] = set()
        for state in current.ids:
            test = self._tests[state]
            if test is not None and test(ch):
                ids |= self._closure(self._outs[state][0])
        following = self._dstate(frozenset(ids))
        if len(current.next) < 256:  # a state's transitions stay bounded too
            current.next[ch] = following
        return following

    def __call__(self, text: str) -> bool:
        state = self._start
        for ch in text:
            following = state.next.get(ch)
            state = following if following is not None else self._step(state, ch)
            if not state.ids:
                return False
        return state.accepting


def compile_whole(pattern: str) -> WholeMatch:
    """``pattern`` compiled to match whole strings in linear time; PatternError says why not."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"is {len(pattern)} characters long, over the {MAX_PATTERN_CHARS}-character limit")
    try:
        with warnings.catch_warnings():  # "possible nested set": refused below in our own words
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error as exc:
        raise PatternError(f"does not compile: {exc}") from None
    except (OverflowError, RecursionError):
        raise PatternError("does not compile: it nests or repeats too much") from None
    try:
        return WholeMatch(pattern)
    except RecursionError:
        raise PatternError("nests too deeply") from None
