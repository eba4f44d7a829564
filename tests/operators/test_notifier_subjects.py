"""The mail subject recipe of docs/alerts.md ("A mail subject from findings, templated safely").

Airflow's own ``SmtpNotifier`` renders the templates and the smtp provider's ``SmtpHook`` builds the
mail, written as it would be sent (no server needed: the refusal is the email package's, on writing).
"""

from __future__ import annotations

import email.errors

import pytest

smtp = pytest.importorskip("airflow.providers.smtp.notifications.smtp")
from airflow.providers.smtp.hooks.smtp import SmtpHook  # noqa: E402
from airflow.sdk import DAG  # noqa: E402

HOSTILE = {"coremodels": {"new_findings": [{"subject": "s3://lake/x\r\nBcc: attacker@example.com"}]}}
NAIVE = "New: {{ (coremodels.new_findings | first).subject }}"
SAFE = (
    'New: {{ (coremodels.new_findings | first).subject | replace("\\r", " ") | replace("\\n", " ")'
    " | truncate(80) }}"
)


def written(subject_template: str) -> str:
    notifier = smtp.SmtpNotifier(
        to="platform@example.com",
        from_email="airflow@example.com",
        subject=subject_template,
        html_content="x",
    )
    # the notifier's context as a task's callback has it: the DAG, whose Jinja environment renders
    # (the smtp provider of Airflow 3.0's constraints reads it), and the provider's findings
    notifier.render_template_fields({**HOSTILE, "dag": DAG(dag_id="notified", schedule=None)})
    message, _ = SmtpHook.__new__(SmtpHook)._build_mime_message(
        mail_from="airflow@example.com", to="platform@example.com", subject=notifier.subject, html_content="x"
    )
    return message.as_string()


def test_a_line_break_from_a_finding_in_a_subject_is_refused_when_the_mail_is_written() -> None:
    with pytest.raises(email.errors.HeaderParseError):
        written(NAIVE)


def test_the_documented_subject_template_keeps_the_subject_one_header_line() -> None:
    mail = written(SAFE)
    assert "Subject: New: s3://lake/x  Bcc: attacker@example.com" in mail
    assert "\nBcc:" not in mail
