"""A CrewAI crew on the bus, driven by a fake model scripted by its input.

``python -m a2a serve tests.adapters.crewai_agents:agent`` serves it under the name in
``A2A_TEST_AGENT_NAME`` (default ``crew``), with the capability ``test.crewai``. The crew has
one agent and one task; its model (:class:`ScriptedLLM`, no network, every call reporting 10
prompt and 5 completion tokens through CrewAI's usage events) answers by the input:

- ``echo: X``: answers ``<name> says X``;
- ``ask: AGENT: REST``: calls the bus tool ``call_agent`` with ``{"agent": AGENT, "text": REST}``,
  then answers ``<name> got: <the tool's result text>``;
- ``wait``: calls the tool ``wait``, which leaves ``$A2A_TEST_MARKS/<name>.waiting``, waits
  forever on the handler's loop and, when cancelled, leaves ``$A2A_TEST_MARKS/<name>.cancelled``;
- ``delegate: JSON``: calls the bus tool ``delegate`` (any agent; CrewAI gives it one
  ``arguments`` string) with the JSON text, then answers ``<name> got: <the result>``;
- ``use: TOOL``: calls the crew's own tool TOOL (``lookup`` answers ``looked up``);
- anything else: answers ``<name> says <input>``.

The model keeps the tools it was last offered in :data:`SHOWN` (by agent name).

CrewAI's own telemetry, tracing and version check are turned off and its storage goes to a
temporary directory, unless the environment says otherwise, before CrewAI is imported.
"""

from __future__ import annotations

import os
import re
import tempfile

for _key, _value in {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_VERSION_CHECK": "true",
    "CREWAI_STORAGE_DIR": os.path.join(tempfile.gettempdir(), "a2a-crewai-tests"),
}.items():
    os.environ.setdefault(_key, _value)

import json  # noqa: E402
import uuid  # noqa: E402
from typing import Any  # noqa: E402

from crewai import Agent as CrewAgent  # noqa: E402
from crewai import Crew, Task  # noqa: E402
from crewai.events.types.llm_events import LLMCallType  # noqa: E402
from crewai.llms.base_llm import BaseLLM, llm_call_context  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402

from a2a import Agent  # noqa: E402
from a2a.adapters import agent_tool, delegate_tool  # noqa: E402
from a2a.adapters.crewai import crewai_tools, from_crewai, run_in_handler  # noqa: E402
from tests.adapters.plain_agents import wait_until_cancelled  # noqa: E402

NAME = os.environ.get("A2A_TEST_AGENT_NAME", "crew")
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 5
"""What the fake model reports for each call."""
SHOWN: dict[str, list[Any]] = {}
"""The tools each agent's model was last offered, by agent name."""
_REQUEST = re.compile(r"<request>(.*?)</request>", re.DOTALL)


class ScriptedLLM(BaseLLM):
    """A CrewAI model answering from a script, with native tool calls."""

    agent_name: str = NAME
    calls: int = 0

    def supports_function_calling(self) -> bool:
        return True

    def get_input_tokens_count(self, messages: Any, tools: Any = None, response_model: Any = None) -> int:
        return PROMPT_TOKENS  # no estimate, no warning about it

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        self.calls += 1
        if tools:
            SHOWN[self.agent_name] = list(tools)
        messages = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        answer = self._answer(messages)
        usage = {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS}
        self._track_token_usage_internal(usage)
        with llm_call_context():
            self._emit_call_started_event(messages, tools, from_task=from_task, from_agent=from_agent)
            self._emit_call_completed_event(
                answer if isinstance(answer, str) else json.dumps(answer),
                LLMCallType.TOOL_CALL if isinstance(answer, list) else LLMCallType.LLM_CALL,
                from_task,
                from_agent,
                messages,
                usage=usage,
            )
        return answer

    def _answer(self, messages: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        name = self.agent_name
        if messages and messages[-1].get("role") == "tool":
            return f"{name} got: {messages[-1].get('content')}"
        prompt = next((m.group(1).strip() for m in map(_request, messages) if m is not None), "")
        if prompt.startswith("ask:"):
            agent, _, rest = prompt.removeprefix("ask:").partition(":")
            return tool_calls(("call_agent", {"agent": agent.strip(), "text": rest.strip()}))
        if prompt == "wait":
            return tool_calls(("wait", {}))
        if prompt.startswith("delegate:"):
            return tool_calls(("delegate", {"arguments": prompt.removeprefix("delegate:").strip()}))
        if prompt.startswith("use:"):
            return tool_calls((prompt.removeprefix("use:").split("\n", 1)[0].strip(), {}))
        return f"{name} says {prompt.removeprefix('echo:').strip()}"


class LookupTool(BaseTool):
    """One of the crew's own tools."""

    name: str = "lookup"
    description: str = "Look something up."

    def _run(self) -> str:
        return "looked up"


class WaitTool(BaseTool):
    """Waits on the handler's loop until the call is cancelled, leaving marks on the way in and out."""

    name: str = "wait"
    description: str = "Wait for something that never comes."
    agent_name: str = NAME

    def _run(self) -> str:
        return run_in_handler(self._wait())

    async def _wait(self) -> str:
        return await wait_until_cancelled(self.agent_name)


def crew(name: str = NAME, *, human_input: bool = False) -> Crew:
    """The crew: one agent with ``call_agent`` (any bus agent) and ``wait``, one task."""
    member = CrewAgent(
        role=name,
        goal="Answer the request",
        backstory="A scripted agent for tests.",
        llm=ScriptedLLM(model=f"scripted-{name}", agent_name=name),
        tools=[*crewai_tools([agent_tool(), delegate_tool()]), WaitTool(agent_name=name), LookupTool()],
        verbose=False,
        max_iter=4,
    )
    task = Task(
        description="Answer the request.\n<request>{text}</request>",
        expected_output="The answer.",
        agent=member,
        human_input=human_input,
    )
    return Crew(agents=[member], tasks=[task], verbose=False, tracing=False)


def build(name: str = NAME, **options: Any) -> Agent:
    """The bus agent serving a fresh :func:`crew` per call."""
    return from_crewai(
        lambda: crew(name),
        name=name,
        capabilities=["test.crewai"],
        description="A CrewAI crew with a scripted model, for tests.",
        **options,
    )


agent = build()


def _request(message: dict[str, Any]) -> re.Match[str] | None:
    content = message.get("content")
    return _REQUEST.search(content) if message.get("role") == "user" and isinstance(content, str) else None


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A model response asking for tool calls, in the OpenAI shape CrewAI reads."""
    return [
        {
            "id": f"call_{uuid.uuid4().hex[:12]}",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(args)},
        }
        for tool, args in calls
    ]
