"""The capability gate: the airflow connector imports and audits, and refuses generation cleanly."""

from __future__ import annotations

from typing import Any, NoReturn

from airflow_provider_coremodels.core.estate.model import CAPABILITIES, CONNECTOR
from airflow_provider_coremodels.errors import CapabilityError, GenerationNotSupportedError


def require(capability: str) -> None:
    """Raise unless the connector declares ``capability``; checked before any work starts."""
    if capability in CAPABILITIES:
        return
    if capability == "generate":
        raise GenerationNotSupportedError
    raise CapabilityError(f"Connector '{CONNECTOR}' does not support {capability}.")


def generate(*_args: Any, **_kwargs: Any) -> NoReturn:
    """Generation entry point: orchestration code is not derivable from schema, so always refused."""
    require("generate")
    raise AssertionError("unreachable: the gate refuses generation")  # pragma: no cover
