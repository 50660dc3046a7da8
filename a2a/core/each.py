"""One request sent to several agents at once (seed 004's ``targetAgentId`` list, seed 002's
parallel fan-out): every member's envelope names them all, each member answers for itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import msgspec

from bus.errors import A2AError, FanOutExceeded
from bus.ids import new_id
from bus.wire import ResponseEnvelope

from .options import CallOptions
from .route import Route, Target

__all__ = ["check_fan_out", "gather_each", "group_of", "one_tree"]


def group_of(target: Target) -> Route | None:
    """``target`` when it names several agents (:func:`a2a.to_each`), else None."""
    return target if isinstance(target, Route) and target.each and target.agent is None else None


def one_tree(options: CallOptions) -> CallOptions:
    """``options`` under which calls from outside any agent to each member of a group share
    one conversation and one call tree (an agent's calls share its own)."""
    tree = options.correlation_id or new_id()
    return msgspec.structs.replace(options, conversation_id=options.conversation(tree), correlation_id=tree)


async def gather_each(route: Route, send: Callable[[Route], Awaitable[ResponseEnvelope]]) -> list[Any]:
    """``send`` to every member of ``route`` at once; their results in ``route.each``'s order,
    with a member's typed error in place of its result (one failure stops no other)."""
    results: list[Any] = [None] * len(route.each)

    async def one(index: int, member: Route) -> None:
        try:
            results[index] = (await send(member)).payload.result
        except A2AError as exc:
            results[index] = exc

    async with anyio.create_task_group() as tg:
        for index, member in enumerate(route.members()):
            tg.start_soon(one, index, member)
    return results


def check_fan_out(agent: str, hop: int, in_flight: int, wanted: int, limit: int) -> None:
    """Refuse, before anything is sent, more calls at once than ``agent``'s fan-out limit.

    Raises:
        FanOutExceeded: ``in_flight + wanted`` is over ``limit`` (seed 002's MAX_FAN_OUT).
    """
    if in_flight + wanted > limit:
        raise FanOutExceeded(
            f"Too many concurrent delegates ({in_flight + wanted}/{limit}). "
            f"Choose the top {limit - in_flight} most relevant agents.",
            agent=agent,
            hop=hop,
            details={"fanOut": in_flight + wanted, "maxFanOut": limit},
        )
