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
from functools import partial
from typing import Any

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream

from bus.errors import A2AError, Unavailable
from bus.ids import new_id
from discovery.errors import redis_errors
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
from .auth import ANONYMOUS
from .config import GatewayConfig
from .follow import follow_elsewhere, follow_run
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
from .runs import Run, is_done, overdue, show_progress, trimmed
from .subscriptions import Events, Subscriptions
from .tasks import StoredTask, TaskStore, decode_token, encode_token, parse_timestamp

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
        self.max_timeout = min(config.max_timeout, runtime.settings.max_ttl)
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
                    tg.start_soon(self._heartbeat)
                    tg.start_soon(self._follow_cancels)
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

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.config.replica_ttl / 3)
            try:
                await self.store.alive(self.replica, self.config.replica_ttl)
            except Unavailable as exc:
                log.warning("gateway heartbeat failed: %s", exc)

    async def _follow_cancels(self) -> None:
        while True:
            try:
                async with self.store.listen(self.store.cancel_channel) as pubsub:
                    while True:
                        with redis_errors("cancel requests"):
                            msg = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                        if msg is None:
                            continue
                        data = msg.get("data")
                        task_id = data.decode(errors="replace") if isinstance(data, bytes) else str(data)
                        run = self.runs.get(task_id)
                        if run is not None:
                            run.reason = "cancelled by the client"
                            run.scope.cancel()
            except Unavailable as exc:
                log.warning("cancel requests lost (%s); retrying", exc)
                await anyio.sleep(1.0)

    # -- send ----------------------------------------------------------------------

    async def send(
        self, principal: str, request: SendMessageRequest, *, agent: str | None, listen: bool
    ) -> tuple[Run, MemoryObjectReceiveStream[StreamResponse] | None]:
        """Accept a message: a new task whose call starts now.

        Raises:
            A2AProtocolError: the message cannot become a call (nothing is created).
        """
        if self._tg is None or self._stopping:
            raise A2AProtocolError(e.INTERNAL_ERROR, "the gateway is shutting down")
        message = request.message
        if message.task_id:
            stored = await self.owned(principal, message.task_id, agent)
            raise A2AProtocolError(
                e.UNSUPPORTED_OPERATION,
                f"task {message.task_id} is {stored.task.status.state}: it takes no further messages; "
                "send a new message without taskId",
            )
        if message.role != "ROLE_USER":
            raise A2AProtocolError(e.INVALID_PARAMS, "message.role: a client's message is ROLE_USER")
        if message.context_id and not valid_id(message.context_id):
            raise A2AProtocolError(e.INVALID_PARAMS, "contextId: 1-128 letters, digits or _ . : / -")
        plan = plan_for(self.runtime.view, request, agent, self.config.default_agent)
        try:
            timeout = timeout_of(
                [request.metadata, message.metadata], self.config.default_timeout, self.max_timeout
            )
        except BadMessage as exc:
            raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
        task_id, context_id = new_id(), message.context_id or new_id()
        accepted = Message(
            message_id=message.message_id,
            context_id=context_id,
            task_id=task_id,
            role=message.role,
            parts=message.parts,
            metadata=message.metadata,
            extensions=message.extensions,
            reference_task_ids=message.reference_task_ids,
        )
        task = Task(
            id=task_id,
            context_id=context_id,
            status=status("TASK_STATE_SUBMITTED"),
            history=[accepted],
            metadata={"agent": str(plan.route), "action": plan.action, "timeoutMs": int(timeout * 1000)},
        )
        self._check_capacity(principal)
        stored = StoredTask(task=task, owner=principal, replica=self.replica, agent=str(plan.route))
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
        receive = run.listen() if listen else None
        self._tg.start_soon(self._execute, run, plan, timeout, principal)
        return run, receive

    def _check_capacity(self, principal: str) -> None:
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
                await self._change(run, status("TASK_STATE_WORKING"))
                try:
                    options = CallOptions(
                        timeout=timeout,
                        user_id=None if principal == ANONYMOUS else principal,
                        conversation_id=run.conversation,
                        correlation_id=run.task.id,
                        on_progress=functools.partial(show_progress, run),
                    )
                    response = await self.runtime.request(plan.route, plan.action, plan.params, options)
                except A2AError as exc:
                    final = error_status(exc, shown(exc, plan.route, self.runtime.redactor.redact))
                else:
                    self._artifact(run, response.payload.result)
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
                        await self._change(run, final or status("TASK_STATE_FAILED", "the gateway stopped"))
                        break
                    except Exception as exc:
                        log.warning(
                            "task %s: final state not recorded (try %d): %s", run.task.id, attempt + 1, exc
                        )
                        await anyio.sleep(0.2 * (attempt + 1))
                self.runs.pop(run.task.id, None)
                run.close()
                run.done.set()

    async def _change(self, run: Run, new: TaskStatus) -> None:
        """A new state: written and published with the events that came before it, in one round trip."""
        run.stored.task.status = new
        event = StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=run.task.id, context_id=run.task.context_id, status=new
            )
        )
        run.emit(event)
        pending, run.unpublished = run.unpublished, []
        await self.store.save(run.stored, *pending, event)

    def _artifact(self, run: Run, result: Any) -> None:
        """The result as an artifact: streamed now, stored and published with the final state."""
        artifact = result_artifact(result)
        run.stored.task.artifacts = [*run.stored.task.artifacts, artifact]
        event = StreamResponse(
            artifact_update=TaskArtifactUpdateEvent(
                task_id=run.task.id, context_id=run.task.context_id, artifact=artifact, last_chunk=True
            )
        )
        run.emit(event)
        run.unpublished.append(event)

    # -- tasks -----------------------------------------------------------------------

    async def owned(self, principal: str, task_id: str, agent: str | None = None) -> StoredTask:
        """The task if it exists, belongs to ``principal`` and, asked on an agent's endpoint, went
        to ``agent`` (else: not found, as if it did not exist)."""
        stored = await self.store.load(task_id) if valid_id(task_id) else None
        if stored is None or stored.owner != principal or (agent is not None and stored.agent != agent):
            raise A2AProtocolError(e.TASK_NOT_FOUND, f"task {task_id} not found")
        if is_done(stored.task) or task_id in self.runs:
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
        try:
            offset = decode_token(request.page_token)
        except ValueError as exc:
            raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
        size = 50 if request.page_size is None else request.page_size  # 0 is a size, not "unset": refused
        if not 1 <= size <= 100:
            problem = f"pageSize must be between 1 and 100 (leave it out for 50), got {size}"
            violation = {"field": "pageSize", "message": problem}
            raise A2AProtocolError(e.INVALID_PARAMS, problem, {"errors": [violation]})
        after_text = request.status_timestamp_after
        try:
            after = parse_timestamp(after_text) if after_text else None
        except ValueError:
            raise A2AProtocolError(e.INVALID_PARAMS, "statusTimestampAfter: an RFC 3339 timestamp") from None
        state = request.status if request.status != "TASK_STATE_UNSPECIFIED" else None
        found, total, following = await self.store.page(
            principal,
            offset=offset,
            size=size,
            context_id=request.context_id,
            state=state,
            after=after,
            agent=agent,
        )
        tasks = []
        for stored in found:
            task = trimmed(stored.task, request.history_length)
            if not request.include_artifacts and task.artifacts:
                task = msgspec.structs.replace(task, artifacts=[])
            tasks.append(task)
        token = encode_token(following) if following is not None else ""
        return ListTasksResponse(tasks=tasks, next_page_token=token, page_size=size, total_size=total)

    async def cancel(self, principal: str, task_id: str, agent: str | None) -> Task:
        stored = await self.owned(principal, task_id, agent)
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
        await self.store.request_cancel(task_id)
        with anyio.move_on_after(self.config.cancel_wait):
            while True:
                again = await self.store.load(task_id)
                if again is None or is_done(again.task):
                    return again.task if again is not None else stored.task
                await anyio.sleep(0.05)
        return (await self.store.load(task_id) or stored).task

    async def subscribe(self, principal: str, task_id: str, agent: str | None) -> Events:
        """The task now, then its events until it ends (from this replica or any other).

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
            return self.subscriptions.open(principal, task_id, follow_run(run), elsewhere=False)
        events = follow_elsewhere(self.store, stored, partial(self.owned, stored.owner))
        return self.subscriptions.open(principal, task_id, events, elsewhere=True)
