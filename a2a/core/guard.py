"""What a callee decides by itself about a request, whatever its envelope claims.

* its own limits: ``ttlMs``, ``maxHops``, ``maxDepth`` and ``budget`` are capped by this
  runtime's settings (the smaller of the envelope's and its own wins);
* the sender: with a NATS user, nats-server proves who published (the sender token of
  the subject), and ``sourceAgentId`` must name that identity;
* the lineage: ``callChain`` holds one agent per level of ``depth`` and ends with the sender;
* the user: when entry-point keys are configured, ``userId`` must come with a grant
  signed by one of them (:mod:`a2a.core.grants`); with grants required, every call needs one.
"""

from __future__ import annotations

from bus.errors import InvalidEnvelope, PermissionDenied
from bus.wire import DEFAULT_TTL_MS, NotificationEnvelope, RequestEnvelope

from .grants import GrantVerifier
from .settings import Settings

__all__ = ["Guard"]


class Guard:
    """One runtime's callee-side rules; :meth:`admit` runs on every request it receives."""

    def __init__(
        self,
        *,
        max_ttl: float,
        max_hops: int,
        max_depth: int,
        max_budget: int | None = None,
        verify_sender: bool = False,
        grants: GrantVerifier | None = None,
        require_grants: bool = False,
    ) -> None:
        self.max_ttl_ms = int(max_ttl * 1000)
        self.max_hops = max_hops
        self.max_depth = max_depth
        self.max_budget = max_budget
        self.verify_sender = verify_sender
        self.grants = grants
        self.require_grants = require_grants
        if require_grants and grants is None:
            raise ValueError("grants are required but no trusted grant keys are configured (A2A_GRANT_KEYS)")

    @classmethod
    def from_settings(cls, settings: Settings) -> Guard:
        keys = settings.grant_keys
        return cls(
            max_ttl=settings.max_ttl,
            max_hops=settings.max_hops,
            max_depth=settings.max_depth,
            max_budget=settings.max_budget,
            verify_sender=settings.proven,
            grants=GrantVerifier(keys.split(",")) if keys else None,
            require_grants=settings.require_grants,
        )

    def admit(self, env: RequestEnvelope | NotificationEnvelope, sender: str) -> None:
        """Lower the request's limits to this runtime's own (in place: the envelope is this
        hop's own), then check sender, lineage and user; raises the first refusal."""
        meta = env.metadata
        ttl_ms = meta.ttl_ms
        if ttl_ms is None:  # a sender that set none (protocol 1.0, plain NATS clients)
            meta.ttl_ms = min(DEFAULT_TTL_MS, self.max_ttl_ms)
        elif ttl_ms > self.max_ttl_ms:
            meta.ttl_ms = self.max_ttl_ms
        if meta.max_hops > self.max_hops:
            meta.max_hops = self.max_hops
        if meta.max_depth > self.max_depth:
            meta.max_depth = self.max_depth
        budget = self.max_budget
        if budget is not None and (meta.budget is None or meta.budget > budget):
            meta.budget = budget
        source = env.source_agent_id
        if self.verify_sender and source != sender:
            raise PermissionDenied(
                f"sourceAgentId {source!r} is not the identity that sent the message ({sender!r})",
                details={"sourceAgentId": source, "sender": sender},
            )
        chain = meta.call_chain
        if len(chain) != meta.depth or (chain and chain[-1] != source):
            raise InvalidEnvelope(
                f"callChain {chain[:8]} does not match depth {meta.depth} and sender {source!r}",
                details={"field": "metadata.callChain"},
            )
        if self.grants is not None:
            self.check_user(env)

    def check_user(self, env: RequestEnvelope | NotificationEnvelope) -> None:
        assert self.grants is not None
        token = env.user_grant
        if token is None:
            if env.user_id is not None:
                raise PermissionDenied(
                    "userId without a user grant: only an entry point may say which user a call is for",
                    details={"reason": "no grant"},
                )
            if self.require_grants:
                raise PermissionDenied("this agent requires a user grant", details={"reason": "no grant"})
            return
        grant = self.grants.verify(token)
        if env.user_id != grant.sub:
            raise PermissionDenied(
                "userId differs from the user of the grant", details={"reason": "grant for another user"}
            )
        if grant.cnv is not None and grant.cnv != env.conversation_id:
            raise PermissionDenied(
                "the user grant is for another conversation",
                details={"reason": "grant for another conversation"},
            )
