"""The core: declaring agents, the call path, the handler context, hosting, and the runtime facade.

Layers only call down: route/settings/slots <- calls (caller side) <- context <- agent
<- admission/hosting <- presence <- runtime. State flows up by callbacks
(``Slots.on_change``, ``AgentHost.on_state``), never by calls into a higher layer.
"""

from .agent import Action as Action
from .agent import Agent as Agent
from .context import Context as Context
from .hosting import AgentHost as AgentHost
from .hosting import HostStats as HostStats
from .options import CallOptions as CallOptions
from .peer import Peer as Peer
from .peer import peer_agent as peer_agent
from .route import Route as Route
from .route import Target as Target
from .route import by_capability as by_capability
from .route import by_instance as by_instance
from .route import to_each as to_each
from .runtime import Runtime as Runtime
from .settings import Settings as Settings

__all__ = [
    "Action",
    "Agent",
    "AgentHost",
    "CallOptions",
    "Context",
    "HostStats",
    "Peer",
    "Route",
    "Runtime",
    "Settings",
    "Target",
    "by_capability",
    "by_instance",
    "peer_agent",
    "to_each",
]
