"""A pydantic-ai agent as a bus agent, and bus tools as pydantic-ai tools.

::

    from pydantic_ai import Agent as PydanticAgent
    from a2a.adapters import agent_tool
    from a2a.adapters.pydantic_ai import from_pydantic_ai, pydantic_ai_tools

    helper = PydanticAgent("openai:gpt-5.2", tools=pydantic_ai_tools([agent_tool(["reviewer"])]))
    agent = from_pydantic_ai(helper, name="helper", capabilities=["text.write"])

How the run maps onto the bus handler it runs in:

- **Input and result.** ``{"text": ...}`` (or a delegation's task) is the user prompt; the
  output comes back as it is when it is a string, else as JSON (``model_dump(mode="json")``
  for a pydantic model).
- **Tokens.** pydantic-ai gets ``UsageLimits(total_tokens_limit=ctx.budget_left)`` and
  stops itself at the call's budget (``UsageLimitExceeded``, any of its limits, becomes
  BUDGET_EXCEEDED). Its usage is reported with ``ctx.report_usage`` after every step, so a
  bus tool's child call sees what is really left; a run that fails still reports what it used.
- **Deadline and cancellation.** When the host cancels the handler (the caller withdrew,
  the deadline passed, the instance stops) the ``CancelledError`` goes through pydantic-ai's
  own teardown: the model request in flight and every running tool task are cancelled, and
  the cancellation propagates. The run also gets ``timeout=ctx.remaining()``, a backstop
  the host's cancellation at the deadline normally beats (``RunTimedOut`` would become
  DEADLINE_EXCEEDED). ``RunContext.cancel()`` inside a tool ends the call as CANCELLED.
- **Steps.** Each model response (its text and tool calls) and each batch of tool results
  goes to ``ctx.progress`` as a small JSON update.
- **Bus errors.** pydantic-ai lets a tool's exception through unchanged, so a typed bus
  error from a bus tool (CYCLE_DETECTED, ...) reaches the caller as itself.
- **The agent's own tools.** Every function tool that is not a bus tool is checked as it is
  about to run (a run-scoped capability's ``before_tool_execute``: ``ctx.authorize_tool``),
  so the roster's ``tools`` and the caller's ``allowed_tools`` hold and the call reports the
  tools it used; a refused tool ends the call with PERMISSION_DENIED before it runs.
- **Deferred tools.** A run whose output is ``DeferredToolRequests`` (a tool needing approval
  or an external result) ends as INPUT_REQUIRED, the pending calls in ``details["interrupts"]``.
  It cannot be resumed through the bus: the run's state is its message history, which this
  adapter keeps nowhere.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Unpack

from pydantic import BaseModel
from pydantic_ai import DeferredToolRequests, Tool, ToolFailed
from pydantic_ai.agent import AbstractAgent, CallToolsNode, ModelRequestNode
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import RunCancelled, RunTimedOut, UsageLimitExceeded
from pydantic_ai.messages import RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_core import to_jsonable_python

from bus.errors import (
    A2AError,
    AgentError,
    BudgetExceeded,
    Cancelled,
    DeadlineExceeded,
    InputRequired,
)

from ..core.agent import Agent
from ..core.context import Context
from . import bridge
from .tools import BusTool

__all__ = ["from_pydantic_ai", "pydantic_ai_tools"]

FRAMEWORK = "pydantic-ai"

_TEXT = 1024  # characters of model text in one progress update
_ITEM = 256  # characters of one tool call's arguments or result in it
_ITEMS = 8  # tool calls or results listed in it

DepsFactory = Callable[[Context], Any]
"""Builds a run's pydantic-ai ``deps`` from the handler's context (may return an awaitable)."""


def from_pydantic_ai(
    agent: AbstractAgent[Any, Any],
    *,
    name: str,
    deps: Any = None,
    deps_of: DepsFactory | None = None,
    usage_limits: UsageLimits | None = None,
    progress: bool = True,
    **identity: Unpack[bridge.Identity],
) -> Agent:
    """A bus agent whose ``action`` runs the pydantic-ai ``agent`` on ``params["text"]``.

    Args:
        agent: the pydantic-ai agent (an ``Agent`` or any ``AbstractAgent``), with its model set.
        name: the bus agent's name.
        deps: the ``deps`` every run gets; or ``deps_of(ctx)`` builds them per call.
        usage_limits: pydantic-ai's limits (default: its own, 50 requests); its
            ``total_tokens_limit`` is lowered to the call's token budget.
        progress: send each model response and tool result as a progress update.
        **identity: the bus agent's ``capabilities``, ``description``, ``action`` (its
            ``defaultAction``, "run"), ``max_concurrency``, ``metadata`` and
            ``estimated_tokens`` (:class:`a2a.adapters.bridge.Identity`); ``max_concurrency``
            defaults to 32.

    Raises:
        ValueError: both ``deps`` and ``deps_of`` are given.
    """
    if deps is not None and deps_of is not None:
        raise ValueError("give deps or deps_of, not both")
    runner = _Runner(agent, deps, deps_of, usage_limits or UsageLimits(), progress)
    summary = f"Run the pydantic-ai agent {agent.name or name} on a prompt."
    return bridge.framework_agent(bridge.AgentSpec(name, FRAMEWORK, summary, **identity), runner.handle)


def pydantic_ai_tools(tools: Sequence[BusTool]) -> list[Tool[Any]]:
    """pydantic-ai tools that make the bus calls of ``tools``, each with its JSON schema as given.

    pydantic-ai does not validate the arguments against the schema; the callee does
    (INVALID_PARAMS). The model reads a call's result as text (a JSON result as JSON).
    A bus error that ends the call comes out of the run as itself when it is a limit,
    deadline, cancellation or permission error; any other (AGENT_ERROR, NO_RESPONDERS,
    INVALID_PARAMS, INPUT_REQUIRED, ...) is a failed tool result ``"error: CODE from AGENT: message"``
    (``ToolFailed``: the model sees it and may try otherwise, without spending the tool's
    retries as ``ModelRetry`` would; the run's request limit bounds repeated failures).
    pydantic-ai runs the tool calls of one model response at once; under a token budget
    they share what the handler has left.
    """
    return [_native(tool) for tool in tools]


def _native(tool: BusTool) -> Tool[Any]:
    async def call(**arguments: Any) -> str:
        try:
            return await tool.run_text(arguments)
        except bridge.PROPAGATED:
            raise
        except A2AError as exc:
            raise ToolFailed(bridge.tool_error_text(exc)) from exc

    native: Tool[Any] = Tool.from_schema(
        call,
        name=tool.name,
        description=tool.description,
        json_schema=dict(tool.input_schema),
    )
    native.metadata = {**(native.metadata or {}), _BUS_TOOL: True}
    return native


_BUS_TOOL = "a2a_bus_tool"


@dataclass
class _ToolGuard(AbstractCapability[Any]):
    """Checks each of the agent's own function tools before it runs; bus tools are bus calls
    and pass (see the module's docstring)."""

    ctx: Context

    async def before_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: dict[str, Any],
    ) -> dict[str, Any]:
        if tool_def.kind == "function" and not (tool_def.metadata or {}).get(_BUS_TOOL):
            self.ctx.authorize_tool(tool_def.name)
        return args


@dataclass
class _Meter:
    """pydantic-ai's usage of one run, reported to the handler as it grows."""

    ctx: Context
    usage: RunUsage = field(default_factory=RunUsage)
    prompt: int = 0
    completion: int = 0

    def report(self) -> None:
        """Report the tokens used since the last report (raises BudgetExceeded when overspent)."""
        prompt, completion = self.usage.input_tokens, self.usage.output_tokens
        if prompt != self.prompt or completion != self.completion:
            delta = (prompt - self.prompt, completion - self.completion)
            self.prompt, self.completion = prompt, completion
            self.ctx.report_usage(prompt=delta[0], completion=delta[1])


@dataclass(frozen=True)
class _Runner:
    agent: AbstractAgent[Any, Any]
    deps: Any
    deps_of: DepsFactory | None
    limits: UsageLimits
    progress: bool

    async def handle(self, ctx: Context, params: dict[str, Any]) -> Any:
        prompt = bridge.input_text(ctx, params, "text")
        meter = _Meter(ctx)
        try:
            output = await self._run(ctx, prompt, meter)
        except BaseException:
            # The tokens count even when the run fails or is cancelled; the run's own
            # error (or cancellation) is what the caller sees, not a budget overrun.
            with contextlib.suppress(BudgetExceeded):
                meter.report()
            raise
        meter.report()
        return _result(output)

    async def _run(self, ctx: Context, prompt: str, meter: _Meter) -> Any:
        remaining = ctx.remaining()
        if remaining <= 0:
            raise DeadlineExceeded(f"{ctx.agent} has no time left to run its pydantic-ai agent")
        deps = await self._deps(ctx)
        try:
            with bridge.running(ctx):
                async with self.agent.iter(
                    prompt,
                    deps=deps,
                    usage=meter.usage,
                    usage_limits=self._limits(ctx.budget_left),
                    timeout=remaining,
                    conversation_id=ctx.conversation_id,
                    capabilities=[_ToolGuard(ctx)],
                ) as run:
                    async for node in run:
                        meter.report()
                        update = _step(node) if self.progress else None
                        if update is not None:
                            await ctx.progress(update)
                    result = run.result
        except A2AError:
            raise
        except UsageLimitExceeded as exc:
            raise BudgetExceeded(
                f"pydantic-ai stopped at its usage limit: {exc.message}",
                details={
                    "used": meter.usage.total_tokens,
                    "budget": ctx.request.metadata.budget,
                    "requests": meter.usage.requests,
                },
            ) from exc
        except RunTimedOut as exc:
            raise DeadlineExceeded(f"the pydantic-ai run did not finish before the deadline: {exc}") from exc
        except RunCancelled as exc:
            raise Cancelled(f"the pydantic-ai run was cancelled: {exc}") from exc
        except Exception as exc:
            raise bridge.framework_error(exc, FRAMEWORK) from exc
        if result is None:
            raise AgentError("the pydantic-ai run ended without a result")
        return result.output

    async def _deps(self, ctx: Context) -> Any:
        if self.deps_of is None:
            return self.deps
        deps = self.deps_of(ctx)
        return await deps if inspect.isawaitable(deps) else deps

    def _limits(self, budget_left: int | None) -> UsageLimits:
        if budget_left is None:
            return self.limits
        own = self.limits.total_tokens_limit
        return replace(self.limits, total_tokens_limit=budget_left if own is None else min(own, budget_left))


def _result(output: Any) -> Any:
    """The run's output as a JSON-serialisable result (or INPUT_REQUIRED for deferred tool calls)."""
    if isinstance(output, str):
        return output
    if isinstance(output, DeferredToolRequests):
        raise InputRequired(
            "the pydantic-ai agent stopped for tool calls that need approval or an external result",
            details={"framework": FRAMEWORK, "interrupts": _interrupts(output)},
        )
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    return to_jsonable_python(output)


def _interrupts(requests: DeferredToolRequests) -> list[dict[str, Any]]:
    return [
        {
            "id": call.tool_call_id,
            "tool": call.tool_name,
            "kind": requests.kind(call.tool_call_id),
            "args": call.args_as_dict(),
        }
        for call in [*requests.approvals, *requests.calls]
    ]


def _step(node: object) -> dict[str, Any] | None:
    """A progress update for one step of the run: a model response, or the tool results it got."""
    if isinstance(node, CallToolsNode):
        response = node.model_response
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        update: dict[str, Any] = {"framework": FRAMEWORK, "step": "model"}
        if text:
            update["text"] = _clip(text, _TEXT)
        if calls:
            update["toolCalls"] = [
                {"tool": c.tool_name, "args": _clip(c.args_as_json_str(), _ITEM)} for c in calls[:_ITEMS]
            ]
        return update
    if isinstance(node, ModelRequestNode):
        results: list[dict[str, Any]] = []
        for part in node.request.parts:
            if isinstance(part, ToolReturnPart):
                text = _clip(part.model_response_str(wrap_if_error=False), _ITEM)
                results.append({"tool": part.tool_name, "outcome": part.outcome, "text": text})
            elif isinstance(part, RetryPromptPart):
                results.append(
                    {"tool": part.tool_name, "outcome": "retry", "text": _clip(part.model_response(), _ITEM)}
                )
        if results:
            return {"framework": FRAMEWORK, "step": "tools", "results": results[:_ITEMS]}
    return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
