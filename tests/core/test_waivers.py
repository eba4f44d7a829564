"""Waivers: the file format, matching, expiry, and what a waived finding does to a run."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from support.helpers import recorded_estate

from airflow_provider_coremodels.core import audit, build_document
from airflow_provider_coremodels.core.rules import MESSAGES, failing_findings
from airflow_provider_coremodels.core.waivers import Waiver, parse_waivers, waivers_from_value
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
    ],
)
def test_malformed_files_are_refused_with_the_problem_named(text: str | bytes, problem: str) -> None:
    with pytest.raises(WaiverFileError) as caught:
        parse_waivers(text)
    assert problem in str(caught.value)
    assert str(caught.value).startswith("waiver file ")


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
