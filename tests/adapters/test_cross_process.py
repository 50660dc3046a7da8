"""Agents of different frameworks, each in its own OS process, calling each other through
the registry: an answer, a deadline, a cancel that reaches the callee framework's loop, and
a cycle refused across framework boundaries.

Each framework's agent (``tests/adapters/<framework>_agents.py``) runs a fake model scripted
by its input: ``echo: X`` answers ``<name> says X``; ``ask: AGENT: REST`` makes the model
call the bus tool ``call_agent`` with REST for AGENT and answer with what it got; ``wait``
blocks in a tool until cancelled, leaving the file ``<marks>/<name>.waiting`` on the way in
and ``<marks>/<name>.cancelled`` on the way out.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from a2a import Runtime, Settings
from a2a.errors import A2AError, CycleDetected, DeadlineExceeded
from tests.helpers import AgentProcess

pytestmark = [pytest.mark.anyio, pytest.mark.integration, pytest.mark.slow]

FRAMEWORKS = {
    "lg": "tests.adapters.langgraph_agents:agent",
    "pa": "tests.adapters.pydantic_ai_agents:agent",
    "ag": "tests.adapters.autogen_agents:agent",
    "crew": "tests.adapters.crewai_agents:agent",
}
# Caller -> callee: every framework calls one other framework and is called by another.
PAIRS = [("lg", "pa"), ("pa", "ag"), ("ag", "crew"), ("crew", "lg")]


class Cluster:
    def __init__(self, settings: Settings, marks: Path, procs: dict[str, AgentProcess]) -> None:
        self.settings = settings
        self.marks = marks
        self.procs = procs

    def marked(self, name: str, mark: str) -> bool:
        return (self.marks / f"{name}.{mark}").exists()

    async def wait_for(self, name: str, mark: str, timeout: float = 10.0) -> None:
        with anyio.fail_after(timeout):
            while not self.marked(name, mark):
                await anyio.sleep(0.05)

    def clear(self, name: str) -> None:
        for mark in ("waiting", "cancelled"):
            (self.marks / f"{name}.{mark}").unlink(missing_ok=True)

    def logs(self) -> str:
        return "\n".join(f"--- {name}\n{proc.output()[-3000:]}" for name, proc in self.procs.items())


@pytest.fixture(scope="module")
def cluster(nats_url: str, redis_url: str) -> Iterator[Cluster]:
    settings = Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace="fw" + uuid.uuid4().hex[:8],
        heartbeat_interval=0.5,
        default_timeout=30.0,
        open=True,
    )
    with tempfile.TemporaryDirectory(prefix="a2a-marks-") as marks:
        procs = {
            name: AgentProcess(settings, target, A2A_TEST_AGENT_NAME=name, A2A_TEST_MARKS=marks).start()
            for name, target in FRAMEWORKS.items()
        }
        try:
            yield Cluster(settings, Path(marks), procs)
        finally:
            for proc in procs.values():
                proc.terminate()
                proc.__exit__(None, None, None)


@pytest.fixture
async def rt(cluster: Cluster) -> AsyncIterator[Runtime]:
    async with Runtime(cluster.settings) as runtime:
        try:
            await runtime.wait_for_agents(list(FRAMEWORKS), timeout=90)
        except A2AError:
            pytest.fail(f"framework agents did not register:\n{cluster.logs()}")
        yield runtime


def pair_id(pair: tuple[str, str]) -> str:
    return f"{pair[0]}->{pair[1]}"


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
async def test_an_agent_asks_an_agent_of_another_framework_in_another_process(
    rt: Runtime, pair: tuple[str, str]
) -> None:
    caller, callee = pair
    word = uuid.uuid4().hex[:8]
    response = await rt.request(caller, "run", {"text": f"ask: {callee}: echo: {word}"}, timeout=60)
    assert f"{callee} says {word}" in str(response.payload.result)
    # Both fake models report tokens; the callee's come back inside the caller's.
    assert response.payload.usage is not None and response.payload.usage.total > 0


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
async def test_a_deadline_ends_the_call_and_the_callee_frameworks_loop(
    rt: Runtime, cluster: Cluster, pair: tuple[str, str]
) -> None:
    caller, callee = pair
    cluster.clear(callee)
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await rt.call(caller, "run", {"text": f"ask: {callee}: wait"}, timeout=4)
    assert anyio.current_time() - start < 6
    assert cluster.marked(callee, "waiting")
    await cluster.wait_for(callee, "cancelled")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
async def test_a_cancel_reaches_the_callee_frameworks_loop(
    rt: Runtime, cluster: Cluster, pair: tuple[str, str]
) -> None:
    caller, callee = pair
    cluster.clear(callee)
    async with anyio.create_task_group() as tg:

        async def call() -> None:
            await rt.call(caller, "run", {"text": f"ask: {callee}: wait"}, timeout=60)

        tg.start_soon(call)
        await cluster.wait_for(callee, "waiting")  # the callee's model has reached the tool
        assert not cluster.marked(callee, "cancelled")
        tg.cancel_scope.cancel()
    await cluster.wait_for(callee, "cancelled")


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
async def test_a_cycle_across_frameworks_is_refused(rt: Runtime, pair: tuple[str, str]) -> None:
    caller, callee = pair
    with pytest.raises(CycleDetected) as caught:
        await rt.call(caller, "run", {"text": f"ask: {callee}: ask: {caller}: echo: loop"}, timeout=60)
    assert caught.value.code == "CYCLE_DETECTED"
    assert caller in str(caught.value)
