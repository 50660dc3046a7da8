"""The seam for peers outside this process, shown with a test double standing in for one."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
import pytest

from a2a import Context, Peer, peer_agent
from a2a.errors import DeadlineExceeded, InvalidParams, MaxDepthExceeded, UnknownAction
from a2a.testing import TestBroker

from .conftest import MakeRuntime

pytestmark = pytest.mark.anyio


class FakeRemote(Peer):
    """Plays an external agent: records what crosses its boundary and when it is open."""

    def __init__(self) -> None:
        self.open = False
        self.opened = self.closed = 0
        self.calls: list[tuple[str, dict[str, Any], str | None]] = []
        self.stopped = anyio.Event()

    async def __aenter__(self) -> FakeRemote:
        self.open = True
        self.opened += 1
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.open = False
        self.closed += 1

    async def invoke(self, ctx: Context, action: str, params: dict[str, Any]) -> Any:
        assert self.open, "a call reached the peer outside its lifespan"
        self.calls.append((action, params, ctx.user_id))
        if action == "wait":
            try:
                await anyio.sleep(30)
            except anyio.get_cancelled_exc_class():
                self.stopped.set()  # the peer would cancel its remote task here
                raise
        return {"action": action, "echo": params, "left": ctx.remaining() > 0}


SCHEMA = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}


async def test_a_peer_serves_declared_actions_under_the_callee_checks(make_runtime: MakeRuntime) -> None:
    remote = FakeRemote()
    agent = peer_agent("translator", remote, actions={"translate": SCHEMA}, capabilities=["translate"])
    server = await make_runtime(agent)
    client = await make_runtime()
    assert remote.open and remote.opened == 1
    out = await client.call("translator", "translate", {"text": "hallo"}, user_id="u-1")
    assert out == {"action": "translate", "echo": {"text": "hallo"}, "left": True}
    assert remote.calls == [("translate", {"text": "hallo"}, "u-1")]
    with pytest.raises(InvalidParams):  # validated on arrival: the peer never sees it
        await client.call("translator", "translate", {"text": 3})
    with pytest.raises(UnknownAction):
        await client.call("translator", "summarise", {"text": "x"})
    assert len(remote.calls) == 1
    profile = server.hosts["translator"].profile()
    assert profile.metadata is not None and profile.metadata["actions"] == ["translate"]


async def test_a_catch_all_peer_gets_every_action_and_is_cancelled_at_the_deadline(
    make_runtime: MakeRuntime, broker: TestBroker
) -> None:
    remote = FakeRemote()
    shallow, client = await make_runtime(max_depth=0), await make_runtime()
    # Runtimes are task-scoped resources: the one opened here closes first.
    async with broker.runtime(peer_agent("anything", remote)):
        # A limit refuses the call before it reaches the peer (a depth-0 call with maxDepth 0).
        with pytest.raises(MaxDepthExceeded):
            await shallow.call("anything", "whatever")
        assert remote.calls == []
        assert (await client.call("anything", "whatever", {"k": 1}))["action"] == "whatever"
        with pytest.raises(DeadlineExceeded):
            await client.call("anything", "wait", timeout=0.2)
        with anyio.fail_after(2):
            await remote.stopped.wait()  # the withdrawal reached the peer's side of the call
        assert remote.open
    assert not remote.open and remote.closed == 1
