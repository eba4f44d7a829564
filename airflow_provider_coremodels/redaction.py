"""The secrets a run knows, scrubbed from everything it writes: messages, log records, lossiness.

Import-light (the standard library only): every layer that writes text may use it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

# -- secrets ------------------------------------------------------------------------------


class Secrets:
    """Every secret this run knows (passwords, tokens, JWTs), to scrub from what it writes.

    Registered where a secret enters (a source, a token answer, a sink); scrubbed where text
    leaves (error messages, log records, lossiness records). Also handed to Airflow's secrets
    masker when Airflow is already loaded, so its task logs hide them too.
    """

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        fresh = [v for v in values if v and len(v) >= 4 and v not in self._values]
        if not fresh:
            return
        with self._lock:
            self._values.update(fresh)
        if "airflow.sdk.log" in sys.modules:  # never import Airflow for this: python -m stays light
            mask = sys.modules["airflow.sdk.log"].mask_secret
            for value in fresh:
                mask(value)

    def add_connection(self, conn: Any) -> None:
        """An Airflow connection's secrets: its password, and every string in its extra under a
        credential's name (``aws_secret_access_key``, ``token``, ``client_secret``, a service
        account's ``private_key``), however deep. Called where every connection is read
        (``hooks.connection_fields``), so the API's, the sinks' and the endpoint's are all known."""
        self.add(getattr(conn, "password", None))
        try:
            extra = conn.extra_dejson
        except Exception:  # an extra that is not JSON: Airflow says so where it is used
            return
        stack: list[Any] = [extra]
        while stack:
            node = stack.pop()
            items = (
                node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            )
            for key, value in items:
                if isinstance(value, str) and isinstance(key, str) and _CREDENTIAL_KEY.search(key):
                    self.add(value)
                elif isinstance(value, str) and value.startswith("{") and len(value) < 1_000_000:
                    # JSON in a string: Google's keyfile_dict
                    with contextlib.suppress(ValueError, RecursionError):
                        stack.append(json.loads(value))
                elif isinstance(value, dict | list):
                    stack.append(value)

    def clear(self) -> None:
        """Forget every secret: for a process that runs many captures (the test suite)."""
        with self._lock:
            self._values.clear()

    def values(self) -> tuple[str, ...]:
        """The secrets, longest first (a secret inside another is replaced after it)."""
        with self._lock:
            return tuple(sorted(self._values, key=len, reverse=True))

    def scrub(self, text: str) -> str:
        return _replace_values(text, self.values())


SECRETS = Secrets()


def _replace_values(text: str, values: tuple[str, ...]) -> str:
    for value in values:
        if value in text:
            text = text.replace(value, "***")
    return text


class _Scrubbing(logging.Filter):
    """Scrub every record of this package's loggers before any handler sees it: of the secrets the
    run knows and of credential shapes (a record may quote what a server answered)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub_credentials(SECRETS.scrub(message))
        if clean != message:
            record.msg, record.args = clean, None
        return True


_SCRUBBING = _Scrubbing()


def scrubbed_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, its records scrubbed before any handler sees them.

    A filter on a parent logger never sees its children's records, so each module's logger
    carries the filter itself.
    """
    logger = logging.getLogger(name)
    if _SCRUBBING not in logger.filters:
        logger.addFilter(_SCRUBBING)
    return logger


# -- credential shapes ----------------------------------------------------------------------------

#: What a credential is replaced by: the mark ``Secrets.scrub`` leaves too.
REPLACED = "***"

# Each pattern finds one shape of credential and captures what stays around it (a key's name, a
# URL's user, a PEM block's markers). Every pattern is linear on any text: a token pattern may only
# start where a run of its own characters starts (the look-behind), so each run is scanned once, and
# every repetition that can fail after it is bounded, so a near-miss costs at most its bound (one that
# cannot fail is not: it takes the whole run at once). benchmarks/bench_credentials.py runs each on
# hostile 300 KB lines. The case-blind ones are written in lower case: they run on the
# lower-cased text, which is several times faster than IGNORECASE (ASCII text, where lower-casing
# keeps every position; other text gets the IGNORECASE twin).
_PEM = re.compile(
    r"(-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----)"
    r".*?(-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY(?: BLOCK)?-----|$)",
    re.DOTALL,
)
#: A JWT (or JWE): base64url JSON (``eyJ`` is ``{"``) and its dot-separated parts; a cut one too.
_JWT = re.compile(r"(?<![\w-])eyJ[\w-]{10,8192}(?:\.[\w-]{0,8192}){0,4}")
#: Tokens whose shape names their issuer: Slack, GitHub, GitLab, Stripe, OpenAI-style, Google API keys
#: and OAuth access tokens (``ya29.``), AWS session tokens (base64 of their fixed first bytes). An
#: OpenAI-style ``sk-`` key holds a capital and a digit within its first 40 characters, as random
#: ones do and a DAG id (``sk-learn_features_daily``) does not.
_TOKENS = re.compile(
    r"(?<![\w-])(?:xox[abposre]-[A-Za-z0-9-]{10,512}|gh[pousr]_[A-Za-z0-9]{30,255}"
    r"|github_pat_\w{22,255}|glpat-[\w-]{20,255}|[sr]k_live_[A-Za-z0-9]{16,255}"
    r"|sk-(?:proj-|ant-)?(?=[\w-]{0,40}[A-Z])(?=[\w-]{0,40}[0-9])[\w-]{20,512}|AIza[\w-]{35}"
    r"|ya29\.[\w-]{20,4096})(?![\w-])"
    r"|(?<![A-Za-z0-9/+=])(?:IQoJb3JpZ2lu|FwoGZXIvYXdz)[A-Za-z0-9/+]{40,8192}={0,2}"
)
#: An Azure storage account key on its own: 64 bytes in base64, 86 characters and ``==``, a whole
#: run (what is not a key but has its shape, a SHA-512 digest in base64, goes too).
_AZURE_KEY = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{86}==(?![A-Za-z0-9/+=])")
_AWS_IDS = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA")
#: An AWS access key id, and the 40-character secret that follows one within 60 characters.
_AWS_PAIR = re.compile(
    rf"(?<![A-Z0-9])(?:{'|'.join(_AWS_IDS)})[A-Z0-9]{{16}}(?![A-Z0-9])"
    r"(?:([^\n]{1,60}?)(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?"
)
_SLACK_HOOK = re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[\w/-]{1,512}")
#: ``scheme://user:password@``: the password (``:`` allowed in it, ``/`` and ``@`` not).
_URL_USERINFO = re.compile(r"(://[^\s/?#@:\"'<>]{0,256}:)[^\s/@\"'<>]{1,1024}(?=@)")
#: ``Authorization: <scheme> <credentials>`` in a header, a dict or a log line (case-blind).
_AUTHORIZATION = r"(authorization[\"']?\s{0,4}[:=]\s{0,4}[\"']?(?:[a-z]{2,20} )?)[^\s\"',;]+"
_BEARER = r"(?<![\w-])(bearer\s{1,4})[\w.~+/-]{16,}=*"
#: ``password=x``, ``DB_PASSWORD: "x"``, ``"api_key": "x"``, ``PWD=x;``, ``AccountKey=x``, ``sig=x``:
#: a name ending in one of the words, an assignment, and the value (quoted, or up to a separator).
#: Case-blind. A word right after a ``/`` is a URL's path (``.../auth/token: HTTP 401``), no name.
_ASSIGNED = (
    r"((?<!/)(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|account[_-]?key"
    r"|private[_-]?key(?:[_-]?id)?|secret[_-]?key|(?<![a-z0-9])(?:pwd|sig))s?(?![a-z0-9_])"
    r"[\"']?\s{0,4}(?:=>|:=|==?|:)\s{0,4})"
    r"(\"(?:[^\"\\\n]|\\.){1,256}\"|'(?:[^'\\\n]|\\.){1,256}'|(?![\"'])[^\s\"',;&)}\]>]+)"
)


def _keep(match: re.Match[str], text: str) -> str:
    return text[match.start(1) : match.end(1)] + REPLACED


def _pem(match: re.Match[str], text: str) -> str:
    return f"{match[1]}{REPLACED}{match[2]}"


def _aws(match: re.Match[str], text: str) -> str:
    return REPLACED if match[1] is None else f"{REPLACED}{match[1]}{REPLACED}"


def _assigned(match: re.Match[str], text: str) -> str:
    quote = text[match.start(2)]
    return text[match.start(1) : match.end(1)] + (f"{quote}{REPLACED}{quote}" if quote in "\"'" else REPLACED)


def _whole(match: re.Match[str], text: str) -> str:
    return REPLACED


class _Shape:
    """A credential shape: the words one of which it needs (lower case), its pattern, what a match
    becomes (given the match and the text, since a case-blind match is found elsewhere), and the
    characters one of which it needs too (an assignment's ``=`` or ``:``, a URL's ``@``)."""

    def __init__(
        self,
        words: tuple[str, ...],
        pattern: str | re.Pattern[str],
        replace: Callable[[re.Match[str], str], str],
        needs: tuple[str, ...] = (),
    ) -> None:
        self.words, self.replace, self.needs = frozenset(words), replace, needs
        self.blind = isinstance(pattern, str)  # case-blind: run on the lower-cased text
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.folded = re.compile(pattern, re.IGNORECASE) if isinstance(pattern, str) else pattern

    def sub(self, text: str, lower: str) -> str:
        if self.needs and not any(char in text for char in self.needs):
            return text
        if not self.blind:
            return self.pattern.sub(lambda m: self.replace(m, text), text)
        pattern, haystack = (self.pattern, lower) if text.isascii() else (self.folded, text)
        pieces: list[str] = []
        last = 0
        for match in pattern.finditer(haystack):
            pieces += (text[last : match.start()], self.replace(match, text))
            last = match.end()
        return "".join((*pieces, text[last:])) if pieces else text


_SHAPES = (
    _Shape(("-----begin",), _PEM, _pem),
    _Shape(("eyj",), _JWT, _whole),
    _Shape(
        (
            *("xox", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "k_live_", "sk-"),
            *("aiza", "ya29.", "iqojb3jpz2lu", "fwogzxivyxdz"),
        ),
        _TOKENS,
        _whole,
    ),
    _Shape(tuple(prefix.lower() for prefix in _AWS_IDS), _AWS_PAIR, _aws),
    _Shape(("==",), _AZURE_KEY, _whole),
    _Shape(("hooks.slack",), _SLACK_HOOK, _keep),
    _Shape(("://",), _URL_USERINFO, _keep, needs=("@",)),
    _Shape(("authorization",), _AUTHORIZATION, _keep, needs=(":", "=")),
    _Shape(("bearer",), _BEARER, _keep),
    _Shape(("pass", "pwd", "secret", "token", "key", "sig"), _ASSIGNED, _assigned, needs=(":", "=")),
)
#: Every shape's words: text holding none of them (most text) is returned after these tests.
_WORDS = tuple(dict.fromkeys(word for shape in _SHAPES for word in shape.words))


def scrub_credentials(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``***``: URL passwords, ``password=``-
    style assignments (``secret``, ``token``, ``api_key``, ``AccountKey``, ``PWD``, ``sig``; JSON and
    dict forms too), ``Authorization`` values and bearer tokens, JWTs, private-key PEM blocks (the
    markers kept), AWS access key ids and the secret next to one, and issuer-shaped tokens (Slack,
    GitHub, GitLab, Stripe, OpenAI-style, Google API keys and ``ya29.`` tokens, AWS session tokens,
    Slack webhooks, an Azure storage key on its own).

    What names the credential stays (``password=***``, ``postgresql://etl:***@db``), so the text
    still says what failed. Deterministic and idempotent, linear on any text; text that holds none
    of the shapes' words is returned after a few substring tests.
    """
    lower = text.lower()
    found = {word for word in _WORDS if word in lower}  # a comprehension: a generator costs more
    if not found:
        return text
    for shape in _SHAPES:
        if not found.isdisjoint(shape.words):
            scrubbed = shape.sub(text, lower)
            if scrubbed != text:
                text, lower = scrubbed, scrubbed.lower()
    return text


# -- the one scrubber ---------------------------------------------------------------------------


def scrub(text: str) -> str:
    """``text`` without the secrets this run knows (``SECRETS``) nor credential shapes
    (``scrub_credentials``): what every error line, log line and quoted answer goes through."""
    return scrub_credentials(SECRETS.scrub(text))


#: Keys whose values name something other items refer to (DAG and task ids, asset URIs, files):
#: scrubbed of credential shapes only, never of the run's own secrets. A short password (``admin``)
#: would otherwise turn ``admin_reports`` into ``***_reports`` and break every join on it; Airflow
#: keeps ids to letters, digits, ``.``, ``-`` and ``_``, and drops a password from an asset's URI.
IDENTIFIER_KEYS = frozenset(
    {
        "dag_id",
        "task_id",
        "source_dag_id",
        "source_task_id",
        "dag_run_id",
        "run_id",
        "source_run_id",
        "uri",
        "dataset_uri",
        "asset_uri",
        "fileloc",
        "relative_fileloc",
        "filename",
        "bundle_name",
        # who owns what: teams and notifiers are found through them (Airflow's default owner is
        # "airflow", as is many a local deployment's password); a list or an object under one of
        # these keys (a DAG's owners, its tags) is identifiers throughout
        "owners",
        "owner",
        "tags",
    }
)
#: A key whose name ends in a credential's (``password``, ``db_password``, ``api_key``,
#: ``client_secret``, ``file_token``; not ``token_count``): its string value is a credential
#: whatever it looks like, and is replaced whole.
_CREDENTIAL_KEY = re.compile(
    r"(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|account[_-]?key"
    r"|private[_-]?key(?:[_-]?id)?|secret[_-]?key|(?<![a-z0-9])(?:pwd|sig)|credential)s?$",
    re.IGNORECASE,
)


#: The most strings ``scrub_answer`` remembers at once per kind (a few MB of dict at most).
_MEMO_MAX = 50_000


def scrub_answer(answer: Any) -> Any:
    """``answer`` (a decoded JSON answer) with every string in it scrubbed, in place where it is a
    list or an object, and returned: the one scrub of what a server writes, applied where an answer
    is taken in, before anything holds it. Free text (descriptions, docs, alert names, errors,
    extras) loses the run's secrets and credential shapes; identifiers (``IDENTIFIER_KEYS``)
    credential shapes only; a value under a credential's key (``"password": ...``) is replaced whole.
    Keys are kept. Deterministic, so an unchanged estate keeps its fingerprint."""
    secrets = SECRETS.values()
    # An answer repeats most of its strings (operator names, trigger rules, colours, timestamps: 15,000
    # distinct of 446,000 in 1,000 DAGs' answers) and all of its keys: each is judged once per answer.
    cleaned: tuple[dict[str, str], dict[str, str]] = ({}, {})  # free text, identifiers
    kinds: dict[str, int] = {}  # a key's kind: 0 free text, 1 an identifier, 2 a credential

    def kind(key: str) -> int:
        found = kinds.get(key)
        if found is None:
            credential = len(key) <= 64 and _CREDENTIAL_KEY.search(key) is not None
            found = kinds[key] = 1 if key in IDENTIFIER_KEYS else 2 if credential else 0
        return found

    def text(value: str, of: int) -> str:
        if of == 2:
            return REPLACED if value else value
        memo = cleaned[of]
        clean = memo.get(value)
        if clean is None:
            if len(memo) >= _MEMO_MAX:  # an answer of distinct strings gains nothing: memory stays bounded
                memo.clear()
            clean = memo[value] = scrub_credentials(value if of else _replace_values(value, secrets))
        return clean

    if isinstance(answer, str):
        return text(answer, 0)
    # each node with the kind its strings take when their own key says nothing more: free text,
    # or identifiers for everything under an identifier's key
    stack: list[tuple[Any, int]] = [(answer, 0)]
    while stack:  # an explicit stack: an answer's nesting is bounded by its decoder, not by recursion here
        node, inherited = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                of = kind(key) if isinstance(key, str) else 0
                if isinstance(value, str):
                    clean = text(value, of or inherited)
                    if clean is not value:
                        node[key] = clean
                elif isinstance(value, dict | list):
                    stack.append((value, of if of == 1 else inherited))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                if isinstance(value, str):
                    clean = text(value, inherited)
                    if clean is not value:
                        node[index] = clean
                elif isinstance(value, dict | list):
                    stack.append((value, inherited))
    return answer
