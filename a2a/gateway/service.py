"""The gateway's operations, whatever the binding: send, stream, get, list, cancel, subscribe.

Each accepted message becomes one task and one bus call, run in the gateway's task group
under a cancel scope: ``CancelTask`` (on any replica) cancels the scope, the call path
withdraws the call, and the callee cancels its handler and everything it delegated. The
task is written to Redis on every change of state and each stream event is published,
so any replica can answer for it (see :mod:`a2a.gateway.tasks`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

import anyio
import anyio.abc
import msgspec

from bus.errors import A2AError
from bus.ids import new_id
from transports.a2a_http import (
    A2AProtocolError,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from transports.a2a_http import errors as e

from ..core.options import CallOptions
from ..core.runtime import Runtime
from .config import GatewayConfig
from .durable_runs import DurableRuns, user_of
from .follow import follow_elsewhere, follow_run
from .listing import list_tasks
from .mapping import (
    BadMessage,
    CallPlan,
    conversation_of,
    error_status,
    result_artifact,
    shown,
    status,
    timeout_of,
    usage_metadata,
    valid_id,
)
from .planning import plan_for
from .push import PushNotifications
from .replica import follow_cancels, heartbeat
from .runs import Receiving, Run, is_done, note_question, overdue, show_progress, trimmed
from .subscriptions import Events, Subscriptions
from .tasks import StoredTask, TaskStore
from .turns import WAITING, follow_up

__all__ = ["GatewayService", "Run"]


log = logging.getLogger("a2a.gateway")


class GatewayService:
    """Runs A2A requests against the bus for one gateway replica."""

    def __init__(self, runtime: Runtime, store: TaskStore, config: GatewayConfig) -> None:
        self.runtime = runtime
        self.store = store
        self.config = config
        self.replica = runtime.id
        self.runs: dict[str, Run] = {}
        self.durable = runtime.tasks.client is not None
        """Messages run as durable tasks (the runtime keeps them): hours long, surviving replicas."""
        settings = runtime.settings
        self.max_timeout = (
            settings.max_task_ttl if self.durable else min(config.max_timeout, settings.max_ttl)
        )
        self.durable_runs = DurableRuns(self)
        self.push = PushNotifications(store, config, self.owned, self.replica)
        self._tg: anyio.abc.TaskGroup | None = None
        self._scope = anyio.CancelScope(shield=True)
        self._stopping = False
        self.subscriptions = Subscriptions(
            per_task=config.max_subscriptions_per_task,
            per_user=config.max_subscriptions_per_user,
            elsewhere=config.max_streams_elsewhere,
        )

    # -- lifecycle -------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run calls, heartbeats and cancel requests until :meth:`stop` has ended them.

        Shielded from the caller's cancellation, so that a replica told to stop lets the
        calls it runs finish (for ``stop``'s grace) instead of failing them at once.
        """
        try:
            with self._scope:
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    await self.store.alive(self.replica, self.config.replica_ttl)
                    tg.start_soon(heartbeat, self.store, self.replica, self.config.replica_ttl)
                    tg.start_soon(follow_cancels, self.store, self.runs)
                    task_status.started()
                    await anyio.sleep_forever()
        finally:
            self._tg = None
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await self.store.gone(self.replica)

    async def stop(self, grace: float = 5.0) -> None:
        """Let running calls end for up to ``grace`` seconds, then cancel the rest."""
        self._stopping = True
        with anyio.move_on_after(grace):
            while self.runs:
                await anyio.sleep(0.05)
        for run in list(self.runs.values()):
            run.reason = "the gateway stopped while the task ran"
            run.scope.cancel()
        with anyio.move_on_after(2):
            while self.runs:
                await anyio.sleep(0.02)
        self._scope.cancel()

    # -- send ----------------------------------------------------------------------

    async def send(
        self, principal: str, request: SendMessageRequest, *, agent: str | None, listen: bool
    ) -> tuple[Run, Receiving | None]:
        """Accept a message: a new task whose call starts now.

        Raises:
            A2AProtocolError: the message cannot become a call (nothing is created).
        """
        if self._tg is None or self._stopping:
            raise A2AProtocolError(e.INTERNAL_ERROR, "the gateway is shutting down")
        message = request.message
        if message.role != "ROLE_USER":
            raise A2AProtocolError(e.INVALID_PARAMS, "message.role: a client's message is ROLE_USER")
        if message.task_id:
            return await self._answer(
                principal, request, await self.owned(principal, message.task_id, agent), listen
            )
        if message.context_id and not valid_id(message.context_id):
            raise A2AProtocolError(e.INVALID_PARAMS, "contextId: 1-128 letters, digits or _ . : / -")
        plan = plan_for(self.runtime.view, request, agent, self.config.default_agent)
        try:
            timeout = timeout_of(
                [request.metadata, message.metadata], self.config.default_timeout, self.max_timeout
            )
        except BadMessage as exc:
            raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
        if self.durable:
            return await self.durable_runs.send(principal, request, plan, timeout, listen)
        self.check_capacity(principal)
        run = await self.register(principal, message, plan, timeout, new_id(), durable=False)
        receive = run.listen() if listen else None
        self._tg.start_soon(self._execute, run, plan, timeout, principal)
        return run, receive

    def accepting(self) -> bool:
        """Whether new work may start here (the replica runs and is not stopping)."""
        return self._tg is not None and not self._stopping

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` in the replica's task group."""
        assert self._tg is not None
        self._tg.start_soon(func, *args)

    async def register(
        self,
        principal: str,
        message: Message,
        plan: CallPlan,
        timeout: float,
        task_id: str,
        durable: bool = False,
    ) -> Run:
        """A new task of ``message``, counted as running here and stored."""
        context_id = message.context_id or new_id()
        accepted = msgspec.structs.replace(message, context_id=context_id, task_id=task_id)
        task = Task(
            id=task_id,
            context_id=context_id,
            status=status("TASK_STATE_SUBMITTED"),
            history=[accepted],
            metadata={"agent": str(plan.route), "action": plan.action, "timeoutMs": int(timeout * 1000)},
        )
        stored = StoredTask(
            task=task, owner=principal, replica=self.replica, agent=str(plan.route), durable=durable
        )
        run = Run(stored)
        run.conversation = conversation_of(principal, context_id)
        self.runs[task_id] = run  # counted from here, so that concurrent sends see it
        try:
            await self.store.save(stored)
            if self._tg is None or self._stopping:
                raise A2AProtocolError(e.INTERNAL_ERROR, "the gateway is shutting down")
        except BaseException:
            del self.runs[task_id]
            raise
        return run

    async def _answer(
        self, principal: str, request: SendMessageRequest, stored: StoredTask, listen: bool
    ) -> tuple[Run, Receiving | None]:
        """Continue a task that waits for input with the follow-up message (:mod:`.turns`)."""
        assert self._tg is not None
        plan, timeout = follow_up(stored, request.message, self.config.default_timeout, self.max_timeout)
        self.check_capacity(principal)
        run = Run(stored)
        run.conversation = conversation_of(principal, stored.task.context_id)
        stored.replica = self.replica
        self.runs[stored.task.id] = run
        receive = run.listen() if listen else None
        try:
            if self.durable:
                await self.durable_runs.resume(run, plan, timeout, request.message.message_id)
            else:
                self._tg.start_soon(self._execute, run, plan, timeout, principal)
        except BaseException:
            self.runs.pop(stored.task.id, None)
            raise
        return run, receive

    def check_capacity(self, principal: str) -> None:
        """Refuse a new task when this replica, or this user on it, runs too many already."""
        if len(self.runs) >= self.config.max_running:
            raise A2AProtocolError(e.INTERNAL_ERROR, "the gateway is busy: try again later or elsewhere")
        mine = sum(1 for run in self.runs.values() if run.stored.owner == principal)
        if mine >= self.config.max_running_per_user:
            raise A2AProtocolError(
                e.UNSUPPORTED_OPERATION,
                f"you have {mine} tasks running here, the most allowed: wait for one to end",
            )

    async def _execute(self, run: Run, plan: CallPlan, timeout: float, principal: str) -> None:
        final: TaskStatus | None = None
        try:
            with run.scope:
                await self.change(run, status("TASK_STATE_WORKING"))
                try:
                    options = CallOptions(
                        timeout=timeout,
                        user_id=user_of(principal),
                        conversation_id=run.conversation,
                        correlation_id=run.call_id,
                        on_progress=functools.partial(show_progress, run),
                    )
                    response = await self.runtime.request(plan.route, plan.action, plan.params, options)
                except A2AError as exc:
                    note_question(run.stored, exc)
                    final = error_status(exc, shown(exc, plan.route, self.runtime.redactor.redact))
                else:
                    self.add_artifact(run, response.payload.result)
                    final = status("TASK_STATE_COMPLETED", metadata=usage_metadata(response.payload.usage))
            if final is None:
                reason = run.reason or "cancelled"
                state = "TASK_STATE_FAILED" if self._stopping and run.reason else "TASK_STATE_CANCELED"
                final = status(state, reason)  # type: ignore[arg-type]
        except Exception as exc:  # the store failed: the task cannot be recorded
            log.warning("task %s: %s", run.task.id, exc)
            final = status("TASK_STATE_FAILED", "the gateway could not record the task")
        finally:
            with anyio.CancelScope(shield=True):
                for attempt in range(3):  # a Redis blip must not leave the task WORKING
                    try:
                        await self.change(run, final or status("TASK_STATE_FAILED", "the gateway stopped"))
                        break
                    except Exception as exc:
                        log.warning(
                            "task %s: final state not recorded (try %d): %s", run.task.id, attempt + 1, exc
                        )
                        await anyio.sleep(0.2 * (attempt + 1))
                self.runs.pop(run.task.id, None)
                run.close()
                run.done.set()

    async def change(self, run: Run, new: TaskStatus) -> None:
        """A new state: written and published with the events that came before it, in one round trip."""
        run.stored.task.status = new
        event = StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=run.task.id, context_id=run.task.context_id, status=new
            )
        )
        numbered = run.numbered(event)
        run.emit(numbered)
        pending, run.unpublished = run.unpublished, []
        if configs := await self.store.save(run.stored, *pending, numbered):
            await self.push.changed(run.task.id, configs)

    def add_artifact(self, run: Run, result: Any) -> None:
        """The result as an artifact: streamed now, stored and published with the final state."""
        artifact = result_artifact(result)
        run.stored.task.artifacts = [*run.stored.task.artifacts, artifact]
        event = StreamResponse(
            artifact_update=TaskArtifactUpdateEvent(
                task_id=run.task.id, context_id=run.task.context_id, artifact=artifact, last_chunk=True
            )
        )
        numbered = run.numbered(event)
        run.emit(numbered)
        run.unpublished.append(numbered)

    # -- tasks -----------------------------------------------------------------------

    async def owned(self, principal: str, task_id: str, agent: str | None = None) -> StoredTask:
        """The task if it exists, belongs to ``principal`` and, asked on an agent's endpoint, went
        to ``agent`` (else: not found, as if it did not exist)."""
        stored = await self.store.load(task_id) if valid_id(task_id) else None
        if stored is None or stored.owner != principal or (agent is not None and stored.agent != agent):
            raise A2AProtocolError(e.TASK_NOT_FOUND, f"task {task_id} not found")
        if is_done(stored.task) or task_id in self.runs:
            return stored
        if stored.durable:  # its follower is gone (or this replica lost it): followed from here
            if stored.replica == self.replica or not await self.store.is_alive(stored.replica):
                return (await self.durable_runs.adopt(stored)).stored
            return stored
        reason = None
        if overdue(stored, self.config.replica_ttl):
            reason = "the task outlived its deadline without an outcome being recorded"
        elif stored.replica != self.replica and not await self.store.is_alive(stored.replica):
            reason = "the gateway replica running this task stopped"
        elif stored.replica == self.replica:
            reason = "the gateway lost this task's call"
        if reason is not None:
            stored.task.status = status("TASK_STATE_FAILED", reason)
            await self.store.save(stored)
        return stored

    async def get(self, principal: str, task_id: str, history_length: int | None, agent: str | None) -> Task:
        return trimmed((await self.owned(principal, task_id, agent)).task, history_length)

    async def list(self, principal: str, request: ListTasksRequest, agent: str | None) -> ListTasksResponse:
        """A page of ``principal``'s tasks, newest first; on an agent's endpoint, those sent to ``agent``."""
        return await list_tasks(self.store, principal, request, agent)

    async def cancel(self, principal: str, task_id: str, agent: str | None) -> Task:
        stored = await self.owned(principal, task_id, agent)
        if stored.task.status.state == WAITING and task_id not in self.runs:  # nothing runs: it ends here
            stored.resume = None
            parked = Run(stored)
            await self.change(parked, status("TASK_STATE_CANCELED", "cancelled by the client"))
            parked.close()
            return parked.task
        if is_done(stored.task):
            raise A2AProtocolError(
                e.TASK_NOT_CANCELABLE, f"task {task_id} is {stored.task.status.state} and cannot be canceled"
            )
        run = self.runs.get(task_id)
        if run is not None:
            run.reason = "cancelled by the client"
            run.scope.cancel()
            with anyio.move_on_after(self.config.cancel_wait):
                await run.done.wait()
            return run.task
        if stored.durable:  # followed on another replica, which writes the outcome
            await (await self.runtime.tasks.get(task_id, user_of(principal))).cancel()
        else:
            await self.store.request_cancel(task_id)
        with anyio.move_on_after(self.config.cancel_wait):
            while True:
                again = await self.store.load(task_id)
                if again is None or is_done(again.task):
                    return again.task if again is not None else stored.task
                await anyio.sleep(0.05)
        return (await self.store.load(task_id) or stored).task

    async def subscribe(
        self, principal: str, task_id: str, agent: str | None, after: int | None = None
    ) -> Events:
        """The task now, then its events until it ends (from this replica or any other); with
        ``after`` (the number of the last event a client got), the logged events after it first.

        Raises:
            A2AProtocolError: not the principal's task (or not ``agent``'s), ended, or over a
                cap on streams.
        """
        stored = await self.owned(principal, task_id, agent)
        if is_done(stored.task):
            raise A2AProtocolError(
                e.UNSUPPORTED_OPERATION, f"task {task_id} is in terminal state: {stored.task.status.state}"
            )
        run = self.runs.get(task_id)
        if run is not None:
            return self.subscriptions.open(
                principal, task_id, follow_run(run, self.store, after), elsewhere=False
            )
        events = follow_elsewhere(self.store, stored, partial(self.owned, stored.owner), after)
        return self.subscriptions.open(principal, task_id, events, elsewhere=True)
