"""User grants: which user a call acts for, signed by a trusted entry point.

An entry point (the CLI with an operator key, an HTTP gateway that authenticated the
user) signs a short token naming the user; the call carries it in ``userGrant`` down the
whole chain, and every callee verifies it before it believes ``userId``. Agents pass the
grant on unchanged: they cannot sign one, so they cannot act for another user, and a
call that drops the grant has no user (see the security model in ``docs/operations/security.md``).

Token: ``a2a1.<payload>.<signature>``, both base64url without padding; the payload is
JSON ``{"sub": userId, "iss": <entry point public NKey>, "iat": ms, "exp": ms, "cnv":
conversationId}`` and the signature is Ed25519 (an NKey user key, as NATS uses) over
``a2a1.<payload>``. A grant with ``cnv`` is good for that conversation only (every call of
one chain shares its conversation), so an agent that saw it cannot reuse it elsewhere.
"""

from __future__ import annotations

import base64
import binascii
import os
import time
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

import msgspec
import nacl.exceptions
import nacl.signing
import nkeys

from bus.errors import PermissionDenied

__all__ = ["GRANT_TTL", "GrantIssuer", "GrantVerifier", "UserGrant", "new_signing_key", "public_key_bytes"]

GRANT_TTL = 3600.0
"""Seconds a grant issued by :class:`GrantIssuer` stays valid."""
_VERSION = "a2a1"
_MAX_TOKEN = 2048
_CACHE_SIZE = 10_000


class UserGrant(msgspec.Struct, frozen=True):
    sub: str
    """The user."""
    iss: str
    """Public key of the entry point that signed it."""
    iat: int
    exp: int
    """Milliseconds since the epoch."""
    cnv: str | None = None
    """The conversation the grant is good for; None: any conversation of the user."""


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(UserGrant)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def public_key_bytes(key: str) -> bytes:
    """The 32 raw bytes of a public user NKey (``U...``).

    Raises:
        ValueError: not a valid public user NKey.
    """
    try:
        raw = base64.b32decode(key.strip())
    except (binascii.Error, ValueError):
        raise ValueError(f"invalid public key {key[:60]!r}: not an NKey") from None
    if len(raw) != 35 or raw[0] != nkeys.PREFIX_BYTE_USER:
        raise ValueError(f"invalid public key {key[:60]!r}: expected a public user NKey (U...)")
    if nkeys.crc16_checksum(raw[:-2]) != raw[-2:]:
        raise ValueError(f"invalid public key {key[:60]!r}: bad checksum")
    return raw[1:33]


def new_signing_key() -> tuple[str, str]:
    """A new entry-point key: (seed for ``A2A_GRANT_SEED``, public key for ``A2A_GRANT_KEYS``)."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()
    return seed, GrantIssuer(seed).public_key


def _read_seed(seed: str) -> bytes:
    """A seed given inline (``SU...``) or as the path of a file holding one."""
    text = seed.strip()
    if not text.startswith("SU"):
        try:
            text = Path(text).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read the grant signing key {seed[:60]!r}: {exc.strerror}") from None
    return text.encode()


class GrantIssuer:
    """Signs grants as one entry point; a grant per user is reused for half its lifetime."""

    def __init__(self, seed: str, *, ttl: float = GRANT_TTL) -> None:
        try:
            self._key = nkeys.from_seed(_read_seed(seed))
        except nkeys.NkeysError as exc:
            raise ValueError(f"invalid grant signing key: {exc!r}") from None
        self.public_key = self._key.public_key.decode()
        self.ttl = ttl
        self._issued: dict[str, tuple[str, float]] = {}

    def grant(self, user_id: str, conversation_id: str | None = None) -> str:
        """A grant for ``user_id``, in ``conversation_id`` only when given."""
        now = time.time()
        key = f"{user_id}\0{conversation_id or ''}"
        cached = self._issued.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        iat = int(now * 1000)
        grant = UserGrant(sub=user_id, iss=self.public_key, iat=iat, exp=iat + int(self.ttl * 1000))
        payload = _encoder.encode(msgspec.structs.replace(grant, cnv=conversation_id))
        signed = f"{_VERSION}.{_b64(payload)}"
        token = f"{signed}.{_b64(self._key.sign(signed.encode()))}"
        if len(self._issued) > _CACHE_SIZE:
            self._issued.clear()
        self._issued[key] = (token, now + self.ttl / 2)
        return token


class GrantVerifier:
    """Verifies grants signed by trusted entry points; a verified token is remembered until it expires.

    Verifying a signature costs tens of microseconds; each grant pays it once per process,
    then a dictionary lookup per call.
    """

    def __init__(self, trusted: Iterable[str]) -> None:
        self._keys = {
            key.strip(): nacl.signing.VerifyKey(public_key_bytes(key)) for key in trusted if key.strip()
        }
        if not self._keys:
            raise ValueError("no trusted grant keys given")
        self._verified: OrderedDict[str, UserGrant] = OrderedDict()
        self.refused = 0

    def verify(self, token: str) -> UserGrant:
        """The grant a token carries (its user, its conversation).

        Raises:
            PermissionDenied: malformed, signed by an untrusted key, forged or expired.
        """
        now = int(time.time() * 1000)
        grant = self._verified.get(token)
        if grant is None:
            grant = self._check(token)
            self._verified[token] = grant
            if len(self._verified) > _CACHE_SIZE:
                self._verified.popitem(last=False)
        if grant.exp <= now:
            self._verified.pop(token, None)
            self.refused += 1
            raise PermissionDenied("the user grant has expired", details={"reason": "grant expired"})
        return grant

    def _check(self, token: str) -> UserGrant:
        version, _, rest = token.partition(".")
        payload_b64, _, signature_b64 = rest.partition(".")
        try:
            if version != _VERSION or len(token) > _MAX_TOKEN or not signature_b64:
                raise ValueError("malformed")
            grant = _decoder.decode(_unb64(payload_b64))
            key = self._keys.get(grant.iss)
            if key is None:
                raise ValueError("signed by an untrusted key")
            key.verify(f"{version}.{payload_b64}".encode(), _unb64(signature_b64))
        except nacl.exceptions.BadSignatureError:
            self.refused += 1
            raise PermissionDenied(
                "the user grant's signature is invalid", details={"reason": "forged"}
            ) from None
        except (ValueError, binascii.Error, msgspec.MsgspecError, UnicodeDecodeError, TypeError) as exc:
            self.refused += 1
            raise PermissionDenied(
                f"invalid user grant: {str(exc)[:200]}", details={"reason": "invalid grant"}
            ) from None
        return grant
