"""Durable tasks on a real nats-server when things go wrong around them: lost connections,
unreadable journal lines, cancels that race a submission, clocks that disagree, values the
store refuses.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Agent, CallOptions, Context, Runtime, Settings
from bus.durable.keys import TaskKeys
from transports.jetstream_store import JetStreamDurable

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

log: list[str] = []
parents: list[str] = []

w = Agent("w", max_concurrency=4)
c = Agent("c", max_concurrency=4)


@w.action("echo")
async def _echo(ctx: Context, params: dict[str, Any]) -> Any:
    log.append("start:" + str(params.get("text")))
    if params.get("sleep"):
        await anyio.sleep(params["sleep"])
    log.append("done:" + str(params.get("text")))
    return {"echo": params.get("text")}


c.action("echo")(_echo)


@w.action("big")
async def _big(ctx: Context, params: dict[str, Any]) -> Any:
    log.append("big")
    return "x" * 1_100_000  # over nats-server's default max_payload (1 MiB)


@w.action("parent")
async def _parent(ctx: Context, params: dict[str, Any]) -> Any:
    parents.append(ctx.task.task_id or "")
    child = await ctx.submit("c", "echo", {"text": "child", "sleep": params.get("child_sleep", 30)})
    log.append("child:" + child.id)
    await anyio.sleep(30)


def jetstream(rt: Runtime) -> JetStreamDurable:
    """The runtime's JetStream task store."""
    assert rt.tasks.store is not None and isinstance(rt.tasks.store.raw, JetStreamDurable)
    return rt.tasks.store.raw


def settings(url: str, namespace: str) -> Settings:
    return Settings(
        nats_url=url, redis_url=None, namespace=namespace, tasks=True, task_ack_wait=1.5, open=True
    )


async def wait_for(condition: Any, timeout: float) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)


class Proxy:
    """A TCP proxy in front of nats-server: ``cut()`` drops its connections and refuses new
    ones until ``down`` is False again (a server restart or a network blip, as a client sees it)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.down = False
        self.open: list[asyncio.StreamWriter] = []
        self.pipes: set[asyncio.Future[None]] = set()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"nats://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.open += [writer, up_writer]

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except OSError:
                pass
            finally:
                sink.close()

        self.pipes |= {
            asyncio.ensure_future(pipe(reader, up_writer)),
            asyncio.ensure_future(pipe(up_reader, writer)),
        }

    def cut(self) -> None:
        self.down = True
        for writer in self.open:
            writer.close()
        self.open.clear()

    def close(self) -> None:
        self.cut()
        self.server.close()


async def test_a_result_too_large_to_store_ends_the_task_once(nats_url: str, namespace: str) -> None:
    log.clear()
    async with Runtime(settings(nats_url, namespace)) as rt:
        await rt.serve(w)
        task = await rt.tasks.submit("w", "big", max_attempts=3, timeout=30)
        with anyio.fail_after(25):
            outcome = await task.outcome()
    # The store refuses the result: the task ends with that refusal, and runs once.
    assert log.count("big") == 1
    assert outcome.error is not None and outcome.error.code == "PAYLOAD_TOO_LARGE"


async def test_an_unreadable_journal_event_stalls_no_other_task(nats_url: str, namespace: str) -> None:
    """Event 1 exists but does not decode (say: a kind a newer version writes). The journal
    takes an unreadable event for a free number, so creating it fails forever: the tender,
    which journals every attempt's start, never comes back, keeps no delivery alive, and the
    other running tasks of the instance are delivered again and run twice."""
    log.clear()
    async with Runtime(settings(nats_url, namespace)) as rt:
        await rt.serve(w)
        task_id = "b" * 32
        kv = await jetstream(rt).transport.nc.jetstream().key_value(f"A2A_TASKS_{namespace}")
        await kv.put(
            TaskKeys("w", rt.bus.subjects.sender, task_id).event(1), b'{"kind":"from-a-newer-version"}'
        )
        other = await rt.tasks.submit("w", "echo", {"text": "other", "sleep": 4}, timeout=20)
        await wait_for(lambda: "start:other" in log, 5)
        odd = await rt.tasks.submit(
            "w", "echo", {"text": "odd", "sleep": 1}, CallOptions(correlation_id=task_id)
        )
        with anyio.fail_after(15):
            await odd.outcome()
            await other.outcome()
    assert log.count("start:other") == 1


async def test_a_cancel_written_while_the_taker_is_disconnected_stops_the_attempt(
    nats_url: str, namespace: str
) -> None:
    log.clear()
    proxy = Proxy(int(nats_url.rsplit(":", 1)[1]))
    behind = await proxy.start()
    try:
        async with (
            Runtime(settings(behind, namespace)) as taker,
            Runtime(settings(nats_url, namespace)) as user,
        ):
            await taker.serve(w)
            task = await user.tasks.submit("w", "echo", {"text": "long", "sleep": 5}, timeout=30)
            await wait_for(lambda: "start:long" in log, 5)
            proxy.cut()  # the taker's connection drops for a moment
            await anyio.sleep(0.3)
            assert (await task.cancel()).state == "cancelled"
            await anyio.sleep(0.5)
            proxy.down = False  # and comes back
            nc = jetstream(taker).transport.nc
            await wait_for(lambda: nc.stats["reconnects"] >= 1 and nc.is_connected, 10)
            await anyio.sleep(6)
    finally:
        proxy.close()
    assert "done:long" not in log  # the cancel stopped the handler


async def test_a_waiter_disconnected_when_its_outcome_was_stored_ends_at_once_after_reconnecting(
    nats_url: str, namespace: str
) -> None:
    log.clear()
    proxy = Proxy(int(nats_url.rsplit(":", 1)[1]))
    behind = await proxy.start()
    ended: list[float] = []
    try:
        async with (
            Runtime(settings(nats_url, namespace)) as taker,
            Runtime(settings(behind, namespace)) as user,
        ):
            await taker.serve(w)
            task = await user.tasks.submit("w", "echo", {"text": "short", "sleep": 0.5}, timeout=30)

            async def wait() -> None:
                await task.outcome()
                ended.append(time.monotonic())

            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.sleep(0.2)
                proxy.cut()
                await wait_for(lambda: "done:short" in log, 5)
                await anyio.sleep(0.2)
                proxy.down = False
                nc = jetstream(user).transport.nc
                await wait_for(lambda: nc.stats["reconnects"] >= 1 and nc.is_connected, 10)
                back = time.monotonic()
    finally:
        proxy.close()
    assert ended[0] - back < 1.0  # not at the next recheck (5 s)


async def test_a_task_re_attached_from_a_process_with_a_slower_clock_ends_at_once(
    nats_url: str, namespace: str
) -> None:
    async with (
        Runtime(settings(nats_url, namespace)) as first,
        Runtime(settings(nats_url, namespace)) as second,
    ):
        await first.serve(w)
        task = await first.tasks.submit("w", "echo", {"text": "x"})
        await task.result()
        # The first process's clock was a minute ahead: its record says so.
        kv = await jetstream(first).transport.nc.jetstream().key_value(f"A2A_TASKS_{namespace}")
        record = task.record
        record.submitted_at += 60_000
        await kv.put(TaskKeys.of(record).record, msgspec.json.encode(record))
        await second.tasks.submit("w", "echo", {"text": "the second listens from now on"})
        again = await second.tasks.get(task.id)
        started = time.monotonic()
        with anyio.fail_after(10):
            await again.outcome()
    assert time.monotonic() - started < 1.0  # read, not left to the recheck (5 s)


async def test_a_cancel_reaches_the_children_of_a_task_whose_instance_died(
    nats_url: str, namespace: str
) -> None:
    """The parent's instance dies (its last attempt), the user cancels the parent; its next
    delivery is past max_attempts, so the taker gives up on it (AGENT_LOST lost to the
    CANCELLED outcome) and never cancels the children it journaled."""
    log.clear()
    async with (
        Runtime(settings(nats_url, namespace)) as children,
        Runtime(settings(nats_url, namespace)) as one,
    ):
        await children.serve(c)
        await one.serve(w)
        parent = await one.tasks.submit("w", "parent", max_attempts=1, timeout=60)
        await wait_for(lambda: any(line.startswith("child:") for line in log), 5)
        child_id = next(line for line in log if line.startswith("child:"))[6:]
        await one.tasks.stop(0, hand_back=False)  # as if it were killed
        assert (await parent.cancel()).state == "cancelled"
        async with Runtime(settings(nats_url, namespace)) as another:
            await another.serve(w)
            child = await one.tasks.get(child_id)
            with anyio.move_on_after(10):
                while await child.peek() is None:
                    await anyio.sleep(0.2)
            assert await child.peek() is not None


async def test_a_child_queued_as_its_parent_is_cancelled_is_cancelled_too(
    nats_url: str, namespace: str
) -> None:
    """ctx.submit queues the child, then journals it: a cancel heard in between (the round
    trip of the child's queueing) cancels the journaling, and the child runs to its end."""
    log.clear()
    async with (
        Runtime(settings(nats_url, namespace)) as children,
        Runtime(settings(nats_url, namespace)) as rt,
    ):
        await children.serve(c)
        await rt.serve(w)
        raw = jetstream(rt)
        enqueue = raw.enqueue

        async def cancelled_meanwhile(
            subject: str, msg_id: str, data: bytes, *, ttl: float | None = None
        ) -> bool:
            stored = await enqueue(subject, msg_id, data, ttl=ttl)
            if (
                ".taskq.c." in subject
            ):  # the user cancels the parent while the child's queueing is acknowledged
                await (await children.tasks.get(parents[-1])).cancel()
            return stored

        raw.enqueue = cancelled_meanwhile  # type: ignore[method-assign]
        parent = await rt.tasks.submit("w", "parent", {"child_sleep": 3}, timeout=20)
        assert (await parent.outcome()).state == "cancelled"
        await anyio.sleep(4)
    assert "done:child" not in log


async def test_a_task_cancelled_before_any_taker_listened_never_runs_whatever_the_clocks(
    nats_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The submitter's clock is 10 s ahead. Its task is cancelled while no instance of the
    agent runs; an instance that starts a moment later takes the task, has heard every
    cancel "since the task's submission" by the submitter's stamp, reads nothing, and runs it."""
    log.clear()
    real = time.time
    async with Runtime(settings(nats_url, namespace)) as submitter:
        monkeypatch.setattr("a2a.core.calls.time.time", lambda: real() + 10.0)
        task = await submitter.tasks.submit("w", "echo", {"text": "cancelled-before"}, timeout=60)
        monkeypatch.setattr("a2a.core.calls.time.time", real)
        assert (await task.cancel()).state == "cancelled"
        await anyio.sleep(0.5)
        async with Runtime(settings(nats_url, namespace)) as taker:
            await taker.serve(w)
            await anyio.sleep(3)
    assert "start:cancelled-before" not in log
