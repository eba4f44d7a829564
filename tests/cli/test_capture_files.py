"""``capture --out`` writes its files a member at a time (issue 44): the same bytes as
``json.dumps`` of the whole, never the whole text held (twice) beside the answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_coremodels.cli.commands import _json_pieces
from airflow_provider_coremodels.io.atomic import write_atomic


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"dag": {"tasks": [{"task_id": "t", "doc_md": "é\n\u2028"}], "total_entries": 1}},
        {'quote"key': [1, 2.5, None, True], "nan": float("nan"), "ü": "ü"},
        [{"dag_id": "a", "tasks": []}],
        {1: "a key that is no string"},
        "text",
    ],
)
def test_the_pieces_are_json_dumps_of_the_whole(value: Any) -> None:
    assert b"".join(_json_pieces(value)) == json.dumps(value, ensure_ascii=False).encode("utf-8")


def test_an_object_comes_one_member_at_a_time() -> None:
    value = {f"dag_{i}": {"tasks": [{"task_id": "t"}] * 3} for i in range(4)}
    assert len(list(_json_pieces(value))) == 2 + len(value)


def test_a_file_written_in_pieces_is_their_concatenation(tmp_path: Path) -> None:
    target = tmp_path / "tasks.json"
    write_atomic(target, iter([b"{", b'"a": 1', b"}"]))
    assert target.read_bytes() == b'{"a": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["tasks.json"]  # no temporary file left
