"""Telling people: metrics through Airflow's own ``Stats``, and notifiers on new findings.

Both run after the push, and neither can cost the snapshot anything: a metrics backend that is
down or a notifier that fails is logged (an error line naming it) and the export goes on; a
notifier that does not return within its deadline is abandoned (a warning line naming it).

Metrics (``docs/alerts.md`` lists them): every value is sent once under a plain name with
tags (``deployment``, ``severity``, ``code``), for DogStatsD and OpenTelemetry, and once more
under a name that carries those values (``coremodels.findings.open.<deployment>.<severity>``),
as Airflow's own legacy names do, for a StatsD that takes no tags; ``[metrics] legacy_names_on
= False`` leaves those out.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import logging
import os
import re
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.core.checks.teams import EVERY_TEAM, UNOWNED, document_teams, of_team
from airflow_provider_coremodels.core.estate.rules import FAIL_ON, SEVERITY_ORDER
from airflow_provider_coremodels.core.reading.freshness import positive_number
from airflow_provider_coremodels.core.reading.owner_links import owners_of
from airflow_provider_coremodels.core.views.render import display_names
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.io.input_files import Unreadable, read_bounded
from airflow_provider_coremodels.redaction import SECRETS, scrub_credentials

if TYPE_CHECKING:
    from airflow_provider_coremodels.jobs.export import ExportResult

log = logging.getLogger(__name__)

PREFIX = "coremodels"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def name_part(value: str) -> str:
    """A value as one part of a dotted metric name: dots and anything StatsD would split on are ``_``."""
    return _UNSAFE.sub("_", value) or "_"


def metrics(result: ExportResult, deployment: str) -> list[tuple[str, str, float, dict[str, str]]]:
    """``(kind, name, value, tags)`` for each metric of one export: what ``send_metrics`` sends."""
    changes = result.changes
    base = {"deployment": deployment}
    out: list[tuple[str, str, float, dict[str, str]]] = []
    severities = [s.value for s in SEVERITY_ORDER]
    severities += sorted(set(changes.by_severity) - set(severities))
    for severity in severities:  # every severity, 0 included, so a gauge falls back when findings close
        out.append(
            ("gauge", "findings.open", changes.by_severity.get(severity, 0), {**base, "severity": severity})
        )
    by_code: dict[tuple[str, str], int] = {}
    for finding in (*changes.resolved, *changes.waived):  # closed codes are set back to 0
        by_code.setdefault((str(finding["severity"]), str(finding["code"])), 0)
    for finding in changes.open:
        key = (str(finding["severity"]), str(finding["code"]))
        by_code[key] = by_code.get(key, 0) + 1
    for (severity, code), count in sorted(by_code.items()):
        out.append(("gauge", "findings.open_by_code", count, {**base, "severity": severity, "code": code}))
    out.append(("gauge", "findings.new", len(changes.new), base))
    out.append(("gauge", "findings.resolved", len(changes.resolved), base))
    out.append(("gauge", "findings.waived", len(changes.waived), base))
    out.extend(team_metrics(result, base, severities))
    capture = result.capture
    out.append(("timing", "capture.duration", capture.seconds * 1000.0, base))
    out.append(("gauge", "capture.requests", capture.requests, base))
    out.append(("gauge", "capture.retries", capture.retries, base))
    out.append(("gauge", "sinks.failed", len(result.failed), base))
    return out


def team_metrics(
    result: ExportResult, base: Mapping[str, str], severities: Sequence[str]
) -> list[tuple[str, str, float, dict[str, str]]]:
    """Where the rules file names teams: each team's open findings per severity (0 included, so a
    gauge falls back) and its new ones, tagged ``team`` (``unowned``: no team's)."""
    teams = document_teams(result.document)
    if teams is None:
        return []
    changes = result.changes
    out: list[tuple[str, str, float, dict[str, str]]] = []
    for team in (*teams, UNOWNED):
        tags = {**base, "team": team}
        counts = Counter(str(f["severity"]) for f in of_team(changes.open, team))
        for severity in severities:
            out.append(
                ("gauge", "findings.team.open", counts.get(severity, 0), {**tags, "severity": severity})
            )
        out.append(("gauge", "findings.team.new", len(of_team(changes.new, team)), tags))
    return out


def legacy_name(name: str, tags: Mapping[str, str]) -> str:
    """``findings.open`` with its tags as name parts: ``findings.open.<deployment>.<severity>``
    (a team's: ``findings.team.open.<deployment>.<team>.<severity>``)."""
    parts = [tags[key] for key in ("deployment", "team", "severity", "code") if key in tags]
    return ".".join([name.replace("_by_code", ""), *map(name_part, parts)])


def send_metrics(
    result: ExportResult,
    deployment: str,
    stats: Any = None,
    *,
    legacy: bool | None = None,
    logger: Any = log,
) -> int:
    """Send one export's metrics through Airflow's ``Stats`` (``compat.airflow_stats``); returns how
    many values were sent. Never raises: a backend that fails is one error line on ``logger``
    (the task's log, in a task)."""
    try:
        if stats is None:
            if not metrics_may_be_on(os.environ):
                return 0
            from airflow_provider_coremodels.compat import airflow_stats

            stats = airflow_stats()
        if legacy is None:
            legacy = _legacy_names_on()
        sent = 0
        for kind, name, value, tags in metrics(result, deployment):
            names = [f"{PREFIX}.{name}"] + ([f"{PREFIX}.{legacy_name(name, tags)}"] if legacy else [])
            for metric in names:
                if kind == "timing":
                    stats.timing(metric, value, tags=tags)
                else:
                    stats.gauge(metric, value, tags=tags)
                sent += 1
        return sent
    except Exception as exc:  # metrics never cost the export anything
        logger.error("CoreModels metrics could not be sent: %s", _quoted(exc))
        return 0


#: An option of Airflow's configuration that could turn its metrics on: ``[metrics] statsd_on`` and
#: ``otel_on`` (and their ``_cmd``/``_secret`` forms), or any other StatsD or OpenTelemetry option.
_METRICS_OPTION = re.compile(r"^[ \t]*(statsd|otel)\w*[ \t]*[=:]", re.IGNORECASE | re.MULTILINE)
#: The same set in the environment, and anything else of ``[metrics]``.
_METRICS_VARIABLE = re.compile(r"AIRFLOW__(METRICS__|\w+?__(STATSD|OTEL))", re.IGNORECASE)
#: More than any airflow.cfg holds (Airflow's full default file is about 100 KB).
_CONFIG_MAX_BYTES = 4 * 1024 * 1024


def metrics_may_be_on(environ: Mapping[str, str], *, modules: Mapping[str, object] = sys.modules) -> bool:
    """Whether Airflow's configuration may turn its metrics on, known where possible without
    importing Airflow.

    Airflow's own default is off (``[metrics] statsd_on`` and ``otel_on`` are False), and outside an
    Airflow process (``python -m airflow_provider_coremodels export``) importing Airflow only to
    learn that would be most of the command's time (about 1.5 s of 2.3). So Airflow is asked (and
    imported) where it is loaded already (a task, ``airflow coremodels``), where an
    ``AIRFLOW__METRICS__*`` variable or any StatsD or OpenTelemetry one is set, and where its
    configuration file (``AIRFLOW_CONFIG``, else ``airflow.cfg`` in ``AIRFLOW_HOME``) sets such an
    option or cannot be read; elsewhere no configuration of Airflow's turns metrics on. ``modules``:
    the loaded modules (``sys.modules``).
    """
    if "airflow" in modules or any(_METRICS_VARIABLE.match(name) for name in environ):
        return True
    home = _expanded(environ.get("AIRFLOW_HOME") or "~/airflow")  # as Airflow expands them
    path = _expanded(environ.get("AIRFLOW_CONFIG") or os.path.join(home, "airflow.cfg"))
    if not os.path.lexists(path):
        return False
    try:
        text = read_bounded(path, _CONFIG_MAX_BYTES).decode("utf-8", "replace")
    except Unreadable:
        return True  # Airflow says what it makes of a file this cannot read
    return _METRICS_OPTION.search(text) is not None


def _expanded(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


def _legacy_names_on() -> bool:
    try:
        from airflow.configuration import conf

        return conf.getboolean("metrics", "legacy_names_on", fallback=True)
    except Exception:
        return True


def alert_context(result: ExportResult, page_url: str | None, team: str | None = None) -> dict[str, Any]:
    """What a notifier's templates see as ``coremodels``: the new and resolved findings (document
    form), a ready-made ``text``, the counts, the fingerprint, the page's link and the summary;
    ``team`` the team a routed notifier is told for (None: not routed by team)."""
    document = result.document
    deployment = document["state"].get("deployment")
    dag_ids = {d["identity"] for d in document.get("datasets") or () if d.get("materialization") == "dag"}
    changes = result.changes
    text = changes.text(deployment, display_names(document))
    return {
        "team": team,
        "deployment": deployment,
        "fingerprint": document["fingerprint"],
        "new_findings": [dict(f) for f in changes.new],
        "resolved_findings": [dict(f) for f in changes.resolved],
        "waived_findings": [dict(f) for f in changes.waived],
        "first_export": changes.first,
        "open": dict(changes.by_severity),
        "text": f"Team {team}: {text}" if team not in (None, EVERY_TEAM) else text,
        "page_url": page_url,
        "summary": result.summary(),
        # each DAG a new finding names (a broken file: the DAGs it held), with its owners and how to
        # reach them (where known)
        "owners": owners_of(document, _dags_named(changes.new, dag_ids, _broken_dags(document))),
    }


def _broken_dags(document: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each broken file (a ``dag-import-error`` subject) and the DAGs it last held."""
    return {
        str(e.get("file")): [str(d) for d in e.get("dags") or ()]
        for e in document.get("importErrors") or ()
        if isinstance(e, Mapping)
    }


def _dags_named(
    findings: Iterable[Mapping[str, Any]], dag_ids: set[str], broken: Mapping[str, list[str]]
) -> Iterator[str]:
    for finding in findings:
        subject = str(finding["subject"])
        if finding.get("code") == "dag-import-error" and subject in broken:
            yield from broken[subject]
        else:
            yield _dag_of(subject, dag_ids)


def checked_min_severity(value: Any) -> str:
    """An operator's ``notify_min_severity``: ``info``, ``warning`` or ``error`` (any case), as the
    severity it names (``Warning``); else a ``UsageError``."""
    severity = FAIL_ON.get(str(value).lower()) if isinstance(value, str) else None
    if severity is None:
        names = ", ".join(s.value.lower() for s in SEVERITY_ORDER)
        raise UsageError(f"notify_min_severity must be one of {names}, got {value!r}")
    return severity.value


def to_tell(
    result: ExportResult,
    *,
    min_severity: str = "Info",
    first_export: bool = False,
    logger: Any = log,
) -> ExportResult:
    """What the notifiers are told of one export: its new findings at ``min_severity`` and above, as
    one digest (the findings below are counted in its text, not listed). The first export, with no
    previous snapshot, records the baseline and tells nobody, unless ``first_export``: every open
    finding would be "new", and a first day is not news. That is one line on ``logger``.
    Metrics and the task's summary keep the whole of ``result.changes``."""
    changes = result.changes
    if changes.first and not first_export:
        logger.info(
            "first export (no previous snapshot): the baseline is recorded with %s open finding(s) "
            "and no notifier is called (notify_first_export=True would call them)",
            len(changes.new),
        )
        return dataclasses.replace(result, changes=dataclasses.replace(changes, new=(), resolved=()))
    return dataclasses.replace(result, changes=changes.at_least(min_severity))


def _dag_of(subject: str, dag_ids: set[str]) -> str:
    """The DAG a finding's subject names: itself, or the DAG of a ``dag_id.task_id``."""
    if subject in dag_ids:
        return subject
    head = subject
    while "." in head:
        head = head.rsplit(".", 1)[0]
        if head in dag_ids:
            return head
    return subject


@dataclass(frozen=True)
class Notified:
    """What became of each notifier of one export, by name, in the order they were called."""

    sent: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    abandoned: tuple[str, ...] = ()

    def line(self, deadline: float, team: str | None = None) -> str:
        """``notifiers: 3 called (deadline 10 s each): 1 sent, 1 failed, 1 abandoned``; routed by
        team, ``notifiers of team orders: ...`` (``of every team``, ``of the unowned findings``)."""
        called = len(self.sent) + len(self.failed) + len(self.abandoned)
        whose = {None: "", EVERY_TEAM: " of every team", UNOWNED: " of the unowned findings"}
        return (
            f"notifiers{whose.get(team, f' of team {team}')}: {called} called "
            f"(deadline {seconds(deadline)} s each): {len(self.sent)} sent, "
            f"{len(self.failed)} failed, {len(self.abandoned)} abandoned"
        )


def seconds(value: float) -> str:
    """``10``, ``0.5``: a deadline as the log writes it."""
    return f"{value:g}"


def checked_deadline(value: Any) -> float:
    """An operator's ``notifier_timeout``: a positive number of seconds, else a ``UsageError``."""
    deadline = positive_number(value)
    if deadline is None:
        raise UsageError(f"notifier_timeout must be a positive number of seconds, got {value!r}")
    return deadline


class _Call:
    """One notifier's call in a thread of its own; what it came to, unless it was abandoned first."""

    def __init__(self, notifier: Any, context: dict[str, Any]) -> None:
        self.notifier, self.context = notifier, context
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.abandoned = False
        self._lock = threading.Lock()

    def run(self) -> None:
        error: BaseException | None = None
        try:
            self.notifier(self.context)
        except BaseException as exc:  # SystemExit too: a thread would swallow it unseen
            error = exc
        finally:
            with self._lock:
                if not self.abandoned:  # a late outcome is nobody's: it was counted as abandoned
                    self.error = error
                    self.done.set()

    def wait(self, deadline: float) -> bool:
        """True when the call ended within ``deadline`` seconds; else it is abandoned for good."""
        if self.done.wait(deadline):
            return True
        with self._lock:
            if self.done.is_set():  # it ended between the wait and the lock
                return True
            self.abandoned = True
            return False


def notify(
    notifiers: Iterable[Any],
    context: Mapping[str, Any],
    result: ExportResult,
    page_url: str | None,
    *,
    deadline: float = defaults.NOTIFIER_TIMEOUT,
    logger: Any = log,
    team: str | None = None,
) -> Notified:
    """Call each notifier (``BaseNotifier``: ``SmtpNotifier``, ``SlackNotifier``, ...) with the task's
    context plus ``coremodels``, when there is a new finding, one after the other in their order.

    Each runs in a daemon thread of its own and is given ``deadline`` seconds: one that raises is
    an error line on ``logger`` (the task's log), one still running then is abandoned with a
    warning line, and the next one is called either way. A thread cannot be stopped, so an
    abandoned notifier runs on unseen until it returns or the process ends; being a daemon, it
    never keeps the process alive, and whatever it comes to later is not counted (not as sent).

    Each notifier is copied first: rendering its templates replaces them in place, and an
    operator (in ``dag.test()``, say) may run again.
    """
    notifiers = list(notifiers)
    if not notifiers or not result.changes.new:
        return Notified()
    outcomes: dict[str, list[str]] = {"sent": [], "failed": [], "abandoned": []}
    for notifier in notifiers:
        name = type(notifier).__name__
        call = _Call(copy.copy(notifier), {**context, "coremodels": alert_context(result, page_url, team)})
        # the caller's context variables (the task's, the log's) go with the call
        thread = threading.Thread(
            target=contextvars.copy_context().run, args=(call.run,), name=f"coremodels-notifier-{name}"
        )
        thread.daemon = True
        thread.start()
        if not call.wait(deadline):
            logger.warning(
                "CoreModels notifier %s did not return within %s s: abandoned", name, seconds(deadline)
            )
            outcomes["abandoned"].append(name)
        elif call.error is not None:
            exc = call.error
            logger.error("CoreModels notifier %s failed: %s", name, _quoted(exc))
            outcomes["failed"].append(name)
        else:
            outcomes["sent"].append(name)
    notified = Notified(**{key: tuple(names) for key, names in outcomes.items()})
    logger.info("%s", notified.line(deadline, team))
    return notified


def _quoted(exc: BaseException) -> str:
    """An error as the log quotes it: the run's own secrets and credential-shaped text removed
    (a notifier's error may quote its webhook URL or an SMTP server's answer); the task's logger is
    Airflow's, which scrubs only what its masker was told."""
    return scrub_credentials(SECRETS.scrub(f"{type(exc).__name__}: {exc}"))


def as_notifiers(value: Any) -> Sequence[Any]:
    """An operator's ``on_new_findings``: one notifier, a list of them, or None."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)


# -- routing by team ------------------------------------------------------------------------


def team_routes(value: Any, teams: Sequence[str] | None) -> dict[str, tuple[Any, ...]] | None:
    """An operator's ``on_new_findings`` given as a mapping of team names to notifiers (each value
    a notifier or a list, as the plain argument is): checked against the rules file's ``teams``
    (a ``UsageError`` before anything is captured); None when it is no mapping. ``*`` takes every
    new finding, whichever team's; ``unowned`` those of no team."""
    if not isinstance(value, Mapping):
        return None
    if teams is None:
        raise UsageError(
            "on_new_findings maps teams to notifiers, but the rules name no teams "
            "(give rules with a teams: part)"
        )
    routes: dict[str, tuple[Any, ...]] = {}
    for team, notifiers in value.items():
        if not isinstance(team, str) or team not in (*teams, UNOWNED, EVERY_TEAM):
            raise UsageError(
                f"on_new_findings names {team!r}, which is no team of the rules file; expected one of "
                f"{', '.join((*teams, UNOWNED, EVERY_TEAM))}"
            )
        routes[team] = tuple(as_notifiers(notifiers))
    return routes


def for_team(result: ExportResult, team: str) -> ExportResult:
    """The export as one team's notifiers see it: its open, new and resolved findings only
    (``*``: all of them)."""
    if team == EVERY_TEAM:
        return result
    changes = result.changes
    mine = tuple(of_team(changes.open, team))
    counts = Counter(str(f["severity"]) for f in mine)
    told = dataclasses.replace(
        changes,
        open=mine,
        new=tuple(of_team(changes.new, team)),
        resolved=tuple(of_team(changes.resolved, team)),
        waived=tuple(of_team(changes.waived, team)),
        by_severity=dict(sorted(counts.items())),
    )
    return dataclasses.replace(result, changes=told)


def notify_teams(
    routes: Mapping[str, Sequence[Any]],
    context: Mapping[str, Any],
    result: ExportResult,
    page_url: str | None,
    *,
    min_severity: str = "Info",
    deadline: float = defaults.NOTIFIER_TIMEOUT,
    logger: Any = log,
) -> dict[str, Notified]:
    """Each team's notifiers told of that team's new findings alone (``notify`` for each, in the
    mapping's order), as a digest at ``min_severity`` and above that counts the team's own findings
    below it; a team with none new is not told. What became of each team's notifiers."""
    notified = {}
    for team, notifiers in routes.items():
        mine = for_team(result, team)
        mine = dataclasses.replace(mine, changes=mine.changes.at_least(min_severity))
        notified[team] = notify(
            notifiers, context, mine, page_url, deadline=deadline, logger=logger, team=team
        )
    return notified
