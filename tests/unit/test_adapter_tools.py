"""Bus tools and the bridge every framework adapter shares, without any framework."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from a2a import Agent, AgentProfile, Context, ContextFilter
from a2a.adapters import agent_tool, call_tool, current_context, delegate_tool, tools_from_profile
from a2a.adapters.bridge import framework_error, input_text, run_on_loop, running, text_of
from a2a.errors import AgentError, CycleDetected, InvalidParams
from a2a.testing import TestBroker

pytestmark = pytest.mark.anyio


def peers() -> list[Agent]:
    echo = Agent("echo")

    @echo.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> Any:
        return {"heard": params.get("text"), "depth": ctx.depth, "chain": ctx.request.metadata.call_chain}

    caller = Agent("caller")

    @caller.action("use")
    async def use(ctx: Context, params: dict[str, Any]) -> Any:
        tool = {"call": call_tool("echo", "run"), "any": agent_tool(["echo"])}[params["tool"]]
        with running(ctx):
            assert current_context() is ctx
            return await tool.run(params["arguments"])

    @caller.action("delegate")
    async def delegate(ctx: Context, params: dict[str, Any]) -> Any:
        with running(ctx):
            return await delegate_tool("echo").run({"task": "summarise the file"})

    @caller.action("from_thread")
    async def from_thread(ctx: Context, params: dict[str, Any]) -> Any:
        tool = call_tool("echo", "run")
        with running(ctx):
            # A framework that runs tools in worker threads (the context variables copied).
            return await anyio.to_thread.run_sync(lambda: run_on_loop(tool.run({"text": "from a thread"})))

    return [echo, caller]


async def test_a_call_tool_is_a_child_call_of_the_handler_it_runs_in() -> None:
    async with TestBroker() as broker, broker.runtime(*peers()) as rt:
        out = await rt.call("caller", "use", {"tool": "call", "arguments": {"text": "hi"}})
        assert out == {"heard": "hi", "depth": 1, "chain": ["caller"]}


async def test_an_agent_tool_calls_the_agent_the_model_names_and_only_an_allowed_one() -> None:
    async with TestBroker() as broker, broker.runtime(*peers()) as rt:
        out = await rt.call("caller", "use", {"tool": "any", "arguments": {"agent": "echo", "text": "yo"}})
        assert out["heard"] == "yo"
        with pytest.raises(InvalidParams, match="must be one of"):
            await rt.call("caller", "use", {"tool": "any", "arguments": {"agent": "caller", "text": "x"}})
        with pytest.raises(InvalidParams, match="'text'"):
            await rt.call("caller", "use", {"tool": "any", "arguments": {"agent": "echo", "text": 3}})


async def test_a_delegate_tool_sends_the_task_and_returns_the_result_text() -> None:
    async with TestBroker() as broker, broker.runtime(*peers()) as rt:
        out = await rt.call("caller", "delegate")
        assert '"depth":1' in out.replace(" ", "")


async def test_a_tool_in_a_worker_thread_runs_on_the_handlers_loop() -> None:
    async with TestBroker() as broker, broker.runtime(*peers()) as rt:
        out = await rt.call("caller", "from_thread")
        assert out["heard"] == "from a thread" and out["chain"] == ["caller"]


async def test_outside_a_handler_a_tool_says_how_to_use_it() -> None:
    with pytest.raises(RuntimeError, match="outside a bus handler"):
        await call_tool("echo", "run").run({})
    with pytest.raises(RuntimeError, match="outside a bus handler"):
        await anyio.to_thread.run_sync(lambda: run_on_loop(anyio.lowlevel.checkpoint()))


def test_tools_from_a_profile_take_each_actions_description_and_schema() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    profile = AgentProfile(
        agent_id="reader-1234abcd",
        name="reader",
        version="1",
        metadata={
            "actionSpecs": {
                "read": {"description": "Read a file", "inputSchema": schema},
                "list": {"description": 7},
                "bad": "not a spec",
            }
        },
    )
    tools = {t.name: t for t in tools_from_profile(profile)}
    assert set(tools) == {"reader_read", "reader_list", "reader_bad"}
    assert tools["reader_read"].description == "Read a file" and tools["reader_read"].input_schema == schema
    assert tools["reader_list"].description.startswith("Call the 'list' action")
    assert tools["reader_bad"].input_schema["type"] == "object"
    assert [t.name for t in tools_from_profile(profile, actions=["read"])] == ["reader_read"]


def test_a_wrapped_bus_error_comes_out_typed_and_anything_else_as_agent_error() -> None:
    cycle = CycleDetected("a -> b -> a")
    try:
        try:
            raise cycle
        except CycleDetected as exc:
            raise RuntimeError("tool failed") from exc
    except RuntimeError as wrapped:
        with pytest.raises(CycleDetected) as caught:
            framework_error(wrapped, "someframework")
        assert caught.value is cycle
    grouped = ExceptionGroup("tasks", [ValueError("x"), cycle])
    with pytest.raises(CycleDetected):
        framework_error(grouped, "someframework")
    plain = framework_error(ValueError("bad state"), "someframework")
    assert isinstance(plain, AgentError) and "someframework failed: ValueError: bad state" in plain.message


def test_text_for_a_model() -> None:
    assert text_of("plain") == "plain"
    assert text_of({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    assert text_of({"when": {1, 2}}) == '{"when": "{1, 2}"}'  # what JSON lacks: its str()


async def test_input_text_takes_the_text_parameter_or_a_delegated_task(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "parser.py").write_text("def parse(text):\n    return text.split()\n")
    seen: list[str] = []
    agent = Agent("reads")

    @agent.action("run")
    async def run(ctx: Context, params: dict[str, Any]) -> str:
        seen.append(input_text(ctx, params, "text"))
        return "ok"

    caller = Agent("asks")

    @caller.action("go")
    async def go(ctx: Context, params: dict[str, Any]) -> Any:
        return await ctx.delegate(
            "reads",
            "fix the parser",
            objective="green tests",
            expected_outcome="parse('a b') returns ['a', 'b']",
            action="run",
            input={"file": "parser.py"},
            context=ContextFilter(last_messages=0, include_workspace=True, workspace_files=["parser.py"]),
            workspace=str(folder),
        )

    async with TestBroker() as broker, broker.runtime(agent, caller) as rt:
        await rt.call("reads", "run", {"text": "hello"})
        with pytest.raises(InvalidParams, match="'text' must be a non-empty string"):
            await rt.call("reads", "run", {"text": ""})
        await rt.call("asks", "go")
    assert seen[0] == "hello"
    task = seen[1]
    assert task.startswith("fix the parser") and "Objective: green tests" in task
    assert "\n\nExpected outcome: parse('a b') returns ['a', 'b']\n\nInput: " in task
    assert 'Input: {"file":"parser.py"}' in task
    assert "Workspace:" in task and "- parser.py" in task  # the workspace text, as a model would see it
    assert "Asked by: asks" in task  # the agent that delegated, by name
