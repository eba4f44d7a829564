"""Benchmark: the credential scrub (``redaction.scrub_credentials``, issue 34), what it finds and costs.

Five measurements, each printed as a table:

1. **Shapes found.** Each credential shape of ``tests/support/secret_shapes.py`` (the error lines
   the tests use), and whether the scrub removes every secret part of it; beside it, when
   ``detect-secrets`` is installed, whether its plugins (every plugin of 1.5.0, used as a
   library: ``analyze_line`` with verification off, each line read as code and as a YAML file and
   the finds of both kept) *locate* every secret part, which is what a replacement needs (a
   plugin that yields ``ghp`` or ``BEGIN RSA PRIVATE KEY`` detects the secret but does not
   locate it). The ordinary error lines must come out unchanged.
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
5. **Recall and false positives on a corpus** (``tests/support/secret_corpus.py``, issue 44): each
   shape in the text servers write (descriptions, alert names, import errors, 4xx bodies; two hold
   a secret of the run's own with no shape, registered with ``SECRETS`` first) and clean text (DAG
   ids naming tokens, asset URIs, SQL, cron, docs, hashes). For ours (``redaction.scrub``: the run's
   secrets and the shapes), detect-secrets' plugins, and the two combined (ours, then every value
   detect-secrets locates replaced): how many secret texts lose every secret part (recall; for
   detect-secrets, are located, and beside it are flagged at all), and how many clean texts change
   (or, for detect-secrets, are flagged). The one kept is the better recall at no false positive.
6. **The capture's scrub of every answer** (``redaction.scrub_answer``, issue 44): the estate's
   dags, tasks and datasets artifacts (each as one answer) decoded, and decoded then scrubbed
   (every string: the run's secrets, two registered, and the shapes), interleaved, the least CPU
   time of ``--repeat``; the ratio is what the scrub adds to taking an answer in.

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
from airflow_provider_coremodels.io.transport import decode_json  # noqa: E402
from airflow_provider_coremodels.redaction import SECRETS, scrub, scrub_answer, scrub_credentials  # noqa: E402

sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))
from generate_estate import encode, generate  # noqa: E402
from support.secret_corpus import CLEAN_TEXTS, OWN_PASSWORD, OWN_TOKEN, SECRET_TEXTS  # noqa: E402
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
    "ya29. then a long run": "ya29." + "a" * N,
    "session token prefix repeated": "IQoJb3JpZ2lu" * (N // 12),
    "sk- with no capital, repeated": "sk-" + "a" * 40 + " " * (N // 44),
    "base64 runs of 86, no ==": ("A" * 86 + "= ") * (N // 88),
    "== repeated": "==" * (N // 2),
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
        # as code and as a configuration file: the keyword plugin's rules differ by file type, and
        # the configuration's (``key = value``) find libpq's ``password=`` and ODBC's ``PWD=``
        found = []
        for plugin in loaded:
            for filename in ("import_error", "settings.yaml"):
                secrets = plugin.analyze_line(filename=filename, line=line, line_number=1)
                found += [secret.secret_value for secret in secrets]
        return list(dict.fromkeys(value for value in found if value))

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


def corpus(detector: tuple[Callable[[str], list[str]], str] | None) -> list[str]:
    """Section 5: recall and false positives of ours, detect-secrets' and both on the corpus."""
    print(
        f"\n5. corpus: {len(SECRET_TEXTS)} texts holding a secret "
        f"({sum(item.own for item in SECRET_TEXTS)} the run's own, no shape), {len(CLEAN_TEXTS)} clean texts"
    )
    SECRETS.add(OWN_PASSWORD, OWN_TOKEN)  # as the capture registers its password and token

    def both(text: str) -> str:
        found = detector[0](text) if detector else []
        text = scrub(text)
        for value in sorted(found, key=len, reverse=True):
            text = text.replace(value, "***")
        return text

    ours_hits = theirs_hits = theirs_flagged = both_hits = 0
    print(f"  {'':32} {'ours':6} {'detect-secrets (located / flagged)':36} both")
    for item in SECRET_TEXTS:
        ours = not any(secret in scrub(item.text) for secret in item.secrets)
        found = detector[0](item.text) if detector else []
        theirs, flagged = located(found, item.secrets), bool(found)
        combined = not any(secret in both(item.text) for secret in item.secrets)
        ours_hits, theirs_hits = ours_hits + ours, theirs_hits + theirs
        theirs_flagged, both_hits = theirs_flagged + flagged, both_hits + combined
        print(f"  {item.name:32} {ours!s:6} {f'{theirs!s} / {flagged!s}':36} {combined}")
    ours_fp = [text for text in CLEAN_TEXTS if scrub(text) != text]
    theirs_fp = [text for text in CLEAN_TEXTS if detector and detector[0](text)]
    both_fp = [text for text in CLEAN_TEXTS if both(text) != text]
    total, clean = len(SECRET_TEXTS), len(CLEAN_TEXTS)
    print(f"  recall: ours {ours_hits}/{total}", end="")
    if detector:
        print(
            f", detect-secrets {theirs_hits}/{total} located ({theirs_flagged}/{total} flagged), "
            f"both {both_hits}/{total}",
            end="",
        )
    print(f"\n  false positives on clean text: ours {len(ours_fp)}/{clean}", end="")
    if detector:
        print(f", detect-secrets {len(theirs_fp)}/{clean}, both {len(both_fp)}/{clean}", end="")
    print()
    for line in (*ours_fp, *theirs_fp):
        print(f"    changed or flagged: {line[:100]!r}")
    if detector:
        kept = "ours" if ours_hits >= both_hits and not ours_fp else "both" if not both_fp else "neither"
        print(f"  kept: {kept} (the better recall at no false positive on clean text)")
    SECRETS.clear()
    failures = []
    if ours_fp:
        failures.append(f"{len(ours_fp)} clean texts changed")
    if ours_hits < total:
        failures.append(f"{total - ours_hits} corpus secrets left")
    return failures


def answers(dags: int, repeat: int) -> None:
    """Section 6: decoding the estate's artifacts as answers, with and without ``scrub_answer``."""
    data = estate_bytes(dags, None)
    strings = 0
    stack: list[Any] = [decode_json(part) for part in data]
    while stack:
        node = stack.pop()
        values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for value in values:
            strings += isinstance(value, str)
            if isinstance(value, dict | list):
                stack.append(value)
    SECRETS.add(OWN_PASSWORD, OWN_TOKEN)
    decoded, scrubbed = [], []
    for _ in range(repeat + 1):  # the first round warms up
        gc.collect()
        started = time.process_time()
        for part in data:
            decode_json(part)
        decoded.append(time.process_time() - started)
        gc.collect()
        started = time.process_time()
        for part in data:
            scrub_answer(decode_json(part))
        scrubbed.append(time.process_time() - started)
    SECRETS.clear()
    plain, with_scrub = min(decoded[1:]), min(scrubbed[1:])
    size = sum(len(part) for part in data)
    print(
        f"\n6. the capture's scrub of every answer: {dags:,} DAGs' artifacts, {size / 1e6:.1f} MB, "
        f"{strings:,} strings (least CPU of {repeat})"
    )
    print(
        f"  decoded {plain:.3f} s, decoded and scrubbed {with_scrub:.3f} s = {with_scrub / plain:.2f}; "
        f"the scrub {(with_scrub - plain) / strings * 1e6:.2f} us per string"
    )


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
    failures += corpus(detector)
    answers(args.dags, args.repeat)
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
