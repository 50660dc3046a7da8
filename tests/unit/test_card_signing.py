"""The gateway's card signatures: each key type signs, the project's own verifier checks them.

The verifier is ``a2a.external.signature.card_signature`` (what ``a2a attach --card-key``
runs), given the public key as a PEM file, as an operator would.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import jwt
import msgspec
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa

from a2a.external.signature import card_signature, load_card_key
from a2a.gateway.cards import card_body
from a2a.gateway.signing import CardSigner, SignedCards, thumbprint
from transports.a2a_http import AgentCard, parse_agent_card
from transports.a2a_http.card import AgentCapabilities, AgentExtension, AgentInterface, AgentSkill

KEYS = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ES384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
}


def card(description: str = "Échos — \U0001f600") -> AgentCard:
    return AgentCard(
        name="echo",
        description=description,
        supported_interfaces=[
            AgentInterface(url="http://gw/agents/echo", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url="http://gw/agents/echo", protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extensions=[AgentExtension(uri="urn:x", params={"n": 1, "f": 1.5, "none": None, "empty": []})],
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="echo", description="", tags=["a"])],
    )


def write_pem(path: Path, key: Any, *, private: bool) -> Path:
    if private:
        data = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    else:
        data = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    path.write_bytes(data)
    return path


def served(body: bytes) -> AgentCard:
    """The card a client reads from a served body (1.0 and 0.3 keys)."""
    return parse_agent_card(json.loads(body))


def header_of(signed: AgentCard) -> dict[str, Any]:
    protected = signed.signatures[0].protected
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    return decoded


@pytest.mark.parametrize("alg", list(KEYS))
def test_each_key_type_signs_what_the_verifier_checks(tmp_path: Path, alg: str) -> None:
    key = KEYS[alg]()
    signer = CardSigner.from_file(write_pem(tmp_path / "card.pem", key, private=True), kid="k1")
    public = load_card_key(write_pem(tmp_path / "card.pub", key, private=False))
    assert signer.algorithm == alg
    body, _ = SignedCards(signer, jku="http://gw/.well-known/jwks.json")(card())
    signed = served(body)
    assert len(signed.signatures) == 1
    assert header_of(signed) == {
        "alg": alg,
        "typ": "JOSE",
        "kid": "k1",
        "jku": "http://gw/.well-known/jwks.json",
    }
    assert card_signature(signed, [public]) == "verified"
    # The public key as served in the JWKS verifies it too.
    (jwk,) = signer.jwks()["keys"]
    assert (jwk["kid"], jwk["alg"], jwk["use"]) == ("k1", alg, "sig")
    assert card_signature(signed, [jwt.PyJWK(jwk).key]) == "verified"
    assert "d" not in jwk and "p" not in jwk  # no private member


@pytest.mark.parametrize("alg", ["ES256", "EdDSA", "RS256"])
def test_a_tampered_card_fails(tmp_path: Path, alg: str) -> None:
    key = KEYS[alg]()
    signer = CardSigner(key)
    public = key.public_key()
    signed = served(SignedCards(signer)(card())[0])
    tampered = msgspec.structs.replace(signed, description="Échos — changed")
    assert card_signature(tampered, [public]) == "invalid"
    moved = msgspec.structs.replace(
        signed,
        supported_interfaces=[
            msgspec.structs.replace(i, url="http://evil/agents/echo") for i in signed.supported_interfaces
        ],
    )
    assert card_signature(moved, [public]) == "invalid"
    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    assert card_signature(signed, [other]) == "invalid"


def test_the_default_kid_is_the_keys_thumbprint() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    signer = CardSigner(key)
    assert signer.kid == signer.thumbprint == thumbprint(signer.jwk)
    assert header_of(served(SignedCards(signer)(card())[0]))["kid"] == signer.kid
    # RFC 7638 hashes the required members only, in lexicographic order.
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": signer.jwk["x"]}, separators=(",", ":"))
    expected = base64.urlsafe_b64encode(hashlib.sha256(members.encode()).digest()).rstrip(b"=")
    assert signer.thumbprint == expected.decode()


def test_a_card_is_signed_once_per_content() -> None:
    signer = CardSigner(ec.generate_private_key(ec.SECP256R1()))  # ECDSA: every signature differs
    cards = SignedCards(signer, size=2)
    first = cards(card())
    assert cards(card()) == first  # same bytes, same ETag
    changed = cards(card("another"))
    assert changed[1] != first[1]
    unsigned_etag = card_body(card())[1]
    assert first[1] != unsigned_etag  # the key is part of the ETag
    cards(card("a third"))  # evicts the first (size 2)
    again = cards(card())
    assert again[1] == first[1]  # the ETag follows the content and key, not the signature
    assert served(again[0]).signatures[0].signature != served(first[0]).signatures[0].signature


def test_without_a_signer_cards_are_unsigned() -> None:
    assert SignedCards()(card()) == card_body(card())


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: ec.generate_private_key(ec.SECP256K1()), "secp256k1 is not P-256"),
        (lambda: rsa.generate_private_key(public_exponent=65537, key_size=1024), "1024 bits is too short"),
        (ed448.Ed448PrivateKey.generate, "sign cards, not Ed448PrivateKey"),
        (
            lambda: dsa.generate_private_key(key_size=2048),
            "sign cards, not DSAPrivateKey",
        ),
    ],
)
def test_unsupported_keys_are_refused_naming_the_file(tmp_path: Path, make: Any, match: str) -> None:
    path = write_pem(tmp_path / "bad.pem", make(), private=True)
    with pytest.raises(ValueError, match=match) as info:
        CardSigner.from_file(path)
    assert str(path) in str(info.value)


def test_unreadable_or_encrypted_keys_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read the card key"):
        CardSigner.from_file(tmp_path / "missing.pem")
    public = write_pem(tmp_path / "public.pem", ed25519.Ed25519PrivateKey.generate(), private=False)
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        CardSigner.from_file(public)
    encrypted = tmp_path / "encrypted.pem"
    encrypted.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pw"),
        )
    )
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        CardSigner.from_file(encrypted)
    with pytest.raises(ValueError, match="empty"):
        CardSigner(ed25519.Ed25519PrivateKey.generate(), kid=" ")
