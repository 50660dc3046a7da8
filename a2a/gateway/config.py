"""What an operator configures about the gateway (the bus and Redis come from ``Settings``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bus.subjects import validate_name

__all__ = ["GatewayConfig", "OriginCard"]

OriginCard = Literal["gateway", "agent"]


@dataclass(frozen=True)
class GatewayConfig:
    """
    Args:
        public_url: the base URL clients reach the gateway at, written into agent cards
            (default: the address it is bound to; a request's ``Host`` header never is).
        default_timeout: seconds a call may take when the client says nothing.
        max_timeout: the most a client may ask for (``metadata.timeoutMs``); also capped
            by the runtime's ``max_ttl``.
        task_ttl: seconds a task stays readable after its last change.
        name, description: the gateway's own agent card.

    Raises:
        ValueError: ``default_agent`` is not an agent name, or ``origin_card`` is
            ``"agent"`` without one.
    """

    public_url: str | None = None
    default_timeout: float = 60.0
    max_timeout: float = 600.0
    task_ttl: float = 7 * 24 * 3600.0
    name: str = "a2a-gateway"
    description: str = "Agents of an a2a-runtime bus, served over the A2A protocol"
    replica_ttl: float = 15.0
    """Seconds without a heartbeat after which a replica counts as gone (its running tasks fail)."""
    max_running: int = 1000
    """Tasks this replica runs at once; more are refused until some end."""
    max_running_per_user: int = 64
    """Tasks one user runs at once on this replica."""
    max_streams_elsewhere: int = 32
    """Streams this replica follows of tasks running on other replicas (one Redis connection each)."""
    stop_grace: float = 5.0
    """Seconds a stopping replica lets its running calls finish before it cancels them."""
    cancel_wait: float = 5.0
    """Seconds ``CancelTask`` waits for a running call to end before answering."""
    header_timeout: float = 10.0
    """Seconds a request's head may take to arrive (from the connection, or the request's first byte)."""
    body_timeout: float = 60.0
    """Seconds a request's body may take to arrive once its head has."""
    max_subscriptions_per_task: int = 10
    """``SubscribeToTask`` streams open at once on one task (on this replica)."""
    max_subscriptions_per_user: int = 100
    """``SubscribeToTask`` streams open at once by one user (on this replica)."""
    default_agent: str | None = None
    """The agent that takes a message on the gateway's own endpoint naming no skill and no
    agent, as if it were sent to ``/agents/<name>`` (None: the only live agent, if exactly
    one is; with several such a message is refused)."""
    max_push_configs_per_task: int = 10
    """Push-notification configurations of one task."""
    max_push_configs_per_user: int = 1000
    """Push-notification configurations of one user, over all their tasks."""
    push_allow_private: bool = False
    """Push URLs may name private, loopback and link-local addresses (multicast and unspecified
    ones stay refused)."""
    push_allow_cidrs: tuple[str, ...] = ()
    """Networks push URLs may name although they are not public (``"127.0.0.0/8"``)."""
    push_timeout: float = 10.0
    """Seconds one push notification's POST may take."""
    push_backoff: float = 1.0
    """Seconds before the first retry of a failed push; doubled on each failure in a row..."""
    push_backoff_max: float = 60.0
    """...up to this."""
    push_give_up: float = 24 * 3600.0
    """Seconds a receiver may keep failing before its pending notifications are dropped."""
    push_lease: float = 60.0
    """Seconds a replica holds a push channel it delivers (another takes it over after that)."""
    push_concurrency: int = 32
    """Push channels this replica delivers at once."""
    origin_card: OriginCard = "gateway"
    """What ``/.well-known/agent-card.json`` is: ``"gateway"``, one skill per capability and
    the routing rule in its description; ``"agent"``, the card of ``default_agent`` naming
    the gateway's own URL, for clients that only read the origin's card."""

    def __post_init__(self) -> None:
        if self.default_agent is not None:
            validate_name("agent", self.default_agent)
        if self.origin_card not in ("gateway", "agent"):
            raise ValueError(f"origin_card: 'gateway' or 'agent', not {self.origin_card!r}")
        if self.origin_card == "agent" and self.default_agent is None:
            raise ValueError("origin_card 'agent' serves the default agent's card: set default_agent")
