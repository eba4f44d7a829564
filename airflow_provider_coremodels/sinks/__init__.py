"""Sinks: where export pushes the snapshot document (a directory, object storage, an HTTP endpoint)."""

from __future__ import annotations

from urllib.parse import urlsplit

from airflow_provider_coremodels.capture.retry import RetryPolicy
from airflow_provider_coremodels.errors import UsageError
from airflow_provider_coremodels.sinks.base import Sink, SinkResult
from airflow_provider_coremodels.sinks.directory import FileSink, ObjectStorageSink

__all__ = ["FileSink", "ObjectStorageSink", "Sink", "SinkResult", "open_sink"]


def open_sink(
    uri: str,
    *,
    sink_conn_id: str | None = None,
    coremodels_conn_id: str | None = None,
    retry: RetryPolicy | None = None,
) -> Sink:
    """The sink a URI names: a path or ``file://``, an ``http(s)://`` endpoint, or object storage."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):
        if coremodels_conn_id:
            from airflow_provider_coremodels.hooks.coremodels import CoreModelsHook

            return CoreModelsHook(coremodels_conn_id).get_sink(uri, retry=retry)
        from airflow_provider_coremodels.sinks.endpoint import EndpointSink

        return EndpointSink(uri, retry=retry)
    if scheme == "file":
        path = urlsplit(uri).path
        if not path:
            raise UsageError(f"sink {uri}: a file:// URI needs a path")
        return FileSink(path, uri)
    if not scheme or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return FileSink(uri)
    return ObjectStorageSink(uri, conn_id=sink_conn_id)
