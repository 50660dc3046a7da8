"""Durable tasks against hostile input: forged queue messages, reused ids, bad results, bad options."""

from __future__ import annotations

import math
from typing import Any

import anyio
import msgspec
import pytest

from a2a import A2AError, Agent, CallOptions, Context
from a2a.errors import InvalidParams, PayloadTooLarge, PermissionDenied
from a2a.testing import TestBroker
from bus.durable import QueuedTask
from bus.durable.keys import TaskKeys
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope

pytestmark = pytest.mark.anyio

agent = Agent("w", max_concurrency=4)
runs: list[str] = []


@agent.action("echo")
async def _echo(ctx: Context, params: dict[str, Any]) -> Any:
    runs.append(str(params.get("text")))
    if params.get("sleep"):
        await anyio.sleep(params["sleep"])
    return {"echo": params.get("text")}


@agent.action("odd")
async def _odd(ctx: Context, params: dict[str, Any]) -> Any:
    runs.append("odd")
    return {"x": object()}


def forged(task_id: str, text: str, user: str | None = None) -> bytes:
    request = RequestEnvelope(
        message_id="m1",
        source_agent_id="evil",
        target_agent_id="w",
        conversation_id="c1",
        protocol_version=PROTOCOL_VERSION,
        payload=Payload(action="echo", parameters={"text": text}),
        metadata=Metadata(timestamp=1, correlation_id=task_id, hop_count=1, max_hops=10, ttl_ms=60_000),
        user_id=user,
    )
    return msgspec.json.encode(QueuedTask(task_id=task_id, request=request))


async def test_a_queue_message_reusing_another_senders_task_id_never_touches_that_task() -> None:
    runs.clear()
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("w", "echo", {"text": "alice", "sleep": 0.3}, user_id="alice")
        queue = rt.bus.subjects.receiving().task_queue("w").replace("*", "evil")
        assert await broker.durable.enqueue(queue, "other-msg-id", forged(task.id, "EVIL", "mallory"))
        mismatched = forged("other-id", "MISMATCHED")
        mismatched = mismatched.replace(b'"correlationId":"other-id"', b'"correlationId":"x"')
        assert await broker.durable.enqueue(queue, "third-msg-id", mismatched)
        assert await task.result() == {"echo": "alice"}
        with anyio.fail_after(3):
            while "EVIL" not in runs:
                await anyio.sleep(0.02)
        await anyio.sleep(0.1)
        # evil's message ran as evil's own task: its outcome lies under evil's keys only.
        evils = TaskKeys("w", "evil", task.id)
        assert b"EVIL" in (await broker.durable.get(evils.outcome) or b"")
        assert b"alice" in (await broker.durable.get(TaskKeys.of(task.record).outcome) or b"")
    assert sorted(runs) == ["EVIL", "alice"]  # the message whose ids disagree never ran


async def test_a_task_id_in_use_cannot_be_submitted_again_by_anyone() -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("w", "echo", {"text": "alice-secret"}, user_id="alice")
        await task.result()
        with pytest.raises(InvalidParams, match="exists"):
            await rt.tasks.submit("w", "echo", options=CallOptions(correlation_id=task.id), user_id="bob")
        with pytest.raises(PermissionDenied):
            await rt.tasks.get(task.id, user_id="bob")


async def test_undecodable_and_oversized_ids_are_dropped_and_the_taker_goes_on() -> None:
    runs.clear()
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        queue = rt.bus.subjects.receiving().task_queue("w").replace("*", "evil")
        for i, data in enumerate([b"\xff", b"{}", forged("x" * 10_000, "long"), forged("a*b", "star")]):
            await broker.durable.enqueue(queue, f"bad-{i}", data)
        task = await rt.tasks.submit("w", "echo", {"text": "fine"})
        with anyio.fail_after(5):
            assert await task.result() == {"echo": "fine"}
        await anyio.sleep(0.1)
        assert broker.durable.queued == 0
    assert runs == ["fine"]


async def test_a_result_that_is_not_json_fails_once_as_agent_error() -> None:
    runs.clear()
    async with TestBroker(ack_wait=0.2) as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("w", "odd")
        with pytest.raises(A2AError) as raised, anyio.fail_after(5):
            await task.result()
    assert raised.value.code == "AGENT_ERROR" and "JSON" in raised.value.message
    assert runs == ["odd"]


async def test_a_refused_submission_frees_its_key_for_a_retry() -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        with pytest.raises(PayloadTooLarge):
            await rt.tasks.submit("w", "echo", {"text": "x" * 2_000_000}, key="job-9")
        retry = await rt.tasks.submit("w", "echo", {"text": "small"}, key="job-9")
        assert retry.created
        assert await retry.result() == {"echo": "small"}


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": 0},
        {"timeout": -5},
        {"timeout": math.nan},
        {"max_attempts": True},
        {"max_attempts": 0},
        {"key": ""},
        {"key": "k" * 257},
    ],
)
async def test_bad_options_are_typed_refusals(options: dict[str, Any]) -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        with pytest.raises(InvalidParams):
            await rt.tasks.submit("w", "echo", **options)
        with pytest.raises(InvalidParams):
            await rt.tasks.submit("a.b", "echo")
        assert broker.durable.queued == 0


@agent.action("nested")
async def _nested(ctx: Context, params: dict[str, Any]) -> Any:
    async def inner() -> str:
        return "i"

    async def outer() -> str:
        return "o" + await ctx.task.effect("pay", inner)

    return await ctx.task.effect("pay", outer)


async def test_an_effect_run_inside_itself_is_refused() -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("w", "nested")
        with pytest.raises(InvalidParams, match="already running"):
            await task.result()


async def test_anything_under_a_tasks_cancel_key_cancels_it() -> None:
    runs.clear()
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("w", "echo", {"text": "long", "sleep": 30})
        with anyio.fail_after(2):
            while "long" not in runs:
                await anyio.sleep(0.01)
        await broker.durable.put(TaskKeys.of(task.record).cancel, b"\xff not json")
        await broker.durable.put(TaskKeys.of(task.record).outcome, b'{"state":"cancelled"}')
        with anyio.fail_after(2):
            while broker.durable.queued:  # the running attempt stopped and was acknowledged
                await anyio.sleep(0.01)
