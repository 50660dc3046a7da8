"""The coder: a pydantic-ai agent served on the bus with :func:`a2a.adapters.pydantic_ai.from_pydantic_ai`.

Its model is a :class:`~pydantic_ai.models.function.FunctionModel`, a deterministic stand-in
so the example runs without an API key. Set ``A2A_EXAMPLE_MODEL`` to a pydantic-ai model
name (``openai:gpt-4o-mini``, ``anthropic:claude-sonnet-4-0``, ...) to use a real one.
"""

from __future__ import annotations

import os
import re

from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from a2a.adapters.pydantic_ai import from_pydantic_ai

INSTRUCTIONS = "You write one small Python function for the task you are given. Reply with code only."


def _prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def write(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted coder: a first draft without a docstring; with review notes, the fix."""
    task = _prompt(messages)
    name = re.sub(r"\W+", "_", task.split(".")[0].lower()).strip("_")[:30] or "solve"
    body = f"def {name}(items):\n"
    if "docstring" in task:  # the reviewer asked for one
        body += f'    """{task.split(".")[0].strip()}."""\n'
    body += "    return sorted(set(items))\n"
    return ModelResponse(parts=[TextPart(body)])


def model() -> Model | str:
    return os.environ.get("A2A_EXAMPLE_MODEL") or FunctionModel(write, model_name="scripted-coder")


coder = PydanticAgent(model(), instructions=INSTRUCTIONS)

agent = from_pydantic_ai(
    coder,
    name="coder",
    capabilities=["code.write"],
    description="Writes a small Python function for a task",
)
