"""The runtime connects with the credentials its settings name: token, NKey, TLS."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import nkeys
import pytest

from a2a import Runtime, Settings
from a2a.dev.servers import NatsServer
from a2a.errors import Unavailable
from tests.agents import echo

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def settings(url: str, **auth: Any) -> Settings:
    return Settings(nats_url=url, redis_url=None, namespace="auth", connect_timeout=2.0, **auth)


async def round_trip(s: Settings) -> None:
    async with Runtime(s) as rt:
        await rt.serve(echo)
        assert await rt.call("echo", "echo", {"ok": 1}) == {"ok": 1}


async def test_token_authentication() -> None:
    with NatsServer(extra_args=["--auth", "s3cret-token"]) as server:
        await round_trip(settings(server.url, nats_token="s3cret-token"))
        with pytest.raises(Unavailable, match="cannot connect"):
            async with Runtime(settings(server.url, nats_token="wrong")):
                pass


async def test_nkey_authentication(tmp_path: Path) -> None:
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()
    public = nkeys.from_seed(seed.encode()).public_key.decode()
    config = tmp_path / "nkey.conf"
    config.write_text(f'authorization {{ users = [ {{ nkey: "{public}" }} ] }}\n')
    with NatsServer(config_file=config) as server:
        await round_trip(settings(server.url, nats_nkey_seed=seed))
        other = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()
        with pytest.raises(Unavailable):
            async with Runtime(settings(server.url, nats_nkey_seed=other)):
                pass


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command to make test certificates"
)
async def test_tls_with_a_private_ca(tmp_path: Path) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "1", "-subj", "/CN=a2a-test-ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=localhost")  # fmt: skip
    (tmp_path / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "1", "-extfile", "san.ext")  # fmt: skip
    tls = ["--tls", "--tlscert", str(tmp_path / "server.pem"), "--tlskey", str(tmp_path / "server.key")]
    with NatsServer(extra_args=tls) as server:
        url = f"tls://127.0.0.1:{server.port}"
        await round_trip(settings(url, nats_tls_ca=str(tmp_path / "ca.pem")))
        with pytest.raises(Unavailable):  # the system CAs do not trust this server
            async with Runtime(settings(url)):
                pass
