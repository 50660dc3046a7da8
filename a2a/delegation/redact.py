"""PII and secret redaction, applied before delegation, in audit records and in span attributes.

The default rules find email addresses, phone numbers, payment card numbers (Luhn
checked), API keys of common providers, ``key=value`` secrets, bearer tokens and JWTs.
Add rules with :meth:`Redactor.with_rules`::

    redactor = Redactor().with_rules(Rule("employee_id", re.compile(r"EMP-\\d{6}"), "[EMPLOYEE]"))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_RULES", "Redactor", "Rule", "luhn_valid"]


def luhn_valid(number: str) -> bool:
    """True when the digits of ``number`` pass the Luhn check used by payment cards."""
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


@dataclass(frozen=True)
class Rule:
    """Replace every match of ``pattern`` (for which ``accept`` holds) with ``replacement``."""

    name: str
    pattern: re.Pattern[str]
    replacement: str | Callable[[re.Match[str]], str]
    accept: Callable[[str], bool] | None = None

    def apply(self, text: str) -> tuple[str, int]:
        count = 0

        def replace(m: re.Match[str]) -> str:
            nonlocal count
            if self.accept is not None and not self.accept(m.group(0)):
                return m.group(0)
            count += 1
            return self.replacement if isinstance(self.replacement, str) else self.replacement(m)

        return self.pattern.sub(replace, text), count


_SECRET_NAMES = r"(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|password|passwd|pwd)"

DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(
        "bearer_token",
        re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"),
        lambda m: f"{m.group(1)} [TOKEN]",
    ),
    Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        "[TOKEN]",
    ),
    Rule(
        "api_key",
        re.compile(
            r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
            r"|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
            r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,})"
        ),
        "[API_KEY]",
    ),
    Rule(
        "secret_assignment",
        re.compile(rf"(?i)\b({_SECRET_NAMES})(\s*[:=]\s*)([\"']?)[^\s\"',;]{{6,}}\3"),
        lambda m: f"{m.group(1)}{m.group(2)}[SECRET]",
    ),
    Rule("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), "[EMAIL]"),
    Rule(
        "card_number",
        re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"),
        "[CARD]",
        accept=luhn_valid,
    ),
    Rule(
        "phone",
        re.compile(
            r"(?<![\w+])(?:"
            r"\+\d{1,3}[ .-]?\(?\d{1,4}\)?[ .-]?\d{2,4}[ .-]?\d{3,4}"  # +44 20 7946 0958, +1 (415) 555-0132
            r"|\+\d{8,15}"  # +14155550132
            r"|\(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{3,4}"  # (020) 7946 0958
            r"|\d{3}[ .-]\d{3}[ .-]\d{4}"  # 415-555-0132
            r")(?![\w-])"
        ),
        "[PHONE]",
    ),
)


class Redactor:
    """Applies redaction rules, in order, to text and to nested JSON-like values."""

    def __init__(self, rules: Iterable[Rule] = DEFAULT_RULES) -> None:
        self.rules = tuple(rules)

    def with_rules(self, *rules: Rule) -> Redactor:
        """A redactor with these rules added after the current ones."""
        return Redactor((*self.rules, *rules))

    def redact(self, text: str) -> str:
        for rule in self.rules:
            text, _ = rule.apply(text)
        return text

    def findings(self, text: str) -> dict[str, int]:
        """How many matches each rule finds in ``text`` (rules applied in order)."""
        found = {}
        for rule in self.rules:
            text, count = rule.apply(text)
            if count:
                found[rule.name] = count
        return found

    def redact_value(self, value: Any) -> Any:
        """Redact every string inside dicts, lists and tuples; other values pass through."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {k: self.redact_value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(v) for v in value]
        return value
