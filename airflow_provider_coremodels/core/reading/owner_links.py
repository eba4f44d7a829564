"""How to reach a DAG's owners: Airflow's ``owner_links`` (owner -> URL), carried in the DAG's metadata.

Only a DAG's details (``GET /dags/{dag_id}/details``) give them, and the capture reads the details
only of the DAGs the list says too little about (an asset schedule, no description): elsewhere they
are unknown, and a record of the capture says so. Shown wherever owners are: the change's affected
DAGs (the pull request's report), the notifications' context.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_coremodels.core.estate.model import OWNER_LINKS_KEY
from airflow_provider_coremodels.core.estate.text import cut, printable, utf8_safe

_OWNER_MAX = 200
_URL_MAX = 2000


def owner_links_text(value: object) -> str | None:
    """A DAG's ``owner_links`` as canonical JSON, every string with its control characters escaped and
    bounded; None where there are none, or they are not a mapping of strings."""
    if not isinstance(value, dict):
        return None
    links = {
        printable(cut(owner.strip(), _OWNER_MAX)): printable(cut(url.strip(), _URL_MAX))
        for owner, url in value.items()
        if isinstance(owner, str) and isinstance(url, str) and owner.strip() and url.strip()
    }
    if not links:
        return None
    return utf8_safe(json.dumps(links, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def owner_links(metadata: Mapping[str, Any]) -> dict[str, str]:
    """A DAG's owner links read back from its metadata (empty where unknown or unreadable)."""
    text = metadata.get(OWNER_LINKS_KEY)
    if not isinstance(text, str) or not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def owners_of(document: Mapping[str, Any], dag_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each named DAG's owners, and their links where known: ``{dag: {"owners": [...], "ownerLinks":
    {...}}}`` (the links key only where the capture read them)."""
    wanted = set(dag_ids)
    out: dict[str, dict[str, Any]] = {}
    datasets = document.get("datasets")
    for dataset in datasets if isinstance(datasets, list) else ():
        if not isinstance(dataset, Mapping) or dataset.get("materialization") != "dag":
            continue
        identity = dataset.get("identity")
        if identity not in wanted:
            continue
        metadata = dataset.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        owners = [o for o in str(metadata.get("airflow.owners") or "").split(",") if o]
        entry: dict[str, Any] = {"owners": owners}
        if links := owner_links(metadata):
            entry["ownerLinks"] = links
        out[str(identity)] = entry
    return out


def with_links(owners: Iterable[str], links: Mapping[str, str]) -> str:
    """Owners as one line of text, each followed by its link where known: ``data-eng <https://...>``."""
    return ", ".join(f"{owner} <{links[owner]}>" if owner in links else owner for owner in owners)
