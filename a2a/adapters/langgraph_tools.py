"""Bus tools as LangChain tools, for LangGraph nodes, ``ToolNode`` and chat models.

Errors, as every adapter treats them: a bus error that ends the work (a limit such as
CYCLE_DETECTED or BUDGET_EXCEEDED, DEADLINE_EXCEEDED, CANCELLED, PERMISSION_DENIED)
propagates out of the tool, so the graph run fails with it and the caller gets that
typed error; any other bus error (AGENT_ERROR, NO_CAPABLE_AGENT, INVALID_PARAMS, ...) is
returned to the model as the text ``error: CODE from AGENT: message``, so it can try something else.

LangGraph's prebuilt ``ToolNode`` (langgraph-prebuilt 1.1) re-raises every exception by
default except a tool-argument validation error, so the propagating errors leave it
untouched. Built with ``handle_tool_errors=True`` (or a handler catching them) it would
turn them into an error message for the model; the run a tool error belongs to is
therefore watched: :func:`a2a.adapters.langgraph.from_langgraph` stops the graph at its
next update and raises the recorded error itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import BaseTool, StructuredTool

from bus.errors import A2AError, PermissionDenied

from ..core.context import Context
from .bridge import PROPAGATED, run_on_loop, tool_error_text
from .tools import BusTool

__all__ = ["BUS_TOOL", "ToolCalls", "ToolGuard", "langchain_tools", "watching"]

BUS_TOOL = "a2a_bus_tool"
"""The metadata key that marks a bus tool among a graph's tools."""


@dataclass
class ToolCalls:
    """The bus-tool calls of one graph run: the first error that must end the run, and the
    calls still running (a ``ToolNode`` gathers parallel calls and leaves the others
    running when one fails; the adapter cancels them when the run ends)."""

    stopped: A2AError | None = None
    running: set[asyncio.Task[Any]] = field(default_factory=set)

    def check(self) -> None:
        """Raise the error a tool raised, even if the graph turned it into a message."""
        if self.stopped is not None:
            raise self.stopped

    async def cancel_running(self) -> None:
        """Cancel the tool calls still running, other than the current task, and wait for them."""
        current = asyncio.current_task()
        left = [t for t in self.running if t is not current and not t.done()]
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left, timeout=5.0)


_calls: ContextVar[ToolCalls | None] = ContextVar("a2a_langgraph_tool_calls", default=None)


@contextmanager
def watching(calls: ToolCalls | None = None) -> Iterator[ToolCalls]:
    """Record the bus-tool calls made in this block (and the tasks and threads it starts)
    in ``calls`` (a new :class:`ToolCalls` when not given)."""
    calls = calls if calls is not None else ToolCalls()
    token = _calls.set(calls)
    try:
        yield calls
    finally:
        _calls.reset(token)


class ToolGuard(BaseCallbackHandler):
    """Checks each of the graph's own tools as it starts (``ctx.authorize_tool``), which
    also records it among the call's tools; bus tools (marked :data:`BUS_TOOL`) are bus
    calls and pass. A refused tool raises PERMISSION_DENIED before it runs, and the run's
    :class:`ToolCalls` keeps the error, so it ends the call even where a ``ToolNode`` turns
    tool errors into messages.

    It runs inline (in the tool's own thread or task), and ``raise_error`` lets the refusal
    out of LangChain's callback manager.
    """

    raise_error = True
    run_inline = True

    def __init__(self, ctx: Context, calls: ToolCalls) -> None:
        super().__init__()
        self._ctx = ctx
        self._calls = calls

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if metadata and metadata.get(BUS_TOOL):
            return
        name = serialized.get("name") if isinstance(serialized, Mapping) else None
        try:
            self._ctx.authorize_tool(str(name or "unnamed tool"))
        except PermissionDenied as exc:
            if self._calls.stopped is None:
                self._calls.stopped = exc
            raise


def langchain_tools(tools: Sequence[BusTool]) -> list[BaseTool]:
    """LangChain tools making the bus calls of ``tools``.

    Each is a ``StructuredTool`` whose ``args_schema`` is the bus tool's JSON Schema as
    given (LangChain passes a dict schema to models unchanged and the arguments to the
    tool unvalidated: the callee validates them). Awaited (the usual case in a graph),
    the call runs on the handler's loop; invoked synchronously (a sync node LangGraph
    runs in a worker thread) it is run on that loop and waited for.

    Call them inside a handler: a graph run by
    :func:`a2a.adapters.langgraph.from_langgraph`, or any code in
    :func:`a2a.adapters.bridge.running`.
    """
    return [_structured(tool) for tool in tools]


def _structured(tool: BusTool) -> StructuredTool:
    async def call(**arguments: Any) -> str:
        return await _call(tool, arguments)

    def call_in_thread(**arguments: Any) -> str:
        return run_on_loop(_call(tool, arguments))

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=dict(tool.input_schema),
        coroutine=call,
        func=call_in_thread,
        metadata={BUS_TOOL: True},
    )


async def _call(tool: BusTool, arguments: Mapping[str, Any]) -> str:
    calls = _calls.get()
    task = asyncio.current_task()
    if calls is not None and task is not None:
        calls.running.add(task)
    try:
        return await tool.run_text(arguments)
    except PROPAGATED as exc:
        if calls is not None and calls.stopped is None:
            calls.stopped = exc
        raise
    except A2AError as exc:
        return tool_error_text(exc)
    finally:
        if calls is not None and task is not None:
            calls.running.discard(task)
