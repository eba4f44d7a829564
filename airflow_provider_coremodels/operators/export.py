"""``CoreModelsExportOperator``: capture this deployment's estate, audit it, push the snapshot.

Findings are logged one per line in the task log; the XCom is a compact JSON-safe summary.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.compat import AirflowException
from airflow_provider_coremodels.core.checks.policy import Policy, rules_from_value
from airflow_provider_coremodels.core.checks.waivers import Waiver, waivers_from_value
from airflow_provider_coremodels.core.estate.rules import failing_findings
from airflow_provider_coremodels.core.estate.text import printable
from airflow_provider_coremodels.core.views.render import (
    context_lines,
    display_names,
    finding_line,
    findings_count_line,
    freshness_line,
    summary_line,
)
from airflow_provider_coremodels.errors import CoreModelsError, SinksFailed
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook
from airflow_provider_coremodels.io.transport import RetryPolicy
from airflow_provider_coremodels.jobs.alerts import (
    as_notifiers,
    checked_deadline,
    checked_min_severity,
    notify,
    notify_teams,
    send_metrics,
    team_routes,
    to_tell,
)
from airflow_provider_coremodels.operators.links import CoreModelsPageLink, page_url
from airflow_provider_coremodels.redaction import scrub

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_coremodels.capture import AirflowApiClient
    from airflow_provider_coremodels.jobs.export import ExportResult
    from airflow_provider_coremodels.sinks import SinkResult

LOG_LEVEL = {"Info": logging.INFO, "Warning": logging.WARNING, "Error": logging.ERROR}


class CoreModelsExportOperator(BaseOperator):
    """Export the estate of the Airflow deployment behind ``airflow_api_conn_id`` to ``sinks``.

    :param sinks: where to push the snapshot: local paths or ``file://`` URIs, object storage URIs
        (``s3://bucket/prefix``, with ``sink_conn_id``), ``http(s)://`` endpoints (with
        ``coremodels_conn_id`` for the token), or ``openlineage://`` (one OpenLineage event per DAG,
        sent through the OpenLineage client as this Airflow configures it; docs/openlineage.md).
        A string is a comma-separated list (templated).
    :param airflow_api_conn_id: the ``airflow_api`` connection of the deployment's REST API.
    :param sink_conn_id: the connection object-storage sinks use.
    :param coremodels_conn_id: the ``coremodels`` connection whose password is the endpoint token.
    :param fail_on: ``never``, ``info``, ``warning`` or ``error``: fail the task, after pushing,
        when a finding at or above this severity remains.
    :param max_snapshot_bytes: the snapshot cap.
    :param include_asset_extra: carry each asset's ``extra`` into the snapshot (off by default:
        extras may hold credentials).
    :param waivers: accepted findings: the path of a YAML or JSON waiver file (templated), or
        the waivers themselves as a list of ``{"code", "subject", "reason", "expires"}`` dicts.
        Waived findings are logged and stored as waived and never fail the task; an expired
        waiver is reported as a ``waiver-expired`` finding; a malformed one fails the task.
    :param rules: the team's own rules: the path of a YAML or JSON rules file (templated), or the
        rules themselves (a list of rule dicts, or ``{"rules": [...]}``). A rule that does not hold
        is a ``policy-...`` finding; a malformed file fails the task before anything is captured.
    :param stale_tolerance: how many of its producers' cadences old an asset may grow before
        ``asset-stale`` reports it (a producer's ``coremodels:stale-tolerance=N`` tag wins).
    :param deployment: the deployment's name in the snapshot (``state.deployment``; templated),
        by default ``airflow_api_conn_id``: what tells deployments apart when snapshots are merged.
    :param on_new_findings: a notifier (any ``BaseNotifier``: ``SmtpNotifier``, ``SlackNotifier``,
        ...) or a list of them, called after the push when a finding is open now that was not
        open in the previous stored snapshot. Each is called once per export, with one digest of
        every such finding: its templates see the task's context and ``coremodels``
        (``new_findings``, ``resolved_findings``, ``text``, ``page_url``, ...; docs/alerts.md).
        A notifier that fails is logged and never fails the task. Where ``rules`` names teams it
        may be a mapping of team names to notifiers (``{"orders": [...], "unowned": [...],
        "*": [...]}``): each team's are told of its own new findings only, ``*``'s of every one.
    :param notify_min_severity: ``info`` (the default), ``warning`` or ``error``: the least severity
        a new finding must have to call the notifiers; the digest lists those, and counts the rest
        (each team's digest, its own).
    :param notify_first_export: call the notifiers on the first export too (off by default): with
        no previous snapshot in the sinks, every open finding is "new", so the first export records
        the baseline and says so in one log line, and the next export tells what changed since.
    :param notifier_timeout: the seconds each notifier may take (10 by default); one that has not
        returned by then is abandoned, with a line in the log, and the next one is called.
    :param metrics: send the export's metrics (open findings per severity and code, new and
        resolved findings, capture duration, requests and retries) through Airflow's ``Stats``,
        wherever ``[metrics]`` sends Airflow's own.
    :param history_keep: file and object-storage sinks keep only the newest this many entries of
        ``history/`` (0, the default, keeps all); ``latest.json``'s twin is always kept.
    :param history_max_age_days: and remove the entries captured more than this many days before
        this capture (None, the default: no age limit).
    :param dag_folder: the deployment's DAG folder, from which the tables its SQL and transfer
        operators read and write are inferred (parsed in a sandbox, no task run; docs/lineage.md);
        ``True`` for the folder this worker has (``[core] dags_folder``). Without it (the default)
        the snapshot says in one lossiness record that inferred lineage needs the DAG folder.

    The capture, and each push, retry within a budget: 30 minutes, or three quarters of the task's
    ``execution_timeout`` where that is less, so that one which cannot finish fails the task saying
    why before Airflow's timeout ends it.

    The task's **CoreModels** link opens the page on the snapshot it stored.
    """

    template_fields: Sequence[str] = (
        "sinks",
        "airflow_api_conn_id",
        "sink_conn_id",
        "coremodels_conn_id",
        "fail_on",
        "waivers",
        "rules",
        "deployment",
        "dag_folder",
    )
    ui_color = "#e8f1fb"
    operator_extra_links = (CoreModelsPageLink(),)

    def __init__(
        self,
        *,
        sinks: str | Sequence[str],
        airflow_api_conn_id: str = AirflowApiHook.default_conn_name,
        sink_conn_id: str | None = None,
        coremodels_conn_id: str | None = None,
        fail_on: str = "never",
        max_snapshot_bytes: int = defaults.MAX_SNAPSHOT_BYTES,
        include_asset_extra: bool = False,
        waivers: str | Sequence[Mapping[str, Any]] | None = None,
        rules: str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
        stale_tolerance: float = defaults.STALE_TOLERANCE,
        deployment: str | None = None,
        on_new_findings: Any = None,
        notify_min_severity: str = "info",
        notify_first_export: bool = False,
        notifier_timeout: float = defaults.NOTIFIER_TIMEOUT,
        metrics: bool = True,
        history_keep: int = 0,
        history_max_age_days: float | None = None,
        dag_folder: str | bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sinks = sinks
        self.airflow_api_conn_id = airflow_api_conn_id
        self.sink_conn_id = sink_conn_id
        self.coremodels_conn_id = coremodels_conn_id
        self.fail_on = fail_on
        self.max_snapshot_bytes = max_snapshot_bytes
        self.include_asset_extra = include_asset_extra
        self.waivers = waivers
        self.rules = rules
        self.stale_tolerance = stale_tolerance
        self.deployment = deployment
        self.on_new_findings = on_new_findings
        self.notify_min_severity = notify_min_severity
        self.notify_first_export = notify_first_export
        self.notifier_timeout = notifier_timeout
        self.metrics = metrics
        self.coremodels_page_url: str | None = None  # set once a snapshot is pushed: the task's link
        self.history_keep = history_keep
        self.history_max_age_days = history_max_age_days
        self.dag_folder = dag_folder
        self._client: AirflowApiClient | None = None

    def on_kill(self) -> None:
        """The task is being killed: stop the capture now; nothing has been pushed before it ends."""
        if self._client is not None:
            self._client.cancel()

    @cached_property
    def hook(self) -> AirflowApiHook:
        return AirflowApiHook(self.airflow_api_conn_id)

    def _waivers(self) -> tuple[Waiver, ...]:
        """Read the waivers before anything is captured: a malformed file fails the task at once."""
        return operator_waivers(self.waivers)

    def _dag_folder(self) -> str | None:
        """The folder to infer lineage from: the one given, or this worker's for ``True``."""
        if self.dag_folder is True:
            from airflow.configuration import conf

            return conf.get("core", "dags_folder")
        return self.dag_folder or None

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_coremodels.jobs.export import ExportSettings

        try:
            deadline = checked_deadline(self.notifier_timeout)
            least = checked_min_severity(self.notify_min_severity)
            settings = ExportSettings(  # every argument checked here, before anything is captured
                sinks=self.sinks,
                sink_conn_id=self.sink_conn_id,
                coremodels_conn_id=self.coremodels_conn_id,
                fail_on=self.fail_on,
                max_snapshot_bytes=self.max_snapshot_bytes,
                include_asset_extra=self.include_asset_extra,
                waivers=self._waivers(),
                policy=operator_rules(self.rules),
                stale_tolerance=self.stale_tolerance,
                deployment=self.deployment or self.airflow_api_conn_id,
                history_keep=self.history_keep,
                history_max_age_days=self.history_max_age_days,
                dag_folder=self._dag_folder(),
            )
            policy = settings.policy
            routes = team_routes(
                self.on_new_findings, policy.teams.names if policy and policy.teams else None
            )
            if not settings.sinks:
                self.log.warning(
                    "No sinks: the snapshot is audited and logged, but stored nowhere "
                    "(no baseline is kept for the next run's coverage and drift)"
                )
            retry = RetryPolicy(budget=task_budget(self.execution_timeout))
            sinks = settings.open_sinks(retry)
            with self.hook.get_conn(retry) as client, pushed_anyway() as pushed:
                self._client = client
                pushed.result = settings.run(client, sinks)
            result: ExportResult = pushed.result
        except CoreModelsError as exc:
            raise AirflowException(scrub(str(exc))) from exc

        document = result.document
        self.log.info("%s", result.capture.line())
        log_document(self.log, document)
        self.log.info("%s", result.summary_line())
        self.log.info("%s", changes_line(result))
        summary = result.summary()
        if len(result.failed) < len(result.sinks):  # stored somewhere: the page can show it
            self.coremodels_page_url = page_url(document["fingerprint"])
        if self.metrics:
            deployment = str(document["state"].get("deployment") or self.airflow_api_conn_id)
            send_metrics(result, deployment, logger=self.log)
        if self.on_new_findings and routes is not None:  # each team told of its own new findings
            quiet = to_tell(result, first_export=self.notify_first_export, logger=self.log)
            notify_teams(
                routes,
                context,
                quiet,
                self.coremodels_page_url,
                min_severity=least,
                deadline=deadline,
                logger=self.log,
            )
        elif self.on_new_findings:
            told = to_tell(result, min_severity=least, first_export=self.notify_first_export, logger=self.log)
            notify(
                as_notifiers(self.on_new_findings),
                context,
                told,
                self.coremodels_page_url,
                deadline=deadline,
                logger=self.log,
            )
        fail_on_sinks(self.log, result.failed)
        fail_on_findings(document, self.fail_on)
        return summary


def task_budget(execution_timeout: timedelta | None) -> float:
    """The seconds the capture, and each push, may take in all, retries included: the 30-minute
    ``RETRY_BUDGET``, or three quarters of the task's ``execution_timeout`` where that is less
    (``TASK_BUDGET_SHARE``), so that a capture that cannot finish gives up, and the log says why,
    before Airflow's timeout ends the task."""
    if execution_timeout is None:
        return defaults.RETRY_BUDGET
    return min(defaults.RETRY_BUDGET, execution_timeout.total_seconds() * defaults.TASK_BUDGET_SHARE)


def operator_waivers(value: str | Sequence[Mapping[str, Any]] | None) -> tuple[Waiver, ...]:
    """An operator's ``waivers``: a waiver file's path, or the waivers themselves."""
    if not value:
        return ()
    if isinstance(value, str):
        from airflow_provider_coremodels.io.input_files import read_waivers

        return read_waivers(value)
    return waivers_from_value(value)


def operator_rules(value: str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None) -> Policy | None:
    """An operator's ``rules``: a rules file's path, or the rules themselves."""
    if not value:
        return None
    if isinstance(value, str):
        from airflow_provider_coremodels.io.input_files import read_rules

        return read_rules(value)
    return rules_from_value(dict(value) if isinstance(value, Mapping) else list(value))


def log_document(log: Any, document: dict[str, Any]) -> None:
    """What a task log says of a document: the summary lines, then a line per finding and per
    lossiness record, at a level that follows the finding's severity."""
    log.info("%s", summary_line(document))
    for line in context_lines(document):
        log.info("%s", line)
    if freshness := freshness_line(document):
        log.info("%s", freshness)
    log.info("%s", findings_count_line(document["findings"]))
    names = display_names(document)
    for finding in document["findings"]:
        log.log(LOG_LEVEL.get(finding["severity"], logging.INFO), "%s", finding_line(finding, names))
    for record in document["lossiness"]:
        log.warning("lossiness: %s: %s", record["artifact"], printable(record["message"]))


class Pushed:
    result: Any = None


@contextlib.contextmanager
def pushed_anyway() -> Iterator[Pushed]:
    """Where ``SinksFailed`` stops being an error until the task has logged, measured and told of
    what was pushed: the result it carries is kept, and ``fail_on_sinks`` fails the task after."""
    pushed = Pushed()
    try:
        yield pushed
    except SinksFailed as failure:
        pushed.result = failure.result


def changes_line(result: ExportResult) -> str:
    """``findings since the last export: 2 new, 1 resolved``: what notifiers are told of."""
    changes = result.changes
    if changes.first:
        return f"findings since the last export: no previous snapshot ({len(changes.new)} open, all new)"
    line = f"findings since the last export: {len(changes.new)} new, {len(changes.resolved)} resolved"
    return f"{line}, {len(changes.waived)} waived" if changes.waived else line


def fail_on_sinks(log: Any, failed: Sequence[SinkResult]) -> None:
    """Fail the task when a sink could not be written: one error line each, after every other
    sink got the snapshot."""
    for result in failed:
        log.error("%s", scrub(str(result.error)))
    if failed:
        raise AirflowException(scrub(str(SinksFailed(None, [str(r.error) for r in failed]))))


def fail_on_findings(document: dict[str, Any], fail_on: str) -> None:
    """Fail the task, after the push, when a finding at or above ``fail_on`` remains."""
    failing = failing_findings(document["findings"], fail_on)
    if failing:
        raise AirflowException(
            f"{len(failing)} finding(s) at or above {fail_on}; the snapshot was pushed "
            f"(fingerprint {document['fingerprint']})"
        )
