"""Calls that are alive are never ended for dead, and callers that are alive never lose theirs.

The liveness checks (``bus/protocol.py``) end a call when its callee dies and withdraw it
when its caller dies; here each side is alive but slow, blocked, busy or briefly cut off,
with real processes and real links under the permissions ``a2a nats-config`` generates:

* a callee whose event loop is blocked for seconds, or whose calls wait behind a busy
  worker pool, answers them all (never AGENT_LOST);
* a caller whose link drops for a few seconds, or that is blocked itself, keeps its calls,
  and a call it sends again after a longer loss is handled again, not answered with a
  cached "caller gone"; a quiet caller none of whose calls has room for a check is kept;
* calls in flight through a NATS restart, and a callee's own sub-second link loss, end OK;
* progress updates leave room for the ack, the caller checks and the reply;
* a client reconnects over a link whose round trip is longer than a first connection's
  attempt may take.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import nats
import pytest

from a2a import A2AError, Agent, Context, Runtime, Settings, by_instance
from a2a.dev.servers import NatsServer
from bus import codec
from bus.protocol import CHECK_ROOM, MAX_RESPONSES
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.helpers import AgentProcess
from tests.security.conftest import NAMESPACE, ROSTER, as_user, password
from tests.topology.link import Link

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# -- the agent (served by `a2a serve tests.security.test_call_false_positives:reader`) --------

reader = Agent("reader", max_concurrency=int(os.environ.get("FP_CONCURRENCY", "32")), max_queue=10_000)


def _note(path: str | None, line: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@reader.action("block")
async def _block(ctx: Context, params: dict[str, Any]) -> Any:
    """Block the event loop (synchronous work) for ``seconds``."""
    time.sleep(params["seconds"])  # noqa: ASYNC251 - blocking the loop is the point
    return "unblocked"


@reader.action("cpu")
async def _cpu(ctx: Context, params: dict[str, Any]) -> Any:
    """``ms`` milliseconds of synchronous work (the worker takes the next call at once)."""
    time.sleep(params["ms"] / 1000)  # noqa: ASYNC251 - busy, as with synchronous work
    return "ok"


@reader.action("hold")
async def _hold(ctx: Context, params: dict[str, Any]) -> Any:
    """Note the call in ``log``, sleep ``seconds`` (``again`` when handled before); note how it
    ended in ``marker``."""
    log = params.get("log")
    again = log is not None and os.path.exists(log)  # noqa: ASYNC240 - a test agent
    _note(log, ctx.instance_id)
    try:
        await anyio.sleep(params["again"] if again else params["seconds"])
    except anyio.get_cancelled_exc_class():
        _note(params.get("marker"), "cancelled")
        raise
    _note(params.get("marker"), "completed")
    return "held"


@reader.action("chatty")
async def _chatty(ctx: Context, params: dict[str, Any]) -> Any:
    """``n`` progress updates at once, then ``seconds`` of work."""
    for step in range(params["n"]):
        await ctx.progress({"step": step})
    await anyio.sleep(params["seconds"])
    return "done"


@reader.action("whoami")
async def _whoami(ctx: Context, params: dict[str, Any]) -> Any:
    return {"instance": ctx.instance_id, "pid": os.getpid()}


# -- helpers -----------------------------------------------------------------------------------


def served(url: str, **env: str) -> AgentProcess:
    """``a2a serve`` of this module's ``reader`` as the NATS user reader, connected to ``url``."""
    return AgentProcess(
        as_user(url, "reader"),
        "tests.security.test_call_false_positives:reader",
        NATS_USER="reader",
        NATS_PASSWORD=password("reader"),
        A2A_ROSTER=str(ROSTER),
        **env,
    )


async def answering(rt: Runtime, agent: str = "reader", timeout: float = 20) -> str:
    """Wait until ``agent`` answers; returns the instance that did."""
    with anyio.fail_after(timeout):
        while True:
            try:
                return str((await rt.call(agent, "whoami", timeout=1))["instance"])
            except A2AError:
                await anyio.sleep(0.1)


async def outcome(call: Any) -> tuple[str, float]:
    """("ok" or the error code and reason, seconds it took)."""
    start = anyio.current_time()
    try:
        await call
        code = "ok"
    except A2AError as exc:
        code = exc.code + (f":{exc.details['reason']}" if "reason" in exc.details else "")
    return code, anyio.current_time() - start


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def files(tmp_path: Path) -> Path:
    return tmp_path


def forwarder(url: str) -> Link:
    """A TCP forwarder to the server at ``url`` that a test can cut and restore."""
    parts = urlsplit(url)
    return Link((parts.hostname or "127.0.0.1", parts.port or 4222)).restore()


def via(link: Link) -> str:
    return f"nats://127.0.0.1:{link.port}"


# -- a busy or blocked callee --------------------------------------------------------------------


async def test_a_callee_whose_event_loop_is_blocked_for_seconds_answers_its_calls(secured_nats: str) -> None:
    with served(secured_nats):
        async with Runtime(as_user(secured_nats, "client")) as rt:
            await answering(rt)
            results: dict[str, tuple[str, float]] = {}

            async def call(key: str, action: str, params: dict[str, Any], after: float) -> None:
                await anyio.sleep(after)
                results[key] = await outcome(rt.call("reader", action, params, timeout=20))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "blocks 4.5s", "block", {"seconds": 4.5}, 0)
                tg.start_soon(call, "arrives during the block", "hold", {"seconds": 0.1}, 0.5)
    print(f"\ncalls by name to a callee blocked 4.5 s: {results}")
    assert {key: code for key, (code, _) in results.items()} == {
        "blocks 4.5s": "ok",
        "arrives during the block": "ok",
    }


async def test_calls_queued_behind_a_busy_worker_pool_are_all_answered(secured_nats: str) -> None:
    """One slot, 150 calls of 30 ms of synchronous work each: most wait seconds to be handled."""
    with served(secured_nats, FP_CONCURRENCY="1"):
        async with Runtime(as_user(secured_nats, "client")) as rt:
            await answering(rt)
            codes: Counter[str] = Counter()

            async def one() -> None:
                codes[(await outcome(rt.call("reader", "cpu", {"ms": 30}, timeout=60)))[0]] += 1

            start = anyio.current_time()
            async with anyio.create_task_group() as tg:
                for _ in range(150):
                    tg.start_soon(one)
            took = anyio.current_time() - start
    print(f"\n150 calls queued behind one busy slot: {dict(codes)} in {took:.1f}s")
    assert codes == {"ok": 150}


# -- a caller cut off for a while, or blocked -------------------------------------------------------


@pytest.mark.parametrize(("cut", "runs"), [(2.5, 1), (5.5, 2)])
async def test_a_caller_whose_link_drops_for_seconds_gets_its_answer(
    secured_nats: str, files: Path, cut: float, runs: int
) -> None:
    """Cut for 2.5 s: a check of the caller during the cut finds it gone, the next one (2 s
    later) finds it back, and the callee keeps the call (a cut of about 3.5 s, less the time
    the caller takes to reconnect, is the most it keeps through: a loaded machine takes some
    of that margin). Cut for longer: the callee stops it as its caller's, and handles it again
    when the caller, back, sends it again (never a cached "caller gone")."""
    log, marker = files / "taken", files / "ended"
    link = forwarder(secured_nats)
    try:
        with served(secured_nats):
            async with Runtime(as_user(via(link), "client")) as rt:
                await answering(rt)
                result: list[tuple[str, float]] = []

                async def call() -> None:
                    params = {
                        "seconds": 6 if runs == 1 else 8,
                        "again": 0.5,
                        "log": str(log),
                        "marker": str(marker),
                    }
                    result.append(await outcome(rt.call("reader", "hold", params, timeout=20)))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    with anyio.fail_after(5):
                        while not lines(log):
                            await anyio.sleep(0.02)
                    await anyio.sleep(1.0)
                    await anyio.to_thread.run_sync(link.cut)
                    await anyio.sleep(cut)
                    await anyio.to_thread.run_sync(link.restore)
    finally:
        link.close()
    print(f"\ncaller's link cut {cut}s mid-call: {result}, handled {len(lines(log))}x, {lines(marker)}")
    assert result[0][0] == "ok"
    assert len(lines(log)) == runs
    assert lines(marker) == ["completed"] if runs == 1 else ["cancelled", "completed"]


async def test_a_caller_blocked_for_seconds_keeps_its_chatty_call(secured_nats: str) -> None:
    """62 progress updates, then 5 s of work; the caller's own event loop is blocked 3 s meanwhile."""
    with served(secured_nats):
        async with Runtime(as_user(secured_nats, "client")) as rt:
            await answering(rt)
            seen: list[Any] = []
            result: list[tuple[str, float]] = []

            async def call() -> None:
                params = {"n": 62, "seconds": 5}
                result.append(
                    await outcome(rt.call("reader", "chatty", params, timeout=20, on_progress=seen.append))
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(1.5)
                time.sleep(3)  # noqa: ASYNC251 - the caller's event loop is blocked on purpose
    print(f"\ncaller blocked 3 s during a chatty call: {result}, {len(seen)} updates")
    assert result[0][0] == "ok"


async def test_a_quiet_caller_whose_calls_have_no_room_for_a_check_is_kept(
    secured_nats: str, files: Path
) -> None:
    """A caller that never probes, whose only call has no room left for a check: silence alone
    does not stop it."""
    log, marker = files / "taken", files / "ended"
    async with Runtime(as_user(secured_nats, "reader")) as server:
        (host,) = await server.serve(reader)
        assert host.endpoint is not None
        nc = await nats.connect(secured_nats, user="client", password=password("client"))
        try:
            reply = f"a2a.{NAMESPACE}.reply.client.quiet{uuid.uuid4().hex[:8]}.call1"
            replies: list[bytes] = []

            async def on_reply(msg: Any) -> None:
                if not msg.headers:
                    replies.append(msg.data)

            await nc.subscribe(reply, cb=on_reply)
            env = RequestEnvelope(
                message_id="m-1",
                source_agent_id="client",
                target_agent_id="reader",
                conversation_id="c",
                protocol_version=PROTOCOL_VERSION,
                payload=Payload(
                    action="hold", parameters={"seconds": 4, "log": str(log), "marker": str(marker)}
                ),
                metadata=Metadata(timestamp=1, correlation_id="call1", ttl_ms=20_000, hop_count=1),
            )
            await nc.publish(f"a2a.{NAMESPACE}.agent.reader.client", codec.encode_envelope(env), reply=reply)
            await nc.flush()
            with anyio.fail_after(5):
                while "call1" not in host.endpoint.held:
                    await anyio.sleep(0.01)
            host.endpoint.held["call1"].sent = MAX_RESPONSES - 1  # as after many progress updates
            with anyio.fail_after(8):
                while not replies:
                    await anyio.sleep(0.05)
        finally:
            await nc.close()
    assert lines(marker) == ["completed"]
    assert json.loads(replies[0])["type"] == "response"


# -- restarts and link losses on the way ------------------------------------------------------------


async def test_calls_in_flight_through_a_nats_restart_are_all_answered() -> None:
    """20 calls of 6 s by name, half of them sent just before NATS goes down for 3 s."""
    namespace = "fp" + uuid.uuid4().hex[:6]
    with NatsServer() as server:
        settings = Settings(nats_url=server.url, redis_url=None, namespace=namespace)
        async with Runtime(settings) as callee, Runtime(settings) as rt:
            await callee.serve(reader)
            await answering(rt)
            codes: Counter[str] = Counter()

            async def one(after: float) -> None:
                await anyio.sleep(after)
                codes[(await outcome(rt.call("reader", "hold", {"seconds": 6}, timeout=25)))[0]] += 1

            async with anyio.create_task_group() as tg:
                for after in [0.0] * 10 + [1.95] * 10:  # acknowledged before the restart, or not
                    tg.start_soon(one, after)
                await anyio.sleep(2)
                await anyio.to_thread.run_sync(server.kill)
                await anyio.sleep(3)
                await anyio.to_thread.run_sync(server.restart)
    print(f"\n20 calls through a 3 s NATS outage: {dict(codes)}")
    assert codes == {"ok": 20}


async def test_a_callee_that_loses_its_link_for_a_moment_keeps_its_calls(secured_nats: str) -> None:
    link = forwarder(secured_nats)
    try:
        with served(via(link)):
            async with Runtime(as_user(secured_nats, "client")) as rt:
                instance = await answering(rt)
                results: list[tuple[str, float]] = []

                async def one() -> None:
                    results.append(
                        await outcome(rt.call(by_instance(instance), "hold", {"seconds": 5}, timeout=20))
                    )

                async with anyio.create_task_group() as tg:
                    for _ in range(3):
                        tg.start_soon(one)
                    for pause in (1.5, 1.15):  # two blips of 0.3 s, at other phases of the probes
                        await anyio.sleep(pause)
                        await anyio.to_thread.run_sync(link.cut)
                        await anyio.sleep(0.3)
                        await anyio.to_thread.run_sync(link.restore)
    finally:
        link.close()
    print(f"\ncallee's link cut twice for 0.3 s: {results}")
    assert [code for code, _ in results] == ["ok"] * 3


# -- what a callee publishes on a reply subject ------------------------------------------------------


@pytest.mark.parametrize("updates", [MAX_RESPONSES + 6, MAX_RESPONSES - 1])
async def test_progress_updates_leave_room_for_the_ack_the_checks_and_the_reply(
    secured_nats: str, updates: int
) -> None:
    """Updates sent at once, then 0.5 s of work: the ack comes after them, then the reply."""
    async with (
        Runtime(as_user(secured_nats, "reader")) as server,
        Runtime(as_user(secured_nats, "client")) as rt,
    ):
        (host,) = await server.serve(reader)
        seen: list[Any] = []
        result = await rt.call(
            "reader", "chatty", {"n": updates, "seconds": 0.5}, timeout=4, on_progress=seen.append
        )
        assert host.endpoint is not None
        kept = MAX_RESPONSES - 2 - CHECK_ROOM  # the reply's place, the ack's and the checks'
    assert result == "done"
    assert seen == [{"step": n} for n in range(kept)]
    assert host.endpoint.progress_dropped == updates - kept


# -- a slow link ---------------------------------------------------------------------------------------


class SlowLink:
    """A TCP forwarder to ``target`` that delays every byte by ``delay`` seconds each way once
    :meth:`slow_down` is called (which also drops the connections it carries)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.delay = 0.0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def slow_down(self, delay: float) -> None:
        self.delay = delay
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._conns.clear()

    def close(self) -> None:
        self.slow_down(0)
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(self.target)
            except OSError:
                return
            self._conns += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        due: queue.Queue[tuple[float, bytes]] = queue.Queue()

        def deliver() -> None:
            while True:
                at, data = due.get()
                time.sleep(max(0.0, at - time.monotonic()))
                try:
                    if not data:
                        raise OSError
                    sink.sendall(data)
                except OSError:
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_RDWR)
                    return

        threading.Thread(target=deliver, daemon=True).start()
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            due.put((time.monotonic() + self.delay, data))
            if not data:
                return


@pytest.fixture
def plain_nats() -> Iterator[NatsServer]:
    server = NatsServer()
    with server:
        yield server


async def test_a_client_reconnects_over_a_link_with_a_long_round_trip(plain_nats: NatsServer) -> None:
    """Three server URLs leave a first connection 0.5 s per attempt; a reconnect over a link
    with a 0.6 s round trip still succeeds."""
    link = SlowLink(("127.0.0.1", plain_nats.port))
    url = f"nats://127.0.0.1:{link.port}"
    try:
        async with Runtime(Settings(nats_url=",".join([url] * 3), redis_url=None, namespace="fp")) as rt:
            transport = rt.bus.transport
            link.slow_down(0.3)
            with anyio.fail_after(2):
                while transport.is_connected:
                    await anyio.sleep(0.01)
            start = anyio.current_time()
            with anyio.fail_after(10):
                while not transport.is_connected:
                    await anyio.sleep(0.05)
            took = anyio.current_time() - start
            await transport.flush(timeout=3)
    finally:
        link.close()
    print(f"\nreconnected over a 0.6 s round trip after {took:.2f}s")
