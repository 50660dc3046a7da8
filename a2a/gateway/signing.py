"""Signed agent cards: one detached JWS per card, and the public key served as a JWKS.

Each card the gateway serves carries one entry in ``signatures``: a JWS (RFC 7515) whose
payload is the card as a verifier canonicalizes it
(:func:`a2a.external.signature.canonical_card`: the RFC 8785 JSON of the card's 1.0 form
without ``signatures`` and without empty strings, lists and objects, as the official SDK
signs and verifies). The payload is detached: the card holds the base64url protected
header and signature only.

The key decides the algorithm: EC P-256, P-384, P-521 sign ``ES256``, ``ES384``,
``ES512``; Ed25519 ``EdDSA``; RSA (2048 bits or more) ``RS256``. The protected header is
``{"alg", "typ": "JOSE", "kid", "jku"}``: ``kid`` is the operator's key id, else the key's
RFC 7638 thumbprint; ``jku`` is the gateway's ``/.well-known/jwks.json``, which serves the
public key. A verifier should pin a key it got out of band (that JWKS, fetched once from
an origin it trusts), never the key a card's own ``jku`` points to.

ECDSA signatures are randomized, so :class:`SignedCards` signs a card once per content and
serves the same bytes until the card changes; its ETag depends on the unsigned card and
the key, so it is stable across restarts and replicas sharing the key.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import jwt
import msgspec
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from transports.a2a_http.card import AgentCard, AgentCardSignature

from ..external.signature import canonical_card
from .cards import card_body

__all__ = ["JWKS_PATH", "CardSigner", "SignedCards"]

JWKS_PATH = "/.well-known/jwks.json"
"""Where the gateway serves the public key of its card signatures (with ``--card-key``)."""

SigningKey = ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey

_KEY_TYPES = (ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey, rsa.RSAPrivateKey)
_KIND = "EC, Ed25519 or RSA"
_CURVES = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x"), "RSA": ("e", "kty", "n")}
MIN_RSA_BITS = 2048


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _algorithm(key: object) -> str:
    """The JWS algorithm of ``key``; ValueError for a key type or size the gateway does not sign with."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        alg = _CURVES.get(key.curve.name)
        if alg is None:
            raise ValueError(f"EC curve {key.curve.name} is not P-256, P-384 or P-521")
        return alg
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < MIN_RSA_BITS:
            raise ValueError(f"an RSA key of {key.key_size} bits is too short (at least {MIN_RSA_BITS})")
        return "RS256"
    raise ValueError(f"{_KIND} keys sign cards, not {type(key).__name__.lstrip('_')}")


def _public_jwk(key: SigningKey) -> dict[str, Any]:
    public = key.public_key()
    if isinstance(public, ec.EllipticCurvePublicKey):
        jwk = ECAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(public, ed25519.Ed25519PublicKey):
        jwk = OKPAlgorithm.to_jwk(public, as_dict=True)
    else:
        jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
    return dict(jwk)


def thumbprint(jwk: dict[str, Any]) -> str:
    """The RFC 7638 SHA-256 thumbprint of a public JWK (base64url)."""
    members = {name: jwk[name] for name in _THUMBPRINT_MEMBERS[jwk["kty"]]}
    return _b64(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


class CardSigner:
    """Signs agent cards with one private key (module docstring).

    Args:
        key: an EC (P-256, P-384, P-521), Ed25519 or RSA (2048 bits or more) private key.
        kid: the ``kid`` of the protected header (default: the key's RFC 7638 thumbprint).

    Raises:
        ValueError: a key of another type, curve or size; an empty ``kid``.
    """

    def __init__(self, key: SigningKey, kid: str | None = None) -> None:
        self.algorithm = _algorithm(key)
        if kid is not None and not kid.strip():
            raise ValueError("the card key id is empty")
        self._key = key
        jwk = _public_jwk(key)
        self.thumbprint = thumbprint(jwk)
        self.kid = kid if kid is not None else self.thumbprint
        self.jwk: dict[str, Any] = {**jwk, "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    @classmethod
    def from_file(cls, path: str | Path, kid: str | None = None) -> CardSigner:
        """The signer of the unencrypted PEM private key in ``path``; ValueError naming the file."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read the card key {path}: {exc.strerror or exc}") from None
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise ValueError(f"{path} is not an unencrypted PEM private key: {exc}") from None
        if not isinstance(key, _KEY_TYPES):
            raise ValueError(f"{path}: {_KIND} keys sign cards, not {type(key).__name__.lstrip('_')}")
        try:
            return cls(key, kid)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def jwks(self) -> dict[str, Any]:
        """The JWK Set of the public key, as served at :data:`JWKS_PATH`."""
        return {"keys": [self.jwk]}

    def signature(self, card: AgentCard, jku: str | None = None) -> AgentCardSignature:
        """A detached JWS over ``card``'s canonical form (its own ``signatures`` left out)."""
        headers: dict[str, Any] = {"typ": "JOSE", "kid": self.kid}
        if jku is not None:
            headers["jku"] = jku
        token = jwt.PyJWS().encode(canonical_card(card), self._key, algorithm=self.algorithm, headers=headers)
        protected, _, signature = token.split(".")
        return AgentCardSignature(protected=protected, signature=signature)


class SignedCards:
    """Card bodies and ETags as served; with a signer, each card content is signed once.

    Up to ``size`` signed bodies are kept (least recently served dropped first); a card
    whose content is unchanged is served with the same signature and ETag.
    """

    def __init__(self, signer: CardSigner | None = None, jku: str | None = None, size: int = 256) -> None:
        self.signer = signer
        self.jku = jku
        self.size = size
        self._bodies: OrderedDict[bytes, tuple[bytes, str]] = OrderedDict()

    def __call__(self, card: AgentCard) -> tuple[bytes, str]:
        """The JSON body of ``card`` and its ETag (signed when there is a signer)."""
        unsigned, etag = card_body(card)
        if self.signer is None:
            return unsigned, etag
        digest = hashlib.sha256(unsigned).digest()
        found = self._bodies.get(digest)
        if found is not None:
            self._bodies.move_to_end(digest)
            return found
        signed = msgspec.structs.replace(card, signatures=[self.signer.signature(card, self.jku)])
        tag = hashlib.sha256(unsigned + b"\n" + self.signer.thumbprint.encode()).hexdigest()[:32]
        found = card_body(signed)[0], f'W/"{tag}"'
        self._bodies[digest] = found
        if len(self._bodies) > self.size:
            self._bodies.popitem(last=False)
        return found
