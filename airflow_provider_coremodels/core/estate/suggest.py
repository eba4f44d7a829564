"""Did you mean: the few known names nearest to one that was not found, at a bounded cost.

One index for every front door that looks a DAG or an asset up by the name a person typed:
``lineage --around``, the UI page's **Around** box and the MCP server's lookups (which keep one
``NameIndex`` for the life of the server). The answer depends only on the name and the set of
names (never on their order), and its cost is bounded whatever the estate's size: the exact
scans are linear, and the fuzzy comparison, the costly part (difflib's ratio is quadratic in the
names' length), sees at most ``4 * NEIGHBOURS`` names: those beside the wanted one in name order
and in reversed-name order, which share most of its start or of its end (where a typo is not).
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterable

#: The most names suggested.
MAX_SUGGESTIONS = 3
#: How many names on either side of the wanted one, in each of the two orders, are compared by
#: spelling: a fixed number, however many names are alike.
NEIGHBOURS = 20
#: How alike two spellings must be (difflib's ratio, 0 to 1) to be suggested.
CUTOFF = 0.6
#: A wanted name longer than this is compared with nothing: no identity is that long.
MAX_WANTED = 10_000


class NameIndex:
    """Names to suggest from, indexed once: in order, lower-cased, and by their reversed spelling."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names))
        self._lowered = [name.lower() for name in self.names]
        self._reversed = sorted((name[::-1], name) for name in self.names)

    def suggest(self, wanted: str, *, limit: int = MAX_SUGGESTIONS, cutoff: float = CUTOFF) -> list[str]:
        """Up to ``limit`` names that ``wanted`` may have meant, the likeliest first.

        First the names equal to it but for case; then, for a word of three characters or more,
        the shortest names that contain it (``orders.parquet`` finds ``s3://lake/orders.parquet``)
        or that it contains; then close spellings (``daily_revenu`` finds ``daily_revenue``).
        ``wanted`` itself is never suggested.
        """
        if limit <= 0 or len(wanted) > MAX_WANTED:
            return []
        low = wanted.lower()
        found = [name for name, lowered in zip(self.names, self._lowered, strict=True) if lowered == low]
        if len(low) >= 3 and len(found) < limit:
            found += sorted(
                (
                    name
                    for name, lowered in zip(self.names, self._lowered, strict=True)
                    if low in lowered or (len(lowered) >= 3 and lowered in low)
                ),
                key=lambda name: (abs(len(name) - len(wanted)), name),
            )
        if len(found) < limit + 1:  # + 1: wanted itself may be among them
            found += difflib.get_close_matches(wanted, self.neighbours(wanted), n=limit + 1, cutoff=cutoff)
        return [name for name in dict.fromkeys(found) if name != wanted][:limit]

    def neighbours(self, wanted: str) -> list[str]:
        """The names beside ``wanted`` in name order and in reversed-name order, in name order."""
        pool: set[str] = set()
        at = bisect.bisect_left(self.names, wanted)
        pool.update(self.names[max(0, at - NEIGHBOURS) : at + NEIGHBOURS])
        at = bisect.bisect_left(self._reversed, (wanted[::-1], ""))
        pool.update(name for _, name in self._reversed[max(0, at - NEIGHBOURS) : at + NEIGHBOURS])
        return sorted(pool)


def suggestions(wanted: str, names: Iterable[str], *, limit: int = MAX_SUGGESTIONS) -> list[str]:
    """``NameIndex(names).suggest(wanted)``: for one question; keep the index to ask many."""
    return NameIndex(names).suggest(wanted, limit=limit)


def did_you_mean(wanted: str, names: Iterable[str], *, limit: int = MAX_SUGGESTIONS) -> str:
    """``"; did you mean 'a' or 'b'?"`` to end an error message with, or ``""`` when nothing is near."""
    found = [repr(name) for name in suggestions(wanted, names, limit=limit)]
    if not found:
        return ""
    listed = found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"
    return f"; did you mean {listed}?"
