"""What a handler gets: the request, its deadline, and calls that inherit its lineage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bus.wire import NotificationEnvelope, Priority, RequestEnvelope, TokenUsage

from .route import Target

if TYPE_CHECKING:
    from ._host import AgentHost
    from .runtime import Runtime

__all__ = ["Context"]


class Context:
    """The handling of one request (or notification) by one agent instance.

    Calls made through the context are children of this request: they carry its
    conversation and user, one more hop and depth, this agent on the call chain, and a
    deadline no later than this request's own.
    """

    def __init__(
        self,
        runtime: Runtime,
        host: AgentHost,
        request: RequestEnvelope | NotificationEnvelope,
        deadline: float,
    ) -> None:
        self.runtime = runtime
        self.host = host
        self.request = request
        self.deadline = deadline
        self.usage = TokenUsage()
        self._holds_slot = False

    @property
    def agent(self) -> str:
        return self.host.agent.name

    @property
    def instance_id(self) -> str:
        return self.host.instance_id

    @property
    def user_id(self) -> str | None:
        return self.request.user_id

    @property
    def conversation_id(self) -> str:
        return self.request.conversation_id

    @property
    def correlation_id(self) -> str:
        return self.request.metadata.correlation_id

    @property
    def hop(self) -> int:
        return self.request.metadata.hop_count

    @property
    def depth(self) -> int:
        return self.request.metadata.depth

    def remaining(self) -> float:
        """Seconds left before this request's deadline."""
        return self.deadline - self.runtime.clock()

    async def call(
        self,
        target: Target,
        action: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        priority: Priority | None = None,
    ) -> Any:
        """Call another agent and return its result.

        ``target`` is an agent name, :func:`a2a.by_instance` or :func:`a2a.by_capability`.
        While the call is out, this handler's concurrency slot is lent to other
        requests, so agents calling each other cannot starve one another of slots.

        Raises:
            A2AError: the typed error the call ended with.
        """
        async with self._slot_lent():
            response = await self.runtime._request(
                target, action, params, parent=self, timeout=timeout, priority=priority
            )
        return response.payload.result

    async def notify(self, topic: str, params: dict[str, Any] | None = None) -> None:
        """Publish a notification on ``topic``; no reply is awaited."""
        await self.runtime._notify(topic, params, parent=self)

    def report_usage(self, prompt: int = 0, completion: int = 0) -> None:
        """Add tokens this handler consumed; they are reported back with the result."""
        self.usage.prompt += prompt
        self.usage.completion += completion
        self.usage.total = self.usage.prompt + self.usage.completion

    def _slot_lent(self) -> _LentSlot:
        return _LentSlot(self)


class _LentSlot:
    """Releases the handler's concurrency slot for the duration of an outgoing call."""

    __slots__ = ("ctx", "lent")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.lent = False

    async def __aenter__(self) -> None:
        if self.ctx._holds_slot:
            self.ctx.host.slots.release()
            self.ctx._holds_slot = False
            self.lent = True
            self.ctx.host._check_status()

    async def __aexit__(self, *exc: object) -> None:
        if self.lent:
            await self.ctx.host.slots.acquire()
            self.ctx._holds_slot = True
            self.ctx.host._check_status()
