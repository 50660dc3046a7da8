"""CrewAI crews as bus agents, and bus tools as CrewAI tools.

::

    def make_crew() -> Crew:                          # a fresh crew per call
        writer = Agent(role="writer", goal=..., backstory=..., llm="openai/gpt-5.2",
                       tools=crewai_tools([agent_tool(["reviewer"])]))
        task = Task(description="Write about {text}", expected_output=..., agent=writer)
        return Crew(agents=[writer], tasks=[task])

    agent = from_crewai(make_crew, name="writer", capabilities=["text.write"])

What maps to what:

    bus call {"text": ...}        await crew.akickoff(inputs={"text": ...}) (or inputs_of(text, ctx));
                                  task and agent texts interpolate {text}
    CrewOutput                    the result: the last task's JSON (output_json / output_pydantic)
                                  when it has one, else its raw text
    each model call's usage       ctx.report_usage(...) as soon as CrewAI publishes the call's
                                  LLMCallCompletedEvent (its providers fill ``usage``), so child
                                  calls see what is left; the first overspend stops the crew at
                                  its next step: BUDGET_EXCEEDED. (Not CrewOutput.token_usage:
                                  it sums lifetime counters of the LLM objects, which copies of
                                  a crew, and agents of one crew, may share.)
    model answers, tool results   ctx.progress({"framework", "step": "model" | "tool", "agent",
                                  "tool"?, "text" (1 KiB at most)}), from run-scoped CrewAI hooks
                                  (POST_MODEL_CALL, POST_TOOL_CALL); a crew's ``stream`` is off
    ctx.remaining()               each agent's max_execution_time, whole seconds rounded up
                                  (its TimeoutError becomes DEADLINE_EXCEEDED)
    withdraw, deadline, shutdown  see below
    Task(human_input=True)        INPUT_REQUIRED, details["interrupts"]: the task and its draft
                                  answer (the run cannot be resumed: CrewAI keeps its state nowhere)
    bus limit error in a tool     that same typed error (see :func:`crewai_tools`)

A Crew holds the state of its run. Pass a factory (``() -> Crew``) for a fresh crew per call,
served concurrently; pass a crew and it is copied once (it must not have run: CrewAI would
have interpolated an earlier input into it) and each call runs a copy of that copy
(``Crew.copy()``, as CrewAI's ``kickoff_for_each`` does), one call at a time by default: the
copies share their agents' tool objects.

CrewAI runs on the handler's loop, but each step of an agent (a model call, its tool calls)
runs synchronously in a worker thread (``asyncio.to_thread``, so the loop's default executor),
with the context variables copied: bus tools there find the handler and make its child calls
on its loop (:func:`run_in_handler`, in :mod:`a2a.adapters.crewai_run`). A thread cannot be
killed; when the handler is cancelled:

- the crew's coroutines stop at once (``akickoff`` is cancelled where it awaits the step's
  thread), so no further step starts;
- every coroutine a tool started with :func:`run_in_handler` (every bus call) is cancelled, and
  the handler waits up to a second for them to unwind; the tool waiting on it raises CANCELLED;
- in the step's thread, each further tool call of that step is blocked (a PRE_TOOL_CALL hook
  raises CrewAI's ``HookAborted``), and each further bus call is refused;
- what cannot be stopped runs on in that thread until the step ends: a model request in
  flight, a tool of the crew's own that blocks (it may poll :func:`stopped`).

A crew that is not cancelled is stopped by the same hooks (and a PRE_MODEL_CALL one) when a bus
tool ends with a limit error or the budget is overspent: CrewAI turns a tool's exception into
text for the model, so the run keeps the error and the handler raises it once the crew stopped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Unpack

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from crewai import Agent as CrewAgent
from crewai import Crew
from crewai.core.providers.human_input import SyncHumanInputProvider, reset_provider, set_provider
from crewai.crews.crew_output import CrewOutput
from crewai.events.base_events import BaseEvent
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.llm_events import LLMCallCompletedEvent
from crewai.hooks import InterceptionPoint
from crewai.hooks.dispatch import register_scoped, scoped_hooks
from crewai.types.usage_metrics import UsageMetrics

from bus.errors import A2AError, AgentError, DeadlineExceeded, InputRequired

from ..core.agent import Agent
from ..core.context import Context
from . import bridge
from .crewai_run import FLUSH, FRAMEWORK, TEXT, CrewRun, current, role, run_in_handler, stopped
from .crewai_tools import crewai_tools

__all__ = ["crewai_tools", "from_crewai", "run_in_handler", "stopped"]

_UPDATES = 64  # progress updates waiting to be sent; more are dropped

InputsOf = Callable[[str, Context], Mapping[str, Any]]
"""Builds a run's ``inputs`` from the text and the handler's context."""


def from_crewai(
    crew_or_factory: Crew | Callable[[], Crew],
    *,
    name: str,
    inputs_of: InputsOf | None = None,
    progress: bool = True,
    **identity: Unpack[bridge.Identity],
) -> Agent:
    """A bus agent whose ``action`` kicks off a CrewAI crew on ``params["text"]``.

    Args:
        crew_or_factory: a ``Crew``, or a function returning a fresh one per call.
        name: the bus agent's name.
        inputs_of: the crew's ``inputs`` for a call (default ``{"text": text}``).
        progress: send each model answer and tool result as a progress update.
        **identity: the bus agent's ``capabilities``, ``description``, ``action`` (its
            ``defaultAction``, "run"), ``max_concurrency``, ``metadata`` and
            ``estimated_tokens`` (:class:`a2a.adapters.bridge.Identity`); ``max_concurrency``
            defaults to 1 for a crew, 8 for a factory.

    Raises:
        TypeError: ``crew_or_factory`` is neither a Crew nor callable.
    """
    if isinstance(crew_or_factory, Crew):
        make: Callable[[], Crew] = crew_or_factory.copy().copy
        concurrency = 1
    elif callable(crew_or_factory):
        make, concurrency = crew_or_factory, 8
    else:
        raise TypeError(f"from_crewai() needs a Crew or a crew factory, not {type(crew_or_factory).__name__}")
    runner = _Runner(make, inputs_of, progress)
    spec = bridge.AgentSpec(name, FRAMEWORK, f"Kick off the CrewAI crew {name} on a text.", **identity)
    return bridge.framework_agent(spec, runner.handle, default_concurrency=concurrency)


class _Runner:
    def __init__(self, make: Callable[[], Crew], inputs_of: InputsOf | None, progress: bool) -> None:
        self.make = make
        self.inputs_of = inputs_of
        self.progress = progress

    async def handle(self, ctx: Context, params: dict[str, Any]) -> Any:
        text = bridge.input_text(ctx, params, "text")
        inputs = dict(self.inputs_of(text, ctx)) if self.inputs_of is not None else {"text": text}
        remaining = ctx.remaining()
        if remaining <= 0:
            raise DeadlineExceeded(f"{ctx.agent} has no time left to kick off its crew")
        crew = self._crew(remaining)
        crewai_event_bus.register_handler(LLMCallCompletedEvent, _on_model_call)  # idempotent
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](_UPDATES)
        run = CrewRun(ctx, send if self.progress else None)
        outcome: Any
        async with anyio.create_task_group() as tg:
            tg.start_soon(_forward, ctx, receive)
            try:
                try:
                    with bridge.running(ctx), _scoped(run):
                        outcome = await crew.akickoff(inputs=inputs)
                except Exception as exc:  # the crew's failure; a cancellation goes through
                    outcome = exc
                # The usage of the last model calls may still be in CrewAI's event handlers.
                await anyio.to_thread.run_sync(crewai_event_bus.flush, FLUSH)
            finally:
                await run.close()
                send.close()  # the updates sent so far go out before the result
        if isinstance(outcome, Exception):
            raise _failure(outcome, run) from outcome
        if run.reason is not None:
            raise run.reason
        if not isinstance(outcome, CrewOutput):
            raise AgentError(f"the crew returned {type(outcome).__name__}, not a CrewOutput")
        return _result(outcome)

    def _crew(self, remaining: float) -> Crew:
        try:
            crew = self.make()
        except Exception as exc:
            raise bridge.framework_error(exc, FRAMEWORK) from exc
        if not isinstance(crew, Crew):
            raise AgentError(f"the crew factory returned {type(crew).__name__}, not a Crew")
        crew.stream = False  # its steps go out as progress updates instead
        seconds = max(1, math.ceil(remaining))
        for member in [*crew.agents, crew.manager_agent]:
            if isinstance(member, CrewAgent):
                own = member.max_execution_time
                member.max_execution_time = seconds if own is None else min(own, seconds)
        return crew


@contextmanager
def _scoped(run: CrewRun) -> Iterator[None]:
    """Make the crew's hooks, human-input requests and model-call events in this context reach ``run``."""
    token = current.set(run)
    provider = set_provider(_NoHumans(run))
    try:
        with scoped_hooks():
            register_scoped(InterceptionPoint.PRE_MODEL_CALL, run.check)
            register_scoped(InterceptionPoint.PRE_TOOL_CALL, run.before_tool)
            register_scoped(InterceptionPoint.POST_MODEL_CALL, run.after_model)
            register_scoped(InterceptionPoint.POST_TOOL_CALL, run.after_tool)
            yield
    finally:
        reset_provider(provider)
        current.reset(token)


class _NoHumans(SyncHumanInputProvider):
    """Human feedback a task asks for (``human_input=True``) ends the call as INPUT_REQUIRED."""

    def __init__(self, run: CrewRun) -> None:
        super().__init__()
        self.run = run

    def handle_feedback(self, formatted_answer: Any, context: Any) -> Any:
        task = getattr(context, "task", None)
        interrupt = {
            "kind": "human_input",
            "task": getattr(task, "name", None) or bridge.clip(str(getattr(task, "description", "")), 200),
            "agent": role(getattr(context, "agent", None)),
            "answer": bridge.clip(str(getattr(formatted_answer, "output", "")), TEXT),
        }
        self.run.halt(
            InputRequired(
                "a task of the crew asks for human feedback on its answer",
                details={"framework": FRAMEWORK, "interrupts": [interrupt]},
            )
        )
        self.run.check()
        return formatted_answer

    async def handle_feedback_async(self, formatted_answer: Any, context: Any) -> Any:
        return self.handle_feedback(formatted_answer, context)


def _on_model_call(source: Any, event: BaseEvent) -> None:
    """CrewAI runs this in a thread of its own, with the context of the thread that made the call."""
    run = current.get()
    if run is not None and isinstance(event, LLMCallCompletedEvent):
        usage = UsageMetrics.from_provider_dict(event.usage)
        if usage is not None:
            run.count(usage.prompt_tokens, usage.completion_tokens)


async def _forward(ctx: Context, updates: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
    async with updates:
        async for update in updates:
            await ctx.progress(update)


def _failure(exc: Exception, run: CrewRun) -> A2AError:
    """What a failed kickoff ends the call with: the run's reason, a bus error the crew wrapped,
    DEADLINE_EXCEEDED for an agent's ``max_execution_time``, else AGENT_ERROR."""
    if run.reason is not None:
        return run.reason
    if isinstance(exc, TimeoutError) and not isinstance(exc, A2AError):
        return DeadlineExceeded(f"the crew did not finish before the deadline: {exc}")
    return bridge.framework_error(exc, FRAMEWORK)


def _result(output: CrewOutput) -> Any:
    if output.json_dict:
        return json.loads(json.dumps(output.json_dict, default=str))
    if output.pydantic is not None:
        return output.pydantic.model_dump(mode="json")
    return output.raw
