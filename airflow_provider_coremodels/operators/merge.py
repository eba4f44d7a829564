"""``CoreModelsMergeOperator``: merge the snapshots several export tasks stored, and push the whole.

The last step of a federation: each deployment was exported (usually by one mapped
``CoreModelsExportOperator`` per deployment) into a sink of its own; this reads them back,
merges them into one estate joined on asset URIs, audits it and pushes it. Run it with
``trigger_rule="all_done"``: a deployment whose export failed this time keeps its last good
snapshot in the merge, named stale with its age in the task log and the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.compat import AirflowException
from airflow_provider_coremodels.errors import CoreModelsError
from airflow_provider_coremodels.operators.export import (
    fail_on_findings,
    fail_on_sinks,
    log_document,
    operator_rules,
    operator_waivers,
    pushed_anyway,
)
from airflow_provider_coremodels.redaction import scrub

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_coremodels.jobs.federation import MergeResult


class CoreModelsMergeOperator(BaseOperator):
    """Merge the deployments' stored snapshots at ``sources`` and push the merged one to ``sinks``.

    :param sources: where each deployment's snapshot is stored: the sink URIs its export wrote to
        (a directory, ``s3://bucket/prefix``, ...), or ``NAME=URI`` to name the deployment there.
        A string is a comma-separated list (templated; an upstream task's output works too).
    :param sinks: where to push the merged snapshot, as for the export operator (templated).
    :param export_task_id: the (mapped) export task of this run: a deployment none of whose
        export tasks succeeded is merged from its last good snapshot and named stale.
    :param sink_conn_id: the connection object-storage sources and sinks use.
    :param coremodels_conn_id: the ``coremodels`` connection whose password is the endpoint token.
    :param fail_on: ``never``, ``info``, ``warning`` or ``error``, as for the export operator.
    :param waivers: a waiver file's path or the waivers themselves, as for the export operator.
    :param rules: a rules file's path or the rules themselves, as for the export operator; they run
        on the merged estate, where a DAG's subject is ``<deployment>/<dag_id>``.
    :param stale_tolerance: as for the export operator.
    :param max_snapshot_bytes: the snapshot cap.
    :param history_keep: as for the export operator: the newest entries of the sinks' ``history/``
        to keep (0 keeps all).
    :param history_max_age_days: as for the export operator.
    """

    template_fields: Sequence[str] = (
        "sources",
        "sinks",
        "sink_conn_id",
        "coremodels_conn_id",
        "fail_on",
        "waivers",
        "rules",
    )
    ui_color = "#e8f1fb"

    def __init__(
        self,
        *,
        sources: str | Sequence[str],
        sinks: str | Sequence[str],
        export_task_id: str | None = None,
        sink_conn_id: str | None = None,
        coremodels_conn_id: str | None = None,
        fail_on: str = "never",
        waivers: str | Sequence[Mapping[str, Any]] | None = None,
        rules: str | Sequence[Mapping[str, Any]] | Mapping[str, Any] | None = None,
        stale_tolerance: float = defaults.STALE_TOLERANCE,
        max_snapshot_bytes: int = defaults.MAX_SNAPSHOT_BYTES,
        history_keep: int = 0,
        history_max_age_days: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.sources = sources
        self.sinks = sinks
        self.export_task_id = export_task_id
        self.sink_conn_id = sink_conn_id
        self.coremodels_conn_id = coremodels_conn_id
        self.fail_on = fail_on
        self.waivers = waivers
        self.rules = rules
        self.stale_tolerance = stale_tolerance
        self.max_snapshot_bytes = max_snapshot_bytes
        self.history_keep = history_keep
        self.history_max_age_days = history_max_age_days

    def execute(self, context: Context) -> dict[str, Any]:
        from airflow_provider_coremodels.jobs.export import (
            checked_fail_on,
            checked_retention,
            open_sinks,
            uri_list,
        )
        from airflow_provider_coremodels.jobs.federation import Source, merge_and_push

        try:
            checked_fail_on(self.fail_on)
            retention = checked_retention(self.history_keep, self.history_max_age_days)
            waivers, policy = operator_waivers(self.waivers), operator_rules(self.rules)
            sinks = open_sinks(
                uri_list(self.sinks),
                sink_conn_id=self.sink_conn_id,
                coremodels_conn_id=self.coremodels_conn_id,
                retention=retention,
            )
            with pushed_anyway() as pushed:
                pushed.result = merge_and_push(
                    [Source.parse(source) for source in uri_list(self.sources)],
                    sinks,
                    fresh=self._exported(context),
                    sink_conn_id=self.sink_conn_id,
                    waivers=waivers,
                    stale_tolerance=self.stale_tolerance,
                    max_snapshot_bytes=self.max_snapshot_bytes,
                    policy=policy,
                )
            result: MergeResult = pushed.result
        except CoreModelsError as exc:
            raise AirflowException(scrub(str(exc))) from exc
        log_document(self.log, result.document)
        self.log.info("%s", result.summary_line())
        fail_on_sinks(self.log, result.failed)
        fail_on_findings(result.document, self.fail_on)
        return result.summary()

    def _exported(self, context: Context) -> set[str] | None:
        """The deployments whose export succeeded in this run: those that returned a summary."""
        if not self.export_task_id:
            return None
        pulled = context["ti"].xcom_pull(task_ids=self.export_task_id)
        summaries = [pulled] if isinstance(pulled, dict) else list(pulled or ())
        return {s["deployment"] for s in summaries if isinstance(s, dict) and s.get("deployment")}
