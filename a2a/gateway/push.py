"""Push notifications: the four configuration operations, and the hook that queues deliveries.

A configuration belongs to one task and is managed by the task's owner only (another user's
task is not found, as for ``GetTask``). A task has at most ``max_push_configs_per_task``
configurations and a user ``max_push_configs_per_user``. Its URL must pass the
:class:`~a2a.gateway.push_guard.PushGuard`, when it is created and before every delivery.

Every configuration has a signing secret (see :mod:`a2a.gateway.push_sender` for the
headers): the ``credentials`` of ``authentication {"scheme": "HMAC-SHA256"}`` when the
client gives them (16 characters at least), else one the gateway makes; a configuration
created without ``authentication`` comes back with ``{"scheme": "HMAC-SHA256",
"credentials": <the secret>}``, so the client learns it. With another scheme (``Bearer``,
...) the receiver authenticates the gateway by it, and the signature's secret is not shown.

A configuration created with ``CreateTaskPushNotificationConfig`` is told the events after
its creation; one given in ``SendMessage``'s ``configuration`` every event of the new task.
A task with no configuration costs one ``HKEYS`` in the pipeline that saves its events.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable

import msgspec

from bus.ids import new_id
from transports.a2a_http import (
    A2AProtocolError,
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    TaskPushNotificationConfig,
)
from transports.a2a_http import errors as e

from .config import GatewayConfig
from .push_guard import PushGuard, Refused
from .push_sender import HMAC_SCHEME, PushSender
from .push_store import PushStore, StoredConfig
from .tasks import StoredTask, TaskStore

__all__ = ["PushNotifications"]

Owned = Callable[[str, str, str | None], Awaitable[StoredTask]]
"""``GatewayService.owned``: the task if the principal may see it, else TaskNotFound."""

_CONFIG_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
"""A config id: letters, digits, ``_`` and ``-`` (safe in Redis keys and delivery channels),
long enough for a client's prefix and a UUID."""
_MIN_SECRET = 16


class PushNotifications:
    """Push-notification configurations and delivery for one gateway replica."""

    def __init__(self, tasks: TaskStore, config: GatewayConfig, owned: Owned, replica: str) -> None:
        self.config = config
        self.owned = owned
        self.store = PushStore(tasks)
        self.guard = PushGuard(allow_private=config.push_allow_private, allow_cidrs=config.push_allow_cidrs)
        self.sender = PushSender(self.store, tasks, self.guard, config, replica)

    async def changed(self, task_id: str, config_ids: list[str]) -> None:
        """New events of a task with these configurations: queue their delivery."""
        await self.store.wake(task_id, config_ids)
        self.sender.wake()

    # -- operations ------------------------------------------------------------------

    async def prepare(self, principal: str, config: TaskPushNotificationConfig) -> StoredConfig:
        """A configuration checked and completed (id, secret); not stored yet.

        Raises:
            A2AProtocolError: a bad id, URL or secret, or the user has too many configurations.
        """
        config_id = config.id or new_id()
        if not _CONFIG_ID.match(config_id):
            raise A2AProtocolError(e.INVALID_PARAMS, "id: 1-128 letters, digits, _ or -")
        try:
            await self.guard.check(config.url)
        except Refused as exc:
            raise A2AProtocolError(e.INVALID_PARAMS, str(exc)) from None
        auth = config.authentication
        if auth is None:
            secret = secrets.token_urlsafe(32)
            auth = AuthenticationInfo(scheme=HMAC_SCHEME, credentials=secret)
        elif auth.scheme.upper() == HMAC_SCHEME:
            if len(auth.credentials) < _MIN_SECRET:
                raise A2AProtocolError(
                    e.INVALID_PARAMS, f"authentication.credentials: at least {_MIN_SECRET} characters"
                )
            secret = auth.credentials
        else:
            secret = secrets.token_urlsafe(32)
        if await self.store.owned_count(principal) >= self.config.max_push_configs_per_user:
            raise A2AProtocolError(
                e.UNSUPPORTED_OPERATION,
                f"you have {self.config.max_push_configs_per_user} push notification configs, "
                "the most allowed: delete one first",
            )
        shown = msgspec.structs.replace(config, id=config_id, tenant="", authentication=auth)
        return StoredConfig(config=shown, owner=principal, secret=secret)

    async def attach(self, task: StoredTask, prepared: StoredConfig, *, sent: int | None = None) -> None:
        """Store a prepared configuration on ``task``; deliveries start after event ``sent``
        (None: the task's latest)."""
        prepared.config = msgspec.structs.replace(prepared.config, task_id=task.task.id)
        await self.store.put(prepared, task.seq if sent is None else sent)
        self.sender.wake()

    async def create(
        self, principal: str, config: TaskPushNotificationConfig, agent: str | None
    ) -> TaskPushNotificationConfig:
        task = await self.owned(principal, config.task_id, agent)
        existing = await self.store.config_ids(task.task.id)
        prepared = await self.prepare(principal, config)
        if prepared.config.id not in existing and len(existing) >= self.config.max_push_configs_per_task:
            raise A2AProtocolError(
                e.UNSUPPORTED_OPERATION,
                f"task {task.task.id} has {len(existing)} push notification configs, the most allowed",
            )
        await self.attach(task, prepared)
        return prepared.config

    async def get(
        self, principal: str, request: GetTaskPushNotificationConfigRequest, agent: str | None
    ) -> TaskPushNotificationConfig:
        task = await self.owned(principal, request.task_id, agent)
        stored = await self.store.get(task.task.id, request.id) if _CONFIG_ID.match(request.id) else None
        if stored is None:
            raise A2AProtocolError(
                e.TASK_NOT_FOUND, f"push notification config {request.id} of task {request.task_id} not found"
            )
        return stored.config

    async def list(
        self, principal: str, request: ListTaskPushNotificationConfigsRequest, agent: str | None
    ) -> ListTaskPushNotificationConfigsResponse:
        """All of the task's configurations (a task has few: one page)."""
        task = await self.owned(principal, request.task_id, agent)
        return ListTaskPushNotificationConfigsResponse(
            configs=[c.config for c in await self.store.all(task.task.id)]
        )

    async def delete(
        self, principal: str, request: DeleteTaskPushNotificationConfigRequest, agent: str | None
    ) -> None:
        """Remove a configuration and its pending deliveries (none: nothing to do)."""
        task = await self.owned(principal, request.task_id, agent)
        if _CONFIG_ID.match(request.id):
            await self.store.delete(task.task.id, request.id, principal)
