"""Running one attempt of a durable task on a hosted instance, like a call, to a stored outcome.

The attempt goes through what a call goes through: the callee's checks (:func:`admit`,
with the time left computed from the task's absolute deadline, as it may have waited in
the queue), a concurrency slot shared with the instance's calls, the handler with a
:class:`~a2a.Context` whose ``task`` is this attempt, redaction of error messages, the
audit record and the trace. What a call would reply becomes the task's outcome.
"""

from __future__ import annotations

import asyncio
import logging

import anyio
import msgspec

from bus.durable import Attempt, TaskOutcome
from bus.durable.wire import now_ms
from bus.errors import A2AError, AgentError, BudgetExceeded, DeadlineExceeded

from ..stores.audit import callee_record
from .admission import admit
from .agent import Agent
from .context import Context
from .delegating import finish_delegation
from .failures import as_failure
from .instance import Instance
from .slots import Lease, Slots

__all__ = ["TaskHost"]

log = logging.getLogger("a2a.tasks")

_encode = msgspec.json.Encoder().encode


class TaskHost:
    """Runs attempts of durable tasks for one instance of ``agent``."""

    def __init__(self, agent: Agent, instance: Instance, slots: Slots) -> None:
        self.agent = agent
        self.instance = instance
        self.slots = slots

    async def run(self, attempt: Attempt, sender: str) -> TaskOutcome:
        """Run ``attempt`` for ``sender``; its outcome (a typed error is an outcome too)."""
        services = self.instance.services
        name = self.agent.name
        env = attempt.queued.request
        meta = env.metadata
        if meta.deadline is not None:  # it may have waited: the time left is the deadline's
            meta.ttl_ms = max(0, meta.deadline - now_ms())
        t0 = services.clock()
        trace = services.telemetry.handle(env, attempt.queued.trace, name, self.instance.instance_id)
        ctx: Context | None = None
        error: A2AError | None = None
        result = None
        try:
            try:
                if attempt.spent_before and meta.budget is not None:  # reserved across attempts
                    meta.budget -= attempt.spent_before
                    if meta.budget <= 0:
                        raise BudgetExceeded("the task's earlier attempts spent its whole token budget")
                action, params, deadline = admit(self.agent, services.policy, services.guard, env, sender, t0)
                task = asyncio.current_task()
                assert task is not None
                held = Lease(self.slots, task, "", t0, deadline, sender)
                ctx = Context(self.instance, env, deadline, action.name, params, held, attempt)
                attempt.spent = lambda: ctx.usage.total if ctx is not None else 0
                with anyio.fail_after(max(0.0, deadline - services.clock())):
                    await held.take()
                    try:
                        result = await action.handler(ctx, params)
                    finally:
                        held.give_up()
                    if env.delegation is not None:
                        result = await finish_delegation(services, name, env, result, ctx.tools_used)
                try:
                    _encode(result)  # stored as JSON: refused here, not by the store
                except (TypeError, ValueError, OverflowError) as exc:
                    raise AgentError(f"the result cannot be stored as JSON: {exc}") from None
            except TimeoutError:
                error = DeadlineExceeded(f"{name} did not finish {env.payload.action!r} before the deadline")
            except A2AError as exc:
                error = as_failure(exc, services.redactor)
            except Exception as exc:  # the handler's own failure: AGENT_ERROR, as for a call
                error = as_failure(exc, services.redactor)
                log.warning(
                    "%s: task %s failed: %s", self.instance.instance_id, attempt.task_id, error.message
                )
            spent = ctx.spent if ctx is not None else None
            if error is not None:
                error.located(name, meta.hop_count)
            trace.ended(error, result)
            if services.audit.enabled:
                tokens, elapsed = spent.total if spent is not None else 0, services.clock() - t0
                tools = ctx.tools_used if ctx is not None else ()
                record = callee_record(env, name, self.instance.instance_id, elapsed, error, tokens, tools)
                services.audit.emit(record)
            if services.recorder is not None:
                services.recorder.capture(env, name, result, error)
            if error is not None:
                return TaskOutcome(state="failed", error=error.to_info(), usage=spent)
            return TaskOutcome(state="completed", result=result, usage=spent)
        finally:
            trace.close()
