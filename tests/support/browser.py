"""A headless Chromium driven over the Chrome DevTools Protocol, for tests that look at a page.

Usage::

    from support.browser import Browser, find_chromium

    with Browser(find_chromium()) as browser:
        browser.set_cookie("_token", token, url=base_url)
        status = browser.navigate(f"{base_url}/coremodels/")
        text = browser.evaluate("document.body.innerText")
        browser.screenshot("test-artifacts/page.png")

Chromium runs with ``--headless --no-sandbox --disable-gpu`` and its own throw-away profile;
it prints its DevTools WebSocket URL on stderr, and everything goes over that one socket
(Target.attachToTarget with ``flatten``, so one page session rides on the browser's
connection). Only ``websockets`` (installed with Airflow) is needed: no Selenium, no driver.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
_DEVTOOLS_URL = re.compile(r"DevTools listening on (ws://\S+)")


class BrowserError(RuntimeError):
    """Chromium did not start, a DevTools command failed, or a page did not do what was awaited."""


def find_chromium() -> str | None:
    """The Chromium to use: ``$COREMODELS_CHROMIUM``, else Debian's ``/usr/bin/chromium`` (or kin)."""
    explicit = os.environ.get("COREMODELS_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    return next((path for path in CHROMIUM_CANDIDATES if Path(path).exists()), None)


class Browser:
    """One headless Chromium with one page (tab); every call waits for its answer."""

    def __init__(
        self, executable: str, *, width: int = 1400, height: int = 1000, startup_timeout: float = 60.0
    ) -> None:
        self.executable = executable
        self.width = width
        self.height = height
        self.startup_timeout = startup_timeout
        self.exceptions: list[str] = []  # uncaught JavaScript exceptions, as "message (url:line)"
        self.console: list[str] = []  # console and browser log messages, as "level: text"
        self._process: subprocess.Popen[str] | None = None
        self._profile: str | None = None
        self._ws: ClientConnection | None = None
        self._session: str | None = None
        self._ids = itertools.count(1)
        self._events: deque[dict[str, Any]] = deque()
        self._stderr_tail: deque[str] = deque(maxlen=40)
        self._reader: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Browser:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="coremodels-chromium-")
        self._process = subprocess.Popen(
            [
                self.executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
                f"--user-data-dir={self._profile}",
                f"--window-size={self.width},{self.height}",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--hide-scrollbars",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            ws_url = self._wait_for_devtools_url()
            # Entered as a context (websockets 17 deprecates a bare connect()); close() exits it.
            self._ws = connect(ws_url, max_size=None, open_timeout=self.startup_timeout).__enter__()
            target = self.command("Target.createTarget", {"url": "about:blank"}, session=False)
            attached = self.command(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False
            )
            self._session = attached["sessionId"]
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.command(f"{domain}.enable")
            self.command(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            )
        except BaseException:
            self.close()
            raise

    def _wait_for_devtools_url(self) -> str:
        assert self._process is not None and self._process.stderr is not None
        stderr = self._process.stderr
        found: list[str] = []

        def read() -> None:
            for line in stderr:  # keeps draining after the URL, so Chromium never blocks on a full pipe
                self._stderr_tail.append(line.rstrip())
                match = _DEVTOOLS_URL.search(line)
                if match and not found:
                    found.append(match.group(1))

        self._reader = threading.Thread(target=read, name="chromium-stderr", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.startup_timeout
        while not found:
            if self._process.poll() is not None:
                raise BrowserError(
                    f"{self.executable} exited with code {self._process.returncode}:\n" + self._stderr()
                )
            if time.monotonic() > deadline:
                raise BrowserError(
                    f"{self.executable} printed no DevTools URL within {self.startup_timeout} s:\n"
                    + self._stderr()
                )
            time.sleep(0.05)
        return found[0]

    def _stderr(self) -> str:
        return "\n".join(self._stderr_tail) or "(nothing on stderr)"

    def close(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self.command("Browser.close", session=False, timeout=5)
            with contextlib.suppress(Exception):
                self._ws.__exit__(None, None, None)
            self._ws = None
        process, self._process = self._process, None
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            # Its own process group: no renderer or zygote child may outlive the test.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            if self._reader is not None:
                self._reader.join(timeout=5)  # stderr ends with the process
            if process.stderr is not None:
                process.stderr.close()
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    # ------------------------------------------------------------------ protocol
    def command(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = True, timeout: float = 30
    ) -> dict[str, Any]:
        """Send one DevTools command (to the page's session unless ``session=False``) and await its result."""
        if self._ws is None:
            raise BrowserError("the browser is not running")
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params or {}}
        if session and self._session is not None:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline, f"an answer to {method}")
            if reply.get("id") == message["id"]:
                if "error" in reply:
                    raise BrowserError(f"{method} failed: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self._note(reply)

    def _receive(self, deadline: float, awaiting: str) -> dict[str, Any]:
        assert self._ws is not None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BrowserError(f"timed out waiting for {awaiting}")
        try:
            data = self._ws.recv(timeout=remaining)
        except TimeoutError:
            raise BrowserError(f"timed out waiting for {awaiting}") from None
        message: dict[str, Any] = json.loads(data)
        return message

    def _note(self, event: dict[str, Any]) -> None:
        """Keep an event for wait_event; record JavaScript exceptions and console output on the way."""
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            description = details.get("exception", {}).get("description") or details.get("text", "")
            where = f"{details.get('url', '?')}:{details.get('lineNumber', '?')}"
            self.exceptions.append(f"{description} ({where})")
        elif method == "Runtime.consoleAPICalled":
            args = params.get("args", [])
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in args)
            self.console.append(f"{params.get('type')}: {text}")
        elif method == "Log.entryAdded":  # what the browser itself reports: CSP violations, failed loads
            entry = params.get("entry", {})
            self.console.append(f"{entry.get('level')}: {entry.get('text')} ({entry.get('url', '')})")
        self._events.append(event)

    def wait_event(self, method: str, timeout: float = 30, where: Any = None) -> dict[str, Any]:
        """The first event ``method`` (received or still to come) for which ``where(params)`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            for event in list(self._events):
                if event["method"] == method and (where is None or where(event.get("params", {}))):
                    self._events.remove(event)
                    params: dict[str, Any] = event.get("params", {})
                    return params
            message = self._receive(deadline, method)
            if "method" in message:
                self._note(message)

    # ------------------------------------------------------------------ what a test does
    def set_cookie(self, name: str, value: str, *, url: str) -> None:
        self.command("Network.setCookie", {"name": name, "value": value, "url": url})

    def clear_cookies(self) -> None:
        self.command("Network.clearBrowserCookies")

    def navigate(self, url: str, *, timeout: float = 60) -> int | None:
        """Load ``url`` and wait for its load event; the HTTP status of the document, when known."""
        self._events.clear()
        result = self.command("Page.navigate", {"url": url}, timeout=timeout)
        if result.get("errorText"):
            raise BrowserError(f"navigating to {url} failed: {result['errorText']}")
        frame_id = result.get("frameId")
        self.wait_event("Page.loadEventFired", timeout=timeout)
        for event in self._events:
            params = event.get("params", {})
            if (
                event["method"] == "Network.responseReceived"
                and params.get("type") == "Document"
                and params.get("frameId") == frame_id
            ):
                status: int = params["response"]["status"]
                return status
        return None

    def evaluate(self, expression: str, *, timeout: float = 30) -> Any:
        """The value of a JavaScript expression in the page (promises awaited), as JSON."""
        result = self.command(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            description = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"evaluating {expression[:80]!r} threw: {description}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, *, timeout: float = 30, interval: float = 0.2) -> Any:
        """Poll ``expression`` until it is truthy (a SPA renders after its load event); its value.

        Values come back as JSON, so a DOM node reads as ``{}`` (falsy): test for one with ``!!``.
        """
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            with contextlib.suppress(BrowserError):
                last = self.evaluate(expression)
                if last:
                    return last
            time.sleep(interval)
        raise BrowserError(f"{expression!r} was still {last!r} after {timeout} s")

    def click(self, selector: str, *, navigates: bool = False, timeout: float = 60) -> None:
        """Click the middle of the first element matching ``selector`` with the mouse, as a person would.

        With ``navigates``, wait until the page the click leads to has loaded.
        """
        point = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        if point is None:
            raise BrowserError(f"nothing on the page matches {selector!r}")
        if navigates:
            self._events.clear()
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.command(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": point[0], "y": point[1], "button": "left", "clickCount": 1},
            )
        if navigates:
            self.wait_event("Page.loadEventFired", timeout=timeout)

    def screenshot(
        self, path: str | os.PathLike[str], *, full_page: bool = True, selector: str | None = None
    ) -> Path:
        """Save a PNG of the page (all of it, unless ``full_page=False``; only the first element
        matching ``selector``, if given, with a margin of 8 pixels); the path written."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            box = self.evaluate(
                f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
                " const r = e.getBoundingClientRect();"
                " return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]; })()"
            )
            if box is None:
                raise BrowserError(f"nothing on the page matches {selector!r}")
            x, y, width, height = box
            params.update(
                captureBeyondViewport=True,
                clip={
                    "x": max(x - 8, 0),
                    "y": max(y - 8, 0),
                    "width": width + 16,
                    "height": height + 16,
                    "scale": 1,
                },
            )
        elif full_page:
            metrics = self.command("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={
                    "x": 0,
                    "y": 0,
                    "width": max(size["width"], self.width),
                    "height": max(size["height"], 1),
                    "scale": 1,
                },
            )
        data = self.command("Page.captureScreenshot", params, timeout=60)["data"]
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(data))
        return out
