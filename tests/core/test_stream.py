"""The answer reader (core/reading/stream.py) and the alert selection (core/reading/deadlines.py):
what they give is what ``json.loads`` of the whole answer gives, however the bytes are cut."""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_coremodels.core.reading.deadlines import AlertSelection, deadline_text
from airflow_provider_coremodels.core.reading.stream import AnswerReader, Kept, read_answer

ANSWERS = [
    {"tasks": [{"task_id": "a", "x": [1, 2, {"y": "z"}]}, {"task_id": "b"}], "total_entries": 2},
    [{"task_id": "a"}, 12345, "s", None, True, 1.5e10, -0.5],
    {"total_entries": 3, "tasks": [], "other": {"tasks": [1]}},
    {"tasks": "not a list"},
    123456789,
    "text, é, 😀",
    [],
    {},
]


def fed(data: bytes, reader: AnswerReader, seed: int, most: int) -> Any:
    """``reader`` fed ``data`` in pieces of random sizes (a multi-byte character cut too)."""
    rng = random.Random(seed)
    at = 0
    while at < len(data):
        size = rng.randint(1, most)
        reader.feed(data[at : at + size])
        at += size
    return reader.end()


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("most", [1, 3, 64])
@pytest.mark.parametrize("indent", [None, 2])
def test_the_answer_is_json_loads_of_it_whatever_the_pieces(
    answer: Any, most: int, indent: int | None
) -> None:
    data = json.dumps(answer, indent=indent, ensure_ascii=False).encode()
    assert fed(data, AnswerReader("tasks", bare=True), 0, most) == json.loads(data)
    assert fed(data, AnswerReader(), 1, most) == json.loads(data)
    dropped = [] if isinstance(answer, list) else json.loads(data)  # a list nobody asked for
    assert fed(data, AnswerReader("tasks"), 2, most) == dropped


def test_items_are_reduced_as_read_and_a_key_given_twice_keeps_its_last_list() -> None:
    data = b'{"tasks": [{"task_id": "a", "doc_md": "long"}], "tasks": [{"task_id": "b", "doc_md": "x"}]}'
    reader = AnswerReader("tasks", lambda: Kept(lambda task: {"task_id": task["task_id"]}))
    assert read_answer(data, reader) == {"tasks": [{"task_id": "b"}]}


@pytest.mark.parametrize("most", [1, 7, 1000])
def test_an_envelope_is_followed_down_to_the_answer(most: int) -> None:
    envelope = {"RestApiStatusCode": 200, "RestApiResponse": {"tasks": [{"a": 1}] * 3, "total_entries": 3}}
    data = json.dumps(envelope).encode()
    assert fed(data, AnswerReader("tasks").within("RestApiResponse"), 0, most) == envelope
    assert fed(data, AnswerReader().within("RestApiResponse"), 0, most) == envelope
    assert fed(b"[1, 2]", AnswerReader("tasks").within("RestApiResponse"), 0, most) == [1, 2]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "ends before"),
        (b'{"tasks": [1', "ends before"),
        (b'{"tasks": [1,]}', "Expecting value"),
        (b'{"a" 1}', "expecting ':'"),
        (b"[1, 2] x", "extra data"),
        (b'{"a": 1,}', "expecting a property name"),
        (b'{"a": "\xff"}', "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"tasks": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}", "nested too deeply"),
    ],
)
def test_what_is_not_json_is_a_value_error_saying_why(data: bytes, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        fed(data, AnswerReader("tasks", bare=True), 0, 1000)


def test_a_byte_order_mark_is_tolerated() -> None:
    assert fed(b'\xef\xbb\xbf{"tasks": [1]}', AnswerReader("tasks"), 0, 1) == {"tasks": [1]}


def _alerts(rng: random.Random, count: int) -> list[Any]:
    references = ["DagRunQueuedAtDeadline", "FixedDatetimeDeadline", " ", "X"]
    intervals = [60, 60.0, 3600, 1.5, None, "x", float("inf")]
    names = [None, "a", "late", "", " z ", "b" * 300]
    return [
        "junk"
        if rng.random() < 0.05
        else {"id": i, "reference_type": rng.choice(references), "interval": rng.choice(intervals),
              "name": rng.choice(names)}
        for i in range(count)
    ]  # fmt: skip


@pytest.mark.parametrize("count", [0, 1, 49, 50, 51, 99, 100, 101, 2_000])
@pytest.mark.parametrize("keep_raw", [False, True])
def test_the_alerts_chosen_as_read_make_the_text_all_of_them_make(count: int, keep_raw: bool) -> None:
    """At most 50 are kept (the document lists 50), in the order they were served, and the metadata
    text of what is kept is the text of every alert served."""
    for seed in range(5):
        served = _alerts(random.Random(seed), count)
        selection = AlertSelection(keep_raw=keep_raw)
        for alert in served:
            selection.add(alert)
        kept = selection.value()
        assert kept.seen == count and len(kept) <= 50
        assert deadline_text(kept) == deadline_text(served)
        if keep_raw:
            places = [next(i for i, a in enumerate(served) if a is alert) for alert in kept]
            assert places == sorted(places)


# -- property: any JSON, cut anywhere ------------------------------------------------------------

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["tasks", "a", "b"]), inner),
    max_leaves=20,
)


@settings(max_examples=int(os.environ.get("COREMODELS_FUZZ_EXAMPLES", "200")), deadline=None)
@given(value=_VALUES, seed=st.integers(0, 1000), most=st.integers(1, 40), indent=st.sampled_from([None, 1]))
def test_any_json_cut_anywhere_reads_as_json_loads_reads_it(
    value: Any, seed: int, most: int, indent: Any
) -> None:
    data = json.dumps(value, indent=indent, ensure_ascii=bool(seed % 2)).encode()
    assert fed(data, AnswerReader(), seed, most) == json.loads(data)
    assert fed(data, AnswerReader("tasks", bare=True), seed, most) == json.loads(data)
    envelope = json.dumps({"RestApiStatusCode": 200, "RestApiResponse": value}).encode()
    assert fed(
        envelope, AnswerReader("tasks", bare=True).within("RestApiResponse"), seed, most
    ) == json.loads(envelope)
