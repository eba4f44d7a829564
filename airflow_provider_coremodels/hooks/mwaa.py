"""``MwaaApiHook``: the capture of an Amazon MWAA environment, from a connection of type ``airflow_api_mwaa``.

Host: the environment's name. Extras: ``aws_conn_id`` (the amazon provider's AWS connection:
keys, an assumed role, the region; default ``aws_default``; empty, or without the amazon
provider, boto3's default credential chain), ``region_name``, ``endpoint_url`` and
``inject_host_prefix`` (another MWAA endpoint), and the capture's ``concurrency``, ``pacing``,
``pacing_share``, ``timeout``, ``connect_timeout``, ``deadline_alerts``. Needs boto3 (the ``mwaa`` extra).
"""

from __future__ import annotations

import logging
from typing import Any

from airflow_provider_coremodels.capture import ApiSource
from airflow_provider_coremodels.errors import ConnectionConfigError
from airflow_provider_coremodels.hooks.airflow_api import AirflowApiHook, capture_settings
from airflow_provider_coremodels.hooks.connection_fields import extra_bool, extra_str, share_with_other_hooks
from airflow_provider_coremodels.hooks.forms import AIRFLOW_API_MWAA, FORMS, ui_field_behaviour

log = logging.getLogger(__name__)

DEFAULT_AWS_CONN_ID = "aws_default"


class MwaaApiHook(AirflowApiHook):
    """Reads an MWAA environment's REST API through ``InvokeRestApi``, signed with AWS credentials."""

    conn_type = AIRFLOW_API_MWAA
    hook_name = FORMS[AIRFLOW_API_MWAA]["hook-name"]

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return ui_field_behaviour(AIRFLOW_API_MWAA)

    @classmethod
    def source_from(cls, conn: Any, conn_id: str) -> ApiSource:
        return mwaa_source(conn, conn_id)


def mwaa_source(conn: Any, conn_id: str) -> ApiSource:
    """The source of an ``airflow_api_mwaa`` connection: its environment, reached with a boto3 session."""
    from airflow_provider_coremodels.capture.mwaa import MwaaAccess

    extra = conn.extra_dejson
    environment = (conn.host or "").strip()
    if not environment:
        raise ConnectionConfigError(f"connection {conn_id!r} names no MWAA environment (its host)")
    region = extra_str(extra, "region_name", conn_id)
    aws_conn_id = extra.get("aws_conn_id", DEFAULT_AWS_CONN_ID)
    if aws_conn_id is not None and not isinstance(aws_conn_id, str):
        raise ConnectionConfigError(f"connection {conn_id!r}: extra 'aws_conn_id' must be a string")
    session = _session(aws_conn_id or None, region, conn_id)
    if not session.region_name:
        raise ConnectionConfigError(
            f"connection {conn_id!r}: no AWS region for MWAA environment {environment!r}: set the "
            "extra region_name, the AWS connection's region_name, or AWS_DEFAULT_REGION"
        )
    access = MwaaAccess(
        environment=environment,
        session=session,
        endpoint_url=extra_str(extra, "endpoint_url", conn_id),
        inject_host_prefix=extra_bool(extra, "inject_host_prefix", conn_id, default=True),
    )
    try:
        return ApiSource(base_url=access.base_url(), managed=access, **capture_settings(extra, conn_id))
    except (TypeError, ValueError) as exc:
        raise ConnectionConfigError(f"connection {conn_id!r} is not usable: {exc}") from None


def _session(aws_conn_id: str | None, region: str | None, conn_id: str) -> Any:
    """A boto3 session: the AWS connection's (through the amazon provider), else the default chain."""
    try:
        import boto3
    except ImportError:
        raise ConnectionConfigError(
            f"connection {conn_id!r} is an MWAA connection, and boto3 is not installed: "
            "pip install 'airflow-provider-coremodels[mwaa]'"
        ) from None
    if aws_conn_id is not None:
        try:
            from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
        except ImportError:
            if aws_conn_id != DEFAULT_AWS_CONN_ID:
                raise ConnectionConfigError(
                    f"connection {conn_id!r} names the AWS connection {aws_conn_id!r}, and the amazon "
                    "provider is not installed: install apache-airflow-providers-amazon, or leave "
                    "aws_conn_id empty for boto3's default chain"
                ) from None
            log.info("no amazon provider: MWAA is called with boto3's default credential chain")
            return boto3.session.Session(region_name=region)
        hook = AwsBaseHook(aws_conn_id=aws_conn_id, region_name=region, client_type="mwaa")
        try:  # a connection kept in the metadata database, made visible to the provider's lookup
            share_with_other_hooks(hook, aws_conn_id)
        except ConnectionConfigError:
            if aws_conn_id != DEFAULT_AWS_CONN_ID:
                raise
            log.info("no connection %s: MWAA is called with boto3's default chain", aws_conn_id)
            return boto3.session.Session(region_name=region)
        return hook.get_session(region_name=region)
    return boto3.session.Session(region_name=region)
