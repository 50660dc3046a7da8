"""One CrewAI kickoff inside a bus handler: how the crew's worker threads reach the handler's
loop, and how the handler stops them.

CrewAI runs each step of an agent (a model call, its tool calls) synchronously in a worker
thread it starts with the context variables copied, so the :class:`CrewRun` of the kickoff is
found there (:func:`run_in_handler`, :func:`stopped`). A thread cannot be killed: the run stops
the crew through CrewAI's own abort, a ``HookAborted`` raised by the run-scoped hooks before
each model call and each tool call (:meth:`CrewRun.check`), and cancels the coroutines that
tools started on the handler's loop (:meth:`CrewRun.close`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from crewai.events.event_bus import crewai_event_bus
from crewai.hooks import HookAborted, LLMCallHookContext, ToolCallHookContext

from bus.errors import A2AError, BudgetExceeded, Cancelled, PermissionDenied

from ..core.context import Context
from . import bridge

__all__ = [
    "FLUSH",
    "FRAMEWORK",
    "TEXT",
    "CrewRun",
    "current",
    "role",
    "run_in_handler",
    "stopped",
]

T = TypeVar("T")
FRAMEWORK = "crewai"
TEXT = 1024  # bytes of model or tool text in one progress update
FLUSH = 2.0  # seconds to wait for CrewAI's event handlers (usage) to catch up
GRACE = 1.0  # seconds a stopped run's bus calls get to unwind

current: ContextVar[CrewRun | None] = ContextVar("a2a_crewai_run", default=None)
"""The run of the kickoff this code works for (copied into CrewAI's worker threads)."""


def run_in_handler(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` on the bus handler's loop from a CrewAI tool's thread; return its result.

    In a :func:`~a2a.adapters.crewai.from_crewai` run it is cancelled with the handler (then
    raising CANCELLED), refused once the run has stopped, and a limit error it raises stops the
    crew. Elsewhere (a crew kicked off in a handler of your own, inside ``bridge.running``) it
    is :func:`a2a.adapters.bridge.run_on_loop`.
    """
    run = current.get()
    return run.call(awaitable) if run is not None else bridge.run_on_loop(awaitable)


def stopped() -> bool:
    """Whether the run this tool works for has stopped: a blocking tool of the crew's own
    (one :func:`run_in_handler` does not serve) may poll it and give up."""
    run = current.get()
    return run is not None and run.halted.is_set()


class _Stopped(HookAborted):
    """Stops the crew where a hook may (CrewAI never retries a HookAborted)."""


class CrewRun:
    """The bridge between one kickoff's threads and the handler running it.

    Methods above the line are called from any thread; those below it on the handler's loop.
    """

    def __init__(self, ctx: Context, updates: MemoryObjectSendStream[dict[str, Any]] | None) -> None:
        self.ctx = ctx
        self.loop = asyncio.get_running_loop()
        self.updates = updates
        self.halted = threading.Event()
        self.reason: A2AError | None = None
        """The error the call ends with, whatever the crew does: a tool's limit error, the budget."""
        self._lock = threading.Lock()
        self._calls: set[asyncio.Task[Any]] = set()  # on the loop only
        self._open = True  # written on the loop, under the lock

    def halt(self, reason: A2AError | None = None) -> None:
        """Stop the crew at its next hook; ``reason`` (the first one given before the run was
        closed) ends the call."""
        with self._lock:
            if self.reason is None and self._open:
                self.reason = reason
        self.halted.set()

    def check(self, _hook: object = None) -> None:
        """A PRE_MODEL_CALL / PRE_TOOL_CALL hook: abort the step once the run has stopped."""
        if self.halted.is_set():
            raise _Stopped(f"the bus call ended: {self.reason or 'the run is over'}", source=FRAMEWORK)

    def call(self, awaitable: Awaitable[T]) -> T:
        """:func:`run_in_handler` for this run."""
        if self.halted.is_set():
            raise self._refusal(awaitable)
        # The usage of the model calls so far is reported before the call takes its budget.
        crewai_event_bus.flush(timeout=FLUSH)
        try:
            return bridge.run_on_loop(self._tracked(awaitable))
        except bridge.PROPAGATED as exc:
            self.halt(exc)
            raise

    def count(self, prompt: int, completion: int) -> None:
        """Report a model call's tokens (from CrewAI's event handler thread)."""
        self._soon(self._report, prompt, completion)

    def post(self, update: dict[str, Any]) -> None:
        if self.updates is not None:
            self._soon(self._send, {"framework": FRAMEWORK, **update})

    def _soon(self, callback: Callable[..., None], *args: Any) -> None:
        if self._open:  # a thread that outlives the run has nobody left to tell
            with suppress(RuntimeError):  # the loop is closed: the process is ending
                self.loop.call_soon_threadsafe(callback, *args)

    def before_tool(self, hook: ToolCallHookContext) -> None:
        """A PRE_TOOL_CALL hook: abort the step once the run has stopped; check one of the
        crew's own tools (not a bus tool) with ``ctx.authorize_tool``, which records it. A
        refused tool stops the crew before it runs and ends the call PERMISSION_DENIED."""
        self.check()
        name = hook.tool_name
        if bridge.is_bus_tool(name):
            return
        try:
            # A policy lookup and an append to the call's tool list: safe from this thread.
            self.ctx.authorize_tool(name)
        except PermissionDenied as exc:
            self.halt(exc)
            raise _Stopped(f"the bus call ended: {exc}", source=FRAMEWORK) from None

    def after_model(self, hook: LLMCallHookContext) -> None:
        """A POST_MODEL_CALL hook: a model's text answer goes out as progress."""
        if hook.response:
            self.post({"step": "model", "agent": role(hook.agent), "text": bridge.clip(hook.response, TEXT)})

    def after_tool(self, hook: ToolCallHookContext) -> None:
        """A POST_TOOL_CALL hook: a tool's result goes out as progress."""
        text = bridge.clip(hook.tool_result or "", TEXT)
        self.post({"step": "tool", "agent": role(hook.agent), "tool": hook.tool_name, "text": text})

    # -- on the handler's loop ------------------------------------------------------------

    def _report(self, prompt: int, completion: int) -> None:
        if self._open:
            try:
                self.ctx.report_usage(prompt=prompt, completion=completion)
            except BudgetExceeded as exc:
                self.halt(exc)

    def _send(self, update: dict[str, Any]) -> None:
        if self._open and self.updates is not None:
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self.updates.send_nowait(update)

    async def _tracked(self, awaitable: Awaitable[T]) -> T:
        if self.halted.is_set() or not self._open:
            raise self._refusal(awaitable)
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        try:
            return await awaitable
        finally:
            self._calls.discard(task)

    def _refusal(self, awaitable: Awaitable[Any]) -> Cancelled:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        return Cancelled(f"the crew's run has stopped: {self.reason or 'the call ended'}")

    async def close(self) -> None:
        """Stop the crew's steps and bus calls; cancel the calls in flight and let them unwind.

        The reason is final from here: a call this cancels does not replace it.
        """
        with self._lock:
            self._open = False
        self.halted.set()
        calls = list(self._calls)
        for task in calls:
            task.cancel()
        if calls:
            with anyio.CancelScope(shield=True), anyio.move_on_after(GRACE):
                await asyncio.wait(calls)


def role(agent: object) -> str | None:
    """The role of a CrewAI agent, for progress updates."""
    name = getattr(agent, "role", None)
    return bridge.clip(name, 200) if isinstance(name, str) else None
