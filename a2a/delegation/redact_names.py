"""Rules for secrets found by the name written before them: ``password=x``, ``"api_key": "x"``,
``--token x``, ``my password is x``, ``<add key="Password" value="x"/>``.

A name alone does not make a secret: prose mentions passwords and tokens all the time
("token: we should rotate it", "password = os.environ[...]"). So a value is kept when it
is a placeholder or a code reference, and a bare value after ``name:`` is hidden only when
it looks like a secret (digits, symbols, mixed case) or stands alone at the end of its line.
"""

from __future__ import annotations

import re

from .redact_base import SECRET, Rule, contains_any

__all__ = ["NAMED_SECRET_RULES", "SECRET_WORDS"]

# A value after a secret name: quoted (with its quotes), quoted inside a JSON string, or bare.
# Already redacted values, structures, null/true/false and "Bearer x" (a rule of its own) are skipped.
_VALUE = (
    r"(?:\"(?P<dq>(?!\[)(?:[^\"\\\n]|\\.)+)\""
    r"|'(?P<sq>(?!\[)[^'\n]+)'"
    r"|\\\"(?P<edq>(?!\[)(?:[^\"\\\n]|\\[^\"])+)\\\""
    r"|(?P<bare>(?![\[{(<=]|(?:null|true|false|none)\b|(?:bearer|basic)\s)[^\s\"',;&)}\]<>\\]+))"
)
# Names whose value is a secret, matched from where the secret word starts ("db_password"
# matches at "password"); short words must start a name so that "bypass" or "child_session_id"
# do not count. Lower-case: the screen below is this list without the boundaries.
SECRET_WORDS = (
    r"(?:pass(?:word|wd|phrase)|(?<![a-z0-9])pass|(?<![a-z0-9])pwd?|secret(?:[_-]?key)?|token"
    r"|(?:api|access|account|private|signing|encryption)[_-]?key|credentials?"
    r"|(?<![a-z0-9_-])session[_-]?id|cookie)"
    # what some names add after the secret word: secret_key_base, token_hash
    r"(?:[_-](?:base|value|hash|hex|b64|base64|string|data)\b)?"
)
_SECRET_WORDS_SCREEN = (
    r"pass|pw|secret|token|(?:api|access|account|private|signing|encryption)[_-]?key"
    r"|credential|session[_-]?id|cookie"
)
_SECRET_NAME_HINTS = contains_any("pass", "pw", "secret", "token", "key", "credential", "session", "cookie")

# Words that, standing alone after "name:", describe the value instead of being it.
_DESCRIPTION_WORDS = (
    "required optional none null empty unset set missing invalid expired changed hidden redacted"
    " masked unknown yes no tbd todo n/a see below above accepted rejected disabled enabled off on"
    " default string str int bytes bool text any secret password token"
)
_DESCRIPTIONS = frozenset(_DESCRIPTION_WORDS.split())
_TRAILING = ".:!?"
_LINE_END = re.compile(r"[.:!?]*[ \t]*(?:$|[\r\n,;])")
_CODE_CALL = re.compile(r"[A-Za-z_][\w.]*[(\[].*")  # get_token(x), os.environ["X"]
_CODE_PATH = re.compile(r"[a-z_][a-z_]+(?:\.[a-z_][a-z0-9_]*)+")  # settings.api_key, self.password
_ENV_NAME = re.compile(r"\$[A-Z_][A-Z0-9_]*")


def _placeholder(value: str) -> bool:
    """``${DB_PASSWORD}``, ``$TOKEN``, ``{{ secrets.X }}``, ``<your-key>``: a value to fill in."""
    return value.startswith(("${", "{{", "<", "%(")) or _ENV_NAME.fullmatch(value) is not None


def _code(value: str) -> bool:
    return _CODE_CALL.fullmatch(value) is not None or _CODE_PATH.fullmatch(value) is not None


def _looks_secret(value: str) -> bool:
    """Digits, symbols or mixed case: not a word of prose."""
    core = value.rstrip(_TRAILING)
    if any(c.isdigit() for c in core) or not core.replace("-", "").replace("_", "").isalnum():
        return True
    return any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)


def _last_on_line(m: re.Match[str], value: str) -> bool:
    core = value.rstrip(_TRAILING)
    rest = value[len(core) :] + m.string[m.end() : m.end() + 80]
    return _LINE_END.match(rest) is not None and core.lower() not in _DESCRIPTIONS


def _quoted(m: re.Match[str], head: str) -> str | None:
    """The value inside the quotes it had replaced; None for a bare value."""
    for group, quote in (("dq", '"'), ("sq", "'"), ("edq", '\\"')):
        value = m.group(group)
        if value is not None:
            return None if _placeholder(value) else f"{head}{quote}{SECRET}{quote}"
    return ""


def _assigned(m: re.Match[str]) -> str | None:
    """Name and separator kept; the value replaced, inside the quotes it had."""
    sep = m.group("sep")
    head = m.group("name") + sep
    quoted = _quoted(m, head)
    if quoted != "":
        return quoted
    bare = m.group("bare")
    if _placeholder(bare) or _code(bare):
        return None
    # A quoted name with a bare value is a JSON/Python key only before a number: in
    # "cannot read 'passwd': Permission denied" the name is a quoted word in a sentence.
    if sep.lstrip("\\")[:1] in ("'", '"'):
        return head + SECRET if bare[:1].isdigit() else None
    # "name: value" is also how prose introduces a sentence ("token: we should rotate it").
    if "=" not in sep and not (_looks_secret(bare) or _last_on_line(m, bare)):
        return None
    return head + SECRET


def _flagged(m: re.Match[str]) -> str | None:
    """``--password x``: a quoted value, or a bare one that looks like a secret."""
    head = m.group("head")
    quoted = _quoted(m, head)
    if quoted != "":
        return quoted
    bare = m.group("bare")
    return head + SECRET if _looks_secret(bare) and not _placeholder(bare) else None


def _said(m: re.Match[str]) -> str | None:
    """``password is x`` / ``with password 'x'``: a quoted word, or letters with digits."""
    if m.group("pp") is not None:  # "passphrase: x y z": the words to the end of the clause
        return m.group("pp") + SECRET
    head = m.group("head")
    quoted = _quoted(m, head)
    if quoted != "":
        return quoted
    core = m.group("bare").rstrip(_TRAILING)
    if len(core) < 6 or not _letters_and_digits(core):
        return None
    return head + SECRET + m.group("bare")[len(core) :]


def _letters_and_digits(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _xml_value(m: re.Match[str]) -> str | None:
    value = m.group("v")
    return None if not value or value.startswith("[") else m.group("head") + SECRET + m.group("q2")


def _assignment_precheck(lowered: str) -> bool:
    return (":" in lowered or "=" in lowered) and _SECRET_NAME_HINTS(lowered)


NAMED_SECRET_RULES: tuple[Rule, ...] = (
    Rule(
        "config_secret",
        # .NET appSettings: <add key="DbPassword" value="x" />
        re.compile(
            r"(?i)(?P<head>key\s*=\s*(?P<q1>[\"'])[^\"'<>\n]*(?:pass|pwd|secret|token|api_?key|credential)"
            r"[^\"'<>\n]*(?P=q1)\s+value\s*=\s*(?P<q2>[\"']))(?P<v>[^\"'<>\n]*)(?P=q2)"
        ),
        _xml_value,
        precheck=contains_any("value"),
        screen=re.compile(r"key\s*=\s*[\"']"),
        anchored=True,
    ),
    Rule(
        "cli_secret",
        re.compile(
            r"(?i)(?P<head>--(?:password|passwd|pass|pwd|token|api-?key|secret|client-secret"
            rf"|auth-token|access-token)\s+){_VALUE}"
        ),
        _flagged,
        precheck=contains_any("--"),
        screen=re.compile(r"--(?:pass|pwd|token|api|secret|client|auth|access)"),
        anchored=True,
    ),
    Rule(
        "cli_user_password",
        # curl -u user:password
        re.compile(r"(?<![\w-])(?P<head>(?:-u|--user)\s+[^\s:'\"]+:)(?!\[)[^\s'\"]+"),
        lambda m: m.group("head") + SECRET,
        precheck=contains_any("-u"),
        screen=re.compile(r"-u\s|--user\s"),
        anchored=True,
    ),
    Rule(
        "spaced_secret",
        # aws configure set aws_secret_access_key VALUE: a compound secret name, a space, a long value
        re.compile(
            r"(?i)(?P<head>_(?:secret(?:_access)?_key|secret|password|passwd|token|api_?key)[ \t]+)"
            r"(?P<bare>(?!\[)[^\s\"']{12,})"
        ),
        lambda m: m.group("head") + SECRET if _letters_and_digits(m.group("bare")) else None,
        precheck=contains_any("_secret", "_pass", "_token", "_api"),
        screen=re.compile(r"_(?:secret|pass|token|api)"),
        anchored=True,
    ),
    Rule(
        "password_phrase",
        re.compile(
            r"(?i)\b(?:(?P<pp>passphrase\s*[:=]\s*+)(?P<line>(?!\[)[^\n,;]+)"
            r"|(?P<head>(?:password|passwd|passphrase)(?:\s+(?:is|was))?\s+)"
            r"(?:\"(?P<dq>(?!\[)[^\"\s]+)\"|'(?P<sq>(?!\[)[^'\s]+)'|(?P<edq>(?!))|(?P<bare>[^\s\"',;]+)))"
        ),
        _said,
        precheck=contains_any("passw", "passp"),
        screen=re.compile(r"pass(?:word|wd|phrase)"),
        anchored=True,
    ),
    Rule(
        "secret_assignment",
        re.compile(rf"(?i)(?P<name>{SECRET_WORDS})(?P<sep>\\?[\"']?\s*(?::=|=>|[:=])\s*){_VALUE}"),
        _assigned,
        precheck=_assignment_precheck,
        screen=re.compile(_SECRET_WORDS_SCREEN),
        anchored=True,
    ),
)
