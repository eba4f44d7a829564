"""Run one DAG file's DAG with ``dag.test()`` and print its run state and the task's XCom.

Run by ``support.dag_runs.run_dag`` in a process of its own, so the run gets its own Airflow home
and database (the process that runs a DAG is not the deployment it exports). Prints the marker
lines ``STATE <dag run state> <task state>`` and ``XCOM <json>`` for the DAG's last task (the
export, or a federation's merge), ``LINKS <json>`` (that task's extra links, as Airflow stored
them when the task finished), and a ``TASK <task_id> <map index> <state>`` line for every task
instance.

A task's retries still happen, at once: the wait between them (30 s in the example DAGs) is set
to none, so that a test of a failing task does not sleep through it.

``python dag_test_runner.py DAG_FILE`` runs it once; ``airflow_forks`` forks ``run_one`` from a
process that imported Airflow already.
"""

from __future__ import annotations

import json
import logging
import runpy
import sys
from datetime import timedelta


def run_one(dag_file: str) -> None:
    import structlog

    namespace = runpy.run_path(dag_file)
    if not structlog.is_configured():
        # Airflow 3.0 leaves structlog to its defaults here: its dag.test() would print the
        # in-process supervisor's debug trace (each message it relays, secrets to mask included)
        # and tracebacks with every frame's local variables. Log as a worker's task log does, and
        # as 3.3's dag.test() does: INFO and up, plain tracebacks.
        renderer = structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
        structlog.configure(
            processors=[*structlog.get_config()["processors"][:-1], renderer],
            wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
        )
    for each_task in namespace["dag"].tasks:
        each_task.retry_delay = timedelta(0)
    run = namespace["dag"].test()
    instances = run.get_task_instances()
    for each in sorted(instances, key=lambda t: (t.task_id, t.map_index)):
        print("TASK", each.task_id, each.map_index, each.state, flush=True)
    last = namespace["dag"].leaves[-1].task_id
    [ti] = [each for each in instances if each.task_id == last]
    print("STATE", run.state, ti.state, flush=True)
    print("XCOM", json.dumps(ti.xcom_pull(task_ids=ti.task_id)), flush=True)
    task = namespace["dag"].get_task(last)
    links = {link.name: ti.xcom_pull(task_ids=last, key=link.xcom_key) for link in task.operator_extra_links}
    print("LINKS", json.dumps(links), flush=True)


if __name__ == "__main__":
    run_one(sys.argv[1])
