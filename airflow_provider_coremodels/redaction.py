"""The secrets a run knows, scrubbed from everything it writes: messages, log records, lossiness.

Import-light (the standard library only): every layer that writes text may use it.
"""

from __future__ import annotations

import logging
import sys
import threading

# -- secrets ------------------------------------------------------------------------------


class Secrets:
    """Every secret this run knows (passwords, tokens, JWTs), to scrub from what it writes.

    Registered where a secret enters (a source, a token answer, a sink); scrubbed where text
    leaves (error messages, log records, lossiness records). Also handed to Airflow's secrets
    masker when Airflow is already loaded, so its task logs hide them too.
    """

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        fresh = [v for v in values if v and len(v) >= 4 and v not in self._values]
        if not fresh:
            return
        with self._lock:
            self._values.update(fresh)
        if "airflow.sdk.log" in sys.modules:  # never import Airflow for this: python -m stays light
            mask = sys.modules["airflow.sdk.log"].mask_secret
            for value in fresh:
                mask(value)

    def clear(self) -> None:
        """Forget every secret: for a process that runs many captures (the test suite)."""
        with self._lock:
            self._values.clear()

    def scrub(self, text: str) -> str:
        with self._lock:
            values = sorted(self._values, key=len, reverse=True)
        for value in values:
            if value in text:
                text = text.replace(value, "***")
        return text


SECRETS = Secrets()


class _Scrubbing(logging.Filter):
    """Scrub every record of this package's loggers before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = SECRETS.scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_SCRUBBING = _Scrubbing()


def scrubbed_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, its records scrubbed before any handler sees them.

    A filter on a parent logger never sees its children's records, so each module's logger
    carries the filter itself.
    """
    logger = logging.getLogger(name)
    if _SCRUBBING not in logger.filters:
        logger.addFilter(_SCRUBBING)
    return logger
