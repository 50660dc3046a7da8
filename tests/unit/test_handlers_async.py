"""A handler must be a coroutine function: a plain ``def`` is refused when it is registered,
with a message saying what to write, instead of failing on every call."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from a2a import Agent, Context


def test_plain_def_handlers_are_refused_where_they_are_registered() -> None:
    agent = Agent("strict")

    def plain(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        return params

    with pytest.raises(TypeError, match=r"strict's action 'plain' must be an async function \(async def\)"):
        agent.action()(plain)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="strict's handler of 'news' must be an async function"):
        agent.on("news")(plain)  # type: ignore[type-var]
    with pytest.raises(TypeError, match="handler of undeclared actions must be an async function"):
        agent.forward_unknown(plain)  # type: ignore[type-var]
    assert agent.actions == {} and agent.topics == {} and agent.fallback is None


def test_coroutine_functions_partials_and_async_callables_are_taken() -> None:
    agent = Agent("lenient")

    async def run(ctx: Context, params: dict[str, Any], *, suffix: str) -> str:
        return suffix

    class Handler:
        async def __call__(self, ctx: Context, params: dict[str, Any]) -> str:
            return "ok"

    agent.action("partial")(functools.partial(run, suffix="!"))
    agent.action("callable")(Handler())
    agent.on("news")(Handler())  # type: ignore[type-var]
    assert set(agent.actions) == {"partial", "callable"} and "news" in agent.topics
