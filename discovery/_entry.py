"""One instance as a local view holds it."""

from __future__ import annotations

from dataclasses import dataclass

from .profile import AgentProfile
from .scoring import trust_weight

__all__ = ["ViewEntry"]


@dataclass(slots=True)
class ViewEntry:
    profile: AgentProfile
    proficiencies: dict[str, float]
    compact: bool = False
    """The instance reads the compact form as 1.5 writes it (it announced 1.5 or later)."""

    @property
    def agent_id(self) -> str:
        return self.profile.agent_id

    @property
    def load_ratio(self) -> float:
        p = self.profile
        return p.load / p.capacity if p.capacity > 0 else 0.0

    @property
    def trust(self) -> float:
        """The instance's published trust, 1 when it publishes none (an agent of the deployment)."""
        return trust_weight(self.profile.trust)
