"""Did you mean: the few known names nearest to one that was not found, at a bounded cost.

One function for every front door that looks a DAG or an asset up by the name a person typed:
``lineage --around``, the UI page's **Around** box and, later, the MCP server's lookups. The
answer depends only on the name and the set of names (never on their order), and its cost is
bounded whatever the estate's size: the exact scans are linear, and the fuzzy comparison, the
costly part (difflib's ratio is quadratic in the names' length), looks at no more than
``MAX_FUZZY`` names, those nearest in length.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: The most names suggested.
MAX_SUGGESTIONS = 3
#: The most names compared by spelling; more would cost without finding better matches.
MAX_FUZZY = 2000
#: How alike two spellings must be (difflib's ratio, 0 to 1) to be suggested.
CUTOFF = 0.6


def suggestions(wanted: str, names: Iterable[str], *, limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Up to ``limit`` of ``names`` that ``wanted`` may have meant, the likeliest first.

    First the names equal to it but for case; then, for a word of three characters or more,
    the shortest names that contain it (``orders.parquet`` finds ``s3://lake/orders.parquet``)
    or that it contains; then close spellings (``daily_revenu`` finds ``daily_revenue``).
    ``wanted`` itself is never suggested.
    """
    pool = sorted({name for name in names if name != wanted})
    if not pool or limit <= 0:
        return []
    low = wanted.lower()
    found = [name for name in pool if name.lower() == low]
    if len(low) >= 3 and len(found) < limit:
        found += sorted(
            (name for name in pool if low in name.lower() or (len(name) >= 3 and name.lower() in low)),
            key=lambda name: (abs(len(name) - len(wanted)), name),
        )
    if len(found) < limit:
        nearest = sorted(pool, key=lambda name: (abs(len(name) - len(wanted)), name))[:MAX_FUZZY]
        found += difflib.get_close_matches(wanted, nearest, n=limit, cutoff=CUTOFF)
    return list(dict.fromkeys(found))[:limit]


def did_you_mean(wanted: str, names: Iterable[str], *, limit: int = MAX_SUGGESTIONS) -> str:
    """``"; did you mean 'a' or 'b'?"`` to end an error message with, or ``""`` when nothing is near."""
    found = [repr(name) for name in suggestions(wanted, names, limit=limit)]
    if not found:
        return ""
    listed = found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"
    return f"; did you mean {listed}?"
