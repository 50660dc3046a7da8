"""History the runtime captures by itself: plain calls reach a later delegation's filtered
context and summary with no application code writing history; off by a setting; redacted;
best effort when the store is down. Real nats-server and Redis processes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from a2a import Agent, CallOptions, Context, Runtime, Settings
from a2a.dev.servers import RedisServer
from a2a.errors import Unavailable
from a2a.stores.capture import HistoryRecorder
from a2a.stores.history import HistoryStore
from a2a.stores.summary import SummaryInput
from tests.delegates import make

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SECRETS = ("hunter2-very-secret", "sk-proj-abcdefghijklmnop1234", "jane.doe@example.com")


def notes_agent() -> Agent:
    notes = Agent("notes", max_concurrency=8)

    @notes.action("reply")
    async def reply(ctx: Context, p: dict[str, Any]) -> str:
        return f"noted: {p['text']}"

    @notes.action("echo")
    async def echo(ctx: Context, p: dict[str, Any]) -> Any:
        return p

    @notes.action("fail")
    async def fail(ctx: Context, p: dict[str, Any]) -> Any:
        raise RuntimeError("disk full")

    return notes


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not await check():
            await anyio.sleep(0.02)


def recorder(rt: Runtime) -> HistoryRecorder:
    assert rt.services.recorder is not None
    return rt.services.recorder


def store(rt: Runtime) -> HistoryStore:
    assert rt.history is not None
    return rt.history


async def test_two_plain_calls_reach_a_delegations_filtered_context_and_summary(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(notes_agent(), make("planner"), make("worker"))
        history, conversation = store(rt), uuid.uuid4().hex
        first = "We need to migrate the billing service to the new database"
        second = "Start with the invoices table"
        for text in (first, second):
            await rt.call("notes", "reply", {"text": text}, conversation_id=conversation, user_id="alice")

        async def written() -> bool:
            return len(await history.messages(conversation)) == 4 and bool(
                await history.summary(conversation)
            )

        await eventually(written)
        flt = {"last_messages": 5, "include_summary": True}
        response = await rt.call(
            "planner",
            "delegate",
            {"target": "worker", "task": "draft the migration plan", "context": flt},
            conversation_id=conversation,
            user_id="alice",
        )
        seen = response["artifacts"][0]["value"]
        assert seen["messages"] == [first, f"noted: {first}", second, f"noted: {second}"]
        assert seen["summary"].startswith(f"Goal: {first}")
        assert "Start with the invoices table" in seen["summary"]

        # The delegation's call is captured once, in the conversation; its thread is the
        # delegation's own (task and answer), not written a second time.
        await eventually(lambda: _count(history, conversation, 6))
        stored = await history.messages(conversation)
        assert [(m.role, m.name) for m in stored[:2]] == [("user", "client"), ("assistant", "notes")]
        assert [(m.role, m.name) for m in stored[4:]] == [("user", "client"), ("assistant", "planner")]
        assert len(await history.messages(response["child_session_id"])) == 2
        await anyio.sleep(0.2)
        assert len(await history.messages(conversation)) == 6
        assert recorder(rt).stats.dropped == 0


async def test_a_framework_agents_model_sees_the_conversation_with_no_history_code(
    settings: Settings,
) -> None:
    """A pydantic-ai agent delegated to reads, in its own prompt, the messages and summary
    the runtime captured from plain calls, and the name of the agent that asked."""
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from a2a.adapters.pydantic_ai import from_pydantic_ai

    prompts: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append("".join(str(getattr(p, "content", "")) for m in messages for p in m.parts))
        return ModelResponse(parts=[TextPart("plan drafted")])

    worker = from_pydantic_ai(PydanticAgent(FunctionModel(model)), name="worker")
    conversation = uuid.uuid4().hex
    async with Runtime(settings) as rt:
        await rt.serve(notes_agent(), make("planner"), worker)
        first = "We need to migrate the billing service to the new database"
        await rt.call("notes", "reply", {"text": first}, conversation_id=conversation, user_id="alice")
        await eventually(lambda: _count(store(rt), conversation, 2))
        await eventually(lambda: _summary(store(rt), conversation))
        flt = {"last_messages": 5, "include_summary": True}
        await rt.call(
            "planner",
            "delegate",
            {"target": "worker", "task": "draft the migration plan", "context": flt, "action": "run"},
            conversation_id=conversation,
            user_id="alice",
        )
    [prompt] = prompts
    assert prompt.startswith("draft the migration plan")
    assert "Asked by: planner" in prompt
    assert f"Earlier: Goal: {first}" in prompt  # the summary the runtime wrote
    assert f"user: {first}" in prompt and f"assistant: noted: {first}" in prompt


async def _summary(history: HistoryStore, conversation: str) -> bool:
    return bool(await history.summary(conversation))


async def _count(history: HistoryStore, conversation: str, n: int) -> bool:
    try:
        return len(await history.messages(conversation)) == n
    except Unavailable:  # a pooled connection of the Redis that was restarted: read again
        return False


async def test_a_call_from_an_agent_is_an_agent_message_and_errors_are_answers(settings: Settings) -> None:
    async with Runtime(settings) as rt:
        await rt.serve(notes_agent(), make("planner"))
        history, conversation = store(rt), uuid.uuid4().hex
        forward = {"target": "notes", "action": "reply", "params": {"text": "check stock"}}
        await rt.call("planner", "forward", forward, conversation_id=conversation)
        with pytest.raises(Exception, match="disk full"):
            await rt.call("notes", "fail", {"text": "write it"}, conversation_id=conversation)
        await eventually(lambda: _count(history, conversation, 6))
        stored = await history.messages(conversation)
        assert [(m.role, m.name, m.content) for m in stored[:2]] == [
            ("agent", "planner", "check stock"),
            ("assistant", "notes", "noted: check stock"),
        ]
        assert (stored[2].role, stored[2].name) == ("user", "client")
        assert stored[5].content.startswith("[AGENT_ERROR]") and "disk full" in stored[5].content


async def test_with_capture_off_nothing_is_written(settings: Settings) -> None:
    off = Settings(**{**_fields(settings), "history_capture": False})
    conversation = uuid.uuid4().hex
    async with Runtime(off) as rt:
        assert not recorder(rt).enabled
        await rt.serve(notes_agent())
        await rt.call("notes", "reply", {"text": "hello"}, conversation_id=conversation)
        await anyio.sleep(0.3)
        history = store(rt)
        assert await history.messages(conversation) == []
        assert await history.summary(conversation) is None
    async with Runtime(settings) as reader:
        history = store(reader)
        assert await history.messages(conversation) == []
        assert await history.summary(conversation) is None


def _fields(settings: Settings) -> dict[str, Any]:
    return {f: getattr(settings, f) for f in settings.__struct_fields__}


async def test_secrets_in_call_params_never_reach_the_history_in_clear(settings: Settings) -> None:
    conversation = uuid.uuid4().hex
    params = {
        "config": {"password": SECRETS[0], "region": "eu"},
        "note": f"use key {SECRETS[1]} and mail {SECRETS[2]}",
    }
    async with Runtime(settings) as rt:
        await rt.serve(notes_agent())
        await rt.call("notes", "echo", params, conversation_id=conversation)
        await rt.call("notes", "reply", {"text": f"Bearer {SECRETS[1]}"}, conversation_id=conversation)
        history = store(rt)

        async def summarised() -> bool:
            summary = await history.summary(conversation)
            return summary is not None and "Bearer" in summary

        await eventually(summarised)
        raw = aioredis.from_url(settings.redis_url or "", decode_responses=True)
        try:
            keys = await raw.keys(f"*conv:{conversation}:*")
            everything = ""
            for key in keys:
                kind = await raw.type(key)
                if kind == "list":
                    everything += "\n".join(await raw.lrange(key, 0, -1))
                elif kind == "hash":
                    everything += str(await raw.hgetall(key))
        finally:
            await raw.aclose()
    assert "region" in everything and "[EMAIL]" in everything  # what is not secret is kept
    for secret in SECRETS:
        assert secret not in everything


async def test_a_history_store_that_is_down_fails_no_call(nats_url: str, namespace: str) -> None:
    with RedisServer() as redis:
        s = Settings(nats_url=nats_url, redis_url=redis.url, namespace=namespace, heartbeat_interval=0.25)
        async with Runtime(s) as rt:
            await rt.serve(notes_agent())
            await rt.call("notes", "reply", {"text": "before"}, conversation_id="c1")
            await eventually(lambda: _count(store(rt), "c1", 2))
            redis.stop()
            for i in range(20):
                started = time.monotonic()
                assert await rt.call("notes", "reply", {"text": f"during {i}"}) == f"noted: during {i}"
                assert time.monotonic() - started < 1.0
            stats = recorder(rt).stats

            async def counted() -> bool:
                return stats.failures > 0 and stats.dropped > 0

            await eventually(counted, timeout=15)
            redis.restart()  # comes back empty: capture carries on
            await rt.call("notes", "reply", {"text": "after"}, conversation_id="c2")
            await eventually(lambda: _count(store(rt), "c2", 2), timeout=15)


async def test_a_summariser_given_to_the_runtime_writes_the_summary(settings: Settings) -> None:
    given: list[SummaryInput] = []

    async def by_model(digest: SummaryInput) -> str:
        given.append(digest)
        await anyio.sleep(0.01)  # as a model call would
        return f"{len(digest.messages)} messages about {digest.goal}; token sk-proj-abcdefghijklmnop1234"

    conversation = uuid.uuid4().hex
    async with Runtime(settings, summariser=by_model) as rt:
        await rt.serve(notes_agent())
        await rt.call("notes", "reply", {"text": "plan the release"}, conversation_id=conversation)
        history = store(rt)

        async def summarised() -> bool:
            return (await history.summary(conversation) or "").startswith("2 messages about plan the release")

        await eventually(summarised)
        summary = await history.summary(conversation)
        assert summary is not None and "sk-proj" not in summary  # a summariser's text is redacted too
        assert given[-1].conversation_id == conversation


async def test_a_durable_task_is_captured_like_a_call(settings: Settings) -> None:
    durable = Settings(**{**_fields(settings), "tasks": True})
    conversation = uuid.uuid4().hex
    async with Runtime(durable) as rt:
        await rt.serve(notes_agent())
        options = CallOptions(conversation_id=conversation)
        task = await rt.tasks.submit("notes", "reply", {"text": "index the archive"}, options, timeout=30)
        assert await task.result() == "noted: index the archive"
        await eventually(lambda: _count(store(rt), conversation, 2))
        stored = await store(rt).messages(conversation)
        assert [m.content for m in stored] == ["index the archive", "noted: index the archive"]
