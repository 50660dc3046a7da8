"""The seeds' default values, pinned: each test fails if a default drifts from its seed."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest

from a2a import Agent, Context, DelegationStep, Settings
from a2a.adapters import delegate_tool
from a2a.adapters.bridge import running
from a2a.adapters.delegate_args import parse
from a2a.sessions.manager import Sessions
from a2a.sessions.model import Limits, Session
from a2a.sessions.policy import SharedCallPolicy
from a2a.testing import TestBroker
from bus.wire import Metadata

pytestmark = pytest.mark.anyio


# -- seed 000: max_context_tokens 4000, allow_nested_calls false ------------------------


def test_seed_000_max_context_tokens_defaults_to_4000_in_the_tool_and_the_step() -> None:
    tool = delegate_tool("worker")
    spec = tool.input_schema["properties"]["max_context_tokens"]
    assert (spec["maximum"], spec["default"]) == (4000, 4000)
    assert "default 4000" in spec["description"]
    assert tool.delegate is not None and tool.delegate.max_context_tokens == 4000
    parsed = parse({"task": "tidy the logs"}, None, True, tool.delegate.max_context_tokens)
    assert parsed.options["max_context_tokens"] == 4000
    assert parsed.options["allow_nested_calls"] is False
    step = DelegationStep(target="worker", task="tidy the logs")
    assert (step.max_context_tokens, step.allow_nested_calls) == (4000, False)


async def test_a_delegate_tool_left_to_its_defaults_sends_4000_tokens_and_no_nested_calls() -> None:
    worker = Agent("worker")

    @worker.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> Any:
        d, grants = ctx.request.delegation, ctx.request.grants
        assert d is not None
        return {"tokens": d.max_context_tokens, "nested": grants.allow_nested_calls if grants else True}

    boss = Agent("boss")

    @boss.action("go")
    async def go(ctx: Context, params: dict[str, Any]) -> Any:
        with running(ctx):
            return await delegate_tool("worker").run({"task": "tidy the logs"})

    async with TestBroker() as broker, broker.runtime(worker, boss) as rt:
        assert msgspec.json.decode(await rt.call("boss", "go")) == {"tokens": 4000, "nested": False}


# -- seed 001: a session's defaults -----------------------------------------------------


def test_seed_001_session_defaults() -> None:
    limits = Limits()
    assert (limits.max_turns, limits.max_duration_ms, limits.max_failures) == (8, 600_000, 3)
    assert limits.max_tokens_budget is None
    assert msgspec.json.decode(b"{}", type=Limits) == limits  # the wire form left empty
    session = Session(id="s1", user_id="u", profile_id="local", remote="remote", objective="plan")
    assert session.mode == "manual" and session.limits == limits
    assert inspect.signature(Sessions.start).parameters["mode"].default == "manual"
    policy = SharedCallPolicy()
    assert policy.max_concurrent_shared_calls == 3 and policy.max_hop_count == 2
    assert policy.allow_shared_agent_calls is False and policy.allowed_shared_device_ids == []


# -- seed 004: maxHops 10, a response awaited 30 s ------------------------------------


def test_seed_004_max_hops_10_and_a_30_second_wait() -> None:
    meta = Metadata(timestamp=1, correlation_id="c")
    assert meta.max_hops == 10
    assert msgspec.json.decode(b'{"timestamp": 1, "correlationId": "c"}', type=Metadata).max_hops == 10
    settings = Settings()
    assert (settings.max_hops, settings.default_timeout) == (10, 30.0)
    from_env = Settings.from_env({})
    assert (from_env.max_hops, from_env.default_timeout) == (10, 30.0)


async def test_a_call_with_no_timeout_waits_30_seconds_and_allows_10_hops() -> None:
    probe = Agent("probe")

    @probe.action("meta")
    async def meta(ctx: Context, params: dict[str, Any]) -> Any:
        m = ctx.request.metadata
        return {"ttl": m.ttl_ms, "maxHops": m.max_hops, "left": ctx.remaining()}

    async with TestBroker() as broker, broker.runtime(probe) as rt:
        out = await rt.call("probe", "meta")
    assert out["maxHops"] == 10
    assert 29_000 < out["ttl"] <= 30_000 and 29 < out["left"] <= 30
