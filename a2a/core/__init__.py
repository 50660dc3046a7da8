"""The core: declaring agents, the call path, the handler context, hosting, and the runtime facade.

Layers only call down: route/settings/slots <- calls (caller side) <- context <- agent
<- admission/hosting <- presence <- runtime. State flows up by callbacks
(``Slots.on_change``, ``AgentHost.on_state``), never by calls into a higher layer.

The names below are imported when first used, like those of :mod:`a2a`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each on first use
    from .agent import Action as Action
    from .agent import Agent as Agent
    from .context import Context as Context
    from .host_stats import HostStats as HostStats
    from .hosting import AgentHost as AgentHost
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

_WHERE = {
    "Action": ".agent",
    "Agent": ".agent",
    "Context": ".context",
    "AgentHost": ".hosting",
    "HostStats": ".host_stats",
    "CallOptions": ".options",
    "Peer": ".peer",
    "peer_agent": ".peer",
    "Route": ".route",
    "Target": ".route",
    "by_capability": ".route",
    "by_instance": ".route",
    "to_each": ".route",
    "Runtime": ".runtime",
    "Settings": ".settings",
}

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


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals(), __all__)
