"""PII and secret redaction for everything that leaves a process: delegated tasks and context,
audit records, history previews, span attributes, error messages and log records.

Text is redacted by pattern (see :mod:`a2a.delegation.redact_rules` for the default rules:
private keys, credentials in URLs, bearer and Basic authorization, cookies, JWTs, API keys,
values written after a secret name, email addresses, phone and card numbers). Structures are
also redacted by key name: :meth:`Redactor.redact_value` replaces the whole value under a key
such as ``password``, ``client_secret`` or ``Authorization``, and
:meth:`Redactor.redact_params` (a call's parameters) every string under it, keeping types. Add rules with
:meth:`Redactor.with_rules`::

    redactor = Redactor().with_rules(Rule("employee_id", re.compile(r"EMP-\\d{6}"), "[EMPLOYEE]"))

:class:`RedactingFilter` applies a redactor to log records.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from .redact_base import MARKER, SECRET, Needles
from .redact_rules import DEFAULT_RULES, Rule, contains_any, digit_run, luhn_valid

__all__ = [
    "DEFAULT_RULES",
    "MARKER",
    "MAX_DEPTH",
    "SECRET",
    "SECRET_FIELD",
    "RedactingFilter",
    "Redactor",
    "Rule",
    "contains_any",
    "digit_run",
    "is_secret_key",
    "luhn_valid",
]

TOO_DEEP = "[TOO_DEEP]"
SECRET_FIELD = "secret_field"
"""The kind counted for a value hidden because of its key name (``{"password": ...}``)."""
MAX_DEPTH = 32
"""How deep :meth:`Redactor.redact_value` walks; anything deeper is replaced by ``[TOO_DEEP]``."""

_FOLD = {0x131: "i", 0x17F: "s", 0x307: None}
"""What a case-insensitive pattern takes for an ASCII letter but ``lower()`` keeps apart:
dotless i (U+0131) and long s (U+017F), and the dot ``lower()`` adds to a dotted capital I
(U+0130). The lower-cased text the quick checks search is folded so, or a name such as
"pa\u017f\u017fword=x" would pass them by."""


def _folded(text: str) -> str:
    """``text`` lower-cased and folded (:data:`_FOLD`): what the quick checks search."""
    lowered = text.lower()
    return lowered if lowered.isascii() else lowered.translate(_FOLD)


# Key names (lower-cased, without "_", "-", "." and spaces) whose whole value is a secret.
_SHORTEST = 4
"""No default rule matches text shorter than this (``pw=x`` is among the shortest matches)."""

_SECRET_KEY_ENDINGS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "accesskey",
    "secretkey",
    "signingkey",
    "encryptionkey",
    "credential",
    "credentials",
    "authorization",
    "cookie",
)
_SECRET_KEYS = frozenset({"pass", "pwd", "sessionid"})
_KEY_SEPARATORS = str.maketrans("", "", "_-. ")
# In a call's parameters these name ids of the runtime's own protocols (seed 001's
# ``session_id`` of an operator-driven session), which the callee needs as they are.
_PARAM_IDS = frozenset({"sessionid"})


@lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """True when a mapping key names a secret: ``password``, ``db_password``, ``X-Api-Key``,
    ``client_secret``, ``aws_secret_access_key``, ``Authorization``, ``Set-Cookie``, ...

    Case, ``_``, ``-`` and ``.`` do not matter; ``max_tokens`` or ``token_usage`` are not secrets.
    """
    key = name.lower().translate(_KEY_SEPARATORS)
    return key in _SECRET_KEYS or key.endswith(_SECRET_KEY_ENDINGS)


def _hides(value: Any) -> bool:
    # None, booleans and empty strings say nothing about a secret; keep them readable.
    return value is not None and not isinstance(value, bool) and value != ""


class Redactor:
    """Applies redaction rules, in order, to text and to nested JSON-like values.

    Every method takes an optional ``found`` dict in which it adds up what it hid, by kind:
    the name of the rule that matched, or ``secret_field`` for a value under a secret key.
    Redacting what was redacted already changes nothing and finds nothing.
    """

    def __init__(self, rules: Iterable[Rule] = DEFAULT_RULES) -> None:
        self.rules = tuple(rules)
        # Text too short for any rule is returned at once (other rules may match shorter text).
        self._shortest = _SHORTEST if self.rules == DEFAULT_RULES else 1
        # Each rule with its needles, when its precheck is a Needles, else its precheck:
        # tested here, inline, so that a rule text cannot match costs no call of its own.
        self._plan = tuple(
            (rule, rule.precheck.needles, None)
            if isinstance(rule.precheck, Needles)
            else (rule, None, rule.precheck)
            for rule in self.rules
        )

    def with_rules(self, *rules: Rule) -> Redactor:
        """A redactor with these rules added after the current ones."""
        return Redactor((*self.rules, *rules))

    def redact(self, text: str, found: dict[str, int] | None = None) -> str:
        """``text`` with every match of every rule replaced. Use it on any free text that
        leaves the process: error messages, objectives, previews, log lines."""
        if len(text) < self._shortest:
            return text
        lowered = _folded(text)
        for rule, needles, precheck in self._plan:
            if needles is not None:
                for needle in needles:
                    if needle in lowered:
                        break
                else:
                    continue
            elif precheck is not None and not precheck(lowered):
                continue
            new, count = rule.apply(text, lowered, prechecked=True)
            if count:
                text = new
                lowered = _folded(text)
                if found is not None:
                    found[rule.name] = found.get(rule.name, 0) + count
        return text

    def findings(self, text: str) -> dict[str, int]:
        """How many matches each rule finds in ``text`` (rules applied in order)."""
        found: dict[str, int] = {}
        self.redact(text, found)
        return found

    def redact_value(self, value: Any, found: dict[str, int] | None = None) -> Any:
        """A redacted copy of a JSON-like value: strings redacted by pattern, the whole value
        under a secret key name (see :func:`is_secret_key`) replaced by ``[SECRET]``.

        Walks dicts, lists, tuples and sets up to :data:`MAX_DEPTH` levels (deeper containers,
        and so cycles, become ``[TOO_DEEP]``); other values are returned as they are. Never raises.
        """
        try:
            return self._walk(value, 0, found, typed=False, hidden=False)
        except Exception:  # a container that misbehaves (a dict subclass whose items() raises)
            return SECRET

    def redact_params(self, params: dict[str, Any], found: dict[str, int] | None = None) -> dict[str, Any]:
        """A redacted copy of a call's parameters that still meets the schema they met.

        Only strings change, and they stay strings: each is redacted by pattern, and under a
        secret key name every string (at any depth) becomes ``[SECRET]`` (``session_id`` is
        not one here: in parameters it names a session of seed 001, not a web session). Keys, numbers,
        booleans, nulls and the shape of the value are kept, except that a container nested
        deeper than :data:`MAX_DEPTH` becomes ``[TOO_DEEP]``, as in :meth:`redact_value`.
        """
        walked: dict[str, Any] = self._walk(params, 0, found, typed=True, hidden=False)
        return walked

    def _walk(
        self, value: Any, depth: int, found: dict[str, int] | None, *, typed: bool, hidden: bool
    ) -> Any:
        if isinstance(value, str):
            if not hidden:
                return self.redact(value, found)
            if value == "" or MARKER.fullmatch(value):  # nothing to hide, or hidden already
                return value
            if found is not None:
                found[SECRET_FIELD] = found.get(SECRET_FIELD, 0) + 1
            return SECRET
        if not isinstance(value, (dict, list, tuple, set, frozenset)):
            return value
        if depth >= MAX_DEPTH:
            return TOO_DEEP
        depth += 1
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                secret = not hidden and isinstance(k, str) and is_secret_key(k) and _hides(v)
                if secret and typed and k.lower().translate(_KEY_SEPARATORS) in _PARAM_IDS:
                    secret = False
                if secret and not typed:
                    if not (isinstance(v, str) and MARKER.fullmatch(v)) and found is not None:
                        found[SECRET_FIELD] = found.get(SECRET_FIELD, 0) + 1
                    out[k] = SECRET
                else:
                    out[k] = self._walk(v, depth, found, typed=typed, hidden=hidden or secret)
            return out
        items = (self._walk(v, depth, found, typed=typed, hidden=hidden) for v in value)
        if isinstance(value, list):
            return list(items)
        if isinstance(value, tuple):
            return tuple(items)
        return frozenset(items) if isinstance(value, frozenset) else set(items)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (``msg % args``), exception text
    and stack text. It never drops a record and never raises.

    A filter on a logger sees only the records logged to that very logger; install it on the
    handlers (``handler.addFilter(RedactingFilter(redactor))``) to cover every logger.
    """

    def __init__(self, redactor: Redactor | None = None, name: str = "") -> None:
        super().__init__(name)
        self.redactor = redactor or Redactor()
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        redact = self.redactor.redact
        try:
            message = record.getMessage()
        except Exception:  # bad %-arguments: keep the template, never the raw arguments
            message = f"{record.msg} (unformatted log arguments dropped)"
        try:
            record.msg, record.args = redact(message), None
            if record.exc_info and not record.exc_text:
                record.exc_text = self._formatter.formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = redact(record.exc_text)
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
        except Exception:  # a redactor rule that failed: say so rather than log the secret
            record.msg, record.args = "log message withheld: redaction failed", None
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True
