"""CoreModels provider for Apache Airflow: capture, audit and export an Airflow estate, lineage first."""

from __future__ import annotations

__version__ = "0.3.0"
