"""The default redaction rules: what secrets and PII look like in text, and how each is replaced.

A :class:`Rule` is a pattern and its replacement, plus optional quick checks that let it
skip text it cannot match (most text); :data:`DEFAULT_RULES` applies them in order:

    private_key           PEM private-key blocks, whole (or to the end of a cut-off preview)
    url_credentials       scheme://user:[SECRET]@host (the user and the host stay)
    bearer_token          Bearer [TOKEN]
    jwt                   three base64url parts starting eyJ
    api_key               AWS access key ids (AKIA/ASIA), GitHub, Slack, OpenAI, Anthropic,
                          Stripe, Google, GitLab, npm and Hugging Face tokens
    authorization_header  Authorization: Basic [SECRET] (any scheme kept)
    cookie_header         Cookie / Set-Cookie values, to the end of the line
    secret_assignment     a value after a secret name: password=x, "api_key": "x",
                          aws_secret_access_key = x, client_secret: x, ...
    email, card_number (Luhn checked), phone
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_RULES", "SECRET", "Rule", "contains_any", "digit_run", "luhn_valid"]

SECRET = "[SECRET]"


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


def contains_any(*needles: str) -> Callable[[str], bool]:
    """A :attr:`Rule.precheck`: the lower-cased text contains one of these lower-case strings."""
    return lambda lowered: any(map(lowered.__contains__, needles))


def digit_run(length: int, separators: str) -> Callable[[str], bool]:
    """A :attr:`Rule.precheck`: ``length`` digits or ``separators`` in a row, spaces not counted.

    Non-ASCII text always passes: ``\\d`` also matches the digits of other scripts.
    """
    needle = b"0" * length
    marks = b"0123456789" + separators.replace(" ", "").encode()
    table = bytes.maketrans(marks, b"0" * len(marks))
    return lambda lowered: not lowered.isascii() or needle in lowered.encode().translate(table, b" ")


@dataclass(frozen=True)
class Rule:
    """Replace every match of ``pattern`` (for which ``accept`` holds) with ``replacement``.

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
    replacement: str | Callable[[re.Match[str]], str]
    accept: Callable[[str], bool] | None = None
    precheck: Callable[[str], bool] | None = None
    screen: re.Pattern[str] | None = None
    anchored: bool = False

    def apply(self, text: str, lowered: str | None = None) -> tuple[str, int]:
        """``text`` with this rule's matches replaced, and how many were.

        ``lowered`` is ``text.lower()`` when the caller has it already.
        """
        if lowered is None:
            lowered = text.lower()
        if self.precheck is not None and not self.precheck(lowered):
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


def _quoted_secret(m: re.Match[str]) -> str:
    """Name and separator kept; the value replaced, inside the quotes it had."""
    head = m.group("name") + m.group("sep")
    if m.group("dq") is not None:
        return f'{head}"{SECRET}"'
    if m.group("sq") is not None:
        return f"{head}'{SECRET}'"
    if m.group("edq") is not None:
        return f'{head}\\"{SECRET}\\"'
    # A quoted name with a bare value is a JSON/Python key only before a number: in
    # "cannot read 'passwd': Permission denied" the name is a quoted word in a sentence.
    if m.group("sep").lstrip("\\")[:1] in ("'", '"') and not m.group("bare")[:1].isdigit():
        return m.group(0)
    return head + SECRET


def _header_secret(m: re.Match[str]) -> str:
    """Header name kept, and the scheme (``Basic``, ``Digest``) when there is one."""
    scheme = m.group("scheme")
    return m.group("head") + (f"{scheme} " if scheme else "") + SECRET


# A value after a secret name: quoted (with its quotes), quoted inside a JSON string, or bare.
# Already redacted values, structures, null/true/false and "Bearer x" (a rule of its own) are skipped.
_VALUE = (
    r"(?:\"(?P<dq>(?!\[)(?:[^\"\\\n]|\\.)+)\""
    r"|'(?P<sq>(?!\[)[^'\n]+)'"
    r"|\\\"(?P<edq>(?!\[)(?:[^\"\\\n]|\\[^\"])+)\\\""
    r"|(?P<bare>(?![\[{(<]|(?:null|true|false|none)\b|(?:bearer|basic)\s)[^\s\"',;&)}\]<>\\]+))"
)
# Names whose value is a secret, matched from where the secret word starts ("db_password"
# matches at "password"); short words must start a name so that "bypass" or "child_session_id"
# do not count. Lower-case: the screen below is this list without the boundaries.
_SECRET_WORDS = (
    r"(?:pass(?:word|wd|phrase)|(?<![a-z0-9])pass|(?<![a-z0-9])pwd|secret(?:[_-]?key)?|token"
    r"|(?:api|access|private|signing|encryption)[_-]?key|credentials?|(?<![a-z0-9_-])session[_-]?id"
    r"|cookie)"
)
_SECRET_WORDS_SCREEN = (
    r"pass|pwd|secret|token|(?:api|access|private|signing|encryption)[_-]?key"
    r"|credential|session[_-]?id|cookie"
)

# Where an API key's prefix ends in "-" or "_", found from that (rarer) character.
_API_KEY_SEPARATOR = re.compile(
    r"[-_](?:(?<=sk.)|(?<=[pr]k_)|(?<=gh[pousr]_)|(?<=github_pat_)|(?<=xox[a-z]-)|(?<=xapp-)"
    r"|(?<=glpat-)|(?<=npm_)|(?<=hf_))"
)


def _api_key_precheck(lowered: str) -> bool:
    aws_or_google = "akia" in lowered or "asia" in lowered or "aiza" in lowered
    return aws_or_google or _API_KEY_SEPARATOR.search(lowered) is not None


_SECRET_NAME_HINTS = contains_any("pass", "pwd", "secret", "token", "key", "credential", "session", "cookie")


def _assignment_precheck(lowered: str) -> bool:
    return (":" in lowered or "=" in lowered) and _SECRET_NAME_HINTS(lowered)


DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        # To the END line, or to the end of the text when a preview cut it off.
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
        "[PRIVATE_KEY]",
        screen=re.compile(r"-----begin"),
    ),
    Rule(
        "url_credentials",
        re.compile(r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s:/?#@\"'<>]*):[^\s/?#@\"'<>]+@"),
        lambda m: f"{m.group('scheme')}{m.group('user')}:{SECRET}@",
        screen=re.compile(r"://"),
    ),
    Rule(
        "bearer_token",
        re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"),
        lambda m: f"{m.group(1)} [TOKEN]",
        screen=re.compile(r"bearer"),
        anchored=True,
    ),
    Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        "[TOKEN]",
        screen=re.compile(r"eyj"),
        anchored=True,
    ),
    Rule(
        "api_key",
        re.compile(
            # OpenAI / Anthropic keys need a digit, so that words like "sk-learn-style" survive.
            r"\b(?:sk-(?=[A-Za-z0-9_-]*\d)(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
            r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}\b"
            r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
            r"|xox[a-z]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
            r"|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,}"
            r"|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,})"
        ),
        "[API_KEY]",
        precheck=_api_key_precheck,
        screen=re.compile(
            r"sk[-_]|[pr]k_|akia|asia|aiza|gh[pousr]_|github_pat_|xox[a-z]-|xapp-|glpat-|npm_|hf_"
        ),
        anchored=True,
    ),
    Rule(
        "authorization_header",
        # "Authorization: Basic x" keeps the scheme; "Bearer [TOKEN]" (done above) is left alone.
        re.compile(
            r"(?i)\b(?P<head>authorization\\?[\"']?\s*[:=]\s*\\?[\"']?)"
            r"(?:(?P<scheme>[A-Za-z][\w-]*)\s+)?+(?!\[)[^\s\"',;\\]+"
        ),
        _header_secret,
        screen=re.compile(r"authorization"),
        anchored=True,
    ),
    Rule(
        "cookie_header",
        # A Cookie header's value runs to the end of the line (or the closing quote).
        re.compile(r"(?i)\b(?P<head>cookie\\?[\"']?\s*:\s*\\?[\"']?)(?!\[)[^\"'\r\n\\]+"),
        lambda m: m.group("head") + SECRET,
        screen=re.compile(r"cookie"),
        anchored=True,
    ),
    Rule(
        "secret_assignment",
        re.compile(rf"(?i)(?P<name>{_SECRET_WORDS})(?P<sep>\\?[\"']?\s*(?::=|=>|[:=])\s*){_VALUE}"),
        _quoted_secret,
        precheck=_assignment_precheck,
        screen=re.compile(_SECRET_WORDS_SCREEN),
        anchored=True,
    ),
    Rule(
        "email",
        re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
        "[EMAIL]",
        screen=re.compile(r"@"),
    ),
    Rule(
        "card_number",
        re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"),
        "[CARD]",
        accept=luhn_valid,
        precheck=digit_run(13, " -"),
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
        precheck=digit_run(8, " .-()+"),
    ),
)
