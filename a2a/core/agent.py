"""Declaring agents: a name, capabilities, and per-action handlers."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import jsonschema
import jsonschema.exceptions

from bus.errors import InvalidParams
from bus.subjects import validate_name
from discovery import check_limits
from discovery.profile import AgentCapability, AgentProfile, validate_capability_id
from discovery.trust import TrustTracker

from .context import Context

__all__ = ["Action", "Agent", "Handler", "Lifespan", "NotificationHandler"]

Handler = Callable[[Context, dict[str, Any]], Awaitable[Any]]
NotificationHandler = Callable[[Context, dict[str, Any]], Awaitable[None]]
Lifespan = Callable[[], AbstractAsyncContextManager[object]]
"""Entered when an instance starts serving and left when it stops (connections, processes)."""
H = TypeVar("H", bound=Handler)
N = TypeVar("N", bound=NotificationHandler)


@dataclass(frozen=True)
class Action:
    """One action an agent serves, with the JSON Schema its parameters must meet."""

    name: str
    handler: Handler
    input_schema: Mapping[str, Any] | None = None
    description: str = ""
    estimated_tokens: int = 0
    """Expected token cost; a call whose budget is smaller is refused on arrival."""
    _validator: jsonschema.protocols.Validator | None = field(default=None, repr=False)

    @classmethod
    def build(
        cls,
        name: str,
        handler: Handler,
        input_schema: Mapping[str, Any] | None,
        description: str = "",
        estimated_tokens: int = 0,
    ) -> Action:
        validator = None
        if input_schema is not None:
            validator_cls = jsonschema.validators.validator_for(input_schema)
            validator_cls.check_schema(input_schema)
            validator = validator_cls(input_schema)
        return cls(name, handler, input_schema, description, estimated_tokens, validator)

    def validate(self, params: dict[str, Any]) -> None:
        """Raise InvalidParams naming the failing path unless ``params`` meet the schema."""
        if self._validator is None:
            return
        error = jsonschema.exceptions.best_match(self._validator.iter_errors(params))
        if error is not None:
            raise InvalidParams(
                f"invalid parameters for {self.name!r}: {error.message} at {error.json_path}",
                details={"path": error.json_path, "validator": str(error.validator)},
            )


class Agent:
    """An agent definition; host it with :meth:`a2a.Runtime.serve`.

    ::

        reader = Agent("reader", capabilities=[AgentCapability(id="code.read", proficiency=0.9)])

        @reader.action("read", input_schema={"type": "object", "required": ["path"]})
        async def read(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
            ...

    Args:
        name: the agent's name; every instance of it shares the queue group of that name.
        capabilities: what the agent offers the registry (ids, or full AgentCapability).
            An id outside :data:`discovery.profile.CAPABILITY_ID_PATTERN` (say with a space)
            raises ValueError here, since every registry view would refuse the instance.
        max_concurrency: handlers run at once per instance; at that load it reports busy.
        max_queue: requests that may wait for a slot; beyond that they get OVERLOADED.
        lifespan: an async context manager factory entered while an instance serves (for
            the connection or process an agent forwards to; see :func:`a2a.core.peer.peer_agent`).
        redact_params: whether the parameters of the calls, tasks and notifications its
            handlers send are redacted (None: the runtime's ``Settings.redact_params``, on by
            default). False suits an agent whose callees need what it passes in clear (a
            mailer's address, a provisioner's password); a call's own ``redact_params`` wins.
    """

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        version: str = "0.1.0",
        capabilities: Sequence[AgentCapability | str] = (),
        max_concurrency: int = 32,
        max_queue: int = 1000,
        metadata: Mapping[str, Any] | None = None,
        lifespan: Lifespan | None = None,
        trust: TrustTracker | None = None,
        redact_params: bool | None = None,
    ) -> None:
        self.name = validate_name("agent name", name)
        self.trust = trust
        """For an agent forwarding to an external peer: its tracker; every heartbeat publishes its score."""
        self.description = description
        self.version = version
        self.capabilities = [_capability(c) for c in capabilities]
        if max_concurrency < 1 or max_queue < 0:
            raise ValueError("max_concurrency must be at least 1 and max_queue at least 0")
        self.max_concurrency = max_concurrency
        self.max_queue = max_queue
        self.metadata = dict(metadata or {})
        # What the registry would refuse is refused here, where the agent is declared.
        check_limits(
            AgentProfile(
                agent_id=f"{self.name}-00000000",
                name=self.name,
                version=version,
                description=description,
                capabilities=self.capabilities,
                metadata=self.metadata,
            )
        )
        self.lifespan = lifespan
        self.redact_params = redact_params
        self.actions: dict[str, Action] = {}
        self.topics: dict[str, NotificationHandler] = {}
        self.fallback: Handler | None = None
        """Serves every action not declared (set with :meth:`forward_unknown`)."""

    def action(
        self,
        name: str | None = None,
        *,
        input_schema: Mapping[str, Any] | None = None,
        description: str = "",
        estimated_tokens: int = 0,
    ) -> Callable[[H], H]:
        """Register the decorated coroutine ``handler(ctx, params)`` for an action.

        The handler's return value must be JSON-serialisable; raising an A2AError
        sends that typed error back, any other exception goes back as AGENT_ERROR.
        ``estimated_tokens`` refuses calls whose token budget is smaller on arrival.
        """

        def decorate(handler: H) -> H:
            action = name or handler.__name__
            _require_async(handler, f"{self.name}'s action {action!r}")
            if action in self.actions:
                raise ValueError(f"{self.name} already has an action {action!r}")
            self.actions[action] = Action.build(
                action,
                handler,
                input_schema,
                description or (handler.__doc__ or "").strip(),
                estimated_tokens,
            )
            return handler

        return decorate

    def forward_unknown(self, handler: H) -> H:
        """Register the decorated coroutine as the handler of every undeclared action.

        It runs under the same checks and limits as declared actions (no schema, as none
        is known); ``ctx.action`` names the action asked for. Agents that forward to
        something outside this process (a remote A2A agent, a local program) use it.
        """
        _require_async(handler, f"{self.name}'s handler of undeclared actions")
        self.fallback = handler
        return handler

    def on(self, topic: str) -> Callable[[N], N]:
        """Register the decorated coroutine ``handler(ctx, params)`` for notifications on ``topic``.

        One instance of each subscribed agent receives each notification.
        """

        def decorate(handler: N) -> N:
            _require_async(handler, f"{self.name}'s handler of {topic!r}")
            self.topics[topic] = handler
            return handler

        return decorate

    def resolve(self, name: str, *, notification: bool = False) -> Action | None:
        """The action serving ``name`` (a topic's handler for a notification), or None."""
        if notification and name in self.topics:
            return Action(name, self.topics[name])
        action = self.actions.get(name)
        if action is None and self.fallback is not None:
            return Action(name, self.fallback)
        return action

    def action_specs(self) -> dict[str, Any]:
        """``actionSpecs``: each action's description and input schema, for those that have one.

        Entry points that describe agents to other protocols (the A2A gateway's agent cards)
        read them from the registry; actions with neither are listed in ``actions`` only.
        """
        specs: dict[str, Any] = {}
        for name, action in self.actions.items():
            spec: dict[str, Any] = {}
            if action.description:
                spec["description"] = action.description
            if action.input_schema is not None:
                spec["inputSchema"] = dict(action.input_schema)
            if spec:
                specs[name] = spec
        return {"actionSpecs": specs} if specs else {}

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, actions={sorted(self.actions)})"


def _capability(capability: AgentCapability | str) -> AgentCapability:
    """A declared capability, checked as the registry will check it (ValueError naming it)."""
    if not isinstance(capability, AgentCapability):
        return AgentCapability(id=validate_capability_id(capability))
    validate_capability_id(capability.id)
    if not 0.0 <= capability.proficiency <= 1.0:
        raise ValueError(
            f"capability {capability.id!r}: proficiency {capability.proficiency!r} is not in 0..1"
        )
    return capability


def _require_async(handler: Callable[..., Any], what: str) -> None:
    """Refuse a plain ``def`` handler when it is registered (its call could not be awaited).

    Raises:
        TypeError: ``handler`` is not a coroutine function (nor a partial of one, nor an
            object whose ``__call__`` is one).
    """
    target = handler.func if isinstance(handler, functools.partial) else handler
    call = type(target).__call__ if not inspect.isroutine(target) else None
    if inspect.iscoroutinefunction(target) or (call is not None and inspect.iscoroutinefunction(call)):
        return
    raise TypeError(f"{what} must be an async function (async def), not {type(target).__name__} {target!r}")
