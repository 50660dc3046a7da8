"""Fetch agent cards and check their signatures with the public ``a2a-sdk`` 1.3; runs only in the SDK venv.

    verify_card.py --url BASE --jwks JWKS_JSON [--tamper] PATH...

Each card is fetched by the SDK's ``A2ACardResolver`` with a ``signature_verifier`` made by
``a2a.utils.signing.create_signature_verifier``; its key provider looks the ``kid`` up in
the JWK Set given on the command line (the key is pinned, never fetched from the ``jku``).
With ``--tamper`` the card's description is changed before verifying.

Prints one line per path: ``{"path", "verified": true}``, or ``{"path", "verified": false,
"error": <exception class>, "kid", "jku"}``. ``a2a.utils.signing`` needs PyJWT (the SDK's
``signing`` extra); ``--pyjwt DIR`` puts a directory holding it on ``sys.path``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--jwks", required=True)
    parser.add_argument("--pyjwt")
    parser.add_argument("--tamper", action="store_true")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if args.pyjwt:
        sys.path.append(args.pyjwt)

    import httpx
    from a2a.client import A2ACardResolver
    from a2a.types.a2a_pb2 import AgentCard
    from a2a.utils.signing import SignatureVerificationError, create_signature_verifier
    from jwt import PyJWK

    keys = {jwk["kid"]: PyJWK(jwk) for jwk in json.loads(args.jwks)["keys"]}
    asked: dict[str, Any] = {}

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        asked.update(kid=kid, jku=jku)
        return keys[kid or ""]

    check = create_signature_verifier(key_provider, ["ES256", "EdDSA", "RS256"])

    def verifier(card: AgentCard) -> None:
        if args.tamper:
            card.description += " (changed)"
        check(card)

    async with httpx.AsyncClient(timeout=20) as client:
        resolver = A2ACardResolver(client, args.url)
        for path in args.paths:
            asked.clear()
            try:
                await resolver.get_agent_card(path, signature_verifier=verifier)
            except SignatureVerificationError as exc:
                print(json.dumps({"path": path, "verified": False, "error": type(exc).__name__, **asked}))
            else:
                print(json.dumps({"path": path, "verified": True, **asked}))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
