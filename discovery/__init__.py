"""Capability discovery: a Redis-backed registry of agent instances (or one in memory, for tests)
and a local view of it."""

from ._library import LIBRARY as LIBRARY
from ._library import call_function as call_function
from ._library import load_library as load_library
from .limits import EntryTooLarge as EntryTooLarge
from .limits import check_limits as check_limits
from .memory import MemoryRegistry as MemoryRegistry
from .memory import MemoryRegistryServer as MemoryRegistryServer
from .profile import AgentCapability as AgentCapability
from .profile import AgentProfile as AgentProfile
from .profile import AgentStatus as AgentStatus
from .profile import CapabilityCategory as CapabilityCategory
from .profile import CardSignature as CardSignature
from .profile import Resources as Resources
from .registry import Candidate as Candidate
from .registry import InstanceState as InstanceState
from .registry import Registry as Registry
from .registry import RegistryKeys as RegistryKeys
from .scoring import match_score as match_score
from .trust import DEFAULT_TRUST_FLOOR as DEFAULT_TRUST_FLOOR
from .trust import TrustTracker as TrustTracker
from .view import LocalView as LocalView
from .view import ViewEntry as ViewEntry

__all__ = [
    "DEFAULT_TRUST_FLOOR",
    "LIBRARY",
    "AgentCapability",
    "AgentProfile",
    "AgentStatus",
    "Candidate",
    "CapabilityCategory",
    "CardSignature",
    "EntryTooLarge",
    "InstanceState",
    "LocalView",
    "MemoryRegistry",
    "MemoryRegistryServer",
    "Registry",
    "RegistryKeys",
    "Resources",
    "TrustTracker",
    "ViewEntry",
    "call_function",
    "check_limits",
    "load_library",
    "match_score",
]
