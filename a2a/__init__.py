"""A distributed agent-to-agent runtime on NATS and Redis.

Declare agents with :class:`Agent`, host and call them with :class:`Runtime`; every
call ends with a result or a typed :class:`A2AError` by its deadline.
"""

from bus.errors import A2AError as A2AError
from bus.errors import AgentError as AgentError
from bus.errors import AgentLost as AgentLost
from bus.errors import BudgetExceeded as BudgetExceeded
from bus.errors import Cancelled as Cancelled
from bus.errors import CycleDetected as CycleDetected
from bus.errors import DeadlineExceeded as DeadlineExceeded
from bus.errors import FanOutExceeded as FanOutExceeded
from bus.errors import InvalidEnvelope as InvalidEnvelope
from bus.errors import InvalidParams as InvalidParams
from bus.errors import LimitExceeded as LimitExceeded
from bus.errors import MaxDepthExceeded as MaxDepthExceeded
from bus.errors import MaxHopsExceeded as MaxHopsExceeded
from bus.errors import NoCapableAgent as NoCapableAgent
from bus.errors import NoResponders as NoResponders
from bus.errors import Overloaded as Overloaded
from bus.errors import PayloadTooLarge as PayloadTooLarge
from bus.errors import PermissionDenied as PermissionDenied
from bus.errors import Unavailable as Unavailable
from bus.errors import UnknownAction as UnknownAction
from bus.errors import UnsupportedVersion as UnsupportedVersion
from bus.handoff import Artifact as Artifact
from bus.handoff import ChatMessage as ChatMessage
from bus.handoff import ContextFilter as ContextFilter
from bus.handoff import Delegation as Delegation
from bus.handoff import DelegationResult as DelegationResult
from bus.handoff import FilteredContext as FilteredContext
from bus.handoff import Grants as Grants
from bus.handoff import HandoffData as HandoffData
from bus.handoff import SourceRef as SourceRef
from bus.wire import PROTOCOL_VERSION as PROTOCOL_VERSION
from bus.wire import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
from bus.wire import Envelope as Envelope
from bus.wire import ErrorEnvelope as ErrorEnvelope
from bus.wire import ErrorInfo as ErrorInfo
from bus.wire import Metadata as Metadata
from bus.wire import NotificationEnvelope as NotificationEnvelope
from bus.wire import Payload as Payload
from bus.wire import RequestEnvelope as RequestEnvelope
from bus.wire import ResponseEnvelope as ResponseEnvelope
from bus.wire import TokenUsage as TokenUsage
from discovery import AgentCapability as AgentCapability
from discovery import AgentProfile as AgentProfile
from discovery import Registry as Registry

from .agent import Agent as Agent
from .audit import AuditRecord as AuditRecord
from .config import Settings as Settings
from .context import Context as Context
from .context_builder import ContextBuilder as ContextBuilder
from .context_builder import TokenCounter as TokenCounter
from .context_builder import estimate_tokens as estimate_tokens
from .delegation import DelegationRequest as DelegationRequest
from .delegation import DelegationResponse as DelegationResponse
from .delegation import DelegationStep as DelegationStep
from .delegation import FanOutResult as FanOutResult
from .delegation import SubAgentArgs as SubAgentArgs
from .delegation import SubAgentResult as SubAgentResult
from .history import HistoryStore as HistoryStore
from .history import Interaction as Interaction
from .policy import Policy as Policy
from .redact import Redactor as Redactor
from .redact import Rule as Rule
from .roster import AgentRules as AgentRules
from .roster import Roster as Roster
from .roster import RosterError as RosterError
from .route import Route as Route
from .route import by_capability as by_capability
from .route import by_instance as by_instance
from .runtime import Runtime as Runtime
from .telemetry import Telemetry as Telemetry

__all__ = [
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "A2AError",
    "Agent",
    "AgentCapability",
    "AgentError",
    "AgentLost",
    "AgentProfile",
    "AgentRules",
    "Artifact",
    "AuditRecord",
    "BudgetExceeded",
    "Cancelled",
    "ChatMessage",
    "Context",
    "ContextBuilder",
    "ContextFilter",
    "CycleDetected",
    "DeadlineExceeded",
    "Delegation",
    "DelegationRequest",
    "DelegationResponse",
    "DelegationResult",
    "DelegationStep",
    "Envelope",
    "ErrorEnvelope",
    "ErrorInfo",
    "FanOutExceeded",
    "FanOutResult",
    "FilteredContext",
    "Grants",
    "HandoffData",
    "HistoryStore",
    "Interaction",
    "InvalidEnvelope",
    "InvalidParams",
    "LimitExceeded",
    "MaxDepthExceeded",
    "MaxHopsExceeded",
    "Metadata",
    "NoCapableAgent",
    "NoResponders",
    "NotificationEnvelope",
    "Overloaded",
    "Payload",
    "PayloadTooLarge",
    "PermissionDenied",
    "Policy",
    "Redactor",
    "Registry",
    "RequestEnvelope",
    "ResponseEnvelope",
    "Roster",
    "RosterError",
    "Route",
    "Rule",
    "Runtime",
    "Settings",
    "SourceRef",
    "SubAgentArgs",
    "SubAgentResult",
    "Telemetry",
    "TokenCounter",
    "TokenUsage",
    "Unavailable",
    "UnknownAction",
    "UnsupportedVersion",
    "by_capability",
    "by_instance",
    "estimate_tokens",
]
