"""Text from the estate made safe to show: its control characters written as visible escapes.

DAG ids, asset URIs, finding messages and lossiness records come from an Airflow deployment and
may hold anything a DAG author or a hostile API server writes. Written raw to a terminal or a task
log, an ESC sequence clears the screen or retitles the window, a CR or a backspace rewrites what
was already printed, and a newline fakes a line (a finding row) of its own; in markdown, Mermaid
or DOT a line break ends a table row or a statement. Every human view (the table, the task-log
lines, the markdown report, the Mermaid and DOT drawings) passes such text through ``printable``
first; the JSON document and SARIF stay exact, since JSON escapes control characters by itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from airflow_provider_coremodels.redaction import scrub_credentials

# C0 controls (tab, newline and CR among them), DEL, the C1 controls, the line and paragraph
# separators, the bidi embeddings, overrides and isolates (the "Trojan Source" characters) and the
# bidi marks (ALM, LRM, RLM), the invisible ones (zero-width space, word joiner, the invisible
# operators, the byte-order mark, the deprecated format characters), the tag characters (invisible
# text a language model reads: "ASCII smuggling"), and lone surrogates (which no UTF-8 terminal or
# file can even be written). Zero-width joiners and non-joiners stay: emoji and scripts need them.
_UNSAFE = re.compile(
    "[\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200b\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2060-\\u2064"
    "\\u2066-\\u206f\\ufeff\\ud800-\\udfff\\U000e0000-\\U000e007f]"
)
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every control character replaced by a visible escape, as Python's ``repr`` writes it.

    The rule: tab, newline and CR become ``\\t``, ``\\n`` and ``\\r``; every other C0 control, DEL
    and C1 control becomes ``\\xNN`` (ESC: ``\\x1b``, BEL: ``\\x07``, NUL: ``\\x00``); U+2028,
    U+2029, the bidi embeddings and overrides U+202A-U+202E, the bidi isolates U+2066-U+2069, the
    bidi marks U+061C, U+200E and U+200F, the invisible U+200B, U+2060-U+2064, U+206A-U+206F and
    U+FEFF, and lone surrogates become ``\\uNNNN``; the tag characters U+E0000-U+E007F become
    ``\\UNNNNNNNN``. Everything else is kept as it is, printable non-ASCII
    text (é, 日本, emoji) included, and so is a backslash: the result is for reading, not parsing
    (the JSON document holds the exact strings), so a name that spells ``\\n`` out reads the same
    as one holding a newline. The result holds no line break, so it stays on its line.

    Common text (printable ASCII) is returned as it is after one quick check: the views call
    this for every cell of a 10,000-DAG estate.
    """
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(_escape, text)


def cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters long, saying how long it was where it was longer
    (``abc… [cut: 1,048,576 characters in all]``); the marker is not counted."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text):,} characters in all]"


# What a markdown or HTML renderer acts on in plain text: an image (which it fetches, so an image
# URL can carry data away), a link, an HTML tag or an autolink in angle brackets.
_RENDERED = re.compile(r"!\[|\]\(|<(?=[A-Za-z/!?])")


def inert(text: str) -> str:
    """``text`` with markdown images and links and HTML tags written so no renderer acts on them: a
    backslash before ``![``, ``](`` and ``<tag`` (markdown's own escape). What reads it as plain
    text still reads it; a renderer shows it as written."""
    if "[" not in text and "](" not in text and "<" not in text:
        return text
    return _RENDERED.sub(lambda m: "\\" + m.group(), text)


def utf8_safe(value: str) -> str:
    """``value``, with any lone surrogate (from a ``\\ud800`` escape) replaced, so it encodes as UTF-8."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def text_value(value: Any) -> str | None:
    """A non-empty string read from an artifact, made safe to encode as UTF-8; None for anything else."""
    return utf8_safe(value) if isinstance(value, str) and value else None


def quoted_some(items: Iterable[str], most: int = 10) -> str:
    """Up to ``most`` items, sorted and quoted, and how many more: a list a message can hold."""
    ordered = sorted(items)
    shown = ", ".join(f"'{item}'" for item in ordered[:most])
    return shown + (f" and {len(ordered) - most} more" if len(ordered) > most else "")


#: A DAG warning's message is kept to this many characters: Airflow's can quote a whole file's lines.
MAX_WARNING_CHARS = 300
#: A warning type is kept to this many (Airflow's are a few words: ``non-existent pool``).
MAX_WARNING_TYPE_CHARS = 60


def warning_label(kind: str) -> str:
    """A DAG warning's type, on one line and bounded."""
    text = " ".join(kind.split())
    return text if len(text) <= MAX_WARNING_TYPE_CHARS else text[: MAX_WARNING_TYPE_CHARS - 1] + "…"


def warning_text(message: str) -> str:
    """A DAG warning's message as a finding's detail holds it: scrubbed of credentials (a URL's
    password, ``password=...``, keys and tokens: ``redaction.scrub_credentials``), its lines joined
    into one, white space collapsed, cut to ``MAX_WARNING_CHARS``.

    The capture has already scrubbed the secrets it knows (``redaction.py``); a runtime-varying-value
    warning quotes lines of the DAG's code, which may hold a connection URI of its own. The text is
    cut long before the patterns run, so a hostile message costs no more than a short one.
    """
    text = scrub_credentials(message[: 20 * MAX_WARNING_CHARS])
    text = " ".join(text.split())
    return text if len(text) <= MAX_WARNING_CHARS else text[: MAX_WARNING_CHARS - 1] + "…"
