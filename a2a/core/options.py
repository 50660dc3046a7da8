"""How one call is made: a frozen value built once at the public edge and passed down whole."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from bus.handoff import Delegation, Grants
from bus.ids import new_id
from bus.wire import Orchestration, Priority

from .retry import Retry

__all__ = ["DEFAULT", "CallOptions", "merged", "narrowed"]


class CallOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options of one call, from :meth:`a2a.Runtime.call` or :meth:`a2a.Context.call` down to the bus.

    Every field left at its default takes the runtime's setting or, for a call made from
    a handler, what the handled request allows.
    """

    timeout: float | None = None
    """Seconds the call may take (never past the parent's deadline)."""
    user_id: str | None = None
    """The user the call is made for (calls from outside any agent: a handler's calls carry its own)."""
    conversation_id: str | None = None
    """The conversation a call from outside any agent joins (a new one by default)."""
    priority: Priority | None = None
    budget: int | None = None
    """Tokens the call and everything it delegates may use."""
    grants: Grants | None = None
    """The callee's rights: tools and nested calls, never wider than the caller's."""
    delegation: Delegation | None = None
    """The delegated task, when the call is a delegation."""
    correlation_id: str | None = None
    """The id of the call tree a call from outside any agent starts (unguessable; a new
    random id by default): every hop it leads to carries it. An agent's calls carry its
    request's; one given there starts a tree of its own."""
    request_id: str | None = None
    """The request's own id (unguessable; a new random id by default, and for each retry)."""
    on_progress: Callable[[Any], None] | None = None
    """Called with each progress update the callee sends."""
    max_hops: int | None = None
    """Lowers the hop limit of the whole call tree below the runtime's."""
    orchestration: Orchestration | None = None
    """Control metadata of an operator-driven session's message (seed 001)."""
    redact_params: bool | None = None
    """Redact the parameters before they leave (None: the calling agent's choice, else the runtime's)."""
    retry: Retry | None = None
    """Send the call again after an error that is safe to retry (:class:`a2a.core.retry.Retry`)."""

    def conversation(self, tree: str) -> str:
        """The conversation of a call from outside any agent whose call tree is ``tree``: the
        one named, else a new one, which is the tree's own id when the tree is new too
        (neither its id nor the request's was given; the compact form then leaves it out)."""
        if self.conversation_id:
            return self.conversation_id
        return tree if self.correlation_id is None and self.request_id is None else new_id()


DEFAULT = CallOptions()


def merged(options: CallOptions | None, **given: Any) -> CallOptions:
    """``options`` (default: none set) with the fields in ``given`` that are not None."""
    fields = {name: value for name, value in given.items() if value is not None}
    if options is None:
        return CallOptions(**fields)
    return msgspec.structs.replace(options, **fields) if fields else options


def narrowed(inherited: list[str] | None, requested: Sequence[str] | None) -> list[str] | None:
    """Tools allowed after a caller restricts them: never more than the caller had."""
    if requested is None:
        return inherited
    if inherited is None:
        return list(dict.fromkeys(requested))
    allowed = set(requested)
    return [t for t in inherited if t in allowed]
