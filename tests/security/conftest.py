"""A nats-server configured by `a2a nats-config` from tests/security/roster.yaml, and its users.

The server runs with exactly the permissions the generated configuration grants; an
attacker is a plain nats-py connection logged in as one of its users.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import nats
import pytest

from a2a import Runtime, Settings
from a2a.cli.nats_config import CLIENTS, password_variable, render_authorization
from a2a.delegation.roster import Roster
from a2a.dev.servers import NatsServer

ROSTER = Path(__file__).with_name("roster.yaml")
NAMESPACE = "sec"
USERS = ["planner", "writer", "reader", *CLIENTS, "auditor", "admin"]


def password(user: str) -> str:
    return f"{user}-pw"


@pytest.fixture(scope="session")
def secured_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of a nats-server whose users and permissions are the generated ones."""
    folder = tmp_path_factory.mktemp("secured-nats")
    (folder / "auth.conf").write_text(render_authorization(Roster.load(ROSTER), NAMESPACE))
    config = folder / "server.conf"
    config.write_text("include auth.conf\n")
    server = NatsServer(config_file=config)
    server.env = {password_variable(user): password(user) for user in USERS}
    with server:
        # The operators' audit reader creates the audit stream; agents may only look at it.
        anyio.run(_create_audit_stream, server.url)
        yield server.url


async def _create_audit_stream(url: str) -> None:
    async with Runtime(as_user(url, "auditor")) as rt:
        assert await rt.audit.ensure_stream()


def as_user(url: str, user: str, redis_url: str | None = None, **extra: Any) -> Settings:
    """Settings of a runtime logged in as ``user`` on the secured server."""
    return Settings(
        nats_url=url,
        redis_url=redis_url,
        namespace=NAMESPACE,
        nats_user=user,
        nats_password=password(user),
        roster=str(ROSTER),
        connect_timeout=3.0,
        default_timeout=5.0,
        **extra,
    )


@dataclass
class Attacker:
    """A raw NATS connection as one user; ``refused`` collects the server's permission errors."""

    nc: Any
    refused: list[str] = field(default_factory=list)

    async def publish(self, subject: str, data: bytes = b"", **kwargs: Any) -> None:
        await self.nc.publish(subject, data, **kwargs)
        await self.nc.flush()


@pytest.fixture
async def attacker(secured_nats: str) -> AsyncIterator[Any]:
    """Connects raw NATS clients as any user: ``await attacker("reader")``."""
    made: list[Attacker] = []

    async def connect(user: str) -> Attacker:
        who = Attacker(None)

        async def on_error(exc: Exception) -> None:
            who.refused.append(str(exc))

        who.nc = await nats.connect(
            secured_nats, user=user, password=password(user), error_cb=on_error, allow_reconnect=False
        )
        made.append(who)
        return who

    yield connect
    for who in made:
        await who.nc.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if os.path.dirname(str(item.fspath)) == os.path.dirname(__file__):
            item.add_marker(pytest.mark.security)
