"""Asset conditions: reading Airflow's asset_expression, the compact text, required versus alternative."""

from __future__ import annotations

import pytest

from airflow_provider_coremodels.core.reading.conditions import (
    AllOf,
    AnyOf,
    ConditionError,
    Leaf,
    from_text,
    read_expression,
    required_assets,
    to_text,
)

PRICES = {"asset": {"uri": "s3://lake/prices", "name": "prices", "group": "asset", "id": 10}}
FX = {"asset": {"uri": "s3://lake/fx_rates", "name": "fx_rates", "group": "asset", "id": 11}}
MANUAL = {"asset": {"uri": "s3://lake/manual_prices", "name": "manual_prices", "group": "asset", "id": 12}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # shapes recorded from Airflow 3.3.2's /api/v2/dags/{dag_id}/details
        (PRICES, Leaf("asset", "s3://lake/prices")),
        ({"all": [PRICES]}, AllOf((Leaf("asset", "s3://lake/prices"),))),
        ({"asset_ref": {"name": "orders_sync"}}, Leaf("name", "orders_sync")),
        ({"asset_ref": {"uri": "s3://lake/orders_sync/"}}, Leaf("uri", "s3://lake/orders_sync/")),
        ({"alias": {"name": "daily_exports", "group": "asset"}}, Leaf("alias", "daily_exports")),
        (
            {"any": [{"all": [PRICES, FX]}, MANUAL]},
            AnyOf(
                (
                    AllOf((Leaf("asset", "s3://lake/prices"), Leaf("asset", "s3://lake/fx_rates"))),
                    Leaf("asset", "s3://lake/manual_prices"),
                )
            ),
        ),
        # Airflow 2's dataset_expression: URI strings as leaves
        ({"all": ["s3://a", "s3://b"]}, AllOf((Leaf("asset", "s3://a"), Leaf("asset", "s3://b")))),
        (None, None),
        ({}, None),
    ],
)
def test_read_expression(raw: object, expected: object) -> None:
    assert read_expression(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        {"all": []},
        {"all": "s3://a"},
        {"asset": {"name": "no uri"}},
        {"asset_ref": {}},
        {"both": 1, "keys": 2},
        {"unknown": {"uri": "s3://a"}},
        42,
        "",
    ],
)
def test_unreadable_expressions_raise_condition_error(raw: object) -> None:
    with pytest.raises(ConditionError):
        read_expression(raw)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    raw: object = PRICES
    for _ in range(200):
        raw = {"all": [raw]}
    with pytest.raises(ConditionError, match="nested deeper"):
        read_expression(raw)


def test_text_round_trip() -> None:
    condition = read_expression({"any": [{"all": [PRICES, {"asset_ref": {"name": "n"}}]}, {"alias": "a"}]})
    assert condition is not None
    text = to_text(condition)
    assert text == '{"any":[{"all":[{"asset":"s3://lake/prices"},{"name":"n"}]},{"alias":"a"}]}'
    assert from_text(text) == condition


@pytest.mark.parametrize("text", ["not json", "[]", '{"all":[]}', '{"ref":"x"}', '{"asset":""}'])
def test_from_text_refuses_what_to_text_never_writes(text: str) -> None:
    with pytest.raises(ConditionError):
        from_text(text)


def leaf_map(condition: object) -> dict[Leaf, frozenset[str]]:
    from airflow_provider_coremodels.core.reading.conditions import leaves

    return {leaf: frozenset({leaf.value}) for leaf in leaves(condition)}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "required"),
    [
        ({"all": [PRICES, FX]}, {"s3://lake/prices", "s3://lake/fx_rates"}),
        ({"any": [PRICES, FX]}, set()),
        ({"any": [{"all": [PRICES, FX]}, MANUAL]}, set()),
        ({"all": [{"any": [PRICES, FX]}, MANUAL]}, {"s3://lake/manual_prices"}),
        (PRICES, {"s3://lake/prices"}),
    ],
)
def test_required_assets(raw: object, required: set[str]) -> None:
    condition = read_expression(raw)
    assert condition is not None
    assert required_assets(condition, leaf_map(condition)) == required


def test_an_alias_resolved_to_several_assets_needs_none_of_them_alone() -> None:
    condition = Leaf("alias", "exports")
    assert required_assets(condition, {condition: frozenset({"s3://a", "s3://b"})}) == set()
    assert required_assets(condition, {condition: frozenset({"s3://a"})}) == {"s3://a"}


def test_an_unresolved_input_is_taken_as_met() -> None:
    """A reference that resolves to nothing is unknown, never proof that another input is optional."""
    condition = AllOf((Leaf("name", "missing"), Leaf("asset", "s3://a")))
    resolved = {Leaf("name", "missing"): frozenset(), Leaf("asset", "s3://a"): frozenset({"s3://a"})}
    assert required_assets(condition, resolved) == {"s3://a"}
