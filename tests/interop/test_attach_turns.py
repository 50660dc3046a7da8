"""Attached a2a-sdk agents across calls: conversations, questions, results, signatures, health.

The remote is ``sdk/turns_server.py`` (the SDK echo server's card and interfaces, an agent
that remembers what each context said), attached on one runtime over real nats-server and
Redis and called from another, as in ``test_attach``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from a2a import Runtime, Settings, by_capability
from a2a.errors import InputRequired, NoCapableAgent, PermissionDenied
from a2a.external import remote_agent
from tests.interop.conftest import SdkServer, _options, start_sdk_server, stop_sdk_server
from tests.interop.test_attach import Bus

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TURNS_SERVER = Path(__file__).resolve().parent / "sdk" / "turns_server.py"
Server = Callable[..., SdkServer]
MODES = pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "polling"])


@pytest.fixture
async def bus(settings: Settings) -> AsyncIterator[Bus]:
    async with Runtime(settings) as host, Runtime(settings) as caller:
        yield Bus(host, caller)


@pytest.fixture
def turns_server(sdk_python: Path) -> Iterator[Server]:
    """Factory: ``turns_server(**options) -> base_url`` (options as ``sdk_echo_server``'s, and its own)."""
    servers: list[SdkServer] = []

    def start(**options: Any) -> SdkServer:
        server = start_sdk_server(sdk_python, TURNS_SERVER, *_options(options))
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.proc.pid, signal.SIGTERM)
        for server in servers:
            stop_sdk_server(server.proc)
            server.log_path.unlink(missing_ok=True)


@MODES
async def test_a_conversation_stays_in_one_remote_context(
    bus: Bus, turns_server: Server, streaming: bool
) -> None:
    remote = await bus.attach(turns_server(streaming=streaming, name="turns"))
    call = bus.caller.call
    first = await call("turns", "send", {"text": "one"}, conversation_id="conv-a")
    second = await call("turns", "echo", {"text": "two"}, conversation_id="conv-a")
    other = await call("turns", "send", {"text": "three"}, conversation_id="conv-b")
    as_bob = await call("turns", "send", {"text": "four"}, conversation_id="conv-a", user_id="bob")
    assert second["contextId"] == first["contextId"] and second["turns"] == ["one", "two"]
    assert second["taskId"] != first["taskId"] and not second["continued"]
    assert other["contextId"] != first["contextId"] and other["turns"] == ["three"]
    # The same conversation id from another user is another conversation.
    assert as_bob["contextId"] not in (first["contextId"], other["contextId"])
    assert len(remote.peer.conversations) == 3


@pytest.mark.parametrize(("bindings", "versions"), [("jsonrpc", "0.3"), ("rest", "1.0"), ("rest", "0.3")])
async def test_every_dialect_carries_the_context(
    bus: Bus, turns_server: Server, bindings: str, versions: str
) -> None:
    await bus.attach(turns_server(bindings=bindings, versions=versions, name="turns"))
    first = await bus.caller.call("turns", "send", {"text": "one"}, conversation_id="c")
    second = await bus.caller.call("turns", "send", {"text": "two"}, conversation_id="c")
    assert second["contextId"] == first["contextId"] and second["turns"] == ["one", "two"]


@MODES
async def test_a_question_is_input_required_and_the_answer_continues_the_task(
    bus: Bus, turns_server: Server, streaming: bool
) -> None:
    await bus.attach(turns_server(streaming=streaming, ask="Which city, key sk-proj-AbCdEfGhIjKlMnOpQr12?"))
    with pytest.raises(InputRequired) as asked:
        await bus.caller.call("sdk-echo", "echo", {"text": "book a table"}, user_id="ann")
    question = asked.value
    assert question.message == "the remote agent asks: Which city, key [API_KEY]?"
    details = question.details
    assert details["state"] == "TASK_STATE_INPUT_REQUIRED" and details["taskId"] and details["contextId"]
    assert details["interrupts"] == [
        {"kind": "input", "text": "Which city, key sk-proj-AbCdEfGhIjKlMnOpQr12?"}
    ]
    # The answer, in the conversation the question names, continues the same remote task.
    answer = await bus.caller.call(
        "sdk-echo", "echo", {"text": "Paris"}, user_id="ann", conversation_id=details["conversationId"]
    )
    assert answer == {
        "contextId": details["contextId"],
        "taskId": details["taskId"],
        "turns": ["book a table", "Paris"],
        "continued": True,
    }
    # The task is over: the next call of the conversation is a new task in the same context.
    with pytest.raises(InputRequired) as again:
        await bus.caller.call(
            "sdk-echo",
            "echo",
            {"text": "and lunch"},
            user_id="ann",
            conversation_id=details["conversationId"],
        )
    assert again.value.details["contextId"] == details["contextId"]
    assert again.value.details["taskId"] != details["taskId"]


async def test_a_result_the_stream_did_not_carry_is_read_with_get_task(
    bus: Bus, turns_server: Server
) -> None:
    await bus.attach(turns_server(streaming=True, result_in_store=True))
    result = await bus.caller.call("sdk-echo", "echo", {"text": "stored"})
    assert result["turns"] == ["stored"] and result["taskId"]


@pytest.mark.parametrize("signed", [True, False], ids=["bad-signature", "unsigned"])
async def test_a_card_that_fails_verification_is_offline_and_refuses_calls(
    bus: Bus, turns_server: Server, signed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    header = base64.urlsafe_b64encode(json.dumps({"alg": "ES256"}).encode()).rstrip(b"=").decode()
    forged = f"{header}.{'A' * 86}" if signed else None
    url = turns_server(signature=forged, name="forged")
    trusted = ec.generate_private_key(ec.SECP256R1()).public_key()
    with caplog.at_level(logging.WARNING, logger="a2a.external"):
        remote = await remote_agent(url, card_keys=[trusted])
    assert remote.agent.metadata["external"]["signature"] == ("invalid" if signed else "unsigned")
    assert "calls are refused" in caplog.text
    (host,) = await bus.host.serve(remote.agent)
    view = bus.caller.view
    assert view is not None
    await bus.caller.wait_for_agents(["forged"], timeout=5)
    entry = view.get(host.instance_id)
    assert entry is not None and entry.profile.status == "offline"
    with pytest.raises(PermissionDenied, match="calls are refused") as refused:
        await bus.caller.call("forged", "echo", {"text": "x"})
    assert refused.value.details["signature"] == ("invalid" if signed else "unsigned")
    with pytest.raises(NoCapableAgent):
        await bus.caller.call(by_capability("echo"), "echo", {"text": "x"})


async def _status(bus: Bus, instance_id: str, wanted: str, timeout: float) -> float:
    """Seconds until the caller's registry view shows the instance in ``wanted`` status."""
    view = bus.caller.view
    assert view is not None
    start = time.monotonic()
    with anyio.fail_after(timeout):
        while (entry := view.get(instance_id)) is None or entry.profile.status != wanted:
            await anyio.sleep(0.01)
    return time.monotonic() - start


async def test_a_killed_remote_goes_offline_and_comes_back(
    bus: Bus, sdk_python: Path, settings: Settings
) -> None:
    beat = settings.heartbeat_interval
    server = start_sdk_server(sdk_python, TURNS_SERVER, "--name", "mortal")
    try:
        remote = await bus.attach(server, health_interval=beat)
        host = bus.host.hosts["mortal"]
        await _status(bus, host.instance_id, "available", 5)
        os.killpg(server.proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        await _status(bus, host.instance_id, "offline", 5)
        assert not remote.peer.reachable
        assert time.monotonic() - killed < beat + 0.5  # the next probe, not a call, finds it
        with pytest.raises(NoCapableAgent):
            await bus.caller.call(by_capability("echo"), "echo", {"text": "anyone?"})
        stop_sdk_server(server.proc)
        server.log_path.unlink(missing_ok=True)
        server = start_sdk_server(sdk_python, TURNS_SERVER, "--name", "mortal", "--port", str(server.port))
        await _status(bus, host.instance_id, "available", beat + 2)
        result = await bus.caller.call(by_capability("echo"), "echo", {"text": "back"})
        assert result["turns"] == ["back"]
    finally:
        stop_sdk_server(server.proc)
        server.log_path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("bindings", "versions", "subscribe"),
    [
        ("jsonrpc", "1.0", "SubscribeToTask"),
        ("jsonrpc", "0.3", "tasks/resubscribe"),
        ("rest", "1.0", "POST /tasks/{}:subscribe"),
    ],
)
async def test_a_dropped_stream_is_resubscribed_through_an_outage(
    bus: Bus, turns_server: Server, tmp_path: Path, bindings: str, versions: str, subscribe: str
) -> None:
    log = tmp_path / "requests.log"
    url = turns_server(
        bindings=bindings,
        versions=versions,
        delay=1.0,
        drop_streams=1,
        unavailable_after_drop=0.5,  # every request answered 503 for a while after the cut
        request_log=log,
    )
    await bus.attach(url)
    with anyio.fail_after(8):
        result = await bus.caller.call("sdk-echo", "echo", {"text": "through"}, timeout=6)
    assert result["turns"] == ["through"] and not result["continued"]
    operations = log.read_text().splitlines()
    assert subscribe.format(result["taskId"]) in operations
