"""A LangGraph graph run as a durable task resumes from its last checkpoint after redelivery.

The graph is the five counting nodes of ``tests/adapters/langgraph_durable_agents.py``: the
first run of ``n3`` stalls, the instance running it is stopped without handing the task
back (in memory) or SIGKILLed (real servers), and the task's next attempt must run ``n3``
again but neither ``n1``/``n2`` (done before the crash) nor ``n4``/``n5`` twice.
"""

from __future__ import annotations

import json
import operator
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import anyio
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from a2a import CallOptions, Runtime, Settings
from a2a.adapters.langgraph import from_langgraph
from a2a.adapters.langgraph_durable import CHECKPOINT_LIMIT, TaskSaver
from a2a.errors import AgentError, InputRequired, InvalidParams, PayloadTooLarge
from a2a.testing import TestBroker
from tests.adapters.langgraph_durable_agents import NODES, build, runs
from tests.helpers import AgentProcess

pytestmark = pytest.mark.anyio

ACK_WAIT = 0.3
"""In memory: how long a task dropped by a stopped runtime waits before its next attempt."""


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="a2a-lg-") as path:
        yield Path(path)


async def appears(path: Path, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not await anyio.Path(path).exists():
            await anyio.sleep(0.02)


def counts(folder: Path) -> dict[str, int]:
    return {node: runs(folder, node) for node in NODES}


async def crash_in_n3(broker: TestBroker, client: Runtime, folder: Path, **agent: Any) -> Any:
    """Submit the graph's task, let a runtime die in ``n3`` (no hand-back), let another finish it."""
    async with broker.runtime(build(**agent)) as crashed:
        task = await client.tasks.submit("five", "run", {"text": str(folder)}, timeout=30)
        await appears(folder / "n3.waiting")
        await crashed.tasks.stop(0, hand_back=False)
    async with broker.runtime(build(**agent)):
        with anyio.fail_after(10):
            result = await task.result()
        return result, (await task.outcome()).attempt


async def test_a_graph_stopped_in_node_3_resumes_in_node_3(folder: Path) -> None:
    async with TestBroker(ack_wait=ACK_WAIT) as broker, broker.runtime() as client:
        result, attempt = await crash_in_n3(broker, client, folder)
    assert result == {"trail": NODES} and attempt == 2
    assert counts(folder) == {"n1": 1, "n2": 1, "n3": 2, "n4": 1, "n5": 1}


async def test_a_graph_with_a_saver_of_its_own_starts_over(folder: Path) -> None:
    """The adapter's ``checkpointer=`` (or the graph's own) is kept, on a fresh thread per run."""
    async with TestBroker(ack_wait=ACK_WAIT) as broker, broker.runtime() as client:
        result, attempt = await crash_in_n3(broker, client, folder, checkpointer=InMemorySaver())
    assert result == {"trail": NODES} and attempt == 2
    assert counts(folder) == {"n1": 2, "n2": 2, "n3": 2, "n4": 1, "n5": 1}


async def test_a_plain_call_runs_every_node_without_a_task(folder: Path) -> None:
    (folder / "n3").write_text("ran\n")  # n3 has run here: it does not stall
    async with TestBroker() as broker, broker.runtime(build()) as rt:
        assert await rt.call("five", "run", {"text": str(folder)}) == {"trail": NODES}
    assert counts(folder) == {"n1": 1, "n2": 1, "n3": 2, "n4": 1, "n5": 1}


async def test_a_chat_graph_resumes_with_its_messages() -> None:
    """``draft`` (a model call) -> ``slow`` (stalls the first time) -> ``answer`` (a model call)."""
    model = GenericFakeChatModel(messages=iter([AIMessage("a draft"), AIMessage("the answer")]))
    ran: list[str] = []
    stall = anyio.Event()

    async def draft(state: MessagesState) -> dict[str, Any]:
        ran.append("draft")
        return {"messages": [await model.ainvoke(state["messages"])]}

    async def slow(state: MessagesState) -> dict[str, Any]:
        ran.append("slow")
        if ran.count("slow") == 1:
            stall.set()
            await anyio.sleep(3600)
        return {"messages": [AIMessage(f"checked {state['messages'][-1].text}")]}

    async def answer(state: MessagesState) -> dict[str, Any]:
        ran.append("answer")
        assert [m.text for m in state["messages"]] == ["hi", "a draft", "checked a draft"]
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    for node in (draft, slow, answer):
        builder.add_node(node.__name__, node)
    for a, b in [(START, "draft"), ("draft", "slow"), ("slow", "answer"), ("answer", END)]:
        builder.add_edge(a, b)
    chat = builder.compile()
    async with TestBroker(ack_wait=ACK_WAIT) as broker, broker.runtime() as client:
        async with broker.runtime(from_langgraph(chat, name="chat")) as crashed:
            task = await client.tasks.submit("chat", "run", {"text": "hi"}, timeout=30)
            with anyio.fail_after(5):
                await stall.wait()
            await crashed.tasks.stop(0, hand_back=False)
        async with broker.runtime(from_langgraph(chat, name="chat")):
            with anyio.fail_after(10):
                assert await task.result() == "the answer"
    assert ran == ["draft", "slow", "slow", "answer"]


class Big(TypedDict):
    blob: str


async def test_a_checkpoint_too_large_for_the_task_ends_it_payload_too_large() -> None:
    def grow(state: Big) -> Big:
        return {"blob": os.urandom(CHECKPOINT_LIMIT).hex()}  # random: it does not compress

    builder = StateGraph(Big)
    builder.add_node("grow", grow)
    builder.add_edge(START, "grow")
    agent = from_langgraph(builder.compile(), name="big", input_of=lambda t: {"blob": t}, output_of=len)
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("big", "run", {"text": "x"}, timeout=30)
        with pytest.raises(PayloadTooLarge, match="LangGraph checkpoint") as raised, anyio.fail_after(10):
            await task.result()
    assert raised.value.details["limit"] == CHECKPOINT_LIMIT


class Question(TypedDict):
    answer: str


async def test_an_interrupt_in_a_task_is_answered_by_a_later_task_of_the_same_user() -> None:
    """The asking task's last checkpoint holds the question: a task with the answer (and
    the parameters the question gave) continues from it; another user's cannot."""

    def ask(state: Question) -> Question:
        return {"answer": str(interrupt("which one?"))}

    builder = StateGraph(Question)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    agent = from_langgraph(builder.compile(), name="asker", input_of=lambda t: {"answer": t})
    ann, bob = CallOptions(user_id="ann"), CallOptions(user_id="bob")
    async with TestBroker() as broker, broker.runtime(agent) as rt:
        task = await rt.tasks.submit("asker", "run", {"text": "x"}, ann, timeout=30)
        with pytest.raises(InputRequired) as asked, anyio.fail_after(10):
            await task.result()
        resume = asked.value.details["resume"]
        assert resume == {"thread_id": f"task-{task.id}", "task": task.id}
        stolen = await rt.tasks.submit("asker", "run", {**resume, "resume": "mine"}, bob, timeout=30)
        with pytest.raises(InvalidParams, match="no question waits"), anyio.fail_after(10):
            await stolen.result()
        answer = await rt.tasks.submit("asker", "run", {**resume, "resume": "the red one"}, ann, timeout=30)
        with anyio.fail_after(10):
            assert await answer.result() == {"answer": "the red one"}
        with pytest.raises(AgentError, match="no checkpointer"):
            await rt.call("asker", "run", {"text": "x"})


# -- the saver on its own --------------------------------------------------------------------


class Attempt:
    """A stand-in for ``ctx.task``: what the saver needs, kept in memory."""

    def __init__(self, last_checkpoint: Any = None) -> None:
        self.last_checkpoint = last_checkpoint
        self.writes = 0

    async def checkpoint(self, state: Any) -> None:
        self.last_checkpoint = json.loads(json.dumps(state))  # as a store would: JSON
        self.writes += 1


class Fan(TypedDict):
    trail: Annotated[list[str], operator.add]


async def run_fan(attempt: Attempt, ran: list[str], stall: bool) -> Any:
    """``a`` -> (``p`` and ``q`` side by side) -> ``z``; ``q`` stalls when asked to."""

    def node(name: str) -> Any:
        async def run(state: Fan) -> Fan:
            ran.append(name)
            if name == "q" and stall:
                await anyio.sleep(3600)
            return {"trail": [name]}

        return run

    builder = StateGraph(Fan)
    for name in "apqz":
        builder.add_node(name, node(name))
    builder.add_edge(START, "a")
    builder.add_edge("a", "p")
    builder.add_edge("a", "q")
    builder.add_edge(["p", "q"], "z")
    saver = TaskSaver(attempt, "thread")
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "thread"}}
    state = None
    with anyio.move_on_after(0.5 if stall else 10):
        async for chunk in graph.astream(
            None if saver.resumed else {"trail": []}, config, stream_mode="values", durability="sync"
        ):
            state = chunk
    return state


async def test_a_parallel_step_keeps_the_writes_of_the_nodes_that_finished() -> None:
    ran: list[str] = []
    first = Attempt()
    await run_fan(first, ran, stall=True)
    assert sorted(ran) == ["a", "p", "q"]
    second = Attempt(first.last_checkpoint)
    assert await run_fan(second, ran, stall=False) == {"trail": ["a", "p", "q", "z"]}
    assert sorted(ran) == ["a", "p", "q", "q", "z"]  # p's writes were kept: it did not run again
    third = Attempt(second.last_checkpoint)  # the run had ended: nothing runs, the state is there
    assert await run_fan(third, ran, stall=False) == {"trail": ["a", "p", "q", "z"]}
    assert len(ran) == 5 and third.writes == 0


async def test_a_value_that_is_not_the_savers_is_no_checkpoint_to_resume_from() -> None:
    for value in ({"step": 3}, "text", {"format": "langgraph-task-saver/1", "thread": "other", "heads": {}}):
        assert not TaskSaver(Attempt(value), "thread").resumed


# -- against real servers --------------------------------------------------------------------


@pytest.mark.integration
async def test_a_graph_killed_in_node_3_resumes_in_node_3_in_another_process(
    nats_url: str, redis_url: str, namespace: str, folder: Path
) -> None:
    ack_wait = 1.0
    s = Settings(
        nats_url=nats_url,
        redis_url=redis_url,
        namespace=namespace,
        heartbeat_interval=0.25,
        tasks=True,
        task_ack_wait=ack_wait,
    )
    target = "tests.adapters.langgraph_durable_agents:agent"
    env = {"A2A_TASKS": "1", "A2A_TASK_ACK_WAIT": str(ack_wait)}
    async with Runtime(s) as rt:
        with AgentProcess(s, target, **env) as first:
            await rt.wait_for_agents(["five"], timeout=20)
            task = await rt.tasks.submit("five", "run", {"text": str(folder)}, timeout=60)
            await appears(folder / "n3.waiting", timeout=20)
            first.kill()
        with AgentProcess(s, target, **env) as second:
            with anyio.fail_after(30):
                result = await task.result()
            outcome = await task.outcome()
            assert second.proc is not None and second.proc.poll() is None
    assert result == {"trail": NODES} and outcome.attempt == 2
    assert counts(folder) == {"n1": 1, "n2": 1, "n3": 2, "n4": 1, "n5": 1}
