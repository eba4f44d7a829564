"""Progress of a capture: a bar on a terminal, a plain line every few seconds anywhere else.

The bar is redrawn in place (``\\r``), so a log line written while it shows (a retry warning)
would start on the bar's line. While the bar is up, a filter on the logging handlers erases it
before any record is written; the next update draws it again below the record.
"""

from __future__ import annotations

import logging
import time
from typing import TextIO

_ERASE_LINE = "\r\x1b[2K"


class ProgressReporter:
    """Call with (DAGs whose tasks are in, DAGs found so far); ``close()`` ends the bar."""

    width = 30

    def __init__(self, stream: TextIO, *, interval: float = 5.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.interval = interval if not self.tty else 0.1
        # a bar shows from the first update; a log gets its first line only after an interval
        self._last = float("-inf") if self.tty else time.monotonic()
        self._frame = ""  # the bar as last drawn, while it is on screen
        self._handlers: list[logging.Handler] = []

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < self.interval and done < total:
            return
        self._last = now
        if self.tty:
            filled = self.width * done // total if total else 0
            bar = "#" * filled + "." * (self.width - filled)
            self._frame = f"capturing tasks [{bar}] {done}/{total} DAGs"
            self.stream.write("\r" + self._frame)
            self._watch_logging()
        else:
            self.stream.write(f"capturing: tasks of {done}/{total} DAGs fetched\n")
        self.stream.flush()

    def close(self) -> None:
        """Leave the last frame on its own line and stop watching the log handlers."""
        for handler in self._handlers:
            handler.removeFilter(self._erase_before_record)
        self._handlers = []
        if self._frame:
            self.stream.write("\n")
            self.stream.flush()
            self._frame = ""

    def _watch_logging(self) -> None:
        if self._handlers:
            return
        handlers = {*logging.getLogger().handlers, *logging.getLogger("airflow_provider_coremodels").handlers}
        for handler in handlers:
            handler.addFilter(self._erase_before_record)
            self._handlers.append(handler)

    def _erase_before_record(self, record: logging.LogRecord) -> bool:
        """A handler filter that lets every record through, first taking the bar off the screen."""
        if self._frame:
            self.stream.write(_ERASE_LINE)
            self.stream.flush()
            self._frame = ""
        return True
