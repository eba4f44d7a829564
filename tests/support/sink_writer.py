"""Push a stream of large snapshot documents into one FileSink directory, reporting each push.

Run by ``tests/reliability/test_crash_safety.py`` as a separate process, so the test can SIGKILL
it mid-write::

    python tests/support/sink_writer.py ROOT STREAM START COUNT

pushes documents ``START .. START+COUNT-1`` of ``STREAM`` into the FileSink at ROOT. Each
document is the recorded Airflow 3 example estate (``airflow_provider_coremodels/example_estate``)
copied 50 to 150 times
under new DAG and asset names, about 0.3 to 1 MB of JSON, different for every index and stream.
Lines on stdout, flushed at once::

    ready
    pushing <index> <fingerprint> <sha256 of the stored bytes> <bytes> <monotonic clock>
    pushed <index> <fingerprint> <unchanged: 0|1> <monotonic clock>

(``time.monotonic`` is one system-wide clock on Linux, so the test compares it across processes.)

With ``--wait``, the writer builds all its documents first, prints ``ready`` and waits for a
line on stdin before its first push (so two writers can start pushing at the same moment).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.snapshots.document import encode
from airflow_provider_coremodels.sinks import FileSink

FIXTURE = Path(__file__).resolve().parents[2] / "airflow_provider_coremodels" / "example_estate"
MIN_COPIES = 50
MAX_COPIES = 150


@cache
def _recorded() -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    dags = json.loads((FIXTURE / "dags.json").read_bytes())["dags"]
    tasks = json.loads((FIXTURE / "tasks.json").read_bytes())
    assets = json.loads((FIXTURE / "datasets.json").read_bytes())["assets"]
    return dags, tasks, assets


def copies_for(index: int) -> int:
    """How many copies of the recorded estate document ``index`` holds (varies, so sizes vary)."""
    return MIN_COPIES + (index * 37) % (MAX_COPIES - MIN_COPIES + 1)


def artifacts(stream: str, index: int) -> tuple[bytes, bytes, bytes]:
    """The dags, tasks and assets responses of an estate scaled up from the recording."""
    dags, tasks, assets = _recorded()
    out_dags: list[dict[str, Any]] = []
    out_tasks: dict[str, Any] = {}
    out_assets: list[dict[str, Any]] = []
    for copy in range(copies_for(index)):

        def rename(dag_id: str, copy: int = copy) -> str:
            return f"{stream}_{dag_id}_{copy:03d}"

        for dag in dags:
            dag_id = rename(dag["dag_id"])
            description = f"{dag.get('description') or dag['dag_id']} (revision {index} of {stream})"
            out_dags.append({**dag, "dag_id": dag_id, "dag_display_name": dag_id, "description": description})
            out_tasks[dag_id] = tasks[dag["dag_id"]]  # task ids are per DAG: the same ones do
        for asset in assets:
            uri = f"{asset['uri']}/{stream}/{copy:03d}"
            renamed = {**asset, "name": uri, "uri": uri}
            for key in ("scheduled_dags", "producing_tasks", "consuming_tasks"):
                renamed[key] = [{**ref, "dag_id": rename(ref["dag_id"])} for ref in asset.get(key) or []]
            out_assets.append(renamed)
    return (
        json.dumps({"dags": out_dags, "total_entries": len(out_dags)}).encode(),
        json.dumps(out_tasks).encode(),
        json.dumps({"assets": out_assets, "total_entries": len(out_assets)}).encode(),
    )


def document(stream: str, index: int) -> dict[str, Any]:
    """Document ``index`` of ``stream``: a full build_document of the scaled-up estate."""
    estate = parse_artifacts(*artifacts(stream, index))
    doc = build_document(estate, audit(estate))
    doc["state"]["capturedAt"] = captured_at(index)
    return doc


def captured_at(index: int) -> str:
    """Document ``index`` is captured ``index`` minutes after midnight on 1 December 2026."""
    day, minute = divmod(index, 1440)
    return f"2026-12-{1 + day % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"


def say(*words: object) -> None:
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("stream")
    parser.add_argument("start", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("--wait", action="store_true", help="build everything, then wait for stdin")
    args = parser.parse_args(argv)
    sink = FileSink(args.root)
    indexes = range(args.start, args.start + args.count)
    prebuilt = {i: document(args.stream, i) for i in indexes} if args.wait else {}
    say("ready")
    if args.wait:
        sys.stdin.readline()
    for index in indexes:
        doc = prebuilt.pop(index, None) or document(args.stream, index)
        data = encode(doc)
        digest = hashlib.sha256(data).hexdigest()
        say("pushing", index, doc["fingerprint"], digest, len(data), f"{time.monotonic():.6f}")
        result = sink.push(doc)
        say("pushed", index, doc["fingerprint"], int(result.unchanged), f"{time.monotonic():.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
