"""A fake Airflow 2 stable REST API (``/api/v1``) that replays the hand-written fixtures.

No Airflow 2 server runs in this project, so tests that need to talk to an Airflow 2 estate
talk to this instead. It serves the files in ``tests/fixtures/airflow2/`` on 127.0.0.1, on a
port picked by the operating system, from a background thread::

    from support.replay_server import AirflowV1ReplayServer

    with AirflowV1ReplayServer(max_page_limit=2) as server:
        response = requests.get(f"{server.base_url}/api/v1/dags", auth=("admin", "admin-v1-pw"))
        assert response.json()["total_entries"] == 5
        assert server.requests == [("GET", "/api/v1/dags")]

What it answers (everything else is a 404):

* ``GET /api/v1/version``: ``{"version": "2.10.5", "git_version": null}``, no authentication
  needed (as in Airflow 2).
* ``GET /api/v2/version``: 404 ``{"detail": "Not Found"}``, so a client that probes for
  Airflow 3 first falls back to v1.
* ``GET /api/v1/dags?limit=&offset=&order_by=``: the DAGs, one page at a time.
* ``GET /api/v1/dags/{dag_id}/tasks``: the tasks of one DAG (``dag_id`` URL-encoded).
* ``GET /api/v1/dags/{dag_id}/details``: the DAG with what its details add (``dag_details.json``).
* ``GET /api/v1/importErrors``: none (the estate's files all import).
* ``GET /api/v1/datasets/events?limit=&offset=&order_by=``: the dataset events, one page at a time.
* ``GET /api/v1/datasets?limit=&offset=&order_by=``: the datasets, one page at a time. By
  default ``total_entries`` overstates the count by 2, like the Airflow 2 bug where the count
  ignores the query's filters, so a client must stop on an empty page.
* ``POST /auth/token``: 404, Airflow 2 has no token endpoint.

Every ``/api/v1`` endpoint but ``/version`` needs HTTP Basic auth with the configured user; a
missing or wrong one gets a 401 ``application/problem+json`` body shaped like the errors of
Airflow 2's connexion API (``title``, ``status``, ``detail``, ``type``).

Every request is recorded, in arrival order, as ``(method, path_with_query)`` in
``server.requests``.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from support.local_http import BackgroundHTTPServer, RequestHandler

AIRFLOW_VERSION = "2.10.5"
DEFAULT_FIXTURES_DIR = Path(__file__).parent.parent / "fixtures" / "airflow2"
DEFAULT_PAGE_LIMIT = 100
# The extra entries ``total_entries`` reports for datasets when it "ignores filters".
DATASETS_OVERCOUNT = 2

_ERRORS_DOC = f"https://airflow.apache.org/docs/apache-airflow/{AIRFLOW_VERSION}/stable-rest-api-ref.html"
# The ``type`` links Airflow 2 puts in its problem bodies, by status code.
_PROBLEM_TYPES = {
    400: f"{_ERRORS_DOC}#section/Errors/BadRequest",
    401: f"{_ERRORS_DOC}#section/Errors/Unauthenticated",
    404: f"{_ERRORS_DOC}#section/Errors/NotFound",
    405: "about:blank",
}
# ``order_by`` attributes each list endpoint accepts (a ``-`` prefix sorts descending).
_ORDER_BY = {
    "dags": ("dag_id",),
    "datasets": ("id", "uri", "created_at", "updated_at"),
    "dataset_events": ("id", "timestamp", "source_dag_id"),
    "import_errors": ("import_error_id", "timestamp", "filename"),
}


class _Problem(Exception):
    """An error answer: ``status`` with an Airflow 2 style problem body (or a plain ``body``)."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        *,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}")
        self.status = status
        self.headers = headers or {}
        if body is None:
            self.content_type = "application/problem+json"
            self.body: dict[str, Any] = {
                "title": title,
                "status": status,
                "detail": detail,
                "type": _PROBLEM_TYPES.get(status, "about:blank"),
            }
        else:
            self.content_type = "application/json"
            self.body = body


class _ReplayHandler(RequestHandler):
    """Answers one connection's requests from the owning ``AirflowV1ReplayServer``."""

    server_version = "AirflowV1Replay"
    owner: AirflowV1ReplayServer

    def answer(self, body: bytes) -> None:
        try:
            status, payload = self.owner._route(self.command, self.path, self.headers.get("Authorization"))
        except _Problem as problem:
            self._send_json(problem.status, problem.body, problem.content_type, problem.headers)
        else:
            self._send_json(status, payload)

    def _send_json(
        self,
        status: int,
        body: Any,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class AirflowV1ReplayServer(BackgroundHTTPServer):
    """A fake Airflow 2 ``/api/v1`` on 127.0.0.1 that replays ``dags``, ``tasks`` and ``datasets``.

    Use as a context manager (or call ``start()`` and ``stop()``); the server always stops on
    exit. ``base_url`` is ``http://127.0.0.1:PORT`` once started; ``requests``, ``count()``
    and ``reset()`` are those of ``local_http.BackgroundHTTPServer``.

    ``max_page_limit`` is Airflow's ``[api] maximum_page_limit``: a page never holds more than
    that, whatever ``limit`` asks for. ``datasets_total_entries_ignores_filters`` makes the
    datasets' ``total_entries`` report ``DATASETS_OVERCOUNT`` entries more than there are.
    """

    handler_class = _ReplayHandler
    description = "the replay server"
    thread_name = "airflow-v1-replay"

    def __init__(
        self,
        fixtures_dir: str | Path = DEFAULT_FIXTURES_DIR,
        *,
        username: str = "admin",
        password: str = "admin-v1-pw",
        max_page_limit: int = 100,
        datasets_total_entries_ignores_filters: bool = True,
    ) -> None:
        super().__init__()
        if max_page_limit < 1:
            raise ValueError("max_page_limit must be at least 1")
        self.fixtures_dir = Path(fixtures_dir)
        self.username = username
        self.password = password
        self.max_page_limit = max_page_limit
        self.datasets_total_entries_ignores_filters = datasets_total_entries_ignores_filters

        self._dags: list[dict[str, Any]] = self._load("dags.json")["dags"]
        self._tasks: dict[str, Any] = self._load("tasks.json")
        self._datasets: list[dict[str, Any]] = self._load("datasets.json")["datasets"]
        self._events: list[dict[str, Any]] = self._load("dataset_events.json")["dataset_events"]
        # What GET /dags/{dag_id}/details adds to a DAG of the list: its dataset_expression.
        self._details: dict[str, dict[str, Any]] = self._load("dag_details.json")

    # -- request handling (called from the handler threads) --------------------------------------

    def _load(self, name: str) -> Any:
        return json.loads((self.fixtures_dir / name).read_text())

    def _route(self, method: str, raw_path: str, authorization: str | None) -> tuple[int, Any]:
        """The status and JSON body for one request, or a raised ``_Problem``."""
        url = urlsplit(raw_path)
        # Split before decoding, so that an encoded "/" inside a dag_id stays in its segment.
        segments = [unquote(segment) for segment in url.path.strip("/").split("/")]
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}

        if segments[:2] != ["api", "v1"]:
            # Not Airflow 2's API: /api/v2/version, /auth/token, ... (a FastAPI-style 404).
            raise _Problem(404, "Not Found", "Not Found", body={"detail": "Not Found"})
        endpoint = segments[2:]

        if endpoint == ["version"]:
            self._require_method(method)
            return 200, {"version": AIRFLOW_VERSION, "git_version": None}
        if endpoint == ["dags"]:
            self._require_method(method)
            self._authenticate(authorization)
            return 200, self._page("dags", self._dags, query, default_order="dag_id")
        if len(endpoint) == 3 and endpoint[0] == "dags" and endpoint[2] == "tasks":
            self._require_method(method)
            self._authenticate(authorization)
            dag_id = endpoint[1]
            if dag_id not in self._tasks:
                raise _Problem(404, "DAG not found", f"DAG with dag_id: '{dag_id}' not found")
            return 200, self._tasks[dag_id]
        if len(endpoint) == 3 and endpoint[0] == "dags" and endpoint[2] == "details":
            self._require_method(method)
            self._authenticate(authorization)
            dag = next((d for d in self._dags if d["dag_id"] == endpoint[1]), None)
            if dag is None:
                raise _Problem(404, "DAG not found", f"DAG with dag_id: '{endpoint[1]}' not found")
            return 200, {**dag, **self._details.get(endpoint[1], {"dataset_expression": None})}
        if endpoint == ["importErrors"]:
            self._require_method(method)
            self._authenticate(authorization)
            return 200, self._page("import_errors", [], query, default_order="import_error_id")
        if endpoint == ["datasets", "events"]:
            self._require_method(method)
            self._authenticate(authorization)
            return 200, self._page("dataset_events", self._events, query, default_order="id")
        if endpoint == ["datasets"]:
            self._require_method(method)
            self._authenticate(authorization)
            page = self._page("datasets", self._datasets, query, default_order="id")
            if self.datasets_total_entries_ignores_filters:
                page["total_entries"] += DATASETS_OVERCOUNT
            return 200, page
        raise _Problem(
            404,
            "Not Found",
            "The requested URL was not found on the server. If you entered the URL manually "
            "please check your spelling and try again.",
        )

    @staticmethod
    def _require_method(method: str) -> None:
        if method != "GET":
            raise _Problem(405, "Method Not Allowed", "The method is not allowed for the requested URL.")

    def _authenticate(self, authorization: str | None) -> None:
        """Check HTTP Basic credentials; raise a 401 problem unless they are the configured user."""
        scheme, _, encoded = (authorization or "").partition(" ")
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        username, _, password = decoded.partition(":")
        if scheme.lower() == "basic" and (username, password) == (self.username, self.password):
            return
        raise _Problem(
            401,
            "Unauthorized",
            "The request is not authenticated: send HTTP Basic credentials of a valid user.",
            headers={"WWW-Authenticate": "Basic"},
        )

    def _page(
        self, collection: str, items: list[dict[str, Any]], query: dict[str, str], *, default_order: str
    ) -> dict[str, Any]:
        """One page of ``items`` as ``{collection: [...], "total_entries": len(items)}``."""
        limit = self._int_param(query, "limit", DEFAULT_PAGE_LIMIT)
        offset = self._int_param(query, "offset", 0)
        if limit < 0:
            raise _Problem(400, "Page limit must be a positive integer", f"limit={limit}")
        if offset < 0:
            raise _Problem(400, "Bad Request", f"{offset} is less than the minimum of 0 - 'offset'")
        if limit == 0:
            limit = DEFAULT_PAGE_LIMIT  # Airflow 2 falls back to its default page size
        limit = min(limit, self.max_page_limit)

        order_by = query.get("order_by", default_order)
        attribute = order_by.removeprefix("-")
        if attribute not in _ORDER_BY[collection]:
            raise _Problem(
                400,
                f"Ordering with '{attribute}' is disallowed or the attribute does not exist on the model",
                f"order_by={order_by}",
            )
        ordered = sorted(
            items,
            key=lambda item: (item.get(attribute) is None, item.get(attribute)),
            reverse=order_by.startswith("-"),
        )
        return {collection: ordered[offset : offset + limit], "total_entries": len(items)}

    @staticmethod
    def _int_param(query: dict[str, str], name: str, default: int) -> int:
        if name not in query:
            return default
        try:
            return int(query[name])
        except ValueError:
            raise _Problem(
                400, "Bad Request", f"'{query[name]}' is not of type 'integer' - '{name}'"
            ) from None
