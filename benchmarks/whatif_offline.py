"""What would make the offline audit path faster? Measured, without changing the core.

An experiment beside benchmark 1 (``bench_offline.py``): the same pipeline with one design change
at a time, applied by patching the core's module attributes inside this process only, timed the
same way (interleaved, medians, wall and CPU) against the same floors. Every variant must give
the same snapshot fingerprint as the pipeline as it is.

* ``gc off``: the cyclic garbage collector disabled for the run (what ``gc.disable()``, or
  ``gc.freeze()`` of the long-lived estate, around the parse and the document build would do);
* ``msgspec encode``: ``msgspec.json.encode`` (``order="sorted"`` for the fingerprint's
  canonical form) in place of ``json.dumps``: byte-identical output, and msgspec is already a
  dependency of the core;
* ``one encode``: the document encoded once (the cap measures the bytes that are then
  returned), not twice.

    python benchmarks/whatif_offline.py --sizes M,L --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_offline as bench  # noqa: E402  (puts the package on the path when not installed)
import msgspec  # noqa: E402

from airflow_provider_coremodels.core import audit  # noqa: E402
from airflow_provider_coremodels.core.snapshots import document as document_module  # noqa: E402

_ENCODER = msgspec.json.Encoder()
_SORTED_ENCODER = msgspec.json.Encoder(order="sorted")


@contextmanager
def patched(gc_off: bool, msgspec_encode: bool) -> Iterator[None]:
    saved = (document_module.canonical_json, document_module.encode)
    if msgspec_encode:
        document_module.canonical_json = _SORTED_ENCODER.encode
        document_module.encode = _ENCODER.encode
    if gc_off:
        gc.disable()
    try:
        yield
    finally:
        gc.enable()
        document_module.canonical_json, document_module.encode = saved


def variant(
    gc_off: bool = False, msgspec_encode: bool = False, one_encode: bool = False
) -> Callable[[dict[str, Path]], tuple[bytes, str]]:
    def run(paths: dict[str, Path]) -> tuple[bytes, str]:
        with patched(gc_off, msgspec_encode):
            estate = bench._parse(paths)
            document = document_module.build_document(estate, audit(estate, None))
            # one encode: build_document has encoded the document once already, for the cap; a
            # design that keeps those bytes (and splices the cap's record in) saves the second
            data = b"" if one_encode else document_module.encode(document)
            return data, str(document["fingerprint"])

    return run


def floors() -> dict[str, Callable[[dict[str, Path]], Any]]:
    return {
        "floor: json.loads": bench.floor,
        "floor: json.loads, GC off": bench.floor_gc_off,
        "floor: msgspec.json.decode (untyped, every key)": lambda paths: [
            msgspec.json.decode(data) for data in bench._read(paths)
        ],
    }


def variants() -> dict[str, Callable[[dict[str, Path]], tuple[bytes, str]]]:
    return {
        "pipeline as is": variant(),
        "gc off": variant(gc_off=True),
        "msgspec encode": variant(msgspec_encode=True),
        "msgspec encode + one encode": variant(msgspec_encode=True, one_encode=True),
        "gc off + msgspec encode + one encode": variant(gc_off=True, msgspec_encode=True, one_encode=True),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="M,L")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--estates", help="keep and reuse generated estates in this directory")
    args = parser.parse_args(argv)
    print(f"machine: {bench.machine()}\n")
    sizes = [s.strip().upper() for s in args.sizes.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="coremodels-whatif-") as tmp:
        root = Path(args.estates) if args.estates else Path(tmp)
        for size in sizes:
            paths = bench.estate_dir(root, size, args.seed)
            expected = variant()(paths)
            for name, func in variants().items():
                data, fingerprint = func(paths)
                if fingerprint != expected[1] or (data and data != expected[0]):
                    raise SystemExit(f"{name}: the snapshot document changed")
            funcs: dict[str, Callable[[dict[str, Path]], Any]] = {**floors(), **variants()}
            wall: dict[str, list[float]] = {name: [] for name in funcs}
            cpu: dict[str, list[float]] = {name: [] for name in funcs}
            for func in funcs.values():
                bench._timed(lambda f=func, p=paths: f(p))  # warm-up
            for _ in range(args.repeat):
                for name, func in funcs.items():
                    wall[name].append(bench._timed(lambda f=func, p=paths: f(p), cpu[name]))
            medians = {name: statistics.median(values) for name, values in wall.items()}
            cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
            base, cpu_base = medians["floor: json.loads"], cpu_medians["floor: json.loads"]
            print(
                f"{size}: medians of {args.repeat} runs; every variant gives the same document "
                f"(fingerprint {expected[1]}); {bench.load_note('now')}"
            )
            print("| variant | wall s | / floor json.loads | CPU s | / floor json.loads (CPU) |")
            print("|---|---:|---:|---:|---:|")
            for name, seconds in medians.items():
                cpu_s = cpu_medians[name]
                ratios = f"{seconds / base:.2f} | {cpu_s:.3f} | {cpu_s / cpu_base:.2f}"
                print(f"| {name} | {seconds:.3f} | {ratios} |")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
