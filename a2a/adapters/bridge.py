"""What every framework adapter shares: the handler a framework's loop runs inside.

An adapter runs the framework object inside a bus handler with :func:`running`; every
bus tool called from that framework's loop, however deep (a LangGraph node, a
pydantic-ai tool, an AutoGen tool, a CrewAI tool in a worker thread), finds that
handler's :class:`a2a.Context` and calls through it. So the call is a child of the
handler's request: one more hop and depth, the handler on the call chain (a cycle is
refused), a deadline no later than its own, a share of its token budget, its rights,
its trace.

The framework's own tools (everything but bus tools) are checked where the framework
calls them, through its tool hook: ``ctx.authorize_tool(name)`` before the tool runs
(seed 002's ``tools_allowed``, narrowed by the caller's ``allowed_tools``), which also
records the tool among the call's ``tool_calls``. A refused tool ends the call with
PERMISSION_DENIED before it runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
from collections.abc import Awaitable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from bus.errors import (
    A2AError,
    AgentError,
    Cancelled,
    DeadlineExceeded,
    LimitExceeded,
    PermissionDenied,
)

from ..core.agent import Agent, Handler
from ..core.context import Context
from ..core.text_input import TEXT_INPUT as TEXT_INPUT
from ..core.text_input import input_text as input_text
from ..wire import AgentCapability

__all__ = [
    "PROPAGATED",
    "TEXT_INPUT",
    "AgentSpec",
    "Binding",
    "Identity",
    "clip",
    "current",
    "current_context",
    "framework_agent",
    "framework_error",
    "input_text",
    "is_bus_tool",
    "mark_bus_tool",
    "reraise_bus_error",
    "run_on_loop",
    "running",
    "text_of",
    "tool_error_text",
]

T = TypeVar("T")

PROPAGATED: tuple[type[A2AError], ...] = (LimitExceeded, DeadlineExceeded, Cancelled, PermissionDenied)
"""Bus errors a bus tool raises out of the framework's run, to end the call with them: a
limit (a cycle, depth, budget), the deadline, a cancellation, a refusal. Any other (the
callee failed, nobody serves it, bad arguments) the model reads as a failed tool result
(:func:`tool_error_text`) and may try something else."""


def tool_error_text(error: A2AError) -> str:
    """A bus error as the failed tool result a model reads: ``error: CODE from AGENT: message``
    (``error: CODE: message`` when the error does not say which agent it came from)."""
    where = f" from {error.agent}" if error.agent else ""
    return f"error: {error.code}{where}: {error.message or 'no message'}"


_bus_tool_names: set[str] = set()


def mark_bus_tool(name: str) -> None:
    """Note that ``name`` is a bus tool's name in this process (for frameworks whose tool
    hooks only see names: AutoGen, CrewAI)."""
    _bus_tool_names.add(name)


def is_bus_tool(name: str) -> bool:
    """Whether ``name`` is a bus tool's: its call is a bus call, checked by the roster's
    ``can_invoke`` at the callee, not one of the agent's own tools."""
    return name in _bus_tool_names


def clip(text: str, limit: int = 4096) -> str:
    """At most ``limit`` bytes of UTF-8 text (for progress updates), cut on a character."""
    data = text.encode()
    return text if len(data) <= limit else data[:limit].decode(errors="ignore")


class Identity(TypedDict, total=False):
    """The bus agent's identity, which every adapter takes as keywords besides its name."""

    capabilities: Sequence[AgentCapability | str]
    """What the agent offers, for routing by capability."""
    description: str
    action: str
    """The action that runs the framework object: the agent's ``defaultAction`` ("run")."""
    max_concurrency: int | None
    """Calls served at once per instance (each adapter says its default)."""
    metadata: Mapping[str, Any] | None
    """More metadata for the agent's profile (``defaultAction`` and ``framework`` are set)."""
    estimated_tokens: int
    """Refuse calls whose token budget is smaller, on arrival."""


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """The bus agent of an adapter, built once from its keywords (:class:`Identity`)."""

    name: str
    framework: str
    summary: str
    """Describes the action when ``description`` is empty."""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: TEXT_INPUT)
    capabilities: Sequence[AgentCapability | str] = ()
    description: str = ""
    action: str = "run"
    max_concurrency: int | None = None
    metadata: Mapping[str, Any] | None = None
    estimated_tokens: int = 0


def framework_agent(spec: AgentSpec, handler: Handler, default_concurrency: int = 32) -> Agent:
    """The bus agent of an adapter: ``handler`` serves ``spec.action``, which is the agent's
    ``defaultAction`` (where the A2A gateway sends text), and the metadata name the framework."""
    concurrency = spec.max_concurrency
    agent = Agent(
        spec.name,
        description=spec.description,
        capabilities=spec.capabilities,
        max_concurrency=default_concurrency if concurrency is None else concurrency,
        metadata={**(spec.metadata or {}), "defaultAction": spec.action, "framework": spec.framework},
    )
    agent.action(
        spec.action,
        input_schema=spec.input_schema,
        description=spec.description or spec.summary,
        estimated_tokens=spec.estimated_tokens,
    )(handler)
    return agent


@dataclass(frozen=True, slots=True)
class Binding:
    """The handler a framework runs inside, and the event loop that handler runs on."""

    context: Context
    loop: asyncio.AbstractEventLoop


_binding: ContextVar[Binding | None] = ContextVar("a2a_adapter_binding", default=None)


def current() -> Binding:
    """The binding of the handler this code runs inside.

    Raises:
        RuntimeError: called outside an adapter's handler (a bus tool used on its own).
    """
    binding = _binding.get()
    if binding is None:
        raise RuntimeError(
            "a bus tool was called outside a bus handler: run the framework object through "
            "one of the a2a.adapters (from_langgraph, from_pydantic_ai, ...) so its calls "
            "inherit the caller's deadline, limits and rights"
        )
    return binding


def current_context() -> Context:
    """The :class:`a2a.Context` of the handler this code runs inside."""
    return current().context


@contextmanager
def running(ctx: Context) -> Iterator[Binding]:
    """Bind ``ctx`` for the framework code run in this block (and the tasks and
    threads it starts, which copy the context variables)."""
    binding = Binding(ctx, asyncio.get_running_loop())
    token = _binding.set(binding)
    try:
        yield binding
    finally:
        _binding.reset(token)


def run_on_loop(awaitable: Awaitable[T], *, timeout: float | None = None) -> T:
    """Run a coroutine on the bound handler's loop from a worker thread, and wait for it.

    For frameworks that call tools synchronously in a thread (CrewAI). From the loop's
    own thread this would deadlock, so it raises RuntimeError there instead.
    """
    try:
        binding = current()
        try:
            running_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running_loop = None
        if running_loop is binding.loop:
            raise RuntimeError("run_on_loop() was called on the handler's own event loop; await the call")
    except RuntimeError:
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # never to be awaited
        raise
    future = asyncio.run_coroutine_threadsafe(_as_coroutine(awaitable), binding.loop)
    try:
        return future.result(timeout)
    except concurrent.futures.CancelledError:
        raise Cancelled("the bus call was cancelled with the handler that made it") from None
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def text_of(value: Any) -> str:
    """A result as the text a model reads: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def reraise_bus_error(exc: BaseException) -> None:
    """Re-raise the typed bus error a framework wrapped (in its own exception types or
    ``__cause__`` chain), so the caller sees CYCLE_DETECTED, not a framework error."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, A2AError):
            raise cur
        cur = cur.__cause__ or cur.__context__
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            reraise_bus_error(inner)


def framework_error(exc: Exception, framework: str) -> A2AError:
    """The typed error a framework failure becomes: a wrapped bus error itself, else AGENT_ERROR."""
    reraise_bus_error(exc)
    return AgentError(f"{framework} failed: {type(exc).__name__}: {exc}")
