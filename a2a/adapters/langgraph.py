"""A compiled LangGraph graph as a bus agent, and bus tools as LangChain tools.

::

    graph = builder.compile(checkpointer=saver)
    agent = from_langgraph(graph, name="planner", capabilities=["plan"])
    tools = langchain_tools([agent_tool(["coder", "reviewer"])])   # for the graph's ToolNode

What maps to what:

- **Input and result.** A graph with a ``messages`` channel gets
  ``{"messages": [HumanMessage(text)]}`` and answers with its last AI message's text (or
  its ``structured_response``, when it made one); ``input_of``/``output_of`` replace both.
- **Streaming.** The graph runs with ``astream(stream_mode=["updates", "values"])``; each
  node's update becomes a small progress update for the caller (node, keys written, a
  preview of the last message and the tools it calls); the last values are the final state.
- **Cancellation and deadline.** The host cancels the handler's task when the caller
  withdraws, the deadline passes or the instance stops. LangGraph (1.2) runs a step's
  single node in that task itself and parallel nodes in tasks of its own, which it
  cancels and waits for when the run is left; the stream is closed on the way out, so
  either way the running nodes and the tools they await are cancelled. Bus-tool calls a
  ``ToolNode`` left running beside a failed one are cancelled when the run ends.
  LangGraph has no per-run timeout to pass the deadline to (``step_timeout`` is a
  setting of the whole graph object, shared by concurrent calls), so nothing else is
  passed. A sync node runs in a worker thread that Python cannot stop: it finishes on
  its own after the call has ended.
- **Step limit.** ``recursion_limit`` goes into the run's config; a caller may lower it
  per call (``params["recursion_limit"]``), never raise it. Exhausting it
  (``GraphRecursionError``) ends the call with MAX_HOPS_EXCEEDED,
  ``details={"recursionLimit": n}``: a graph's supersteps are the steps of one agent's
  work as hops are the steps of work across agents, the limit stops the same thing (a
  loop that never ends) and the caller should treat it the same way (not retry unchanged).
- **Token usage.** Every chat-model call's ``usage_metadata`` is reported to the call
  as it ends (see :class:`~a2a.adapters.langgraph_stream.UsageReporter`); an overspent
  budget stops the run with BUDGET_EXCEEDED.
- **Interrupts.** A run that stops at ``interrupt(value)`` ends the call with
  INPUT_REQUIRED, ``details={"interrupts": [values], "interruptIds": [...], "resume":
  {"thread_id": id}}``. Calling the action again with ``{"thread_id": id, "resume":
  answer}`` continues the run with ``Command(resume=answer)`` (several pending
  interrupts: ``resume`` maps each interrupt id to its answer). This needs a
  checkpointer (compile the graph with one, or pass ``checkpointer=``), and one that
  every replica of the agent shares (a database saver): ``InMemorySaver`` only works
  when the resume reaches the same instance, which a pool does not guarantee.
- **Threads.** A call runs on the checkpoint thread ``params["thread_id"]``, else on the
  thread of the delegation it serves, else on a fresh one (deleted when the run ends
  without an interrupt, as nobody could name it again). Thread ids are scoped by agent
  and user (``ctx.user_id``): the same id from another user names another thread, so
  nobody resumes or reads a thread that is not theirs.
- **Durable tasks.** Run as a durable task (``rt.tasks.submit``), a graph compiled without
  a checkpointer runs with :class:`~a2a.adapters.langgraph_durable.TaskSaver`, which keeps
  its latest checkpoint and the writes of the nodes finished since in the task
  (``ctx.task.checkpoint``), stored before the next step starts (``durability="sync"``).
  When the task comes back after its instance died, the run continues on the same thread
  from that checkpoint: a crash in node 3 of 5 runs node 3 again (with the tools and bus
  calls it makes), not nodes 1 and 2. A graph with a saver of its own (compiled with one,
  or ``checkpointer=``) keeps using it, on a fresh thread per run as for a call, and starts
  over on redelivery; so does a graph with a ``DeltaChannel``, whose value needs older
  checkpoints than the task keeps. A checkpoint above 1 MB ends the task PAYLOAD_TOO_LARGE.
  Such a task that stops at ``interrupt()`` ends INPUT_REQUIRED with ``"task": id`` in
  ``details.resume``: the answer, as a new durable task with those parameters (the
  gateway's follow-up message, say), continues the thread from that task's last
  checkpoint on any instance, even one started after the asking one died.
- **Errors.** A bus error raised inside a node or tool (CYCLE_DETECTED from a bus tool,
  say) reaches the caller as itself; other failures are AGENT_ERROR.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing, suppress
from typing import Any, Unpack, cast
from urllib.parse import quote

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError
from langgraph.pregel import Pregel
from langgraph.types import Command, Durability, Interrupt

from bus.durable.wire import TASK_ID
from bus.errors import A2AError, AgentError, InputRequired, InvalidParams, MaxHopsExceeded

from ..core.agent import Agent
from ..core.context import Context
from . import bridge
from .langgraph_durable import TaskSaver, resumable
from .langgraph_stream import UsageReporter, final_output, jsonable, progress_of, question_of
from .langgraph_tools import ToolCalls, ToolGuard, langchain_tools, watching

__all__ = ["from_langgraph", "langchain_tools"]

AnyGraph = Pregel[Any, Any, Any, Any]

_INTERRUPT = "__interrupt__"
"""The key under which LangGraph streams the interrupts a run stopped at."""

THREAD_ID_CHARS = 200

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "description": "What the graph should work on."},
        "thread_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": THREAD_ID_CHARS,
            "description": "The checkpoint thread to run on (from an INPUT_REQUIRED's details.resume).",
        },
        "resume": {"not": {"type": "null"}, "description": "The answer to the graph's pending interrupt(s)."},
        "task": {
            "type": "string",
            "pattern": TASK_ID,
            "description": "The durable task that asked (from an INPUT_REQUIRED's details.resume).",
        },
        "recursion_limit": {"type": "integer", "minimum": 1, "description": "At most this many steps."},
    },
}
"""``text`` (required unless resuming, checked by the handler: a delegation brings its task instead)."""


def from_langgraph(
    graph: AnyGraph,
    *,
    name: str,
    input_of: Callable[[str], Any] | None = None,
    output_of: Callable[[Any], Any] | None = None,
    recursion_limit: int = 25,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    **identity: Unpack[bridge.Identity],
) -> Agent:
    """A bus agent whose ``action`` runs ``graph`` (a compiled ``StateGraph``, any Pregel).

    The action takes ``{"text": ...}`` (and optionally ``thread_id``, ``recursion_limit``)
    or, to answer an interrupt, ``{"thread_id": ..., "resume": ...}`` (a ``text`` beside
    ``resume`` is ignored); see the module docstring for what each part of a run becomes
    on the bus. LangGraph enforces no token limit of its own, so the call's budget is
    enforced as usage is reported.

    Args:
        graph: the compiled graph.
        name: the agent's name.
        input_of: the graph input for the call's text (default: one human message,
            for graphs with a ``messages`` channel).
        output_of: the call's result from the final state (default: the last AI
            message's text, or the state as JSON). It must be JSON-serialisable.
        recursion_limit: LangGraph's step limit for each run.
        checkpointer: a saver to run the graph with, instead of the one it was compiled
            with; needed to answer interrupts, and shared by every replica to do so. A graph
            with none keeps its checkpoints in the durable task it runs as, to resume there.
        **identity: the bus agent's ``capabilities``, ``description``, ``action`` (its
            ``defaultAction``, "run"), ``max_concurrency``, ``metadata`` and
            ``estimated_tokens`` (:class:`a2a.adapters.bridge.Identity`); ``max_concurrency``
            is graph runs at once per instance (default 32).

    Raises:
        ValueError: the graph has no ``messages`` channel and ``input_of`` is missing,
            or ``recursion_limit`` is below 1.
    """
    if recursion_limit < 1:
        raise ValueError("recursion_limit must be at least 1")
    if checkpointer is not None:
        graph = graph.copy({"checkpointer": checkpointer})
    if input_of is None:
        if "messages" not in graph.channels:
            raise ValueError(f"{name}: the graph has no 'messages' channel; pass input_of(text) -> input")
        input_of = _as_messages
    run = _GraphRun(graph, input_of, output_of or final_output, recursion_limit)
    summary = f"Run the LangGraph graph of {name} on a text."
    spec = bridge.AgentSpec(name, "langgraph", summary, INPUT_SCHEMA, **identity)
    return bridge.framework_agent(spec, run.handle)


def _as_messages(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


class _GraphRun:
    """The action handler: one graph run per call."""

    def __init__(
        self,
        graph: AnyGraph,
        input_of: Callable[[str], Any],
        output_of: Callable[[Any], Any],
        recursion_limit: int,
    ) -> None:
        self.graph = graph
        self.input_of = input_of
        self.output_of = output_of
        self.recursion_limit = recursion_limit
        saver = graph.checkpointer
        self.saver = saver if isinstance(saver, BaseCheckpointSaver) else None
        self.durable = self.saver is None and resumable(graph)
        """Whether a durable task of this graph keeps its checkpoints in the task (see
        :mod:`a2a.adapters.langgraph_durable`); a graph with a saver of its own uses that one."""

    async def handle(self, ctx: Context, params: dict[str, Any]) -> Any:
        named = params.get("thread_id") or ctx.thread_id
        thread_id = named or uuid.uuid4().hex
        key = _thread_key(ctx, thread_id)
        graph, task_saver = self.graph, None
        if self.durable and ctx.task.task_id is not None:
            # A durable task on a graph without a saver of its own: its checkpoints are kept
            # in the task, on a thread of the task's, so a later attempt continues the run.
            # An answer to a question continues the thread of the task that asked, from that
            # task's last checkpoint (only a thread of this agent and user loads).
            earlier = params.get("task") if "resume" in params else None
            if isinstance(earlier, str) and isinstance(named, str):
                thread_id = named
            else:
                earlier, thread_id = None, f"task-{ctx.task.task_id}"
            key = _thread_key(ctx, thread_id)
            task_saver = TaskSaver(ctx.task, key)
            if (
                earlier is not None
                and not task_saver.resumed
                and not task_saver.take_over(await ctx.task.checkpoint_of(earlier))
            ):
                raise InvalidParams(f"no question waits for an answer on thread {thread_id!r}")
            graph = graph.copy({"checkpointer": task_saver})
        limit = min(self.recursion_limit, params.get("recursion_limit") or self.recursion_limit)
        usage = UsageReporter(ctx)
        calls = ToolCalls()
        config: RunnableConfig = {
            "recursion_limit": limit,
            "configurable": {"thread_id": key},
            "callbacks": [usage, ToolGuard(ctx, calls)],
            "metadata": {"a2a_agent": ctx.agent, "a2a_correlation_id": ctx.correlation_id},
        }
        graph_input: Any
        if task_saver is not None and task_saver.resumed:
            graph_input = None  # LangGraph continues the thread from its last checkpoint
        elif "resume" in params:
            await self._check_pending(graph, config, params["resume"], thread_id)
            graph_input = Command(resume=params["resume"])
        else:
            graph_input = self.input_of(bridge.input_text(ctx, params, "text"))
        interrupts: list[Interrupt] | None = None
        with bridge.running(ctx), watching(calls):
            try:
                state, interrupts = await self._stream(graph, ctx, graph_input, config, usage, calls)
            except GraphRecursionError:
                raise MaxHopsExceeded(
                    f"the graph reached its recursion limit of {limit} steps (LangGraph GraphRecursionError)",
                    details={"recursionLimit": limit},
                ) from None
            except A2AError:
                raise
            except Exception as exc:
                calls.check()
                raise bridge.framework_error(exc, "langgraph") from exc
            finally:
                await calls.cancel_running()
                if not named and not interrupts and self.saver is not None:
                    await _forget(self.saver, key)
        if interrupts is not None:
            raise self._input_required(ctx, interrupts, thread_id)
        return self.output_of(state)

    async def _stream(
        self,
        graph: AnyGraph,
        ctx: Context,
        graph_input: Any,
        config: RunnableConfig,
        usage: UsageReporter,
        calls: ToolCalls,
    ) -> tuple[Any, list[Interrupt] | None]:
        """Run the graph to its end or an interrupt: (final state, interrupts or None)."""
        state: Any = None
        interrupts: list[Interrupt] | None = None
        # A step's checkpoint is kept before the next step starts, when the saver is the task's.
        durability: Durability | None = "sync" if isinstance(graph.checkpointer, TaskSaver) else None
        # astream is an async generator: closing it cancels the node tasks still running.
        stream = cast(
            AsyncGenerator[tuple[str, Any], None],
            graph.astream(graph_input, config, stream_mode=["updates", "values"], durability=durability),
        )
        async with aclosing(stream) as chunks:
            async for mode, data in chunks:
                if mode == "values":
                    state = data
                    continue
                for node, update in data.items():
                    if node == _INTERRUPT:
                        interrupts = [*(interrupts or []), *update]
                        continue
                    usage.count_update(update)
                    await ctx.progress(progress_of(node, update))
                calls.check()
        calls.check()
        if isinstance(state, Mapping) and _INTERRUPT in state:
            state = {k: v for k, v in state.items() if k != _INTERRUPT}
        return state, interrupts

    async def _check_pending(
        self, graph: AnyGraph, config: RunnableConfig, answer: Any, thread_id: str
    ) -> None:
        """Refuse a resume that has nothing to answer, or does not say which question it answers."""
        if graph.checkpointer is None:
            raise InvalidParams("this graph has no checkpointer, so no run of it can be resumed")
        snapshot = await graph.aget_state(config)
        pending = sorted(i.id for i in snapshot.interrupts)
        if not pending:
            raise InvalidParams(f"no question waits for an answer on thread {thread_id!r}")
        if len(pending) > 1 and not (isinstance(answer, dict) and answer and set(answer) <= set(pending)):
            raise InvalidParams(
                f"{len(pending)} questions wait on thread {thread_id!r}: "
                "'resume' must map interrupt ids (details.interruptIds) to answers",
                details={"interruptIds": pending},
            )

    def _input_required(self, ctx: Context, interrupts: list[Interrupt], thread_id: str) -> A2AError:
        if not interrupts:
            return AgentError("the graph stopped at a static breakpoint; only interrupt() is answered")
        resume: dict[str, Any] = {"thread_id": thread_id}
        if self.saver is None:
            if ctx.task.task_id is None or not self.durable:
                return AgentError(
                    f"the graph asks {question_of(interrupts[0].value)!r} with interrupt() but has no "
                    "checkpointer to resume from: compile it with one (shared by all replicas), "
                    "or run it as a durable task"
                )
            resume["task"] = ctx.task.task_id  # the answer's task continues from this one's checkpoint
        return InputRequired(
            f"{ctx.agent} asks: {question_of(interrupts[0].value)}",
            details={
                "interrupts": [jsonable(i.value) for i in interrupts],
                "interruptIds": [i.id for i in interrupts],
                "resume": resume,
            },
        )


def _thread_key(ctx: Context, thread_id: str) -> str:
    """The checkpoint thread of ``thread_id`` for this agent and the call's user."""
    user = "anon" if ctx.user_id is None else "u=" + quote(ctx.user_id, safe="")
    return f"{ctx.agent}/{user}/{thread_id}"


async def _forget(saver: BaseCheckpointSaver[Any], key: str) -> None:
    """Delete a thread nobody can name again; savers without deletion keep it."""
    with suppress(NotImplementedError):
        await saver.adelete_thread(key)
