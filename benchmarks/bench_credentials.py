"""Benchmark: the credential scrub (``redaction.scrub_credentials``, issue 34), what it finds and costs.

Four measurements, each printed as a table:

1. **Shapes found.** Each credential shape of ``tests/support/secret_shapes.py`` (the error lines
   the tests use), and whether the scrub removes every secret part of it; beside it, when
   ``detect-secrets`` is installed, whether its plugins (every plugin of 1.5.0, used as a
   library: ``analyze_line`` with verification off) *locate* every secret part, which is what a
   replacement needs (a plugin that yields ``ghp`` or ``BEGIN RSA PRIVATE KEY`` detects the
   secret but does not locate it). The ordinary error lines must come out unchanged.
2. **Cost per text**, in microseconds: ordinary descriptions and error lines (the fast path),
   lines that name a shape's word without a credential (``tokenizer``, ``API keys``), and lines
   with a credential; detect-secrets' cost on the same lines.
3. **Hostile lines**: near-misses of every pattern, 300 KB each; the slowest must stay far from
   catastrophic (a backtracking pattern takes hours on these).
4. **Added cost on an estate** of ``--dags`` DAGs (default 10,000, ``generate_estate.py``, seed
   0): the offline pipeline (parse, audit, build the document) with the scrub and with the scrub
   replaced by the identity, interleaved in this one process, ``--repeat`` times each after a
   warm-up; the least CPU times' ratio (the machine may be shared), and the time spent in the
   scrub itself, summed over its calls in one more run (a difference of two noisy times is less
   exact than that on a shared machine). Three
   estates: as generated (ordinary descriptions), every
   description naming a shape's word (``Rotates the API keys ...``: every one takes the slow
   path), and every description holding a credential.

    python benchmarks/bench_credentials.py                 # 10,000 DAGs, 3 repetitions
    python benchmarks/bench_credentials.py --dags 1000 --repeat 1
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
try:
    import airflow_provider_coremodels  # noqa: F401
except ImportError:  # a checkout without the package installed: the core needs only the stdlib
    sys.path.insert(0, str(REPO))

import airflow_provider_coremodels.core.estate.text as text  # noqa: E402
import airflow_provider_coremodels.core.reading.broken as broken  # noqa: E402
import airflow_provider_coremodels.core.reading.parse as parse  # noqa: E402
from airflow_provider_coremodels import redaction  # noqa: E402
from airflow_provider_coremodels.core import audit, build_document, parse_artifacts  # noqa: E402
from airflow_provider_coremodels.redaction import scrub_credentials  # noqa: E402

sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))
from generate_estate import encode, generate  # noqa: E402
from support.secret_shapes import INNOCENT, SHAPES  # noqa: E402

#: Ordinary descriptions (the generated estate's) and ones naming a shape's word, with no credential.
ORDINARY = (
    "Loads orders from the operational database into the lake",
    "Builds the revenue mart for the finance team",
    "Daily inventory snapshot with quality checks",
)
WORDED = (
    "Rotates the API keys of the vendor feed and signs the exports",
    "Refreshes OAuth tokens for the partner sync (see the passwords runbook)",
    "Authorization audit: which keys and secrets the lake's roles hold",
)
CREDENTIALED = tuple(shape.line for shape in SHAPES[:6])
#: The slowest a hostile 300 KB line may take: far above linear, far below catastrophic.
HOSTILE_BOUND_S = 1.0
N = 300_000
HOSTILE = {
    "no shape at all": "a" * N,
    "password= repeated": "password=" * (N // 9),
    'password=" unclosed, repeated': 'password="' * (N // 10),
    'password=" with escaped quotes': 'password="' + '\\"password=' * (N // 12),
    "token: ' with escaped quotes": "token: '" + "\\'token: " * (N // 10),
    ":// repeated": "://" * (N // 3),
    "://a: repeated, no @": "://a:" * (N // 5),
    "://a:a:a... no @": "://" + "a:" * (N // 2),
    "eyJ repeated": "eyJ" * (N // 3),
    "eyJ... parts repeated": ("eyJ" + "a" * 20 + ".") * (N // 24),
    "AKIA ids repeated": ("AKIA" + "A" * 16 + " ") * (N // 21),
    "AKIA id then a long run": "AKIA" + "A" * 16 + " " + "a" * N,
    "BEGIN PRIVATE KEY repeated": "-----BEGIN PRIVATE KEY-----" * (N // 27),
    "BEGIN RSA repeated": "-----BEGIN RSA " * (N // 15),
    "bearer repeated": "bearer " * (N // 7),
    "Bearer then a long run": "Bearer " + "a" * N,
    "authorization: repeated": "authorization: " * (N // 15),
    "xoxb- repeated": "xoxb-" * (N // 5),
    "ghp_ then a long run": "ghp_" + "a" * N,
    "slack hook repeated": "hooks.slack.com/services/" * (N // 25),
    "sig= repeated": "sig=" * (N // 4),
    "pwd=a;PWD:'x' repeated": "pwd=a;PWD:'x' " * (N // 14),
    "password, 300 KB of spaces, =": "password" + " " * N + "=",
}


def per_call_us(fn: Callable[[str], Any], lines: tuple[str, ...], least_seconds: float = 0.2) -> float:
    """Microseconds per call of ``fn`` over ``lines``, the least of five timed rounds."""
    rounds = []
    count = max(1, int(20_000 / max(1, sum(len(line) for line in lines) / len(lines)) / len(lines)))
    for _ in range(5):
        started = time.process_time()
        calls = 0
        while time.process_time() - started < least_seconds / 5:
            for _ in range(count):
                for line in lines:
                    fn(line)
            calls += count * len(lines)
        rounds.append((time.process_time() - started) / calls)
    return min(rounds) * 1e6


# -- detect-secrets, where installed -----------------------------------------------------------


def detect_secrets_finder() -> tuple[Callable[[str], list[str]], str] | None:
    """A function giving the secret values detect-secrets' plugins report for a line, and what was
    loaded; None when detect-secrets is not installed."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import get_plugins, transient_settings
    except ImportError:
        return None
    import importlib.metadata

    limits = {"Base64HighEntropyString": {"limit": 4.5}, "HexHighEntropyString": {"limit": 3.0}}
    plugins = [
        {"name": cls.__name__, **limits.get(cls.__name__, {})}
        for cls in get_mapping_from_secret_type_to_class().values()
    ]
    # no filters: in particular not the verification one, which would call the issuers' APIs
    settings = transient_settings({"plugins_used": plugins, "filters_used": []})
    settings.__enter__()  # kept for the run
    loaded = list(get_plugins())

    def find(line: str) -> list[str]:
        found = []
        for plugin in loaded:
            found += [
                s.secret_value for s in plugin.analyze_line(filename="import_error", line=line, line_number=1)
            ]
        return [value for value in found if value]

    version = importlib.metadata.version("detect-secrets")
    return (
        find,
        f"detect-secrets {version}, {len(loaded)} plugins (requests loaded: {'requests' in sys.modules})",
    )


def located(found: list[str], secrets: tuple[str, ...]) -> bool:
    """Whether every secret part lies inside some value found (so replacing the values removes it)."""
    return all(any(secret in value for value in found) for secret in secrets)


# -- the estate -----------------------------------------------------------------------------


@contextmanager
def scrub_replaced(replacement: Callable[[str], str]) -> Iterator[None]:
    """The scrub replaced by ``replacement`` wherever the core calls it."""
    modules = (broken, parse, text)
    saved = [module.scrub_credentials for module in modules]  # type: ignore[attr-defined]
    for module in modules:
        module.scrub_credentials = replacement  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, held in zip(modules, saved, strict=True):
            module.scrub_credentials = held  # type: ignore[attr-defined]


def scrub_off() -> Any:
    return scrub_replaced(lambda value: value)


def own_time(data: tuple[bytes, bytes, bytes]) -> tuple[int, float]:
    """How many texts one pipeline run scrubs, and the seconds spent in the scrub itself."""
    spent = [0, 0]

    def timed_scrub(value: str) -> str:
        started = time.perf_counter_ns()
        try:
            return scrub_credentials(value)
        finally:
            spent[0] += 1
            spent[1] += time.perf_counter_ns() - started

    with scrub_replaced(timed_scrub):
        pipeline(data)
    return spent[0], spent[1] / 1e9


def estate_bytes(dags: int, descriptions: tuple[str, ...] | None) -> tuple[bytes, bytes, bytes]:
    docs = generate(dags, seed=0)
    if descriptions is not None:
        for index, dag in enumerate(docs["dags"]["dags"]):
            dag["description"] = descriptions[index % len(descriptions)]
    return encode(docs["dags"]), encode(docs["tasks"]), encode(docs["datasets"])


def pipeline(data: tuple[bytes, bytes, bytes]) -> str:
    estate = parse_artifacts(*data)
    return str(build_document(estate, audit(estate))["fingerprint"])


def timed(data: tuple[bytes, bytes, bytes], repeat: int) -> tuple[float, float]:
    """The least CPU seconds of the pipeline with the scrub and without it, interleaved."""
    pipeline(data)
    with scrub_off():
        pipeline(data)
    on, off = [], []
    for _ in range(repeat):
        gc.collect()
        started = time.process_time()
        pipeline(data)
        on.append(time.process_time() - started)
        gc.collect()
        with scrub_off():
            started = time.process_time()
            pipeline(data)
            off.append(time.process_time() - started)
    return min(on), min(off)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dags", type=int, default=10_000, help="DAGs in the estate (default 10,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each pipeline (default 3)")
    args = parser.parse_args(argv)
    failures = []
    detector = detect_secrets_finder()
    print(
        f"scrub_credentials ({redaction.__name__}); compared with: {detector[1] if detector else 'nothing'}"
    )

    print("\n1. shapes: every secret part removed (ours) / located (detect-secrets)")
    ours_found = 0
    theirs_found = 0
    for shape in SHAPES:
        ours = not any(secret in scrub_credentials(shape.line) for secret in shape.secrets)
        ours_found += ours
        theirs = ""
        if detector:
            found = detector[0](shape.line)
            theirs_found += located(found, shape.secrets)
            theirs = f"{located(found, shape.secrets)!s:6} {', '.join(v[:24] for v in found) or '-'}"
        print(f"  {shape.name:22} {ours!s:6} {theirs}")
        if not ours:
            failures.append(f"shape {shape.name} not scrubbed")
    kept = sum(scrub_credentials(line) == line for line in INNOCENT)
    print(
        f"  found: ours {ours_found}/{len(SHAPES)}"
        + (f", detect-secrets {theirs_found}/{len(SHAPES)}" if detector else "")
    )
    print(f"  ordinary error lines kept as they are: {kept}/{len(INNOCENT)}")
    if detector:
        flagged = sum(bool(detector[0](line)) for line in INNOCENT)
        print(f"  ordinary error lines detect-secrets flags: {flagged}/{len(INNOCENT)}")
    if kept != len(INNOCENT):
        failures.append("an ordinary error line was changed")

    print("\n2. cost per text (microseconds)")
    groups = {
        "ordinary descriptions": ORDINARY,
        "ordinary error lines": INNOCENT,
        "a shape's word, no credential": WORDED,
        "with a credential": CREDENTIALED,
    }
    for name, lines in groups.items():
        ours_us = per_call_us(scrub_credentials, lines)
        theirs_us = f"{per_call_us(detector[0], lines, 0.5):8.1f}" if detector else "       -"
        print(f"  {name:32} ours {ours_us:7.1f}   detect-secrets {theirs_us}")

    print(f"\n3. hostile lines of {N:,} characters (bound {HOSTILE_BOUND_S:g} s each)")
    slowest = 0.0
    for name, line in HOSTILE.items():
        started = time.process_time()
        scrub_credentials(line)
        spent = time.process_time() - started
        slowest = max(slowest, spent)
        started = time.process_time()
        broken.error_line(line)
        cut = time.process_time() - started
        print(f"  {name:34} {spent * 1000:8.1f} ms   as an import error (error_line) {cut * 1000:6.2f} ms")
    print(f"  slowest: {slowest * 1000:.1f} ms")
    if slowest > HOSTILE_BOUND_S:
        failures.append(f"a hostile line took {slowest:.2f} s")

    print(
        f"\n4. the offline pipeline on {args.dags:,} DAGs, "
        f"CPU s with the scrub / without (least of {args.repeat})"
    )
    for name, descriptions in (
        ("as generated", None),
        ("every description names a shape's word", WORDED),
        ("every description holds a credential", CREDENTIALED),
    ):
        data = estate_bytes(args.dags, descriptions)
        on, off = timed(data, args.repeat)
        calls, own = own_time(data)
        print(
            f"  {name:40} {on:6.2f} s / {off:6.2f} s = {on / off:5.3f}; "
            f"the scrub itself: {own * 1000:5.0f} ms over {calls:,} texts ({own / off:.1%} of the pipeline)"
        )
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
