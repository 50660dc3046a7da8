"""The seam for peers that are not Python handlers in this process.

An external A2A agent (HTTP), a local program speaking NDJSON on stdio, a framework
object: each joins the bus as an ordinary hosted :class:`Agent` whose actions forward
to a :class:`Peer`. The host gives it everything a handler gets (the callee-side checks,
slots, the deadline, cancellation when the caller withdraws, audit and tracing); the
peer only has to carry one call across its own boundary::

    class Remote(Peer):
        async def __aenter__(self): ...          # open the connection, start the process
        async def __aexit__(self, *exc): ...     # and close it when the instance stops
        async def invoke(self, ctx, action, params):
            return await self.client.send(action, params, timeout=ctx.remaining())

    await runtime.serve(peer_agent("translator", Remote(), capabilities=["translate"]))

``invoke`` runs in the handler's task: when the call is withdrawn, times out or the
instance shuts down, the task is cancelled, and the peer should stop its side (cancel
the remote task, signal the process) before re-raising.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from bus.errors import InvalidParams, UnknownAction
from discovery.profile import AgentCapability
from discovery.trust import TrustTracker

from .agent import Agent
from .context import Context

__all__ = ["Peer", "peer_agent"]


class Peer(abc.ABC):
    """Something outside this process that serves an agent's actions."""

    async def __aenter__(self) -> Peer:
        """Connect or start; called when the hosting instance starts serving."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Disconnect or stop; called when the hosting instance stops."""
        return None

    @abc.abstractmethod
    async def invoke(self, ctx: Context, action: str, params: dict[str, Any]) -> Any:
        """Carry one call to the peer and return its JSON-serialisable result.

        Raise an :class:`a2a.errors.A2AError` to answer with that typed error; any
        other exception goes back as AGENT_ERROR.
        """


def peer_agent(
    name: str,
    peer: Peer,
    *,
    actions: Mapping[str, Mapping[str, Any] | None] | None = None,
    capabilities: Sequence[AgentCapability | str] = (),
    description: str = "",
    max_concurrency: int = 32,
    max_queue: int = 1000,
    metadata: Mapping[str, Any] | None = None,
    trust: TrustTracker | None = None,
) -> Agent:
    """An :class:`Agent` whose actions are served by ``peer``.

    Args:
        actions: the actions the peer offers, each with its input JSON Schema (or None);
            their parameters are validated on arrival and they are listed in the
            registry. Without it, every action is forwarded (the peer decides what it
            knows) and unknown ones fail at the peer.
        max_concurrency: calls forwarded at once; a peer that takes one call at a time
            (a single process) sets 1.
        trust: for a peer outside the deployment: every forwarded call's outcome and
            latency feed it, and the instance publishes its score with each heartbeat
            (routing by capability weighs by it and skips peers under the floor).
            Withdrawn and cancelled calls, and calls refused as the caller's mistake
            (INVALID_PARAMS, UNKNOWN_ACTION), do not count.
    """
    agent = Agent(
        name,
        description=description,
        capabilities=capabilities,
        max_concurrency=max_concurrency,
        max_queue=max_queue,
        metadata=metadata,
        lifespan=lambda: peer,
        trust=trust,
    )

    async def forward(ctx: Context, params: dict[str, Any]) -> Any:
        if trust is None:
            return await peer.invoke(ctx, ctx.action, params)
        start = time.monotonic()
        try:
            result = await peer.invoke(ctx, ctx.action, params)
        except (InvalidParams, UnknownAction):
            raise  # the caller's mistake, found before the peer was asked: not the peer's
        except Exception:
            now = time.monotonic()
            trust.record(False, now - start, now)
            raise
        now = time.monotonic()
        trust.record(True, now - start, now)
        return result

    if actions is None:
        agent.forward_unknown(forward)
    else:
        for action, schema in actions.items():
            agent.action(action, input_schema=schema)(forward)
    return agent
