"""What a LangGraph run's stream means to the bus: progress updates, token usage, the result.

Helpers of :mod:`a2a.adapters.langgraph`; nothing here touches the bus except
:class:`UsageReporter`, which reports tokens to the handler's context.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel

from ..core.context import Context
from .bridge import clip

__all__ = ["UsageReporter", "final_output", "jsonable", "progress_of", "question_of"]

TEXT_CHARS = 1000
"""Text of a progress update or an error message, at most."""
_LIST_ITEMS = 10
_DEPTH = 16


def jsonable(value: Any, _depth: int = 0) -> Any:
    """``value`` as JSON-serialisable data: messages as ``{type, content}``, pydantic models
    and dataclasses as their fields, anything else unknown as its ``str``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if _depth >= _DEPTH:
        return str(value)
    if isinstance(value, BaseMessage):
        return {"type": value.type, "content": str(value.text)}
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"), _depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value), _depth + 1)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, _depth + 1) for v in value]
    return str(value)


def _messages(update: Any) -> list[BaseMessage]:
    """The messages a node's update writes (one message or a list under ``messages``)."""
    found = update.get("messages") if isinstance(update, Mapping) else None
    if isinstance(found, BaseMessage):
        return [found]
    if isinstance(found, (list, tuple)):
        return [m for m in found if isinstance(m, BaseMessage)]
    return []


def progress_of(node: str, update: Any) -> dict[str, Any]:
    """A small progress update for one node's state update: the node, the state keys it
    wrote, and a preview of the last message it added (its text and the tools it calls)."""
    progress: dict[str, Any] = {"node": node}
    if isinstance(update, Mapping):
        progress["keys"] = sorted(str(k) for k in update)[:_LIST_ITEMS]
    messages = _messages(update)
    if messages:
        last = messages[-1]
        progress["message"] = last.type
        if text := str(last.text):
            progress["text"] = clip(text, TEXT_CHARS)
        if isinstance(last, AIMessage) and last.tool_calls:
            progress["toolCalls"] = [clip(c["name"], 100) for c in last.tool_calls[:_LIST_ITEMS]]
    return progress


def final_output(state: Any) -> Any:
    """The default result of a run: a structured response if the graph made one, else the
    last AI message's text, else the final state as JSON-serialisable data."""
    if isinstance(state, Mapping):
        structured = state.get("structured_response")
        if structured is not None:
            return jsonable(structured)
        for message in reversed(_messages(state)):
            if isinstance(message, AIMessage):
                return str(message.text)
    return jsonable(state)


def question_of(value: Any) -> str:
    """What an ``interrupt(value)`` asks, as one line of text."""
    if isinstance(value, Mapping):
        for key in ("question", "text", "message", "prompt"):
            if isinstance(value.get(key), str):
                return clip(value[key], 500)
    if isinstance(value, str):
        return clip(value, 500)
    return clip(json.dumps(jsonable(value), ensure_ascii=False), 500)


class UsageReporter(AsyncCallbackHandler):
    """Reports the tokens of every chat-model call in a run to the handler's context.

    As a LangChain callback it sees each model call as it ends (subgraphs and models a
    node calls without storing the answer included), so an overspent budget stops the
    run at that call: ``raise_error`` lets BudgetExceeded out of the model call. AI
    messages a node writes without a LangChain model call (a node calling a provider
    SDK itself) are counted from the streamed updates; message ids keep a message from
    being counted twice in one run.
    """

    raise_error = True

    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self._ctx = ctx
        self._counted: set[str] = set()

    async def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        for generations in response.generations:
            for generation in generations:
                if isinstance(generation, ChatGeneration) and isinstance(generation.message, AIMessage):
                    self.count(generation.message)

    def count_update(self, update: Any) -> None:
        """Count the AI messages a node's update writes that no model call reported."""
        for message in _messages(update):
            if isinstance(message, AIMessage):
                self.count(message)

    def count(self, message: AIMessage) -> None:
        """Report ``message``'s token usage once.

        Raises:
            BudgetExceeded: the call's token budget is now overspent.
        """
        usage = message.usage_metadata
        if usage is None:
            return
        if message.id is not None:
            if message.id in self._counted:
                return
            self._counted.add(message.id)
        self._ctx.report_usage(prompt=usage["input_tokens"], completion=usage["output_tokens"])
