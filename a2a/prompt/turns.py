"""How long one turn of a local agent may take: the seed's rule."""

from __future__ import annotations

from .frames import Constraints

__all__ = ["TOOL_TURN_SECONDS", "TURN_SECONDS", "turn_seconds"]

TURN_SECONDS = 60.0
"""A turn without tool use."""
TOOL_TURN_SECONDS = 120.0
"""A turn with tool use; also the most any turn may take."""


def turn_seconds(
    constraints: Constraints, timeout: float = TURN_SECONDS, tool_timeout: float = TOOL_TURN_SECONDS
) -> float:
    """Seconds one turn may take: ``timeout``, or ``tool_timeout`` with ``allow_tool_use``, lowered
    (never raised) by ``local_turn_timeout_ms``, and never more than ``tool_timeout``."""
    limit = tool_timeout if constraints.allow_tool_use else timeout
    if constraints.local_turn_timeout_ms is not None:
        limit = min(limit, constraints.local_turn_timeout_ms / 1000)
    return min(limit, tool_timeout)
