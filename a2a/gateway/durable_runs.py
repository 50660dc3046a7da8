"""Gateway tasks run as durable tasks (when the runtime keeps them: ``A2A_TASKS``).

The replica that accepts a message submits it as a durable task whose id is the A2A task's
id, with the message id as the idempotency key of its user: the same message again is the
same task, and nothing runs twice. The replica then follows it (progress on the task's
streams, its outcome written to the task); the work itself runs on an agent instance, kept
alive and redelivered by JetStream. A replica that stops or dies leaves its tasks running:
the next replica that reads one of them finds its follower gone and adopts it (or records
how it ended, if it did meanwhile). ``CancelTask`` cancels the durable task from any replica.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

import anyio
import msgspec

from bus.durable import TaskOutcome
from bus.errors import A2AError, Unavailable, error_from_info
from bus.ids import new_id
from transports.a2a_http import Message, SendMessageRequest, TaskStatus

from ..core.options import CallOptions
from ..core.runtime import Runtime
from ..core.task_handle import Task as Handle
from .auth import ANONYMOUS
from .mapping import CallPlan, conversation_of, error_status, shown, status, usage_metadata
from .runs import Receiving, Run, is_done, note_question, show_progress
from .tasks import StoredTask, TaskStore

__all__ = ["MESSAGE_KEY", "DurableRuns", "ended_status", "follow_durable", "user_of"]

log = logging.getLogger("a2a.gateway")

MESSAGE_KEY = "a2a-message:"
"""Prefix of a durable task's idempotency key: the message id follows (one user's)."""

Change = Callable[[Run, TaskStatus], Awaitable[None]]
Artifact = Callable[[Run, Any], None]


def user_of(principal: str) -> str | None:
    """The bus's user of a gateway principal (none for an anonymous client)."""
    return None if principal == ANONYMOUS else principal


class Host(Protocol):
    """What of the gateway's service the durable runs use."""

    runtime: Runtime
    store: TaskStore
    replica: str
    runs: dict[str, Run]

    def accepting(self) -> bool: ...
    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None: ...
    def check_capacity(self, principal: str) -> None: ...
    async def register(
        self,
        principal: str,
        message: Message,
        plan: CallPlan,
        timeout: float,
        task_id: str,
        *,
        durable: bool = False,
    ) -> Run: ...
    async def change(self, run: Run, new: TaskStatus) -> None: ...
    def add_artifact(self, run: Run, result: Any) -> None: ...


class DurableRuns:
    """Sends, adopts and follows the durable tasks of one replica."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def _redact(self, text: str) -> str:
        return self.host.runtime.redactor.redact(text)

    async def send(
        self, principal: str, request: SendMessageRequest, plan: CallPlan, timeout: float, listen: bool
    ) -> tuple[Run, Receiving | None]:
        """Submit the message as a durable task (keyed by its id, per user) and follow it."""
        host = self.host
        host.check_capacity(principal)
        context_id = request.message.context_id or new_id()
        message = msgspec.structs.replace(request.message, context_id=context_id)
        options = CallOptions(
            timeout=timeout,
            user_id=user_of(principal),
            conversation_id=conversation_of(principal, context_id),
        )
        try:
            handle = await host.runtime.tasks.submit(
                plan.route, plan.action, plan.params, options, key=MESSAGE_KEY + message.message_id
            )
        except Unavailable:
            raise
        except A2AError as exc:  # refused before it was queued: a task that ended at once
            run = await host.register(principal, message, plan, timeout, new_id(), durable=False)
            host.runs.pop(run.task.id, None)
            await host.change(run, error_status(exc, shown(exc, plan.route, self._redact)))
            run.close()
            run.done.set()
            return run, run.listen() if listen else None
        if not handle.created:  # the same message again: the task it made
            found = host.runs.get(handle.id)
            stored = None if found is not None else await host.store.load(handle.id)
            if stored is not None and stored.owner == principal:
                found = await self.adopt(stored)
            if found is not None:
                return found, found.listen() if listen else None
        run = await host.register(principal, message, plan, timeout, handle.id, durable=True)
        receive = run.listen() if listen else None
        host.start_soon(self.follow, run, handle)
        return run, receive

    async def resume(self, run: Run, plan: CallPlan, timeout: float, message_id: str) -> None:
        """Submit the next turn of ``run``'s task (keyed by the follow-up message's id) and follow it."""
        host, stored = self.host, run.stored
        options = CallOptions(
            timeout=timeout, user_id=user_of(stored.owner), conversation_id=run.conversation
        )
        handle = await host.runtime.tasks.submit(
            plan.route, plan.action, plan.params, options, key=MESSAGE_KEY + message_id
        )
        stored.turn = handle.id
        await host.change(run, stored.task.status)
        host.start_soon(self.follow, run, handle)

    async def adopt(self, stored: StoredTask) -> Run:
        """Follow a durable task whose follower is gone (or write how it ended, if it did)."""
        host = self.host
        run = Run(stored)
        run.conversation = conversation_of(stored.owner, stored.task.context_id)
        if is_done(stored.task):
            run.close()
            run.done.set()
            return run
        handle = await host.runtime.tasks.get(stored.turn or stored.task.id, user_of(stored.owner))
        outcome = await handle.peek()
        if outcome is None and host.accepting():
            stored.replica = host.replica
            host.runs[stored.task.id] = run
            await host.store.save(stored)
            host.start_soon(self.follow, run, handle)
            return run
        if outcome is not None:
            if outcome.state == "completed":
                host.add_artifact(run, outcome.result)
            await host.change(run, ended_status(outcome, stored, self._redact))
        run.close()
        run.done.set()
        return run

    async def follow(self, run: Run, handle: Handle) -> None:
        try:
            await follow_durable(run, handle, self.host.change, self.host.add_artifact, self._redact)
        except Exception as exc:  # the store failed: the next reader adopts the task again
            log.warning("task %s: not followed: %s", run.task.id, exc)
        finally:
            self.host.runs.pop(run.task.id, None)
            run.close()
            run.done.set()


def ended_status(outcome: TaskOutcome, stored: StoredTask, redact: Callable[[str], str]) -> TaskStatus:
    """The A2A status of a durable task that ended as ``outcome`` (the result is the artifact;
    a question is noted in ``stored``)."""
    if outcome.state == "completed":
        return status("TASK_STATE_COMPLETED", metadata=usage_metadata(outcome.usage))
    if outcome.error is None:
        return status("TASK_STATE_FAILED", f"the task ended {outcome.state}")
    error = error_from_info(outcome.error)
    note_question(stored, error)
    return error_status(error, shown(error, stored.agent, redact))


async def follow_durable(
    run: Run, handle: Handle, change: Change, artifact: Artifact, redact: Callable[[str], str]
) -> bool:
    """Follow ``handle`` for ``run`` until it ends, and write how it ended. Returns False when
    this replica stopped following first (``run.scope`` cancelled without ``run.reason`` of a
    client's cancel): the task goes on, for another replica to adopt."""
    ended: list[TaskOutcome] = []
    with run.scope:
        if run.task.status.state != "TASK_STATE_WORKING":
            await change(run, status("TASK_STATE_WORKING"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(_progress, run, handle)
            ended.append(await handle.outcome())
            tg.cancel_scope.cancel()
    if not ended:
        if run.reason != "cancelled by the client":
            return False
        with anyio.CancelScope(shield=True):
            ended.append(await handle.cancel())
    outcome = ended[0]
    if outcome.state == "completed":
        artifact(run, outcome.result)
    with anyio.CancelScope(shield=True):
        await change(run, ended_status(outcome, run.stored, redact))
    return True


async def _progress(run: Run, handle: Handle) -> None:
    """The handler's progress updates, as working status updates on the task's streams."""
    try:
        async for event in handle.events():
            if event.kind == "progress":
                show_progress(run, event.data)
    except A2AError as exc:  # the journal is unreadable for now: the outcome still comes
        log.debug("task %s: progress not followed: %s", run.task.id, exc)
