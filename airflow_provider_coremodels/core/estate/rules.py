"""The catalogue of finding codes: section, severity, message and help, declared once.

The audit takes its messages from here, the waiver file checks codes against it, and the
SARIF rendering turns each entry into a rule with its help text. The order of severities and
the ``--fail-on`` thresholds live here too: every view and both front doors read them.

A team's own rules (``policy.py``, section Policy) are not known until a rules file is read, so
they are not in ``RULES``: the snapshot document records them (its ``policy`` part), and
``catalogue(document)`` gives every view the rules a document's findings may name, the built-in
ones and the document's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_provider_coremodels.core.estate.findings import Finding, Severity

#: Severities from the least to the most severe.
SEVERITY_ORDER: tuple[Severity, ...] = (Severity.INFO, Severity.WARNING, Severity.ERROR)
_RANK = {severity.value: rank for rank, severity in enumerate(SEVERITY_ORDER, start=1)}

#: ``--fail-on`` / ``fail_on``: the least severity that fails a run, or None for never.
FAIL_ON: Mapping[str, Severity | None] = {
    "never": None,
    **{severity.value.lower(): severity for severity in SEVERITY_ORDER},
}


def severity_rank(severity: str) -> int:
    """A severity's place in ``SEVERITY_ORDER`` (Info is 1); 0 for one this version does not know."""
    return _RANK.get(severity, 0)


def most_severe_first(severities: Iterable[str]) -> list[str]:
    """Distinct severities, the most severe first; unknown ones (a newer version's) last, by name."""
    return sorted(set(severities), key=lambda severity: (-severity_rank(severity), severity))


def failing_findings(findings: Sequence[dict[str, Any]], fail_on: str) -> list[dict[str, Any]]:
    """The document's findings at or above ``fail_on`` that are not waived: what fails a run."""
    threshold = FAIL_ON[fail_on]
    if threshold is None:
        return []
    least = severity_rank(threshold.value)
    return [f for f in findings if not f.get("waived") and severity_rank(f["severity"]) >= least]


CONFORMANCE = "Conformance"
COVERAGE = "Coverage"
DRIFT = "Drift"
FRESHNESS = "Freshness"
POLICY = "Policy"
WAIVERS = "Waivers"

#: How every code of a team's own rules begins (``policy.py``); no built-in code does.
POLICY_PREFIX = "policy-"
_POLICY_CODE = re.compile(r"policy-[a-z0-9]+(?:-[a-z0-9]+)*", re.ASCII)
#: The longest code a rules file may give (it is a SARIF rule id, and part of every finding).
MAX_CODE_CHARS = 64


def is_policy_code(code: str) -> bool:
    """A code a rules file may give: ``policy-`` and lowercase words of letters and digits, joined by
    hyphens (``policy-team-tag``), at most ``MAX_CODE_CHARS`` long."""
    return len(code) <= MAX_CODE_CHARS and _POLICY_CODE.fullmatch(code) is not None


Subject = Literal["dag", "asset", "dataset", "task", "waiver", "bundle", "file", "edge"]


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    section: str
    severity: Severity
    message: str
    help: str  # why it matters and what to do, for SARIF and the docs
    #: What the subject names: a dag_id, an asset URI, either ("dataset"), a ``dag_id.task_id``,
    #: a waiver, a DAG bundle, a DAG file (``<bundle>/<path>``) or a lineage edge
    #: (``<dependsOn> -> <dependent>``). The views read it to place a finding (a DAG and an asset
    #: may share a name).
    about: Subject


RULES: tuple[Rule, ...] = (
    Rule(
        "dag-import-error",
        CONFORMANCE,
        Severity.ERROR,
        "DAG file does not import — its DAGs do not run, and the assets only they produce are not updated.",
        "Fix the error the detail names (Airflow's Import Errors view shows the whole traceback) and "
        "deploy again. Until the file imports, Airflow runs none of its DAGs; their consumers, named in "
        "the detail, wait on data nobody writes.",
        about="file",
    ),
    Rule(
        "dag-no-description",
        CONFORMANCE,
        Severity.INFO,
        "DAG has no description — pipelines without stated intent resist governance.",
        "Give the DAG a `description` saying what it produces and for whom (a `doc_md` counts too). "
        "Governance tools and on-call engineers read it to decide whether a failure matters.",
        about="dag",
    ),
    Rule(
        "dag-no-owner",
        CONFORMANCE,
        Severity.WARNING,
        "DAG has no owner but the default — nobody is accountable for this pipeline.",
        "Set `owner` in the DAG's `default_args` (or on its tasks) to the team that answers for it; "
        "the default owner `airflow` names nobody.",
        about="dag",
    ),
    Rule(
        "airflow-warning",
        CONFORMANCE,
        Severity.WARNING,
        "Airflow warns about this DAG — its own DAG warning says something in the DAG will not work "
        "as written.",
        "Read the warning in the detail (Airflow's UI shows it on the DAG's page): a task on a pool that "
        "does not exist never runs; a value that changes at every parse (`datetime.now()` in a "
        "constructor) makes a new DAG version each time. Fix the DAG file; Airflow clears the warning "
        "at the file's next parse.",
        about="dag",
    ),
    Rule(
        "asset-unproduced",
        CONFORMANCE,
        Severity.WARNING,
        "Asset is consumed but no DAG in this deployment produces it — an ungoverned upstream "
        "dependency whose freshness orchestration cannot see.",
        "Declare the asset as an outlet of the task that writes it, or, if another system writes it, "
        "record that producer (an external DAG or a waiver stating who owns it).",
        about="asset",
    ),
    Rule(
        "asset-conflict",
        CONFORMANCE,
        Severity.WARNING,
        "Asset shares its URI or its name with another asset — Airflow keeps only one of them active, "
        "and the refused one's producers and readers lose their lineage.",
        "Give each asset one URI and one name across the deployment: rename the refused asset, or point "
        "its DAGs at the active one. Airflow's own DAG warning on the refused asset's DAGs says the same.",
        about="asset",
    ),
    Rule(
        "paused-producer",
        CONFORMANCE,
        Severity.WARNING,
        "Every producer of this asset is paused while active DAGs still consume it — "
        "consumers will silently run on stale data.",
        "Unpause a producer, or pause the consumers too, or move them to another source: "
        "while every producer is paused the consumers' inputs never refresh.",
        about="asset",
    ),
    Rule(
        "dag-link-missing",
        CONFORMANCE,
        Severity.WARNING,
        "Task triggers, or waits on, a DAG the estate does not have — the trigger fails, or the sensor "
        "waits until it times out.",
        "Correct the DAG id the task names (`trigger_dag_id`, `external_dag_id`), or deploy the DAG it "
        "names; a DAG renamed or deleted leaves every trigger and sensor that names it broken.",
        about="task",
    ),
    Rule(
        "dag-link-paused",
        CONFORMANCE,
        Severity.WARNING,
        "An active DAG triggers, or waits on, a paused DAG — the triggered runs queue without running, "
        "or the sensor waits on runs that never come.",
        "Unpause the DAG the detail names, or pause the DAG whose task links to it too: while it is "
        "paused, the link holds up the active DAG.",
        about="task",
    ),
    Rule(
        "examples-loaded",
        CONFORMANCE,
        Severity.INFO,
        "Airflow's example DAGs are loaded — they are Airflow's code, not the team's, so they get no "
        "findings of their own.",
        "Set `[core] load_examples = False` (AIRFLOW__CORE__LOAD_EXAMPLES=False) on production "
        "deployments: the examples add DAGs nobody owns to the estate.",
        about="bundle",
    ),
    Rule(
        "asset-stale",
        FRESHNESS,
        Severity.WARNING,
        "Asset has not been updated for longer than its producers' schedule allows — active consumers "
        "are reading stale data.",
        "Look at the producers named in the detail: a run that failed, a DAG the scheduler stopped "
        "running (an overdue next run), or a task that no longer emits the asset. If the asset is "
        "meant to update less often, tag its producer `coremodels:stale-tolerance=N` (N cadences).",
        about="asset",
    ),
    Rule(
        "producer-failing",
        FRESHNESS,
        Severity.WARNING,
        "Every active producer of this asset failed its latest run — active consumers will run on "
        "stale data.",
        "Fix the producers' failing runs (their logs say why) and re-run them, or pause the consumers "
        "until the asset is fresh again.",
        about="asset",
    ),
    Rule(
        "dataset-unmapped",
        COVERAGE,
        Severity.INFO,
        "Dataset is not in the baseline — it is new since the governed snapshot.",
        "A DAG or asset appeared since the baseline snapshot. Review it and accept the new snapshot "
        "as the baseline once it is governed.",
        about="dataset",
    ),
    Rule(
        "field-unmapped",
        COVERAGE,
        Severity.INFO,
        "Task is not in the baseline — it is new since the governed snapshot.",
        "A task appeared in a DAG since the baseline snapshot. Review it and accept the new snapshot "
        "as the baseline once it is governed.",
        about="task",
    ),
    Rule(
        "lineage-added",
        COVERAGE,
        Severity.INFO,
        "Lineage edge is not in the baseline — a DAG now produces or reads an asset it did not.",
        "A DAG started producing or consuming an asset since the baseline snapshot (both were already "
        "there). Review it and accept the new snapshot as the baseline once it is governed.",
        about="edge",
    ),
    Rule(
        "dataset-removed",
        DRIFT,
        Severity.WARNING,
        "Dataset is in the baseline but gone from the estate.",
        "A DAG or asset of the baseline is gone. If that was intended, accept the new snapshot as the "
        "baseline; otherwise check the DAG's import errors and its bundle.",
        about="dataset",
    ),
    Rule(
        "field-removed",
        DRIFT,
        Severity.WARNING,
        "Task is in the baseline but gone from its DAG.",
        "A task of the baseline is gone from a DAG that is still present. Check downstream consumers "
        "that relied on it before accepting the new baseline.",
        about="task",
    ),
    Rule(
        "field-type-drift",
        DRIFT,
        Severity.WARNING,
        "Task's operator class changed since the baseline.",
        "A task now runs a different operator class than in the baseline; what it produces may have "
        "changed with it.",
        about="task",
    ),
    Rule(
        "lineage-removed",
        DRIFT,
        Severity.WARNING,
        "Lineage edge of the baseline is gone — a DAG no longer produces or reads an asset it did.",
        "A DAG of the baseline stopped producing or consuming an asset of the baseline (both are still "
        "there). If a consumer moved to another asset, or a producer dropped an outlet, check the "
        "DAGs on the other side before accepting the new baseline.",
        about="edge",
    ),
    Rule(
        "waiver-expired",
        WAIVERS,
        Severity.WARNING,
        "Waiver has expired — the findings it covered count again until it is renewed or removed.",
        "Renew the waiver with a new `expires` date and a current reason, or remove it and fix the "
        "findings it covered.",
        about="waiver",
    ),
)

BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
MESSAGES: dict[str, str] = {rule.code: rule.message for rule in RULES}
#: Codes a waiver may name: every rule's, except the one that reports an expired waiver.
WAIVABLE: tuple[str, ...] = tuple(rule.code for rule in RULES if rule.section != WAIVERS)


def catalogue(document: Mapping[str, Any] | None = None) -> dict[str, Rule]:
    """Every rule a document's findings may name, by code: the built-in ones, then the policy rules
    the document records (``policy.rules``, as ``policy.policy_json`` wrote them). Read leniently:
    an entry this version cannot read is left out, and its findings are shown as any unknown
    code's are."""
    rules = dict(BY_CODE)
    part = document.get("policy") if isinstance(document, Mapping) else None
    entries = part.get("rules") if isinstance(part, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        rule = _policy_rule(entry)
        if rule is not None and rule.code not in rules:
            rules[rule.code] = rule
    return rules


def _policy_rule(entry: Any) -> Rule | None:
    if not isinstance(entry, Mapping):
        return None
    code, severity, message, help_text, about = (
        entry.get(key) for key in ("code", "severity", "message", "help", "about")
    )
    if not (isinstance(code, str) and is_policy_code(code)) or severity not in _RANK:
        return None
    if not isinstance(message, str) or not isinstance(help_text, str) or about not in ("dag", "task"):
        return None
    return Rule(code, POLICY, Severity(severity), message, help_text, about=about)


def make_finding(code: str, subject: str, detail: str | None = None) -> Finding:
    """A finding of ``code``, its section, severity and message as the catalogue declares them."""
    rule = BY_CODE[code]
    return Finding(rule.section, rule.severity, code, subject, rule.message, detail)
