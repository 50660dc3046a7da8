"""AutoGen AgentChat agents and teams as bus agents, and bus tools as AutoGen tools.

::

    def make_team() -> RoundRobinGroupChat:          # a fresh team per call
        return RoundRobinGroupChat([writer(), critic()], max_turns=4)

    agent = from_autogen(make_team, name="writers", capabilities=["text.write"])

What maps to what:

    bus call {"text": ...}        run_stream(task=[...history, TextMessage(source="user")])
    each message or event         ctx.progress({"type", "source", "text" (4 KiB at most), "usage"?})
                                  (token chunks of a streaming model client are not forwarded)
    models_usage of each message  ctx.report_usage(...), as the messages stream in: the first one
                                  that overspends the call's budget stops the run: BUDGET_EXCEEDED
    TaskResult                    the result: the last chat message's text (a StructuredMessage:
                                  its content as a dict); its stop_reason goes out as a last
                                  progress update {"type": "stop", "reason": ...}
    withdraw, deadline, shutdown  the run's CancellationToken is cancelled (AutoGen cancels the
                                  model calls and tool calls linked to it), then the run's task;
                                  the handler waits up to 5 s for the run to unwind
    handoff to "user" (Swarm,     INPUT_REQUIRED; its details carry the question ("interrupts")
    HandoffTermination), or a     and the conversation so far ("resume": {"history", "handoff"}):
    UserInputRequestedEvent       call again with those parameters plus "text": the answer
    bus limit error in a tool     that same typed error (see :func:`autogen_tools`)
    ToolCallRequestEvent          each of the agents' own tools (not bus tools, not handoffs
                                  ``transfer_to_*``) is checked with ctx.authorize_tool and
                                  recorded among the call's tools; a refused one ends the call
                                  PERMISSION_DENIED. One agent's run waits while its event is
                                  read, so the tool has not started; in a team the event comes
                                  through the team's queue and the tool may have started when
                                  the run is stopped

One AgentChat object holds one conversation and runs one task at a time. Pass a factory
(``() -> agent or team``) to get a fresh object per call, served concurrently; pass the
object itself and its calls run one after another (also while one of its tools waits on
another agent, when the host would lend the slot), reset before each call unless
``reset=False``, which keeps one conversation shared by every caller.

What does not map, and why:

- AutoGen takes no deadline of its own: the host's cancellation at the deadline stops the
  run, as above.
- A budget is enforced as the usage streams in rather than by adding a
  ``TokenUsageTermination`` to the caller's team: that condition also acts only after a
  message, and ends the run as a normal stop rather than with BUDGET_EXCEEDED.
- A tool that ignores cancellation (a blocking function in a thread; the default
  ``input()`` of a UserProxyAgent: give it an async ``input_func`` that honours the
  token) keeps running after the call ended.
- A tool of your own whose task ends cancelled leaves an AssistantAgent inside a team
  waiting forever (its tool loop never hears back), so the team's runtime never goes
  idle: the handler gives up after 5 s, and a shared object is out of service from then
  on. Bus tools from :func:`autogen_tools` end with a result instead; do the same.
- A team on a runtime of its own (``runtime=``, started outside the handler) runs its
  agents outside the handler, so bus tools there find no caller.
- Tokens a team spends outside messages (a SelectorGroupChat's speaker selection) are
  not reported.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias, Unpack, cast

from autogen_agentchat.base import ChatAgent, TaskResult, Team
from autogen_agentchat.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    HandoffMessage,
    ModelClientStreamingChunkEvent,
    StructuredMessage,
    TextMessage,
    ToolCallRequestEvent,
    UserInputRequestedEvent,
)
from autogen_core import CancellationToken
from pydantic import BaseModel

from bus.errors import A2AError, AgentError, InputRequired

from ..core.agent import Agent
from ..core.context import Context
from . import bridge
from .autogen_tools import AutogenBusTool as AutogenBusTool
from .autogen_tools import BusToolError as BusToolError
from .autogen_tools import autogen_tools as autogen_tools
from .autogen_tools import current_run

__all__ = ["AutogenBusTool", "BusToolError", "Runner", "autogen_tools", "from_autogen"]

_HANDOFF = "transfer_to_"
"""How AgentChat names a handoff's tool (``transfer_to_<target>``): a handoff, not a tool."""

log = logging.getLogger(__name__)

Runner: TypeAlias = ChatAgent | Team
Item: TypeAlias = BaseAgentEvent | BaseChatMessage | TaskResult

HISTORY = 32
"""The most chat messages an interrupt hands back for the resume."""
STOP_GRACE = 5.0
"""Seconds a stopped run gets to unwind (its tools cancelled, a team's runtime idle)."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "description": "The task, or the answer to a question."},
        "history": {
            "type": "array",
            "maxItems": 256,
            "description": "The conversation so far (an INPUT_REQUIRED's details.resume.history).",
            "items": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "text": {"type": "string"}},
                "required": ["source", "text"],
            },
        },
        "handoff": {"type": "string", "minLength": 1, "description": "The agent that asked the user."},
    },
}
"""``text`` is checked by the handler (a delegation brings its task instead)."""


@dataclass
class _Run:
    """One call's run: its token, the bus error a tool hit, what it said so far."""

    token: CancellationToken
    history: list[dict[str, str]]
    said: list[BaseChatMessage] = field(default_factory=list)
    error: A2AError | None = None
    failed: asyncio.Event = field(default_factory=asyncio.Event)
    stuck: bool = False
    """The run did not unwind within :data:`STOP_GRACE` of being stopped."""

    def fail(self, exc: A2AError) -> None:
        """Record a tool's bus error and stop the run: the handler raises it."""
        if self.error is None:
            self.error = exc
        self.token.cancel()
        self.failed.set()


def from_autogen(
    runner: Runner | Callable[[], Runner],
    *,
    name: str,
    reset: bool = True,
    user: str = "user",
    **identity: Unpack[bridge.Identity],
) -> Agent:
    """An AgentChat agent or team (or a factory of them) as a bus agent.

    Args:
        runner: a ``ChatAgent`` or ``Team``, or a function returning a fresh one per call
            (recommended: calls then run concurrently, each in a conversation of its own).
        name: the bus agent's name.
        reset: reset a shared object before each call (``on_reset`` / ``Team.reset``).
        user: the handoff target that means the caller (AgentChat's convention: "user").
        **identity: the bus agent's ``capabilities``, ``description``, ``action`` (its
            ``defaultAction``, "run"; its parameters are ``{"text": ...}`` plus the optional
            ``history`` and ``handoff`` an INPUT_REQUIRED hands back), ``max_concurrency``,
            ``metadata`` and ``estimated_tokens`` (:class:`a2a.adapters.bridge.Identity`);
            ``max_concurrency`` is calls at once per instance for a factory (default 32);
            an object serves one call at a time, so anything but 1 is refused for it.

    Raises:
        TypeError: ``runner`` is neither an AgentChat object nor callable.
        ValueError: ``max_concurrency`` above 1 for a single object.
    """
    concurrency = 32
    if isinstance(runner, ChatAgent | Team):
        if identity.get("max_concurrency") not in (None, 1):
            raise ValueError("one AutoGen agent or team runs one task at a time: pass a factory instead")
        concurrency = 1
    elif not callable(runner):
        raise TypeError(f"from_autogen() takes an AgentChat agent or team or a factory, not {runner!r}")
    source = _Source(runner, reset)

    async def run(ctx: Context, params: dict[str, Any]) -> Any:
        text = bridge.input_text(ctx, params, "text")
        history = [{"source": str(h["source"]), "text": str(h["text"])} for h in params.get("history") or ()]
        task = _task(text, params.get("handoff"), history, user)
        run = _Run(CancellationToken(), [*history, {"source": user, "text": bridge.clip(text)}])
        async with source.use(run) as obj:
            return await _run(ctx, obj, task, run, user)

    spec = bridge.AgentSpec(name, "autogen", f"Run the AutoGen {name}.", INPUT_SCHEMA, **identity)
    return bridge.framework_agent(spec, run, default_concurrency=concurrency)


class _Source:
    """Where each call's AgentChat object comes from: the factory, or the one shared object
    (one call at a time, reset first; out of service once a run of it would not stop)."""

    def __init__(self, runner: Runner | Callable[[], Runner], reset: bool) -> None:
        self.runner = runner
        self.reset = reset
        self.lock = asyncio.Lock()
        self.broken = False

    @asynccontextmanager
    async def use(self, run: _Run) -> AsyncIterator[Runner]:
        runner = self.runner
        if not isinstance(runner, ChatAgent | Team):
            obj = runner()
            if not isinstance(obj, ChatAgent | Team):
                raise TypeError(f"the factory returned {type(obj).__name__}, not an AgentChat agent or team")
            yield obj
            return
        async with self.lock:
            if self.broken:
                raise AgentError(f"{runner.name} did not stop after a cancelled run; restart this instance")
            if self.reset:
                await (runner.reset() if isinstance(runner, Team) else runner.on_reset(CancellationToken()))
            try:
                yield runner
            finally:
                self.broken = run.stuck


def _task(text: str, handoff: Any, history: list[dict[str, str]], user: str) -> list[BaseChatMessage]:
    """The run's task: the conversation so far, then the caller's message (an answer to a
    handoff goes back to the agent that asked, as AgentChat's Swarm expects)."""
    messages: list[BaseChatMessage] = [TextMessage(content=h["text"], source=h["source"]) for h in history]
    if isinstance(handoff, str) and handoff:
        messages.append(HandoffMessage(content=text, source=user, target=handoff))
    else:
        messages.append(TextMessage(content=text, source=user))
    return messages


async def _run(ctx: Context, runner: Runner, task: list[BaseChatMessage], run: _Run, user: str) -> Any:
    """Run ``runner`` on ``task`` in a task of its own, supervised by the handler: the handler's
    cancellation or a tool's bus error cancels the token first, then the run."""
    with bridge.running(ctx):
        bound = current_run.set(run)
        try:
            pump = asyncio.create_task(_pump(ctx, runner, task, run, user), name=f"autogen:{ctx.agent}")
            pump.add_done_callback(_retrieve)
        finally:
            current_run.reset(bound)
    failed = asyncio.ensure_future(run.failed.wait())
    try:
        await asyncio.wait({pump, failed}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _stop(run, pump)
        raise
    finally:
        failed.cancel()
    if not pump.done():
        await _stop(run, pump)
    if run.error is not None:
        raise run.error
    if pump.cancelled():
        raise AgentError("autogen failed: the run was cancelled from inside")
    try:
        return pump.result()
    except Exception as exc:
        raise bridge.framework_error(exc, "autogen") from exc


async def _stop(run: _Run, pump: asyncio.Task[Any]) -> None:
    """Cancel the token (AutoGen stops its linked model and tool calls), then the run, and
    give it :data:`STOP_GRACE` seconds to unwind."""
    run.token.cancel()
    pump.cancel()
    done, _ = await asyncio.wait({pump}, timeout=STOP_GRACE)
    if not done:
        run.stuck = True
        log.warning("%s did not stop within %ss of its cancellation", pump.get_name(), STOP_GRACE)


def _retrieve(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # read by the handler, or superseded by its own outcome


async def _pump(ctx: Context, runner: Runner, task: list[BaseChatMessage], run: _Run, user: str) -> Any:
    """Stream the run: usage and progress per message, the result from the TaskResult."""
    stream = runner.run_stream(task=task, cancellation_token=run.token, output_task_messages=False)
    try:
        async for item in stream:
            if isinstance(item, TaskResult):
                return await _finish(ctx, item, run, user)
            await _observe(ctx, item, run)
            if isinstance(item, UserInputRequestedEvent):
                raise _interrupt(run, "input", item.source, run.said[-1] if run.said else None)
        raise AgentError("autogen failed: the run ended without a TaskResult")
    except BaseException:
        run.token.cancel()
        raise
    finally:
        await _close(stream, run)


async def _close(stream: AsyncGenerator[Item, None], run: _Run) -> None:
    """Close the run's stream; a team then waits for its runtime to go idle, which a
    tool or input function ignoring the token would put off forever."""
    try:
        async with asyncio.timeout(STOP_GRACE):
            await stream.aclose()
    except TimeoutError:
        run.stuck = True
        log.warning("an AutoGen run did not stop within %ss of its end", STOP_GRACE)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
    except Exception as exc:  # the run's own outcome is what the caller gets
        log.debug("closing an AutoGen run: %s", exc)


async def _observe(ctx: Context, item: BaseAgentEvent | BaseChatMessage, run: _Run) -> None:
    if isinstance(item, ModelClientStreamingChunkEvent):
        return
    if isinstance(item, ToolCallRequestEvent):
        for call in item.content:
            if not bridge.is_bus_tool(call.name) and not call.name.startswith(_HANDOFF):
                ctx.authorize_tool(call.name)
    if isinstance(item, BaseChatMessage):
        run.said.append(item)
    usage = item.models_usage
    if usage is not None:
        ctx.report_usage(prompt=usage.prompt_tokens, completion=usage.completion_tokens)
    update: dict[str, Any] = {
        "type": getattr(item, "type", type(item).__name__),
        "source": item.source,
        "text": bridge.clip(item.to_text()),
    }
    if usage is not None:
        update["usage"] = {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}
    await ctx.progress(update)


async def _finish(ctx: Context, result: TaskResult, run: _Run, user: str) -> Any:
    if result.stop_reason:
        await ctx.progress({"type": "stop", "reason": bridge.clip(result.stop_reason)})
    last = next((m for m in reversed(result.messages) if isinstance(m, BaseChatMessage)), None)
    if isinstance(last, HandoffMessage) and last.target == user:
        raise _interrupt(run, "handoff", last.source, last)
    if last is None:
        return ""
    if isinstance(last, StructuredMessage):
        return cast(BaseModel, last.content).model_dump(mode="json")
    return last.to_model_text()


def _interrupt(run: _Run, kind: str, source: str, asked: BaseChatMessage | None) -> InputRequired:
    question = bridge.clip(asked.to_model_text()) if asked is not None else ""
    said = [{"source": m.source, "text": bridge.clip(m.to_model_text())} for m in run.said]
    resume: dict[str, Any] = {"history": [*run.history, *said][-HISTORY:]}
    if kind == "handoff":
        resume["handoff"] = source
    return InputRequired(
        f"{source} asks for input" + (f": {question}" if question else ""),
        details={"interrupts": [{"kind": kind, "agent": source, "text": question}], "resume": resume},
    )
