"""Waivers: the file format, matching, expiry, and what a waived finding does to a run."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest
from support.helpers import recorded_estate

from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.checks import team_files
from airflow_provider_coremodels.core.checks.waivers import Waiver, parse_waivers, waivers_from_value
from airflow_provider_coremodels.core.estate.rules import MESSAGES, failing_findings
from airflow_provider_coremodels.errors import WaiverFileError

TODAY = dt.date(2026, 11, 29)


def findings(waivers: tuple[Waiver, ...], today: dt.date = TODAY) -> list[dict]:
    estate = recorded_estate("airflow3")
    return build_document(estate, audit(estate, waivers=waivers, today=today))["findings"]


def test_yaml_and_json_files_read_the_same() -> None:
    yaml_text = """
- code: dag-no-owner
  subject: legacy_*
  reason: owned by ops
  expires: 2027-03-31
- code: asset-unproduced
  subject: "s3://vendor/*"
  reason: the vendor drops it
"""
    json_text = json.dumps(
        [
            {
                "code": "dag-no-owner",
                "subject": "legacy_*",
                "reason": "owned by ops",
                "expires": "2027-03-31",
            },
            {"code": "asset-unproduced", "subject": "s3://vendor/*", "reason": "the vendor drops it"},
        ]
    )
    expected = (
        Waiver("dag-no-owner", "legacy_*", "owned by ops", dt.date(2027, 3, 31)),
        Waiver("asset-unproduced", "s3://vendor/*", "the vendor drops it"),
    )
    assert parse_waivers(yaml_text) == expected
    assert parse_waivers(json_text.encode()) == expected
    assert parse_waivers(json.dumps({"waivers": json.loads(json_text)})) == expected


def test_empty_file_waives_nothing() -> None:
    assert parse_waivers("") == ()
    assert parse_waivers("[]") == ()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("- code: [unclosed", "is not valid YAML or JSON at line 1"),
        ("code: dag-no-owner", 'must be a list of waivers (or {"waivers": [...]})'),
        ("- just a string", "waivers[0] must be a mapping with code, subject and reason"),
        ("- {code: dag-no-owner, subject: x}", "waivers[0].reason must be a non-empty string"),
        ("- {code: dag-no-owner, subject: '  ', reason: r}", "waivers[0].subject must be a non-empty string"),
        (
            "- {code: dag-no-ownr, subject: x, reason: r}",
            "waivers[0].code 'dag-no-ownr' is not a finding code",
        ),
        (
            "- {code: waiver-expired, subject: x, reason: r}",
            "waivers[0].code 'waiver-expired' is not a finding",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expiry: 2027-01-01}",
            "waivers[0] has unknown key(s) expiry",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: next week}",
            "waivers[0].expires must be a date",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: 2027-02-30}",
            "waivers[0].expires must be a date",
        ),
        (b"\xff\xfe- code", "is not UTF-8 text"),
        # Dates: exactly YYYY-MM-DD, which fromisoformat alone does not ensure (it takes ISO weeks).
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: 2027-W01-1}",
            "waivers[0].expires must be a date written YYYY-MM-DD, got '2027-W01-1'",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: '20270131'}",
            "waivers[0].expires must be a date written YYYY-MM-DD, got '20270131'",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: 20270131}",
            "waivers[0].expires must be a date written YYYY-MM-DD, got 20270131",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: 2027-1-3}",
            "waivers[0].expires must be a date written YYYY-MM-DD, got '2027-1-3'",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: !!timestamp 2027-1-3}",
            "waivers[0].expires must be a date written YYYY-MM-DD, got '2027-1-3'",
        ),
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: 2027-01-31T00:00:00}",
            "waivers[0].expires must be a date written YYYY-MM-DD, got '2027-01-31T00:00:00'",
        ),
        # Anchors and aliases: refused where they are written, before anything is expanded.
        (
            "- {code: dag-no-owner, subject: x, reason: r}\n- *entry\n",
            "uses a YAML alias at line 2: anchors and aliases are not allowed in waiver files",
        ),
        (
            "- &entry {code: dag-no-owner, subject: x, reason: r}\n",
            "uses a YAML anchor at line 1: anchors and aliases are not allowed in waiver files",
        ),
        # A number Python refuses to convert (over 4,300 digits) is a YAML error, not a ValueError.
        (
            "- {code: dag-no-owner, subject: x, reason: r, expires: " + "9" * 5000 + "}",
            "is not valid YAML or JSON at line 1, column 56: found a number too long to read",
        ),
    ],
)
def test_malformed_files_are_refused_with_the_problem_named(text: str | bytes, problem: str) -> None:
    with pytest.raises(WaiverFileError) as caught:
        parse_waivers(text)
    assert problem in str(caught.value)
    assert str(caught.value).startswith("waiver file ")


#: Nine lists of nine aliases of the list before: 9**9 (387 million) strings once expanded, which
#: the old parser built in memory as soon as an error message quoted the value.
ALIAS_BOMB = "\n".join(
    [
        "waivers:",
        "- code: dag-no-owner",
        "  subject: x",
        "  reason: r",
        "  expires:",
        "  - &l0 [" + ", ".join(["lol"] * 9) + "]",
        *(f"  - &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, 9)),
    ]
)

# Runs the parse in a child capped at 64 MiB more address space than it has after its imports,
# so an expanding parser fails this test with a MemoryError instead of exhausting the machine.
BOMB_CHILD = """
import resource, sys, tracemalloc
from airflow_provider_coremodels.core.checks.waivers import parse_waivers
from airflow_provider_coremodels.errors import WaiverFileError
size = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (64 << 20), resource.RLIM_INFINITY))
text = sys.stdin.read()
tracemalloc.start()
try:
    parse_waivers(text)
except WaiverFileError as exc:
    print(exc)
print(tracemalloc.get_traced_memory()[1])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to cap the child's memory")
def test_an_alias_bomb_is_refused_in_bounded_memory() -> None:
    child = subprocess.run(
        [sys.executable, "-c", BOMB_CHILD], input=ALIAS_BOMB, capture_output=True, text=True, timeout=30
    )
    assert child.returncode == 0, child.stderr[-2000:]
    message, peak = child.stdout.splitlines()
    assert message == (
        "waiver file uses a YAML anchor at line 6: anchors and aliases are not allowed in waiver files"
    )
    assert int(peak) < 1 << 20  # bytes allocated while parsing: under a MiB


def deep_block(levels: int) -> str:
    return "".join(" " * (2 * i) + "-\n" for i in range(levels))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests more than 16 levels deep at line 1"),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nests more than 16 levels deep at line 1"),
        ('{"waivers": [' + "[" * 100_000 + "]" * 100_001 + "}", "nests more than 16 levels deep at line 1"),
        (deep_block(10_000), "nests more than 16 levels deep at line 17"),
        ("[" * 16 + "]" * 16, "waivers[0] must be a mapping"),  # 16 levels: allowed
        ("[" * 17 + "]" * 17, "nests more than 16 levels deep at line 1"),
    ],
    ids=["yaml-flow-list", "json-object", "json-under-waivers", "yaml-block-list", "at-limit", "over-limit"],
)
def test_deep_nesting_is_refused_naming_the_line(text: str, problem: str) -> None:
    with pytest.raises(WaiverFileError) as caught:
        parse_waivers(text)
    assert problem in str(caught.value)


def test_a_recursion_error_is_a_waiver_file_error(monkeypatch) -> None:
    """The last resort, should the nesting limit ever be raised past what the stack holds."""
    monkeypatch.setattr(team_files, "MAX_DEPTH", 10**9)  # the limit every hand-written file shares
    with pytest.raises(WaiverFileError, match=r"^waiver file nests too deeply to read$"):
        parse_waivers("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    ("entries", "quoted"),
    [
        ([{"code": "x" * 1_000_000, "subject": "s", "reason": "r"}], "waivers[0].code 'xxx"),
        ([{"code": "dag-no-owner", "subject": "s", "reason": "r", "expires": "9" * 1_000_000}], "got '999"),
        (
            [
                {
                    "code": "dag-no-owner",
                    "subject": "s",
                    "reason": "r",
                    "expires": [list(range(10**5))] * 10**3,
                }
            ],
            "got [[0, 1, 2, 3, ...]",
        ),
        ([{"code": "dag-no-owner", "subject": "s", "reason": "r", "k" * 10**6: 1}], "unknown key(s) kkk"),
        (
            [{"code": "dag-no-owner", "subject": "s", "reason": "r", **{f"key{i}": i for i in range(10**5)}}],
            "unknown key(s) key0, key1, key10, key100, key1000 and 99995 more",
        ),
    ],
    ids=["long-code", "long-date", "huge-list", "long-key", "many-keys"],
)
def test_error_messages_quote_at_most_80_characters_of_a_value(entries: list, quoted: str) -> None:
    with pytest.raises(WaiverFileError) as caught:
        waivers_from_value(entries)
    message = str(caught.value)
    assert quoted in message
    # bounded whatever the value: the 80 quoted characters and the list of codes it may name
    assert len(message) < 600, message[:600]


@pytest.mark.parametrize(
    "expires",
    [dt.date(2027, 1, 31), dt.datetime(2027, 1, 31, 23, 59), "2027-01-31", " 2027-01-31 "],
    ids=["date", "datetime", "text", "text-with-spaces"],
)
def test_the_operator_may_give_expiry_as_a_date_object_or_text(expires: object) -> None:
    waivers = waivers_from_value(
        [{"code": "dag-no-owner", "subject": "x", "reason": "r", "expires": expires}]
    )
    assert waivers == (Waiver("dag-no-owner", "x", "r", dt.date(2027, 1, 31)),)


def test_a_waived_finding_is_still_reported_marked_with_its_reason() -> None:
    waivers = waivers_from_value(
        [{"code": "dag-no-owner", "subject": "legacy_*", "reason": "owned by ops", "expires": "2027-03-31"}]
    )
    listed = findings(waivers)
    owner = next(f for f in listed if f["code"] == "dag-no-owner")
    assert owner["subject"] == "legacy_cleanup"
    assert owner["waived"] == {"reason": "owned by ops", "expires": "2027-03-31"}
    assert all("waived" not in f for f in listed if f is not owner)
    assert len(listed) == len(findings(()))


def test_waived_findings_never_fail_a_run() -> None:
    everything = waivers_from_value(
        [
            {"code": code, "subject": "*", "reason": "accepted"}
            for code in MESSAGES
            if code != "waiver-expired"
        ]
    )
    listed = findings(everything)
    assert listed and all(f.get("waived") for f in listed)
    assert failing_findings(listed, "info") == []
    assert failing_findings(findings(()), "info") != []


def test_subject_is_a_case_sensitive_glob_over_the_whole_subject() -> None:
    def waived(subject: str) -> list[str]:
        waiver = (Waiver("asset-unproduced", subject, "r"),)
        return [f["subject"] for f in findings(waiver) if f.get("waived")]

    assert waived("s3://vendor/*") == ["s3://vendor/fx_rates.csv"]
    assert waived("*fx_rates*") == ["s3://vendor/fx_rates.csv"]
    assert waived("S3://VENDOR/*") == []
    assert waived("s3://vendor") == []  # a prefix is not a match: globs match whole subjects


def test_an_expired_waiver_waives_nothing_and_is_itself_a_finding() -> None:
    waiver = Waiver("dag-no-owner", "legacy_*", "owned by ops", dt.date(2026, 11, 28))
    listed = findings((waiver,))
    assert not any(f.get("waived") for f in listed)
    expired = [f for f in listed if f["code"] == "waiver-expired"]
    assert expired == [
        {
            "section": "Waivers",
            "severity": "Warning",
            "code": "waiver-expired",
            "subject": "dag-no-owner legacy_*",
            "message": MESSAGES["waiver-expired"],
            "detail": "expired 2026-11-28; reason was: owned by ops",
        }
    ]
    assert listed[-1] == expired[0]  # sorted with the rest: Waivers comes after Drift
    assert failing_findings(listed, "warning")


def test_a_waiver_holds_through_its_expiry_date() -> None:
    waiver = Waiver("dag-no-owner", "legacy_*", "owned by ops", TODAY)
    listed = findings((waiver,), today=TODAY)
    assert any(f.get("waived") for f in listed)
    assert not any(f["code"] == "waiver-expired" for f in listed)


def test_the_first_matching_waiver_gives_the_reason() -> None:
    waivers = (Waiver("dag-no-owner", "legacy_cleanup", "first"), Waiver("dag-no-owner", "*", "second"))
    owner = next(f for f in findings(waivers) if f["code"] == "dag-no-owner")
    assert owner["waived"] == {"reason": "first", "expires": None}


def test_waivers_do_not_change_the_fingerprint() -> None:
    estate = recorded_estate("airflow3")
    plain = build_document(estate, audit(estate))
    waived = build_document(
        estate, audit(estate, waivers=(Waiver("dag-no-owner", "*", "r", dt.date(2000, 1, 1)),), today=TODAY)
    )
    assert plain["fingerprint"] == waived["fingerprint"]


def test_the_first_matching_waiver_in_file_order_wins_exact_or_glob() -> None:
    """Indexed by code and subject (a long waiver file times many findings is no product), a
    finding still takes the first waiver of the file that matches it, a glob before an exact one
    where the glob comes first, and the exact one where it does."""
    from airflow_provider_coremodels.core.checks.waivers import Waiver, apply_waivers
    from airflow_provider_coremodels.core.estate.findings import Finding, Severity

    finding = Finding("Conformance", Severity.WARNING, "dag-no-owner", "legacy_x", "m")
    glob, exact = Waiver("dag-no-owner", "legacy_*", "glob"), Waiver("dag-no-owner", "legacy_x", "exact")
    other = Waiver("dag-no-description", "legacy_x", "another code")
    today = dt.date(2026, 12, 1)
    assert apply_waivers([finding], [other, glob, exact], today)[0].waived.reason == "glob"
    assert apply_waivers([finding], [other, exact, glob], today)[0].waived.reason == "exact"
    assert apply_waivers([finding], [other], today)[0].waived is None


def test_a_finding_tries_only_the_globs_whose_literal_it_begins_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """Globs are indexed by the text before their first wildcard: with one glob per family of DAGs
    (a waiver file that grows with the estate), each finding tries the globs of its own family, not
    every glob of its code, so the work is the findings', not the findings times the globs."""
    from airflow_provider_coremodels.core.checks import waivers as module
    from airflow_provider_coremodels.core.checks.waivers import apply_waivers
    from airflow_provider_coremodels.core.estate.findings import Finding, Severity

    tried = []
    real = module.fnmatchcase

    def counting(name: str, pattern: str) -> bool:
        tried.append(pattern)
        return real(name, pattern)

    monkeypatch.setattr(module, "fnmatchcase", counting)
    families, per_family = 300, 5
    globs = [Waiver("dag-no-owner", f"team_{i:04d}_*", "family") for i in range(families)]
    globs.append(Waiver("dag-no-owner", "*_legacy", "a suffix glob every finding tries"))
    found = [
        Finding("Conformance", Severity.WARNING, "dag-no-owner", f"team_{i:04d}_dag_{j}", "m")
        for i in range(families)
        for j in range(per_family)
    ]
    out = apply_waivers(found, globs, TODAY)
    assert all(f.waived is not None and f.waived.reason == "family" for f in out)
    assert len(tried) <= 2 * len(found)  # the suffix glob, and its own family's, which matches


@pytest.mark.parametrize("seed", range(20))
def test_the_glob_index_picks_the_waiver_a_scan_of_the_file_picks(seed: int) -> None:
    """The index by literal prefix changes no answer: for random waiver files of exact subjects and
    globs (wildcards anywhere, sets, a lone ``[``), each finding gets the first waiver of the file
    that matches it, or none."""
    import random

    from airflow_provider_coremodels.core.checks.waivers import apply_waivers
    from airflow_provider_coremodels.core.estate.findings import Finding, Severity

    rng = random.Random(seed)
    alphabet = "ab_["

    def text(low: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, 5)))

    def subject_glob() -> str:
        parts = [text(0) for _ in range(rng.randint(1, 3))]
        return "".join(p + rng.choice(("*", "?", "[ab]", "", "[")) for p in parts)

    codes = ("dag-no-owner", "dag-no-description")
    file = [Waiver(rng.choice(codes), subject_glob() or "a", f"w{i}") for i in range(40)]
    found = [Finding("Conformance", Severity.WARNING, rng.choice(codes), text(1), "m") for _ in range(200)]
    for finding, got in zip(found, apply_waivers(found, file, TODAY), strict=True):
        first = next((w for w in file if w.matches(finding)), None)
        assert (got.waived.reason if got.waived else None) == (first.reason if first else None), finding
