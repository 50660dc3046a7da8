"""An AutoGen AgentChat assistant on a scripted fake model, as a bus agent.

``agent`` is named by ``A2A_TEST_AGENT_NAME`` (default ``ag``), offers ``test.autogen``,
and answers by the caller's text:

    echo: X               "<name> says X" (no tool call)
    ask: AGENT: REST      calls the bus tool ``call_agent`` with {"agent": AGENT, "text": REST},
                          then answers "<name> heard: <the tool's result>"
    wait                  calls the tool ``wait``, which touches ``$A2A_TEST_MARKS/<name>.waiting``,
                          waits until cancelled, then touches ``<name>.cancelled`` and re-raises
    handoff: X            hands off to the user (only an assistant made with ``handoff=True``)
    delegate: JSON        calls the bus tool ``delegate`` (any agent) with the JSON object as its
                          arguments, then answers "<name> heard: <the result>"
    use: TOOL             calls the assistant's own tool TOOL (``lookup`` answers "looked up")
    anything else         "<name> says <text>"

Every model call reports 10 prompt and 5 completion tokens.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelFamily,
    ModelInfo,
    RequestUsage,
    UserMessage,
)
from autogen_core.tools import FunctionTool, Tool, ToolSchema
from pydantic import BaseModel

from a2a import Agent
from a2a.adapters import agent_tool, delegate_tool
from a2a.adapters.autogen import autogen_tools, from_autogen
from tests.adapters.plain_agents import wait_until_cancelled

NAME = os.environ.get("A2A_TEST_AGENT_NAME", "ag")
PROMPT, COMPLETION = 10, 5


SHOWN: dict[str, list[ToolSchema]] = {}
"""The tool schemas each model (by agent name) was last sent with a request that had tools."""


class ScriptedModel(ChatCompletionClient):
    """A chat completion client whose answer is a function of the conversation it is sent."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def answer(self, messages: Sequence[LLMMessage]) -> str | list[FunctionCall]:
        last = messages[-1]
        if isinstance(last, FunctionExecutionResultMessage):
            return f"{self.name} heard: " + "\n".join(r.content for r in last.content)
        asked = [m for m in messages if isinstance(m, UserMessage) and isinstance(m.content, str)]
        from_user = [m for m in asked if m.source == "user"] or asked
        text = str(from_user[-1].content).strip() if from_user else ""
        if text.startswith("echo:"):
            return f"{self.name} says {text[5:].strip()}"
        if text.startswith("ask:"):
            target, _, rest = text[4:].partition(":")
            return self.tool_call("call_agent", {"agent": target.strip(), "text": rest.strip()})
        if text == "wait":
            return self.tool_call("wait", {})
        if text.startswith("delegate:"):
            return self.tool_call("delegate", json.loads(text.removeprefix("delegate:")))
        if text.startswith("use:"):
            return self.tool_call(text.removeprefix("use:").split("\n", 1)[0].strip(), {})
        if text.startswith("handoff:"):
            return self.tool_call("transfer_to_user", {})
        return f"{self.name} says {text}"

    def tool_call(self, name: str, arguments: dict[str, Any]) -> list[FunctionCall]:
        return [FunctionCall(id=f"call-{self.calls}", name=name, arguments=json.dumps(arguments))]

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        self.calls += 1
        if tools:  # a reflection on tool results is asked without tools
            SHOWN[self.name] = [t.schema if isinstance(t, Tool) else t for t in tools]
        content = self.answer(messages)
        return CreateResult(
            finish_reason="stop" if isinstance(content, str) else "function_calls",
            content=content,
            usage=RequestUsage(prompt_tokens=PROMPT, completion_tokens=COMPLETION),
            cached=False,
        )

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = (),
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages)

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=PROMPT, completion_tokens=COMPLETION)

    def total_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=PROMPT * self.calls, completion_tokens=COMPLETION * self.calls)

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return PROMPT

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()
    ) -> int:
        return 1_000_000

    @property
    def capabilities(self) -> ModelInfo:  # deprecated alias of model_info
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False,
            function_calling=True,
            json_output=False,
            family=ModelFamily.UNKNOWN,
            structured_output=False,
        )


def wait_tool(name: str, *, tokens: list[CancellationToken] | None = None) -> FunctionTool:
    """A tool that waits until cancelled, leaving marks in ``$A2A_TEST_MARKS`` (when set)."""

    async def wait(cancellation_token: CancellationToken) -> str:
        if tokens is not None:
            tokens.append(cancellation_token)
        return await wait_until_cancelled(name)

    return FunctionTool(wait, description="Wait until cancelled.", name="wait")


async def lookup() -> str:
    """Look something up."""
    return "looked up"


def make_assistant(
    name: str = NAME, *, tokens: list[CancellationToken] | None = None, handoff: bool = False
) -> AssistantAgent:
    """A fresh assistant on :class:`ScriptedModel` with ``call_agent`` and ``wait``."""
    return AssistantAgent(
        re.sub(r"\W", "_", name),
        model_client=ScriptedModel(name),
        tools=[
            *autogen_tools([agent_tool(), delegate_tool()]),
            wait_tool(name, tokens=tokens),
            FunctionTool(lookup, description="Look something up."),
        ],
        handoffs=["user"] if handoff else None,
        reflect_on_tool_use=True,
    )


def make_team(name: str = NAME) -> RoundRobinGroupChat:
    """Two assistants, ``<name>_a`` then ``<name>_b``, one turn each."""
    return RoundRobinGroupChat([make_assistant(f"{name}_a"), make_assistant(f"{name}_b")], max_turns=2)


agent: Agent = from_autogen(
    make_assistant,
    name=NAME,
    capabilities=["test.autogen"],
    description="An AutoGen assistant on a fake model.",
)
