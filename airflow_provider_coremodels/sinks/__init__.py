"""Sinks: where export pushes the snapshot document (a directory, object storage, an HTTP endpoint),
or its DAGs as OpenLineage events (``sinks/openlineage.py``: not imported here, it needs the
``openlineage`` extra).

Which sink a URI names is decided one floor up, in ``jobs.export.open_sinks``: the endpoint sink may
need a connection, and connections are the Airflow glue's business, not the sinks'.
"""

from __future__ import annotations

from airflow_provider_coremodels.sinks.base import Sink, SinkResult
from airflow_provider_coremodels.sinks.directory import FileSink, ObjectStorageSink

__all__ = ["FileSink", "ObjectStorageSink", "Sink", "SinkResult"]
