"""The LangGraph adapter against real servers: a compiled graph served as a bus agent.

The graph is the scripted tool loop of ``tests/adapters/langgraph_agents.py``; plain
agents stand in for the agents it calls.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypedDict

import anyio
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from a2a import Agent, Context, Runtime, Settings
from a2a.adapters import agent_tool, delegate_tool
from a2a.adapters.langgraph import from_langgraph, langchain_tools
from a2a.adapters.langgraph_stream import TEXT_CHARS, progress_of
from a2a.errors import (
    AgentError,
    BudgetExceeded,
    CycleDetected,
    DeadlineExceeded,
    InputRequired,
    InvalidParams,
    MaxHopsExceeded,
    PermissionDenied,
)
from tests.adapters.langgraph_agents import COMPLETION_TOKENS, PROMPT_TOKENS, build, graph
from tests.adapters.plain_agents import DELEGATED, DELEGATION, boss_agent, worker_agent

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def helper() -> Agent:
    agent = Agent("helper")

    @agent.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        ctx.report_usage(prompt=1, completion=1)
        return f"helper heard {params['text']}"

    return agent


DELEGATED_TO: list[dict[str, Any]] = []


@pytest.fixture
async def rt(settings: Settings) -> AsyncIterator[Runtime]:
    DELEGATED_TO.clear()
    async with Runtime(settings) as runtime:
        await runtime.serve(build("lg"), helper(), worker_agent(DELEGATED_TO), boss_agent())
        yield runtime


async def appears(path: Path, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not await anyio.Path(path).exists():
            await anyio.sleep(0.02)


async def test_the_answer_usage_and_each_nodes_progress_reach_the_caller(rt: Runtime) -> None:
    seen: list[Any] = []
    response = await rt.request("lg", "run", {"text": "echo: hi"}, on_progress=seen.append)
    assert response.payload.result == "lg says hi"
    usage = response.payload.usage
    assert usage is not None and (usage.prompt, usage.completion) == (PROMPT_TOKENS, COMPLETION_TOKENS)
    assert seen == [{"node": "model", "keys": ["messages"], "message": "ai", "text": "lg says hi"}]


async def test_a_bus_tool_call_from_the_graph_and_its_tokens(rt: Runtime) -> None:
    seen: list[Any] = []
    response = await rt.request("lg", "run", {"text": "ask: helper: yo"}, on_progress=seen.append)
    assert response.payload.result == "lg got: helper heard yo"
    usage = response.payload.usage
    assert usage is not None  # two model calls, and the helper's own tokens
    assert (usage.prompt, usage.completion) == (2 * PROMPT_TOKENS + 1, 2 * COMPLETION_TOKENS + 1)
    assert [(u["node"], u.get("toolCalls"), u.get("text")) for u in seen] == [
        ("model", ["call_agent"], None),
        ("tools", None, "helper heard yo"),
        ("model", None, "lg got: helper heard yo"),
    ]


async def test_a_bus_error_the_model_can_recover_from_comes_back_as_text(rt: Runtime) -> None:
    out = await rt.call("lg", "run", {"text": "ask: nobody: hello"})
    assert re.fullmatch(r"lg got: error: NO_RESPONDERS( from \S+)?: .+", out), out


async def test_a_small_budget_is_refused_by_the_first_model_call(rt: Runtime) -> None:
    with pytest.raises(BudgetExceeded) as refused:
        await rt.call("lg", "run", {"text": "echo: hi"}, budget=PROMPT_TOKENS)
    assert refused.value.details["budget"] == PROMPT_TOKENS
    assert await rt.call("lg", "run", {"text": "echo: hi"}, budget=PROMPT_TOKENS + COMPLETION_TOKENS) == (
        "lg says hi"
    )


async def test_an_interrupt_asks_for_input_and_its_user_alone_resumes_it(rt: Runtime) -> None:
    with pytest.raises(InputRequired) as asked:
        await rt.call("lg", "run", {"text": "confirm: deploy now?"}, user_id="ann")
    details = asked.value.details
    assert details["interrupts"] == [{"question": "deploy now?"}]
    assert len(details["interruptIds"]) == 1
    assert "deploy now?" in asked.value.message
    resume = details["resume"]
    assert set(resume) == {"thread_id"}
    with pytest.raises(InvalidParams):  # the same thread id names another thread for bob
        await rt.call("lg", "run", {**resume, "resume": "yes"}, user_id="bob")
    assert await rt.call("lg", "run", {**resume, "resume": "yes"}, user_id="ann") == "lg got: yes"
    with pytest.raises(InvalidParams, match="no question waits"):
        await rt.call("lg", "run", {**resume, "resume": "again"}, user_id="ann")


async def test_threads_are_kept_per_user_when_named_and_forgotten_when_fresh(rt: Runtime) -> None:
    saver = InMemorySaver()
    await rt.serve(from_langgraph(graph("lg3"), name="lg3", checkpointer=saver))
    assert await rt.call("lg3", "run", {"text": "echo: x"}) == "lg3 says x"
    assert [c async for c in saver.alist(None)] == []
    await rt.call("lg3", "run", {"text": "echo: y", "thread_id": "kept"}, user_id="ann/1")
    threads = {c.config["configurable"]["thread_id"] async for c in saver.alist(None)}
    assert threads == {"lg3/u=ann%2F1/kept"}


async def test_the_recursion_limit_ends_the_call_typed_and_a_caller_may_only_lower_it(rt: Runtime) -> None:
    await rt.serve(build("looper", recursion_limit=6))
    for asked, applied in [(None, 6), (3, 3), (100, 6)]:
        params: dict[str, Any] = {"text": "loop"}
        if asked is not None:
            params["recursion_limit"] = asked
        with pytest.raises(MaxHopsExceeded) as stopped:
            await rt.call("looper", "run", params)
        assert stopped.value.details == {"recursionLimit": applied}
        assert "recursion limit" in stopped.value.message


async def test_a_withdrawn_call_cancels_the_tool_the_graph_waits_in(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_TEST_MARKS", str(tmp_path))
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(rt.call, "lg", "run", {"text": "wait"}, timeout=30))
        await appears(tmp_path / "lg.waiting")
        assert not (tmp_path / "lg.cancelled").exists()
        tg.cancel_scope.cancel()
    await appears(tmp_path / "lg.cancelled")
    assert await rt.call("lg", "run", {"text": "echo: still here"}) == "lg says still here"


async def test_the_deadline_ends_the_call_and_the_graph_run(
    rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_TEST_MARKS", str(tmp_path))
    start = anyio.current_time()
    with pytest.raises(DeadlineExceeded):
        await rt.call("lg", "run", {"text": "wait"}, timeout=1.0)
    assert anyio.current_time() - start < 2.0
    await appears(tmp_path / "lg.cancelled")


@pytest.mark.parametrize("tool_node", [{}, {"handle_tool_errors": True}], ids=["default", "handling-all"])
async def test_a_cycle_refused_inside_a_tool_reaches_the_caller_typed(
    rt: Runtime, tool_node: dict[str, Any]
) -> None:
    # With handle_tool_errors=True the ToolNode turns the error into a message for the
    # model; the adapter still ends the run with it.
    await rt.serve(build("lg2", **tool_node))
    with pytest.raises(CycleDetected) as refused:
        await rt.call("lg2", "run", {"text": "ask: lg2: echo: x"})
    assert "lg2" in str(refused.value)


class Waits:
    """Events of handlers or nodes that wait until cancelled, by name."""

    def __init__(self, *names: str) -> None:
        self.started = {n: anyio.Event() for n in names}
        self.cancelled = {n: anyio.Event() for n in names}

    async def wait(self, name: str) -> None:
        self.started[name].set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled[name].set()
            raise

    async def all_started(self) -> None:
        with anyio.fail_after(5):
            for event in self.started.values():
                await event.wait()

    async def all_cancelled(self, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            for event in self.cancelled.values():
                await event.wait()


async def test_a_tool_call_that_ends_the_run_withdraws_the_calls_beside_it(rt: Runtime) -> None:
    # The ToolNode gathers both calls; when one fails, gather leaves the other running.
    waits = Waits("sleeper")
    sleeper, refuser = Agent("sleeper"), Agent("refuser")

    @sleeper.action("run")
    async def sleep(ctx: Context, params: dict[str, Any]) -> None:
        await waits.wait("sleeper")

    @refuser.action("run")
    async def refuse(ctx: Context, params: dict[str, Any]) -> None:
        await waits.all_started()
        raise PermissionDenied("not today")

    await rt.serve(sleeper, refuser)
    with anyio.fail_after(2), pytest.raises(PermissionDenied):  # the sleeper's call would last 10 s
        await rt.call("lg", "run", {"text": "both: sleeper, refuser: go"}, timeout=30)
    await waits.all_cancelled(timeout=1)


async def test_cancelling_a_call_cancels_every_node_running_in_parallel(rt: Runtime) -> None:
    waits = Waits("a", "b")

    async def a(state: Count) -> Count:
        await waits.wait("a")
        return {}

    async def b(state: Count) -> Count:
        await waits.wait("b")
        return {}

    builder = StateGraph(Count)
    builder.add_node("a", a)
    builder.add_node("b", b)
    builder.add_edge(START, "a")
    builder.add_edge(START, "b")
    await rt.serve(from_langgraph(builder.compile(), name="fan", input_of=lambda text: {"text": text}))
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(rt.call, "fan", "run", {"text": "go"}, timeout=30))
        await waits.all_started()
        tg.cancel_scope.cancel()
    await waits.all_cancelled()


class Count(TypedDict, total=False):
    text: str
    words: int


def counter() -> Agent:
    """A graph without messages: its input and output go through input_of and the state."""

    def count(state: Count) -> Count:
        return {"words": len(state["text"].split())}

    builder = StateGraph(Count)
    builder.add_node("count", count)
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    return from_langgraph(builder.compile(), name="counter", input_of=lambda text: {"text": text})


def plain_ai() -> Agent:
    """A node writes an AI message itself (no LangChain model): its tokens still count."""

    def answer(state: MessagesState) -> dict[str, Any]:
        usage = {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
        return {"messages": [AIMessage(f"plain says {state['messages'][-1].text}", usage_metadata=usage)]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return from_langgraph(builder.compile(), name="plain")


async def test_graphs_without_a_model_map_their_state_and_usage(rt: Runtime) -> None:
    await rt.serve(counter(), plain_ai())
    assert await rt.call("counter", "run", {"text": "a b c"}) == {"text": "a b c", "words": 3}
    response = await rt.request("plain", "run", {"text": "hi"})
    assert response.payload.result == "plain says hi"
    assert response.payload.usage is not None
    assert (response.payload.usage.prompt, response.payload.usage.completion) == (7, 3)
    with pytest.raises(InvalidParams, match="no checkpointer"):
        await rt.call("plain", "run", {"thread_id": "t", "resume": "yes"})
    with pytest.raises(InvalidParams):
        await rt.call("plain", "run", {"thread_id": "t"})


class Question(TypedDict, total=False):
    text: str
    answer: str


def asker(name: str, **options: Any) -> Agent:
    """A graph compiled without a checkpointer whose node asks with interrupt()."""

    def ask(state: Question) -> Question:
        return {"answer": str(interrupt(f"really {state['text']}?"))}

    builder = StateGraph(Question)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return from_langgraph(
        builder.compile(), name=name, input_of=lambda text: {"text": text}, output_of=lambda s: s, **options
    )


async def test_interrupts_need_the_checkpointer_given_to_the_adapter(rt: Runtime) -> None:
    await rt.serve(asker("saved", checkpointer=InMemorySaver()), asker("unsaved"))
    with pytest.raises(InputRequired) as asked:
        await rt.call("saved", "run", {"text": "go", "thread_id": "mine"})
    assert asked.value.message == "saved asks: really go?"
    assert asked.value.details["resume"] == {"thread_id": "mine"}
    answer = await rt.call("saved", "run", {"thread_id": "mine", "resume": "yes", "text": "ignored"})
    assert answer == {"text": "go", "answer": "yes"}
    with pytest.raises(AgentError, match="no checkpointer"):
        await rt.call("unsaved", "run", {"text": "go"})


def sync_caller() -> Agent:
    """A sync node (LangGraph runs it in a worker thread) calls a bus tool synchronously."""
    [tool] = langchain_tools([agent_tool()])

    def ask(state: MessagesState) -> dict[str, Any]:
        agent, _, text = str(state["messages"][-1].text).partition(":")
        return {"messages": [AIMessage(str(tool.invoke({"agent": agent, "text": text})))]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return from_langgraph(builder.compile(), name="syncer")


async def test_a_sync_node_calls_bus_tools_from_its_thread(rt: Runtime) -> None:
    await rt.serve(sync_caller())
    assert await rt.call("syncer", "run", {"text": "helper:hey"}) == "helper heard hey"
    with pytest.raises(CycleDetected):
        await rt.call("syncer", "run", {"text": "syncer:again"})


def test_a_graph_without_messages_needs_input_of() -> None:
    builder = StateGraph(Count)
    builder.add_node("count", lambda state: {"words": 0})
    builder.add_edge(START, "count")
    with pytest.raises(ValueError, match="input_of"):
        from_langgraph(builder.compile(), name="counter")


def test_langchain_sees_the_bus_tools_json_schema_as_given() -> None:
    bus_tool = agent_tool(["helper", "lg"])
    [tool] = langchain_tools([bus_tool])
    assert isinstance(tool, StructuredTool)
    assert (tool.name, tool.description) == ("call_agent", bus_tool.description)
    assert tool.args_schema == bus_tool.input_schema
    # What LangChain gives a model: the schema as given, the tool's description beside it.
    assert tool.tool_call_schema == {**bus_tool.input_schema, "description": bus_tool.description}
    function = convert_to_openai_tool(tool)["function"]
    assert function["name"] == "call_agent"
    assert function["parameters"] == bus_tool.input_schema


def test_a_progress_update_stays_small_whatever_the_node_writes() -> None:
    calls = [{"name": f"tool{i}", "args": {}, "id": str(i), "type": "tool_call"} for i in range(50)]
    update = {f"key{i}": i for i in range(50)} | {"messages": [AIMessage("x" * 100_000, tool_calls=calls)]}
    progress = progress_of("model", update)
    assert len(progress["text"]) == TEXT_CHARS
    assert len(progress["toolCalls"]) == len(progress["keys"]) == 10
    assert progress_of("done", None) == {"node": "done"}


async def test_the_delegate_tool_passes_seed_000s_arguments_and_returns_the_result(rt: Runtime) -> None:
    out = await rt.call("lg", "run", {"text": "delegate: " + json.dumps(DELEGATION)})
    assert out == "lg got: worker did: tidy the logs"
    assert DELEGATED_TO == [DELEGATED]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({**DELEGATION, "task": "fail: rotate"}, "lg got: error: AGENT_ERROR from worker: the disk is full"),
        ({"task": "no agent named"}, "lg got: error: INVALID_PARAMS: 'agent_name' is required"),
        (
            {**DELEGATION, "max_context_tokens": "lots"},
            "lg got: error: INVALID_PARAMS: bad delegate arguments",
        ),
        ({**DELEGATION, "max_context_tokens": 10**6}, "lg got: error: INVALID_PARAMS: 'max_context_tokens'"),
        ({**DELEGATION, "context": {"last": 2}}, "lg got: error: INVALID_PARAMS: bad delegate arguments"),
        ({**DELEGATION, "agent_name": "nobody"}, "lg got: error: NO_RESPONDERS"),
    ],
    ids=["failed", "no-agent", "bad-type", "over-cap", "unknown-filter-field", "no-such-agent"],
)
async def test_a_failed_or_refused_delegation_reaches_the_model_as_error_text(
    rt: Runtime, arguments: dict[str, Any], expected: str
) -> None:
    out = await rt.call("lg", "run", {"text": "delegate: " + json.dumps(arguments)})
    assert out.startswith(expected), out
    assert len(DELEGATED_TO) == (1 if arguments["task"].startswith("fail") else 0)


def test_the_model_sees_seed_000s_arguments_in_the_delegate_tools_schema() -> None:
    bus_tool = delegate_tool(agents=["worker", "helper"], max_context_tokens=2000)
    [tool] = langchain_tools([bus_tool])
    function = convert_to_openai_tool(tool)["function"]
    parameters = function["parameters"]
    assert function["name"] == "delegate" and parameters == bus_tool.input_schema
    assert set(parameters["properties"]) == {
        "agent_name",
        "task",
        "context",
        "input",
        "max_context_tokens",
        "allowed_tools",
        "allow_nested_calls",
    }
    assert parameters["required"] == ["agent_name", "task"]
    assert parameters["properties"]["agent_name"]["enum"] == ["worker", "helper"]
    assert parameters["properties"]["max_context_tokens"]["maximum"] == 2000
    assert set(parameters["properties"]["context"]["properties"]) == {
        "last_messages",
        "roles",
        "keywords",
        "include_summary",
        "include_workspace",
        "workspace_files",
        "max_age_seconds",
    }
    bound = convert_to_openai_tool(langchain_tools([delegate_tool("worker")])[0])["function"]
    assert bound["name"] == "delegate_to_worker" and "agent_name" not in bound["parameters"]["properties"]


async def test_the_graphs_own_tools_are_authorized_and_reported(rt: Runtime) -> None:
    used = await rt.call("boss", "run", {"target": "lg", "text": "use: lookup"})
    assert used == {"result": "lg got: looked up", "tool_calls": ["lookup"]}
    # Bus tools are bus calls, not tools of the graph's own.
    asked = await rt.call("boss", "run", {"target": "lg", "text": "ask: helper: hi"})
    assert asked["tool_calls"] == []
    allowed = {"target": "lg", "text": "use: lookup", "allowed_tools": ["lookup"]}
    assert (await rt.call("boss", "run", allowed))["tool_calls"] == ["lookup"]
    with pytest.raises(PermissionDenied, match="'lookup' is not among them"):
        await rt.call("boss", "run", {**allowed, "allowed_tools": ["noop"]})


async def test_a_refused_tool_ends_the_run_even_where_the_tool_node_handles_errors(rt: Runtime) -> None:
    await rt.serve(build("lg4", handle_tool_errors=True))
    with pytest.raises(PermissionDenied):
        await rt.call("boss", "run", {"target": "lg4", "text": "use: lookup", "allowed_tools": ["noop"]})
