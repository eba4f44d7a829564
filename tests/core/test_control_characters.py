"""Control characters from the estate reach no terminal, task log, report or drawing raw.

A DAG id, an asset URI, a message or a waiver reason may hold anything a DAG author or a hostile
API server writes: an ESC sequence that clears the screen, a CR that rewrites the line, a newline
that fakes a finding row, a bidi override that reverses what is read. Every human view writes
them as visible escapes (``core.text.printable``); the JSON document keeps them exact.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import document_for

from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.views.lineage import LineageGraph, to_dot, to_mermaid
from airflow_provider_coremodels.core.views.markdown import render_markdown
from airflow_provider_coremodels.core.views.render import finding_line, render_json, render_table

# Clears the screen, returns to the line start, then fakes a finding row on a line of its own.
EVIL_DAG = "evil\x1b[2J\rfake\nWarning dag-no-owner x"
# BEL, a right-to-left override, a line separator, NEL (C1), NUL, DEL, backspace, an isolate.
EVIL_ASSET = "s3://lake/\x07bell\u202eevil\u2028x\x85\x00\x7f\x08\u2066.parquet"
# Consumed and never produced (an asset-unproduced finding): a tab and a window-title sequence.
UNPRODUCED = "s3://lake/été/\tx\x1b]0;title\x07"
NICE_DAG = "café_日本_🚀"  # ordinary non-ASCII: kept as it is
WAIVER_REASON = "accepted\x1b[8m hidden\r\nError dag-no-owner fake"
BASELINE_REASON = "gone\x1b[2K\u202eback"
LOSSINESS_MESSAGE = "skipped\r\nWarning dag-no-owner fake\x9b2J"

ESCAPED_DAG = r"evil\x1b[2J\rfake\nWarning dag-no-owner x"
ESCAPED_ASSET = r"s3://lake/\x07bell\u202eevil\u2028x\x85\x00\x7f\x08\u2066.parquet"
ESCAPED_UNPRODUCED = r"s3://lake/été/\tx\x1b]0;title\x07"
ESCAPED_WAIVER_REASON = r"accepted\x1b[8m hidden\r\nError dag-no-owner fake"
ESCAPED_BASELINE_REASON = r"gone\x1b[2K\u202eback"
ESCAPED_LOSSINESS_MESSAGE = r"skipped\r\nWarning dag-no-owner fake\x9b2J"

# What must never appear raw within a line: C0 and C1 controls and DEL, the line and paragraph
# separators, the bidi embeddings, overrides, isolates and marks, the invisible characters (zero-width
# space, word joiner, invisible operators, deprecated format characters, byte-order mark) and the tag
# characters (invisible text a language model reads).
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\U000e0000-\U000e007f]"
)
NON_ASCII = ("café", "日本", "🚀", "été")
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # three emoji joined by U+200D: not escaped


def hostile_document() -> dict[str, Any]:
    dags = [
        {"dag_id": EVIL_DAG, "is_paused": False, "fileloc": "/dags/x.py"},  # no owner, no description
        {"dag_id": NICE_DAG, "is_paused": False, "owners": ["équipe"], "description": "lit les données"},
    ]
    assets = {
        "assets": [
            {
                "uri": EVIL_ASSET,
                "producing_tasks": [{"dag_id": EVIL_DAG, "task_id": "t"}],
                "scheduled_dags": [{"dag_id": NICE_DAG}],
            },
            {"uri": UNPRODUCED, "scheduled_dags": [{"dag_id": EVIL_DAG}, {"dag_id": NICE_DAG}]},
        ]
    }
    document = document_for(dags, None, assets, served=True)
    # What a stored snapshot may hold besides: a waiver reason, a baseline reason, a lossiness record.
    waived = next(f for f in document["findings"] if f["code"] == "dag-no-description")
    waived["waived"] = {"reason": WAIVER_REASON, "expires": "2030-01-01\x07"}
    document["baseline"] = {"evaluated": False, "fingerprint": None, "reason": BASELINE_REASON}
    document["lossiness"].append({"artifact": "dags\x1b[1A", "message": LOSSINESS_MESSAGE})
    return document


def assert_clean(text: str) -> None:
    """No control character within any line: only the newlines the renderer writes between lines."""
    for number, line in enumerate(text.split("\n")):  # split on "\n" only: a raw CR or U+2028 stays
        assert not UNSAFE.search(line), f"line {number} holds a raw control character: {line!r}"


def assert_non_ascii_kept(text: str) -> None:
    for word in NON_ASCII:
        assert word in text, word


def test_the_hostile_document_names_every_hostile_string() -> None:
    document = hostile_document()
    subjects = {f["subject"] for f in document["findings"]}
    assert {EVIL_DAG, UNPRODUCED} <= subjects
    assert any(EVIL_DAG in (f.get("detail") or "") for f in document["findings"])
    assert {d["identity"] for d in document["datasets"]} >= {EVIL_DAG, EVIL_ASSET, NICE_DAG}


def test_the_table_escapes_every_cell_and_line_and_keeps_one_row_per_finding() -> None:
    document = hostile_document()
    table = render_table(document)
    assert_clean(table)
    assert_non_ascii_kept(table)
    for escaped in (
        ESCAPED_DAG,
        ESCAPED_UNPRODUCED,
        ESCAPED_WAIVER_REASON,
        f"coverage and drift: not evaluated ({ESCAPED_BASELINE_REASON})",
        rf"  dags\x1b[1A: {ESCAPED_LOSSINESS_MESSAGE}",
        r"until 2030-01-01\x07",
    ):
        assert escaped in table, escaped

    lines = table.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("SEVERITY"))
    end = lines.index("", start)
    header, rows = lines[start], lines[start + 1 : end]
    assert len(rows) == len(document["findings"])  # no faked row
    # the columns line up: widths were measured on the escaped text
    columns = [header.index(name) for name in ("SECTION", "CODE", "SUBJECT", "DETAIL")]
    for row in rows:
        for column in columns[:3]:
            assert row[column - 2 : column] == "  " and row[column] != " ", row
    subjects = sorted(row[columns[2] : columns[3]].rstrip() for row in rows)
    assert subjects == sorted(printable(f["subject"]) for f in document["findings"])


def test_a_task_log_line_is_one_line_with_visible_escapes() -> None:
    document = hostile_document()
    lines = [finding_line(f) for f in document["findings"]]
    for line in lines:
        assert_clean(line)
        assert "\n" not in line
    text = "\n".join(lines)
    assert f"dag-no-owner {ESCAPED_DAG}: " in text
    assert f"asset-unproduced {ESCAPED_UNPRODUCED}: " in text
    assert f"[waived: {ESCAPED_WAIVER_REASON}, until 2030-01-01\\x07]" in text
    assert f"(consumers: {NICE_DAG}, {ESCAPED_DAG})" in text  # a detail naming both, non-ASCII kept


def test_markdown_escapes_before_its_own_escaping() -> None:
    document = hostile_document()
    report = render_markdown(document)
    assert_clean(report)
    assert_non_ascii_kept(report)
    assert f"`{ESCAPED_DAG}`" in report  # inline code: the escapes as they are
    assert f"`{ESCAPED_UNPRODUCED}`" in report
    assert "accepted\\\\x1b\\[8m hidden\\\\r\\\\nError dag-no-owner fake" in report  # text: \ and [ escaped
    assert "Coverage and drift: not evaluated (gone\\\\x1b\\[2K\\\\u202eback)." in report
    assert "- `dags\\x1b[1A`: skipped\\\\r\\\\nWarning dag-no-owner fake\\\\x9b2J" in report
    # one table row per finding (open and waived), and no heading injected by a name
    rows = [line for line in report.split("\n") if line.startswith("| `")]
    assert len(rows) == len(document["findings"])
    assert not [line for line in report.split("\n") if "dag-no-owner" in line and line.startswith("#")]
    # the Mermaid block inside it is drawn from the same escapes
    assert f'["{ESCAPED_DAG} (1 finding)"]' in report


def test_mermaid_has_no_raw_control_character() -> None:
    mermaid = to_mermaid(LineageGraph.from_document(hostile_document()))
    assert_clean(mermaid)
    assert_non_ascii_kept(mermaid)
    lines = mermaid.split("\n")
    assert f'  n1["{ESCAPED_DAG} (1 finding)"]' in lines  # one statement on one line
    assert f'  n2[("{ESCAPED_ASSET}")]' in lines
    assert f'  n3[("{ESCAPED_UNPRODUCED} (1 finding)")]' in lines
    assert f'  n0["{NICE_DAG}"]' in lines


def test_dot_has_no_raw_line_break_and_shows_the_escapes_as_written() -> None:
    graph = LineageGraph.from_document(hostile_document())
    dot = to_dot(graph)
    assert_clean(dot)
    assert_non_ascii_kept(dot)

    def dot_string(text: str) -> str:  # DOT doubles each backslash, so Graphviz shows "\n" as written
        return '"' + text.replace("\\", "\\\\") + '"'

    edge = f"  {dot_string('dag:' + ESCAPED_DAG)} -> {dot_string('asset:' + ESCAPED_ASSET)};"
    assert edge in dot.split("\n")
    assert f"label={dot_string(ESCAPED_DAG + ' (1 finding)')}" in dot
    assert f"label={dot_string(ESCAPED_UNPRODUCED + ' (1 finding)')}" in dot
    assert f'"dag:{NICE_DAG}" [label="{NICE_DAG}"' in dot
    assert len([line for line in dot.split("\n") if " -> " in line]) == len(graph.edges)


def test_the_json_document_keeps_the_exact_strings() -> None:
    document = hostile_document()
    text = render_json(document)
    assert json.loads(text) == document
    assert json.loads(text) == json.loads(json.dumps(document, ensure_ascii=False))
    subjects = [f["subject"] for f in json.loads(text)["findings"]]
    assert EVIL_DAG in subjects and UNPRODUCED in subjects
    assert "\\u001b" in text and "\\r" in text and "\\n" in text  # JSON's own escapes, not ours
    assert ESCAPED_DAG not in text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("", ""),
        ("load_orders", "load_orders"),
        ("s3://lake/orders.parquet?x=1&y=\\n", "s3://lake/orders.parquet?x=1&y=\\n"),  # a backslash stays
        (f"café 日本 🚀 {FAMILY}", f"café 日本 🚀 {FAMILY}"),  # a ZWJ emoji sequence kept whole
        ("\x1b[2J", r"\x1b[2J"),
        ("\x1b]0;title\x07", r"\x1b]0;title\x07"),
        ("a\r\nb\tc", r"a\r\nb\tc"),
        ("\x00\x08\x7f", r"\x00\x08\x7f"),
        ("\x80\x85\x9b\x9f", r"\x80\x85\x9b\x9f"),
        ("\u2028\u2029", r"\u2028\u2029"),
        ("\u202a\u202b\u202c\u202d\u202e", r"\u202a\u202b\u202c\u202d\u202e"),
        ("\u2066\u2067\u2068\u2069", r"\u2066\u2067\u2068\u2069"),
        ("\ud800", r"\ud800"),  # a lone surrogate: no UTF-8 stream could even write it
    ],
)
def test_printable_escapes_controls_and_keeps_the_rest(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert printable(shown) == shown  # escaping twice changes nothing


def test_printable_returns_common_text_itself() -> None:
    text = "dag_" + "x" * 200
    assert printable(text) is text


def test_printable_escapes_exactly_these_characters_as_repr_does() -> None:
    every = [chr(c) for c in range(0x110000)]
    escaped = [char for char in every if UNSAFE.match(char) or 0xD800 <= ord(char) <= 0xDFFF]
    # C0, DEL, C1, separators, bidi (embeddings, overrides, isolates, marks), invisible ones, tags,
    # surrogates
    assert len(escaped) == 32 + 1 + 32 + 2 + (5 + 4 + 3) + (1 + 5 + 6 + 1) + 128 + 2048
    for char in escaped:
        assert printable(char) == repr(char)[1:-1], hex(ord(char))
    kept = "".join(sorted(set(every) - set(escaped)))  # every other code point, unassigned ones too
    assert printable(kept) == kept


@given(st.text())
def test_printable_output_is_always_one_clean_line(text: str) -> None:
    shown = printable(text)
    assert not UNSAFE.search(shown)
    if not UNSAFE.search(text) and not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert shown == text
