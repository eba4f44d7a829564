"""The collector pause: what it builds is left to the oldest generation, and nothing is frozen."""

from __future__ import annotations

import gc

from airflow_provider_coremodels.core.estate.collector import gc_paused


class _Marker:
    """A tracked object the tests can find in a generation's list by identity."""

    def __init__(self) -> None:
        self.self = self  # a reference cycle: only the collector frees it


def _generation_of(obj: object) -> int | None:
    for generation in range(3):
        if any(o is obj for o in gc.get_objects(generation=generation)):
            return generation
    return None


def test_what_a_pause_built_is_in_the_oldest_generation_not_the_youngest():
    gc.collect()
    with gc_paused():
        marker = _Marker()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert _generation_of(marker) == 2
    assert gc.get_freeze_count() == 0


def test_a_cycle_built_in_a_pause_is_still_collected():
    gc.collect()
    with gc_paused():
        marker = _Marker()
    marker_id = id(marker)
    del marker
    gc.collect()
    assert not any(id(o) == marker_id and isinstance(o, _Marker) for o in gc.get_objects())


def test_an_inner_pause_leaves_the_collector_off_and_the_generations_alone():
    gc.collect()
    with gc_paused():
        with gc_paused():
            marker = _Marker()
        assert not gc.isenabled()
        assert _generation_of(marker) == 0
    assert _generation_of(marker) == 2


def test_a_pause_entered_with_the_collector_off_leaves_it_off():
    gc.disable()
    try:
        with gc_paused():
            marker = _Marker()
        assert not gc.isenabled()
        assert _generation_of(marker) == 0
    finally:
        gc.enable()
