"""The pure core: artifacts -> estate model -> findings -> renderings. No airflow, no I/O.

One sub-package per stage, each importing only from the stages below it (docs/development.md,
"The map"): ``estate`` (the model every stage shares), ``reading`` (artifacts -> estate),
``checks`` (estate -> findings), ``snapshots`` (estate and findings -> the stored document),
``views`` (document -> text for people and tools), ``comparing`` (two documents -> what changed).

The names below load on first use, so that importing one small module of the core (the
finding catalogue, say, which the CLI's argument table reads at every Airflow start-up) does
not import the parse, the audit and their dependencies with it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below are, for type checkers (``X as X`` re-exports them)
    from airflow_provider_coremodels.core.checks.audit import AuditResult as AuditResult
    from airflow_provider_coremodels.core.checks.audit import Baseline as Baseline
    from airflow_provider_coremodels.core.checks.audit import audit as audit
    from airflow_provider_coremodels.core.estate.model import Dataset as Dataset
    from airflow_provider_coremodels.core.estate.model import Edge as Edge
    from airflow_provider_coremodels.core.estate.model import Estate as Estate
    from airflow_provider_coremodels.core.estate.model import Field as Field
    from airflow_provider_coremodels.core.estate.model import Finding as Finding
    from airflow_provider_coremodels.core.estate.model import Lossiness as Lossiness
    from airflow_provider_coremodels.core.estate.model import Severity as Severity
    from airflow_provider_coremodels.core.estate.model import State as State
    from airflow_provider_coremodels.core.reading.parse import ABSENT as ABSENT
    from airflow_provider_coremodels.core.reading.parse import build_estate as build_estate
    from airflow_provider_coremodels.core.reading.parse import parse_artifacts as parse_artifacts
    from airflow_provider_coremodels.core.snapshots.document import StoredSnapshot as StoredSnapshot
    from airflow_provider_coremodels.core.snapshots.document import build_document as build_document
    from airflow_provider_coremodels.core.snapshots.document import fingerprint as fingerprint
    from airflow_provider_coremodels.core.snapshots.document import for_storage as for_storage
    from airflow_provider_coremodels.core.snapshots.document import load_document as load_document

_HOMES = {
    "checks.audit": ("AuditResult", "Baseline", "audit"),
    "snapshots.document": ("StoredSnapshot", "build_document", "fingerprint", "for_storage", "load_document"),
    "estate.model": ("Dataset", "Edge", "Estate", "Field", "Finding", "Lossiness", "Severity", "State"),
    "reading.parse": ("ABSENT", "build_estate", "parse_artifacts"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


class _Core(types.ModuleType):
    """This package, guarding the names it exports from its own submodules.

    Python binds a submodule on its package once the submodule is loaded; should one ever share a
    name with a function exported here (``audit`` did, before the core had stages), the function
    keeps the name.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Core
