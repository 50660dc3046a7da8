"""Signed cards over HTTP: every card the gateway serves verifies with its key (``--card-key``).

The cards are fetched from a real gateway and checked by the project's own verifier
(``a2a.external.signature.card_signature``, what ``a2a attach --card-key`` runs) with the
public key in a PEM file, and with the key the gateway serves at ``/.well-known/jwks.json``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import jwt
import msgspec
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from a2a import Settings
from a2a.external.signature import card_signature, load_card_key
from a2a.gateway import Authenticator, CardSigner, GatewayConfig
from transports.a2a_http import AgentCard, parse_agent_card

from .agents import newcomer
from .conftest import AGENTS, Gateway, gateway_on, runtime_serving

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

GATEWAY_CARD = "/.well-known/agent-card.json"
JWKS = "/.well-known/jwks.json"
KEYS = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
}


def card_path(agent: str) -> str:
    return f"/agents/{agent}{GATEWAY_CARD}"


def pem_files(tmp_path: Path, key: Any) -> tuple[Path, Path]:
    private, public = tmp_path / "card.pem", tmp_path / "card.pub.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, spki))
    return private, public


def protected_header(card: AgentCard) -> dict[str, Any]:
    protected = card.signatures[0].protected
    header: dict[str, Any] = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    return header


async def fetch(gw: Gateway, path: str) -> AgentCard:
    r = await gw.client.get(path)
    assert r.status_code == 200, r.text
    return parse_agent_card(r.json())


@pytest.fixture(params=list(KEYS))
async def signed(
    request: pytest.FixtureRequest, settings: Settings, tmp_path: Path
) -> AsyncIterator[tuple[Gateway, Any, str]]:
    """A gateway signing with a key of each type, the public key (from its PEM file), the algorithm."""
    alg = request.param
    private, public = pem_files(tmp_path, KEYS[alg]())
    signer = CardSigner.from_file(private, kid="gateway-card-1")
    keys = tmp_path / "keys.yaml"
    keys.write_text("alice: key-of-alice\n")  # cards with security schemes
    async with (
        runtime_serving(settings, *AGENTS) as runtime,
        gateway_on(runtime, auth=Authenticator.from_files(keys), card_signer=signer) as gw,
    ):
        yield gw, load_card_key(public), alg


async def test_every_card_served_verifies(signed: tuple[Gateway, Any, str]) -> None:
    gw, public, alg = signed
    jwks = (await gw.client.get(JWKS)).json()
    (jwk,) = jwks["keys"]
    assert (jwk["kid"], jwk["alg"], jwk["use"]) == ("gateway-card-1", alg, "sig")
    served_key = jwt.PyJWK(jwk).key
    for path in [GATEWAY_CARD, *(card_path(a.name) for a in AGENTS)]:
        card = await fetch(gw, path)
        assert len(card.signatures) == 1, path
        assert protected_header(card) == {
            "alg": alg,
            "typ": "JOSE",
            "kid": "gateway-card-1",
            "jku": f"{gw.url}{JWKS}",
        }
        assert card_signature(card, [public]) == "verified", path
        assert card_signature(card, [served_key]) == "verified", path
        assert card.security_schemes  # the signature covers them too
        tampered = msgspec.structs.replace(card, name=card.name + "x")
        assert card_signature(tampered, [public]) == "invalid", path


async def test_a_card_keeps_its_signature_and_etag_until_it_changes(
    signed: tuple[Gateway, Any, str], settings: Settings
) -> None:
    gw, public, _ = signed
    first = await gw.client.get(GATEWAY_CARD)
    again = await gw.client.get(GATEWAY_CARD)
    assert again.content == first.content  # signed once, not per request
    assert again.headers["etag"] == first.headers["etag"]
    cached = await gw.client.get(GATEWAY_CARD, headers={"If-None-Match": first.headers["etag"]})
    assert cached.status_code == 304

    async with runtime_serving(settings, newcomer):
        with anyio.fail_after(5):
            while (during := await gw.client.get(GATEWAY_CARD)).content == first.content:
                await anyio.sleep(0.05)
        assert during.headers["etag"] != first.headers["etag"]
        card = parse_agent_card(during.json())
        assert "arriving" in {s.id for s in card.skills}
        assert card_signature(card, [public]) == "verified"
        newcomer_card = await fetch(gw, card_path("newcomer"))
        assert card_signature(newcomer_card, [public]) == "verified"
    with anyio.fail_after(5):
        while (after := await gw.client.get(GATEWAY_CARD)).headers["etag"] != first.headers["etag"]:
            await anyio.sleep(0.05)
    assert card_signature(parse_agent_card(after.json()), [public]) == "verified"


async def test_the_origin_agent_card_is_signed(settings: Settings, tmp_path: Path) -> None:
    private, public = pem_files(tmp_path, KEYS["ES256"]())
    signer = CardSigner.from_file(private)
    config = GatewayConfig(default_agent="echo", origin_card="agent", default_timeout=10)
    async with (
        runtime_serving(settings, *AGENTS) as runtime,
        gateway_on(runtime, config=config, card_signer=signer) as gw,
    ):
        card = await fetch(gw, GATEWAY_CARD)
        assert card.name == "echo"
        assert protected_header(card)["kid"] == signer.thumbprint
        assert card_signature(card, [load_card_key(public)]) == "verified"


async def test_an_unsigned_gateway_serves_no_signatures_and_no_jwks(gateway: Gateway) -> None:
    card = await fetch(gateway, GATEWAY_CARD)
    assert card.signatures == []
    assert (await gateway.client.get(JWKS)).status_code == 404
