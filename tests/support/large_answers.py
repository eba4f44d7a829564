"""A fake Airflow 3.3 on 127.0.0.1 whose DAGs' tasks, or deadline alerts, each come in one large
answer (about ``ANSWER_BYTES``, under the 64 MiB cap on one answer): what issue 44's red team served
to make a capture's memory grow with every DAG. Used by ``tests/capture/test_answer_memory.py`` and
``benchmarks/bench_capture_memory.py``.

Everything else answers as a small healthy Airflow 3.3 would: the DAG list (described, so no details
are asked for), empty asset, alias, import-error and warning lists, an empty dependency graph.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from support.local_http import BackgroundHTTPServer, RequestHandler

#: About the size of each large answer: under the 64 MiB cap on one answer.
ANSWER_BYTES = 60_000_000


def _task(dag_id: str, index: int) -> dict[str, Any]:
    """A task as Airflow 3.3 serves it, its doc_md long (what makes an answer large in life)."""
    return {
        "task_id": f"task_{index:05d}",
        "task_display_name": f"task_{index:05d}",
        "owner": "data-eng",
        "operator_name": "BashOperator",
        "class_ref": {
            "module_path": "airflow.providers.standard.operators.bash",
            "class_name": "BashOperator",
        },
        "retries": 2,
        "trigger_rule": "all_success",
        "downstream_task_ids": [],
        "template_fields": ["bash_command", "env"],
        "doc_md": f"{dag_id} step {index}: " + "lorem ipsum dolor sit amet " * 700,
        "params": {},
        "extra_links": [],
    }


def _alert(index: int) -> dict[str, Any]:
    return {
        "id": f"0196a1b2-0000-7000-8000-{index:012d}",
        "name": f"alert {index % 977}",
        "reference_type": "DagRunQueuedAtDeadline" if index % 3 else "FixedDatetimeDeadline",
        "interval": float(60 * (1 + index % 1440)),
        "created_at": "2026-11-29T06:00:00Z",
    }


#: Where a DAG's id goes in its tasks' answer (the alerts are the same for every DAG).
_DAG_ID = "\x00dag-id\x00"


@cache
def _answer(kind: str, size: int) -> bytes:
    if kind == "tasks":
        one = len(json.dumps(_task(_DAG_ID, 0))) + 2
        tasks = [_task(_DAG_ID, i) for i in range(size // one)]
        return json.dumps({"tasks": tasks, "total_entries": len(tasks)}).encode()
    one = len(json.dumps(_alert(0))) + 2
    alerts = [_alert(i) for i in range(size // one)]
    return json.dumps({"deadline_alerts": alerts, "total_entries": len(alerts)}).encode()


def large_answer(kind: str, dag_id: str, size: int = ANSWER_BYTES) -> bytes:
    """One DAG's tasks (``tasks``) or deadline alerts (``alerts``) in about ``size`` bytes: made once
    per kind and size, each DAG's id then written in."""
    return _answer(kind, size).replace(json.dumps(_DAG_ID)[1:-1].encode(), dag_id.encode())


class _Airflow(RequestHandler):
    owner: LargeAnswers

    def answer(self, body: bytes) -> None:
        url = urlsplit(self.path)
        path, query = unquote(url.path), {k: v[-1] for k, v in parse_qs(url.query).items()}
        large, dags = self.owner.large, self.owner.dag_ids
        if path == "/api/v2/version":
            return self._json({"version": "3.3.2", "git_version": None})
        if path == "/auth/token":
            return self._json({"access_token": "memory-test-token", "token_type": "bearer"}, 201)
        if path == "/api/v2/dags":
            listed = [] if "last_dag_run_state" in query else dags
            return self._json({"dags": [self._dag(d) for d in listed], "total_entries": len(listed)})
        if match := re.fullmatch(r"/api/v2/dags/([^/]+)/tasks", path):
            if large == "tasks":
                return self._send(large_answer("tasks", match[1], self.owner.size))
            return self._json({"tasks": [_task(match[1], 0)], "total_entries": 1})
        if match := re.fullmatch(r"/ui/dags/([^/]+)/deadlineAlerts", path):
            if large == "alerts":
                return self._send(large_answer("alerts", match[1], self.owner.size))
            return self._json({"deadline_alerts": [_alert(0)], "total_entries": 1})
        if path == "/ui/dependencies":
            return self._json({"nodes": [], "edges": []})
        lists = {
            "/api/v2/assets": "assets",
            "/api/v2/assets/aliases": "asset_aliases",
            "/api/v2/importErrors": "import_errors",
            "/api/v2/dagWarnings": "dag_warnings",
        }
        if path in lists:
            return self._json({lists[path]: [], "total_entries": 0})
        return self._json({"detail": "Not Found"}, 404)

    @staticmethod
    def _dag(dag_id: str) -> dict[str, Any]:
        return {
            "dag_id": dag_id,
            "description": "d",
            "owners": ["data-eng"],
            "is_paused": False,
            "fileloc": f"/dags/{dag_id}.py",
            "is_stale": False,
            "bundle_name": "dags-folder",
            "tags": [],
            "timetable_summary": "@daily",
        }

    def _json(self, value: Any, status: int = 200) -> None:
        self._send(json.dumps(value).encode(), status)

    def _send(self, data: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LargeAnswers(BackgroundHTTPServer):
    """A fake Airflow 3.3 whose DAGs' tasks or deadline alerts (``large``) come in one large answer each."""

    handler_class = _Airflow
    description = "the large-answers API"
    thread_name = "large-answers"

    def __init__(self, dags: int, large: str | None, size: int = ANSWER_BYTES) -> None:
        super().__init__()
        self.dag_ids = [f"dag_{i:02d}" for i in range(dags)]
        self.large = large
        self.size = size
        if large:
            _answer(large, size)  # made before the export starts, not while it waits
