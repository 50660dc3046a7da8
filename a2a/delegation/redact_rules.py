"""The default redaction rules: what secrets and PII look like in text, and how each is replaced.

A :class:`Rule` is a pattern and its replacement, plus optional quick checks that let it
skip text it cannot match (most text); :data:`DEFAULT_RULES` applies them in order. Each
rule's name is the kind of what it hides, and its marker names that kind too (a marker
after a name that stays, as in ``password=[SECRET]``, is named by it):

    private_key           [PRIVATE_KEY]  PEM private-key blocks, whole (or to the end of a cut-off preview)
    url_credentials       scheme://user:[SECRET]@host (the user and the host stay)
    webhook_url           https://hooks.slack.com/services/[WEBHOOK] (and Discord webhooks)
    bearer_token          Bearer [TOKEN]
    jwt                   [TOKEN]        three base64url parts starting eyJ
    api_key               [API_KEY]      AWS access key ids (AKIA/ASIA), GitHub, GitLab, Slack,
                                         OpenAI, Anthropic, Stripe (keys and webhook secrets),
                                         Google, npm, Hugging Face, SendGrid, Shopify, Mailgun,
                                         Docker Hub, Vault and PyPI tokens
    authorization_header  Authorization: Basic [SECRET] (any scheme kept)
    cookie_header         Cookie: [SECRET] / Set-Cookie: [SECRET] (name=value pairs, to the end of the line)
    config_secret         <add key="DbPassword" value="[SECRET]" />
    cli_secret            --password [SECRET], --token [SECRET]
    password_phrase       "my password is [SECRET]", "passphrase: [SECRET]"
    secret_assignment     a value after a secret name: password=[SECRET], "api_key": "[SECRET]",
                          aws_secret_access_key = [SECRET], client_secret: [SECRET], ...
    email                 [EMAIL]
    card_number           [CARD]         Luhn checked
    phone                 [PHONE]
"""

from __future__ import annotations

import re

from .redact_base import SECRET, Rule, contains_any, digit_run, luhn_valid
from .redact_names import NAMED_SECRET_RULES

__all__ = ["DEFAULT_RULES", "SECRET", "Rule", "contains_any", "digit_run", "luhn_valid"]


def _header_secret(m: re.Match[str]) -> str | None:
    """Header name kept, and the scheme (``Basic``, ``Digest``) when there is one; a value too
    short to be a credential, or an f-string or template, is code and stays."""
    value = m.group("value")
    if len(value) < 4 or value[0] in "{$<":
        return None
    scheme = m.group("scheme")
    return m.group("head") + (f"{scheme} " if scheme else "") + SECRET


# Words of more than 8 letters that follow "bearer" in prose ("Bearer authentication").
_BEARER_WORD_LIST = (
    "authentication authorization credential credentials mechanism protocol security strategy"
    " standard required optional"
)
_BEARER_WORDS = frozenset(_BEARER_WORD_LIST.split())


def _bearer(m: re.Match[str]) -> str | None:
    token = m.group("token")
    return None if token.lower() in _BEARER_WORDS else f"{m.group(1)} [TOKEN]"


# Where an API key's prefix ends in "-" or "_", found from that (rarer) character.
_API_KEY_SEPARATOR = re.compile(
    r"[-_](?:(?<=sk.)|(?<=[pr]k_)|(?<=gh[pousr]_)|(?<=github_pat_)|(?<=xox[a-z]-)|(?<=xapp-)"
    r"|(?<=glpat-)|(?<=npm_)|(?<=hf_)|(?<=whsec_)|(?<=shp[a-z][a-z]_)|(?<=key-)|(?<=dckr_pat_)"
    r"|(?<=pypi-))"
)
# Prefixes with no "-" or "_", looked for as they are.
_API_KEY_PREFIXES = contains_any("akia", "asia", "aiza", "sg.", "hvs.", "hvb.", "ya29.")


def _api_key_precheck(lowered: str) -> bool:
    if ("-" in lowered or "_" in lowered) and _API_KEY_SEPARATOR.search(lowered) is not None:
        return True
    return _API_KEY_PREFIXES(lowered)


def _phone_digits(number: str) -> bool:
    return 7 <= sum(c.isdigit() for c in number) <= 15


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
        precheck=contains_any("-----begin"),
        screen=re.compile(r"-----begin"),
    ),
    Rule(
        "url_credentials",
        re.compile(
            r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^\s:/?#@\"'<>]*):(?!\[SECRET\]@)[^\s/?#@\"'<>]+@"
        ),
        lambda m: f"{m.group('scheme')}{m.group('user')}:{SECRET}@",
        precheck=contains_any("://"),
        screen=re.compile(r"://"),
    ),
    Rule(
        "webhook_url",
        # The path of a Slack or Discord webhook is its credential.
        re.compile(
            r"(?P<head>https://(?:hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/))(?!\[)[A-Za-z0-9_/-]+"
        ),
        lambda m: m.group("head") + "[WEBHOOK]",
        precheck=contains_any("hooks"),
        screen=re.compile(r"hooks\.slack\.com/|discord(?:app)?\.com/api/webhooks/"),
    ),
    Rule(
        "bearer_token",
        re.compile(r"(?i)\b(bearer)\s+(?P<token>[A-Za-z0-9\-._~+/]{8,}=*)"),
        _bearer,
        precheck=contains_any("bearer"),
        screen=re.compile(r"bearer"),
        anchored=True,
    ),
    Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"),
        "[TOKEN]",
        precheck=contains_any("eyj"),
        screen=re.compile(r"eyj"),
        anchored=True,
    ),
    Rule(
        "api_key",
        re.compile(
            # OpenAI / Anthropic keys need a digit, so that words like "sk-learn-style" survive.
            r"\b(?:sk-(?=[A-Za-z0-9_-]*\d)(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
            r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}"
            r"|(?:AKIA|ASIA)[0-9A-Z]{16}\b"
            r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
            r"|xox[a-z]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
            r"|AIza[0-9A-Za-z_-]{35}|ya29\.[A-Za-z0-9_-]{20,}|glpat-[A-Za-z0-9_-]{20,}"
            r"|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}|pypi-AgE[A-Za-z0-9_-]{50,}"
            r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"
            r"|key-(?=[a-z]*\d)[0-9a-z]{32}\b|dckr_pat_[A-Za-z0-9_-]{20,}|hv[sb]\.[A-Za-z0-9_-]{24,})"
        ),
        "[API_KEY]",
        precheck=_api_key_precheck,
        screen=re.compile(
            r"sk[-_]|[pr]k_|whsec_|akia|asia|aiza|ya29\.|gh[pousr]_|github_pat_|xox[a-z]-|xapp-|glpat-"
            r"|npm_|hf_|pypi-|sg\.|shp(?:at|ss|ca|pa)_|key-|dckr_pat_|hv[sb]\."
        ),
        anchored=True,
    ),
    Rule(
        "authorization_header",
        # "Authorization: Basic x" keeps the scheme; "Bearer [TOKEN]" (done above) is left alone.
        re.compile(
            r"(?i)\b(?P<head>authorization\\?[\"']?\s*[:=]\s*\\?[\"']?)"
            r"(?:(?P<scheme>[A-Za-z][\w-]*)\s+)?+(?!\[)(?P<value>[^\s\"',;\\]+)"
        ),
        _header_secret,
        precheck=contains_any("authorization"),
        screen=re.compile(r"authorization"),
        anchored=True,
    ),
    Rule(
        "cookie_header",
        # A Cookie header's value (name=value pairs) runs to the end of the line or the closing
        # quote. A quote after the name needs one before it: in "a session cookie': list the
        # endpoints" the quote closes a sentence, not a key.
        re.compile(
            r"(?i)\b(?P<head>(?:(?<=[\"'])cookie\\?[\"']|cookie)\s*:\s*+\\?[\"']?)(?!\[)[^\"'\r\n\\]*=[^\"'\r\n\\]*"
        ),
        lambda m: m.group("head") + SECRET,
        precheck=contains_any("cookie"),
        screen=re.compile(r"cookie"),
        anchored=True,
    ),
    *NAMED_SECRET_RULES,
    Rule(
        "email",
        re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
        "[EMAIL]",
        precheck=contains_any("@"),
        screen=re.compile(r"@"),
    ),
    Rule(
        "card_number",
        re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])"),
        "[CARD]",
        accept=luhn_valid,
        precheck=digit_run(13, " -", digits=13),  # luhn_valid: 13 to 19 digits
    ),
    Rule(
        "phone",
        re.compile(
            r"(?<![\w+])(?:"
            r"\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){1,5}"  # +44 20 7946 0958, +1 (415) 555-0132, +33 1 42 68 53 00
            r"|\(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{3,4}"  # (020) 7946 0958
            r"|0\d{2,4}[ .-]\d{3,4}[ .-]\d{3,4}"  # 020 7946 0958
            r"|\d{3}[ .-]\d{3}[ .-]\d{4}"  # 415-555-0132
            r")(?![\w-])"
        ),
        "[PHONE]",
        accept=_phone_digits,
        precheck=digit_run(8, " .-()+", digits=7),  # _phone_digits: 7 to 15
    ),
)
