"""Benchmark 8: what a rule's dag_id regex costs, RE2 against the hand-written engine it replaced.

Issue 34: an accepted rule regex (``[ab]*a(a|b|...|r){100}``, 1,904 NFA states, under the 2,000
cap) made the audit of 600 DAGs of 200-character ids take 33 s and 1,692 MB, against 0.8 s and
28 MB without the rule. Each case below is a rules file of that one rule audited over an estate
of that many DAGs (``audit(estate, policy=...)``, what ``audit --rules`` and the export task run),
three ways, each in a fresh subprocess so that its peak memory is its own: without the rule, with
the rule matched by RE2 (``core/checks/linear_regex.py``, what the package runs), and with the rule
matched by the hand-written lazy DFA of before (``handwritten_regex.py``, kept here only for this).
Each engine runs ``--repeat`` times per case, interleaved with the others, and the median
time is shown. Peak memory is the process's peak resident size (``VmHWM``, reset after the estate is built)
less its size then: RE2's memory is C++'s, which tracemalloc cannot see. Compiling the pattern
is load time, not counted. The cases:

* ``alternation-repeat``: issue 34's pattern, 600 ids of 200 random a/b characters;
* ``19-branches``: ``[ab]*w[ab]{100}`` for 19 letters w, joined by ``|`` (303 characters, like the
  330-character alternation that took 33 s on 1,000 DAGs), 1,000 ids of 250 characters, each
  a/b but for one other letter about 101 characters from its end;
* ``naming``: an ordinary naming rule, ``[a-z]+_(orders|revenue|crm|customers|report)``, over
  10,000 ids of a team name and a suffix, a fifth of them breaking it.

The per-character figure is the audit's time with the rule less its time without, over the ids'
characters.

    python benchmarks/bench_rules.py                 # every case at full size
    python benchmarks/bench_rules.py --ids 20 --repeat 1   # a quick run: 20 ids per case, once
    python benchmarks/bench_rules.py --engines re2   # without the slow hand-written engine
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:  # a checkout without the package installed
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from bench_offline import _rss, load_note, machine, mb, peak_rss  # noqa: E402

from airflow_provider_coremodels.core import audit, parse_artifacts  # noqa: E402
from airflow_provider_coremodels.core.checks.policy import DagId, Policy, rules_from_value  # noqa: E402

ENGINES = ("none", "re2", "handwritten")
LABEL = {"none": "no rule", "re2": "RE2", "handwritten": "hand-written DFA"}


def _issue_ids(count: int, length: int, marks: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    ids = []
    for _ in range(count):
        chars = [rng.choice("ab") for _ in range(length)]
        if marks:
            chars[length - rng.randint(99, 103)] = rng.choice(marks)
        ids.append("".join(chars))
    return ids


def _naming_ids(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    teams = ["sales", "finance", "growth", "ml", "platform", "ops", "crm", "web"]
    suffixes = ["orders", "revenue", "crm", "customers", "report"]
    ids = []
    for index in range(count):
        if index % 5 == 4:  # a fifth break the convention
            ids.append(f"{rng.choice(teams).title()}-{rng.choice(suffixes)}_v{index}")
        else:
            ids.append(f"{rng.choice(teams)}{'x' * rng.randint(0, 6)}_{rng.choice(suffixes)}")
    return ids


#: name -> (pattern, ids, characters per id or None for the naming ids, marks)
CASES: dict[str, tuple[str, int, int | None, str]] = {
    "alternation-repeat": ("[ab]*a(" + "|".join("abcdefghijklmnopqr") + "){100}", 600, 200, ""),
    "19-branches": (
        "|".join(f"[ab]*{w}[ab]{{100}}" for w in "abcdefghijklmnopqrs"),
        1_000,
        250,
        "cdefghijklmnopqrs",
    ),
    "naming": ("[a-z]+_(orders|revenue|crm|customers|report)", 10_000, None, ""),
}


def case_ids(name: str, count: int | None = None) -> list[str]:
    _, default, length, marks = CASES[name]
    count = default if count is None else count
    return _naming_ids(count, 34) if length is None else _issue_ids(count, length, marks, 34)


def _policy(pattern: str, engine: str) -> Policy | None:
    if engine == "none":
        return None
    policy = rules_from_value([{"code": "policy-dag-id", "require": {"dag_id": pattern}}])
    if engine == "handwritten":
        from handwritten_regex import compile_whole as handwritten

        rule = policy.rules[0]
        check = DagId(handwritten(pattern))  # type: ignore[arg-type]  # the same call: matcher(dag_id)
        policy = Policy((dataclasses.replace(rule, check=check),))
    return policy


def _reset_peak() -> bool:
    """Reset this process's VmHWM to its current size (Linux 4.0+): the peak measured from here."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def child(name: str, engine: str, count: int | None) -> dict[str, Any]:
    pattern = CASES[name][0]
    ids = case_ids(name, count)
    dags = [{"dag_id": dag_id, "is_paused": False, "owners": ["team-a"], "tags": []} for dag_id in ids]
    estate = parse_artifacts(json.dumps({"dags": dags}).encode())
    compiled = time.perf_counter()
    policy = _policy(pattern, engine)
    compiled = time.perf_counter() - compiled
    del dags
    gc.collect()
    reset = _reset_peak()
    base = _rss()
    start = time.perf_counter()
    result = audit(estate, policy=policy)
    seconds = time.perf_counter() - start
    peak = peak_rss() - base
    found = sum(finding.code == "policy-dag-id" for finding in result.findings)
    return {"seconds": seconds, "peak": peak, "findings": found, "compile": compiled, "reset": reset}


def measure(name: str, engine: str, count: int | None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps([name, engine, count])],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or done.stderr.strip():
        raise SystemExit(f"bench_rules: {name}/{engine} failed:\n{done.stderr.strip()}")
    measured: dict[str, Any] = json.loads(done.stdout)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help="comma-separated, of none, re2, handwritten"
    )
    parser.add_argument("--ids", type=int, default=None, help="ids per case (default: each case's own)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each engine per case (median time)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return 0
    cases = [name.strip() for name in args.cases.split(",") if name.strip()]
    engines = [engine.strip() for engine in args.engines.split(",") if engine.strip()]
    unknown = sorted(set(cases) - set(CASES)) + sorted(set(engines) - set(ENGINES))
    if unknown:
        parser.error(f"unknown case or engine: {', '.join(unknown)}")
    print(f"# Benchmark 8: a rule's dag_id regex, RE2 against the hand-written DFA\n\n{machine()}\n")
    print(load_note("at the start") + "\n")
    header = "| case | ids x chars | engine | compile | audit | peak memory | findings | per character |"
    print(header)
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    ratios: list[tuple[str, float, str]] = []
    for name in cases:
        ids = case_ids(name, args.ids)
        chars = sum(map(len, ids))
        runs: dict[str, list[dict[str, Any]]] = {engine: [] for engine in engines}
        for _ in range(args.repeat):  # interleaved, so that other work on the machine slows each alike
            for engine in engines:
                runs[engine].append(measure(name, engine, args.ids))
        results = {
            engine: {
                **done[0],
                "seconds": statistics.median(run["seconds"] for run in done),
                "peak": max(run["peak"] for run in done),
            }
            for engine, done in runs.items()
        }
        floor = results.get("none", {}).get("seconds", 0.0)
        for engine, result in results.items():
            per_char = ""
            if engine != "none":
                per_char = f"{max(result['seconds'] - floor, 0.0) / chars * 1e6:,.2f} µs"
            print(
                f"| {name} | {len(ids):,} x {chars // len(ids)} | {LABEL[engine]} "
                f"| {result['compile'] * 1e3:.1f} ms | {result['seconds']:.3f} s "
                f"| {mb(result['peak'])} MB | {result['findings']:,} | {per_char} |"
            )
        if "re2" in results and "handwritten" in results:
            re2, hand = results["re2"], results["handwritten"]
            if re2["findings"] != hand["findings"]:
                raise SystemExit(
                    f"bench_rules: {name}: the engines disagree ({re2['findings']} vs {hand['findings']})"
                )
            memory = hand["peak"] / max(re2["peak"], 1e6)
            shown = f"**{memory:,.0f}**" if re2["peak"] >= 1e6 else f"**≥ {memory:,.0f}**"
            if max(hand["peak"], re2["peak"]) < 1e6:
                shown = "both under 1 MB"
            ratios.append((name, hand["seconds"] / max(re2["seconds"], 1e-9), shown))
        if not all(result["reset"] for result in results.values()):
            print(f"| {name} | | (peak not reset: /proc/self/clear_refs not writable; set-up included) |")
    if ratios:
        print("\n| case | hand-written / RE2, time | hand-written / RE2, peak memory |\n|---|---:|---:|")
        for name, time_ratio, memory_ratio in ratios:
            print(f"| {name} | **{time_ratio:,.1f}** | {memory_ratio} |")
        print("\n(RSS moves in pages: a peak under 1 MB may show as 0, so it is taken as 1 MB: hence ≥.)")
    print("\n" + load_note("at the end"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
