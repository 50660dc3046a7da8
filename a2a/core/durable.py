"""Durable tasks of a runtime: submit and follow them, and take them for the agents it serves.

::

    task = await rt.tasks.submit("coder", "implement", {"spec": "..."}, key="spec-42", timeout=3600)
    print(task.id)                        # keep it: any process re-attaches with rt.tasks.get(id)
    result = await task.result()          # the result, or the task's typed error

A task is accepted once the store has it; from then on it ends exactly once, with one stored
outcome, whatever crashes. The instance running it keeps it alive; when that instance dies
another instance of the agent gets it after the ack wait (``A2A_TASK_ACK_WAIT``), its
``ctx.task.number`` one higher. Handlers need no change to be run as tasks; those that want to
resume use ``ctx.task.checkpoint(state)`` / ``ctx.task.last_checkpoint`` and journal side
effects with ``ctx.task.effect(name, fn)`` (see :mod:`bus.durable.attempt`).
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from bus.durable import Taker, TaskClient, TaskStore
from bus.errors import A2AError, DeadlineExceeded, InvalidParams, Unavailable
from bus.ids import new_id
from bus.subjects import Subjects
from transports import NatsTransport, Transport, TransportError
from transports.durable import DurableStore
from transports.jetstream_config import StoreConfig
from transports.jetstream_store import JetStreamDurable

from .calls import CallPath
from .context import Context
from .hosting import AgentHost
from .instance import ChildOptions
from .options import CallOptions, merged
from .route import Target, as_route
from .settings import Settings
from .task_handle import Task
from .tasking import TaskHost

__all__ = ["Tasks", "open_tasks", "store_config"]

log = logging.getLogger("a2a.tasks")

MAX_ATTEMPTS = 5
"""Attempts a task gets by default before it ends FAILED (each one's instance died)."""

KEEP_AFTER = 7 * 86400.0
"""Seconds a task's records stay in the store after its longest possible deadline."""


class Tasks:
    """The runtime's durable tasks: the caller half, and the takers of its hosted agents."""

    def __init__(self, store: TaskStore | None, calls: CallPath, *, max_ttl: float) -> None:
        self.store = store
        self.calls = calls
        self.client = TaskClient(store, calls.bus.subjects) if store is not None else None
        self.max_ttl = max_ttl
        self._takers: list[Taker] = []

    async def submit(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        options: CallOptions | None = None,
        *,
        key: str | None = None,
        timeout: float | None = None,
        user_id: str | None = None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> Task:
        """Accept a task for ``target`` (an agent by name, or the agent of the best capable
        instance now) and return at once with its handle.

        ``key`` is an idempotency key: the same key (for the same user) again returns the
        same task, and nothing runs twice. ``timeout`` may be hours (``A2A_MAX_TASK_TTL``).

        Raises:
            Unavailable: durable tasks are off here, or the store is unreachable.
            InvalidParams: a key that is empty or longer than 256 characters, or a bad
                ``max_attempts``.
            A2AError: the target cannot be resolved (NO_CAPABLE_AGENT, ...).
        """
        if key is not None and not 0 < len(key) <= 256:
            raise InvalidParams("an idempotency key has 1 to 256 characters")
        options = merged(options, timeout=timeout, user_id=user_id)
        return await self._submit(target, action, params, options, key, max_attempts, None)

    async def submit_child(
        self,
        parent: Context,
        target: Target,
        action: str,
        params: dict[str, Any] | None,
        options: ChildOptions,
    ) -> Task:
        """A task submitted by a handler (:meth:`a2a.Context.submit`): ``parent``'s child.

        When ``parent`` runs a durable task, the idempotency key is derived from that task
        and the call site (the handler's own ``key``, else the order of its submissions),
        so an attempt that runs again after a crash re-attaches to the children the last
        one submitted instead of submitting them twice; the child is journaled, and
        cancelling the parent cancels it.
        """
        if options.key is not None and not 0 < len(options.key) <= 256:
            raise InvalidParams("an idempotency key has 1 to 256 characters")
        attempt = parent.task
        site = f"k={options.key}" if options.key is not None else f"#{attempt.submitted}"
        attempt.submitted += 1
        key = options.key if attempt.task_id is None else f"{attempt.task_id}/{site}"
        call = CallOptions(timeout=options.timeout, grants=parent.grants_for(None, True))
        attempts = MAX_ATTEMPTS if options.max_attempts is None else options.max_attempts
        # Queued and journaled together: a cancel of the parent in between would leave a
        # child that its cancel cannot find.
        with anyio.CancelScope(shield=True):
            task = await self._submit(target, action, params, call, key, attempts, parent)
            await attempt.child(task.id, task.record.agent)
        return task

    async def _submit(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None,
        options: CallOptions,
        key: str | None,
        max_attempts: int,
        parent: Context | None,
    ) -> Task:
        client = self._client()
        limit = self.max_ttl if options.timeout is None else options.timeout
        if not (isinstance(limit, int | float) and math.isfinite(limit) and limit > 0):
            raise InvalidParams(f"a task's timeout is a number of seconds above 0, not {limit!r}")
        if key is not None and not 0 < len(key) <= 512:
            raise InvalidParams("an idempotency key has 1 to 256 characters")
        if (
            isinstance(max_attempts, bool)
            or not isinstance(max_attempts, int)
            or not 1 <= max_attempts <= 100
        ):
            raise InvalidParams("max_attempts is an integer from 1 to 100")
        limit = min(limit, self.max_ttl)
        if parent is not None:  # a child ends by its parent's deadline
            limit = min(limit, parent.remaining())
            if limit <= 0:
                raise DeadlineExceeded("no time left for this task: the parent's deadline has passed")
        if options.correlation_id is None:  # a task is a call tree of its own, named by its id
            options = msgspec.structs.replace(options, correlation_id=new_id())
        try:
            route = as_route(target)
            request, agent = self.calls.task_request(route, action, params, options, limit, parent)
            queue = self.calls.bus.subjects.task_queue(agent)
        except ValueError as exc:  # a name that is no subject token
            raise InvalidParams(str(exc)) from None
        # The submission's span: every attempt's span is its child, one trace across attempts.
        trace = self.calls.services.telemetry.call(request, route)
        try:
            headers = trace.sending(queue, agent)
            record, created, sequence = await client.submit(
                request, agent, key=key, max_attempts=max_attempts, trace=headers
            )
            trace.ended(None)
        except A2AError as exc:
            trace.ended(exc)
            raise
        finally:
            trace.close()
        task = Task(client, record, created)
        task.queued_at = sequence
        return task

    async def get(self, task_id: str, user_id: str | None = None) -> Task:
        """Re-attach to a task by its id (only the user it was submitted for may).

        Raises:
            PermissionDenied: no such task for ``user_id``.
        """
        client = self._client()
        return Task(client, await client.record(task_id, user_id), created=False)

    async def list(self, user_id: str | None = None, *, limit: int = 1000) -> list[Task]:
        """The tasks this runtime's identity submitted for ``user_id``, newest first."""
        client = self._client()
        return [
            Task(client, record, created=False, outcome=outcome)
            for record, outcome in await client.list(user_id, limit=limit)
        ]

    def _client(self) -> TaskClient:
        if self.client is None:
            raise Unavailable("durable tasks are off here: set A2A_TASKS=1 (JetStream is needed)")
        return self.client

    def serve(self, host: AgentHost, tg: TaskGroup) -> None:
        """Take ``host``'s agent's tasks in ``tg`` until :meth:`stop` (nothing when tasks are off)."""
        if self.store is None:
            return
        subjects = self.calls.bus.subjects
        taker = Taker(self.store, subjects, host.agent.name, host.instance_id)
        runner = TaskHost(host.agent, host.instance, host.slots)
        self._takers.append(taker)
        tg.start_soon(taker.run, runner.run, host.agent.max_concurrency)

    async def stop(self, grace: float, *, hand_back: bool = True) -> None:
        """Take no more tasks; running attempts get ``grace`` seconds, the rest are handed back
        (or, with ``hand_back=False``, dropped as in a crash: redelivered after the ack wait)."""
        async with anyio.create_task_group() as tg:
            for taker in self._takers:
                tg.start_soon(functools.partial(taker.stop, grace, hand_back=hand_back))
        self._takers.clear()


def store_config(
    settings: Settings, subjects: Subjects, *, replicas: int = 1, memory: bool = False
) -> StoreConfig:
    """The settings of the namespace's task stream and bucket (used when they are made). A
    runtime whose NATS user is named uses what the admin made (``a2a task setup``) as it is."""
    return StoreConfig(
        stream=subjects.task_stream,
        subjects=[subjects.task_queues()],
        bucket=subjects.task_bucket,
        ack_wait=settings.task_ack_wait,
        keep=settings.max_task_ttl + KEEP_AFTER,
        updates=subjects.task_updates,
        provisioned=settings.proven,
        replicas=replicas,
        memory=memory,
    )


async def open_tasks(
    settings: Settings, transport: Transport | None, store: DurableStore | None, calls: CallPath
) -> Tasks:
    """The runtime's durable tasks: on ``store`` when one is given, else on JetStream when
    ``settings.tasks`` is set (the stream and bucket are made if missing); else off.

    Raises:
        Unavailable: the JetStream store cannot be opened.
    """
    max_ttl = settings.max_task_ttl
    if store is None:
        if not settings.tasks or not isinstance(transport, NatsTransport):
            return Tasks(None, calls, max_ttl=max_ttl)
        jetstream = JetStreamDurable(transport, store_config(settings, calls.bus.subjects))
        try:
            await jetstream.open()
        except TransportError as exc:
            raise Unavailable(f"durable tasks need JetStream: {exc}") from None
        store = jetstream
    return Tasks(TaskStore(store), calls, max_ttl=max_ttl)
