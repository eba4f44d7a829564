"""The pure core: artifacts -> estate model -> findings -> renderings. No airflow, no I/O.

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
    from airflow_provider_coremodels.core.audit import AuditResult as AuditResult
    from airflow_provider_coremodels.core.audit import Baseline as Baseline
    from airflow_provider_coremodels.core.audit import audit as audit
    from airflow_provider_coremodels.core.document import StoredSnapshot as StoredSnapshot
    from airflow_provider_coremodels.core.document import build_document as build_document
    from airflow_provider_coremodels.core.document import fingerprint as fingerprint
    from airflow_provider_coremodels.core.document import for_storage as for_storage
    from airflow_provider_coremodels.core.document import load_document as load_document
    from airflow_provider_coremodels.core.model import Dataset as Dataset
    from airflow_provider_coremodels.core.model import Edge as Edge
    from airflow_provider_coremodels.core.model import Estate as Estate
    from airflow_provider_coremodels.core.model import Field as Field
    from airflow_provider_coremodels.core.model import Finding as Finding
    from airflow_provider_coremodels.core.model import Lossiness as Lossiness
    from airflow_provider_coremodels.core.model import Severity as Severity
    from airflow_provider_coremodels.core.model import State as State
    from airflow_provider_coremodels.core.parse import ABSENT as ABSENT
    from airflow_provider_coremodels.core.parse import build_estate as build_estate
    from airflow_provider_coremodels.core.parse import parse_artifacts as parse_artifacts

_HOMES = {
    "audit": ("AuditResult", "Baseline", "audit"),
    "document": ("StoredSnapshot", "build_document", "fingerprint", "for_storage", "load_document"),
    "model": ("Dataset", "Edge", "Estate", "Field", "Finding", "Lossiness", "Severity", "State"),
    "parse": ("ABSENT", "build_estate", "parse_artifacts"),
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

    Python binds a submodule on its package once the submodule is loaded; ``audit`` names both
    a submodule and the function exported here, and the function must keep the name.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Core
