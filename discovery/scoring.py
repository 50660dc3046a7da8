"""The match score of seed 004: mean proficiency over the required capabilities."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["match_score"]


def match_score(proficiencies: Mapping[str, float], required: Sequence[str]) -> float:
    """Sum of the instance's proficiency in each required capability, over how many are required.

    A capability the instance lacks counts 0, so partial matches score lower than full
    ones; with nothing required every instance scores 0.
    """
    if not required:
        return 0.0
    return sum(proficiencies.get(cap, 0.0) for cap in required) / len(required)
