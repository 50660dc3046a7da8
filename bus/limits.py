"""Safety limits checked on both sides of every hop.

The caller checks before it publishes; the callee checks again on receipt and never
trusts the caller's checks. Each function raises the typed error of its limit.
"""

from __future__ import annotations

from .errors import (
    BudgetExceeded,
    CycleDetected,
    DeadlineExceeded,
    FanOutExceeded,
    MaxDepthExceeded,
    MaxHopsExceeded,
)
from .wire import DEFAULT_TTL_MS, Metadata

__all__ = [
    "check_budget",
    "check_cycle",
    "check_depth",
    "check_fan_out",
    "check_hops",
    "local_deadline",
]


def check_hops(meta: Metadata) -> None:
    """Refuse a message that has travelled more than ``maxHops`` hops."""
    if meta.hop_count > meta.max_hops:
        raise MaxHopsExceeded(
            f"hop count {meta.hop_count} exceeds maxHops {meta.max_hops} (possible routing loop)",
            hop=meta.hop_count,
            details={"hopCount": meta.hop_count, "maxHops": meta.max_hops},
        )


def check_depth(meta: Metadata) -> None:
    """Refuse a delegation at depth ``maxDepth`` or deeper (the user's request is depth 0)."""
    if meta.depth >= meta.max_depth:
        raise MaxDepthExceeded(
            f"delegation depth {meta.depth} reaches the limit of {meta.max_depth}; "
            "return results to the caller instead of delegating further",
            hop=meta.hop_count,
            details={"depth": meta.depth, "maxDepth": meta.max_depth},
        )


def check_cycle(meta: Metadata, target: str) -> None:
    """Refuse a request to an agent already on the call chain (A -> B -> C -> A)."""
    if target in meta.call_chain:
        chain = " -> ".join([*meta.call_chain, target])
        raise CycleDetected(
            f"{target} is already on the call chain: {chain}",
            hop=meta.hop_count,
            details={"callChain": [*meta.call_chain, target]},
        )


def local_deadline(meta: Metadata, now: float) -> float:
    """Deadline on this machine's monotonic clock, from the remaining time on the wire.

    Raises DeadlineExceeded if no time is left. Wall clocks of different machines are
    never compared: ``ttlMs`` is the time left when the sender published.
    """
    ttl_ms = DEFAULT_TTL_MS if meta.ttl_ms is None else meta.ttl_ms
    if ttl_ms <= 0:
        raise DeadlineExceeded("the call's deadline passed before it arrived", hop=meta.hop_count)
    return now + ttl_ms / 1000.0


def check_fan_out(meta: Metadata) -> None:
    """Refuse a call sent while its parent already had ``maxFanOut`` others in flight."""
    if meta.fan_out is not None and meta.max_fan_out is not None and meta.fan_out > meta.max_fan_out:
        raise FanOutExceeded(
            f"{meta.fan_out} concurrent delegates exceed the limit of {meta.max_fan_out}",
            hop=meta.hop_count,
            details={"fanOut": meta.fan_out, "maxFanOut": meta.max_fan_out},
        )


def check_budget(meta: Metadata, estimate: int = 0) -> None:
    """Refuse a call whose token budget cannot pay for it (``estimate``: its expected cost)."""
    if meta.budget is not None and (meta.budget <= 0 or meta.budget < estimate):
        raise BudgetExceeded(
            f"token budget of {meta.budget} cannot pay for this call"
            + (f" (estimated {estimate})" if estimate else ""),
            hop=meta.hop_count,
            details={"budget": meta.budget, "estimate": estimate},
        )
