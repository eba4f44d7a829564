"""Print a compact reading of what probe_api.py recorded, per line and step (for API_FACTS.md).

python dev/versions/summarize_probe.py [--out /work/versions-scratch/probe] [VERSION ...]
python dev/versions/summarize_probe.py --facts     # one row per API_FACTS.md question
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any


def load(step: Path, name: str) -> dict[str, Any] | None:
    path = step / f"{name}.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    # Merge further pages of a list answer.
    for extra in sorted(
        step.glob(f"{name}.offset*.json"), key=lambda p: int(p.name.split("offset")[1].split(".")[0])
    ):
        page = json.loads(extra.read_text())["body"]
        for key, value in record["body"].items():
            if isinstance(value, list):
                value.extend(page.get(key, []))
    return record


def items(record: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not record or not isinstance(record["body"], dict):
        return []
    return next((v for v in record["body"].values() if isinstance(v, list)), [])


def dag_flags(dag: dict[str, Any]) -> str:
    flags = []
    if dag.get("is_stale"):
        flags.append("stale")
    if dag.get("is_active") is False:
        flags.append("inactive")
    if dag.get("has_import_errors"):
        flags.append("import-err")
    if dag.get("is_paused"):
        flags.append("paused")
    return dag["dag_id"] + (f"[{','.join(flags)}]" if flags else "")


def refs(asset: dict[str, Any]) -> str:
    parts = []
    for key in (
        "producing_tasks",
        "consuming_tasks",
        "consuming_dags",
        "scheduled_dags",
        "watchers",
        "aliases",
    ):
        if key not in asset:
            continue
        value = asset[key]
        if key in ("watchers", "aliases"):
            shown = [w.get("name") for w in value]
        else:
            shown = [r.get("dag_id", "?") + ("." + r["task_id"] if "task_id" in r else "") for r in value]
        parts.append(f"{key}={shown}")
    return " ".join(parts)


def asset_label(asset: dict[str, Any]) -> str:
    name = asset.get("name")
    label = asset["uri"] if name in (None, asset["uri"]) else f"{name}<{asset['uri']}>"
    if "is_orphaned" in asset:
        label += f" orphaned={asset['is_orphaned']}"
    return f"#{asset.get('id')} {label}"


def summarize_step(step: Path) -> None:
    print(f"--- {step.name}")
    dags = load(step, "dags")
    dags_all = load(step, "dags_all")
    print(f"  dags: HTTP {dags['status']} total={dags['body'].get('total_entries')}")
    if len(items(dags)) <= 40:
        print("    ", " ".join(dag_flags(d) for d in items(dags)))
    print(f"  dags_all: HTTP {dags_all['status']} total={dags_all['body'].get('total_entries')}")
    if len(items(dags_all)) <= 40:
        print("    ", " ".join(dag_flags(d) for d in items(dags_all)))
    bundles = collections.Counter(d.get("bundle_name", "(no bundle_name key)") for d in items(dags_all))
    print("  bundles (dags_all):", dict(bundles))
    first = items(dags_all)[:1]
    if first:
        print("  dag keys:", sorted(first[0]))
    for name in ("assets", "assets_all", "datasets", "datasets_all"):
        record = load(step, name)
        if record is None:
            continue
        print(
            f"  {name}: HTTP {record['status']} total={record['body'].get('total_entries')}"
            f" params={record['params']}"
        )
        for asset in items(record)[:40]:
            print(
                f"     {asset_label(asset)}  {refs(asset)}"
                + (f" last_event={asset['last_asset_event']}" if "last_asset_event" in asset else "")
            )
        if items(record):
            print("    asset keys:", sorted(items(record)[0]))
    errors = load(step, "importErrors")
    for error in items(errors):
        print(
            "  importError:",
            {k: (v if k != "stack_trace" else v.strip().splitlines()[-1]) for k, v in error.items()},
        )
    warnings = load(step, "dagWarnings")
    for warning in items(warnings):
        print("  dagWarning:", warning)
    deps = load(step, "ui_dependencies")
    noauth = load(step, "ui_dependencies_noauth")
    body = deps["body"]
    print(f"  ui_dependencies {deps['path']}: HTTP {deps['status']}, without auth HTTP {noauth['status']}")
    if isinstance(body, dict):
        print(
            "    node ids/labels:",
            sorted(
                (n["id"], n.get("label") or n.get("value", {}).get("label")) for n in body.get("nodes", [])
            )[:60],
        )
        print(
            "    edges:",
            sorted(
                (e.get("source_id", e.get("source")), e.get("target_id", e.get("target")))
                for e in body.get("edges", [])
            )[:80],
        )
        if body.get("nodes"):
            print(
                "    node keys:",
                sorted(body["nodes"][0]),
                "edge keys:",
                sorted(body["edges"][0]) if body.get("edges") else None,
            )
    else:
        print("    body:", str(body)[:200])
    for detail in sorted(step.glob("details_*.json")):
        dag_id = detail.stem[len("details_") :]
        d = json.loads(detail.read_text())
        t = load(step, f"tasks_{dag_id}")
        b = d["body"] if isinstance(d["body"], dict) else {}
        keys = {
            k: b.get(k)
            for k in ("is_stale", "is_active", "has_import_errors", "description", "dag_display_name")
            if k in b
        }
        doc = b.get("doc_md")
        tasks = items(t)
        task_view = [
            (x["task_id"], [o for o in x.get("outlets", [])] if "outlets" in x else "-") for x in tasks
        ]
        print(
            f"  details {dag_id}: HTTP {d['status']} {keys} doc_md={doc!r:.40}"
            f"  tasks HTTP {t['status']} {task_view if t['status'] == 200 else t['body']}"
        )
    for patch in sorted(step.glob("patch_*.json")):
        p = json.loads(patch.read_text())
        print(
            f"  {patch.stem}: HTTP {p['status']}"
            f" is_paused={p['body'].get('is_paused') if isinstance(p['body'], dict) else p['body']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("versions", nargs="*")
    parser.add_argument("--out", type=Path, default=Path("/work/versions-scratch/probe"))
    parser.add_argument("--facts", action="store_true", help="one row per question, one line per version")
    args = parser.parse_args()
    versions = args.versions or sorted(
        (p.name for p in args.out.iterdir() if p.is_dir()), key=lambda v: tuple(map(int, v.split(".")))
    )
    if args.facts:
        facts(args.out, versions)
        return
    for version in versions:
        print(f"===================== {version}")
        for step in sorted(
            p for p in (args.out / version).iterdir() if p.is_dir() and not p.name.startswith("home")
        ):
            summarize_step(step)


# ---------------------------------------------------------------------------- per-question view
def _asset(step: Path, uri: str, *, all_: bool = True) -> dict[str, Any] | None:
    for name in ("assets_all", "datasets") if all_ else ("assets", "datasets"):
        record = load(step, name)
        if record is not None and record["status"] == 200:
            return next((a for a in items(record) if a["uri"] == uri), None)
    return None


def _ref_ids(asset: dict[str, Any] | None, *keys: str) -> list[str] | None:
    if asset is None:
        return None
    out: list[str] = []
    for key in keys:
        for ref in asset.get(key, []):
            out.append(ref.get("dag_id", "?") + ("." + ref["task_id"] if "task_id" in ref else ""))
    return out


def _dag(step: Path, dag_id: str, name: str = "dags_all") -> dict[str, Any] | None:
    return next((d for d in items(load(step, name)) if d["dag_id"] == dag_id), None)


def _flags(dag: dict[str, Any] | None) -> str:
    if dag is None:
        return "absent"
    return ", ".join(
        f"{k}={dag[k]}" for k in ("is_stale", "is_active", "has_import_errors", "is_paused") if k in dag
    )


def _deps(step: Path) -> tuple[set[str], set[tuple[str, str]]]:
    body = load(step, "ui_dependencies")["body"]
    if not isinstance(body, dict):
        return set(), set()
    nodes = {n["id"] for n in body.get("nodes", [])}
    edges = {
        (e.get("source_id", e.get("source")), e.get("target_id", e.get("target")))
        for e in body.get("edges", [])
    }
    return nodes, edges


def facts(out: Path, versions: list[str]) -> None:
    def row(question: str, fn: Any) -> None:
        print(f"\n## {question}")
        for version in versions:
            base = out / version
            try:
                print(f"  {version}: {fn(base)}")
            except Exception as err:
                print(f"  {version}: ({type(err).__name__}: {err})")

    orders, lost, gone_out, gone_in = (
        "s3://lake/orders.parquet",
        "s3://lake/lost",
        "s3://lake/gone_out",
        "s3://lake/gone_in",
    )
    prod = ("producing_tasks",)
    cons = ("consuming_tasks",)
    sched = ("scheduled_dags", "consuming_dags")

    def deps_has(step: Path, *wanted: str) -> str:
        nodes, edges = _deps(step)
        return ", ".join(f"{w}:{'yes' if w in nodes or any(w in e for e in edges) else 'no'}" for w in wanted)

    row(
        "broken file (b): load_orders flags in dags_all / in default list",
        lambda b: (
            f"{_flags(_dag(b / 'lifecycle_b', 'load_orders'))}; default list: "
            f"{'yes' if _dag(b / 'lifecycle_b', 'load_orders', 'dags') else 'no'}"
        ),
    )
    row(
        "broken file: producing_tasks of orders at b / c / f",
        lambda b: [
            _ref_ids(_asset(b / s, orders), *prod) for s in ("lifecycle_b", "lifecycle_c", "lifecycle_f")
        ],
    )
    row(
        "broken file: /ui deps has dag:load_orders at a / b / c",
        lambda b: [deps_has(b / s, "dag:load_orders") for s in ("lifecycle_a", "lifecycle_b", "lifecycle_c")],
    )
    row(
        "broken file: details / tasks status for load_orders at b",
        lambda b: (
            load(b / "lifecycle_b", "details_load_orders")["status"],
            load(b / "lifecycle_b", "tasks_load_orders")["status"],
        ),
    )
    row(
        "importErrors entry at b",
        lambda b: items(load(b / "lifecycle_b", "importErrors"))[0] | {"stack_trace": "..."},
    )
    row(
        "dags list: status default / all-param, totals at e",
        lambda b: (
            load(b / "lifecycle_e", "dags")["status"],
            load(b / "lifecycle_e", "dags")["body"].get("total_entries"),
            load(b / "lifecycle_e", "dags_all")["params"],
            load(b / "lifecycle_e", "dags_all")["status"],
            load(b / "lifecycle_e", "dags_all")["body"].get("total_entries"),
        ),
    )
    row(
        "deleted (e): gone flags; details / tasks status",
        lambda b: (
            _flags(_dag(b / "lifecycle_e", "gone")),
            load(b / "lifecycle_e", "details_gone")["status"],
            load(b / "lifecycle_e", "tasks_gone")["status"],
        ),
    )
    row(
        "deleted: gone_out producing / gone_in consuming at e, f, last",
        lambda b: [
            (s, _ref_ids(_asset(b / s, gone_out), *prod), _ref_ids(_asset(b / s, gone_in), *cons))
            for s in ("lifecycle_e", "lifecycle_f", sorted(p.name for p in b.glob("lifecycle_*"))[-1])
        ],
    )
    row(
        "deleted: /ui deps dag:gone at d / e",
        lambda b: [deps_has(b / s, "dag:gone") for s in ("lifecycle_d", "lifecycle_e")],
    )
    row(
        "lost outlet (c): lost producing at b / c / f / last",
        lambda b: [
            _ref_ids(_asset(b / s, lost), *prod)
            for s in (
                "lifecycle_b",
                "lifecycle_c",
                "lifecycle_f",
                sorted(p.name for p in b.glob("lifecycle_*"))[-1],
            )
        ],
    )
    row(
        "lost outlet: /ui deps dag:loser at b / c",
        lambda b: [deps_has(b / s, "dag:loser") for s in ("lifecycle_b", "lifecycle_c")],
    )
    row(
        "lost inlet (d): orders consuming_tasks at c / d / f / last",
        lambda b: [
            _ref_ids(_asset(b / s, orders), *cons)
            for s in (
                "lifecycle_c",
                "lifecycle_d",
                "lifecycle_f",
                sorted(p.name for p in b.glob("lifecycle_*"))[-1],
            )
        ],
    )
    row(
        "asset keys (lifecycle_a)",
        lambda b: sorted(
            (items(load(b / "lifecycle_a", "assets")) or items(load(b / "lifecycle_a", "datasets")))[0]
        ),
    )
    row(
        "watched asset: watchers at a / f / g / h; scheduled on it",
        lambda b: [
            (s, (a or {}).get("watchers", "(no key)"), _ref_ids(a, *sched))
            for s in ("lifecycle_a", "lifecycle_f", "lifecycle_g", "lifecycle_h")
            for a in [_asset(b / s, "s3://lake/watched")]
        ],
    )
    row(
        "name-shared: v1/v2 in default list at a / f; in only_active=false at a / f",
        lambda b: [
            (
                s,
                [
                    u[-2:]
                    for u in ("s3://lake/inventory/v1", "s3://lake/inventory/v2")
                    if _asset(b / s, u, all_=False)
                ],
                [u[-2:] for u in ("s3://lake/inventory/v1", "s3://lake/inventory/v2") if _asset(b / s, u)],
            )
            for s in ("lifecycle_a", "lifecycle_f")
        ],
    )
    row(
        "dagWarnings at a / f",
        lambda b: [
            (
                s,
                [
                    (w["dag_id"], w["warning_type"], w["message"][:90])
                    for w in items(load(b / s, "dagWarnings"))
                ],
            )
            for s in ("lifecycle_a", "lifecycle_f")
        ],
    )
    row(
        "/ui deps: path, status, no-auth status, node/edge keys",
        lambda b: (
            load(b / "lifecycle_a", "ui_dependencies")["path"],
            load(b / "lifecycle_a", "ui_dependencies")["status"],
            load(b / "lifecycle_a", "ui_dependencies_noauth")["status"],
            sorted(load(b / "lifecycle_a", "ui_dependencies")["body"]["nodes"][0]),
            sorted(load(b / "lifecycle_a", "ui_dependencies")["body"]["edges"][0]),
        ),
    )
    row(
        "/ui deps: asset nodes (id, label) at a",
        lambda b: sorted(
            (n["id"], n.get("label") or n["value"]["label"])
            for n in load(b / "lifecycle_a", "ui_dependencies")["body"]["nodes"]
            if not n["id"].startswith("dag:")
        ),
    )
    row(
        "documented: dag_display_name in list; details description / doc_md",
        lambda b: (
            (_dag(b / "lifecycle_a", "documented", "dags") or {}).get("dag_display_name", "(no key)"),
            load(b / "lifecycle_a", "details_documented")["body"].get("description"),
            load(b / "lifecycle_a", "details_documented")["body"].get("doc_md", "(no key)"),
        ),
    )
    row(
        "last_asset_event on assets (lifecycle_a, first asset)",
        lambda b: (items(load(b / "lifecycle_a", "assets")) or items(load(b / "lifecycle_a", "datasets")))[
            0
        ].get("last_asset_event", "(no key)"),
    )
    row(
        "examples: DAGs per bundle (dags_all), default total, import errors",
        lambda b: (
            dict(
                collections.Counter(
                    d.get("bundle_name", "(no key)") for d in items(load(b / "examples", "dags_all"))
                )
            ),
            load(b / "examples", "dags")["body"]["total_entries"],
            [
                (
                    e.get("bundle_name"),
                    e["filename"].rsplit("/", 1)[-1],
                    e["stack_trace"].strip().splitlines()[-1][:80],
                )
                for e in items(load(b / "examples", "importErrors"))
            ],
        ),
    )
    row(
        "examples: assets default / only_active=false, before / after scheduler pass",
        lambda b: [
            (
                s,
                *(
                    load(b / s, n)["body"].get("total_entries")
                    for n in ("assets", "assets_all", "datasets")
                    if load(b / s, n)
                ),
            )
            for s in ("examples", "examples_scheduler")
        ],
    )
    row(
        "examples: dagWarnings before / after scheduler pass",
        lambda b: [len(items(load(b / s, "dagWarnings"))) for s in ("examples", "examples_scheduler")],
    )
    row("version", lambda b: load(b / "lifecycle_a", "version")["body"])


if __name__ == "__main__":
    main()
