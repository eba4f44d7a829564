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

import collections
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
from airflow_provider_coremodels.capture.client import AirflowApiClient, NotFound, NotSent
from airflow_provider_coremodels.core import ABSENT, Estate, Lossiness, State, build_estate
from airflow_provider_coremodels.core.reading.broken import (
    INCLUDES_STALE,
    error_line,
    is_stale,
    read_import_errors,
)
from airflow_provider_coremodels.core.reading.conflicts import ASSET_CONFLICT
from airflow_provider_coremodels.core.reading.deadlines import DEADLINE_ALERTS, AlertSelection, Selected
from airflow_provider_coremodels.core.reading.parse import (
    decode_dag_ids_page,
    reduce_asset,
    reduce_dag,
    reduce_event,
    reduce_task,
    reduce_warning,
    scheduled_on_assets,
)
from airflow_provider_coremodels.core.reading.references import DEPENDENCIES, reduce_graph, unchecked_record
from airflow_provider_coremodels.core.reading.stream import AnswerReader, Kept
from airflow_provider_coremodels.errors import AuthError, CaptureError
from airflow_provider_coremodels.redaction import SECRETS, scrub_credentials, scrubbed_logger

log = scrubbed_logger(__name__)

PAGE_LIMIT = 100

ProgressCallback = Callable[[int, int], None]


#: The dependency graph Airflow's UI draws from the serialized DAGs (Airflow 3.0+), outside /api/v2.
DEPENDENCIES_PATH = "/ui/dependencies"
#: A DAG's deadline alerts, served to the UI one DAG at a time (Airflow 3.3+; core/reading/deadlines.py).
DEADLINE_ALERTS_PATH = "/ui/dags/{dag_id}/deadlineAlerts"
#: Airflow 2's API has no owner links in any DAG answer, its details included (recorded on 2.11).
OWNER_LINKS_UNSEEN_V1 = "owner links (owner_links) unknown: Airflow 2's REST API shows them for no DAG"
DEADLINES_NOT_READ = (
    "deadline alerts unknown: not read, as the source asks (the connection's deadline_alerts extra "
    "is false, or --no-deadline-alerts); the rules' deadline check is not judged"
)
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
    documentation: int = 0  # details requests for DAGs without a description (their doc_md)
    deadlines: int = 0  # deadline-alert requests: one per DAG, on Airflow 3.3+
    import_errors: int = 0  # files that do not import
    pacing: str = ""  # how the window moved: why a capture took the time it did (``Pacer.describe``)

    def line(self) -> str:
        extra = [
            f"{count} for {what}"
            for count, what in (
                (self.schedules, "asset schedules"),
                (self.documentation, "doc_md"),
                (self.deadlines, "deadline alerts"),
                (self.alias_writers, "alias writers"),
                (self.freshness, "freshness"),
            )
            if count
        ]
        requests = f"{self.requests} requests" + (f" ({', '.join(extra)})" if extra else "")
        broken = f", {self.import_errors} import errors" if self.import_errors else ""
        pacing = f"; {self.pacing}" if self.pacing else ""
        return (
            f"captured {self.dags} DAGs, {self.tasks} tasks, {self.assets} assets{broken}: "
            f"{requests}, {self.retries} retries, {self.seconds:.1f} s{pacing}"
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
        """The estate, parsed exactly as an offline audit of the captured files parses it: what
        the capture could not get rides in the dags artifact (``lossiness``)."""
        return build_estate(
            self.dags,
            self.tasks,
            self.datasets,
            state=self.state,
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
    id_key: str | tuple[str, ...]  # what tells two items apart: a key, or keys together
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
    complete: bool = False  # nothing of it is out, and nothing more will be asked
    on_complete: Callable[[], None] | None = None  # called once, when it completes or fails


_NOTHING = object()

#: What a capture that keeps no raw answers keeps of a DAG's doc_md: the parse reads only whether
#: the DAG has one (core/reading/parse.py), and a doc_md may run to the cap on one answer.
_DOC_KEPT = 100

#: Lists whose items are reduced even for ``capture --out`` (which keeps every other object as the
#: server sent it): a traceback or a warning can quote anything a DAG file holds, a secret too.
_ALWAYS_REDUCED = ("import_errors", "dag_warnings")


def _item_id(raw: Any, id_key: str | tuple[str, ...]) -> Any:
    if not isinstance(raw, dict):
        return None
    if isinstance(id_key, str):
        return raw.get(id_key)
    values = tuple(raw.get(key) for key in id_key)
    return None if any(value is None for value in values) else values


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

    With ``keep_raw`` every object is kept as the server sent it (for ``capture --out``), but for
    a DAG's deadline alerts: the ones its metadata lists (50 at most), as served; without, DAGs,
    tasks and assets are reduced to the keys the parse reads as they arrive (a DAG's tasks and
    alerts as each is decoded, the answer never held whole), so memory follows the estate rather
    than the size of the responses or how many DAGs sent large ones (``keep_asset_extra`` keeps
    assets' ``extra``, for an estate that includes it).
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
        self.details: dict[str, dict[str, Any]] = {}  # dag_id -> what its details add (condition, doc_md)
        self.details_asked: set[str] = set()  # the DAGs whose details were asked for
        self.events: dict[str, list[Any]] = {}  # asset URI -> its newest events
        self.dags_found = 0
        self.tasks_lost = 0  # the DAGs whose tasks could not be captured
        self.schedules = 0
        self.documentation = 0
        self.alias_assets = 0
        self.stale: dict[str, Any] = {}  # dag_id -> a stale DAG: its tasks wait for the import errors
        self.graph: Any = None  # GET /ui/dependencies, cut down (core/reading/references.py)
        self.graph_problem: str | None = None
        self.serves_deadlines = False  # the line serves deadline alerts (set in run)
        self.reads_deadlines = False  # ... and the source asks for them
        self.deadlines_asked = 0
        self.unsent: collections.Counter[str] = collections.Counter()  # asked, never sent: not in the summary
        self.deadlines_lost: dict[str, str] = {}  # dag_id -> why its deadline alerts are unknown
        self.window = max(4, 4 * client.source.concurrency)  # the pages of a list out at once
        # Per-item requests out at once: no more than the pool has threads, so that none waits in
        # the pool's queue, where a page submitted after it would wait behind it whatever place
        # the pacer gives pages (``Pacer.enter``'s ``first``): a page takes the next free thread.
        self.items_window = client.source.concurrency
        self.backlog: deque[tuple[str, Any, Callable[..., Any], tuple[Any, ...]]] = deque()
        self.items_in_flight = 0

    def run(self) -> Capture:
        started = time.monotonic()
        captured_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        info = self.client.info or self.client.connect()
        self.v2 = info.api_version == "v2"
        self.serves_deadlines = self.v2 and _at_least(info.airflow_version, (3, 3))
        # what the client cannot reach is not asked for: no request counted that was never sent
        self.reads_deadlines = (
            self.serves_deadlines
            and self.client.source.deadline_alerts
            and self.client.unreachable_server_paths is None
        )
        # Stale DAGs too: a DAG whose file broke is stale on Airflow 3 (core/reading/broken.py).
        everything = {"exclude_stale": "false"} if self.v2 else {"only_active": "false"}
        dags = _List(
            "/dags", "dags", "dag_id", "dag_id", params=everything, required=True, on_item=self._dag_found
        )
        assets = _List(
            "/assets" if self.v2 else "/datasets",
            "assets" if self.v2 else "datasets",
            "id",
            "uri",
            on_item=self._asset_found,
        )
        errors = _List("/importErrors", "import_errors", "import_error_id", "import_error_id")
        # A stale DAG is either broken (its file does not import: kept, its tasks asked for) or
        # gone: which, only the import errors tell, so its requests wait for both lists.
        dags.on_complete = errors.on_complete = functools.partial(self._classify_stale, dags, errors)
        lists = [dags, assets, errors]
        if self.v2:  # Airflow 2 has neither asset aliases in its API nor DAG warnings
            aliases = _List("/assets/aliases", "asset_aliases", "id", "id")
            # Airflow keeps one warning per (DAG, type): a DAG may have an asset conflict and another
            warnings = _List("/dagWarnings", "dag_warnings", "dag_id", ("dag_id", "warning_type"))
            # the assets Airflow refused to activate hide from the default list (core/reading/conflicts.py)
            every_asset = _List(
                "/assets",
                "assets",
                "id",
                "id",
                params={"only_active": "false"},
                on_item=functools.partial(self._inactive_found, assets),
            )
            # the DAGs whose latest run failed (freshness): one filtered list, not a request per DAG
            failed = _List(
                "/dags", "dags", "dag_id", "dag_id", params={"last_dag_run_state": "failed"}, ids_only=True
            )
            dags.then = failed  # after the DAG list: a server that ignores the filter sends it again
            assets.then = every_asset  # likewise: never two big asset bodies at once
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
            if self.v2:  # what the DAGs' code declares, to check the asset references against
                graph = functools.partial(self.client.get_json, under_api=False)
                self._later("graph", None, graph, DEPENDENCIES_PATH)
            self._drain()
        except BaseException:
            self.pool.shutdown(wait=False, cancel_futures=True)
            raise
        self.pool.shutdown(wait=True)

        self._note_changes(dags, "dags", "DAGs")
        dags_doc: dict[str, Any] = {
            "dags": self._ordered_dags(dags),
            "total_entries": len(dags.items),
            INCLUDES_STALE: True,
        }
        if errors.failure is None:
            dags_doc["import_errors"] = list(errors.items.values())
        else:
            self.lossiness.append(Lossiness("dags", f"import errors unknown: {errors.failure}"))
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
            dags_doc["dag_warnings"] = self._listed(warnings, "dags", "DAG warnings")
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
                inactive = self._inactive(every_asset, assets)
                if inactive is not None:  # else the parse cannot tell "nothing written" from "not active yet"
                    datasets["inactive_assets"] = inactive
                if self.graph is not None:
                    datasets[DEPENDENCIES] = self.graph
                elif self.graph_problem is not None:
                    self.lossiness.append(unchecked_record(self.graph_problem))
        if recent is not None and datasets is not ABSENT:
            recent_events = self._recent_events(recent, since)
            if recent_events is not None:
                datasets["recent_events"] = recent_events
        deadline_record = self._deadline_record(info.airflow_version, info.api_version)
        if deadline_record is not None:
            self.lossiness.append(deadline_record)
        linked = any("owner_links" in found for found in self.details.values())
        if not self.v2 and dags.items:
            self.lossiness.append(Lossiness("dags", OWNER_LINKS_UNSEEN_V1))
        elif linked and len(self.details_asked) < len(dags.items):  # the deployment uses them
            self.lossiness.append(self._owner_links_record(len(dags.items)))
        # What the capture could not get rides in the files too: an offline audit of them says it.
        dags_doc["lossiness"] = [
            {"artifact": r.artifact, "message": r.message, **({"subject": r.subject} if r.subject else {})}
            for r in self.lossiness
        ]
        state = State(__version__, info.airflow_version, info.api_version, captured_at)
        summary = CaptureSummary(
            dags=len(dags.items),
            tasks=sum(len(r["tasks"]) for r in self.tasks.values()),
            assets=len(assets.items) if assets.failure is None else 0,
            requests=self.client.stats.requests,
            retries=self.client.stats.retries,
            seconds=time.monotonic() - started,
            schedules=self.schedules - self.unsent["schedules"],
            documentation=self.documentation - self.unsent["documentation"],
            deadlines=self.deadlines_asked - self.unsent["deadlines"],
            import_errors=len(errors.items),
            pacing=self.client.pacer.describe(),
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

    def _deadline_record(self, airflow_version: str | None, api_version: str | None) -> Lossiness | None:
        """Why some or all DAGs' deadline alerts are unknown (core/reading/deadlines.py), or None: all read.
        Said on every line that cannot show them, since nothing tells whether the estate uses them."""
        if not self.serves_deadlines:
            return unseen_deadlines(airflow_version, api_version)
        unreachable = self.client.unreachable_server_paths
        if unreachable is not None and self.client.source.deadline_alerts:
            return Lossiness(
                "dags",
                f"deadline alerts unknown: not read, {unreachable} and Airflow serves them at "
                f"GET {DEADLINE_ALERTS_PATH} only; the rules' deadline check is not judged",
            )
        if not self.reads_deadlines:
            return Lossiness("dags", DEADLINES_NOT_READ)
        if not self.deadlines_lost:
            return None
        first = min(self.deadlines_lost)
        return Lossiness(
            "dags",
            f"deadline alerts unknown for {len(self.deadlines_lost)} of {self.deadlines_asked} DAGs "
            f"(the rules' deadline check does not judge them): {first}: {self.deadlines_lost[first]}",
        )

    def _owner_links_record(self, total: int) -> Lossiness:
        """Only a DAG's details give its ``owner_links``, and the capture reads them only where the
        list says too little (an asset schedule, a missing description): the rest stay unknown, not
        absent, rather than one more request per DAG. Said where some DAG's details show links (the
        deployment uses them); where none does, an estate without links is the likely truth and the
        docs say what is unknown."""
        asked = len(self.details_asked)
        return Lossiness(
            "dags",
            f"owner links (owner_links) known only for the {asked} of {total} DAGs whose details were read "
            "(those scheduled on assets or without a description); the others' are unknown",
        )

    def _ordered_dags(self, dags: _List) -> list[Any]:
        """The DAGs by dag_id, each with what its details gave (an asset condition, a doc_md)."""
        ordered = []
        for dag_id in sorted(dags.items):
            dag = dags.items[dag_id]
            if dag_id in self.details and isinstance(dag, dict):
                dag = {**dag, **self.details[dag_id]}
            ordered.append(dag)
        return ordered

    def _inactive(self, every: _List, active: _List) -> list[Any] | None:
        """The assets of ``GET /assets?only_active=false`` that the default list lacks and some DAG
        references or an alias reached: a refused twin shows only here until the scheduler warns of
        it, and an asset written through an alias until the scheduler activates it. None when the
        list could not be read."""
        if every.failure is not None:
            self.lossiness.append(
                Lossiness(
                    "datasets",
                    "assets Airflow refused to activate, or has not activated yet (written through an "
                    f"alias), unknown: {every.failure}",
                )
            )
            return None
        ids = {raw.get("id") for raw in active.items.values() if isinstance(raw, dict)}
        return [
            raw
            for asset_id, raw in every.items.items()
            if isinstance(raw, dict)
            and asset_id not in ids
            and any(
                raw.get(key) for key in ("producing_tasks", "scheduled_dags", "consuming_tasks", "aliases")
            )
        ]

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
        no more than ``items_window`` of these requests exist at once: memory follows the requests
        in flight and the answers received, not what a server claims.
        """
        self.backlog.append((kind, key, func, args))
        self._pump()

    def _pump(self) -> None:
        while self.backlog and self.items_in_flight < self.items_window:
            kind, key, func, args = self.backlog.popleft()
            self.items_in_flight += 1
            self._submit(kind, key, func, *args)

    def _page(self, listing: _List, offset: int) -> None:
        listing.in_flight += 1
        listing.pages += 1
        listing.requested.add(offset)
        params = {**listing.params, "limit": PAGE_LIMIT, "offset": offset, "order_by": listing.order_by}
        # a page goes before the per-item requests waiting for a slot: its answer brings the next ones
        decoder = decode_dag_ids_page if listing.ids_only else None
        get = functools.partial(self.client.get_json, decoder=decoder, first=True)
        self._submit("page", (listing, offset), get, listing.path, params)

    def _drain(self) -> None:
        handlers: dict[str, Callable[[Any, Future[Any]], None]] = {
            "tasks": self._tasks_done,
            "details": self._details_done,
            "graph": self._graph_done,
            "deadlines": self._deadlines_done,
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
        if listing.failure is None and listing.stopped is None:  # else another page failed, or paging stopped
            self._read_page(listing, offset, future)
        self._settle(listing)

    def _read_page(self, listing: _List, offset: int, future: Future[Any]) -> None:
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
            item_id = _item_id(raw, listing.id_key)
            if item_id is None or item_id in listing.items:
                continue  # a page boundary moved under a concurrent change: already have it
            new += 1
            if listing.ids_only:
                listing.items[item_id] = None
            elif self.keep_raw and listing.key not in _ALWAYS_REDUCED:
                listing.items[item_id] = raw
            else:
                listing.items[item_id] = self._reduce(listing.key, raw)
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

    def _settle(self, listing: _List) -> None:
        """Once ``listing`` is complete (nothing of it out, nothing more asked, or it failed):
        start its ``then`` (unless it failed) and tell its ``on_complete``, once."""
        if listing.in_flight or listing.complete:
            return
        listing.complete = True
        if listing.then is not None and listing.failure is None:  # what follows a failed list is moot
            self._page(listing.then, 0)
        if listing.on_complete is not None:
            listing.on_complete()

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
        if key == "import_errors":
            return reduce_import_error(raw)
        if key in ("asset_events", "dataset_events"):
            return reduce_recent_event(raw)
        if key == "dags":
            return reduce_dag(raw)
        if key == "dag_warnings":
            return scrubbed_warning(raw)
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
        if is_stale(raw):
            self.stale[dag_id] = raw  # broken or gone: the import errors will tell (_classify_stale)
            return
        self.dags_found += 1
        self._ask_about(dag_id, raw)

    def _ask_about(self, dag_id: str, raw: Any) -> None:
        """A DAG's tasks, and its details where the list does not say enough: the condition of a
        DAG scheduled on assets, the ``doc_md`` of one without a description."""
        if dag_id in (".", ".."):
            # Legal dag_ids that no URL path can name: encoded or not, clients and servers read
            # them as "here" and "up", and /dags/../tasks is another endpoint.
            self._tasks_lost(dag_id, f"a dag_id of {dag_id!r} cannot be named in a URL path; not requested")
            if self.reads_deadlines:
                self.deadlines_asked += 1
                self.unsent["deadlines"] += 1
                self.deadlines_lost[dag_id] = "a dag_id that cannot be named in a URL path; not requested"
            return
        path = f"/dags/{quote(dag_id, safe='')}"
        self._later("tasks", dag_id, self._tasks_of, f"{path}/tasks")
        wants = []
        if scheduled_on_assets(raw):
            self.schedules += 1
            wants.append("asset_expression" if self.v2 else "dataset_expression")
        description = raw.get("description")
        if not (isinstance(description, str) and description.strip()):
            self.documentation += 1
            wants.append("doc_md")
        if wants:
            self.details_asked.add(dag_id)
            self._later("details", (dag_id, tuple(wants)), self.client.get_json, f"{path}/details")

    def _classify_stale(self, dags: _List, errors: _List) -> None:
        """Once the DAG list and the import errors are in: ask about the stale DAGs whose file does
        not import (kept as last parsed); the others are gone, and nothing is asked of them."""
        if not (dags.complete and errors.complete) or not self.stale:
            return
        stale, self.stale = self.stale, {}
        broken = read_import_errors({"import_errors": list(errors.items.values())}, stale, [])[1]
        for dag_id in sorted(broken):
            self.dags_found += 1
            self._ask_about(dag_id, stale[dag_id])

    def _asset_found(self, raw: Any) -> None:
        """An asset reached through an alias: one page of its newest events names who wrote it."""
        asset_id, uri = raw.get("id"), raw.get("uri")
        if not raw.get("aliases") or not isinstance(asset_id, int) or not isinstance(uri, str):
            return
        self.alias_assets += 1
        params = {"asset_id": asset_id, "limit": EVENTS_LIMIT, "order_by": "-timestamp"}
        self._later("events", uri, self.client.get_json, "/assets/events", params)

    def _inactive_found(self, active: _List, raw: Any) -> None:
        """An asset only ``only_active=false`` lists: one written through an alias before the scheduler
        activated it gets its one page of events too (the active list is complete by now: this list
        follows it), unless an active asset holds its URI (that one's lineage is the estate's)."""
        if not isinstance(raw, dict) or raw.get("uri") in active.items:
            return
        self._asset_found(raw)

    def _details_done(self, key: tuple[str, tuple[str, ...]], future: Future[Any]) -> None:
        dag_id, wants = key
        problem: str | None = None
        try:
            body = future.result()
        except AuthError:
            raise
        except CaptureError as exc:
            body, problem = None, str(exc)
            if isinstance(exc, NotSent):
                self.unsent.update("documentation" if want == "doc_md" else "schedules" for want in wants)
        if problem is None and not isinstance(body, dict):
            problem = "the answer is not an object"
        if isinstance(body, dict) and isinstance(body.get("owner_links"), dict) and body["owner_links"]:
            self.details.setdefault(dag_id, {})["owner_links"] = body["owner_links"]  # asked for or not
        for want in wants:
            if isinstance(body, dict) and want in body:
                value = body[want]
                if want == "doc_md" and not self.keep_raw and isinstance(value, str):
                    # the parse reads only whether there is one: not the text (any length) of each
                    value = value.strip()[:_DOC_KEPT]
                self.details.setdefault(dag_id, {})[want] = value
            elif want != "doc_md":  # a missing doc_md is a DAG without one
                why = problem or f"the answer has no {want}"
                self.lossiness.append(
                    Lossiness(
                        "dags", f"the asset schedule of DAG '{dag_id}' could not be captured: {why}", dag_id
                    )
                )
            elif problem is not None:
                self.lossiness.append(
                    Lossiness(
                        "dags", f"the doc_md of DAG '{dag_id}' could not be captured: {problem}", dag_id
                    )
                )

    def _graph_done(self, _: None, future: Future[Any]) -> None:
        """The dependency graph, or why there is none (said only where there are assets to check)."""
        try:
            body = future.result()
        except AuthError as exc:  # the capture user may read DAGs but not their dependencies
            self.graph_problem = f"GET {DEPENDENCIES_PATH} was refused: {exc}"
            return
        except CaptureError as exc:
            self.graph_problem = f"GET {DEPENDENCIES_PATH} could not be read: {exc}"
            return
        if not (isinstance(body, dict) and isinstance(body.get("edges"), list)):
            self.graph_problem = f"GET {DEPENDENCIES_PATH} answered without an edge list"
            return
        self.graph = body if self.keep_raw else reduce_graph(body)

    def _deadlines_done(self, dag_id: str, future: Future[Any]) -> None:
        """A DAG's deadline alerts, reduced (core/reading/deadlines.py), or why they are unknown: a viewer
        refused them, the DAG went during the capture, or the answer is not the list."""
        try:
            body = future.result()
        except AuthError as exc:  # a user may read DAGs and not this UI route: unknown, not fatal
            self.deadlines_lost[dag_id] = f"refused: {exc}"
            return
        except CaptureError as exc:
            self.deadlines_lost[dag_id] = str(exc)
            self.unsent["deadlines"] += isinstance(exc, NotSent)
            return
        alerts = body.get(DEADLINE_ALERTS) if isinstance(body, dict) else None
        if not isinstance(alerts, list):
            self.deadlines_lost[dag_id] = f"the answer has no {DEADLINE_ALERTS!r} list"
            return
        if not isinstance(alerts, Selected):  # a client that read the answer whole: chosen here
            selection = AlertSelection(keep_raw=self.keep_raw)
            for alert in alerts:
                selection.add(alert)
            alerts = selection.value()
        total = body.get("total_entries")
        served = alerts.seen  # chosen as read (AlertSelection): of how many
        if isinstance(total, int) and total > served:
            self.deadlines_lost[dag_id] = f"{total} alerts, more than the {served} one page holds"
            return
        self.details.setdefault(dag_id, {})[DEADLINE_ALERTS] = list(alerts)

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
            else:  # reduced as read (_tasks_reader); again here, for a client that read it whole
                self.tasks[dag_id] = {"tasks": [reduce_task(t) for t in tasks]}
        if self.progress is not None:  # counted, not summed over the records: once per DAG
            self.progress(len(self.tasks) + self.tasks_lost, self.dags_found)
        if self.reads_deadlines:
            # Asked once the DAG's tasks are answered, not with them: the backlog then holds one
            # request per DAG at most, however many DAGs a page brought.
            self.deadlines_asked += 1
            self._later("deadlines", dag_id, self._deadline_alerts_of, dag_id)

    def _tasks_of(self, path: str) -> Any:
        return self.client.get_json(path, reader=self._tasks_reader)

    def _deadline_alerts_of(self, dag_id: str) -> Any:
        path = DEADLINE_ALERTS_PATH.format(dag_id=quote(dag_id, safe=""))
        return self.client.get_json(path, {"limit": PAGE_LIMIT}, reader=self._alerts_reader, under_api=False)

    # A DAG's answers are read as they arrive, each item kept as the estate needs it (a task's
    # few keys; of the alerts, those the document lists): a capture's memory follows the estate,
    # not the size of the answers nor how many DAGs sent large ones.

    def _tasks_reader(self) -> AnswerReader:
        return AnswerReader(
            "tasks", functools.partial(Kept, None if self.keep_raw else reduce_task), bare=True
        )

    def _alerts_reader(self) -> AnswerReader:
        return AnswerReader(DEADLINE_ALERTS, functools.partial(AlertSelection, keep_raw=self.keep_raw))

    def _tasks_lost(self, dag_id: str, reason: str) -> None:
        self.tasks_lost += 1
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
    return api_version == "v2" and _at_least(airflow_version, (3, 1))


def unseen_deadlines(airflow_version: str | None, api_version: str | None = "v2") -> Lossiness | None:
    """The record of a line that cannot show deadline alerts (before 3.3), None on one that can."""
    if api_version == "v2" and _at_least(airflow_version, (3, 3)):
        return None
    version = airflow_version or "unknown"
    if api_version != "v2" or not _at_least(airflow_version, (3, 1)):
        why = f"Airflow {version} has no deadline alerts (DAG(deadline=...) is new in 3.1)"
    else:
        why = (
            f"Airflow {version} shows a DAG's deadline alerts in no endpoint "
            f"(GET {DEADLINE_ALERTS_PATH} is new in 3.3)"
        )
    return Lossiness("dags", f"deadline alerts unknown: {why}; the rules' deadline check is not judged")


def _at_least(airflow_version: str | None, wanted: tuple[int, int]) -> bool:
    """Whether ``airflow_version`` (``3.3.2``, ``3.3.0rc1``) is of the line ``wanted`` or later."""
    numbers = []
    for part in (airflow_version or "").split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers) >= wanted


def _window_start(captured_at: str, api_version: str | None) -> str | None:
    """Where the list of recent events starts: Airflow 3 filters events by time, Airflow 2 cannot."""
    if api_version != "v2":
        return None
    start = datetime.strptime(captured_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (start - timedelta(days=RECENT_EVENTS_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")


def reduce_import_error(raw: Any) -> Any:
    """An import error as the capture keeps it, raw or not: its file, and the first line of its
    error, scrubbed. A traceback can quote anything the DAG file holds (a connection string, say)
    and runs to any length: the whole of it stays in Airflow, whose Import Errors view shows it."""
    if not isinstance(raw, dict):
        return raw
    kept = {
        key: raw[key] for key in ("import_error_id", "filename", "bundle_name", "timestamp") if key in raw
    }
    trace = raw.get("stack_trace")
    if isinstance(trace, str):
        kept["stack_trace"] = error_line(SECRETS.scrub(trace))  # error_line scrubs credentials too
    return kept


def scrubbed_warning(raw: Any) -> Any:
    """A DAG warning as the capture keeps it, raw or not: its DAG, type and message, the message
    scrubbed of the secrets this run knows and of credential shapes. A runtime-varying-value
    warning quotes lines of the DAG file, which may hold anything; the parse bounds what a finding
    shows of it. An asset conflict's message names assets by URI, which the parse matches against
    the assets: only the run's own secrets are taken out of it here. (A captured answer reaches
    this already through the client's ``scrub_answer``, which takes credential shapes out of every
    message, a conflict's too: Airflow keeps no password in an asset's URI, so none is matched
    less. The scrub here serves an item handed in any other way.)"""
    kept = reduce_warning(raw)
    if isinstance(kept, dict) and isinstance(kept.get("message"), str):
        message = SECRETS.scrub(kept["message"])
        conflict = kept.get("warning_type") == ASSET_CONFLICT
        kept["message"] = message if conflict else scrub_credentials(message)
    return kept


def reduce_recent_event(raw: Any) -> Any:
    """An event as the freshness rules read it: the asset and the time."""
    if not isinstance(raw, dict):
        return raw
    return {key: raw[key] for key in ("id", "uri", "dataset_uri", "timestamp") if key in raw}
