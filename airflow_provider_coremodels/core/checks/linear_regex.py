"""Regular expressions from a rules file: Python's meaning, matched by RE2 in linear time and bounded memory.

Python's ``re`` backtracks: ``(a|a)*b``, ``(a+)+b`` or ``\\w*\\w*\\w*\\w*!`` take time exponential
(or of a high power) in the length of a string they do not match, and a rules file is input. Refusing
"nested quantifiers" does not close that door (the last two have none worth the name), so the rules'
regexes are not run by ``re`` at all. They are read here with Python's grammar and meaning, written
out again in RE2's syntax with every character class spelled as code point ranges (so ``\\d``,
``\\w``, ``\\s`` and ``.`` mean exactly what they mean to this Python's ``re``, not RE2's ASCII
classes), and matched by RE2 (``google-re2``): an automaton whose work per character is bounded
whatever the pattern, in at most ``MAX_MEMORY`` bytes per pattern (RE2's ``max_mem``: past it, RE2
drops its DFA cache or falls back to its NFA, slower but still linear, and never larger).

What is supported is the common subset that needs no backtracking, with Python's meaning (``re``
checks the syntax first, so a pattern that does not compile says so in ``re``'s words): literals,
``.``, classes (``[a-z_]``, ``[^0-9]``, with ``\\d \\w \\s`` and their negations), groups
(``(...)``, ``(?:...)``, ``(?P<name>...)``), ``|``, ``* + ? {m} {m,} {,n} {m,n}`` (lazy forms
too: for a whole match they mean the same), the escapes ``\\n \\t \\r \\f \\v \\a \\xhh \\uhhhh
\\Uhhhhhhhh``, and ``^``/``\\A`` at the very start and ``$``/``\\Z`` at the very end (no-ops, since the
whole string must match). Refused, each with its reason: backreferences, lookarounds, conditionals,
atomic groups and possessive quantifiers, inline flags, word boundaries, anchors anywhere else,
nested sets and set operations, a pattern that expands past ``MAX_STATES`` positions
(``(a{100}){100}``), and one whose compiled program RE2 cannot fit in ``MAX_MEMORY``. RE2's own
syntax never reaches RE2: what Python reads differently (``\\pL``, ``\\z``, ``[[:alpha:]]``,
``(?U)``, ``\\Q...\\E``) is refused by ``re`` or by the parse below, and RE2 is only given the text
written from the parsed tree.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import Any

import re2

#: The longest pattern accepted.
MAX_PATTERN_CHARS = 500
#: The largest bound of a counted repeat ``{m,n}``.
MAX_REPEAT = 100
#: The most positions (NFA states) a pattern may expand to: a bound on RE2's work per character.
MAX_STATES = 2000
#: RE2's memory budget per pattern (``max_mem``): its compiled program and its DFA cache.
MAX_MEMORY = 4 << 20
_LAST = 0x10FFFF


class PatternError(ValueError):
    """A pattern that cannot be matched here: the message says why, in a phrase."""


#: A set of characters: sorted, disjoint, non-adjacent inclusive code point ranges.
Ranges = tuple[tuple[int, int], ...]


def _merged(ranges: list[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    out: list[tuple[int, int]] = []
    at = 0
    for low, high in ranges:
        if low > at:
            out.append((at, low - 1))
        at = high + 1
    if at <= _LAST:
        out.append((at, _LAST))
    return tuple(out)


@functools.cache
def _classes() -> dict[str, Ranges]:
    """What ``\\d``, ``\\w`` and ``\\s`` match, asked of ``re`` itself over every code point (lone
    surrogates too: a str may hold them), so that the meaning is this Python's, Unicode version and all."""
    everything = _every_code_point()
    return {
        letter: tuple((found.start(), found.end() - 1) for found in re.finditer(rf"\{letter}+", everything))
        for letter in "dws"
    }


def _every_code_point() -> str:
    """U+0000 to U+10FFFF in order, decoded from their UTF-32 bytes laid out by slices: 4 MB and some
    30 ms, where a million ``chr`` calls take 0.6 s and 100 MB."""
    count = _LAST + 1  # 17 planes of 65,536
    raw = bytearray(4 * count)  # little-endian: the low byte first, the fourth always 0
    raw[0::4] = bytes(range(256)) * (count // 256)
    raw[1::4] = bytes(high for high in range(256) for _ in range(256)) * (count // 65536)
    raw[2::4] = b"".join(bytes([plane]) * 65536 for plane in range(count // 65536))
    return raw.decode("utf-32-le", "surrogatepass")


def _category(letter: str) -> Ranges:
    """``\\d \\w \\s`` and their negations ``\\D \\W \\S`` as code point ranges."""
    ranges = _classes()[letter.lower()]
    return _complement(ranges) if letter.isupper() else ranges


_CATEGORIES = frozenset("dDwWsS")
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_REFUSED_ESCAPES = {
    "b": "word boundaries (\\b) are not supported",
    "B": "word boundaries (\\B) are not supported",
    "N": "named characters (\\N{...}) are not supported; write the character itself",
}
_NOT_NEWLINE = _complement(((10, 10),))


# -- the parse: pattern text -> a small tree --------------------------------------------------
#
# ("char", ranges) | ("cat", [node, ...]) | ("alt", [node, ...]) | ("rep", node, min, max or None)
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
            return ("char", _NOT_NEWLINE)
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
            return ("char", _category(ch))
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

    def char_class(self) -> Ranges:
        negate = self.peek() == "^"
        if negate:
            self.take()
        ranges: list[tuple[int, int]] = []
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
            if isinstance(item, tuple):
                ranges.extend(item)
                continue
            if self.peek() == "-" and self.peek(1) not in (None, "]"):
                self.take()
                end = self.class_item()
                if isinstance(end, tuple) or end < item:
                    raise self.fail("bad character range")
                ranges.append((ord(item), ord(end)))
            else:
                ranges.append((ord(item), ord(item)))
        merged = _merged(ranges)
        return _complement(merged) if negate else merged

    def class_item(self) -> str | Ranges:
        ch = self.take()
        if ch != "\\":
            return ch
        if self.peek() is None:
            raise self.fail("bad escape (end of pattern)")
        ch = self.take()
        if ch in _CATEGORIES:
            return _category(ch)
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


def _literal(ch: str) -> Ranges:
    return ((ord(ch), ord(ch)),)


# -- RE2: the tree written out in RE2's syntax, compiled within a memory budget ----------------


def _states(node: Node) -> int:
    """How many NFA states ``node`` expands to (Thompson's construction, counted repeats copied out):
    a bound on how many threads RE2's NFA can run at once, and so on its work per character."""
    kind = node[0]
    if kind == "char":
        return 1
    if kind == "cat":
        return sum(_states(item) for item in node[1])
    if kind == "alt":
        return 1 + sum(_states(branch) for branch in node[1])
    _, body, low, high = node
    size, copies = _states(body), int(low)
    if high is None:
        return 1 + size + copies * size
    return (int(high) - copies) * (1 + size) + copies * size


def _code_point(point: int) -> str:
    return chr(point) if chr(point).isascii() and chr(point).isalnum() else f"\\x{{{point:x}}}"


def _written(node: Node) -> str:
    """``node`` in RE2's syntax: every set spelled as ranges, every group non-capturing."""
    kind = node[0]
    if kind == "char":
        ranges: Ranges = node[1]
        if not ranges:
            return f"[^\\x{{0}}-\\x{{{_LAST:x}}}]"  # an empty set ([^\\s\\S]): it matches nothing
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return _code_point(ranges[0][0])
        spans = (
            _code_point(low) if low == high else f"{_code_point(low)}-{_code_point(high)}"
            for low, high in ranges
        )
        return "[" + "".join(spans) + "]"
    if kind == "cat":
        return "".join(_written(item) for item in node[1])
    if kind == "alt":
        return "(?:" + "|".join(_written(branch) for branch in node[1]) + ")"
    _, body, low, high = node
    repeat = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((low, high))
    if repeat is None:
        repeat = f"{{{low},}}" if high is None else f"{{{low}}}" if low == high else f"{{{low},{high}}}"
    return f"(?:{_written(body)}){repeat}"


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.never_capture = True  # a yes or no is all a rule asks: RE2's DFA alone can answer it
    options.log_errors = False  # RE2 would print each time its DFA runs out of budget
    return options


@dataclass(frozen=True, eq=False)
class WholeMatch:
    """A compiled pattern: ``matcher(text)`` says whether the whole of ``text`` matches. The RE2
    object comes from ``re2.compile``, which keeps the last 128 compiled in a cache of its own: the
    same pattern compiled again (a rules file read twice) is the same object, budget and all."""

    pattern: str
    #: The same pattern in RE2's syntax, as RE2 was given it.
    written: str
    _regexp: Any

    def __call__(self, text: str) -> bool:
        # surrogatepass: a lone surrogate (which a str may hold) stays the code point it is, as RE2
        # reads a three-byte sequence, so that [^a] and . match it, as in re
        return self._regexp.fullmatch(text.encode("utf-8", "surrogatepass")) is not None

    @property
    def program_size(self) -> int:
        """RE2's compiled program, in instructions."""
        size: int = self._regexp.programsize
        return size


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
        tree = _Parser(pattern).parse()
        if _states(tree) + 1 > MAX_STATES:
            raise PatternError(f"is too costly: it expands to more than {MAX_STATES} states")
        written = _written(tree)
    except RecursionError:
        raise PatternError("nests too deeply") from None
    try:
        regexp = re2.compile(written, _options())
    except re2.error as exc:
        raise PatternError(_refused_by_re2(exc)) from None
    return WholeMatch(pattern, written, regexp)


def _refused_by_re2(exc: Exception) -> str:
    said = exc.args[0] if exc.args else b""
    said = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    if "repetition" in said:  # RE2 caps the product of nested counted repeats: (a{10}){10}){11}
        return "is too costly: its counted repeats multiply past 1000 (RE2's limit)"
    return f"is too costly: RE2 cannot compile it within {MAX_MEMORY >> 20} MiB ({said or 'no reason given'})"
