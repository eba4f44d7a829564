"""Export every Airflow deployment the platform team runs, then merge them into one estate.

Each deployment is exported by one mapped task (dynamic task mapping over the deployments), into
a sink of its own under the federation root; then one task merges every deployment's stored
snapshot, joined on asset URIs, and pushes the merged estate to the sinks. Lineage that crosses
deployments is then one lineage: an asset produced in one deployment is not "unproduced" in
another, and a paused producer in one starving consumers in another is found.

Airflow Variables:
- ``coremodels_deployments``: the ``airflow_api`` connection ids of the deployments,
  comma-separated; each is also the deployment's name in the merged estate.
- ``coremodels_federation_root``: where each deployment's snapshot is kept
  (``<root>/<connection id>``): a directory the workers share, or ``s3://bucket/prefix``.
- ``coremodels_sinks``: where the merged snapshot goes (as for the export DAG).

A deployment whose export fails (after its retries) does not stop the merge: its last good
snapshot stands in, named stale with its age. Clear the failed map index to export it again,
and the merge with it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG, Variable, task

from airflow_provider_coremodels.operators.export import CoreModelsExportOperator
from airflow_provider_coremodels.operators.merge import CoreModelsMergeOperator


@task
def deployments() -> list[dict[str, str]]:
    """One export per deployment: its connection, its name, and its own sink under the root."""
    root = Variable.get("coremodels_federation_root").rstrip("/")
    names = [name.strip() for name in Variable.get("coremodels_deployments").split(",") if name.strip()]
    return [{"airflow_api_conn_id": name, "deployment": name, "sinks": f"{root}/{name}"} for name in names]


@task
def sources(targets: list[dict[str, str]]) -> list[str]:
    """Where the merge reads each deployment back: ``<name>=<its sink>``."""
    return [f"{target['deployment']}={target['sinks']}" for target in targets]


with DAG(
    dag_id="coremodels_federation",
    description="Export every deployment and merge them into one CoreModels estate",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={
        "owner": "platform",
        "retries": 1,
        "retry_delay": timedelta(seconds=30),
        "execution_timeout": timedelta(minutes=30),
    },
    tags=["coremodels", "governance"],
) as dag:
    targets = deployments()
    exports = CoreModelsExportOperator.partial(task_id="export_deployment", fail_on="never").expand_kwargs(
        targets
    )
    merged = CoreModelsMergeOperator(
        task_id="merge",
        sources=sources(targets),
        sinks="{{ var.value.get('coremodels_sinks', '') }}",
        export_task_id="export_deployment",
        trigger_rule="all_done",  # a failed deployment stands in with its last good snapshot
        retries=0,
    )
    exports >> merged
