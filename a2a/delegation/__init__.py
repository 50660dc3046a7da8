"""Delegation and policy: who may call whom (roster), what context travels, PII redaction, seed views."""

from .context_builder import ContextBuilder as ContextBuilder
from .context_builder import TokenCounter as TokenCounter
from .context_builder import estimate_tokens as estimate_tokens
from .policy import Policy as Policy
from .redact import Redactor as Redactor
from .redact import Rule as Rule
from .roster import AgentRules as AgentRules
from .roster import Roster as Roster
from .roster import RosterError as RosterError
from .views import DelegationRequest as DelegationRequest
from .views import DelegationResponse as DelegationResponse
from .views import DelegationStep as DelegationStep
from .views import FanOutResult as FanOutResult
from .views import GatherPolicy as GatherPolicy
from .views import SubAgentArgs as SubAgentArgs
from .views import SubAgentResult as SubAgentResult
from .views import as_delegation_result as as_delegation_result

__all__ = [
    "AgentRules",
    "ContextBuilder",
    "DelegationRequest",
    "DelegationResponse",
    "DelegationStep",
    "FanOutResult",
    "GatherPolicy",
    "Policy",
    "Redactor",
    "Roster",
    "RosterError",
    "Rule",
    "SubAgentArgs",
    "SubAgentResult",
    "TokenCounter",
    "as_delegation_result",
    "estimate_tokens",
]
