"""A LangGraph agent on the bus, driven by a fake chat model scripted by its input.

``python -m a2a serve tests.adapters.langgraph_agents:agent`` serves it under the name in
``A2A_TEST_AGENT_NAME`` (default ``lg``), with the capability ``test.langgraph``. The
graph is the usual tool loop (``model`` -> ``tools`` -> ``model`` until the model stops
calling tools) with an ``InMemorySaver``. The model (:class:`ScriptedChatModel`, a real
LangChain chat model: every answer reports 10 input and 5 output tokens) reads the last
human message:

- ``echo: X``: answers ``<name> says X``;
- ``ask: AGENT: REST``: calls the bus tool ``call_agent`` with ``{"agent": AGENT, "text": REST}``,
  then answers ``<name> got: <the tool's result text>``;
- ``wait``: calls the tool ``wait``, which leaves ``$A2A_TEST_MARKS/<name>.waiting``, waits
  forever and, when cancelled, leaves ``$A2A_TEST_MARKS/<name>.cancelled``;
- ``both: AGENT1, AGENT2: REST``: calls ``call_agent`` for each agent in one answer (the
  ``ToolNode`` runs the calls side by side);
- ``confirm: X``: calls the tool ``ask_human``, which asks X with ``interrupt()``, then
  answers ``<name> got: <the answer>``;
- ``loop``: calls the tool ``noop`` again after every result, until the recursion limit;
- ``delegate: JSON``: calls the bus tool ``delegate`` (:func:`a2a.adapters.delegate_tool`, any
  agent) with the JSON object as its arguments, then answers ``<name> got: <the result text>``;
- ``use: TOOL``: calls the graph's own tool TOOL (``lookup`` answers ``looked up``), then
  answers ``<name> got: <its result>``;
- anything else: answers ``<name> says <input>``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from a2a import Agent
from a2a.adapters import agent_tool, delegate_tool
from a2a.adapters.langgraph import from_langgraph, langchain_tools
from tests.adapters.plain_agents import wait_until_cancelled

NAME = os.environ.get("A2A_TEST_AGENT_NAME", "lg")
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 5
"""What the fake model reports for each answer."""


class ScriptedChatModel(BaseChatModel):
    """A chat model whose answers follow the script in the module docstring."""

    agent_name: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _answer(self, messages: Sequence[BaseMessage]) -> AIMessage:
        name = self.agent_name
        prompt = next((str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        last, n = (messages[-1] if messages else None), len(messages)
        if isinstance(last, ToolMessage):
            if prompt.strip() == "loop":
                return _call(("noop", {}), n=n)
            return _reply(f"{name} got: {last.text}")
        if prompt.startswith(("ask:", "both:")):
            agents, _, rest = prompt.partition(":")[2].partition(":")
            asks = [("call_agent", {"agent": a.strip(), "text": rest.strip()}) for a in agents.split(",")]
            return _call(*asks, n=n)
        if prompt.startswith("delegate:"):
            return _call(("delegate", json.loads(prompt.removeprefix("delegate:"))), n=n)
        if prompt.startswith("use:"):
            return _call((prompt.removeprefix("use:").split("\n", 1)[0].strip(), {}), n=n)
        if prompt.startswith("confirm:"):
            return _call(("ask_human", {"question": prompt.removeprefix("confirm:").strip()}), n=n)
        if prompt.strip() in ("wait", "loop"):
            return _call(("noop" if prompt.strip() == "loop" else "wait", {}), n=n)
        return _reply(f"{name} says {prompt.removeprefix('echo:').strip()}")


def _usage() -> dict[str, int]:
    return {
        "input_tokens": PROMPT_TOKENS,
        "output_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    }


def _reply(text: str) -> AIMessage:
    return AIMessage(text, usage_metadata=_usage())


def _call(*calls: tuple[str, dict[str, Any]], n: int) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {"name": tool_name, "args": args, "id": f"call-{n}-{i}", "type": "tool_call"}
            for i, (tool_name, args) in enumerate(calls)
        ],
        usage_metadata=_usage(),
    )


def local_tools(name: str) -> list[BaseTool]:
    """The graph's own tools: ``wait`` (until cancelled), ``lookup``, ``noop`` and ``ask_human``."""

    @tool
    async def wait() -> str:
        """Wait for something that never comes."""
        return await wait_until_cancelled(name)

    @tool
    async def lookup() -> str:
        """Look something up."""
        return "looked up"

    @tool
    async def noop() -> str:
        """Do nothing."""
        return "nothing done"

    @tool
    async def ask_human(question: str) -> str:
        """Ask the user a question and wait for the answer."""
        return str(interrupt({"question": question}))

    return [wait, lookup, noop, ask_human]


def graph(name: str = NAME, **tool_node: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The tool-loop graph of the agent ``name``; ``tool_node`` goes to its ``ToolNode``."""
    model = ScriptedChatModel(agent_name=name)

    async def think(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", think)
    bus_tools = langchain_tools([agent_tool(), delegate_tool()])
    builder.add_node("tools", ToolNode([*bus_tools, *local_tools(name)], **tool_node))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=InMemorySaver())


def build(name: str = NAME, *, recursion_limit: int = 25, **tool_node: Any) -> Agent:
    """The bus agent serving :func:`graph`."""
    return from_langgraph(
        graph(name, **tool_node),
        name=name,
        capabilities=["test.langgraph"],
        description="A LangGraph agent with a scripted model, for tests.",
        recursion_limit=recursion_limit,
    )


agent = build()
