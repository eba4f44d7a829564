"""When the export asks Airflow whether its metrics are on (``alerts.metrics_may_be_on``).

Outside an Airflow process, importing Airflow only to learn that its metrics are off would be most of
``python -m airflow_provider_coremodels export``'s time, so Airflow is asked where its configuration
could turn them on, and only there. A wrong "no" would lose a deployment's metrics, so every place
Airflow reads ``[metrics]`` from is tried here; the command's end-to-end runs, with metrics on from
the environment and from a file, and off, are in ``tests/cli/test_export_command.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_coremodels.jobs.alerts import metrics_may_be_on

NOT_LOADED: dict[str, object] = {}  # the modules of a process that has not imported Airflow


def asked(environ: dict[str, str]) -> bool:
    return metrics_may_be_on(environ, modules=NOT_LOADED)


@pytest.mark.parametrize(
    "name",
    [
        "AIRFLOW__METRICS__STATSD_ON",
        "AIRFLOW__METRICS__OTEL_ON",
        "AIRFLOW__METRICS__STATSD_ON_CMD",
        "AIRFLOW__METRICS__OTEL_ON_SECRET",
        "AIRFLOW__METRICS__METRICS_ALLOW_LIST",  # anything of [metrics]
        "AIRFLOW__SCHEDULER__STATSD_ON",  # the option's home before Airflow 2.0
        "airflow__metrics__statsd_on",
    ],
)
def test_a_metrics_variable_in_the_environment_asks_airflow(tmp_path: Path, name: str) -> None:
    assert asked({"AIRFLOW_HOME": str(tmp_path), name: "True"})


def test_with_no_configuration_at_all_metrics_are_off(tmp_path: Path) -> None:
    """Airflow's default: no home, no file, no variable."""
    assert not asked({"AIRFLOW_HOME": str(tmp_path / "nowhere"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"})


@pytest.mark.parametrize(
    "text",
    [
        "[metrics]\nstatsd_on = True\n",
        "[metrics]\n  otel_on: True\n",  # configparser's other delimiter, indented
        "[metrics]\nSTATSD_ON=True\n",
        "[metrics]\nstatsd_on_cmd = cat /run/secrets/statsd\n",
        "[scheduler]\nstatsd_on = True\n",  # any section: Airflow says what it makes of it
        "[metrics]\nstatsd_datadog_enabled = True\n",
    ],
)
def test_a_statsd_or_otel_option_in_airflow_cfg_asks_airflow(tmp_path: Path, text: str) -> None:
    (tmp_path / "airflow.cfg").write_text("[core]\nload_examples = False\n" + text)
    assert asked({"AIRFLOW_HOME": str(tmp_path)})


def test_a_file_that_names_no_metrics_option_leaves_them_off(tmp_path: Path) -> None:
    (tmp_path / "airflow.cfg").write_text(
        "[core]\nload_examples = False\n[metrics]\n# statsd_on = True\nmetrics_use_pattern_match = False\n"
    )
    assert not asked({"AIRFLOW_HOME": str(tmp_path)})


def test_airflow_config_names_the_file_read_instead_of_the_homes(tmp_path: Path) -> None:
    (tmp_path / "airflow.cfg").write_text("[metrics]\nstatsd_on = True\n")
    elsewhere = tmp_path / "elsewhere.cfg"
    elsewhere.write_text("[core]\nload_examples = False\n")
    assert not asked({"AIRFLOW_HOME": str(tmp_path), "AIRFLOW_CONFIG": str(elsewhere)})
    elsewhere.write_text("[metrics]\notel_on = True\n")
    assert asked({"AIRFLOW_HOME": str(tmp_path), "AIRFLOW_CONFIG": str(elsewhere)})


def test_without_airflow_home_the_file_is_looked_for_in_home_airflow(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert not asked({})
    (tmp_path / "airflow").mkdir()
    (tmp_path / "airflow" / "airflow.cfg").write_text("[metrics]\nstatsd_on = True\n")
    assert asked({})


def test_a_home_or_file_named_with_a_tilde_or_a_variable_is_expanded_as_airflow_does(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AF_ROOT", str(tmp_path))
    (tmp_path / "af").mkdir()
    (tmp_path / "af" / "airflow.cfg").write_text("[metrics]\nstatsd_on = True\n")
    assert asked({"AIRFLOW_HOME": "~/af"})
    assert asked({"AIRFLOW_HOME": str(tmp_path), "AIRFLOW_CONFIG": "$AF_ROOT/af/airflow.cfg"})
    assert not asked({"AIRFLOW_HOME": "~/elsewhere"})


def test_a_file_that_cannot_be_read_is_left_to_airflow(tmp_path: Path) -> None:
    """A directory, or a file past the bound: Airflow reads it (and says what it makes of it)."""
    (tmp_path / "airflow.cfg").mkdir()
    assert asked({"AIRFLOW_HOME": str(tmp_path)})
    huge = tmp_path / "huge.cfg"
    with huge.open("wb") as handle:
        handle.truncate(5 * 1024 * 1024)
    assert asked({"AIRFLOW_CONFIG": str(huge)})


def test_where_airflow_is_loaded_already_it_is_asked(tmp_path: Path) -> None:
    """A task, or ``airflow coremodels``: asking costs nothing more there."""
    assert metrics_may_be_on({"AIRFLOW_HOME": str(tmp_path)}, modules={"airflow": object()})
