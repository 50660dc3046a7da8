"""Checking an agent card's signatures against keys the operator trusts.

The official SDK signs a card with a detached JWS: the payload is the RFC 8785 (JCS)
canonical JSON of the card's 1.0 form without ``signatures`` and with every empty string,
list and object removed (recursively; ``false`` and ``0`` stay), and each signature holds
the JWS's base64url ``protected`` header and ``signature``. A card verifies when one of its
signatures checks out with one of the given public keys, under the asymmetric algorithm its
header names.

The state is ``"verified"``, ``"invalid"`` (signatures, none of which verify), or
``"unsigned"``: no signatures, or no key to check them with (a signature nobody can check
proves nothing). Keys come from the operator only; a ``jku`` URL in the header is not
fetched, since a key found through the card would vouch for nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization

from discovery.profile import CardSignature
from transports.a2a_http import AgentCard, to_builtins

__all__ = ["canonical_card", "card_signature", "load_card_key"]

ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""Asymmetric JWS algorithms accepted; an HMAC key would be a shared secret, not a public key."""
MAX_DEPTH = 128


def load_card_key(path: str | Path) -> Any:
    """A PEM public key from ``path``; ValueError naming the file when it holds none."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the card key {path}: {exc.strerror or exc}") from None
    try:
        return serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not a PEM public key: {exc}") from None


def _clean(value: Any, depth: int = 1) -> Any:
    """``value`` without empty strings, lists and objects (None when it is itself empty)."""
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        raise ValueError(f"the card nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        kept = {k: c for k, v in value.items() if (c := _clean(v, depth + 1)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [c for v in value if (c := _clean(v, depth + 1)) is not None]
        return items or None
    if value == "" or value is None:
        return None
    return value


def _number(value: float) -> str:
    """A float as ECMAScript writes it (RFC 8785 section 3.2.2.3), for the values cards hold."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a JSON number")
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent):+d}" if exponent else text


def _jcs(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        out.append("{")
        for i, key in enumerate(sorted(value, key=lambda k: str(k).encode("utf-16-be"))):
            out.append("," if i else "")
            out.append(json.dumps(str(key), ensure_ascii=False) + ":")
            _jcs(value[key], out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            out.append("," if i else "")
            _jcs(item, out)
        out.append("]")
    elif isinstance(value, bool) or value is None:
        out.append(json.dumps(value))
    elif isinstance(value, int):
        if abs(value) > 2**53 - 1:
            raise ValueError(f"{value} has no exact JSON number")
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_number(value))
    else:
        out.append(json.dumps(str(value), ensure_ascii=False))


def canonical_card(card: AgentCard) -> bytes:
    """The bytes a card's signatures sign (module docstring)."""
    body = to_builtins(card)
    body.pop("signatures", None)
    out: list[str] = []
    _jcs(_clean(body) or {}, out)
    return "".join(out).encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _algorithm(protected: str) -> str | None:
    try:
        header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    except (binascii.Error, ValueError):
        return None
    alg = header.get("alg") if isinstance(header, dict) else None
    return alg if isinstance(alg, str) and alg in ALGORITHMS else None


def card_signature(card: AgentCard, keys: Sequence[Any] = ()) -> CardSignature:
    """``"verified"``, ``"invalid"`` or ``"unsigned"`` for ``card`` and the trusted ``keys``."""
    if not card.signatures or not keys:
        return "unsigned"
    try:
        payload = _b64(canonical_card(card))
    except ValueError:
        return "invalid"
    verifier = jwt.PyJWS()
    for signature in card.signatures:
        alg = _algorithm(signature.protected)
        if alg is None:
            continue
        token = f"{signature.protected}.{payload}.{signature.signature}"
        for key in keys:
            try:
                verifier.decode(token, key, algorithms=[alg])
            except (jwt.PyJWTError, ValueError, TypeError):
                continue
            return "verified"
    return "invalid"
