"""Progress of a capture: a bar on a terminal, a plain line every few seconds anywhere else."""

from __future__ import annotations

import time
from typing import TextIO


class ProgressReporter:
    """Call with (DAGs whose tasks are in, DAGs found so far); ``close()`` ends the bar."""

    width = 30

    def __init__(self, stream: TextIO, *, interval: float = 5.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.interval = interval if not self.tty else 0.1
        self._last = time.monotonic()
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self._last < self.interval and done < total:
            return
        self._last = now
        if self.tty:
            filled = self.width * done // total if total else 0
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\rcapturing tasks [{bar}] {done}/{total} DAGs")
            self._drawn = True
        else:
            self.stream.write(f"capturing: tasks of {done}/{total} DAGs fetched\n")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
