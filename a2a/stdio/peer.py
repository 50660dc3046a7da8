"""A local program speaking the prompt channel's NDJSON on stdio, as a bus agent.

::

    agent = stdio_agent("reviewer", ["python", "-u", "reviewer.py"], pool=2, capabilities=["review"])
    await runtime.serve(agent)
    await runtime.call("reviewer", "run", {"text": "review this API for security issues"})

The agent has two actions:

- ``run`` (the default action) with ``{"text": ...}``: one request frame whose
  ``objective`` and ``remote_message`` are the text; the result is the ``draft_message``.
- ``prompt`` with the request frame's fields but ``type`` and ``request_id``
  (:data:`a2a.prompt.PROMPT_SCHEMA`): the result is ``{"draft_message", "status",
  "reason", "metrics", "tools_used"}`` (``metrics.latency_ms`` measured here when the
  program gives none).
  The history is cut to ``max_history_turns`` and ``max_history_chars`` (oldest turns
  first) before it is sent.

A response with ``status: "error"`` ends the call with AGENT_ERROR and its ``reason``.
Tokens the program spent go in ``metrics.prompt_tokens`` and ``metrics.completion_tokens``
(integers): they are the call's usage, counted against its budget (an overspend ends the
call BUDGET_EXCEEDED); other values there are ignored.
The tools a response lists in ``tools_used`` are checked as a handler's tools are
(``ctx.authorize_tool``: the roster's ``tools``, the caller's ``allowed_tools``) and
reported as the call's tools; one the agent may not use ends the call PERMISSION_DENIED.
A turn may take 60 s, 120 s with ``constraints.allow_tool_use``, less when
``constraints.local_turn_timeout_ms`` says so, and never more than the call has left; the
frame's ``local_turn_timeout_ms`` tells the program the time it actually has. A turn that
runs out of time ends with DEADLINE_EXCEEDED; a process that is down, restarting or exits
mid-turn with UNAVAILABLE; an answer line over ``max_line`` bytes with PAYLOAD_TOO_LARGE.
Error messages pass through the runtime's redactor.

While no process of the pool is up (all exited and waiting to restart), the instance
reports itself ``offline`` to the registry (:meth:`StdioPeer.watch_ready`), so routing by
capability passes it by; it is ``available`` again as soon as one is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import anyio
import msgspec

from bus.errors import A2AError, AgentError, DeadlineExceeded, InvalidParams, Unavailable, UnknownAction
from bus.subjects import validate_name
from discovery.profile import AgentCapability

from ..core.agent import Agent
from ..core.context import Context
from ..core.peer import Peer, peer_agent
from ..core.text_input import TEXT_INPUT, input_text
from ..prompt.frames import (
    PROMPT_SCHEMA,
    LocalPromptRequest,
    LocalPromptResponse,
    bound_history,
    new_request_id,
)
from .config import StdioConfig, turn_timeout
from .pool import ProcessInfo, ProcessPool
from .process import ProcessSpec
from .stats import StdioStats

__all__ = ["DEFAULT_ACTION", "RUN_SCHEMA", "StdioPeer", "stdio_agent"]

DEFAULT_ACTION = "run"
RUN_SCHEMA: Mapping[str, Any] = TEXT_INPUT
"""Parameters of the ``run`` action: ``text`` (or a delegated task)."""
MAX_POOL = 256
_MARGIN = 0.05  # seconds before the call's deadline at which the bridge gives up itself
_PROGRESS_TEXT = 4096


class StdioPeer(Peer):
    """Serves the agent ``name`` with ``pool`` processes of ``command`` (see the module docstring).

    Args:
        command: the program and its arguments; checked at once (ValueError when it is
            not found or not executable).
        pool: processes started side by side; the agent takes as many calls at once.
        cwd: their working directory.
        env: variables added to this process's environment for them.
        config: timeouts, grace periods, restart back-off, bounds.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        pool: int = 1,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        config: StdioConfig | None = None,
    ) -> None:
        if not 1 <= pool <= MAX_POOL:
            raise ValueError(f"the pool has 1 to {MAX_POOL} processes, got {pool}")
        self.name = validate_name("agent name", name)
        self.spec = ProcessSpec.build(command, cwd=cwd, env=env)
        self.size = pool
        self.config = config or StdioConfig()
        self.stats = StdioStats(name)
        self._pool: ProcessPool | None = None
        self._on_ready: Callable[[bool], None] | None = None

    def agent(
        self,
        *,
        capabilities: Sequence[AgentCapability | str] = (),
        description: str = "",
        max_queue: int = 1000,
    ) -> Agent:
        """The bus agent this peer serves: actions ``run`` and ``prompt``, one call per process."""
        return peer_agent(
            self.name,
            self,
            actions={DEFAULT_ACTION: RUN_SCHEMA, "prompt": PROMPT_SCHEMA},
            capabilities=capabilities,
            description=description,
            max_concurrency=self.size,
            max_queue=max_queue,
            metadata={"defaultAction": DEFAULT_ACTION, "framework": "stdio"},
        )

    def processes(self) -> list[ProcessInfo]:
        """Each process now (empty while the peer is not open)."""
        return [] if self._pool is None else self._pool.processes()

    def watch_ready(self, on_change: Callable[[bool], None]) -> None:
        """Call ``on_change`` with whether any process is up: now, and whenever that changes.

        The hosting instance calls this once the peer is open, and reports itself offline
        while it is told False.
        """
        self._on_ready = on_change
        on_change(self._pool is not None and self._pool.up)

    def _ready_changed(self, up: bool) -> None:
        if self._on_ready is not None:
            self._on_ready(up)

    async def __aenter__(self) -> StdioPeer:
        if self._pool is not None:
            raise RuntimeError(f"the stdio agent {self.name} is already running")
        pool = ProcessPool(self.name, self.spec, self.size, self.config, self.stats)
        pool.on_up = self._ready_changed
        await pool.open()
        self._pool = pool
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()
        self._on_ready = None

    async def invoke(self, ctx: Context, action: str, params: dict[str, Any]) -> Any:
        pool = self._pool
        try:
            if pool is None:
                raise Unavailable(f"the stdio agent {self.name} is not running")
            if action == DEFAULT_ACTION:
                text = input_text(ctx, params, "text")
                frame = LocalPromptRequest(
                    request_id=new_request_id(),
                    profile_id=self.name,
                    session_id=ctx.conversation_id,
                    objective=text,
                    remote_message=text,
                )
            elif action == "prompt":
                frame = self._prompt_frame(ctx, params)
            else:
                raise UnknownAction(f"the stdio agent has no action {action!r}", details={"action": action})
            start = time.monotonic()
            response = await self._turn(ctx, pool, frame)
            for tool in response.tools_used:
                # Checked and recorded as a handler's tool would be; a tool the agent may
                # not use fails the call, whatever the program answered.
                ctx.authorize_tool(tool)
            prompt, completion = (_tokens(response.metrics.get(k)) for k in TOKEN_METRICS)
            if prompt or completion:  # counted as a handler's model calls are: an overspend fails the call
                ctx.report_usage(prompt, completion)
            if response.status == "error":
                raise AgentError(response.reason or "the local agent reported an error without a reason")
        except A2AError as exc:
            exc.message = ctx.services.redactor.redact(exc.message)
            raise
        if action == DEFAULT_ACTION:
            return response.draft_message
        metrics = dict(response.metrics)
        metrics.setdefault("latency_ms", round((time.monotonic() - start) * 1000))
        return {
            "draft_message": response.draft_message,
            "status": response.status,
            "reason": response.reason,
            "metrics": metrics,
            "tools_used": list(response.tools_used),
        }

    def _prompt_frame(self, ctx: Context, params: dict[str, Any]) -> LocalPromptRequest:
        try:
            frame = msgspec.convert({**params, "request_id": new_request_id()}, LocalPromptRequest)
        except msgspec.ValidationError as exc:
            raise InvalidParams(str(exc)) from None
        c = frame.constraints
        return msgspec.structs.replace(
            frame,
            profile_id=frame.profile_id or self.name,
            session_id=frame.session_id or ctx.conversation_id,
            history=bound_history(frame.history, c.max_history_turns, c.max_history_chars),
        )

    async def _turn(self, ctx: Context, pool: ProcessPool, frame: LocalPromptRequest) -> LocalPromptResponse:
        """One request under the turn's timeout; DEADLINE_EXCEEDED when it runs out."""
        limit = turn_timeout(frame.constraints, self.config)
        left = ctx.remaining() - _MARGIN
        timeout = min(limit, left)
        if timeout <= 0:
            raise DeadlineExceeded(f"no time left for a turn of the stdio agent {self.name}")
        constraints = msgspec.structs.replace(
            frame.constraints, local_turn_timeout_ms=max(1, int(timeout * 1000))
        )
        frame = msgspec.structs.replace(frame, constraints=constraints)

        async def progress(text: str) -> None:
            await ctx.progress({"text": text[:_PROGRESS_TEXT]})

        with anyio.move_on_after(timeout) as scope:
            return await pool.request(frame, progress)
        assert scope.cancelled_caught
        self.stats.timeouts += 1
        cause = "the call's deadline" if left < limit else "the turn's timeout"
        raise DeadlineExceeded(f"the stdio agent {self.name} did not answer within {timeout:.3g} s ({cause})")


def stdio_agent(
    name: str,
    command: Sequence[str],
    *,
    pool: int = 1,
    capabilities: Sequence[AgentCapability | str] = (),
    description: str = "",
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    config: StdioConfig | None = None,
    max_queue: int = 1000,
) -> Agent:
    """The bus agent ``name`` served by ``pool`` processes of ``command`` (see :class:`StdioPeer`).

    Raises:
        ValueError: a bad name or pool size, a command that is not found or not
            executable, a ``cwd`` that is not a directory.
    """
    peer = StdioPeer(name, command, pool=pool, cwd=cwd, env=env, config=config)
    return peer.agent(capabilities=capabilities, description=description, max_queue=max_queue)


TOKEN_METRICS = ("prompt_tokens", "completion_tokens")
"""The response metrics in which a program reports the tokens it spent."""

MAX_REPORTED = 10**9
"""More tokens than one turn reports: such a value is ignored."""


def _tokens(value: object) -> int:
    """A reported token count, or 0 when it is none (not an integer, negative, absurd)."""
    return value if type(value) is int and 0 <= value <= MAX_REPORTED else 0
