"""Every call ends fast when a side dies: a callee killed at any moment, a caller killed mid-call.

Callees and callers run as separate processes under the permissions ``a2a nats-config``
generates (tests/security/roster.yaml: client -> writer -> reader), and are SIGKILLed:

* a callee killed right after taking calls (before it acknowledged them) ends every one of
  them with AGENT_LOST within about two seconds, not at the calls' deadline, and they are
  withdrawn in one notice; in a pool, the dead instance's unacknowledged calls end within
  about two seconds when the caller knew that instance, else after UNCLAIMED_FOR seconds
  (the live instances' are answered);
* a caller killed mid-call has its work withdrawn: the callee's handler is cancelled within
  a few seconds, and through a relay the relay's own call is withdrawn too;
* a caller that is alive but silent keeps its call; an unreachable NATS is reported at once.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import nats
import pytest

from a2a import A2AError, Agent, Context, Runtime, Settings, by_instance
from a2a.dev.servers import die_with_parent
from a2a.errors import Unavailable
from bus import codec
from bus.protocol import CHECK_ROOM, MAX_RESPONSES, UNCLAIMED_FOR
from bus.wire import PROTOCOL_VERSION, Metadata, Payload, RequestEnvelope
from tests.helpers import ROOT, AgentProcess, agent_env
from tests.security.conftest import NAMESPACE, ROSTER, as_user, password

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# -- the agents (served by `a2a serve tests.security.test_call_liveness:<name>`) -------------

reader = Agent("reader", max_concurrency=32)


def _note(path: str | None, line: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


@reader.action("hold")
async def _hold(ctx: Context, params: dict[str, Any]) -> Any:
    """Note the call in ``log``, sleep ``seconds``; note how it ended in ``marker``."""
    _note(params.get("log"), f"{os.getpid()} {ctx.instance_id}")
    try:
        await anyio.sleep(params["seconds"])
    except anyio.get_cancelled_exc_class():
        _note(params.get("marker"), "cancelled")
        raise
    _note(params.get("marker"), "completed")
    return {"pid": os.getpid()}


@reader.action("whoami")
async def _whoami(ctx: Context, params: dict[str, Any]) -> Any:
    return {"instance": ctx.instance_id, "pid": os.getpid()}


writer = Agent("writer")


@writer.action("relay")
async def _relay(ctx: Context, params: dict[str, Any]) -> Any:
    """Call ``reader.hold`` with ``params``; note in ``relay_marker`` if this handler is cancelled."""
    try:
        return await ctx.call("reader", "hold", params)
    except anyio.get_cancelled_exc_class():
        _note(params.get("relay_marker"), "cancelled")
        raise


# -- processes -----------------------------------------------------------------------------


def agent(secured_nats: str, redis_url: str, user: str) -> AgentProcess:
    """``a2a serve`` of this module's agent ``user``, logged in as that NATS user."""
    return AgentProcess(
        as_user(secured_nats, user, redis_url, heartbeat_interval=0.25),
        f"tests.security.test_call_liveness:{user}",
        NATS_USER=user,
        NATS_PASSWORD=password(user),
        A2A_ROSTER=str(ROSTER),
    )


class CallerProcess:
    """``a2a call <agent> <action>`` as the NATS user ``client``, in a process of its own."""

    def __init__(self, secured_nats: str, redis_url: str, agent: str, action: str, params: dict[str, Any]):
        settings = as_user(secured_nats, "client", redis_url)
        secrets = {"NATS_USER": "client", "NATS_PASSWORD": password("client"), "A2A_ROSTER": str(ROSTER)}
        env = agent_env(settings, **secrets)
        args = ["-m", "a2a", "call", agent, action, "--params", json.dumps(params), "--timeout", "15"]
        self.proc = subprocess.Popen(
            [sys.executable, *args],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def files() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="a2a-liveness-") as folder:
        yield Path(folder)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def until(condition: Any, timeout: float, interval: float = 0.005) -> float:
    """Poll ``condition()`` until true; returns the seconds it took."""
    start = anyio.current_time()
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(interval)
    return anyio.current_time() - start


async def whoami(rt: Runtime) -> dict[str, Any]:
    """The reader's answer to ``whoami`` once it is up."""
    with anyio.fail_after(20):
        while True:
            try:
                answer: dict[str, Any] = await rt.call("reader", "whoami", timeout=1)
                return answer
            except A2AError:
                await anyio.sleep(0.1)


# -- a callee killed right after taking calls ------------------------------------------------


async def calls_then_kill(
    rt: Runtime,
    victims: list[AgentProcess],
    target: Any,
    log: Path,
    *,
    calls: int,
    delay: float,
    timeout: float = 8,
) -> tuple[list[tuple[str, float]], float]:
    """``calls`` calls of ``hold`` to ``target``; once all are taken, SIGKILL ``victims`` after ``delay``.

    Returns each call's outcome (error code or "ok") with when it ended, from the kill.
    """
    ended: list[tuple[str, float]] = []
    killed_at = 0.0

    async def one() -> None:
        try:
            await rt.call(target, "hold", {"seconds": 3.5, "log": str(log)}, timeout=timeout)
            outcome = "ok"
        except A2AError as exc:
            outcome = exc.code
        ended.append((outcome, anyio.current_time()))

    async with anyio.create_task_group() as tg:
        for _ in range(calls):
            tg.start_soon(one)
        await until(lambda: len(lines(log)) >= calls, 5)
        await anyio.sleep(delay)
        for victim in victims:
            victim.kill()
        killed_at = anyio.current_time()
    return [(outcome, at - killed_at) for outcome, at in ended], killed_at


@pytest.mark.parametrize("delay", [0.05, 0.3])
@pytest.mark.parametrize("route", ["name", "instance"])
async def test_a_callee_killed_right_after_taking_calls_ends_them_as_agent_lost(
    secured_nats: str, redis_url: str, files: Path, delay: float, route: str
) -> None:
    log = files / "taken"
    with agent(secured_nats, redis_url, "reader") as callee:
        async with Runtime(as_user(secured_nats, "client")) as rt:
            me = await whoami(rt)
            target = "reader" if route == "name" else by_instance(me["instance"])
            before = rt.bus.caller.withdrawals.sent
            outcomes, _ = await calls_then_kill(rt, [callee], target, log, calls=20, delay=delay)
            await anyio.sleep(0.1)
            notices = rt.bus.caller.withdrawals.sent - before
            assert len(rt.bus.pending) == 0
    codes = Counter(code for code, _ in outcomes)
    slowest = max(at for _, at in outcomes)
    print(
        f"\ncallee killed {delay}s after taking 20 calls by {route}: {dict(codes)},"
        f" last {slowest:.2f}s later; withdrawn in {notices} cancel notices"
    )
    assert codes == {"AGENT_LOST": 20}
    assert slowest < 3.0, f"{slowest:.2f}s (target: within 2 s)"
    assert notices == 1  # the calls lost together are withdrawn together


async def test_calls_of_different_ages_lost_together_end_in_one_notice(
    secured_nats: str, redis_url: str, files: Path
) -> None:
    """Calls sent 0.6 s apart to an instance that dies end together: a probe round that finds it
    dead ends every call it held, also those too young to have been probed in that round."""
    log = files / "taken"
    with agent(secured_nats, redis_url, "reader") as callee:
        async with Runtime(as_user(secured_nats, "client")) as rt:
            me = await whoami(rt)
            target = by_instance(me["instance"])
            before = rt.bus.caller.withdrawals.sent
            ended: list[str] = []

            async def one() -> None:
                try:
                    await rt.call(target, "hold", {"seconds": 5, "log": str(log)}, timeout=8)
                    ended.append("ok")
                except A2AError as exc:
                    ended.append(exc.code)

            async with anyio.create_task_group() as tg:
                for taken, then in ((5, 0.6), (10, 0.1)):  # a second wave 0.6 s younger; kill
                    for _ in range(5):
                        tg.start_soon(one)
                    await until(lambda n=taken: len(lines(log)) >= n, 5)
                    await anyio.sleep(then)
                callee.kill()
            await anyio.sleep(0.1)
            notices = rt.bus.caller.withdrawals.sent - before
    assert ended == ["AGENT_LOST"] * 10
    assert notices == 1


async def test_in_a_pool_only_the_dead_instances_calls_are_lost(
    secured_nats: str, redis_url: str, files: Path
) -> None:
    """Calls by name to a pool: the killed instance's unacknowledged calls end AGENT_LOST after
    UNCLAIMED_FOR seconds (no instance claims them, yet the agent lives: a busy one would not
    claim them either), well before their deadline; the live instance's are answered."""
    log = files / "taken"
    first, second = agent(secured_nats, redis_url, "reader"), agent(secured_nats, redis_url, "reader")
    with first, second:
        async with Runtime(as_user(secured_nats, "client")) as rt:
            with anyio.fail_after(20):
                seen: set[int] = set()
                while len(seen) < 2:  # both instances in the queue group
                    try:
                        seen.add((await rt.call("reader", "whoami", timeout=1))["pid"])
                    except A2AError:
                        await anyio.sleep(0.1)
            outcomes, _ = await calls_then_kill(rt, [first], "reader", log, calls=20, delay=0.05, timeout=20)
    taken = Counter(int(line.split()[0]) for line in lines(log))
    codes = Counter(code for code, _ in outcomes)
    lost = [at for code, at in outcomes if code == "AGENT_LOST"]
    print(
        f"\npool, one of two killed 0.05s after taking calls: {dict(codes)}, taken {dict(taken)}, "
        f"lost within {max(lost, default=0):.2f}s"
    )
    assert codes == {"AGENT_LOST": taken[first.pid], "ok": taken[second.pid]}, (codes, taken)
    assert min(lost, default=UNCLAIMED_FOR) >= UNCLAIMED_FOR and max(lost, default=0) < UNCLAIMED_FOR + 3.5


async def test_in_a_pool_a_known_instance_dying_ends_its_unclaimed_calls_within_seconds(
    secured_nats: str, redis_url: str, files: Path
) -> None:
    """The caller knows the instance that dies (it holds another call of the caller): the calls
    it took but never acknowledged end AGENT_LOST within about two seconds, not UNCLAIMED_FOR."""
    log = files / "taken"
    first, second = agent(secured_nats, redis_url, "reader"), agent(secured_nats, redis_url, "reader")
    with first, second:
        async with Runtime(as_user(secured_nats, "client")) as rt:
            instances: dict[int, str] = {}
            with anyio.fail_after(20):
                while len(instances) < 2:
                    try:
                        me = await rt.call("reader", "whoami", timeout=1)
                        instances[me["pid"]] = me["instance"]
                    except A2AError:
                        await anyio.sleep(0.1)
            held: list[str] = []

            async def held_by_first() -> None:
                try:
                    await rt.call(by_instance(instances[first.pid]), "hold", {"seconds": 30}, timeout=20)
                except A2AError as exc:
                    held.append(exc.code)

            async with anyio.create_task_group() as tg:
                tg.start_soon(held_by_first)
                await anyio.sleep(1.0)  # acknowledged, and seen by a probe round
                outcomes, _ = await calls_then_kill(
                    rt, [first], "reader", log, calls=20, delay=0.05, timeout=20
                )
    taken = Counter(int(line.split()[0]) for line in lines(log))
    codes = Counter(code for code, _ in outcomes)
    lost = [at for code, at in outcomes if code == "AGENT_LOST"]
    print(f"\npool, a known instance killed: {dict(codes)}, lost within {max(lost, default=0):.2f}s")
    assert held == ["AGENT_LOST"]
    assert taken[first.pid] > 0, taken  # some calls did go to the instance that died
    assert codes == {"AGENT_LOST": taken[first.pid], "ok": taken[second.pid]}, (codes, taken)
    assert max(lost) < 3.0


# -- a caller killed mid-call ------------------------------------------------------------------


@pytest.mark.parametrize("via", ["direct", "relay"])
async def test_a_killed_callers_work_is_withdrawn(
    secured_nats: str, redis_url: str, files: Path, via: str
) -> None:
    log, marker, relay_marker = files / "taken", files / "reader-ended", files / "relay-ended"
    params = {"seconds": 15, "log": str(log), "marker": str(marker), "relay_marker": str(relay_marker)}
    with agent(secured_nats, redis_url, "reader"), agent(secured_nats, redis_url, "writer"):
        target, action = ("reader", "hold") if via == "direct" else ("writer", "relay")
        await serving(secured_nats, "reader")
        await serving(secured_nats, "writer")
        caller = CallerProcess(secured_nats, redis_url, target, action, params)
        try:
            await until(lambda: lines(log), 20)
            await anyio.sleep(1.5)
            caller.kill()
        finally:
            caller.close()
        try:
            took = await until(lambda: lines(marker), 8, 0.02)
        except TimeoutError:
            pytest.fail(f"the callee still runs 8 s after its caller died ({lines(marker)})")
    print(f"\ncaller killed 1.5s into a 15s call ({via}): callee's handler cancelled {took:.2f}s later")
    assert lines(marker) == ["cancelled"]
    if via == "relay":
        assert lines(relay_marker) == ["cancelled"]
    assert took < 5.0


async def serving(url: str, agent: str, timeout: float = 20) -> None:
    """Wait until ``agent`` serves requests (a request that is not one gets an error reply)."""
    nc = await nats.connect(url, user="admin", password=password("admin"))
    try:
        with anyio.fail_after(timeout):
            while True:
                try:
                    await nc.request(f"a2a.{NAMESPACE}.agent.{agent}.admin", b"{}", timeout=0.5)
                    return
                except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                    await anyio.sleep(0.1)
    finally:
        await nc.close()


async def test_a_silent_caller_that_is_still_there_keeps_its_call(
    secured_nats: str, redis_url: str, files: Path
) -> None:
    """A caller that never probes (a plain client with a runtime's reply subject) is not taken
    for dead while it is connected; once its subscription is gone, its call is withdrawn."""
    log, marker = files / "taken", files / "ended"
    with agent(secured_nats, redis_url, "reader"):
        await serving(secured_nats, "reader")
        nc = await nats.connect(secured_nats, user="client", password=password("client"))
        try:
            prefix = f"a2a.{NAMESPACE}.reply.client.silent{uuid.uuid4().hex[:8]}."
            replies: list[bytes] = []

            async def on_reply(msg: Any) -> None:
                if not msg.headers:
                    replies.append(msg.data)

            sub = await nc.subscribe(prefix + "*", cb=on_reply)
            for key, seconds in (("kept", 3.5), ("dropped", 15)):
                env = RequestEnvelope(
                    message_id=f"m-{key}",
                    source_agent_id="client",
                    target_agent_id="reader",
                    conversation_id="c",
                    protocol_version=PROTOCOL_VERSION,
                    payload=Payload(
                        action="hold", parameters={"seconds": seconds, "log": str(log), "marker": str(marker)}
                    ),
                    metadata=Metadata(timestamp=1, correlation_id=key, ttl_ms=20_000, hop_count=1),
                )
                await nc.publish(
                    f"a2a.{NAMESPACE}.agent.reader.client", codec.encode_envelope(env), reply=prefix + key
                )
                await nc.flush()
                taken = 1 if key == "kept" else 2
                await until(lambda: len(lines(log)) == taken, 5)  # noqa: B023 - awaited at once
                if key == "kept":  # silent for 3.5 s, well past the callee's check: still answered
                    await until(lambda: replies, 6, 0.05)
                    assert lines(marker) == ["completed"]
            await sub.unsubscribe()  # now the caller is gone for the callee
            await nc.flush()
            took = await until(lambda: len(lines(marker)) == 2, 8, 0.02)
            assert lines(marker) == ["completed", "cancelled"]
            print(f"\na caller's reply subscription gone: its call withdrawn {took:.2f}s later")
        finally:
            await nc.close()


# -- an unreachable NATS -------------------------------------------------------------------------


@pytest.mark.parametrize("server", ["closed-port", "silent-listener"])
async def test_an_unreachable_nats_is_reported_within_three_seconds(server: str) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if server == "silent-listener":  # accepts connections and never says a word
            listener.listen(16)
        else:
            listener.close()
        start = anyio.current_time()
        with pytest.raises(Unavailable) as refused:
            async with Runtime(Settings(nats_url=f"nats://127.0.0.1:{port}", redis_url=None)):
                pass
        took = anyio.current_time() - start
    print(f"\nunreachable NATS ({server}) reported after {took:.2f}s: {refused.value.message}")
    assert took < 3.0
    assert f"127.0.0.1:{port}" in refused.value.message


# -- what a callee publishes on a reply subject ------------------------------------------------


async def test_progress_updates_never_crowd_out_the_reply(secured_nats: str) -> None:
    """The generated permissions let a callee publish MAX_RESPONSES messages on a call's reply
    subject: progress updates past the room the reply needs are dropped, and the reply arrives."""
    chatty = Agent("reader")

    @chatty.action("chatty")
    async def _chatty(ctx: Context, params: dict[str, Any]) -> Any:
        for step in range(MAX_RESPONSES + 6):
            await ctx.progress({"step": step})
        return "done"

    async with (
        Runtime(as_user(secured_nats, "reader")) as server,
        Runtime(as_user(secured_nats, "client")) as rt,
    ):
        (host,) = await server.serve(chatty)
        seen: list[Any] = []
        assert await rt.call("reader", "chatty", timeout=3, on_progress=seen.append) == "done"
        assert host.endpoint is not None
        kept = MAX_RESPONSES - 2 - CHECK_ROOM  # the reply's place, the ack's and the caller checks'
        assert seen == [{"step": n} for n in range(kept)]
        assert host.endpoint.progress_dropped == MAX_RESPONSES + 6 - kept
