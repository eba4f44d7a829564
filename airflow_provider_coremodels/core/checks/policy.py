"""The team's own rules: a rules file read and checked, then run over the captured estate.

A platform team writes its conventions once (every production DAG carries a ``team:`` tag, owners
come from the team directory, every task retries), and every capture is checked against them:
whatever wrote the DAGs, the estate is what the deployment really runs. Each rule has a ``code``
(``policy-...``), a severity, a message, exactly one check (``require``) and an optional scope
(``where``); a rule that does not hold for a DAG (or, for a task check, a task) is a finding of
the section Policy, waivable, counted by ``--fail-on`` and shown in every view like the others.

The file is refused whole, before anything is captured, when any rule is malformed: the error
names the rule's index and key (``rules[2].require.dag_id``). It is read by the reader every
hand-written file shares (``team_files``), so anchors, aliases and deep nesting are refused as
in a waiver file. A regex is compiled by ``linear_regex`` (Python's meaning, matched by RE2),
which matches in linear time within a memory budget or refuses the pattern; globs are
``fnmatch``'s, which match in linear time since Python 3.9.

The checks run in time linear in the estate: one pass over the DAGs (and their tasks) per rule,
each answer for a repeated value (a tag, a bundle) worked out once.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import msgspec

from airflow_provider_coremodels.core.checks.linear_regex import PatternError, WholeMatch, compile_whole
from airflow_provider_coremodels.core.checks.team_files import quote, read_team_file, unknown_keys
from airflow_provider_coremodels.core.checks.teams import Teams, teams_from_value
from airflow_provider_coremodels.core.estate.findings import Finding, Severity
from airflow_provider_coremodels.core.estate.model import MAX_ACTIVE_RUNS_KEY, RETRIES_KEY, Dataset
from airflow_provider_coremodels.core.estate.rules import (
    BY_CODE,
    MAX_CODE_CHARS,
    POLICY,
    POLICY_PREFIX,
    SEVERITY_ORDER,
    is_policy_code,
)
from airflow_provider_coremodels.core.reading.cadence import cadence
from airflow_provider_coremodels.core.reading.deadlines import deadlines
from airflow_provider_coremodels.core.reading.deadlines import describe as describe_alert
from airflow_provider_coremodels.core.reading.merge import DEPLOYMENT_KEY
from airflow_provider_coremodels.errors import RulesFileError

T = TypeVar("T")
#: The most errors one refusal lists (a file with more says how many more): a line a person reads.
MAX_ERRORS_SAID = 10

RULE_KEYS = ("code", "severity", "message", "help", "require", "where")
#: The longest glob, message and help text a rule may give.
MAX_GLOB_CHARS = 250
MAX_MESSAGE_CHARS = 300
MAX_HELP_CHARS = 2000
#: The most names an ``owner_in`` or ``task_operator_not_in`` list may hold, and the largest bound.
MAX_NAMES = 10_000
MAX_BOUND = 1_000_000
_SEVERITIES = {severity.value.lower(): severity for severity in SEVERITY_ORDER}


def _fail(where: str, problem: str) -> RulesFileError:
    return RulesFileError(f"{where} {problem}")


# -- what a check sees of a DAG ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DagView:
    """A DAG as the checks read it: ``subject`` is its identity in the estate (``<deployment>/<dag_id>``
    in a merged one), ``dag_id`` what Airflow calls it."""

    dataset: Dataset
    dag_id: str
    deployment: str | None

    @property
    def subject(self) -> str:
        return self.dataset.identity

    @property
    def owners(self) -> list[str]:
        return [owner for owner in self.dataset.metadata.get("airflow.owners", "").split(",") if owner]


def _names(items: Iterable[str], most: int = 5) -> str:
    shown = list(items)
    return ", ".join(shown[:most]) + (f" and {len(shown) - most} more" if len(shown) > most else "")


class _Glob:
    """A glob compiled once (``fnmatch.fnmatchcase``'s meaning), each answer kept per text."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._match = re.compile(fnmatch.translate(pattern)).match
        self._seen: dict[str, bool] = {}

    def __call__(self, text: str) -> bool:
        seen = self._seen.get(text)
        if seen is None:
            seen = self._seen[text] = self._match(text) is not None
        return seen


def _glob(value: Any, where: str) -> _Glob:
    if not isinstance(value, str) or not value:
        raise _fail(where, "must be a non-empty glob (a string such as team:*)")
    if len(value) > MAX_GLOB_CHARS:
        raise _fail(where, f"is {len(value)} characters long, over the {MAX_GLOB_CHARS}-character limit")
    return _Glob(value)


def _text(value: Any, where: str, most: int = MAX_GLOB_CHARS) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, "must be a non-empty string")
    if len(value) > most:
        raise _fail(where, f"is {len(value)} characters long, over the {most}-character limit")
    return value.strip()


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(where, f"must be true or false, got {quote(value)}")
    return value


def _count(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_BOUND:
        raise _fail(where, f"must be a whole number from {least} to {MAX_BOUND:,}, got {quote(value)}")
    return value


def _name_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _fail(where, "must be a non-empty list of names")
    if len(value) > MAX_NAMES:
        raise _fail(where, f"lists {len(value):,} names, over the {MAX_NAMES:,}-name limit")
    return tuple(_text(item, f"{where}[{i}]") for i, item in enumerate(value))


# -- the checks (require) ---------------------------------------------------------------------


class Check:
    """One ``require`` check. A DAG check says why a DAG fails it (its detail), a task check which
    tasks fail it; either may say that it could not tell (``unknown``), and the reason is counted."""

    key: ClassVar[str]
    about: ClassVar[str] = "dag"
    #: Why a DAG or task could not be checked, when the estate does not say what the check reads.
    unknown: ClassVar[str | None] = None

    def value(self) -> Any:
        """The check's value as the file gave it, normalised (for the document and the digest)."""
        raise NotImplementedError

    def describe(self) -> str:
        """When the check holds, as a sentence's body: for the help text and the docs."""
        raise NotImplementedError

    def message(self) -> str:
        """The default message of a finding: what is wrong, in one sentence."""
        raise NotImplementedError

    def failing(self, dag: DagView) -> str | None:
        """The detail of a DAG that fails the check, None when it holds; ``UNKNOWN`` when it cannot tell."""
        raise NotImplementedError

    def failing_tasks(self, dag: DagView) -> Iterator[tuple[str, str | None]]:
        """For a task check: each task that fails it, with its detail (``UNKNOWN``: it cannot tell)."""
        raise NotImplementedError


#: What ``failing`` answers when the estate does not say what a check reads.
UNKNOWN = "\0unknown"


@dataclass(frozen=True, eq=False)
class Tag(Check):
    """``tag: GLOB``: at least one of the DAG's tags matches."""

    key: ClassVar[str] = "tag"
    glob: _Glob

    def value(self) -> Any:
        return self.glob.pattern

    def describe(self) -> str:
        return f"at least one of the DAG's tags matches {self.glob.pattern}"

    def message(self) -> str:
        return f"DAG has no tag matching {self.glob.pattern}."

    def failing(self, dag: DagView) -> str | None:
        tags = dag.dataset.tags
        if any(self.glob(tag) for tag in tags):
            return None
        return f"tags: {_names(tags, 10)}" if tags else "tags: none"


@dataclass(frozen=True, eq=False)
class OwnerIn(Check):
    """``owner_in: [NAME, ...]``: the DAG has owners, and every one is in the list."""

    key: ClassVar[str] = "owner_in"
    names: frozenset[str]
    listed: tuple[str, ...]
    #: The listed names that are teams of the rules file, with their owners (each stands for them).
    team_owners: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def value(self) -> Any:
        return list(self.listed)

    def describe(self) -> str:
        return f"the DAG has an owner and every owner is one of {_names(self.listed)}{self._teams_note()}"

    def _teams_note(self) -> str:
        named = [name for name in self.listed if name in self.team_owners]
        if not named:
            return ""
        many = len(named) > 1
        return f" (the team{'s' if many else ''} {_names(named)} by {'their' if many else 'its'} owners)"

    def message(self) -> str:
        return f"DAG has an owner outside the list ({_names(self.listed)}), or none."

    def failing(self, dag: DagView) -> str | None:
        owners = dag.owners
        outside = [owner for owner in owners if owner not in self.names]
        if owners and not outside:
            return None
        if not owners:
            return "owners: none"
        return f"owners: {_names(owners, 10)}; not in the list: {_names(outside, 10)}"


@dataclass(frozen=True, eq=False)
class DagId(Check):
    """``dag_id: REGEX``: the dag_id matches the regex whole (in a merged estate: the dag_id, not
    ``<deployment>/<dag_id>``)."""

    key: ClassVar[str] = "dag_id"
    regex: WholeMatch

    def value(self) -> Any:
        return self.regex.pattern

    def describe(self) -> str:
        return f"the dag_id matches the regex {self.regex.pattern} as a whole"

    def message(self) -> str:
        return f"DAG id does not match the naming pattern {self.regex.pattern}."

    def failing(self, dag: DagView) -> str | None:
        return None if self.regex(dag.dag_id) else f"dag_id: {dag.dag_id}"


@dataclass(frozen=True, eq=False)
class Schedule(Check):
    """``schedule: true``: the DAG has a schedule (time, assets or both; not manual only);
    ``schedule: false``: it has none (it runs only when triggered)."""

    key: ClassVar[str] = "schedule"
    scheduled: bool

    def value(self) -> Any:
        return self.scheduled

    def describe(self) -> str:
        if self.scheduled:
            return "the DAG has a schedule (a time, assets or both), not manual runs only"
        return "the DAG has no schedule: it runs only when triggered"

    def message(self) -> str:
        if self.scheduled:
            return "DAG has no schedule — it runs only when someone triggers it."
        return "DAG is scheduled, where the policy allows only triggered runs."

    def failing(self, dag: DagView) -> str | None:
        text = dag.dataset.metadata.get("airflow.schedule")
        manual = cadence(text).kind == "manual"
        if manual != self.scheduled:
            return None
        return "schedule: none" if manual else f"schedule: {text}"


@dataclass(frozen=True, eq=False)
class DescriptionMin(Check):
    """``description_min: N``: the DAG's description is at least N characters long (white space at
    either end not counted; a ``doc_md`` does not count, since the API gives no text of it)."""

    key: ClassVar[str] = "description_min"
    least: int

    def value(self) -> Any:
        return self.least

    def describe(self) -> str:
        return f"the DAG's description is at least {self.least} characters long"

    def message(self) -> str:
        return f"DAG's description is shorter than {self.least} characters — too short to say what it is for."

    def failing(self, dag: DagView) -> str | None:
        length = len((dag.dataset.description or "").strip())
        if length >= self.least:
            return None
        return f"description: {length} characters" if length else "description: none"


@dataclass(frozen=True, eq=False)
class MaxActiveRunsMax(Check):
    """``max_active_runs_max: N``: the DAG allows at most N runs at once (``max_active_runs``)."""

    key: ClassVar[str] = "max_active_runs_max"
    unknown: ClassVar[str | None] = "max_active_runs unknown"
    most: int

    def value(self) -> Any:
        return self.most

    def describe(self) -> str:
        return f"the DAG's max_active_runs is at most {self.most}"

    def message(self) -> str:
        return f"DAG allows more than {self.most} active runs at once."

    def failing(self, dag: DagView) -> str | None:
        text = dag.dataset.metadata.get(MAX_ACTIVE_RUNS_KEY)
        if text is None or not text.isdigit():
            return UNKNOWN
        return None if int(text) <= self.most else f"max_active_runs: {text}"


@dataclass(frozen=True, eq=False)
class TasksMax(Check):
    """``tasks_max: N``: the DAG has at most N tasks."""

    key: ClassVar[str] = "tasks_max"
    most: int

    def value(self) -> Any:
        return self.most

    def describe(self) -> str:
        return f"the DAG has at most {self.most} tasks"

    def message(self) -> str:
        return f"DAG has more than {self.most} tasks — split it, or raise the bound for it."

    def failing(self, dag: DagView) -> str | None:
        count = len(dag.dataset.fields)
        return None if count <= self.most else f"tasks: {count}"


@dataclass(frozen=True, eq=False)
class TaskRetriesMin(Check):
    """``task_retries_min: N``: every task of the DAG retries at least N times."""

    key: ClassVar[str] = "task_retries_min"
    about: ClassVar[str] = "task"
    unknown: ClassVar[str | None] = "retries unknown"
    least: int

    def value(self) -> Any:
        return self.least

    def describe(self) -> str:
        return f"every task of the DAG retries at least {self.least} time{'s' if self.least != 1 else ''}"

    def message(self) -> str:
        times = f"{self.least} time{'s' if self.least != 1 else ''}"
        return f"Task retries fewer than {times} — one failure fails its run."

    def failing_tasks(self, dag: DagView) -> Iterator[tuple[str, str | None]]:
        for task in dag.dataset.fields:
            text = task.metadata.get(RETRIES_KEY)
            if text is None or not text.isdigit():
                yield task.name, UNKNOWN
            elif int(text) < self.least:
                yield task.name, f"retries: {text}"


@dataclass(frozen=True, eq=False)
class TaskOperatorNotIn(Check):
    """``task_operator_not_in: [NAME, ...]``: no task of the DAG runs one of these operator classes."""

    key: ClassVar[str] = "task_operator_not_in"
    about: ClassVar[str] = "task"
    names: frozenset[str]
    listed: tuple[str, ...]

    def value(self) -> Any:
        return list(self.listed)

    def describe(self) -> str:
        return f"no task of the DAG runs {_names(self.listed)}"

    def message(self) -> str:
        return "Task runs an operator the policy forbids."

    def failing_tasks(self, dag: DagView) -> Iterator[tuple[str, str | None]]:
        for task in dag.dataset.fields:
            if task.native_type in self.names:
                yield task.name, f"operator: {task.native_type}"


@dataclass(frozen=True, eq=False)
class Deadline(Check):
    """``deadline: true``: the DAG has a deadline alert (``DAG(deadline=...)``); ``deadline: false``:
    it has none. Known only where the capture could read the alerts (Airflow 3.3+, or the DAG-folder
    parse on 3.3+): elsewhere the DAG is not judged, and counted as not checked."""

    key: ClassVar[str] = "deadline"
    unknown: ClassVar[str | None] = "deadline alerts unknown"
    wanted: bool

    def value(self) -> Any:
        return self.wanted

    def describe(self) -> str:
        if self.wanted:
            return "the DAG has a deadline alert (DAG(deadline=...))"
        return "the DAG has no deadline alert"

    def message(self) -> str:
        if self.wanted:
            return "DAG has no deadline alert — a late or stuck run tells no one."
        return "DAG has a deadline alert, where the policy allows none."

    def failing(self, dag: DagView) -> str | None:
        alerts = deadlines(dag.dataset.metadata)
        if alerts is None:
            return UNKNOWN
        if bool(alerts) == self.wanted:
            return None
        return "deadline alerts: " + ("; ".join(describe_alert(a) for a in alerts[:5]) or "none")


def _build_check(key: str, value: Any, where: str, teams: Teams | None = None) -> Check:
    if key == "tag":
        return Tag(_glob(value, where))
    if key == "owner_in":
        # a name that is a team of the file stands for its owners too (and still for itself)
        names = _name_list(value, where)
        team_owners = {
            name: team.owners for name in names if teams is not None and (team := teams.get(name)) is not None
        }
        allowed = frozenset(names).union(*team_owners.values())
        return OwnerIn(allowed, names, team_owners)
    if key == "task_operator_not_in":
        names = _name_list(value, where)
        return TaskOperatorNotIn(frozenset(names), names)
    if key == "dag_id":
        if not isinstance(value, str) or not value:
            raise _fail(where, "must be a non-empty regex (a string)")
        try:
            return DagId(compile_whole(value))
        except PatternError as exc:
            raise _fail(where, f"{quote(value)} {exc}") from None
    if key == "schedule":
        return Schedule(_flag(value, where))
    if key == "deadline":
        return Deadline(_flag(value, where))
    if key == "task_retries_min":
        return TaskRetriesMin(_count(value, where, 0))
    if key == "description_min":
        return DescriptionMin(_count(value, where, 1))
    if key == "max_active_runs_max":
        return MaxActiveRunsMax(_count(value, where, 1))
    return TasksMax(_count(value, where, 1))


#: Every check a rule may require, by key, in the order the docs list them.
CHECKS = (
    "tag",
    "owner_in",
    "dag_id",
    "schedule",
    "task_retries_min",
    "description_min",
    "max_active_runs_max",
    "tasks_max",
    "task_operator_not_in",
    "deadline",
)


# -- the scope (where) ------------------------------------------------------------------------

WHERE_KEYS = ("tag", "dag_id", "bundle", "deployment", "paused")


@dataclass(frozen=True, eq=False)
class Scope:
    """Which DAGs a rule applies to: every condition given must hold (none: every DAG of the team)."""

    tag: _Glob | None = None
    dag_id: _Glob | None = None
    bundle: str | None = None
    deployment: str | None = None
    paused: bool | None = None

    def applies(self, dag: DagView) -> bool:
        if self.tag is not None and not any(self.tag(tag) for tag in dag.dataset.tags):
            return False
        if self.dag_id is not None and not self.dag_id(dag.dag_id):
            return False
        if self.bundle is not None and dag.dataset.metadata.get("airflow.bundle") != self.bundle:
            return False
        if self.deployment is not None and dag.deployment != self.deployment:
            return False
        return self.paused is None or dag.dataset.paused == self.paused

    def value(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in WHERE_KEYS:
            given = getattr(self, key)
            if given is not None:
                out[key] = given.pattern if isinstance(given, _Glob) else given
        return out

    def describe(self) -> str:
        parts = []
        if self.paused is not None:
            parts.append("paused DAGs" if self.paused else "active (unpaused) DAGs")
        else:
            parts.append("DAGs")
        if self.tag is not None:
            parts.append(f"tagged {self.tag.pattern}")
        if self.dag_id is not None:
            parts.append(f"whose dag_id matches {self.dag_id.pattern}")
        if self.bundle is not None:
            parts.append(f"in the bundle {self.bundle}")
        if self.deployment is not None:
            parts.append(f"of the deployment {self.deployment}")
        return " ".join(parts)


def _scope(value: Any, where: str) -> Scope:
    if value is None:
        return Scope()
    if not isinstance(value, dict):
        raise _fail(where, f"must be a mapping of {', '.join(WHERE_KEYS)}")
    if unknown := unknown_keys(value, WHERE_KEYS):
        raise _fail(where, unknown)
    return Scope(
        tag=_glob(value["tag"], f"{where}.tag") if "tag" in value else None,
        dag_id=_glob(value["dag_id"], f"{where}.dag_id") if "dag_id" in value else None,
        bundle=_text(value["bundle"], f"{where}.bundle") if "bundle" in value else None,
        deployment=_text(value["deployment"], f"{where}.deployment") if "deployment" in value else None,
        paused=_flag(value["paused"], f"{where}.paused") if "paused" in value else None,
    )


# -- a rule and a rules file ------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PolicyRule:
    """One rule of a rules file: a code, a severity, a message and help, one check, a scope."""

    code: str
    severity: Severity
    message: str
    help: str
    check: Check
    scope: Scope

    @property
    def about(self) -> str:
        return self.check.about

    def json(self) -> dict[str, Any]:
        """The rule as the snapshot document records it (``catalogue`` reads it back for the views)."""
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "help": self.help,
            "about": self.about,
            "require": {self.check.key: self.check.value()},
        }
        if where := self.scope.value():
            out["where"] = where
        return out


@dataclass(frozen=True, eq=False)
class Policy:
    """The rules of one rules file, in file order; ``digest`` tells two rule sets apart."""

    rules: tuple[PolicyRule, ...]
    #: The file's ``teams`` (``core/checks/teams.py``), None when it names none.
    teams: Teams | None = None
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        said: Any = [rule.json() for rule in self.rules]
        if self.teams is not None:  # a file without teams keeps the digest it always had
            said = {"rules": said, "teams": self.teams.json()}
        body = msgspec.json.encode(said, order="sorted")
        object.__setattr__(self, "digest", hashlib.sha256(body).hexdigest()[:16])


def parse_rules(data: bytes | str) -> Policy:
    """Read a rules file: ``{"rules": [...]}`` or a list of rules. Raises RulesFileError."""
    value = read_team_file(data, kind="rules file", needs="six", error=RulesFileError)
    if value is None:
        return Policy(())  # an empty file has no rules
    return rules_from_value(value)


def rules_from_value(value: Any) -> Policy:
    """Check rules given as plain data: a parsed file, or the operators' ``rules`` argument.

    Every rule is checked, and every part of each, before the file is refused: one error is said
    as it is, several in one message (``has 3 errors: rules[0] ...; rules[2] ...``), so that a
    person fixes the file in one pass, and the command line still says it in one line."""
    teams = None
    if isinstance(value, dict):
        if unknown := unknown_keys(value, ("rules", "teams")):
            raise RulesFileError(unknown)
        if "teams" in value:
            teams = teams_from_value(value["teams"])
        value = value.get("rules", [] if teams is not None else None)
    if not isinstance(value, list):
        raise RulesFileError('must be a list of rules (or {"rules": [...]})')
    rules: list[PolicyRule] = []
    errors: list[str] = []
    first_of: dict[str, int] = {}
    for i, entry in enumerate(value):
        rule = _rule(entry, f"rules[{i}]", errors, teams)
        code = entry.get("code") if isinstance(entry, dict) else None
        if not isinstance(code, str) or not is_policy_code(code):
            pass  # said by _rule
        elif code in first_of:
            errors.append(f"rules[{i}].code {code} repeats the code of rules[{first_of[code]}]")
        else:
            first_of[code] = i
        if rule is not None:
            rules.append(rule)
    if len(errors) == 1:
        raise RulesFileError(errors[0])
    if errors:
        listed = "; ".join(errors[:MAX_ERRORS_SAID])
        more = f"; and {len(errors) - MAX_ERRORS_SAID} more" if len(errors) > MAX_ERRORS_SAID else ""
        raise RulesFileError(f"has {len(errors)} errors: {listed}{more}")
    return Policy(tuple(rules), teams)


def _rule(entry: Any, where: str, errors: list[str], teams: Teams | None = None) -> PolicyRule | None:
    """One rule, or None with each of its problems added to ``errors`` (its parts are checked
    apart: a rule's unknown key does not hide its bad severity)."""
    if not isinstance(entry, dict):
        errors.append(f"{where} must be a mapping with code and require (and severity, message, help, where)")
        return None
    before = len(errors)
    if unknown := unknown_keys(entry, RULE_KEYS):
        errors.append(f"{where} {unknown}")
    code = _part(errors, _code, entry.get("code"), f"{where}.code")
    severity = _part(errors, _severity, entry.get("severity", Severity.WARNING.value), f"{where}.severity")
    check = _part(errors, _require, entry.get("require"), f"{where}.require", teams)
    scope = _part(errors, _scope, entry.get("where"), f"{where}.where")
    message = help_text = None
    if "message" in entry:
        message = _part(errors, _text, entry["message"], f"{where}.message", MAX_MESSAGE_CHARS)
    if "help" in entry:
        help_text = _part(errors, _text, entry["help"], f"{where}.help", MAX_HELP_CHARS)
    if len(errors) > before:
        return None
    assert code is not None and severity is not None and check is not None and scope is not None
    return PolicyRule(
        code,
        severity,
        message if message is not None else check.message(),
        help_text if help_text is not None else _default_help(check, scope),
        check,
        scope,
    )


def _part(errors: list[str], read: Callable[..., T], *args: Any) -> T | None:
    """``read(*args)``, or None with its problem added to ``errors``."""
    try:
        return read(*args)
    except RulesFileError as exc:
        errors.append(exc.problem)
        return None


def _code(code: Any, where: str) -> str:
    if not isinstance(code, str) or not code:
        raise _fail(where, "must be a non-empty string starting with policy-")
    if not code.startswith(POLICY_PREFIX):
        raise _fail(where, f"{quote(code)} must start with {POLICY_PREFIX}")
    if not is_policy_code(code) or code in BY_CODE:
        raise _fail(
            where,
            f"{quote(code)} must be {POLICY_PREFIX} then lowercase letters, digits and single hyphens, "
            f"at most {MAX_CODE_CHARS} characters",
        )
    return code


def _severity(value: Any, where: str) -> Severity:
    severity = _SEVERITIES.get(value.strip().lower()) if isinstance(value, str) else None
    if severity is None:
        raise _fail(where, f"{quote(value)} is not a severity; expected Info, Warning or Error")
    return severity


def _require(value: Any, where: str, teams: Teams | None = None) -> Check:
    if not isinstance(value, dict) or not value:
        raise _fail(where, f"must be a mapping naming exactly one check: {', '.join(CHECKS)}")
    if unknown := unknown_keys(value, CHECKS):
        raise _fail(where, unknown)
    if len(value) > 1:
        raise _fail(where, f"names {len(value)} checks ({', '.join(sorted(value))}); a rule has exactly one")
    ((key, given),) = value.items()
    return _build_check(key, given, f"{where}.{key}", teams)


def _default_help(check: Check, scope: Scope) -> str:
    return (
        f"A rule of the team's rules file: for {scope.describe()}, it holds when {check.describe()}. "
        "Fix the DAG, or waive the finding with a reason in the waiver file."
    )


# -- running the rules ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PolicyStatus:
    """How the rules ran: which (``policy``, None when none ran, with ``reason`` saying why) and what
    could not be checked, by reason (``{"retries unknown": 3}``: three tasks)."""

    policy: Policy | None
    not_checked: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None


def check_policy(
    dags: Iterable[Dataset], policy: Policy, deployment: str | None = None
) -> tuple[list[Finding], PolicyStatus]:
    """Run every rule over ``dags`` (the team's DAGs: Airflow's example bundles are left out by the
    caller); ``deployment`` is the estate's own (a merged DAG names its own in its metadata)."""
    views = [DagView(d, d.maps_to or d.identity, d.metadata.get(DEPLOYMENT_KEY) or deployment) for d in dags]
    findings: list[Finding] = []
    unknown: dict[str, set[str]] = defaultdict(set)
    for rule in policy.rules:
        findings.extend(_run(rule, views, unknown))
    counts = {reason: len(items) for reason, items in sorted(unknown.items())}
    return findings, PolicyStatus(policy, counts)


def _run(rule: PolicyRule, views: list[DagView], unknown: dict[str, set[str]]) -> Iterator[Finding]:
    check, applies = rule.check, rule.scope.applies

    def make(subject: str, detail: str) -> Finding:
        return Finding(POLICY, rule.severity, rule.code, subject, rule.message, detail)

    if check.about == "task":
        for dag in views:
            if applies(dag):
                for task, detail in check.failing_tasks(dag):
                    subject = f"{dag.subject}.{task}"
                    if detail == UNKNOWN:
                        unknown[check.unknown or "unknown"].add(subject)
                    else:
                        yield make(subject, detail or "")
        return
    for dag in views:
        if applies(dag):
            detail = check.failing(dag)
            if detail == UNKNOWN:
                unknown[check.unknown or "unknown"].add(dag.subject)
            elif detail is not None:
                yield make(dag.subject, detail)


def policy_json(status: PolicyStatus) -> dict[str, Any]:
    """The document's ``policy`` part: the rules' digest and what each is (for the views), and what
    could not be checked; or why no rules ran."""
    if status.policy is None:
        return {"digest": None, "rules": [], "notChecked": {}, "reason": status.reason}
    out: dict[str, Any] = {
        "digest": status.policy.digest,
        "rules": [rule.json() for rule in status.policy.rules],
        "notChecked": dict(status.not_checked),
    }
    if status.policy.teams is not None:  # the teams findings were assigned to (core/checks/teams.py)
        out["teams"] = status.policy.teams.json()
    return out
