"""The official SDK verifies the gateway's signed cards (``a2a.utils.signing``, a2a-sdk 1.3).

The gateway runs in this process on real nats-server and Redis, signing with each key
type; ``sdk/verify_card.py`` fetches every card with the SDK's ``A2ACardResolver`` and
checks it with ``create_signature_verifier``, the key pinned from the gateway's JWKS.
The SDK's signing module needs PyJWT (its ``signing`` extra), which the SDK venv does not
install: the script is given this environment's PyJWT, the same pure-Python package.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from a2a import Settings
from a2a.gateway import Authenticator, CardSigner
from tests.gateway.agents import echo, front, slow
from tests.gateway.conftest import gateway_on, runtime_serving
from tests.interop.conftest import SDK_DIR

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SCRIPT = SDK_DIR / "verify_card.py"
PATHS = [
    "/.well-known/agent-card.json",
    "/agents/echo/.well-known/agent-card.json",
    "/agents/slow/.well-known/agent-card.json",
]
KEYS = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
}


def pyjwt_dir(tmp_path: Path) -> Path:
    """A directory holding only this environment's ``jwt`` package."""
    holder = tmp_path / "pyjwt"
    holder.mkdir()
    (holder / "jwt").symlink_to(Path(jwt.__file__).parent)
    return holder


def verify(sdk_python: Path, url: str, jwks: str, pyjwt: Path, *extra: str) -> list[dict[str, Any]]:
    argv = [str(sdk_python), "-E", "-s", str(SCRIPT), "--url", url, "--jwks", jwks, "--pyjwt", str(pyjwt)]
    proc = subprocess.run(
        [*argv, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=SDK_DIR,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("alg", list(KEYS))
async def test_the_sdk_verifies_every_card(
    settings: Settings, sdk_python: Path, tmp_path: Path, alg: str
) -> None:
    signer = CardSigner(KEYS[alg](), kid=f"card-{alg}")
    keys = tmp_path / "keys.yaml"
    keys.write_text("alice: key-of-alice\n")  # the cards carry security schemes (and their 0.3 keys)
    pyjwt = pyjwt_dir(tmp_path)
    async with (
        runtime_serving(settings, echo, slow, front) as runtime,
        gateway_on(runtime, auth=Authenticator.from_files(keys), card_signer=signer) as gw,
    ):
        jwks = (await gw.client.get("/.well-known/jwks.json")).text

        def run(*extra: str) -> list[dict[str, Any]]:
            return verify(sdk_python, gw.url, jwks, pyjwt, *extra, *PATHS)

        lines = await anyio.to_thread.run_sync(run)
        expected = {"kid": f"card-{alg}", "jku": f"{gw.url}/.well-known/jwks.json"}
        assert lines == [{"path": p, "verified": True, **expected} for p in PATHS]
        tampered = await anyio.to_thread.run_sync(run, "--tamper")
        assert tampered == [
            {"path": p, "verified": False, "error": "InvalidSignaturesError", **expected} for p in PATHS
        ]
