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

from typing import TYPE_CHECKING

from ._lazy import lazy_names

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
    "Agent": ".core.agent",
    "Context": ".core.context",
    "CallOptions": ".core.options",
    "Peer": ".core.peer",
    "peer_agent": ".core.peer",
    "Retry": ".core.retry",
    "Route": ".core.route",
    "Target": ".core.route",
    "by_capability": ".core.route",
    "by_instance": ".core.route",
    "to_each": ".core.route",
    "Runtime": ".core.runtime",
    "Settings": ".core.settings",
    "ContextBuilder": ".delegation.context_builder",
    "Policy": ".delegation.policy",
    "Redactor": ".delegation.redact",
    "Rule": ".delegation.redact",
    "AgentRules": ".delegation.roster",
    "Roster": ".delegation.roster",
    "DelegationRequest": ".delegation.views",
    "DelegationResponse": ".delegation.views",
    "DelegationStep": ".delegation.views",
    "FanOutResult": ".delegation.views",
    "Telemetry": ".observability.telemetry",
    "HistoryStore": ".stores.history",
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


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals(), __all__)
