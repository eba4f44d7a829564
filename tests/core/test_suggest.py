"""Did you mean: the nearest names to one not found, the same for any order, at a bounded cost."""

from __future__ import annotations

import difflib
import random

import pytest

from airflow_provider_coremodels.core.estate import suggest
from airflow_provider_coremodels.core.estate.suggest import did_you_mean, suggestions

NAMES = [
    "daily_revenue", "load_orders", "legacy_cleanup", "customer_report", "sync_crm",
    "s3://lake/orders.parquet", "s3://lake/customers.parquet", "s3://vendor/fx_rates.csv",
]  # fmt: skip


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ("daily_revenu", ["daily_revenue"]),  # a letter short
        ("LOAD_ORDERS", ["load_orders"]),  # case
        ("orders.parquet", ["s3://lake/orders.parquet"]),  # an asset by the end of its URI
        ("orders", ["load_orders", "s3://lake/orders.parquet"]),  # contained in two: shortest first
        ("customer", ["customer_report", "s3://lake/customers.parquet"]),
        ("nosuchdag", []),  # nothing near: no suggestion at all
        ("daily_revenue", []),  # the name itself is never suggested
        ("", []),
    ],
)
def test_suggestions(wanted: str, expected: list[str]) -> None:
    assert suggestions(wanted, NAMES) == expected


def test_did_you_mean_ends_an_error_message() -> None:
    assert did_you_mean("daily_revenu", NAMES) == "; did you mean 'daily_revenue'?"
    assert did_you_mean("orders", NAMES) == "; did you mean 'load_orders' or 's3://lake/orders.parquet'?"
    assert did_you_mean("s3://lake/order", NAMES, limit=3).count("'") == 4  # two near names, both listed
    assert did_you_mean("nosuchdag", NAMES) == ""


def test_the_answer_does_not_depend_on_the_order_of_the_names() -> None:
    shuffled = list(NAMES)
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        for wanted in ("daily_revenu", "orders", "customer", "s3://lake/order"):
            assert suggestions(wanted, shuffled) == suggestions(wanted, NAMES)


def test_the_spelling_comparison_looks_at_a_bounded_number_of_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """100,000 names: the exact scans stay linear, and difflib (quadratic in a name's length)
    sees at most 4 * NEIGHBOURS of them, those beside the wanted one in either order. difflib is
    wrapped to count, not mocked."""
    names = [f"team_{i % 97}_pipeline_{i:06}" for i in range(100_000)] + ["daily_revenue"]
    seen: list[int] = []
    real = difflib.get_close_matches

    def counting(word: str, possibilities: list[str], n: int, cutoff: float) -> list[str]:
        seen.append(len(possibilities))
        return real(word, possibilities, n=n, cutoff=cutoff)

    monkeypatch.setattr(suggest.difflib, "get_close_matches", counting)
    assert suggestions("daily_revenu", names) == ["daily_revenue"]
    assert len(seen) == 1 and 0 < seen[0] <= 4 * suggest.NEIGHBOURS
