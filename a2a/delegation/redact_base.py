"""What a redaction rule is: a pattern, its replacement, and quick checks that let it skip text.

The default rules themselves are in :mod:`a2a.delegation.redact_rules`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MARKER", "SECRET", "Needles", "Replacement", "Rule", "contains_any", "digit_run", "luhn_valid"]

SECRET = "[SECRET]"
MARKER = re.compile(r"\[[A-Z][A-Z_]*\]")
"""What every replacement of the default rules looks like (``[EMAIL]``, ``[API_KEY]``, ...)."""

Replacement = str | Callable[[re.Match[str]], str | None]
"""A fixed text, or a function of the match: the new text, or None to leave the match as it is."""


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


class Needles:
    """A :attr:`Rule.precheck`: the lower-cased text contains one of ``needles`` (lower-case).

    A :class:`~a2a.delegation.redact.Redactor` reads ``needles`` to test them inline, without a
    call per rule: most text holds none, and then the rule costs a few substring tests.
    """

    __slots__ = ("needles",)

    def __init__(self, needles: tuple[str, ...]) -> None:
        self.needles = needles

    def __call__(self, lowered: str) -> bool:
        for needle in self.needles:  # noqa: SIM110 - a loop costs half of any() on short text
            if needle in lowered:
                return True
        return False


def contains_any(*needles: str) -> Needles:
    """A :attr:`Rule.precheck`: the lower-cased text contains one of these lower-case strings."""
    return Needles(needles)


def digit_run(length: int, separators: str, digits: int = 0) -> Callable[[str], bool]:
    """A :attr:`Rule.precheck`: ``length`` digits or ``separators`` in a row, spaces not counted,
    in text holding ``digits`` digits or more.

    Non-ASCII text always passes: ``\\d`` also matches the digits of other scripts.
    """
    needle = b"0" * length
    marks = b"0123456789" + separators.replace(" ", "").encode()
    table = bytes.maketrans(marks, b"0" * len(marks))

    def run(lowered: str) -> bool:
        if not lowered.isascii():
            return True
        text = lowered.encode()
        if len(text) - len(text.translate(None, b"0123456789")) < digits:  # counted in C
            return False
        return needle in text.translate(table, b" ")

    return run


@dataclass(frozen=True)
class Rule:
    """Replace every match of ``pattern`` (for which ``accept`` holds) with ``replacement``.

    ``name`` is the kind of what the rule hides; counts of redactions are kept by it. A
    callable ``replacement`` may return None to leave a match alone (it is then not counted).

    The optional rest makes a rule cheap on text it cannot match, which is most text. Each
    holds for every match of ``pattern`` and is checked in the lower-cased text, and the rule
    is skipped where one fails: ``precheck`` (a function of that text, see
    :func:`contains_any`) and ``screen`` (a case-sensitive pattern found in it). With
    ``anchored`` every match of ``pattern`` also starts where a match of ``screen`` starts,
    so ``pattern`` is only tried there: scanning with a case-insensitive pattern is slow in
    Python's ``re``, and with a lower-case one it is not.
    """

    name: str
    pattern: re.Pattern[str]
    replacement: Replacement
    accept: Callable[[str], bool] | None = None
    precheck: Callable[[str], bool] | None = None
    screen: re.Pattern[str] | None = None
    anchored: bool = False

    def apply(self, text: str, lowered: str | None = None, *, prechecked: bool = False) -> tuple[str, int]:
        """``text`` with this rule's matches replaced, and how many were.

        ``lowered`` is ``text.lower()`` when the caller has it already; ``prechecked``: the
        caller found the precheck to hold.
        """
        if lowered is None:
            lowered = text.lower()
        if not prechecked and self.precheck is not None and not self.precheck(lowered):
            return text, 0
        if self.screen is not None:
            if self.anchored and len(lowered) == len(text):
                return self._apply_at_hits(text, lowered)
            if self.screen.search(lowered) is None:
                return text, 0
        count = 0

        def replace(m: re.Match[str]) -> str:
            nonlocal count
            new = self._replace(m)
            if new is None:
                return m.group(0)
            count += 1
            return new

        return self.pattern.sub(replace, text), count

    def _replace(self, m: re.Match[str]) -> str | None:
        if self.accept is not None and not self.accept(m.group(0)):
            return None
        return self.replacement if isinstance(self.replacement, str) else self.replacement(m)

    def _apply_at_hits(self, text: str, lowered: str) -> tuple[str, int]:
        # Lower-casing kept the length, so it mapped character to character and positions agree.
        assert self.screen is not None
        first = self.screen.search(lowered)  # cheaper than finditer when nothing is found
        if first is None:
            return text, 0
        parts: list[str] = []
        done = 0
        for hit in self.screen.finditer(lowered, first.start()):
            start = hit.start()
            if start < done:
                continue
            m = self.pattern.match(text, start)
            if m is None:
                continue
            new = self._replace(m)
            if new is None:
                continue
            parts.append(text[done:start])
            parts.append(new)
            done = m.end()
        if not parts:
            return text, 0
        parts.append(text[done:])
        return "".join(parts), len(parts) // 2
