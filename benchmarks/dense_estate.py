"""Dense lineage estates: few nodes, many edges, the pictures that used to take minutes to lay out.

The three of issue 34, as bare artifacts (``dags.json`` and ``datasets.json`` as ``curl``
gets them, Airflow 3's shape), the same bytes for the same seed:

* ``assets``: 300 DAGs and 150 assets, each asset with 20 random producers and 20 random
  consumers (450 nodes, 6,000 edges);
* ``1600``: 200 nodes (100 DAGs, 100 assets) and 1,600 random edges;
* ``3000``: 300 nodes (150 DAGs, 150 assets) and 3,000 random edges.

A random edge runs from a DAG to an asset (a producing task) or from an asset to a DAG (a
schedule), either way at even odds, so the graph has cycles, as a dense estate does.

    from dense_estate import CASES, dense_artifacts
    docs = dense_artifacts("1600")   # {"dags": {...}, "datasets": {...}}
"""

from __future__ import annotations

import random
from typing import Any

#: Each case: (DAGs, assets, producers and consumers per asset, or None, random edges, or None).
CASES: dict[str, tuple[int, int, int | None, int | None]] = {
    "assets": (300, 150, 20, None),
    "1600": (100, 100, None, 1600),
    "3000": (150, 150, None, 3000),
}
#: What each case is, in words (the benchmark's and the docs' names for them).
TITLES = {
    "assets": "300 DAGs, 150 assets with 20 producers and 20 consumers each",
    "1600": "200 nodes, 1,600 edges",
    "3000": "300 nodes, 3,000 edges",
}


def dense_artifacts(case: str, seed: int = 0) -> dict[str, Any]:
    """The dags and datasets artifacts of one case."""
    dag_count, asset_count, per_asset, edge_count = CASES[case]
    rng = random.Random(f"{case}:{seed}")
    dags = [f"dag_{i:03}" for i in range(dag_count)]
    uris = [f"s3://lake/dense/asset_{i:03}" for i in range(asset_count)]
    produced: dict[str, set[str]] = {uri: set() for uri in uris}
    consumed: dict[str, set[str]] = {uri: set() for uri in uris}
    if per_asset is not None:
        for uri in uris:
            produced[uri].update(rng.sample(dags, per_asset))
            consumed[uri].update(rng.sample(dags, per_asset))
    else:
        assert edge_count is not None
        made = 0
        while made < edge_count:
            dag, uri = rng.choice(dags), rng.choice(uris)
            side = produced if rng.random() < 0.5 else consumed
            if dag not in side[uri]:
                side[uri].add(dag)
                made += 1
    return {
        "dags": {
            "dags": [
                {"dag_id": dag, "is_paused": False, "owners": ["data-eng"], "description": "dense"}
                for dag in dags
            ]
        },
        "datasets": {
            "assets": [
                {
                    "uri": uri,
                    "producing_tasks": [{"dag_id": d, "task_id": "publish"} for d in sorted(produced[uri])],
                    "scheduled_dags": [{"dag_id": d} for d in sorted(consumed[uri])],
                }
                for uri in uris
            ]
        },
    }
