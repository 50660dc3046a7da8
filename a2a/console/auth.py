"""Who is using the console.

On localhost with no credentials configured, everyone who can reach the port is the one
configured user (``--user``, default ``local``). With tokens configured (``token -> user``)
every request needs one: ``Authorization: Bearer <token>``, or the cookie that
``/login?token=...`` sets (HttpOnly, SameSite=Strict), so the page never holds the token
in script. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from starlette.requests import Request

__all__ = ["COOKIE", "ConsoleAuth"]

COOKIE = "a2a_console"


class ConsoleAuth:
    def __init__(self, user: str = "local", tokens: Mapping[str, str] | None = None) -> None:
        self.user = user
        self.tokens = dict(tokens or {})

    @property
    def open(self) -> bool:
        return not self.tokens

    @property
    def users(self) -> set[str]:
        """Everyone the console acts for."""
        return set(self.tokens.values()) if self.tokens else {self.user}

    def user_for_token(self, token: str) -> str | None:
        found = None
        for known, user in self.tokens.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = user
        return found

    def user_of(self, request: Request) -> str | None:
        """The request's user, or None when credentials are configured and it has none valid."""
        if self.open:
            return self.user
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else request.cookies.get(COOKIE, "")
        return self.user_for_token(token) if token else None


def parse_tokens(text: str) -> dict[str, str]:
    """``token:user,token2:user2`` (the form of ``A2A_CONSOLE_TOKENS``) as a mapping.

    Raises:
        ValueError: an entry without both a token and a user.
    """
    tokens: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        token, sep, user = item.partition(":")
        if not sep or not token or not user:
            raise ValueError("A2A_CONSOLE_TOKENS entries are token:user, separated by commas")
        tokens[token] = user
    return tokens
