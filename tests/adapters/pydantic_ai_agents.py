"""A pydantic-ai agent on the bus, driven by a fake model scripted by its input.

``python -m a2a serve tests.adapters.pydantic_ai_agents:agent`` serves it under the name
in ``A2A_TEST_AGENT_NAME`` (default ``pa``), with the capability ``test.pydantic_ai``.
The model (a ``FunctionModel``; every response reports 10 input and 5 output tokens):

- ``echo: X``: answers ``<name> says X``;
- ``ask: AGENT: REST``: calls the bus tool ``call_agent`` with ``{"agent": AGENT, "text": REST}``,
  then answers ``<name> got: <the tool's result text>``;
- ``wait``: calls the tool ``wait``, which leaves ``$A2A_TEST_MARKS/<name>.waiting``, waits
  forever and, when cancelled, leaves ``$A2A_TEST_MARKS/<name>.cancelled``;
- ``delegate: JSON``: calls the bus tool ``delegate`` (any agent) with the JSON object as its
  arguments, then answers ``<name> got: <the result text>``;
- ``use: TOOL``: calls the agent's own tool TOOL (``lookup`` answers ``looked up``);
- anything else: answers ``<name> says <input>``.

The model keeps the tool definitions it was shown in :data:`SHOWN` (by agent name).

With a structured output type the answer goes through pydantic-ai's output tool as
``{"agent": <name>, "text": <answer>}`` (see :class:`Reply`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from a2a import Agent
from a2a.adapters import agent_tool, delegate_tool
from a2a.adapters.pydantic_ai import from_pydantic_ai, pydantic_ai_tools
from tests.adapters.plain_agents import wait_until_cancelled

NAME = os.environ.get("A2A_TEST_AGENT_NAME", "pa")
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 5
"""What the fake model reports for each response."""
SHOWN: dict[str, dict[str, ToolDefinition]] = {}
"""The function tools each agent's model was last shown, by agent name and tool name."""


class Reply(BaseModel):
    """A structured answer."""

    agent: str
    text: str


def scripted_model(name: str) -> FunctionModel:
    """The fake model of the agent called ``name``."""

    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        SHOWN[name] = {t.name: t for t in info.function_tools}
        prompt = _prompt(messages)
        returned = _returned(messages[-1])
        if returned is not None:
            return _answer(name, f"{name} got: {returned}", info)
        if prompt.startswith("ask:"):
            agent, _, rest = prompt.removeprefix("ask:").partition(":")
            return _call("call_agent", {"agent": agent.strip(), "text": rest.strip()})
        if prompt.strip() == "wait":
            return _call("wait", {})
        if prompt.startswith("delegate:"):
            return _call("delegate", json.loads(prompt.removeprefix("delegate:")))
        if prompt.startswith("use:"):
            return _call(prompt.removeprefix("use:").split("\n", 1)[0].strip(), {})
        return _answer(name, f"{name} says {prompt.removeprefix('echo:').strip()}", info)

    return FunctionModel(respond, model_name=f"scripted-{name}")


def wait_tool(name: str) -> Tool[Any]:
    """A tool that waits until it is cancelled, leaving marks on the way in and out."""

    async def wait() -> str:
        """Wait for something that never comes."""
        return await wait_until_cancelled(name)

    return Tool(wait)


def lookup() -> str:
    """Look something up."""
    return "looked up"


def pydantic_agent(name: str = NAME, output_type: Any = str) -> PydanticAgent[None, Any]:
    """The pydantic-ai agent: the scripted model, ``call_agent`` (any bus agent) and ``wait``."""
    return PydanticAgent(
        scripted_model(name),
        name=name,
        output_type=output_type,
        tools=[*pydantic_ai_tools([agent_tool(), delegate_tool()]), wait_tool(name), Tool(lookup)],
    )


def build(name: str = NAME, output_type: Any = str) -> Agent:
    """The bus agent serving :func:`pydantic_agent`."""
    return from_pydantic_ai(
        pydantic_agent(name, output_type),
        name=name,
        capabilities=["test.pydantic_ai"],
        description="A pydantic-ai agent with a scripted model, for tests.",
    )


agent = build()


def _prompt(messages: list[ModelMessage]) -> str:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _returned(message: ModelMessage) -> str | None:
    """The text of the tool result the last request carries, if any."""
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                return part.model_response_str(wrap_if_error=False)
    return None


def _call(tool: str, args: dict[str, Any]) -> ModelResponse:
    return _response(ToolCallPart(tool, args))


def _answer(name: str, text: str, info: AgentInfo) -> ModelResponse:
    if info.output_tools and not info.allow_text_output:
        return _call(info.output_tools[0].name, {"agent": name, "text": text})
    return _response(TextPart(text))


def _response(part: TextPart | ToolCallPart) -> ModelResponse:
    return ModelResponse(
        parts=[part], usage=RequestUsage(input_tokens=PROMPT_TOKENS, output_tokens=COMPLETION_TOKENS)
    )
