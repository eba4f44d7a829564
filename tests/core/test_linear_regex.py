"""The rules' regexes (core/linear_regex.py): Python's meaning, in time linear in the string.

The matcher is checked against ``re.fullmatch`` itself on arbitrary patterns of the supported
subset and arbitrary strings, so its meaning is Python's, not a reading of the docs.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from multiprocessing.connection import Connection
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from airflow_provider_coremodels.core.linear_regex import MAX_STATES, PatternError, compile_whole

EXAMPLES = int(os.environ.get("COREMODELS_FUZZ_EXAMPLES", "200"))

_ATOMS = st.sampled_from(
    ["a", "b", "_", "1", "é", r"\.", r"\-", " ", ".", r"\d", r"\D", r"\w", r"\W", r"\s", r"\S",
     "[ab]", "[^a]", "[a-c_]", r"[\d_]", r"[^\w]", "[]a]", "[a-]", r"\x61", r"\u00e9", r"\n", "{", "a{,}"]
)  # fmt: skip
_QUANTIFIERS = st.sampled_from(
    ["", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{0,2}", "{1,}", "{,2}", "{1,3}?"]
)


def _quantified(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(inner, _QUANTIFIERS).map(lambda pair: pair[0] + pair[1])


_PATTERNS = st.recursive(
    _quantified(_ATOMS),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join),
        _quantified(inner.map(lambda p: f"({p})")),
        _quantified(inner.map(lambda p: f"(?:{p})")),
    ),
    max_leaves=8,
)
_TEXT = st.text(alphabet="ab_1 é\n-.{}", max_size=12)


def _serve(conn: Connection) -> None:
    while True:
        try:
            pattern, text = conn.recv()
        except EOFError:
            return
        conn.send(re.fullmatch(pattern, text) is not None)


class _Reference:
    """``re.fullmatch``, the reference, in a child process that has ``TIMEOUT`` seconds per answer.

    Python's re backtracks: nested repeats such as ``(?:(([^a]{0,2})+?){,2})+?`` took it over ten
    minutes on a 12-character string they do not match (7 s at 7 characters, 15 times as long for
    each one more), and a match in progress cannot be interrupted in-process. What it cannot decide
    in time is no example (the engine under test is linear: it needs no such guard).
    """

    TIMEOUT = 2.0

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")  # the child runs _serve alone: re and a pipe
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()

    def fullmatch(self, pattern: str, text: str) -> bool | None:
        self._conn.send((pattern, text))
        if self._conn.poll(self.TIMEOUT):
            answer: bool = self._conn.recv()
            return answer
        self._process.kill()
        self._process.join()
        self._conn.close()
        self._start()
        return None


_REFERENCE: list[_Reference] = []


def _reference() -> _Reference:
    if not _REFERENCE:
        _REFERENCE.append(_Reference())
    return _REFERENCE[0]


@settings(max_examples=EXAMPLES * 5, deadline=None)
@given(pattern=_PATTERNS, texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_it_matches_exactly_what_re_fullmatch_matches(pattern: str, texts: list[str]) -> None:
    try:
        re.compile(pattern)
    except re.error:
        with pytest.raises(PatternError, match="does not compile"):
            compile_whole(pattern)
        return
    refused: PatternError | None = None
    try:
        matcher = compile_whole(pattern)
    except PatternError as exc:
        refused = exc
    if refused is not None:  # a size bound, or a possessive repeat (a{,}+ on Python 3.11+)
        assert "too costly" in str(refused) or "possessive" in str(refused)
        return
    for text in texts:
        expected = _reference().fullmatch(pattern, text)
        assume(expected is not None)
        assert matcher(text) == expected, (pattern, text)


def test_the_reference_gives_up_on_a_backtracking_storm_and_answers_again() -> None:
    reference = _reference()
    assert reference.fullmatch(r"(?:(([^a]{0,2})+?){,2})+?", "\né\n}\n__ a  {") is None
    assert reference.fullmatch("a+", "aa") is True
    assert reference.fullmatch("a+", "b") is False


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (r"^team_[a-z]+$", "team_orders", True),
        (r"\Ateam_[a-z]+\Z", "team_orders", True),
        (r"^a|b$", "b", True),  # anchors at the very ends: no-ops for a whole match
        (r"a$", "a\n", False),  # "$" before a final newline does not make a whole match
        (r"a{", "a{", True),  # not a repeat: a literal brace, as Python reads it
        (r"x{,2}", "xx", True),
        (r"(?P<team>[a-z]+)_v\d+", "ml_v2", True),
        ("", "", True),
        ("a*", "", True),
        (r"[\b]", "\b", True),  # inside a class \b is a backspace
        (r"\d+", "٣", True),  # \d is any Unicode digit, as in re
    ],
)
def test_edge_cases_mean_what_python_means(pattern: str, text: str, expected: bool) -> None:
    assert compile_whole(pattern)(text) is expected
    assert (re.fullmatch(pattern, text) is not None) is expected


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", "backreferences and octal escapes are not supported"),
        (r"(?P<x>a)(?P=x)", "backreferences are not supported"),
        (r"(?=a)a", "lookaheads are not supported"),
        (r"(?!a)b", "lookaheads are not supported"),
        (r"(?<=a)b", "lookbehinds are not supported"),
        (r"(a)?(?(1)b|c)", "conditional groups are not supported"),
        (r"(?i)abc", "inline flags such as (?i) are not supported"),
        (r"a\bb", r"word boundaries (\b) are not supported"),
        (r"a^b", "'^' is allowed only at the start"),
        (r"a$b", "'$' is allowed only at the end"),
        (r"[[a]]", "nested sets and set operations are not supported"),
        (r"[a&&b]", "nested sets and set operations are not supported"),
        (r"a{101}", "a repeat count above 100 is too costly"),
        (r"((a{20}){20}){10}", f"is too costly: it expands to more than {MAX_STATES} states"),
        ("a" * 501, "over the 500-character limit"),
        (r"a(b", "does not compile: missing ), unterminated subpattern at position 1"),
        (r"*a", "does not compile: nothing to repeat at position 0"),
    ],
)
def test_what_cannot_match_in_linear_time_is_refused_saying_why(pattern: str, why: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_whole(pattern)
    assert why in str(caught.value)


@pytest.mark.parametrize(
    "pattern",
    [r"(a|a)*b", r"(a+)+b", r"(a|aa)*c", r"\w*\w*\w*\w*\w*\w*\w*\w*!", r"(.*){20}x", r"(a?){50}a{50}"],
)
def test_patterns_that_make_re_backtrack_forever_match_in_linear_time(pattern: str) -> None:
    """``re`` takes exponential (or high-power) time on these. Here the work is counted: each
    character tests each NFA state at most once, and once a state's move on a character is known
    it is a dictionary lookup, so ten times the text costs no more character tests than once."""
    calls = {"tests": 0}

    def counted(matcher: Any) -> Any:
        def wrap(test: Any) -> Any:
            def counting(ch: str) -> bool:
                calls["tests"] += 1
                return bool(test(ch))

            return counting

        matcher._tests = [None if test is None else wrap(test) for test in matcher._tests]
        return matcher

    short, long = counted(compile_whole(pattern)), counted(compile_whole(pattern))
    assert short("a" * 1_000) is False
    tested_short, calls["tests"] = calls["tests"], 0
    assert long("a" * 10_000) is False
    states = len(long._tests)
    assert calls["tests"] <= 10_000 * states  # linear: at most one test per state per character
    assert calls["tests"] <= max(tested_short, 1) * 2  # and in fact learned once, then looked up


def test_a_dfa_cache_past_its_bound_is_dropped_and_still_answers_right() -> None:
    """A pattern whose DFA has very many states (the n-th character from the end is an a) keeps
    memory bounded by dropping its cache, and still matches as re does."""
    matcher = compile_whole(r"[ab]*a[ab]{12}")
    texts = [format(i, "b").zfill(16).replace("0", "b").replace("1", "a") for i in range(0, 65536, 7)]
    for text in texts:
        assert matcher(text) == (re.fullmatch(r"[ab]*a[ab]{12}", text) is not None)
