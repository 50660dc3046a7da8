"""Durable tasks against hostile input and bad luck: forged queue messages, reused ids, bad results,
bad options, refused submissions, keys across users, a canceller that dies between its writes."""

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


async def test_a_submit_cancelled_before_its_record_is_written_frees_its_key() -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        create = broker.durable.create

        async def slow_record(key: str, value: bytes) -> bool:
            if key.startswith("task."):  # the store is slow (a reconnect, a leader election)
                await anyio.sleep(10)
            return await create(key, value)

        broker.durable.create = slow_record  # type: ignore[method-assign]
        with anyio.move_on_after(0.2):  # the caller gives up (a timeout, Ctrl-C)
            await rt.tasks.submit("w", "echo", {"text": "a"}, key="job-1")
        broker.durable.create = create  # type: ignore[method-assign]
        # The retry finishes the submission the key names, instead of being refused for as
        # long as the bucket keeps the key.
        task = await rt.tasks.submit("w", "echo", {"text": "a"}, key="job-1")
        with anyio.fail_after(5):
            assert await task.result() == {"echo": "a"}


async def test_a_refused_submission_lists_no_task() -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        with pytest.raises(A2AError):
            await rt.tasks.submit("w", "echo", {"text": "x" * 2_000_000})  # over max_payload
        assert await rt.tasks.list() == []


async def test_an_idempotency_key_never_hands_one_users_task_to_another() -> None:
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        anonymous = await rt.tasks.submit("w", "echo", {"text": "anonymous-secret"}, key="k")
        await anonymous.result()
        try:  # the anonymous task is not user ""'s
            other = await rt.tasks.submit("w", "echo", {"text": "x"}, key="k", user_id="")
        except PermissionDenied:
            return
        assert other.id != anonymous.id


async def test_a_task_whose_canceller_died_after_its_first_write_ends_cancelled() -> None:
    """cancel() writes the cancel key, then the CANCELLED outcome. A canceller that dies (or
    whose store blips) in between: the taker stops the attempt and acknowledges it, counting
    on an outcome nobody stored, and the waiter waits for the deadline (up to 7 days)."""
    runs.clear()
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("w", "echo", {"text": "long", "sleep": 30}, timeout=4)
        with anyio.fail_after(2):
            while "long" not in runs:
                await anyio.sleep(0.01)
        await broker.durable.put(TaskKeys.of(task.record).cancel, b'"cancelled by its caller"')
        with anyio.fail_after(2):
            outcome = await task.outcome()
        assert outcome.state == "cancelled"


async def test_a_retry_after_a_lost_acknowledgement_runs_the_task_once() -> None:
    """The store kept the queued task but its acknowledgement was lost (a timeout, a leader
    change): submit raises UNAVAILABLE, the caller retries with the same key, as keys are for."""
    from transports import TransportError

    runs.clear()
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        enqueue = broker.durable.enqueue
        lost = [True]

        async def acknowledgement_lost(
            subject: str, msg_id: str, data: bytes, *, ttl: float | None = None
        ) -> bool:
            stored = await enqueue(subject, msg_id, data, ttl=ttl)
            if lost.pop() if lost else False:
                raise TransportError("JetStream failed storing a task: nats: timeout")
            return stored

        broker.durable.enqueue = acknowledgement_lost  # type: ignore[method-assign]
        with pytest.raises(A2AError):
            await rt.tasks.submit("w", "echo", {"text": "pay"}, key="pay-1")
        retry = await rt.tasks.submit("w", "echo", {"text": "pay"}, key="pay-1")
        with anyio.fail_after(5):
            await retry.result()
        await anyio.sleep(0.2)
    assert runs == ["pay"]
