"""The agent loop: a model speaks seed 003's JSON actions, the loop carries them out.

Each turn the model reads the conversation so far and answers with one action
(:mod:`a2a.loop.actions`); the loop does it inside the handler's :class:`~a2a.Context`
and tells the model what happened:

- ``call_agent`` delegates through :meth:`Context.delegate` (its roster checks, thread
  modes, redaction and history record), ``context`` becoming the callee's parameters and
  ``expected_outcome`` travelling beside the task;
- ``tool_call`` runs a tool this agent was given, after :meth:`Context.authorize_tool`;
- ``done`` ends the loop with a result, ``respond`` with an answer that claims no success.

Nothing the model says crashes the loop or passes silently: a reply that is not an action,
an unknown tool, a refused or failed call, a tool that raised, each comes back to the model
as an observation with an error code. ``done`` is refused while a tool or agent that failed
has not succeeded since (never claim success after a failed tool): the model fixes it, or
``respond``\\ s with the error. A loop that reaches ``max_turns`` replies, or
``max_invalid`` invalid replies in a row, ends with :class:`LoopFailed`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from bus.errors import A2AError, AgentError
from bus.handoff import ContextFilter

from ..core.context import Context
from .actions import (
    ActionError,
    CallAgent,
    Done,
    ErrorNote,
    Observation,
    Respond,
    ToolCall,
    decode_action,
    encode_observation,
)
from .prompt import instructions

__all__ = ["AgentLoop", "LoopConfig", "LoopFailed", "LoopOutcome", "Message", "Model", "Step", "Tool"]

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": text}``."""
Model = Callable[[list[Message]], Awaitable[str]]
"""A model: the conversation so far in, its next reply out."""
Tool = Callable[[Context, dict[str, Any]], Awaitable[Any]]
Kind = Literal["call_agent", "tool_call"]
"""A tool: ``(ctx, args)`` in, a JSON-serialisable result out; raises to fail."""


class LoopConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Limits and rights of one agent loop."""

    max_turns: int = 12
    """Model replies at most, valid or not."""
    max_invalid: int = 3
    """Invalid replies in a row at most."""
    allow_nested_calls: bool = True
    """Whether agents this loop calls may call further agents (only ever narrows)."""
    allowed_tools: Sequence[str] | None = None
    """Narrows the tools of agents this loop calls."""
    conversation: ContextFilter | None = None
    """The part of this conversation each called agent gets (default: none)."""
    call_timeout: float | None = None
    system: str | None = None
    """The system message; default: :func:`a2a.loop.instructions` for the agent's tools."""


class Step(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One action the loop carried out."""

    action: Kind
    name: str
    ok: bool
    error_code: str | None = None
    thread_id: str | None = None


class LoopOutcome(msgspec.Struct, kw_only=True):
    """How a loop ended: ``done`` with a result, or ``respond`` with a text."""

    status: Literal["done", "respond"]
    result: Any = None
    text: str = ""
    turns: int = 0
    steps: list[Step] = msgspec.field(default_factory=list)
    unresolved: list[Step] = msgspec.field(default_factory=list)
    """Failed steps not followed by a success of the same tool or agent (empty when ``done``)."""


class LoopFailed(AgentError):
    """The model gave no usable end: too many turns, or too many invalid replies in a row.

    ``details``: ``reason`` (``max_turns`` or ``invalid_replies``), ``turns``, and
    ``lastError``, the last error the model was told.
    """


class AgentLoop:
    """A model, the tools it may use and the limits it runs under; :meth:`run` drives one task.

    Example, an agent whose default action is a model with one tool::

        loop = AgentLoop(model, tools={"read_file": read_file})

        @agent.action("task")
        async def task(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
            outcome = await loop.run(ctx, input_text(ctx, params, "text"))
            return msgspec.to_builtins(outcome)
    """

    def __init__(
        self, model: Model, *, tools: Mapping[str, Tool] | None = None, config: LoopConfig | None = None
    ) -> None:
        self.model = model
        self.tools = dict(tools or {})
        self.config = config or LoopConfig()

    async def run(self, ctx: Context, task: str, *, threads: Mapping[str, str] | None = None) -> LoopOutcome:
        """Drive the model through ``task`` until it says ``done`` or ``respond``.

        ``threads`` maps agent names to threads of earlier delegations that
        ``thread_mode: reuse`` continues when the model names none.

        Raises:
            LoopFailed: no ``done`` or ``respond`` within the limits.
            A2AError: the model itself failed (anything but an A2AError as AGENT_ERROR).
        """
        return await _Run(self, ctx, threads).drive(task)


class _Run:
    """The state of one task: the messages, the steps done, the threads opened."""

    def __init__(self, loop: AgentLoop, ctx: Context, threads: Mapping[str, str] | None) -> None:
        self.loop = loop
        self.config = loop.config
        self.ctx = ctx
        self.threads = dict(threads or {})
        self.steps: list[Step] = []
        self.messages: list[Message] = []
        self.turn = 0

    async def drive(self, task: str) -> LoopOutcome:
        config = self.config
        system = config.system or instructions(self.ctx.agent, sorted(self.loop.tools))
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": task}]
        invalid = 0
        last_error = ""
        while self.turn < config.max_turns:
            self.turn += 1
            reply = await self._ask()
            self.messages.append({"role": "assistant", "content": reply})
            try:
                action = decode_action(reply)
            except ActionError as exc:
                invalid += 1
                last_error = str(exc)
                if invalid >= config.max_invalid:
                    raise self._failed("invalid_replies", last_error) from None
                note = ErrorNote(code="INVALID_ACTION", message=last_error[:500])
                self._observe(Observation(observation="invalid", ok=False, error=note))
                continue
            invalid = 0
            match action:
                case Done():
                    unresolved = self.unresolved()
                    if not unresolved:
                        result = action.result if action.result is not None else action.message
                        return LoopOutcome(status="done", result=result, turns=self.turn, steps=self.steps)
                    names = ", ".join(f"{s.name} ({s.error_code})" for s in unresolved)
                    last_error = f"done refused: {names} failed and has not succeeded since"
                    note = ErrorNote(code="UNRESOLVED_FAILURE", message=last_error)
                    self._observe(Observation(observation="done", ok=False, error=note))
                case Respond():
                    return LoopOutcome(
                        status="respond",
                        text=action.text,
                        turns=self.turn,
                        steps=self.steps,
                        unresolved=self.unresolved(),
                    )
                case ToolCall():
                    observation = await self._tool(action)
                    if observation.error is not None:
                        last_error = observation.error.message
                    self._observe(observation)
                case CallAgent():
                    observation = await self._call(action)
                    if observation.error is not None:
                        last_error = observation.error.message
                    self._observe(observation)
        raise self._failed("max_turns", last_error)

    def unresolved(self) -> list[Step]:
        """Failed steps with no later success of the same action and name."""
        latest: dict[tuple[str, str], Step] = {}
        for step in self.steps:
            latest[(step.action, step.name)] = step
        return [s for s in latest.values() if not s.ok]

    async def _ask(self) -> str:
        try:
            reply = await self.loop.model(list(self.messages))
        except A2AError:
            raise
        except Exception as exc:
            raise AgentError(
                f"the model of {self.ctx.agent} failed: {type(exc).__name__}", agent=self.ctx.agent
            ) from exc
        if not isinstance(reply, str):
            raise AgentError(f"the model of {self.ctx.agent} answered no text", agent=self.ctx.agent)
        return reply

    def _observe(self, observation: Observation) -> None:
        observation.turns_left = self.config.max_turns - self.turn
        self.messages.append({"role": "user", "content": encode_observation(observation)})

    def _failed(self, reason: str, last_error: str) -> LoopFailed:
        what = "turns" if reason == "max_turns" else "invalid replies in a row"
        limit = self.config.max_turns if reason == "max_turns" else self.config.max_invalid
        return LoopFailed(
            f"{self.ctx.agent}'s model gave no usable end within {limit} {what}",
            agent=self.ctx.agent,
            hop=self.ctx.hop,
            details={"reason": reason, "turns": self.turn, "lastError": last_error},
        )

    async def _record(self, step: Step, observation: Observation) -> Observation:
        self.steps.append(step)
        await self.ctx.progress({"step": msgspec.to_builtins(step)})
        return observation

    async def _failure(
        self, kind: Kind, name: str, note: ErrorNote, result: Any = None, thread_id: str | None = None
    ) -> Observation:
        step = Step(action=kind, name=name, ok=False, error_code=note.code, thread_id=thread_id)
        observation = Observation(
            observation=kind, ok=False, name=name, result=result, thread_id=thread_id, error=note
        )
        return await self._record(step, observation)

    async def _success(self, kind: Kind, name: str, result: Any, thread_id: str | None = None) -> Observation:
        step = Step(action=kind, name=name, ok=True, thread_id=thread_id)
        observation = Observation(observation=kind, ok=True, name=name, result=result, thread_id=thread_id)
        return await self._record(step, observation)

    async def _tool(self, action: ToolCall) -> Observation:
        name = action.tool
        tool = self.loop.tools.get(name)
        if tool is None:
            given = ", ".join(sorted(self.loop.tools)) or "none"
            note = ErrorNote(code="UNKNOWN_TOOL", message=f"no tool {name!r}; the tools are: {given}")
            return await self._failure("tool_call", name, note)
        try:
            self.ctx.authorize_tool(name)
            result = await tool(self.ctx, action.args)
        except Exception as exc:
            return await self._failure("tool_call", name, self._error(exc))
        return await self._success("tool_call", name, result)

    async def _call(self, action: CallAgent) -> Observation:
        target, task = action.peer, action.instruction
        thread_id = action.thread_id
        if not target or not task:  # a malformed action: no call was made, so no step
            note = ErrorNote(code="INVALID_PARAMS", message="call_agent needs a target and a task")
            return Observation(observation="call_agent", ok=False, error=note)
        problem = None
        if action.thread_mode == "reuse" and thread_id is None:
            thread_id = self.threads.get(target)
            if thread_id is None:
                problem = f"no earlier thread with {target} to reuse: say thread_mode 'new' or give thread_id"
        if problem is not None:
            return await self._failure(
                "call_agent", target, ErrorNote(code="INVALID_PARAMS", message=problem)
            )
        config = self.config
        try:
            response = await self.ctx.delegate(
                target,
                task,
                objective=action.objective,
                expected_outcome=action.expected_outcome,
                input=action.context,
                context=config.conversation,
                thread_mode=action.thread_mode,
                thread_id=thread_id,
                allowed_tools=config.allowed_tools,
                allow_nested_calls=config.allow_nested_calls,
                timeout=config.call_timeout,
            )
        except Exception as exc:
            return await self._failure("call_agent", target, self._error(exc))
        thread = response.child_session_id
        if thread is not None:
            self.threads[target] = thread
        body: dict[str, Any] = {
            "status": response.status,
            "summary": response.summary,
            "result": response.result,
        }
        if response.artifacts:
            body["artifacts"] = [msgspec.to_builtins(a) for a in response.artifacts]
        if response.status == "failed":  # answered, but the callee reports its task failed
            note = ErrorNote(
                code=response.error_code or "AGENT_ERROR", message=response.error or response.summary
            )
            return await self._failure("call_agent", target, note, body, thread)
        return await self._success("call_agent", target, body, thread)

    def _error(self, exc: Exception) -> ErrorNote:
        redact = self.ctx.services.redactor.redact
        if isinstance(exc, A2AError):
            return ErrorNote(code=exc.code, message=redact(exc.message))
        # A tool's own exception: its type and message, never a traceback.
        return ErrorNote(code="AGENT_ERROR", message=redact(f"{type(exc).__name__}: {exc}")[:500])
