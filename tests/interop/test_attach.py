"""External A2A agents on the bus: agents built on the official ``a2a-sdk`` attached through the proxy.

Each test attaches an SDK echo server (``sdk/echo_server.py``) to one runtime, on real
nats-server and Redis, and calls it from another runtime, as any agent would: by
capability (the card's skills), through NATS, to the proxy instance, over HTTP to the SDK.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from a2a import Runtime, Settings, by_capability
from a2a.errors import (
    AgentError,
    AgentLost,
    DeadlineExceeded,
    InvalidParams,
    NoCapableAgent,
    NoResponders,
    PermissionDenied,
)
from a2a.external import RemoteAgent, attach, remote_agent
from a2a.external.signature import canonical_card
from discovery import Registry
from tests.interop.conftest import ECHO_SERVER, SdkServer, start_sdk_server, stop_sdk_server
from transports.a2a_http import parse_agent_card

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

Server = Callable[..., SdkServer]


@dataclass
class Bus:
    host: Runtime
    """Serves the attached agents (the proxy instances)."""
    caller: Runtime
    """Calls them over NATS, routing by the registry."""

    def registry(self) -> Registry:
        assert self.caller.view is not None
        return self.caller.view.registry

    def published_trust(self, agent: str) -> float | None:
        """The trust score the agent's instance last published, as the caller's view holds it."""
        entry = self.caller.view.get(self.host.hosts[agent].instance_id) if self.caller.view else None
        return None if entry is None else entry.profile.trust

    async def attach(self, url: str, **options: Any) -> RemoteAgent:
        remote = await remote_agent(url, **options)
        await self.host.serve(remote.agent)
        await self.caller.wait_for_agents([remote.agent.name], timeout=5)
        return remote


@pytest.fixture
async def bus(settings: Settings) -> AsyncIterator[Bus]:
    async with Runtime(settings) as host, Runtime(settings) as caller:
        yield Bus(host, caller)


@pytest.fixture(scope="module")
def cancel_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attach") / "cancel.log"


def logged(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def cancel_lines(log: Path, before: int) -> list[str]:
    """The ``cancel <task id>`` lines the SDK executor wrote after the first ``before`` lines."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines[before:] if line.startswith("cancel ")]


async def cancels_logged(log: Path, before: int, timeout: float = 3.0) -> list[str]:
    """:func:`cancel_lines` once there is one, or after ``timeout`` seconds."""
    with anyio.move_on_after(timeout):
        while not cancel_lines(log, before):
            await anyio.sleep(0.02)
    return cancel_lines(log, before)


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "polling"])
async def test_a_call_by_capability_reaches_the_sdk_agent(
    bus: Bus, sdk_echo_server: Server, streaming: bool
) -> None:
    url = sdk_echo_server(skills=["echo", "summarize text"], streaming=streaming, name="Echo Agent")
    remote = await bus.attach(url, base_trust=0.6)
    agent = remote.agent
    assert agent.name == "Echo-Agent" and remote.peer.streaming is streaming
    assert sorted(agent.actions) == ["echo", "send", "summarize text"]
    assert [(c.id, c.proficiency) for c in agent.capabilities] == [("echo", 1.0), ("summarize_text", 1.0)]
    external = agent.metadata["external"]
    assert (external["binding"], external["protocolVersion"], external["signature"]) == (
        "JSONRPC",
        "1.0",
        "unsigned",
    )

    caller = bus.caller
    assert await caller.call(by_capability("echo"), "echo", {"text": "hello, world"}) == "hello, world"
    data = {"query": "café ☕", "n": 3, "nested": {"list": [1, "two", None, True]}}
    assert await caller.call(by_capability("summarize_text"), "summarize text", data) == {
        "action": "summarize text",
        "params": data,
    }
    assert await caller.call(agent.name, "send", {"text": "plain"}) == "plain"
    with pytest.raises(InvalidParams):  # send forwards text only
        await caller.call(agent.name, "send", {"doc": 1})
    # The registry lists the instance with what the card said.
    (profile,) = await caller.view.registry.find_agents_with_capability("echo")  # type: ignore[union-attr]
    assert (
        profile.name == agent.name
        and profile.metadata
        and profile.metadata["external"]["cardUrl"].startswith(url)
    )
    assert remote.peer.trust_score() > 0.6  # three good calls


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "polling"])
async def test_a_slow_call_that_times_out_cancels_the_remote_task(
    bus: Bus, sdk_echo_server: Server, cancel_log: Path, streaming: bool
) -> None:
    url = sdk_echo_server(delay=5, cancel_log=cancel_log, streaming=streaming)
    remote = await bus.attach(url)
    before = logged(cancel_log)
    with anyio.fail_after(3):
        with pytest.raises(DeadlineExceeded):
            await bus.caller.call(by_capability("echo"), "echo", {"text": "slow"}, timeout=1.0)
    assert len(await cancels_logged(cancel_log, before)) == 1
    assert remote.peer.trust_score() < 0.5  # the timeout counted against it


async def test_a_caller_that_gives_up_cancels_the_remote_task(
    bus: Bus, sdk_echo_server: Server, cancel_log: Path
) -> None:
    url = sdk_echo_server(delay=5, cancel_log=cancel_log)
    remote = await bus.attach(url)
    before = logged(cancel_log)
    with anyio.move_on_after(0.8) as scope:
        await bus.caller.call(remote.agent.name, "echo", {"text": "never mind"}, timeout=10)
    assert scope.cancelled_caught
    assert len(await cancels_logged(cancel_log, before)) == 1
    assert remote.peer.trust_score() == 0.5  # a withdrawal is not the remote's fault


async def test_a_dead_server_gives_no_responders(bus: Bus, sdk_python: Path) -> None:
    server = start_sdk_server(sdk_python, ECHO_SERVER, "--name", "doomed")
    try:
        remote = await bus.attach(server)
        assert await bus.caller.call("doomed", "echo", {"text": "alive"}) == "alive"
    finally:
        stop_sdk_server(server.proc)
        server.log_path.unlink(missing_ok=True)
    with anyio.fail_after(3):
        with pytest.raises(NoResponders, match="cannot connect"):
            await bus.caller.call("doomed", "echo", {"text": "anyone?"})
        # By capability, the caller's routing drops an instance that answers NO_RESPONDERS
        # and tries the next; there is none.
        with pytest.raises(NoCapableAgent):
            await bus.caller.call(by_capability("echo"), "echo", {"text": "anyone?"})
    assert remote.peer.trust_score() < 0.5
    with anyio.fail_after(3):  # the next heartbeats publish the lower score
        while (bus.published_trust("doomed") or 1.0) >= 0.5:
            await anyio.sleep(0.05)


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "polling"])
async def test_a_server_that_dies_mid_task_gives_agent_lost(
    bus: Bus, sdk_python: Path, streaming: bool
) -> None:
    flag = "--streaming" if streaming else "--no-streaming"
    server = start_sdk_server(sdk_python, ECHO_SERVER, "--name", "mortal", "--delay", "5", flag)
    try:
        await bus.attach(server)
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, _stop_later, server)
            # The proxy asks again until the deadline, then gives up: AGENT_LOST, not a timeout.
            with anyio.fail_after(6), pytest.raises(AgentLost, match="stopped answering mid-task"):
                await bus.caller.call("mortal", "echo", {"text": "x"}, timeout=3)
    finally:
        stop_sdk_server(server.proc)
        server.log_path.unlink(missing_ok=True)


def _stop_later(server: SdkServer) -> None:
    time.sleep(0.5)
    stop_sdk_server(server.proc)


async def test_a_failing_remote_gives_its_message_redacted(bus: Bus, sdk_echo_server: Server) -> None:
    url = sdk_echo_server(fail="backend down; key sk-proj-AbCdEfGhIjKlMnOpQr12 rejected", name="failing")
    await bus.attach(url)
    with pytest.raises(AgentError) as caught:
        await bus.caller.call(by_capability("echo"), "echo", {"text": "x"})
    assert caught.value.message == "backend down; key [API_KEY] rejected"
    assert caught.value.details["state"] == "TASK_STATE_FAILED"


@pytest.mark.parametrize(
    ("bindings", "versions", "expected"),
    [
        ("rest", "1.0", ("HTTP+JSON", "1.0")),
        ("jsonrpc", "0.3", ("JSONRPC", "0.3")),
        ("rest", "0.3", ("HTTP+JSON", "0.3")),
    ],
)
async def test_every_dialect(
    bus: Bus, sdk_echo_server: Server, bindings: str, versions: str, expected: tuple[str, str]
) -> None:
    url = sdk_echo_server(
        bindings=bindings, versions=versions, delay=0.2, name=f"echo-{bindings}-{versions[0]}"
    )
    remote = await bus.attach(url)
    external = remote.agent.metadata["external"]
    assert (external["binding"], external["protocolVersion"]) == expected
    name = remote.agent.name
    assert await bus.caller.call(by_capability("echo"), "echo", {"text": "héllo"}) == "héllo"
    assert await bus.caller.call(name, "echo", {"xs": [1, 2]}) == {"action": "echo", "params": {"xs": [1, 2]}}


async def test_a_required_header_is_sent(bus: Bus, sdk_echo_server: Server) -> None:
    url = sdk_echo_server(require_header="X-Api-Key: s3cret", name="guarded")
    without = await remote_agent(url, name="guarded-without")  # the card itself is public
    await bus.host.serve(without.agent)
    with pytest.raises(PermissionDenied, match="401"):
        await bus.caller.call("guarded-without", "echo", {"text": "x"})
    host = await attach(bus.host, url, name="guarded-with", headers={"X-Api-Key": "s3cret"})
    assert await bus.caller.call(host.agent.name, "echo", {"text": "let me in"}) == "let me in"


SIGN_SCRIPT = r"""
import json, sys, types
# signing.py imports PyJWT, which the SDK venv lacks; only its canonical form is used here.
for name in ("jwt", "jwt.api_jwk", "jwt.exceptions", "jwt.utils"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["jwt"].api_jws = None
sys.modules["jwt.api_jwk"].PyJWK = object
sys.modules["jwt.exceptions"].PyJWTError = Exception
sys.modules["jwt.utils"].base64url_decode = sys.modules["jwt.utils"].base64url_encode = None
from google.protobuf.json_format import ParseDict
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.signing import _canonicalize_agent_card
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
card = ParseDict(json.load(sys.stdin), AgentCard())
print(json.dumps({"canonical": _canonicalize_agent_card(card), "served": agent_card_to_dict(card)}))
"""


def test_the_signed_bytes_are_the_sdks(sdk_python: Path, tmp_path: Path) -> None:
    """The canonical form a card's signatures sign, as the SDK computes it from the card it serves."""
    card = {
        "name": "Signed ✓",
        "description": 'Échos — \U0001f600 "quoted"\n',
        "supportedInterfaces": [
            {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "provider": {"url": "https://acme.example", "organization": "Acme"},
        "version": "1.2.3",
        "capabilities": {
            "streaming": False,
            "extensions": [{"uri": "urn:x", "params": {"n": 1, "f": 1.5, "deep": {"a": [True, "z", 0]}}}],
        },
        "securitySchemes": {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Api-Key"}}},
        "securityRequirements": [{"schemes": {"key": {}}}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [{"id": "s", "name": "S", "description": "", "tags": ["a", "b"], "examples": ["x"]}],
    }
    proc = subprocess.run(
        [str(sdk_python), "-E", "-s", "-c", SIGN_SCRIPT],
        input=json.dumps(card),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=tmp_path,  # not the repository: its own ``a2a`` package would shadow the SDK's
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert canonical_card(parse_agent_card(out["served"])).decode() == out["canonical"]
