"""Run one DAG file's DAG with ``dag.test()`` and print its run state and the task's XCom.

Run by ``tests/operators/test_export_operator.py`` in a subprocess, so the run gets its own
Airflow home and database (the process that runs a DAG is not the deployment it exports).
Prints two marker lines: ``STATE <dag run state> <task state>`` and ``XCOM <json>``.
"""

from __future__ import annotations

import json
import runpy
import sys

if __name__ == "__main__":
    namespace = runpy.run_path(sys.argv[1])
    run = namespace["dag"].test()
    [ti] = run.get_task_instances()
    print("STATE", run.state, ti.state, flush=True)
    print("XCOM", json.dumps(ti.xcom_pull(task_ids=ti.task_id)), flush=True)
