"""Pausing Python's cyclic garbage collector while the core builds large acyclic structures."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large acyclic structure is built.

    Building hundreds of thousands of small objects triggers repeated full collections that
    find nothing (the estate and the document hold no cycles): at 10,000 DAGs they were 40% of
    the audit's time and made it superlinear. Reference counting still frees everything.

    On leaving the outermost pause, what was allocated during it is handed to the oldest
    generation before the collector resumes. Left in the youngest, the first allocation after
    the pause would start a young collection that walks every object the pause built (the
    whole estate: 0.17 s at 10,000 DAGs, growing faster than the estate as its working set
    outgrows the caches); in the oldest, the collector meets them at its next full collection,
    as it would have after they had survived two young ones.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _promote_young()
            gc.enable()


def _promote_young() -> None:
    """Move every tracked object to the oldest generation without walking them: freezing moves
    the generations' lists to the permanent one, unfreezing moves that to the oldest, each in
    constant time. Nothing stays frozen, so cycles among them are still collected."""
    gc.freeze()
    gc.unfreeze()
