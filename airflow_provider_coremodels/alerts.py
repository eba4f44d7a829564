"""Telling people: metrics through Airflow's own ``Stats``, and notifiers on new findings.

Both run after the push, and neither can cost the snapshot anything: a metrics backend that is
down or a notifier that fails is logged (an error line naming it) and the export goes on.

Metrics (``docs/alerts.md`` lists them): every value is sent once under a plain name with
tags (``deployment``, ``severity``, ``code``), for DogStatsD and OpenTelemetry, and once more
under a name that carries those values (``coremodels.findings.open.<deployment>.<severity>``),
as Airflow's own legacy names do, for a StatsD that takes no tags; ``[metrics] legacy_names_on
= False`` leaves those out.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_coremodels.core.render import display_names
from airflow_provider_coremodels.core.rules import SEVERITY_ORDER
from airflow_provider_coremodels.redaction import SECRETS

if TYPE_CHECKING:
    from airflow_provider_coremodels.export import ExportResult

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
    for finding in changes.resolved:  # closed codes are set back to 0
        by_code.setdefault((str(finding["severity"]), str(finding["code"])), 0)
    for finding in changes.open:
        key = (str(finding["severity"]), str(finding["code"]))
        by_code[key] = by_code.get(key, 0) + 1
    for (severity, code), count in sorted(by_code.items()):
        out.append(("gauge", "findings.open_by_code", count, {**base, "severity": severity, "code": code}))
    out.append(("gauge", "findings.new", len(changes.new), base))
    out.append(("gauge", "findings.resolved", len(changes.resolved), base))
    capture = result.capture
    out.append(("timing", "capture.duration", capture.seconds * 1000.0, base))
    out.append(("gauge", "capture.requests", capture.requests, base))
    out.append(("gauge", "capture.retries", capture.retries, base))
    out.append(("gauge", "sinks.failed", len(result.failed), base))
    return out


def legacy_name(name: str, tags: Mapping[str, str]) -> str:
    """``findings.open`` with its tags as name parts: ``findings.open.<deployment>.<severity>``."""
    parts = [tags[key] for key in ("deployment", "severity", "code") if key in tags]
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
        logger.error(
            "CoreModels metrics could not be sent: %s", SECRETS.scrub(f"{type(exc).__name__}: {exc}")
        )
        return 0


def _legacy_names_on() -> bool:
    try:
        from airflow.configuration import conf

        return conf.getboolean("metrics", "legacy_names_on", fallback=True)
    except Exception:
        return True


def alert_context(result: ExportResult, page_url: str | None) -> dict[str, Any]:
    """What a notifier's templates see as ``coremodels``: the new and resolved findings (document
    form), a ready-made ``text``, the counts, the fingerprint, the page's link and the summary."""
    document = result.document
    deployment = document["state"].get("deployment")
    changes = result.changes
    return {
        "deployment": deployment,
        "fingerprint": document["fingerprint"],
        "new_findings": [dict(f) for f in changes.new],
        "resolved_findings": [dict(f) for f in changes.resolved],
        "first_export": changes.first,
        "open": dict(changes.by_severity),
        "text": changes.text(deployment, display_names(document)),
        "page_url": page_url,
        "summary": result.summary(),
    }


def notify(
    notifiers: Iterable[Any],
    context: Mapping[str, Any],
    result: ExportResult,
    page_url: str | None,
    *,
    logger: Any = log,
) -> list[str]:
    """Call each notifier (``BaseNotifier``: ``SmtpNotifier``, ``SlackNotifier``, ...) with the task's
    context plus ``coremodels``, when there is a new finding. Returns the notifiers that failed,
    each also an error line on ``logger`` (the task's log); a failure never stops the others or
    the export.

    Each notifier is copied first: rendering its templates replaces them in place, and an
    operator (in ``dag.test()``, say) may run again.
    """
    if not result.changes.new:
        return []
    failed = []
    for notifier in notifiers:
        name = type(notifier).__name__
        try:
            copy.copy(notifier)({**context, "coremodels": alert_context(result, page_url)})
        except Exception as exc:
            log.error(
                "CoreModels notifier %s failed: %s", name, SECRETS.scrub(f"{type(exc).__name__}: {exc}")
            )
            failed.append(name)
    return failed


def as_notifiers(value: Any) -> Sequence[Any]:
    """An operator's ``on_new_findings``: one notifier, a list of them, or None."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)
