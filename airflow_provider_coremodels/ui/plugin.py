"""The plugin the provider registers: the CoreModels page in the Airflow 3 UI.

The API server mounts the page's app under ``/coremodels``; the UI lists it in its Browse
menu as an external view, shown in an iframe at ``/plugin/coremodels``.

Airflow loads plugins in every process that asks for them, scheduler and task runners
included, so this module imports nothing but ``AirflowPlugin``: the FastAPI app, and Airflow's
API security with it (most of a second to import), load on the page's first request.

The page needs Airflow 3.1+: 3.0's UI has no external views (no menu entry, no frame) and its
API server signs in only ``Authorization`` headers, never the UI's cookie, so a person could not
open the page. There the plugin registers nothing and the API server starts as without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from importlib import import_module
from typing import Any

from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/coremodels"

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


class LazyApp:
    """An ASGI app that imports the real one (``module:attribute``) when its first request arrives."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._app: ASGIApp | None = None

    async def __call__(
        self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        if self._app is None:
            module, _, attribute = self.target.partition(":")
            self._app = getattr(import_module(module), attribute)
        await self._app(scope, receive, send)

    def __repr__(self) -> str:
        return f"LazyApp({self.target!r})"


#: Whether this Airflow can show the page: external views came with Airflow 3.1, in the release
#: whose API server also reads the UI's ``_token`` cookie.
PAGE_SUPPORTED = hasattr(AirflowPlugin, "external_views")

_APP = {
    "app": LazyApp("airflow_provider_coremodels.ui.app:app"),
    "url_prefix": URL_PREFIX,
    "name": "CoreModels",
}
_VIEW = {
    "name": "CoreModels",
    "href": f"{URL_PREFIX}/",
    "icon": f"{URL_PREFIX}/icon.svg",
    "icon_dark_mode": f"{URL_PREFIX}/icon-dark.svg",
    "url_route": "coremodels",
    "destination": "nav",
    "category": "browse",
}


class CoreModelsPlugin(AirflowPlugin):
    """Adds the CoreModels page (Browse → CoreModels) to the Airflow 3.1+ UI."""

    name = "coremodels"
    # AirflowPlugin declares these as class attributes; providers register the class itself.
    fastapi_apps = [_APP] if PAGE_SUPPORTED else []
    external_views = [_VIEW] if PAGE_SUPPORTED else []
