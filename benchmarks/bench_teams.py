"""Benchmark 9: what the rules file's teams cost the audit, and a team's view of its findings (issue 36).

The synthetic estate of ``generate_estate.py`` (L: 10,000 DAGs, 200,000 tasks), audited three ways
in one process, interleaved, ``--repeat`` times each (median): with a rules file of no rules and no
teams, with the same and 40 teams (each team one owner of the estate, a bundle that is not there,
and a tag: every match is a dict lookup), and the second's document cut to one team's findings
(``for_team``, what ``--team`` prints). Printed: each time, and the ratio of the audit with teams
to the audit without; the number of findings and how many carry a team.

    python benchmarks/bench_teams.py                  # L, 3 runs
    python benchmarks/bench_teams.py --size S --repeat 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_estate import generate

from airflow_provider_coremodels.core import audit, build_document, parse_artifacts
from airflow_provider_coremodels.core.checks.policy import parse_rules
from airflow_provider_coremodels.core.checks.teams import for_team


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="L")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    docs = generate(args.size, seed=0)
    estate = parse_artifacts(*(json.dumps(docs[k]).encode() for k in ("dags", "tasks", "datasets")))
    owners = sorted({o for d in docs["dags"]["dags"] for o in d["owners"]} - {"airflow"})
    tags = sorted({t["name"] for d in docs["dags"]["dags"] for t in d["tags"]})
    teams = "teams:\n" + "".join(
        f"  team-{i}: {{owners: [{owners[i % len(owners)]}], bundles: [b-{i}], "
        f"tags: [{tags[i % len(tags)]}]}}\n"
        for i in range(40)
    )
    plain, with_teams = parse_rules("rules: []"), parse_rules(teams)
    times: dict[str, list[float]] = {"without teams": [], "with 40 teams": [], "one team's view": []}
    document = None
    audit(estate, policy=with_teams)  # once untimed: the first audit imports and caches (croniter)
    for _ in range(args.repeat):
        start = time.perf_counter()
        build_document(estate, audit(estate, policy=plain), lean=True)
        times["without teams"].append(time.perf_counter() - start)
        start = time.perf_counter()
        document = build_document(estate, audit(estate, policy=with_teams), lean=True)
        times["with 40 teams"].append(time.perf_counter() - start)
        start = time.perf_counter()
        for_team(document, "team-0")
        times["one team's view"].append(time.perf_counter() - start)
    assert document is not None
    median = {name: statistics.median(values) for name, values in times.items()}
    findings = document["findings"]
    owned = sum(1 for f in findings if f["team"])
    print(f"| {args.size}: {len(estate.dags())} DAGs, {len(findings)} findings ({owned} of a team) "
          f"| median of {args.repeat} |")  # fmt: skip
    print("|---|---|")
    for name, value in median.items():
        print(f"| {name} | {value * 1000:.1f} ms |")
    print(f"| audit with teams / without | {median['with 40 teams'] / median['without teams']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
