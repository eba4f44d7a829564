"""Capture an estate: every DAG page, one tasks request per DAG, every asset page, concurrently.

The request count is the minimum the API allows: version, token, the DAG pages, one tasks
request per DAG (there is no bulk form), and the asset pages; then what only the asset model
needs: the details of the DAGs scheduled on assets (only they say which ``Asset.ref`` or alias
a DAG waits for), the alias pages and the asset-conflict DAG warnings (Airflow 3), and for
each asset reached through an alias one page of its newest events (the only record of who
writes through the alias). Once the first page of a list has told its total, the remaining
pages are fetched in parallel, and per-item requests go out as soon as their page arrives, all
in one bounded pool. ``limit=0`` is never used: it means "server default" on one API generation
and "nothing" on the other. What rides along is kept inside the three artifacts (the dags
artifact's ``dag_warnings`` and each DAG's ``asset_expression``, the datasets artifact's
``asset_aliases`` and ``asset_events``), so an offline audit of captured files gives exactly
the export's answer.
"""

from __future__ import annotations

import functools
import queue
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

from airflow_provider_coremodels import __version__
from airflow_provider_coremodels.capture.client import AirflowApiClient, NotFound
from airflow_provider_coremodels.core import ABSENT, Estate, Lossiness, State, build_estate
from airflow_provider_coremodels.core.conflicts import ASSET_CONFLICT
from airflow_provider_coremodels.core.parse import (
    decode_dag_ids_page,
    reduce_asset,
    reduce_dag,
    reduce_event,
    reduce_task,
    reduce_warning,
    scheduled_on_assets,
)
from airflow_provider_coremodels.errors import AuthError, CaptureError
from airflow_provider_coremodels.redaction import scrubbed_logger

log = scrubbed_logger(__name__)

PAGE_LIMIT = 100

ProgressCallback = Callable[[int, int], None]


#: The newest events read per asset reached through an alias: who wrote it lately.
EVENTS_LIMIT = 100
#: Before Airflow 3.1 no asset says when it was last updated: the newest events are listed, back
#: this far and no further than RECENT_EVENTS_MAX, which judges any asset whose producers
#: should have updated it within the window.
RECENT_EVENTS_DAYS = 7
RECENT_EVENTS_MAX = 2_000


@dataclass
class CaptureSummary:
    dags: int = 0
    tasks: int = 0
    assets: int = 0
    requests: int = 0
    retries: int = 0
    seconds: float = 0.0
    schedules: int = 0  # details requests: the DAGs scheduled on assets
    alias_writers: int = 0  # event requests: the assets reached through an alias
    freshness: int = 0  # page requests for the freshness rules: failed latest runs, recent events

    def line(self) -> str:
        extra = [
            f"{count} for {what}"
            for count, what in (
                (self.schedules, "asset schedules"),
                (self.alias_writers, "alias writers"),
                (self.freshness, "freshness"),
            )
            if count
        ]
        requests = f"{self.requests} requests" + (f" ({', '.join(extra)})" if extra else "")
        return (
            f"captured {self.dags} DAGs, {self.tasks} tasks, {self.assets} assets: "
            f"{requests}, {self.retries} retries, {self.seconds:.1f} s"
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
    """One paginated list (/dags, /assets, ...) being collected.

    ``required``: the capture fails without it (the DAGs); any other list that fails becomes
    ``failure``, and a lossiness record. ``on_item`` is called once per new item.
    """

    path: str
    key: str
    order_by: str
    id_key: str
    params: dict[str, Any] = field(default_factory=dict)
    required: bool = False
    on_item: Callable[[Any], None] | None = None
    failure: str | None = None
    stopped: str | None = None  # why paging stopped early (a server that repeats or never ends)
    items: dict[Any, Any] = field(default_factory=dict)
    in_flight: int = 0  # page requests out now: never more than the crawl's window
    next_offset: int = 0  # the next page of the first sweep, up to planned_end
    planned_end: int = 0  # the total the first page announced
    page_size: int = 0
    first_total: int | None = None
    last_total: int | None = None
    requested: set[int] = field(default_factory=set)
    ended: bool = False  # an empty page was seen: there is nothing past it
    ids_only: bool = False  # read and keep only the ids (a filtered list whose objects the DAG list has)
    then: _List | None = None  # a list to start once this one is complete (never two big bodies at once)
    max_items: int | None = None  # read no further (the newest events): ``truncated`` then
    truncated: bool = False
    pages: int = 0  # page requests sent


_NOTHING = object()


def _answer(future: Future[Any], find: Callable[[dict[str, Any]], Any], lack: str) -> tuple[Any, str | None]:
    """What ``find`` reads off a per-item answer, or why there is nothing: the request failed, or
    its answer lacked what was asked for (``find`` gives ``_NOTHING``). An auth failure fails all."""
    try:
        body = future.result()
    except AuthError:
        raise
    except CaptureError as exc:
        return None, str(exc)
    found = find(body) if isinstance(body, dict) else _NOTHING
    return (None, f"the answer has {lack}") if found is _NOTHING else (found, None)


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
        self.expressions: dict[str, Any] = {}  # dag_id -> its asset condition, from its details
        self.events: dict[str, list[Any]] = {}  # asset URI -> its newest events
        self.dags_found = 0
        self.schedules = 0
        self.alias_assets = 0
        self.window = max(4, 4 * client.source.concurrency)  # requests per list, and per-item ones
        self.backlog: deque[tuple[str, Any, Callable[..., Any], tuple[Any, ...]]] = deque()
        self.items_in_flight = 0

    def run(self) -> Capture:
        started = time.monotonic()
        captured_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        info = self.client.info or self.client.connect()
        self.v2 = info.api_version == "v2"
        dags = _List("/dags", "dags", "dag_id", "dag_id", required=True, on_item=self._dag_found)
        assets = _List(
            "/assets" if self.v2 else "/datasets",
            "assets" if self.v2 else "datasets",
            "id",
            "uri",
            on_item=self._asset_found,
        )
        lists = [dags, assets]
        if self.v2:  # Airflow 2 has neither asset aliases in its API nor asset conflicts
            aliases = _List("/assets/aliases", "asset_aliases", "id", "id")
            warnings = _List(
                "/dagWarnings", "dag_warnings", "dag_id", "dag_id", params={"warning_type": ASSET_CONFLICT}
            )
            # the DAGs whose latest run failed (freshness): one filtered list, not a request per DAG
            failed = _List(
                "/dags", "dags", "dag_id", "dag_id", params={"last_dag_run_state": "failed"}, ids_only=True
            )
            dags.then = failed  # after the DAG list: a server that ignores the filter sends it again
            lists += [aliases, warnings]
        since = _window_start(captured_at, info.api_version)
        recent = None
        if not _tells_last_updates(info.api_version, info.airflow_version):
            recent = _List(
                "/assets/events" if self.v2 else "/datasets/events",
                "asset_events" if self.v2 else "dataset_events",
                "-timestamp",
                "id",
                params={"timestamp_gte": since} if since else {},
                max_items=RECENT_EVENTS_MAX,
            )
            lists.append(recent)
        # Not a `with` block: on an error, a timeout or a cancellation the capture must end now,
        # not after the requests in flight (each ends by itself within the read timeout).
        self.pool = ThreadPoolExecutor(
            self.client.source.concurrency, thread_name_prefix="coremodels-capture"
        )
        try:
            for listing in lists:
                self._page(listing, 0)
            self._drain()
        except BaseException:
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.pool.shutdown(wait=True)

        self._note_changes(dags, "dags", "DAGs")
        dags_doc: dict[str, Any] = {"dags": self._ordered_dags(dags), "total_entries": len(dags.items)}
        datasets: Any = ABSENT
        if assets.failure is None:
            self._note_changes(assets, "datasets", "assets")
            datasets = {assets.key: list(assets.items.values()), "total_entries": len(assets.items)}
        else:
            self.lossiness.append(Lossiness("datasets", f"datasets artifact ignored: {assets.failure}"))
        dags_doc["captured_at"] = captured_at
        if not self.v2:  # Airflow 2's DAG list cannot be filtered by the latest run's state
            self.lossiness.append(
                Lossiness("dags", "latest run states unknown on Airflow 2 (producer-failing not judged)")
            )
        if self.v2:
            dags_doc["dag_warnings"] = self._listed(warnings, "dags", "asset conflict warnings")
            if failed.failure is None:
                dags_doc["failed_latest_run"] = sorted(failed.items)
            else:
                self.lossiness.append(
                    Lossiness(
                        "dags", f"latest run states unknown (producer-failing not judged): {failed.failure}"
                    )
                )
            if datasets is not ABSENT:
                datasets["asset_aliases"] = self._listed(aliases, "datasets", "asset aliases")
                datasets["asset_events"] = [
                    event for uri in sorted(self.events) for event in self.events[uri]
                ]
        if recent is not None and datasets is not ABSENT:
            recent_events = self._recent_events(recent, since)
            if recent_events is not None:
                datasets["recent_events"] = recent_events
        state = State(__version__, info.airflow_version, info.api_version, captured_at)
        summary = CaptureSummary(
            dags=len(dags.items),
            tasks=sum(len(r["tasks"]) for r in self.tasks.values()),
            assets=len(assets.items) if assets.failure is None else 0,
            requests=self.client.stats.requests,
            retries=self.client.stats.retries,
            seconds=time.monotonic() - started,
            schedules=self.schedules,
            alias_writers=self.alias_assets,
            freshness=sum(listing.pages for listing in (failed, recent) if listing is not None)
            if self.v2
            else (recent.pages if recent is not None else 0),
        )
        return Capture(
            dags=dags_doc,
            tasks={k: self.tasks[k] for k in sorted(self.tasks)},
            datasets=datasets,
            state=state,
            lossiness=self.lossiness,
            summary=summary,
        )

    def _ordered_dags(self, dags: _List) -> list[Any]:
        """The DAGs by dag_id, each asset-scheduled one with the condition its details gave."""
        ordered = []
        for dag_id in sorted(dags.items):
            dag = dags.items[dag_id]
            if dag_id in self.expressions and isinstance(dag, dict):
                key = "asset_expression" if self.v2 else "dataset_expression"
                dag = {**dag, key: self.expressions[dag_id]}
            ordered.append(dag)
        return ordered

    def _recent_events(self, listing: _List, since: str | None) -> dict[str, Any] | None:
        """The newest events as the parse reads them: complete back to ``since`` (the window's
        start; without a time filter, the beginning), or to the oldest one read when cut short."""
        if listing.failure is not None:
            self.lossiness.append(
                Lossiness(
                    "datasets", f"last asset updates unknown (asset-stale not judged): {listing.failure}"
                )
            )
            return None
        events = [
            {"uri": raw.get("uri") or raw.get("dataset_uri"), "timestamp": raw.get("timestamp")}
            for raw in listing.items.values()
            if isinstance(raw, dict)
        ]
        if listing.truncated:
            times = sorted(str(e["timestamp"]) for e in events if isinstance(e["timestamp"], str))
            since = times[0] if times else since
        return {"since": since or _EPOCH, "events": events}

    def _listed(self, listing: _List, artifact: str, noun: str) -> list[Any]:
        if listing.failure is not None:
            self.lossiness.append(Lossiness(artifact, f"{noun} could not be listed: {listing.failure}"))
        return list(listing.items.values())

    # -- scheduling -----------------------------------------------------------------------

    def _submit(self, kind: str, key: Any, func: Callable[..., Any], *args: Any) -> None:
        future = self.pool.submit(func, *args)
        self.pending[future] = (kind, key)
        future.add_done_callback(self.done.put)

    def _later(self, kind: str, key: Any, func: Callable[..., Any], *args: Any) -> None:
        """A per-item request (tasks, details, events): queued, and sent as the window allows.

        However many items a page brings (a server that ignores ``limit`` may send a million),
        no more than ``window`` of these requests exist at once: memory follows the requests
        in flight and the answers received, not what a server claims.
        """
        self.backlog.append((kind, key, func, args))
        self._pump()

    def _pump(self) -> None:
        while self.backlog and self.items_in_flight < self.window:
            kind, key, func, args = self.backlog.popleft()
            self.items_in_flight += 1
            self._submit(kind, key, func, *args)

    def _page(self, listing: _List, offset: int) -> None:
        listing.in_flight += 1
        listing.pages += 1
        listing.requested.add(offset)
        params = {**listing.params, "limit": PAGE_LIMIT, "offset": offset, "order_by": listing.order_by}
        if listing.ids_only:
            get = functools.partial(self.client.get_json, decoder=decode_dag_ids_page)
            self._submit("page", (listing, offset), get, listing.path, params)
        else:
            self._submit("page", (listing, offset), self.client.get_json, listing.path, params)

    def _drain(self) -> None:
        handlers: dict[str, Callable[[Any, Future[Any]], None]] = {
            "tasks": self._tasks_done,
            "details": self._details_done,
            "events": self._events_done,
            "page": lambda key, future: self._page_done(key[0], key[1], future),
        }
        while self.pending or self.backlog:
            try:  # a short timeout, so a cancellation from another thread (on_kill) is seen
                future = self.done.get(timeout=0.2)
            except queue.Empty:
                future = None
            if self.client.cancelled:
                raise CaptureError("the capture was cancelled")
            if self.client.deadline.spent():
                budget = self.client.deadline.seconds
                raise CaptureError(
                    f"the capture of {self.client.source.base_url} did not finish within its budget of "
                    f"{budget:g} s (--retry-budget): {self.dags_found} DAGs listed so far"
                )
            if future is None:
                continue
            kind, key = self.pending.pop(future)
            if kind != "page":
                self.items_in_flight -= 1
            handlers[kind](key, future)
            self._pump()

    def _page_done(self, listing: _List, offset: int, future: Future[Any]) -> None:
        listing.in_flight -= 1
        if listing.failure is not None or listing.stopped is not None:
            return  # another page of this list failed, or its paging was stopped
        try:
            body = future.result()
        except CaptureError as exc:  # an AuthError too: a user may read DAGs but not, say, warnings
            if listing.required:  # the dags list is the one thing a capture cannot do without
                raise
            listing.failure = f"{listing.path} could not be fetched: {exc}"
            return
        items = body.get(listing.key) if isinstance(body, dict) else None
        total = body.get("total_entries") if isinstance(body, dict) else None
        if not isinstance(items, list):
            problem = f"{listing.path} answered without a {listing.key!r} list"
            if listing.required:
                raise CaptureError(
                    f"{self.client.source.base_url}{self.client.api_path(listing.path)}: {problem}"
                )
            listing.failure = problem
            return
        if isinstance(total, int):
            listing.first_total = total if listing.first_total is None else listing.first_total
            listing.last_total = total
        if not items:
            listing.ended = True
        new = 0
        for raw in items:
            item_id = raw.get(listing.id_key) if isinstance(raw, dict) else None
            if item_id is None or item_id in listing.items:
                continue  # a page boundary moved under a concurrent change: already have it
            new += 1
            if listing.ids_only:
                listing.items[item_id] = None
            else:
                listing.items[item_id] = raw if self.keep_raw else self._reduce(listing.key, raw)
            if listing.on_item is not None:
                listing.on_item(raw)
        if offset and items and not new:
            # The same items again: a server that ignores offset would send them forever.
            self._stop(listing, f"the page at offset {offset} repeated {len(items)} items already listed")
            return
        if offset == 0 and items:
            listing.page_size = len(items)  # the server may cap pages below our limit
            listing.next_offset = len(items)
            listing.planned_end = total if isinstance(total, int) else 0
        self._fill(listing)
        self._maybe_more(listing)
        self._start_next(listing)

    def _start_next(self, listing: _List) -> None:
        """Once ``listing`` is complete (nothing of it out, nothing more asked), start its ``then``."""
        follower = listing.then
        if follower is not None and not listing.in_flight:
            listing.then = None
            self._page(follower, 0)

    def _fill(self, listing: _List) -> None:
        """Request the first sweep's pages, no more than ``window`` of them out at once.

        A ``total_entries`` of a billion schedules nothing up front: each answer makes room for
        the next request, so pages follow what arrives.
        """
        end = (
            listing.planned_end if listing.max_items is None else min(listing.planned_end, listing.max_items)
        )
        listing.truncated = listing.max_items is not None and listing.planned_end > listing.max_items
        while listing.in_flight < self.window and listing.next_offset < end:
            self._page(listing, listing.next_offset)
            listing.next_offset += listing.page_size

    def _stop(self, listing: _List, why: str) -> None:
        """Stop paging ``listing`` for good: a lossiness record saying what was kept, or, for the
        DAG list, a failed capture, since a partial DAG list pushed as the estate would report
        every DAG it missed as removed."""
        listing.stopped = why
        message = (
            f"{listing.path} paging stopped: {why}; {len(listing.items)} listed "
            f"where the server said {listing.last_total}"
        )
        if listing.required:
            raise CaptureError(
                f"{self.client.source.base_url}{self.client.api_path(listing.path)}: {message}"
            )
        self.lossiness.append(Lossiness("datasets", message))

    def _reduce(self, key: str, raw: Any) -> Any:
        if key in ("asset_events", "dataset_events"):
            return reduce_recent_event(raw)
        if key == "dags":
            return reduce_dag(raw)
        if key == "dag_warnings":
            return reduce_warning(raw)
        if key == "asset_aliases":
            return {"name": raw.get("name")} if isinstance(raw, dict) else raw
        return reduce_asset(raw, keep_extra=self.keep_asset_extra)

    def _maybe_more(self, listing: _List) -> None:
        """Once a list's pages are all in: fetch one more page while it may hold more than we have.

        That happens when the list grew during the capture, when a page boundary moved, or when
        the server's ``total_entries`` is not to be trusted (Airflow 2's datasets count ignored
        filters); an empty page ends it either way.
        """
        if listing.ended or not listing.page_size or listing.stopped is not None:
            return
        if listing.max_items is not None and len(listing.items) >= listing.max_items:
            listing.truncated = True
            return
        if listing.in_flight or listing.next_offset < listing.planned_end:
            return
        if listing.last_total is not None and len(listing.items) >= listing.last_total:
            return
        first = listing.first_total or 0
        if len(listing.items) >= max(2 * first, first + 10 * listing.page_size):
            self._stop(listing, "the list kept growing past twice what it first announced")
            return
        self._page(listing, max(listing.requested) + listing.page_size)

    def _dag_found(self, raw: Any) -> None:
        dag_id = raw["dag_id"]
        if not isinstance(dag_id, str):
            return
        self.dags_found += 1
        if dag_id in (".", ".."):
            # Legal dag_ids that no URL path can name: encoded or not, clients and servers read
            # them as "here" and "up", and /dags/../tasks is another endpoint.
            self._tasks_lost(dag_id, f"a dag_id of {dag_id!r} cannot be named in a URL path; not requested")
            return
        path = f"/dags/{quote(dag_id, safe='')}"
        self._later("tasks", dag_id, self.client.get_json, f"{path}/tasks")
        if scheduled_on_assets(raw):
            self.schedules += 1
            self._later("details", dag_id, self.client.get_json, f"{path}/details")

    def _asset_found(self, raw: Any) -> None:
        """An asset reached through an alias: one page of its newest events names who wrote it."""
        asset_id, uri = raw.get("id"), raw.get("uri")
        if not raw.get("aliases") or not isinstance(asset_id, int) or not isinstance(uri, str):
            return
        self.alias_assets += 1
        params = {"asset_id": asset_id, "limit": EVENTS_LIMIT, "order_by": "-timestamp"}
        self._later("events", uri, self.client.get_json, "/assets/events", params)

    def _details_done(self, dag_id: str, future: Future[Any]) -> None:
        key = "asset_expression" if self.v2 else "dataset_expression"
        found, problem = _answer(future, lambda body: body.get(key, _NOTHING), f"no {key}")
        if problem is None:
            self.expressions[dag_id] = found
            return
        why = f"the asset schedule of DAG '{dag_id}' could not be captured: {problem}"
        self.lossiness.append(Lossiness("dags", why, dag_id))

    def _events_done(self, uri: str, future: Future[Any]) -> None:
        def events(body: dict[str, Any]) -> Any:
            found = body.get("asset_events")
            return found if isinstance(found, list) else _NOTHING

        found, problem = _answer(future, events, "no 'asset_events' list")
        if problem is None:
            self.events[uri] = found if self.keep_raw else [reduce_event(e) for e in found]
            return
        why = f"who writes asset '{uri}' through an alias could not be captured: {problem}"
        self.lossiness.append(Lossiness("datasets", why, uri))

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


_EPOCH = "1970-01-01T00:00:00Z"


def _tells_last_updates(api_version: str | None, airflow_version: str | None) -> bool:
    """Whether ``GET /assets`` says when each asset was last updated (Airflow 3.1 and later)."""
    if api_version != "v2":
        return False
    numbers = []
    for part in (airflow_version or "").split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers) >= (3, 1)


def _window_start(captured_at: str, api_version: str | None) -> str | None:
    """Where the list of recent events starts: Airflow 3 filters events by time, Airflow 2 cannot."""
    if api_version != "v2":
        return None
    start = datetime.strptime(captured_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (start - timedelta(days=RECENT_EVENTS_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")


def reduce_recent_event(raw: Any) -> Any:
    """An event as the freshness rules read it: the asset and the time."""
    if not isinstance(raw, dict):
        return raw
    return {key: raw[key] for key in ("id", "uri", "dataset_uri", "timestamp") if key in raw}
