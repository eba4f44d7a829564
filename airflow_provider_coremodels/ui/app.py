"""The CoreModels page's FastAPI app, mounted by the API server under ``/coremodels``.

Every request is authenticated by Airflow's own dependency, which reads the UI's ``_token``
cookie or an ``Authorization: Bearer`` header, and must be allowed to read all DAGs and
assets: the snapshot describes the whole estate. Where the snapshot is stored (the sink's path or
bucket, ``[coremodels] ui_snapshot_dir``) is shown only to a user Airflow's own Configuration page
would show it to: ``[api] expose_config`` on, and the auth manager allowing the user to read the
configuration. To everyone else (by default, everyone) the page, its notes and its problems name
the option instead: a viewer needs the estate, not where it is kept. The plugin (``ui/plugin.py``)
imports this module on the first request only.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Annotated, Any
from urllib.parse import urlsplit

from airflow.api_fastapi.core_api.security import GetUserDep
from airflow.configuration import conf
from fastapi import FastAPI, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.io.transport import redact_url
from airflow_provider_coremodels.ui.page import (
    CONTENT_SECURITY_POLICY,
    render_problem_page,
    render_snapshot_page,
)
from airflow_provider_coremodels.ui.source import (
    CONFIG_OPTION,
    CONFIG_SECTION,
    CONN_OPTION,
    Problem,
    Snapshot,
    read_snapshot,
    read_store,
    read_trend,
    shown,
)

log = logging.getLogger(__name__)

_FINGERPRINT = re.compile(r"[0-9a-f]{16}")

# The menu icon: boxes (DAGs and assets) joined by lineage; a light stroke for the dark theme.
_ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="{stroke}" '
    'stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><rect x="2" y="3" width="7" '
    'height="6" rx="1"/><rect x="15" y="9" width="7" height="6" rx="3"/><rect x="2" y="15" '
    'width="7" height="6" rx="1"/><path d="M9 6h2.5a1.5 1.5 0 0 1 1.5 1.5V12h2M9 18h2.5a1.5 1.5 0 0 0 '
    '1.5-1.5V12"/></svg>'
)

app = FastAPI(
    title="CoreModels",
    description="The latest CoreModels snapshot of this Airflow estate.",
    # The page is for people in the Airflow UI; the JSON is the stored document itself.
    docs_url=None,
    redoc_url=None,
    openapi_url=None,
)


def _require_estate_reader(user: Any) -> None:
    """The snapshot names every DAG and asset: only a user who may read them all sees it."""
    from airflow.api_fastapi.app import get_auth_manager

    auth_manager = get_auth_manager()
    if not (
        auth_manager.is_authorized_dag(method="GET", user=user)
        and auth_manager.is_authorized_asset(method="GET", user=user)
    ):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "The CoreModels snapshot describes every DAG and asset; your Airflow role may not read them all.",
        )


def _may_configure(user: Any) -> bool:
    """Whether ``user`` may read the snapshot's location in Airflow's own configuration view: the
    API exposes the configuration (``[api] expose_config``: ``True``, or ``non-sensitive-only``,
    which shows this option), and the auth manager lets the user read it."""
    from airflow.api_fastapi.app import get_auth_manager

    exposed = (conf.get("api", "expose_config", fallback="False") or "").strip().lower()
    if exposed not in ("true", "non-sensitive-only"):
        return False
    return bool(get_auth_manager().is_authorized_configuration(method="GET", user=user))


def _location_hidden(text: str) -> str:
    """``text`` with the configured location (however it is written: as set, redacted, as the page
    names a path) replaced by the option's name: for a user who may not read the configuration."""
    location = (conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback="") or "").strip()
    if not location:
        return text
    spelled = {location, redact_url(location), shown(location), location.rstrip("/")}
    if urlsplit(location).scheme.lower() == "file":
        spelled.add(urlsplit(location).path)
    for form in sorted((s for s in spelled if s), key=len, reverse=True):
        text = text.replace(form, f"[{CONFIG_SECTION}] {CONFIG_OPTION}")
    return text


def _snapshot(fingerprint: str | None = None) -> Snapshot | Problem:
    if fingerprint is not None and not _FINGERPRINT.fullmatch(fingerprint):
        return Problem(
            "Not a snapshot fingerprint",
            f"?fingerprint= takes the 16 hexadecimal digits of a snapshot's fingerprint, not "
            f"{fingerprint!r}.",
            "Follow an export task's CoreModels link, or open the page without ?fingerprint= for the latest.",
            status=400,
        )
    location = (conf.get(CONFIG_SECTION, CONFIG_OPTION, fallback="") or "").strip()
    conn_id = (conf.get(CONFIG_SECTION, CONN_OPTION, fallback="") or "").strip() or None
    try:
        scheme = urlsplit(location).scheme.lower()
        if len(scheme) > 1 and scheme != "file":
            store = _store(location, scheme, conn_id)
            return store if isinstance(store, Problem) else read_store(store, fingerprint)
        return read_snapshot(urlsplit(location).path if scheme == "file" else location, fingerprint)
    except Exception:  # the page never shows a stack trace; the API server's log has it
        log.exception("CoreModels page: reading the snapshot at %r failed", redact_url(location))
        return Problem(
            "The snapshot could not be read",
            f"Reading the snapshot at {redact_url(location)!r} failed unexpectedly.",
            "The Airflow API server's log has the details.",
            status=500,
        )


def _store(location: str, scheme: str, conn_id: str | None) -> Any:
    """The object-storage path the page reads, opened with its connection, or why it cannot be."""
    from airflow_provider_coremodels.jobs.export import OBJECT_STORAGE

    if scheme not in OBJECT_STORAGE:
        schemes = ", ".join(f"{s}://" for s in sorted(OBJECT_STORAGE))
        return Problem(
            "The snapshot location is not one the page can read",
            f"[{CONFIG_SECTION}] {CONFIG_OPTION} is {redact_url(location)!r}: {scheme}:// is not a sink.",
            f"Point it at a directory, a snapshot document (.json), or object storage ({schemes}).",
            status=500,
        )
    try:
        return _opened_store(location, conn_id)
    except UsageError as exc:
        return Problem(
            "The snapshot store cannot be opened",
            f"{exc}.",
            f"Install what it names on the API server, or define the connection [{CONFIG_SECTION}] "
            f"{CONN_OPTION} names, and restart the API server.",
            status=500,
        )


@functools.lru_cache(maxsize=4)
def _opened_store(location: str, conn_id: str | None) -> Any:
    """Opened once per location (a failure is not kept: installing or defining what it lacked fixes
    it on the next request)."""
    from airflow_provider_coremodels.jobs.export import open_object_storage

    label = f"[{CONFIG_SECTION}] {CONFIG_OPTION} {redact_url(location)}"
    return open_object_storage(
        location, conn_id, label=label, conn_option=f"[{CONFIG_SECTION}] {CONN_OPTION}"
    ).root


@app.middleware("http")
async def _security_headers(request: Request, call_next: Any) -> Response:
    """Every answer, page or refusal: no sniffing, the page's CSP, and never cached by a proxy."""
    response: Response = await call_next(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.headers.get("content-type", "").startswith("text/html"):
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    if not request.url.path.endswith(".svg"):
        response.headers.setdefault("Cache-Control", "no-store")
    return response


@app.get("/", response_class=HTMLResponse)
def snapshot_page(
    user: GetUserDep,
    around: Annotated[str | None, Query(max_length=2000)] = None,
    depth: Annotated[str | None, Query(max_length=10)] = None,
    fingerprint: Annotated[str | None, Query(max_length=64)] = None,
    team: Annotated[str | None, Query(max_length=200)] = None,
) -> HTMLResponse:
    """The page: facts, the history chart, findings, lossiness and the lineage picture of the latest
    snapshot (or of the stored one with ``fingerprint``: an export task's link)."""
    _require_estate_reader(user)
    found = _snapshot(fingerprint)
    hide = (lambda text: text) if _may_configure(user) else _location_hidden
    if isinstance(found, Problem):
        return HTMLResponse(
            render_problem_page(hide(found.title), hide(found.detail), hide(found.fix)), found.status
        )
    try:
        html = render_snapshot_page(
            found.document,
            source=found.shown if _may_configure(user) else None,
            note=hide(found.note) if found.note else None,
            around=around,
            depth=depth,
            trend=read_trend(found),
            team=team,
            fingerprint=fingerprint,
        )
    except Exception:
        log.exception("CoreModels page: rendering %s failed", found.shown)
        problem = render_problem_page(
            "The snapshot could not be shown",
            hide(f"Rendering {found.shown} failed unexpectedly."),
            "The Airflow API server's log has the details.",
        )
        return HTMLResponse(problem, status.HTTP_500_INTERNAL_SERVER_ERROR)
    return HTMLResponse(html)


@app.get("/snapshot.json")
def snapshot_json(
    user: GetUserDep, fingerprint: Annotated[str | None, Query(max_length=64)] = None
) -> Response:
    """The snapshot document itself, byte for byte as the sink stored it."""
    _require_estate_reader(user)
    found = _snapshot(fingerprint)
    if isinstance(found, Problem):
        status_code = status.HTTP_404_NOT_FOUND if found.status == 200 else found.status
        detail = f"{found.title}: {found.detail} {found.fix}"
        if not _may_configure(user):
            detail = _location_hidden(detail)
        return JSONResponse({"detail": detail}, status_code)
    return Response(found.raw, media_type="application/json")


@app.get("/icon.svg", include_in_schema=False)
@app.get("/icon-dark.svg", include_in_schema=False)
def icon(request: Request) -> Response:
    """The menu icon: public, like the rest of the UI's static files."""
    stroke = "#e6edf3" if request.url.path.endswith("-dark.svg") else "#1f2328"
    return Response(
        _ICON.format(stroke=stroke), media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"}
    )


@app.exception_handler(StarletteHTTPException)
async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """Refusals as a short page for a browser, as JSON for ``snapshot.json``."""
    headers = getattr(exc, "headers", None)
    if request.url.path.endswith(".json"):
        return JSONResponse({"detail": exc.detail}, exc.status_code, headers=headers)
    if exc.status_code == status.HTTP_401_UNAUTHORIZED:
        title, detail = "Sign in to Airflow first", f"This page needs an Airflow login ({exc.detail})."
        fix = "Open it from the Airflow UI (Browse → CoreModels) after signing in, or send a bearer token."
    elif exc.status_code == status.HTTP_403_FORBIDDEN:
        title, detail = "Not allowed", str(exc.detail)
        fix = "Ask an Airflow admin for a role that can read all DAGs and assets."
    else:
        title, detail, fix = "Request refused", str(exc.detail), ""
    return HTMLResponse(render_problem_page(title, detail, fix), exc.status_code, headers=headers)
