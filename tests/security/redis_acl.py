"""A real redis-server running the ACL file ``a2a redis-config`` generates, and helpers around it.

Import the fixtures into a test module (``from tests.security.redis_acl import acl_server``).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import Agent, Context
from a2a.cli.nats_config import CLIENTS
from a2a.cli.redis_config import load_functions, password_variable, render_acl
from a2a.delegation.roster import Roster
from a2a.dev.servers import RedisServer
from discovery import AgentCapability, AgentProfile, LocalView, Registry

NAMESPACE = "sec"
AGENTS = ("writer", "reader", "writer-bot")
"""``writer-bot`` starts with ``writer-``: its instance hashes must stay out of the writer's reach."""
USERS = (*AGENTS, *CLIENTS, "admin")
"""Every user of the generated file: the agents', the clients' (``nats_config.CLIENTS``), the admin."""


def passwords(users: Iterable[str]) -> dict[str, str]:
    """A fresh password for each of ``users``, by the variable ``a2a redis-config`` reads."""
    return {password_variable(user): f"{user}-{uuid.uuid4().hex[:8]}" for user in users}


PASSWORDS = passwords(USERS)


def instance(agent: str) -> str:
    """A fresh instance id of ``agent``, as the runtime makes them."""
    return f"{agent}-{uuid.uuid4().hex[:8]}"


def profile(agent_id: str, caps: dict[str, float], *, name: str | None = None) -> AgentProfile:
    return AgentProfile(
        agent_id=agent_id,
        name=name or agent_id.rsplit("-", 1)[0],
        capabilities=[AgentCapability(id=c, proficiency=p) for c, p in caps.items()],
        capacity=4,
    )


@dataclass
class AclServer:
    server: RedisServer
    namespace: str
    passwords: dict[str, str] = field(default_factory=lambda: PASSWORDS)

    def url(self, user: str) -> str:
        password = self.passwords[password_variable(user)]
        return f"redis://{user}:{password}@{self.server.host}:{self.server.port}/0"

    def registry(self, user: str, **kwargs: Any) -> Registry:
        return Registry.from_url(self.url(user), namespace=self.namespace, heartbeat_interval=0.3, **kwargs)


@contextmanager
def running_acl(
    folder: Path, agents: Iterable[str] = AGENTS, namespace: str = NAMESPACE
) -> Iterator[AclServer]:
    """redis-server with the ACL file generated for a roster of ``agents`` in ``namespace``.

    The admin loads the registry's functions, as ``a2a redis-config --load`` does (the
    roster's grants are left out: any agent may advertise anything).
    """
    agents = tuple(agents)
    secrets = PASSWORDS if agents == AGENTS else passwords((*agents, *CLIENTS, "admin"))
    roster = Roster.from_dict({"agents": {agent: {} for agent in agents}})
    acl = folder / "users.acl"
    acl.write_text(render_acl(roster, namespace, passwords=secrets))
    server = RedisServer(acl_file=acl)
    with server:
        deployed = AclServer(server, namespace, secrets)
        anyio.run(load_functions, deployed.url("admin"))
        yield deployed


@pytest.fixture(scope="module")
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclServer]:
    """redis-server with the ACL file generated for ``AGENTS`` (:func:`running_acl`)."""
    with running_acl(tmp_path_factory.mktemp("acl")) as deployed:
        yield deployed


@pytest.fixture
async def admin(acl_server: AclServer) -> AsyncIterator[Registry]:
    """The admin's registry; the namespace is emptied after each test."""
    registry = acl_server.registry("admin")
    yield registry
    await registry.redis.flushall()
    await registry.aclose()


async def until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.01)


async def until_async(predicate: Callable[[], Awaitable[bool]], timeout: float = 3.0) -> None:
    with anyio.fail_after(timeout):
        while not await predicate():
            await anyio.sleep(0.02)


async def ready(view: LocalView) -> None:
    with anyio.fail_after(5):
        await view.ready.wait()


def session_agents(received: list[str] | None = None) -> tuple[Agent, Agent]:
    """``drafter`` drafts one message per turn, ``remote`` answers it (noting each text it is
    sent in ``received``)."""
    drafter, remote = Agent("drafter"), Agent("remote")

    @drafter.action("prompt")
    async def prompt(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return {"draft_message": f"about: {params['objective']}"}

    @remote.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        if received is not None:
            received.append(str(params.get("text")))
        return "noted"

    return drafter, remote
