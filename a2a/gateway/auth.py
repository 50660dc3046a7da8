"""Who is calling the gateway: API keys and bearer tokens (JWT), checked on every request.

The authenticated principal becomes the bus call's user: the gateway signs a user grant
for it (``a2a.core.grants``), so every agent down the chain knows which user the call acts
for, and tasks are visible to their owner only.

- **API keys** come from a YAML or JSON file mapping each user to one key or a list of
  keys, given in the clear or as ``sha256:<hex digest>``; clients send one in the
  ``X-API-Key`` header.
- **Bearer tokens** are JWTs checked against a configured public key or shared secret
  (a PEM file, or a file holding the secret) or a JWKS file (the key is picked by the
  token's ``kid``). ``exp`` and ``sub`` are required; ``aud`` and ``iss`` are checked
  when configured. The principal is ``sub``.

With neither configured the gateway is open: every request acts for ``anonymous``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import yaml

__all__ = ["ANONYMOUS", "API_KEY_HEADER", "AuthError", "Authenticator", "JwtConfig"]

ANONYMOUS = "anonymous"
API_KEY_HEADER = "X-API-Key"
_USER = re.compile(r"^[A-Za-z0-9_.@:/+-]{1,256}$")
_ASYMMETRIC = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
_SYMMETRIC = ["HS256", "HS384", "HS512"]
_MAX_TOKEN = 8192


class AuthError(Exception):
    """The request did not prove who sends it (HTTP 401)."""


@dataclass(frozen=True)
class JwtConfig:
    """How bearer tokens are checked: exactly one of ``key_file``, ``secret_file``, ``jwks_file``."""

    key_file: Path | None = None
    secret_file: Path | None = None
    jwks_file: Path | None = None
    audience: str | None = None
    issuer: str | None = None
    leeway: float = 30.0


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def _load_keys(path: Path) -> dict[bytes, str]:
    """Digest of every key -> its user, from ``{user: key | [keys]}``."""
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"API key file {path}: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"API key file {path}: expected a mapping of user to key(s)")
    keys: dict[bytes, str] = {}
    for user, value in raw.items():
        if not isinstance(user, str) or not _USER.match(user) or user == ANONYMOUS:
            raise ValueError(f"API key file {path}: bad user name {user!r} ('{ANONYMOUS}' is reserved)")
        for key in [value] if isinstance(value, str) else value if isinstance(value, list) else [None]:
            if not isinstance(key, str) or not key:
                raise ValueError(f"API key file {path}: user {user!r} needs a key or a list of keys")
            if key.startswith("sha256:"):
                try:
                    digest = bytes.fromhex(key[7:])
                except ValueError:
                    raise ValueError(f"API key file {path}: bad sha256 digest for {user!r}") from None
                if len(digest) != 32:
                    raise ValueError(f"API key file {path}: bad sha256 digest for {user!r}")
            else:
                digest = _digest(key)
            keys[digest] = user
    return keys


def _load_jwt(c: JwtConfig) -> tuple[list[tuple[str | None, Any]], list[str]]:
    """The keys (with their ids) and algorithms that may sign bearer tokens."""
    given = [p for p in (c.key_file, c.secret_file, c.jwks_file) if p is not None]
    if len(given) != 1:
        raise ValueError("JWT checking needs exactly one of a key file, a secret file or a JWKS file")
    path = given[0]
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"JWT key file {path}: {exc}") from None
    keys: list[tuple[str | None, Any]]
    try:
        if c.jwks_file is not None:
            jwks = jwt.PyJWKSet.from_dict(json.loads(text))
            keys, algorithms = [(k.key_id, k) for k in jwks.keys], _ASYMMETRIC + _SYMMETRIC
        elif c.secret_file is not None:
            secret = text.strip()
            if len(secret) < 32:
                raise ValueError("a shared secret must have at least 32 characters")
            keys, algorithms = [(None, secret)], _SYMMETRIC
        else:
            keys, algorithms = [(None, text)], _ASYMMETRIC
    except (ValueError, jwt.PyJWTError) as exc:
        raise ValueError(f"JWT key file {path}: {exc}") from None
    if not keys:
        raise ValueError(f"JWT key file {path}: no usable key")
    return keys, algorithms


@dataclass
class Authenticator:
    """Checks the credentials of one request and names its principal."""

    api_keys: dict[bytes, str] = field(default_factory=dict)
    jwt_config: JwtConfig | None = None
    jwt_keys: list[tuple[str | None, Any]] = field(default_factory=list)
    """(key id or None, key) of every key that may sign a bearer token."""
    jwt_algorithms: list[str] = field(default_factory=list)

    @classmethod
    def from_files(cls, api_keys: Path | None = None, jwt_config: JwtConfig | None = None) -> Authenticator:
        """Raises ValueError naming the file and the problem."""
        keys, algorithms = _load_jwt(jwt_config) if jwt_config is not None else ([], [])
        return cls(_load_keys(api_keys) if api_keys else {}, jwt_config, keys, algorithms)

    @property
    def open(self) -> bool:
        return not self.api_keys and self.jwt_config is None

    def security_schemes(self) -> dict[str, dict[str, Any]]:
        """The card's ``securitySchemes`` (A2A 1.0 JSON) for what is configured."""
        schemes: dict[str, dict[str, Any]] = {}
        if self.api_keys:
            schemes["apiKey"] = {
                "apiKeySecurityScheme": {
                    "description": "An API key issued by the operator",
                    "location": "header",
                    "name": API_KEY_HEADER,
                }
            }
        if self.jwt_config is not None:
            schemes["bearer"] = {
                "httpAuthSecurityScheme": {
                    "description": "A JWT whose subject is the user",
                    "scheme": "Bearer",
                    "bearerFormat": "JWT",
                }
            }
        return schemes

    def principal(self, headers: Mapping[str, str]) -> str:
        """The user the request acts for.

        Raises:
            AuthError: credentials missing or wrong (the message says which, never why a key failed).
        """
        if self.open:
            return ANONYMOUS
        key = headers.get(API_KEY_HEADER.lower()) or headers.get(API_KEY_HEADER)
        if key is not None and self.api_keys:
            return self._by_key(key)
        authorization = headers.get("authorization") or headers.get("Authorization")
        if authorization is not None and self.jwt_config is not None:
            scheme, _, token = authorization.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return self._by_token(token.strip())
        raise AuthError("authentication required: " + " or ".join(self._accepted()))

    def _accepted(self) -> list[str]:
        accepted = []
        if self.api_keys:
            accepted.append(f"an {API_KEY_HEADER} header")
        if self.jwt_config is not None:
            accepted.append("an Authorization: Bearer <JWT> header")
        return accepted

    def _by_key(self, key: str) -> str:
        digest = _digest(key)
        found: str | None = None
        for known, user in self.api_keys.items():  # constant time per key, whichever matches
            if hmac.compare_digest(known, digest):
                found = user
        if found is None:
            raise AuthError("invalid API key")
        return found

    def _by_token(self, token: str) -> str:
        c = self.jwt_config
        assert c is not None
        if len(token) > _MAX_TOKEN:
            raise AuthError("invalid bearer token: too long")
        try:
            header = jwt.get_unverified_header(token)
            kid = header.get("kid")
            candidates = [k for k_id, k in self.jwt_keys if k_id is None or kid is None or k_id == kid]
            if not candidates:
                raise AuthError("invalid bearer token: unknown key id")
            claims: dict[str, Any] | None = None
            error: jwt.PyJWTError | None = None
            for key in candidates:
                try:
                    claims = jwt.decode(
                        token,
                        key,
                        algorithms=self.jwt_algorithms,
                        audience=c.audience,
                        issuer=c.issuer,
                        leeway=c.leeway,
                        options={"require": ["exp", "sub"], "verify_aud": c.audience is not None},
                    )
                    break
                except (jwt.InvalidSignatureError, jwt.InvalidAlgorithmError, jwt.InvalidKeyError) as exc:
                    error = exc  # not this key (another one, or another type): try the next
            if claims is None:
                raise error or jwt.InvalidSignatureError("signature verification failed")
        except jwt.ExpiredSignatureError:
            raise AuthError("invalid bearer token: expired") from None
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid bearer token: {exc}") from None
        sub = claims.get("sub")
        if not isinstance(sub, str) or not _USER.match(sub) or sub == ANONYMOUS:
            raise AuthError("invalid bearer token: the subject is not a valid user name")
        return sub
