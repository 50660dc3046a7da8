"""How routing by capability scores an instance: mean proficiency (seed 004) times trust.

An instance that publishes no trust score (an agent of the deployment) is trusted as 1,
so its score is its match score; one trusted less than the routing floor is never
chosen (``discovery.trust``). The registry's server-side search computes the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["match_score", "routable", "trust_weight"]


def match_score(proficiencies: Mapping[str, float], required: Sequence[str]) -> float:
    """Sum of the instance's proficiency in each required capability, over how many are required.

    A capability the instance lacks counts 0, so partial matches score lower than full
    ones; with nothing required every instance scores 0.
    """
    if not required:
        return 0.0
    return sum(proficiencies.get(cap, 0.0) for cap in required) / len(required)


def trust_weight(trust: float | None) -> float:
    """What a match score is multiplied by: the published trust, or 1 when none is published."""
    return 1.0 if trust is None else trust


def routable(trust: float | None, floor: float) -> bool:
    """Whether routing by capability may choose an instance with this trust (none: always)."""
    return trust is None or trust >= floor
