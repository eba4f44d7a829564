"""Credentials never leave in an import error, a DAG warning or a description (issue 34).

The scrub sits where the core reads the text (``broken.error_line``, the parse's description,
warning and lossiness readers, the stored-document readers), so every door into the core and
every view after it get the scrubbed text. Each shape of ``support/secret_shapes.py`` goes
through each reader here; the views and sinks are checked in ``tests/cli/test_secret_shapes.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.helpers import artifact_paths
from support.secret_corpus import CLEAN_TEXTS, OWN_PASSWORD, OWN_TOKEN, SECRET_TEXTS, SecretText
from support.secret_shapes import (
    DESCRIPTION_SECRET,
    INNOCENT,
    SHAPES,
    WARNING_SECRET,
    Shape,
    leaks,
    shape_file,
    traceback_of,
    with_leaky_errors,
)

from airflow_provider_coremodels.core.checks.audit import audit
from airflow_provider_coremodels.core.reading.broken import MAX_ERROR_CHARS, error_line
from airflow_provider_coremodels.core.reading.parse import parse_artifacts
from airflow_provider_coremodels.core.snapshots.document import build_document, encode, load_document
from airflow_provider_coremodels.redaction import REPLACED, SECRETS, scrub, scrub_credentials


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_each_shape_is_scrubbed_where_the_import_error_is_read(shape: Shape) -> None:
    """The traceback's last line keeps what failed and loses every secret of its shape."""
    line = error_line(traceback_of(shape.line, f"/opt/airflow/dags/{shape_file(shape)}"))
    assert shape.kept in line
    assert REPLACED in line
    assert [secret for secret in shape.secrets if secret in line] == []
    assert scrub_credentials(line) == line  # idempotent: the capture and the parse both scrub


@pytest.mark.parametrize("line", INNOCENT)
def test_an_ordinary_error_line_is_kept_as_it_is(line: str) -> None:
    """``tokenizer.py``, ``password_reset_dag``, ``KeyError: 'api_key'``: no credential, no change."""
    assert error_line(traceback_of(line, "/opt/airflow/dags/x.py")) == line
    assert scrub_credentials(line) == line


def test_the_exact_replacements_keep_the_names() -> None:
    """The name of what was replaced stays: the line still says what failed and where."""
    assert scrub_credentials("failed: host=db user=etl password=Hunter2 dbname=dw") == (
        "failed: host=db user=etl password=*** dbname=dw"
    )
    assert scrub_credentials("at postgresql://etl:Hunter2@db:5432/dw") == "at postgresql://etl:***@db:5432/dw"
    assert scrub_credentials('{"password": "a b", "user": "etl"}') == '{"password": "***", "user": "etl"}'
    assert scrub_credentials("{'Authorization': 'Bearer abc.def.ghi-0123456789'}") == (
        "{'Authorization': 'Bearer ***'}"
    )
    assert scrub_credentials("key -----BEGIN EC PRIVATE KEY-----MHcCAQ==-----END EC PRIVATE KEY----- x") == (
        "key -----BEGIN EC PRIVATE KEY-----***-----END EC PRIVATE KEY----- x"
    )
    assert scrub_credentials("UID=etl;PWD=x;") == "UID=etl;PWD=***;"
    assert scrub_credentials("DB_PASSWORD: 'p'") == "DB_PASSWORD: '***'"


def test_a_line_cut_to_its_limit_is_scrubbed_before_the_cut() -> None:
    """A credential that starts in the shown part and ends past the cut is not shown in part."""
    password = "cmCanaryLongPw" + "x" * 400
    raw = f"OperationalError: {'pad ' * 60}postgresql://etl:{password}@db/dw {'tail ' * 60}"
    assert "cmCanaryLongPw" in raw[:MAX_ERROR_CHARS]  # what a cut before the scrub would show
    line = error_line(raw)
    assert len(line) == MAX_ERROR_CHARS and line.endswith("…")
    assert "cmCanaryLongPw" not in line and "postgresql://etl:***@db/dw" in line
    key = "-----BEGIN PRIVATE KEY-----" + "QUJD" * 5000  # no END marker in the kept part
    assert "QUJD" not in error_line(f"ValueError: {key}")


def test_the_parse_scrubs_every_text_the_server_wrote() -> None:
    """Import errors, a description, a DAG warning and a capture lossiness record, through the
    parse and the audit into the document: no secret anywhere, each broken file still named."""
    paths = artifact_paths("airflow3")
    dags = with_leaky_errors(json.loads(paths["dags"].read_bytes()))
    estate = parse_artifacts(
        json.dumps(dags).encode(), paths["tasks"].read_bytes(), paths["datasets"].read_bytes()
    )
    document = build_document(estate, audit(estate))
    assert leaks(json.dumps(document)) == []
    errors = {f["subject"]: f["detail"] for f in document["findings"] if f["code"] == "dag-import-error"}
    for shape in SHAPES:
        [detail] = [d for subject, d in errors.items() if subject.endswith(shape_file(shape))]
        assert shape.kept in detail
    described = next(d for d in document["datasets"] if d["identity"] == dags["dags"][0]["dag_id"])
    assert described["description"] == "Loads orders from postgresql://etl:***@db/dw (api_key=***)"
    assert DESCRIPTION_SECRET not in json.dumps(document) and WARNING_SECRET not in json.dumps(document)


def test_an_unchanged_estate_keeps_one_fingerprint() -> None:
    """The scrub is deterministic: the same artifacts give the same fingerprint, run after run."""
    paths = artifact_paths("airflow3")
    dags = json.dumps(with_leaky_errors(json.loads(paths["dags"].read_bytes()))).encode()
    prints = {
        build_document(estate, audit(estate))["fingerprint"]
        for estate in (parse_artifacts(dags, paths["tasks"].read_bytes()) for _ in range(3))
    }
    assert len(prints) == 1


def test_a_document_stored_before_the_scrub_is_scrubbed_when_read() -> None:
    """A stored snapshot written by an older version may quote a credential in an import error:
    both readers (the typed one and the key-by-key one) scrub it as they read."""
    paths = artifact_paths("airflow3")
    estate = parse_artifacts(json.dumps(with_leaky_errors(json.loads(paths["dags"].read_bytes()))).encode())
    document = build_document(estate, audit(estate))
    old = SHAPES[0]
    document["importErrors"][0]["error"] = old.line  # as an older version stored it
    raw = encode(document)
    assert old.secrets[0].encode() in raw
    typed = load_document(raw)
    damaged = json.loads(raw)
    damaged["schemaVersion"] = 1  # the key-by-key reader
    checked = load_document(json.dumps(damaged))
    for stored in (typed, checked):
        assert stored.estate is not None
        errors = [b.error for b in stored.estate.import_errors]
        assert old.kept in errors[0]
        assert leaks(" ".join(errors)) == []


HOSTILE = r"""
import sys
from airflow_provider_coremodels.core.reading.broken import error_line
from airflow_provider_coremodels.core.estate.text import warning_text
from airflow_provider_coremodels.redaction import scrub_credentials
N = 300_000
lines = [
    "a" * N, "password=" * (N // 9), 'password="' * (N // 10), 'password="' + '\\"password=' * (N // 12),
    "token: '" + "\\'token: " * (N // 10), "://" * (N // 3), "://a:" * (N // 5), "://" + "a:" * (N // 2),
    "eyJ" * (N // 3), ("eyJ" + "a" * 20 + ".") * (N // 24), ("AKIA" + "A" * 16 + " ") * (N // 21),
    "AKIA" + "A" * 16 + " " + "a" * N, "-----BEGIN PRIVATE KEY-----" * (N // 27),
    "-----BEGIN RSA " * (N // 15), "bearer " * (N // 7), "Bearer " + "a" * N, "authorization: " * (N // 15),
    "xoxb-" * (N // 5), "ghp_" + "a" * N, "hooks.slack.com/services/" * (N // 25), "sig=" * (N // 4),
    "pwd=a;PWD:'x' " * (N // 14), "password" + " " * N + "=", "DB_PASSWORD" * (N // 11),
]
changed = 0
for line in lines:
    assert len(line) >= 250_000
    changed += scrub_credentials(line) != line
    assert len(error_line(line)) <= 300 and len(warning_text(line)) <= 300
print(len(lines), changed)
"""


def test_a_hostile_300_kb_line_is_bounded() -> None:
    """Near-misses of every pattern, 300 KB each: each is scrubbed (and cut) in linear time. The
    bound is a generous timeout, not a timing (benchmarks/bench_credentials.py prints the times):
    catastrophic backtracking on any of them would take hours."""
    done = subprocess.run([sys.executable, "-c", HOSTILE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, changed = map(int, done.stdout.split())
    assert count == 24 and changed >= 10  # the patterns did match: the lines were really scrubbed


@given(st.text(max_size=300))
def test_the_scrub_is_deterministic_and_idempotent(text: str) -> None:
    once = scrub_credentials(text)
    assert scrub_credentials(text) == once
    assert scrub_credentials(once) == once


@given(st.text(alphabet=st.characters(codec="ascii", exclude_characters="kKsSpPtTaA:"), max_size=300))
def test_text_without_a_shape_word_is_kept(text: str) -> None:
    """Without the letters every shape needs (``key``, ``sig``, ``pass``, ``token``, ``auth``, ``://``
    ...), nothing is touched."""
    assert scrub_credentials(text) is text


# -- the corpus of issue 44: each shape in text a server writes, and clean text ------------------


@pytest.mark.parametrize("item", SECRET_TEXTS, ids=lambda item: item.name)
def test_each_secret_of_the_corpus_is_gone(item: SecretText) -> None:
    """Every shape issue 44 names, in the text a server writes (a description, an alert's name, an
    import error, a 4xx body), loses its secret: by its shape, or (``own``) because the run
    registered it. benchmarks/bench_credentials.py prints the same recall beside detect-secrets'."""
    SECRETS.clear()
    SECRETS.add(OWN_PASSWORD, OWN_TOKEN)
    try:
        scrubbed = scrub(item.text)
    finally:
        SECRETS.clear()
    assert [secret for secret in item.secrets if secret in scrubbed] == []
    assert REPLACED in scrubbed


@pytest.mark.parametrize("text", CLEAN_TEXTS)
def test_clean_text_of_the_corpus_is_kept(text: str) -> None:
    """DAG ids naming tokens, asset URIs, SQL, cron, docs, hashes: no false positive, as an
    identifier changed would break the joins on it."""
    assert scrub_credentials(text) == text
