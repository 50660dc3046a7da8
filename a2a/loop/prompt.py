"""The default system message of an agent loop: the actions a model may answer with."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["instructions"]

_ACTIONS = """\
Answer every turn with exactly one JSON object, nothing else:
  {"action": "call_agent", "target": "<agent>", "task": "<specific task>", "thread_mode": "new",
   "context": {"files": ["<path>"], "...": "what the agent needs"},
   "expected_outcome": "<what the agent should produce or verify>"}
      give a peer a task: always a specific task, its context and the expected outcome;
      "thread_mode": "reuse" continues your last thread with that agent
  {"action": "tool_call", "tool": "<tool>", "args": {...}}
  {"action": "done", "result": "<what you did and how you checked it>"}
  {"action": "respond", "text": "<an answer, or the error details your caller needs>"}
After each action you get an observation: {"observation": ..., "ok": true|false, "result" or "error"}.
If a tool or call fails, read the error and fix the cause; if you cannot, respond with the error.
Never claim success after a failed tool: done is refused while a failure is unresolved."""


def instructions(agent: str, tools: Sequence[str]) -> str:
    """The system message for ``agent`` with ``tools``: seed 003's actions and error rules."""
    given = ", ".join(tools) if tools else "none"
    return f"You are the {agent} agent. Your tools: {given}.\n{_ACTIONS}"
