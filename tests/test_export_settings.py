"""``ExportSettings``: what both front doors build, each value checked once, before the capture."""

from __future__ import annotations

import pytest

from airflow_provider_coremodels import defaults
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.jobs.export import ExportSettings, uri_list


def test_the_defaults_are_those_of_defaults_py() -> None:
    settings = ExportSettings()
    assert settings.fail_on == defaults.FAIL_ON == "never"
    assert settings.stale_tolerance == defaults.STALE_TOLERANCE
    assert settings.max_snapshot_bytes == defaults.MAX_SNAPSHOT_BYTES
    assert settings.sinks == () and not settings.retention.active


def test_sinks_are_one_comma_separated_string_or_a_sequence() -> None:
    """The operator's templated ``sinks`` is one string; the command line's ``--sink`` a list, whose
    items are never split (a path may hold a comma)."""
    assert ExportSettings(sinks=" ./out , s3://b/p ,, ").sinks == ("./out", "s3://b/p")
    assert ExportSettings(sinks=["./a,b", " ./c "]).sinks == ("./a,b", "./c")
    assert uri_list("") == [] and uri_list([]) == []


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"fail_on": "warn"}, "fail_on must be one of never, info, warning, error, got 'warn'"),
        ({"stale_tolerance": 0}, "stale_tolerance must be a positive number, got 0"),
        ({"stale_tolerance": float("nan")}, "stale_tolerance must be a positive number, got nan"),
        ({"stale_tolerance": True}, "stale_tolerance must be a positive number, got True"),
        ({"max_snapshot_bytes": 0}, "max_snapshot_bytes must be a positive whole number, got 0"),
        ({"max_snapshot_bytes": "9"}, "max_snapshot_bytes must be a positive whole number, got '9'"),
        ({"history_keep": -1}, "history_keep must be a whole number, 0 or more (0 keeps all), got -1"),
        ({"history_max_age_days": 0}, "history_max_age_days must be a positive number of days, got 0"),
    ],
)
def test_a_bad_value_is_a_usage_error_naming_the_setting(given: dict[str, object], says: str) -> None:
    with pytest.raises(UsageError) as raised:
        ExportSettings(**given)  # type: ignore[arg-type]
    assert str(raised.value) == says
    assert raised.value.exit_code == 2


def test_retention_is_built_from_the_two_history_settings() -> None:
    retention = ExportSettings(history_keep=3, history_max_age_days=7.5).retention
    assert (retention.keep, retention.max_age_days) == (3, 7.5)
