"""A distributed agent-to-agent runtime on NATS and Redis.

Declare agents with :class:`Agent`, host and call them with :class:`Runtime`; every call
ends with a result or a typed :class:`A2AError` by its deadline. The rest lives in
public modules of its own:

    a2a.errors      the whole error tree (one class per stable code)
    a2a.wire        envelopes, hand-off types, profiles, audit records, JSON Schemas
    a2a.delegation  roster and policy, context builder, redaction, seed 000/002 views
    a2a.stores      audit log and conversation history
    a2a.testing     an in-memory broker and ready runtimes for your agents' tests
"""

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
