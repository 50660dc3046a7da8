"""Durable tasks on the in-memory store (``a2a.testing``): accepted once, ended exactly once,
handed to another instance when one stops, checkpoints and journaled effects across attempts."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from a2a import A2AError, Agent, CallOptions, Context
from a2a.errors import Cancelled, DeadlineExceeded, EffectInDoubt, PermissionDenied, Unavailable
from a2a.testing import TestBroker
from bus.durable.keys import TaskKeys

pytestmark = pytest.mark.anyio


def worker(log: list[Any]) -> Agent:
    """An agent whose actions note what they do in ``log``."""
    agent = Agent("worker", max_concurrency=4)

    @agent.action("echo")
    async def echo(ctx: Context, params: dict[str, Any]) -> Any:
        log.append(("echo", ctx.task.task_id, ctx.task.number))
        return {"echo": params.get("text")}

    @agent.action("fail")
    async def fail(ctx: Context, params: dict[str, Any]) -> Any:
        raise ValueError("no such file")

    @agent.action("steps")
    async def steps(ctx: Context, params: dict[str, Any]) -> Any:
        """Three steps with a checkpoint after each; the first attempt stalls after step 1."""
        done = ctx.task.last_checkpoint or 0
        log.append(("resume", ctx.task.number, done))
        for step in range(done + 1, 4):
            charged = await ctx.task.effect(f"charge-{step}", lambda step=step: _charge(log, step))
            await ctx.task.checkpoint(step)
            log.append(("step", ctx.task.number, step, charged))
            if ctx.task.number == 1 and step == 1:
                await anyio.sleep_forever()
        return {"steps": 3}

    @agent.action("doubt")
    async def doubt(ctx: Context, params: dict[str, Any]) -> Any:
        """The first attempt stalls inside its side effect, so no end is ever recorded."""

        async def send() -> str:
            log.append(("send", ctx.task.number))
            if ctx.task.number == 1:
                await anyio.sleep_forever()
            return "sent"

        return await ctx.task.effect("send-mail", send)

    @agent.action("plain")
    async def plain(ctx: Context, params: dict[str, Any]) -> Any:
        """A side effect given as a plain function (not async)."""
        return await ctx.task.effect("note", lambda: log.append(("noted", ctx.task.number)) or "noted")

    @agent.action("stall")
    async def stall(ctx: Context, params: dict[str, Any]) -> Any:
        log.append(("ran", ctx.task.number, anyio.current_time()))
        await anyio.sleep_forever()

    @agent.action("spend")
    async def spend(ctx: Context, params: dict[str, Any]) -> Any:
        log.append(("spend", ctx.task.number, ctx.budget_left))
        ctx.report_usage(completion=60)
        await ctx.task.checkpoint("spent")
        if ctx.task.number == 1:
            await anyio.sleep_forever()
        return "done"

    @agent.action("report")
    async def report(ctx: Context, params: dict[str, Any]) -> Any:
        for step in range(1, 4):
            await ctx.progress({"step": step})
        await ctx.progress({"unserialisable": object()})  # dropped and logged, never fatal
        return {"steps": 3}

    @agent.action("wait")
    async def wait(ctx: Context, params: dict[str, Any]) -> Any:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            log.append(("stopped", ctx.task.number))
            raise

    return agent


async def _charge(log: list[Any], step: int) -> str:
    log.append(("charged", step))
    return f"receipt-{step}"


async def test_a_task_ends_with_its_result_and_is_kept() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime(worker(log)) as rt:
        task = await rt.tasks.submit("worker", "echo", {"text": "hi"}, timeout=10)
        assert await task.result() == {"echo": "hi"}
        outcome = await task.outcome()
        assert (outcome.state, outcome.attempt) == ("completed", 1)
        assert log == [("echo", task.id, 1)]
        again = await rt.tasks.get(task.id)  # re-attached: the stored outcome
        assert await again.result() == {"echo": "hi"}
    assert broker.durable.queued == 0  # acknowledged: nothing left to deliver


async def test_a_side_effect_may_be_a_plain_function() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime(worker(log)) as rt:
        task = await rt.tasks.submit("worker", "plain", {}, timeout=10)
        assert await task.result() == "noted"
        local = await rt.call("worker", "plain", {})  # a plain call runs it too
    assert local == "noted" and log == [("noted", 1), ("noted", 1)]


async def test_the_same_key_gives_the_same_task_and_runs_it_once() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime(worker(log)) as rt:
        first = await rt.tasks.submit("worker", "echo", {"text": "a"}, key="order-7", user_id="ann")
        second = await rt.tasks.submit("worker", "echo", {"text": "a"}, key="order-7", user_id="ann")
        assert second.id == first.id and first.created and not second.created
        assert await second.result() == {"echo": "a"}
        other = await rt.tasks.submit("worker", "echo", {"text": "a"}, key="order-7", user_id="bob")
        assert other.id != first.id  # keys are per user
        await other.result()
    assert [entry[0] for entry in log] == ["echo", "echo"]


async def test_only_the_submitting_user_re_attaches() -> None:
    async with TestBroker() as broker, broker.runtime(worker([])) as rt:
        task = await rt.tasks.submit("worker", "echo", {"text": "x"}, user_id="ann")
        await task.result()
        assert (await rt.tasks.get(task.id, user_id="ann")).id == task.id
        for user in ("bob", None):
            with pytest.raises(PermissionDenied):
                await rt.tasks.get(task.id, user_id=user)
        with pytest.raises(PermissionDenied):
            await rt.tasks.get("not-a-task/../x", user_id="ann")


async def test_a_handlers_error_is_the_tasks_typed_outcome() -> None:
    async with TestBroker() as broker, broker.runtime(worker([])) as rt:
        task = await rt.tasks.submit("worker", "fail")
        with pytest.raises(A2AError) as raised:
            await task.result()
        assert raised.value.code == "AGENT_ERROR" and "no such file" in raised.value.message
        unknown = await rt.tasks.submit("worker", "nope")
        with pytest.raises(A2AError) as refused:
            await unknown.result()
        assert refused.value.code == "UNKNOWN_ACTION"


async def test_an_instance_that_stops_hands_its_task_to_another_which_resumes_from_the_checkpoint() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime() as client:
        with pytest.raises(RuntimeError):
            async with broker.runtime(worker(log)):  # stops with a short grace (an error)
                task = await client.tasks.submit("worker", "steps", timeout=30)
                with anyio.fail_after(5):
                    while ("step", 1, 1, "receipt-1") not in log:
                        await anyio.sleep(0.01)
                raise RuntimeError("the first instance goes away")
        async with broker.runtime(worker(log)):
            with anyio.fail_after(5):
                assert await task.result() == {"steps": 3}
        outcome = await task.outcome()
    assert outcome.attempt == 2
    assert ("resume", 2, 1) in log  # the second attempt started after step 1
    assert [e for e in log if e[0] == "charged"] == [("charged", 1), ("charged", 2), ("charged", 3)]


async def test_an_effect_started_and_never_ended_is_in_doubt_not_run_again() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime() as client:
        with pytest.raises(RuntimeError):
            async with broker.runtime(worker(log)):
                task = await client.tasks.submit("worker", "doubt", timeout=30)
                with anyio.fail_after(5):
                    while ("send", 1) not in log:
                        await anyio.sleep(0.01)
                raise RuntimeError("gone mid-effect")
        async with broker.runtime(worker(log)):
            with pytest.raises(EffectInDoubt) as raised, anyio.fail_after(5):
                await task.result()
    assert raised.value.details["effect"] == "send-mail"
    assert log == [("send", 1)]  # never sent again


async def test_a_task_whose_deadline_passes_in_the_queue_never_runs() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime() as client:
        task = await client.tasks.submit("worker", "echo", {"text": "late"}, timeout=0.3)
        with pytest.raises(DeadlineExceeded):
            await task.result()
        async with broker.runtime(worker(log)):
            await anyio.sleep(0.3)
    assert log == []


async def test_cancel_stops_the_running_attempt_and_ends_the_task() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime(worker(log)) as rt:
        task = await rt.tasks.submit("worker", "wait", timeout=30)
        await anyio.sleep(0.1)
        outcome = await task.cancel()
        assert outcome.state == "cancelled"
        with pytest.raises(Cancelled):
            await task.result()
        with anyio.fail_after(2):
            while ("stopped", 1) not in log:
                await anyio.sleep(0.01)


async def test_a_task_every_attempt_of_which_dies_ends_failed_with_each_story() -> None:
    async with TestBroker(ack_wait=0.2) as broker, broker.runtime() as client:
        task = await client.tasks.submit("worker", "echo", {"text": "poison"}, timeout=30)
        queue = client.bus.subjects.receiving().task_queue("worker")
        for _ in range(5):  # five takers that die holding it (never acknowledge)
            with anyio.fail_after(2):
                assert await broker.durable.take("worker", queue, max_items=1, timeout=1)
        log: list[Any] = []
        async with broker.runtime(worker(log)):
            with pytest.raises(A2AError) as raised, anyio.fail_after(5):
                await task.result()
    assert raised.value.code == "AGENT_LOST"
    assert len(raised.value.details["attempts"]) == 5 and log == []


async def test_tasks_are_off_without_a_store() -> None:
    async with TestBroker() as broker, broker.runtime(durable=None) as rt:
        with pytest.raises(Unavailable, match="A2A_TASKS"):
            await rt.tasks.submit("worker", "echo")


async def test_a_crash_leaves_the_task_to_be_redelivered_after_the_ack_wait() -> None:
    log: list[Any] = []
    async with TestBroker(ack_wait=0.5) as broker, broker.runtime() as client:
        async with broker.runtime(worker(log)) as crashed:
            task = await client.tasks.submit("worker", "steps", timeout=30)
            with anyio.fail_after(5):
                while ("step", 1, 1, "receipt-1") not in log:
                    await anyio.sleep(0.01)
            await crashed.tasks.stop(0, hand_back=False)  # gone without a word
            crashed_at = anyio.current_time()
        async with broker.runtime(worker(log)):
            with anyio.fail_after(5):
                assert await task.result() == {"steps": 3}
            waited = anyio.current_time() - crashed_at
    assert ("resume", 2, 1) in log
    assert 0.3 < waited < 3  # after the ack wait, not at once


async def test_garbage_where_an_outcome_belongs_ends_the_wait_at_the_deadline() -> None:
    async with TestBroker() as broker, broker.runtime() as client:
        task = await client.tasks.submit("nobody", "echo", timeout=0.3)
        await broker.durable.put(TaskKeys.of(task.record).outcome, b"\xff not json")
        with anyio.fail_after(3), pytest.raises(A2AError) as raised:
            await task.result()
    assert raised.value.code == "INVALID_ENVELOPE"


async def test_a_task_id_that_is_not_one_key_token_is_refused() -> None:
    from a2a import CallOptions
    from a2a.errors import InvalidParams

    async with TestBroker() as broker, broker.runtime() as client:
        with pytest.raises(InvalidParams):
            await client.tasks.submit("worker", "echo", options=CallOptions(correlation_id="a.b>"))


async def test_a_tasks_journal_is_followed_from_any_cursor() -> None:
    async with TestBroker() as broker, broker.runtime(worker([])) as rt:
        task = await rt.tasks.submit("worker", "report")
        with anyio.fail_after(3):
            events = [event async for event in task.events()]
            later = [event async for event in (await rt.tasks.get(task.id)).events(after=2)]
    kinds = [(e.n, e.kind, e.data) for e in events]
    assert kinds == [
        (1, "attempt", None),
        (2, "progress", {"step": 1}),
        (3, "progress", {"step": 2}),
        (4, "progress", {"step": 3}),
        (5, "ended", {"steps": 3}),
    ]
    assert events[0].instance and events[-1].state == "completed"
    assert [(e.n, e.kind) for e in later] == [(3, "progress"), (4, "progress"), (5, "ended")]


async def test_a_follower_sees_events_as_written_and_a_later_attempt_continues_the_journal() -> None:
    log: list[Any] = []
    async with TestBroker(ack_wait=0.3) as broker, broker.runtime() as client:
        task = await client.tasks.submit("worker", "steps")
        seen: list[Any] = []

        async def follow() -> None:
            async for event in task.events():
                seen.append((event.n, event.kind, event.attempt))

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            async with broker.runtime(worker(log)) as first:
                with anyio.fail_after(3):
                    while ("step", 1, 1, "receipt-1") not in log:
                        await anyio.sleep(0.01)
                await first.tasks.stop(0, hand_back=False)  # a crash: no hand-back event
            async with broker.runtime(worker(log)):
                with anyio.fail_after(5):
                    assert await task.result() == {"steps": 3}
    assert seen == [(1, "attempt", 1), (2, "attempt", 2), (3, "ended", 2)]


def family(log: list[Any]) -> list[Agent]:
    """A parent agent whose task submits child tasks to a child agent."""
    parent, child = Agent("parent", max_concurrency=4), Agent("child", max_concurrency=4)

    @parent.action("two")
    async def two(ctx: Context, params: dict[str, Any]) -> Any:
        first = await ctx.submit("child", "work", {"n": 1})
        log.append(("submitted", ctx.task.number, first.id))
        if ctx.task.number == 1 and params.get("stall"):
            await anyio.sleep_forever()  # the instance dies here: the next attempt re-attaches
        second = await ctx.submit("child", "work", {"n": 2})
        return [await first.result(), await second.result()]

    @parent.action("hang")
    async def hang(ctx: Context, params: dict[str, Any]) -> Any:
        await ctx.submit("child", "hang")
        await anyio.sleep_forever()

    @parent.action("loop")
    async def loop(ctx: Context, params: dict[str, Any]) -> Any:
        return await (await ctx.submit("parent", "two")).result()

    @child.action("work")
    async def work(ctx: Context, params: dict[str, Any]) -> Any:
        log.append(("work", params["n"]))
        return params["n"] * 10

    @child.action("hang")
    async def child_hang(ctx: Context, params: dict[str, Any]) -> Any:
        try:
            await anyio.sleep_forever()
        finally:
            log.append(("child stopped",))

    return [parent, child]


async def test_a_parent_run_again_re_attaches_to_its_children_instead_of_submitting_them_twice() -> None:
    log: list[Any] = []
    parent, child = family(log)
    async with TestBroker(ack_wait=0.3) as broker, broker.runtime(child), broker.runtime() as client:
        task = await client.tasks.submit("parent", "two", {"stall": True})
        async with broker.runtime(parent) as first:
            with anyio.fail_after(3):
                while not any(entry[0] == "submitted" for entry in log):
                    await anyio.sleep(0.01)
            await first.tasks.stop(0, hand_back=False)  # a crash after the first child was submitted
        async with broker.runtime(parent):
            with anyio.fail_after(5):
                assert await task.result() == [10, 20]
    submitted = [entry for entry in log if entry[0] == "submitted"]
    assert [n for _, n, _ in submitted] == [1, 2] and submitted[0][2] == submitted[1][2]  # the same child
    assert sorted(entry for entry in log if entry[0] == "work") == [("work", 1), ("work", 2)]  # each once


async def test_cancelling_a_parent_task_cancels_its_children() -> None:
    log: list[Any] = []
    async with TestBroker() as broker, broker.runtime(*family(log)) as rt:
        task = await rt.tasks.submit("parent", "hang")
        with anyio.fail_after(3):
            while True:
                children = [e for e in [e async for e in _until_child(task)] if e.kind == "child"]
                if children:
                    break
            await task.cancel()
            while ("child stopped",) not in log:
                await anyio.sleep(0.01)
        child = TaskKeys(children[0].data["agent"], rt.bus.subjects.sender, children[0].data["taskId"])
        stored = await broker.durable.get(child.outcome)
    assert stored is not None and b'"cancelled"' in stored and b"its parent task" in stored


async def _until_child(task: Any) -> Any:
    async for event in task.events():
        yield event
        if event.kind == "child":
            return


async def test_a_child_task_keeps_the_lineage_of_its_parent() -> None:
    async with TestBroker() as broker, broker.runtime(*family([])) as rt:
        task = await rt.tasks.submit("parent", "loop")
        with anyio.fail_after(3), pytest.raises(A2AError) as raised:
            await task.result()
    assert raised.value.code == "CYCLE_DETECTED"


async def test_attempts_after_a_crash_wait_longer_each_time() -> None:
    log: list[Any] = []
    async with TestBroker(ack_wait=0.2) as broker, broker.runtime() as client:
        await client.tasks.submit("worker", "stall", timeout=30)
        for n in (1, 2, 3):
            async with broker.runtime(worker(log)) as instance:
                with anyio.fail_after(5):
                    while len(log) < n:
                        await anyio.sleep(0.01)
                await instance.tasks.stop(0, hand_back=False)  # a crash holding it
    runs = [t for _, _, t in log]
    assert [n for _, n, _ in log] == [1, 2, 3]
    assert 0.15 < runs[1] - runs[0] < 0.45  # the ack wait
    assert 0.35 < runs[2] - runs[1] < 0.8  # twice the ack wait


async def test_a_later_attempt_gets_what_is_left_of_the_tasks_budget() -> None:
    log: list[Any] = []
    async with TestBroker(ack_wait=0.2) as broker, broker.runtime() as client:
        task = await client.tasks.submit("worker", "spend", options=CallOptions(budget=100))
        async with broker.runtime(worker(log)) as first:
            with anyio.fail_after(3):
                while not log:
                    await anyio.sleep(0.01)
            await first.tasks.stop(0, hand_back=False)
        async with broker.runtime(worker(log)):
            with anyio.fail_after(5), pytest.raises(A2AError) as raised:
                await task.result()
    assert [entry[2] for entry in log] == [100, 40]  # the second attempt starts with 40 left
    assert raised.value.code == "BUDGET_EXCEEDED"


async def test_every_attempt_of_a_task_is_in_the_trace_of_its_submission() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from a2a.observability.telemetry import Telemetry

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Telemetry(provider)
    log: list[Any] = []
    async with TestBroker(ack_wait=0.2) as broker, broker.runtime(telemetry=telemetry) as client:
        task = await client.tasks.submit("worker", "steps")
        async with broker.runtime(worker(log), telemetry=telemetry) as first:
            with anyio.fail_after(3):
                while ("step", 1, 1, "receipt-1") not in log:
                    await anyio.sleep(0.01)
            await first.tasks.stop(0, hand_back=False)
        async with broker.runtime(worker(log), telemetry=telemetry):
            with anyio.fail_after(5):
                await task.result()
    finished = spans.get_finished_spans()
    sent = [s for s in finished if s.name == "send worker.steps"]
    handled = [s for s in finished if s.name == "process worker.steps"]
    assert len(sent) == 1 and len(handled) == 2
    assert {s.context.trace_id for s in handled} == {sent[0].context.trace_id}
    assert all(s.parent is not None and s.parent.span_id == sent[0].context.span_id for s in handled)
