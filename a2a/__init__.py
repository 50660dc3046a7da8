"""A distributed agent-to-agent runtime on NATS and Redis.

Declare agents with :class:`Agent`, host and call them with :class:`Runtime`; every call
ends with a result or a typed :class:`A2AError` by its deadline. The rest lives in
public modules of its own:

    a2a.errors      the whole error tree (one class per stable code)
    a2a.wire        envelopes, hand-off types, profiles, audit records, JSON Schemas
    a2a.delegation  roster and policy, context builder, redaction, seed 000/002 views
    a2a.stores      audit log and conversation history
    a2a.testing     an in-memory broker and ready runtimes for your agents' tests

The names below are imported when first used (``from a2a import Runtime`` imports the
runtime then), so that ``import a2a`` and the ``a2a`` command start at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each on first use
    from bus.errors import A2AError as A2AError
    from bus.handoff import Artifact as Artifact
    from bus.handoff import ContextFilter as ContextFilter
    from bus.handoff import DelegationResult as DelegationResult
    from bus.handoff import HandoffData as HandoffData
    from bus.handoff import SourceRef as SourceRef
    from bus.wire import TokenUsage as TokenUsage
    from discovery import AgentCapability as AgentCapability
    from discovery import AgentProfile as AgentProfile
    from discovery import Registry as Registry

    from .core.agent import Agent as Agent
    from .core.context import Context as Context
    from .core.options import CallOptions as CallOptions
    from .core.peer import Peer as Peer
    from .core.peer import peer_agent as peer_agent
    from .core.retry import Retry as Retry
    from .core.route import Route as Route
    from .core.route import Target as Target
    from .core.route import by_capability as by_capability
    from .core.route import by_instance as by_instance
    from .core.route import to_each as to_each
    from .core.runtime import Runtime as Runtime
    from .core.settings import Settings as Settings
    from .delegation.context_builder import ContextBuilder as ContextBuilder
    from .delegation.policy import Policy as Policy
    from .delegation.redact import Redactor as Redactor
    from .delegation.redact import Rule as Rule
    from .delegation.roster import AgentRules as AgentRules
    from .delegation.roster import Roster as Roster
    from .delegation.views import DelegationRequest as DelegationRequest
    from .delegation.views import DelegationResponse as DelegationResponse
    from .delegation.views import DelegationStep as DelegationStep
    from .delegation.views import FanOutResult as FanOutResult
    from .observability.telemetry import Telemetry as Telemetry
    from .stores.history import HistoryStore as HistoryStore

_WHERE = {
    "A2AError": "bus.errors",
    "Artifact": "bus.handoff",
    "ContextFilter": "bus.handoff",
    "DelegationResult": "bus.handoff",
    "HandoffData": "bus.handoff",
    "SourceRef": "bus.handoff",
    "TokenUsage": "bus.wire",
    "AgentCapability": "discovery",
    "AgentProfile": "discovery",
    "Registry": "discovery",
    "Agent": "a2a.core.agent",
    "Context": "a2a.core.context",
    "CallOptions": "a2a.core.options",
    "Peer": "a2a.core.peer",
    "peer_agent": "a2a.core.peer",
    "Retry": "a2a.core.retry",
    "Route": "a2a.core.route",
    "Target": "a2a.core.route",
    "by_capability": "a2a.core.route",
    "by_instance": "a2a.core.route",
    "to_each": "a2a.core.route",
    "Runtime": "a2a.core.runtime",
    "Settings": "a2a.core.settings",
    "ContextBuilder": "a2a.delegation.context_builder",
    "Policy": "a2a.delegation.policy",
    "Redactor": "a2a.delegation.redact",
    "Rule": "a2a.delegation.redact",
    "AgentRules": "a2a.delegation.roster",
    "Roster": "a2a.delegation.roster",
    "DelegationRequest": "a2a.delegation.views",
    "DelegationResponse": "a2a.delegation.views",
    "DelegationStep": "a2a.delegation.views",
    "FanOutResult": "a2a.delegation.views",
    "Telemetry": "a2a.observability.telemetry",
    "HistoryStore": "a2a.stores.history",
}
"""Where each public name is defined."""

__all__ = [
    "A2AError",
    "Agent",
    "AgentCapability",
    "AgentProfile",
    "AgentRules",
    "Artifact",
    "CallOptions",
    "Context",
    "ContextBuilder",
    "ContextFilter",
    "DelegationRequest",
    "DelegationResponse",
    "DelegationResult",
    "DelegationStep",
    "FanOutResult",
    "HandoffData",
    "HistoryStore",
    "Peer",
    "Policy",
    "Redactor",
    "Registry",
    "Retry",
    "Roster",
    "Route",
    "Rule",
    "Runtime",
    "Settings",
    "SourceRef",
    "Target",
    "Telemetry",
    "TokenUsage",
    "by_capability",
    "by_instance",
    "peer_agent",
    "to_each",
]


def __getattr__(name: str) -> Any:
    """A public name, imported on first use; a sub-module (``a2a.wire``) likewise."""
    module = _WHERE.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
    else:
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value  # found once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
