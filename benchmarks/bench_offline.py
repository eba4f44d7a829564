"""Benchmark 1: the offline audit path against the physical floor of the same input.

The pipeline is what ``python -m airflow_provider_coremodels audit --dags D --tasks T --datasets A
--format json`` does before it prints: read the three files (``read_artifacts``: each decoded before
the next is read), ``audit``,
``build_document`` (fingerprint and snapshot cap included) and ``encode`` the snapshot document.
The floor is the least any tool must do with the same input: read the same bytes and
``json.loads`` them with the standard library. Both are timed side by side in this one process,
interleaved, ``--repeat`` times each after one warm-up run; the medians are compared.

Peak memory is measured for each in a fresh subprocess (so that neither inherits the other's
heap), two ways:

* RSS: the process's peak resident size at the end (``VmHWM`` in ``/proc/self/status``), less
  its resident size after the imports. This is what the operating system has to give the
  process (what an OOM killer or a worker's memory limit sees), allocator overhead and
  fragmentation included. It is the figure the targets are judged on. Not
  ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries the parent's high-water mark into a child
  across ``vfork`` + ``exec`` (which ``subprocess`` uses), so a child started by this process,
  after it has timed L, would report this process's peak, not its own. ``VmHWM`` belongs to
  the child's own address space (``ru_maxrss`` is the fallback off Linux).
* Python heap: ``tracemalloc``'s peak of traced allocations, less its size after the imports.
  Allocator-independent and exact, a cross-check (it misses allocator overhead, and slows the
  run, which does not matter in a memory-only subprocess).

The audit command itself (``audit --format json`` as a user runs it, the indented document printed
to /dev/null) is measured a third way, in a fresh subprocess: its whole process's peak RSS against
the floor's whole process's (issue 44's target: at most 0.6), and the same above the imports.

"Holding the decoded artifacts" is the memory held once the three documents are decoded and
their bytes released (the same subprocess as the floor, measured after the floor's peak).

    python benchmarks/bench_offline.py                    # S, M and L, 5 repetitions
    python benchmarks/bench_offline.py --sizes S --repeat 3
    python benchmarks/bench_offline.py --sizes L --profile   # + a profile of one pipeline run

Estates are generated (``generate_estate.py``, seed 0) into a temporary directory, or into
``--estates DIR`` where they are kept and reused.

Shapes (issue 24): ``--shapes`` (default: all) runs the same comparison on each estate shape of
``generate_estate.py`` (the default; ``bare`` artifacts made by hand with ``curl``; ``lossy``;
many ``aliases``; many ``conflicts``; many ``waivers``, whose waiver file the pipeline reads and
applies as ``audit --waivers`` does) and prints, per shape and size, the time and peak-memory
ratios against ``json.loads`` of the same bytes and, for each pair of sizes n and 4n, how the
pipeline's time grows from n to 4n (goal: at most 4.4x, linear with a margin)::

    python benchmarks/bench_offline.py --sizes 2500,10000 --repeat 3 --no-rules
    python benchmarks/bench_offline.py --shapes lossy,waivers --sizes 10000 --profile

With twenty rules (issue 26): the pipeline is timed a second time as ``audit --rules
benchmarks/policy_rules.yaml`` runs it (the rules file read and checked, every rule run over the
estate) and compared against the same floor; ``--no-rules`` leaves it out.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:  # a checkout without the package installed: the core needs only the stdlib
    sys.path.insert(0, str(REPO))

from airflow_provider_coremodels.core import audit, build_document  # noqa: E402
from airflow_provider_coremodels.core.checks.policy import parse_rules  # noqa: E402
from airflow_provider_coremodels.core.checks.waivers import parse_waivers  # noqa: E402
from airflow_provider_coremodels.core.snapshots.document import encode  # noqa: E402
from airflow_provider_coremodels.core.views.render import render_json  # noqa: E402
from airflow_provider_coremodels.io.input_files import read_artifacts  # noqa: E402

sys.path.insert(0, str(HERE))
from generate_estate import SHAPES, dag_count  # noqa: E402

ARTIFACTS = ("dags", "tasks", "datasets")
#: The twenty rules of the rules workload.
RULES_FILE = HERE / "policy_rules.yaml"
TARGET_TIME_RATIO = 1.0
TARGET_MEMORY_RATIO = 1.5
#: The audit command's peak RSS against json.loads of the same artifacts, whole processes (issue 44).
TARGET_COMMAND_RATIO = 0.6
TARGET_SCALING = 1.15
#: From n to 4n DAGs, on every shape: linear, with a margin for cache and allocator effects.
TARGET_FOUR_TIMES = 4.4
#: What the growth from n to 4n is reported on: the least of the runs (CPU and wall), the medians.
GROWTH_KEYS = ("pipeline_cpu_min", "pipeline_min", "pipeline_cpu", "pipeline", "floor_gc_off_cpu_min",
               "floor_cpu_min")  # fmt: skip
#: The waiver file of the waivers shape, beside the artifacts: read and applied by the pipeline.
WAIVERS_FILE = "waivers.yaml"


# -- the two workloads --------------------------------------------------------------------


def _read(paths: dict[str, Path]) -> tuple[bytes, bytes, bytes]:
    return paths["dags"].read_bytes(), paths["tasks"].read_bytes(), paths["datasets"].read_bytes()


def floor(paths: dict[str, Path]) -> list[Any]:
    """Read the three files and decode them with the standard library: the physical floor."""
    return [json.loads(data) for data in _read(paths)]


def floor_gc_off(paths: dict[str, Path]) -> list[Any]:
    """The floor with the cyclic garbage collector off while decoding: what decoding itself costs.

    With the collector on (the interpreter's default), every full collection during a decode
    traverses every container decoded so far; at L that is most of json.loads' time.
    """
    gc.disable()
    try:
        return floor(paths)
    finally:
        gc.enable()


def artifact_paths(directory: Path) -> dict[str, Path]:
    """The three artifacts of an estate directory, and its waiver file where it has one."""
    paths = {name: directory / f"{name}.json" for name in ARTIFACTS}
    if (directory / WAIVERS_FILE).exists():
        paths["waivers"] = directory / WAIVERS_FILE
    return paths


def _parse(paths: dict[str, Path]) -> Any:
    # As `audit` reads them: input_files.read_artifacts, each file decoded before the next is read.
    return read_artifacts(str(paths["dags"]), str(paths["tasks"]), str(paths["datasets"]))


def pipeline(
    paths: dict[str, Path], stages: dict[str, float] | None = None, rules: Path | None = None
) -> bytes:
    """The offline audit path: read, parse, audit, build the document (fingerprint, cap), encode;
    with ``rules``, the rules file is read and checked first and run by the audit (``--rules``);
    with a waiver file among ``paths``, it is read and checked first and applied (``--waivers``)."""
    t0 = time.perf_counter()
    waivers = parse_waivers(paths["waivers"].read_bytes()) if "waivers" in paths else ()
    policy = parse_rules(rules.read_bytes()) if rules is not None else None
    estate = _parse(paths)
    t1 = time.perf_counter()
    result = audit(estate, None, policy=policy, waivers=waivers)
    t2 = time.perf_counter()
    document = build_document(estate, result, lean=True)  # as `audit` and the export build it
    t3 = time.perf_counter()
    data = encode(document)
    t4 = time.perf_counter()
    if stages is not None:
        stages.update({"read+parse": t1 - t0, "audit": t2 - t1, "build_document": t3 - t2, "encode": t4 - t3})
    return data


def time_render_json(paths: dict[str, Path]) -> float:
    """What ``--format json`` prints instead of ``encode``: indented JSON. Informational, untimed pass."""
    estate = _parse(paths)
    document = build_document(estate, audit(estate, None), lean=True)
    gc.collect()
    start = time.perf_counter()
    render_json(document)
    return time.perf_counter() - start


# -- timing -------------------------------------------------------------------------------


def _timed(func: Callable[[], Any], cpu: list[float] | None = None) -> float:
    """Wall seconds of one call (and its CPU seconds appended to ``cpu``), after a full collection."""
    gc.collect()
    start_cpu = time.process_time()
    start = time.perf_counter()
    result = func()
    elapsed = time.perf_counter() - start
    if cpu is not None:
        cpu.append(time.process_time() - start_cpu)
    del result  # freeing the result is not timed: the floor's decoded documents, the pipeline's bytes
    return elapsed


class SizeTimer:
    """Floor, strict floor and pipeline (and with twenty rules) of one estate, interleaved: a warm-up
    when made, then one timed run of each per ``round``. The rounds of several estates can be
    interleaved too (``time_sizes``), so that n and 4n meet the same load on a shared machine."""

    def __init__(self, paths: dict[str, Path], rules: bool = True) -> None:
        self.paths, self.rules = paths, rules
        self.kinds = ["floor", "floor_gc_off", "pipeline", *(["pipeline_rules"] if rules else [])]
        self.wall: dict[str, list[float]] = {kind: [] for kind in self.kinds}
        self.cpu: dict[str, list[float]] = {kind: [] for kind in self.kinds}
        self.stage_runs: list[dict[str, float]] = []
        self.rule_audits: list[float] = []
        _timed(lambda: floor(paths))  # warm-up: page cache, allocator arenas
        _timed(lambda: pipeline(paths))
        if rules:
            _timed(lambda: pipeline(paths, rules=RULES_FILE))

    def round(self) -> None:
        paths, wall, cpu = self.paths, self.wall, self.cpu
        wall["floor"].append(_timed(lambda: floor(paths), cpu["floor"]))
        wall["floor_gc_off"].append(_timed(lambda: floor_gc_off(paths), cpu["floor_gc_off"]))
        stages: dict[str, float] = {}
        wall["pipeline"].append(_timed(lambda: pipeline(paths, stages), cpu["pipeline"]))
        self.stage_runs.append(stages)
        if self.rules:
            with_rules: dict[str, float] = {}
            wall["pipeline_rules"].append(
                _timed(lambda: pipeline(paths, with_rules, RULES_FILE), cpu["pipeline_rules"])
            )
            self.rule_audits.append(with_rules["audit"])

    def result(self) -> dict[str, Any]:
        runs = self.stage_runs
        medians = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
        if self.rules:
            medians["audit with 20 rules"] = statistics.median(self.rule_audits)
        medians["render_json"] = time_render_json(self.paths)
        out: dict[str, Any] = {name: statistics.median(times) for name, times in self.wall.items()}
        out.update({f"{name}_cpu": statistics.median(times) for name, times in self.cpu.items()})
        # the least of the runs: what the work costs when other load interferes least
        out.update({f"{name}_min": min(times) for name, times in self.wall.items()})
        out.update({f"{name}_cpu_min": min(times) for name, times in self.cpu.items()})
        out.update({f"{name}_all": times for name, times in self.wall.items()})
        out["stages"] = medians
        return out


def time_size(paths: dict[str, Path], repeat: int, rules: bool = True) -> dict[str, Any]:
    """One estate's timings, ``repeat`` rounds after a warm-up."""
    return time_sizes([paths], repeat, rules)[0]


def time_sizes(estates: list[dict[str, Path]], repeat: int, rules: bool = True) -> list[dict[str, Any]]:
    """Several estates' timings, their rounds interleaved (n, 4n, n, 4n, ...)."""
    timers = [SizeTimer(paths, rules) for paths in estates]
    for _ in range(repeat):
        for timer in timers:
            timer.round()
    return [timer.result() for timer in timers]


# -- memory (each in a fresh subprocess) --------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss() -> int:
    """This address space's peak resident size in bytes (VmHWM), not inherited from a parent."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def audit_command(paths: dict[str, Path]) -> int:
    """``python -m airflow_provider_coremodels audit --dags D --tasks T --datasets A --format json``,
    as a user runs it, in this process, its output (the indented document) written to /dev/null."""
    from airflow_provider_coremodels.cli.main import main as cli

    argv = ["audit", "--dags", str(paths["dags"]), "--tasks", str(paths["tasks"]),
            "--datasets", str(paths["datasets"]), "--format", "json"]  # fmt: skip
    if "waivers" in paths:
        argv += ["--waivers", str(paths["waivers"])]
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        return cli(argv)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _child(kind: str, method: str, directory: Path) -> dict[str, int]:
    paths = artifact_paths(directory)
    if kind == "command":  # what the command imports, imported before the base is taken
        import airflow_provider_coremodels.cli.commands
        import airflow_provider_coremodels.cli.main  # noqa: F401
    gc.collect()
    out: dict[str, int] = {}
    if method == "tracemalloc":
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
    else:
        base = _rss()
    if kind == "floor":
        docs = floor(paths)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] if method == "tracemalloc" else _rss()
        out["held"] = held - base
        del docs
    elif kind == "command":
        out["code"] = audit_command(paths)
    else:
        pipeline(paths)
    if method == "tracemalloc":
        out["peak"] = tracemalloc.get_traced_memory()[1] - base
    else:
        out["peak"] = peak_rss() - base
        out["whole"] = peak_rss()  # the process's own peak, interpreter and imports included
    return out


def measure_memory(directory: Path, kind: str, method: str) -> dict[str, int]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind, method, str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# -- estates ------------------------------------------------------------------------------


def estate_dir(root: Path, size: str, seed: int, shape: str = "default") -> dict[str, Path]:
    """Generate (in a subprocess, keeping this process's heap clean) unless already there."""
    directory = root / (f"{size}-seed{seed}" if shape == "default" else f"{size}-seed{seed}-{shape}")
    done = directory / ".generated"
    if not done.exists():
        subprocess.run(
            [sys.executable, str(HERE / "generate_estate.py"), "--size", size, "--seed", str(seed),
             "--shape", shape, "--out", str(directory)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        done.touch()
    return artifact_paths(directory)


# -- report -------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        total_kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {total_kb / 1024**2:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{memory}; Python {platform.python_version()} ({sys.executable})"


def load_note(when: str) -> str:
    """The 1-minute load average: other work on the machine slows every figure, the floor included."""
    try:
        load = float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return f"load average {when}: unknown"
    cores = os.cpu_count() or 1
    warning = ""
    if load > cores / 2:  # a benchmark that has been running counts about 1 itself
        warning = (
            f" -- WARNING: over half of the {cores} cores busy: wall times may be inflated by other work"
        )
    return f"load average {when}: {load:.2f}{warning}"


def mb(n: float) -> str:
    return f"{n / 1e6:,.0f}" if n >= 10e6 else f"{n / 1e6:,.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="S,M,L", help="comma-separated: S, M, L or DAG counts (default S,M,L)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions per size (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--estates", help="keep and reuse generated estates in this directory")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory subprocesses")
    parser.add_argument("--no-rules", action="store_true", help="skip the pipeline with twenty rules")
    parser.add_argument(
        "--shapes",
        default="all",
        help=f"comma-separated estate shapes, or all (default): {', '.join(SHAPES)}",
    )
    parser.add_argument(
        "--profile", action="store_true", help="profile one pipeline run at the largest size, per shape"
    )
    parser.add_argument("--json", help="also write the raw results to this file")
    parser.add_argument("--child", nargs=3, metavar=("KIND", "METHOD", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        kind, method, directory = args.child
        print(json.dumps(_child(kind, method, Path(directory))))
        return 0

    sizes = [s.strip().upper() for s in args.sizes.split(",") if s.strip()]
    shapes = (
        list(SHAPES) if args.shapes == "all" else [s.strip() for s in args.shapes.split(",") if s.strip()]
    )
    if unknown := [shape for shape in shapes if shape not in SHAPES]:
        parser.error(f"unknown shape(s) {', '.join(unknown)}; expected {', '.join(SHAPES)} or all")
    print(f"machine: {machine()}")
    print(f"repetitions: {args.repeat} (medians), seed {args.seed}; {load_note('at the start')}\n")
    with tempfile.TemporaryDirectory(prefix="coremodels-bench-") as tmp:
        root = Path(args.estates) if args.estates else Path(tmp)
        results: dict[str, dict[str, dict[str, Any]]] = {}
        for shape in shapes:
            # the twenty rules are timed on the default shape: the rules do not read the shape
            rules = not args.no_rules and shape == "default"
            results[shape] = measure_shape(
                root, sizes, args.seed, shape, args.repeat, rules, not args.no_memory
            )
        if "default" in results:
            print("\n## The default shape")
            report(results["default"], sizes)
        report_shapes(results, sizes)
        print(f"\n{load_note('at the end')}")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2))
        if args.profile:
            for shape in shapes:
                print(f"\n## Profile of the {shape} shape at {sizes[-1]}")
                profile(estate_dir(root, sizes[-1], args.seed, shape))
    return 0


def measure_shape(
    root: Path, sizes: list[str], seed: int, shape: str, repeat: int, rules: bool, memory: bool
) -> dict[str, dict[str, Any]]:
    """One shape at every size: the timings, the sizes' rounds interleaved, and the memory
    subprocesses unless ``memory`` is off."""
    estates = [estate_dir(root, size, seed, shape) for size in sizes]
    rows: dict[str, dict[str, Any]] = {}
    for size, paths in zip(sizes, estates, strict=True):
        rows[size] = {"dags": dag_count(size), "bytes": sum(p.stat().st_size for p in paths.values())}
        print(
            f"{shape} {size}: {rows[size]['dags']:,} DAGs, {mb(rows[size]['bytes'])} MB of input", flush=True
        )
    for size, timings in zip(sizes, time_sizes(estates, repeat, rules), strict=True):
        rows[size].update(timings)
    for size, paths in zip(sizes, estates, strict=True):
        row = rows[size]
        if rules:
            row["policy_findings"] = policy_finding_count(paths)
        row["counts"] = estate_counts(paths)
        if memory:
            for method in ("rss", "tracemalloc"):
                row[f"floor_{method}"] = measure_memory(paths["dags"].parent, "floor", method)
                row[f"pipeline_{method}"] = measure_memory(paths["dags"].parent, "pipeline", method)
            row["command_rss"] = measure_memory(paths["dags"].parent, "command", "rss")
    return rows


def estate_counts(paths: dict[str, Path]) -> dict[str, int]:
    """What the shape gives the pipeline to do (untimed): records, edges, findings, waivers."""
    estate = _parse(paths)
    waivers = parse_waivers(paths["waivers"].read_bytes()) if "waivers" in paths else ()
    result = audit(estate, None, waivers=waivers)
    return {
        "lossiness": len(estate.lossiness),
        "edges": len(estate.lineage),
        "findings": len(result.findings),
        "waivers": len(waivers),
        "waived": sum(1 for finding in result.findings if finding.waived),
    }


def report_shapes(results: dict[str, dict[str, dict[str, Any]]], sizes: list[str]) -> None:
    """A table per shape: time and memory against json.loads, and the growth from n to 4n."""
    pairs = [(a, b) for a in sizes for b in sizes if dag_count(b) == 4 * dag_count(a)]
    print("\n## Per shape, against json.loads of the same bytes")
    print("time: median wall seconds (CPU in brackets); memory: peak RSS above the imports, each in a "
          "fresh subprocess; the floor is reading the artifacts and json.loads of each")  # fmt: skip
    verdicts = []
    for shape, rows in results.items():
        print(f"\n### {shape}")
        print("| DAGs | MB in | records | edges | findings (waived / waivers) | floor s | pipeline s "
              "| time ratio | floor peak MB | pipeline peak MB | memory ratio | / holding |")  # fmt: skip
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for size in sizes:
            r = rows[size]
            c = r["counts"]
            findings = f"{c['findings']:,}" + (
                f" ({c['waived']:,} / {c['waivers']:,})" if c["waivers"] else ""
            )
            memory = "| | | |"
            if "floor_rss" in r:
                fpeak, held, ppeak = r["floor_rss"]["peak"], r["floor_rss"]["held"], r["pipeline_rss"]["peak"]
                memory = f"| {mb(fpeak)} | {mb(ppeak)} | {ppeak / fpeak:.2f} | {ppeak / held:.2f} |"
            times = f"{r['floor']:.3f} ({r['floor_cpu']:.3f}) | {r['pipeline']:.3f} ({r['pipeline_cpu']:.3f})"
            print(f"| {r['dags']:,} | {mb(r['bytes'])} | {c['lossiness']:,} | {c['edges']:,} | {findings} "
                  f"| {times} | {r['pipeline'] / r['floor']:.2f} {memory}")  # fmt: skip
        for small, big in pairs:
            a, b = rows[small], rows[big]
            growth = {key: b[key] / a[key] for key in GROWTH_KEYS}
            g = {key: f"{value:.2f}x" for key, value in growth.items()}
            met = "met" if growth["pipeline_cpu_min"] <= TARGET_FOUR_TIMES else "MISSED"
            print(f"\n{a['dags']:,} -> {b['dags']:,} DAGs, pipeline: {g['pipeline_cpu_min']} in CPU time "
                  f"({g['pipeline_min']} wall; medians {g['pipeline_cpu']} CPU, {g['pipeline']} wall); "
                  f"json.loads with the collector off, linear work, {g['floor_gc_off_cpu_min']}; "
                  f"goal <= {TARGET_FOUR_TIMES}x: {met}")  # fmt: skip
            verdicts.append((shape, growth, met))
    if verdicts:
        print(f"\nn -> 4n on every shape (least of the runs; goal <= {TARGET_FOUR_TIMES}x in CPU time)")
        print("| shape | pipeline, CPU | pipeline, wall | pipeline, median CPU | json.loads GC off, CPU "
              "| json.loads, CPU | pipeline / linear work | |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for shape, g, met in verdicts:
            cells = [f"{g[key]:.2f}x" for key in ("pipeline_cpu_min", "pipeline_min", "pipeline_cpu",
                                                   "floor_gc_off_cpu_min", "floor_cpu_min")]  # fmt: skip
            # What the machine did to exactly linear work in the same run: at most 1 when the
            # pipeline grows no faster than it (its caches, not the code, above that).
            relative = g["pipeline_cpu_min"] / g["floor_gc_off_cpu_min"]
            print(f"| {shape} | {' | '.join(cells)} | {relative:.2f} | {met} |")


def policy_finding_count(paths: dict[str, Path]) -> int:
    """How many findings the twenty rules give (untimed): the rules must do real work."""
    estate = _parse(paths)
    result = audit(estate, None, policy=parse_rules(RULES_FILE.read_bytes()))
    return sum(1 for finding in result.findings if finding.section == "Policy")


def report(results: dict[str, dict[str, Any]], sizes: list[str]) -> None:
    print("\nTime (median seconds)")
    print("| size | DAGs | MB in | floor: read + json.loads | pipeline "
          f"| time ratio (target at L <= {TARGET_TIME_RATIO}) "
          "| strict floor: json.loads, GC off | pipeline / strict floor |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        r = results[size]
        print(f"| {size} | {r['dags']:,} | {mb(r['bytes'])} | {r['floor']:.3f} | {r['pipeline']:.3f} "
              f"| {r['pipeline'] / r['floor']:.2f} | {r['floor_gc_off']:.3f} "
              f"| {r['pipeline'] / r['floor_gc_off']:.2f} |")  # fmt: skip

    if "pipeline_rules" in results[sizes[0]]:
        print(f"\nWith twenty rules (audit --rules {RULES_FILE.name}; median seconds)")
        print("| size | policy findings | pipeline | pipeline + 20 rules | time ratio with rules "
              f"(target at L <= {TARGET_TIME_RATIO}) | audit | audit with 20 rules |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|")
        for size in sizes:
            r = results[size]
            print(f"| {size} | {r['policy_findings']:,} | {r['pipeline']:.3f} | {r['pipeline_rules']:.3f} "
                  f"| {r['pipeline_rules'] / r['floor']:.2f} | {r['stages']['audit']:.3f} "
                  f"| {r['stages']['audit with 20 rules']:.3f} |")  # fmt: skip

    print("\nCPU time of the same runs (median seconds of this process's CPU: less sensitive to other load)")
    print("| size | floor | pipeline | time ratio | strict floor (GC off) | pipeline / strict floor |")
    print("|---|---:|---:|---:|---:|---:|")
    for size in sizes:
        r = results[size]
        floor_cpu, strict_cpu, pipeline_cpu = r["floor_cpu"], r["floor_gc_off_cpu"], r["pipeline_cpu"]
        print(f"| {size} | {floor_cpu:.3f} | {pipeline_cpu:.3f} | {pipeline_cpu / floor_cpu:.2f} "
              f"| {strict_cpu:.3f} | {pipeline_cpu / strict_cpu:.2f} |")  # fmt: skip

    print(
        "\nPipeline stages (median seconds; render_json, what --format json prints, is not in the pipeline)"
    )
    stage_names = list(results[sizes[0]]["stages"])
    print("| size | " + " | ".join(stage_names) + " |")
    print("|---|" + "---:|" * len(stage_names))
    for size in sizes:
        stages = results[size]["stages"]
        print(f"| {size} | " + " | ".join(f"{stages[k]:.3f}" for k in stage_names) + " |")

    if "floor_rss" in results[sizes[0]]:
        print("\nPeak memory (MB above the process after its imports; each in a fresh subprocess)")
        print(f"| size | method | holding the decoded artifacts | floor peak | pipeline peak "
              f"| pipeline / holding (target <= {TARGET_MEMORY_RATIO}) | pipeline / floor |")  # fmt: skip
        print("|---|---|---:|---:|---:|---:|---:|")
        for size in sizes:
            r = results[size]
            for method, label in (("rss", "RSS (VmHWM)"), ("tracemalloc", "Python heap (tracemalloc)")):
                held, fpeak = r[f"floor_{method}"]["held"], r[f"floor_{method}"]["peak"]
                ppeak = r[f"pipeline_{method}"]["peak"]
                print(f"| {size} | {label} | {mb(held)} | {mb(fpeak)} | {mb(ppeak)} | {ppeak / held:.2f} "
                      f"| {ppeak / fpeak:.2f} |")  # fmt: skip

    if "command_rss" in results[sizes[0]]:
        print("\nThe audit command as run (`audit --format json`, its output to /dev/null) against "
              "json.loads of the same artifacts: peak RSS (VmHWM), each in a fresh subprocess")  # fmt: skip
        print("| size | MB in | json.loads, whole process | audit, whole process "
              f"| **ratio** (target <= {TARGET_COMMAND_RATIO}) | json.loads, above imports "
              "| audit, above imports | ratio above imports |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for size in sizes:
            r = results[size]
            floor_rss, command = r["floor_rss"], r["command_rss"]
            print(f"| {size} | {mb(r['bytes'])} | {mb(floor_rss['whole'])} | {mb(command['whole'])} "
                  f"| **{command['whole'] / floor_rss['whole']:.2f}** | {mb(floor_rss['peak'])} "
                  f"| {mb(command['peak'])} | {command['peak'] / floor_rss['peak']:.2f} |")  # fmt: skip

    if "M" in results and "L" in results:
        m, big = results["M"], results["L"]
        print(f"\nScaling M -> L (time_L / (10 x time_M); target <= {TARGET_SCALING})")
        print(f"| pipeline | {big['pipeline'] / (10 * m['pipeline']):.2f} |")
        print(f"| floor | {big['floor'] / (10 * m['floor']):.2f} |")
        print(f"| strict floor (GC off) | {big['floor_gc_off'] / (10 * m['floor_gc_off']):.2f} |")
        print(f"| pipeline, CPU time | {big['pipeline_cpu'] / (10 * m['pipeline_cpu']):.2f} |")

    if "L" in results:
        r = results["L"]
        checks = [("time ratio at L", r["pipeline"] / r["floor"], TARGET_TIME_RATIO)]
        if "pipeline_rules" in r:
            checks.append(
                ("time ratio at L with 20 rules", r["pipeline_rules"] / r["floor"], TARGET_TIME_RATIO)
            )
        if "pipeline_rss" in r:
            checks.append(("peak RSS / holding at L", r["pipeline_rss"]["peak"] / r["floor_rss"]["held"],
                           TARGET_MEMORY_RATIO))  # fmt: skip
        if "command_rss" in r:
            command = r["command_rss"]["whole"] / r["floor_rss"]["whole"]
            checks.append(("audit command peak RSS / json.loads at L", command, TARGET_COMMAND_RATIO))
        if "M" in results:
            checks.append(
                ("M -> L vs linear", r["pipeline"] / (10 * results["M"]["pipeline"]), TARGET_SCALING)
            )
        print("\nTargets")
        for name, value, target in checks:
            print(f"  {name}: {value:.2f} (target <= {target}) {'met' if value <= target else 'MISSED'}")


def gc_time(paths: dict[str, Path]) -> tuple[float, dict[int, tuple[int, float]]]:
    """One pipeline run, with the time spent in cyclic garbage collections by generation."""
    by_generation: dict[int, list[float]] = {0: [], 1: [], 2: []}
    started: list[float] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        else:
            by_generation[info["generation"]].append(time.perf_counter() - started.pop())

    gc.collect()
    gc.callbacks.append(callback)
    try:
        start = time.perf_counter()
        pipeline(paths)
        total = time.perf_counter() - start
    finally:
        gc.callbacks.remove(callback)
    return total, {g: (len(times), sum(times)) for g, times in by_generation.items()}


def profile(paths: dict[str, Path]) -> None:
    """One pipeline run under pyinstrument when installed, else cProfile; and the GC's share."""
    total, collections = gc_time(paths)
    print(f"\nGarbage collection during one pipeline run of {total:.2f} s:")
    for generation, (count, seconds) in collections.items():
        print(
            f"  generation {generation}: {count} collections, {seconds:.2f} s ({100 * seconds / total:.0f}%)"
        )
    gc.collect()
    try:
        from pyinstrument import Profiler
    except ImportError:
        import cProfile
        import pstats

        print("\nProfile (cProfile; pip install pyinstrument for a call tree)")
        profiler = cProfile.Profile()
        profiler.runcall(pipeline, paths)
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(25)
        return
    print("\nProfile (pyinstrument, one pipeline run): call tree")
    sampler = Profiler(interval=0.001)
    sampler.start()
    pipeline(paths)
    sampler.stop()
    print(sampler.output_text(unicode=True, color=False, time="percent_of_total"))


if __name__ == "__main__":
    sys.exit(main())
