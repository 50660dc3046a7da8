"""Agents in separate OS processes, against real nats-server and Redis."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from a2a import Runtime, Settings, by_capability, by_instance
from a2a.errors import A2AError, AgentLost
from discovery import AgentProfile
from tests.helpers import AgentProcess
from tests.topology.link import Link

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


async def instances(rt: Runtime, name: str) -> list[AgentProfile]:
    assert rt.registry is not None
    return [p for p in await rt.registry.list_agents() if p.name == name]


async def wait_instances(rt: Runtime, name: str, count: int, timeout: float = 20.0) -> list[AgentProfile]:
    with anyio.fail_after(timeout):
        while len(found := await instances(rt, name)) < count:
            await anyio.sleep(0.05)
    return found


async def test_a_call_chain_crosses_three_processes(settings: Settings) -> None:
    with (
        AgentProcess(settings, "tests.agents:echo") as echo_proc,
        AgentProcess(settings, "tests.agents:relay") as relay_proc,
    ):
        async with Runtime(settings) as rt:
            await rt.wait_for_agents(["echo", "relay"], timeout=20)
            out = await rt.call("relay", "forward", {"target": "echo", "action": "whoami"}, user_id="u-1")
            assert out["result"]["pid"] == echo_proc.pid != os.getpid()
            assert out["via"].startswith("relay-") and out["hop"] == 1 and out["depth"] == 0
            routed = await rt.call(
                "relay", "forward", {"capabilities": ["text"], "action": "echo", "params": {"k": 1}}
            )
            assert routed["result"] == {"k": 1}
            direct = await rt.call(by_capability("echo"), "whoami")
            assert direct["pid"] == echo_proc.pid
            pinned = await rt.call(by_instance(direct["instance"]), "whoami")
            assert pinned == direct
        assert relay_proc.proc is not None and relay_proc.proc.poll() is None


async def test_each_request_goes_to_exactly_one_instance_of_a_pool(settings: Settings) -> None:
    with (
        AgentProcess(settings, "tests.agents:echo") as p1,
        AgentProcess(settings, "tests.agents:echo") as p2,
    ):
        async with Runtime(settings) as rt:
            await wait_instances(rt, "echo", 2)
            answers: list[int] = []

            async def one() -> None:
                answers.append((await rt.call("echo", "whoami"))["pid"])

            async with anyio.create_task_group() as tg:
                for _ in range(60):
                    tg.start_soon(one)
            assert len(answers) == 60
            assert set(Counter(answers)) == {p1.pid, p2.pid}  # both served, each request once


async def test_a_callee_killed_mid_call_surfaces_quickly_as_a_typed_error(
    settings: Settings,
) -> None:
    with AgentProcess(settings, "tests.agents:echo") as proc:
        async with Runtime(settings) as rt:
            await rt.wait_for_agents(["echo"], timeout=20)
            result: dict[str, Any] = {}

            async def call() -> None:
                start = anyio.current_time()
                try:
                    await rt.call("echo", "sleep", {"seconds": 60}, timeout=30)
                except AgentLost as exc:
                    result["error"] = exc
                result["elapsed"] = anyio.current_time() - start

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.5)
                killed_at = anyio.current_time()
                proc.kill()
            surfaced = anyio.current_time() - killed_at
            assert isinstance(result.get("error"), AgentLost)
            assert result["error"].agent is not None and result["error"].agent.startswith("echo-")
            assert surfaced < 3.0, f"took {surfaced:.2f}s; the TTL was 30s"
            print(f"\nSIGKILLed callee surfaced as AGENT_LOST {surfaced:.2f}s after the kill (TTL 30s)")
            assert len(rt.bus.pending) == 0


async def test_a_killed_instance_leaves_the_registry_within_three_heartbeats(
    settings: Settings,
) -> None:
    with AgentProcess(settings, "tests.agents:echo") as proc:
        async with Runtime(settings) as rt:
            (registered,) = await wait_instances(rt, "echo", 1)
            await anyio.sleep(settings.heartbeat_interval)  # let it settle into its heartbeat rhythm
            proc.kill()
            killed_at = anyio.current_time()
            with anyio.fail_after(5):
                while await instances(rt, "echo"):
                    await anyio.sleep(0.02)
            gone_after = anyio.current_time() - killed_at
            assert gone_after <= 3 * settings.heartbeat_interval + 0.1
            print(
                f"\nkilled instance left the registry after {gone_after:.2f}s "
                f"(3 heartbeats = {3 * settings.heartbeat_interval:.2f}s)"
            )
            assert rt.view is not None
            with anyio.fail_after(3 * settings.heartbeat_interval + 1):
                while rt.view.get(registered.agent_id) is not None:
                    await anyio.sleep(0.02)


async def test_a_clean_shutdown_deregisters_at_once(settings: Settings) -> None:
    slow = Settings(
        **{
            **{f: getattr(settings, f) for f in settings.__struct_fields__},
            "heartbeat_interval": 5.0,
        }
    )
    with AgentProcess(slow, "tests.agents:echo") as proc:
        async with Runtime(slow) as rt:
            await wait_instances(rt, "echo", 1)
            assert proc.terminate() == 0
            assert await instances(rt, "echo") == []  # gone long before its 15 s TTL
            assert "serving echo" in proc.output()


async def test_sigterm_mid_call_lets_the_call_finish_and_the_caller_gets_its_result(
    settings: Settings,
) -> None:
    """A graceful stop keeps answering the caller's probes while the handler finishes: the
    caller gets the real result, not AGENT_LOST."""
    with AgentProcess(settings, "tests.agents:echo") as proc:
        async with Runtime(settings) as rt:
            await wait_instances(rt, "echo", 1)
            results: list[Any] = []

            async def call() -> None:
                results.append(await rt.call("echo", "sleep", {"seconds": 2.5}, timeout=20))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.8)  # in hand, acknowledged, probed
                os.kill(proc.pid, signal.SIGTERM)
            assert results and results[0]["slept"] == 2.5 and results[0]["pid"] == proc.pid
            with anyio.fail_after(10):
                while proc.proc is not None and proc.proc.poll() is None:
                    await anyio.sleep(0.05)
            assert proc.proc is not None and proc.proc.returncode == 0


async def test_sigterm_to_one_instance_of_a_busy_pool_drops_no_call(settings: Settings) -> None:
    """Calls the server routed to the stopping member of the queue group before it learnt
    that it left are still taken and answered: no call waits out its deadline."""
    with AgentProcess(settings, "tests.agents:echo") as leaving, AgentProcess(settings, "tests.agents:echo"):
        async with Runtime(settings) as rt:
            await wait_instances(rt, "echo", 2)
            outcomes: Counter[str] = Counter()
            stop = anyio.current_time() + 3.0

            async def caller() -> None:
                while anyio.current_time() < stop:
                    try:
                        await rt.call("echo", "sleep", {"seconds": 0.002}, timeout=2)
                        outcomes["ok"] += 1
                    except A2AError as exc:
                        outcomes[exc.code] += 1

            async with anyio.create_task_group() as tg:
                for _ in range(64):
                    tg.start_soon(caller)
                await anyio.sleep(1.0)
                os.kill(leaving.pid, signal.SIGTERM)
            assert leaving.proc is not None and leaving.proc.wait(10) == 0
    assert outcomes["ok"] > 500 and set(outcomes) == {"ok"}, outcomes


async def test_sigterm_lets_a_handler_call_an_agent_of_its_own_process_on_its_way_out(
    settings: Settings,
) -> None:
    """Every agent of the stopping process still serves the handlers finishing their work in
    its grace: one that calls another agent of the process after the SIGTERM gets its answer."""
    with AgentProcess(settings, "tests.agents:relay", "tests.agents:echo") as proc:
        async with Runtime(settings) as rt:
            await rt.wait_for_agents(["relay", "echo"], timeout=20)
            params = {"target": "echo", "action": "echo", "params": {"n": 1}, "delay": 0.6}
            results: list[Any] = []

            async def call() -> None:
                results.append(await rt.call("relay", "forward", params, timeout=10))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.2)  # the relay's handler waits, the echo agent holds nothing
                os.kill(proc.pid, signal.SIGTERM)
            assert results[0]["result"] == {"n": 1}
            assert proc.proc is not None and proc.proc.wait(10) == 0


async def test_calls_to_a_pool_sent_again_after_the_callers_reconnect_run_once(
    settings: Settings, tmp_path: Path
) -> None:
    """After a reconnect the caller first asks which instance received the calls nobody had
    acknowledged yet (queued behind busy handlers); each goes again to the instance that
    holds it, which answers a repeat, rather than to the queue group, where another would run it."""
    log = tmp_path / "runs"
    link = Link(("127.0.0.1", int(settings.nats_url.rsplit(":", 1)[1]))).restore()
    through = msgspec.structs.replace(settings, nats_url=f"nats://127.0.0.1:{link.port}")
    try:
        with AgentProcess(settings, "tests.agents:echo"), AgentProcess(settings, "tests.agents:echo"):
            async with Runtime(through) as rt:
                await wait_instances(rt, "echo", 2)
                results: list[Any] = []

                async def call(n: int) -> None:
                    params = {"log": str(log), "id": n, "seconds": 0.25}
                    results.append(await rt.call("echo", "logged", params, timeout=20))

                async with anyio.create_task_group() as tg:
                    for n in range(64):  # 16 run at once, the rest wait in the instances' queues
                        tg.start_soon(call, n)
                    await anyio.sleep(0.1)
                    link.cut()  # the caller's connection drops and comes back
                    link.restore()
    finally:
        link.close()
    runs = Counter(line.split()[0] for line in log.read_text().splitlines())
    assert sorted(results) == list(range(64))
    assert [n for n, times in runs.items() if times > 1] == []
