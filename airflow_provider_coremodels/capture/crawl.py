"""Capture an estate: every DAG page, one tasks request per DAG, every asset page, concurrently.

The request count is the minimum the API allows: version, token, the DAG pages, one tasks
request per DAG (there is no bulk form), and the asset pages. Once the first page of a list
has told its total, the remaining pages are fetched in parallel, and each DAG's tasks are
requested as soon as its page arrives, all in one bounded pool. ``limit=0`` is never used: it
means "server default" on one API generation and "nothing" on the other.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.capture.client import AirflowApiClient, NotFound
from airflow_provider_coremodels.core import ABSENT, Estate, Lossiness, State, build_estate
from airflow_provider_coremodels.core.parse import reduce_asset, reduce_dag, reduce_task
from airflow_provider_coremodels.errors import AuthError, CaptureError

log = logging.getLogger(__name__)

PAGE_LIMIT = 100

ProgressCallback = Callable[[int, int], None]


@dataclass
class CaptureSummary:
    dags: int = 0
    tasks: int = 0
    assets: int = 0
    requests: int = 0
    retries: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"captured {self.dags} DAGs, {self.tasks} tasks, {self.assets} assets: "
            f"{self.requests} requests, {self.retries} retries, {self.seconds:.1f} s"
        )


@dataclass
class Capture:
    """What a capture produced: the three artifacts (decoded), the state, and what it could not get."""

    dags: dict[str, Any]
    tasks: dict[str, Any]
    datasets: Any  # the server's own wrapper, or ABSENT when the assets could not be fetched
    state: State
    lossiness: list[Lossiness] = field(default_factory=list)
    summary: CaptureSummary = field(default_factory=CaptureSummary)

    def estate(self, *, include_asset_extra: bool = False) -> Estate:
        return build_estate(
            self.dags,
            self.tasks,
            self.datasets,
            state=self.state,
            lossiness=self.lossiness,
            include_asset_extra=include_asset_extra,
        )


@dataclass
class _List:
    """One paginated list (/dags or /assets) being collected."""

    path: str
    key: str
    order_by: str
    id_key: str
    items: dict[Any, Any] = field(default_factory=dict)
    page_size: int = 0
    first_total: int | None = None
    last_total: int | None = None
    requested: set[int] = field(default_factory=set)
    ended: bool = False  # an empty page was seen: there is nothing past it


def capture(
    client: AirflowApiClient,
    *,
    keep_raw: bool = False,
    keep_asset_extra: bool = False,
    progress: ProgressCallback | None = None,
) -> Capture:
    """Capture the deployment behind ``client``.

    With ``keep_raw`` every object is kept as the server sent it (for ``capture --out``);
    without, DAGs, tasks and assets are reduced to the keys the parse reads as they arrive, so
    memory follows the estate rather than the size of the responses (``keep_asset_extra``
    keeps assets' ``extra``, for an estate that includes it).
    """
    return _Crawl(client, keep_raw, keep_asset_extra, progress).run()


class _Crawl:
    def __init__(
        self,
        client: AirflowApiClient,
        keep_raw: bool,
        keep_asset_extra: bool,
        progress: ProgressCallback | None,
    ) -> None:
        self.client = client
        self.keep_raw = keep_raw
        self.keep_asset_extra = keep_asset_extra
        self.progress = progress
        self.tasks: dict[str, Any] = {}
        self.lossiness: list[Lossiness] = []
        self.pending: dict[Future[Any], tuple[str, Any]] = {}
        # finished futures, in the order they finish: cheaper than concurrent.futures.wait,
        # which looks at every pending future on each completion (quadratic over a capture)
        self.done: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
        self.assets_failed: str | None = None
        self.dags_found = 0

    def run(self) -> Capture:
        started = time.monotonic()
        captured_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        info = self.client.info or self.client.connect()
        v2 = info.api_version == "v2"
        dags = _List("/dags", "dags", "dag_id", "dag_id")
        assets = _List("/assets" if v2 else "/datasets", "assets" if v2 else "datasets", "id", "uri")
        # Not a `with` block: on an error, a timeout or a cancellation the capture must end now,
        # not after the requests in flight (each ends by itself within the read timeout).
        self.pool = ThreadPoolExecutor(
            self.client.source.concurrency, thread_name_prefix="coremodels-capture"
        )
        try:
            self._page(dags, 0)
            self._page(assets, 0)
            self._drain(dags, assets)
        except BaseException:
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.pool.shutdown(wait=True)

        self._note_changes(dags, "dags", "DAGs")
        datasets: Any = ABSENT
        if self.assets_failed is None:
            self._note_changes(assets, "datasets", "assets")
            datasets = {assets.key: list(assets.items.values()), "total_entries": len(assets.items)}
        else:
            self.lossiness.append(Lossiness("datasets", f"datasets artifact ignored: {self.assets_failed}"))
        state = State(__version__, info.airflow_version, info.api_version, captured_at)
        summary = CaptureSummary(
            dags=len(dags.items),
            tasks=sum(len(r["tasks"]) for r in self.tasks.values()),
            assets=len(assets.items) if self.assets_failed is None else 0,
            requests=self.client.stats.requests,
            retries=self.client.stats.retries,
            seconds=time.monotonic() - started,
        )
        ordered_dags = [dags.items[k] for k in sorted(dags.items)]
        ordered_tasks = {k: self.tasks[k] for k in sorted(self.tasks)}
        return Capture(
            dags={"dags": ordered_dags, "total_entries": len(ordered_dags)},
            tasks=ordered_tasks,
            datasets=datasets,
            state=state,
            lossiness=self.lossiness,
            summary=summary,
        )

    # -- scheduling -----------------------------------------------------------------------

    def _submit(self, kind: str, key: Any, func: Callable[..., Any], *args: Any) -> None:
        future = self.pool.submit(func, *args)
        self.pending[future] = (kind, key)
        future.add_done_callback(self.done.put)

    def _page(self, listing: _List, offset: int) -> None:
        listing.requested.add(offset)
        params = {"limit": PAGE_LIMIT, "offset": offset, "order_by": listing.order_by}
        self._submit("page", (listing, offset), self.client.get_json, listing.path, params)

    def _drain(self, dags: _List, assets: _List) -> None:
        while self.pending:
            try:  # a short timeout, so a cancellation from another thread (on_kill) is seen
                future = self.done.get(timeout=0.2)
            except queue.Empty:
                future = None
            if self.client.cancelled:
                raise CaptureError("the capture was cancelled")
            if future is None:
                continue
            kind, key = self.pending.pop(future)
            if kind == "tasks":
                self._tasks_done(key, future)
            else:
                listing, offset = key
                self._page_done(listing, offset, future, on_item=self._dag_found if listing is dags else None)

    def _page_done(
        self, listing: _List, offset: int, future: Future[Any], on_item: Callable[[str], None] | None
    ) -> None:
        try:
            body = future.result()
        except AuthError:
            raise
        except CaptureError as exc:
            if on_item is not None:  # the dags list is the one thing a capture cannot do without
                raise
            self.assets_failed = f"the asset list could not be fetched: {exc}"
            return
        items = body.get(listing.key) if isinstance(body, dict) else None
        total = body.get("total_entries") if isinstance(body, dict) else None
        if not isinstance(items, list):
            problem = f"{listing.path} answered without a {listing.key!r} list"
            if on_item is not None:
                raise CaptureError(
                    f"{self.client.source.base_url}{self.client.api_path(listing.path)}: {problem}"
                )
            self.assets_failed = problem
            return
        if isinstance(total, int):
            listing.first_total = total if listing.first_total is None else listing.first_total
            listing.last_total = total
        if not items:
            listing.ended = True
        for raw in items:
            item_id = raw.get(listing.id_key) if isinstance(raw, dict) else None
            if item_id is None or item_id in listing.items:
                continue  # a page boundary moved under a concurrent change: already have it
            listing.items[item_id] = raw if self.keep_raw else self._reduce(listing.key, raw)
            if on_item is not None and isinstance(item_id, str):
                on_item(item_id)
        if offset == 0 and items:
            listing.page_size = len(items)  # the server may cap pages below our limit
            for next_offset in range(len(items), total if isinstance(total, int) else 0, len(items)):
                self._page(listing, next_offset)
        self._maybe_more(listing)

    def _reduce(self, key: str, raw: Any) -> Any:
        if key == "dags":
            return reduce_dag(raw)
        return reduce_asset(raw, keep_extra=self.keep_asset_extra)

    def _maybe_more(self, listing: _List) -> None:
        """Once a list's pages are all in: fetch one more page while it may hold more than we have.

        That happens when the list grew during the capture, when a page boundary moved, or when
        the server's ``total_entries`` is not to be trusted (Airflow 2's datasets count ignored
        filters); an empty page ends it either way.
        """
        if listing.ended or not listing.page_size:
            return
        if any(kind == "page" and key[0] is listing for kind, key in self.pending.values()):
            return
        if listing.last_total is not None and len(listing.items) >= listing.last_total:
            return
        self._page(listing, max(listing.requested) + listing.page_size)

    def _dag_found(self, dag_id: str) -> None:
        self.dags_found += 1
        self._submit("tasks", dag_id, self.client.get_json, f"/dags/{quote(dag_id, safe='')}/tasks")

    def _tasks_done(self, dag_id: str, future: Future[Any]) -> None:
        try:
            body = future.result()
        except AuthError:
            raise
        except NotFound:
            self._tasks_lost(dag_id, "the DAG was deleted during the capture (its tasks answered HTTP 404)")
        except CaptureError as exc:
            self._tasks_lost(dag_id, str(exc))
        else:
            tasks = body.get("tasks") if isinstance(body, dict) else body
            if not isinstance(tasks, list):
                self._tasks_lost(dag_id, "the tasks response has no 'tasks' list")
            elif self.keep_raw:
                self.tasks[dag_id] = body if isinstance(body, dict) else {"tasks": tasks}
            else:
                self.tasks[dag_id] = {"tasks": [reduce_task(t) for t in tasks]}
        if self.progress is not None:
            self.progress(
                len(self.tasks) + sum(1 for r in self.lossiness if r.artifact == "tasks"), self.dags_found
            )

    def _tasks_lost(self, dag_id: str, reason: str) -> None:
        log.warning("tasks of DAG %s could not be captured: %s", dag_id, reason)
        self.lossiness.append(
            Lossiness("tasks", f"tasks of DAG '{dag_id}' could not be captured: {reason}", subject=dag_id)
        )

    def _note_changes(self, listing: _List, artifact: str, noun: str) -> None:
        if listing.first_total is not None and listing.last_total != listing.first_total:
            self.lossiness.append(
                Lossiness(
                    artifact,
                    f"the estate changed during the capture: {listing.path} listed {listing.first_total} "
                    f"{noun} at the start and {listing.last_total} at the end",
                )
            )
