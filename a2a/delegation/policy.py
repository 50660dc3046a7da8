"""Delegation policy: who may call whom, how deep and wide, with which tools."""

from __future__ import annotations

from pathlib import Path

from bus.errors import FanOutExceeded, MaxDepthExceeded, PermissionDenied
from bus.handoff import Grants
from bus.wire import Envelope

from .roster import DENIED, UNRESTRICTED, AgentRules, Roster

__all__ = ["Policy"]


class Policy:
    """Rights from a :class:`Roster`, denying by default.

    An agent the roster does not list may call no one. Without a roster, every agent
    gets ``UNRESTRICTED`` in an open deployment (development: ``A2A_OPEN=1``, no
    credentials) and no right to call anyone in a ``closed`` one (the default).

    ``check_call`` runs in the caller before a request is sent; ``admit`` runs in the
    callee on receipt and re-checks the caller's rights without trusting that the
    caller did. Both raise a typed A2AError to refuse.
    """

    def __init__(self, roster: Roster | None = None, *, closed: bool = False) -> None:
        self.roster = roster
        self._default = DENIED if closed else UNRESTRICTED
        self._agents = frozenset(roster.agents) if roster is not None else frozenset()
        self.open = roster is None and not closed
        """Every agent may call every other (no roster, no credentials): nothing to check."""

    @classmethod
    def from_file(cls, path: str | Path) -> Policy:
        return cls(Roster.load(path))

    def rules(self, agent: str) -> AgentRules:
        return self.roster.rules(agent) if self.roster is not None else self._default

    def is_agent(self, name: str) -> bool:
        """True for an agent the roster lists (its calls are checked at every depth)."""
        return name in self._agents

    def check_call(self, caller: str | None, target: str) -> None:
        """Caller side: may ``caller`` (None outside any agent) call ``target``?"""
        if caller is None:
            return
        rules = self.rules(caller)
        if not rules.allow_sub_agent_calls and self.roster is None:
            raise PermissionDenied(
                f"{caller} may not call other agents: no roster gives it the right (set A2A_ROSTER "
                "to a roster file, or A2A_OPEN=1 to let every agent call every other in development)",
                details={"caller": caller, "target": target},
            )
        if not rules.allow_sub_agent_calls:
            raise PermissionDenied(
                f"{caller} is not allowed to call other agents (allow_sub_agent_calls is false)",
                details={"caller": caller, "target": target},
            )
        if not rules.may_invoke(target):
            raise PermissionDenied(
                f"{caller} may not invoke {target}; it may invoke: {', '.join(rules.can_invoke) or 'nobody'}",
                details={"caller": caller, "target": target, "canInvoke": list(rules.can_invoke)},
            )

    def admit(self, agent: str, envelope: Envelope) -> None:
        """Callee side: re-check the caller's rights to make this call, at any depth.

        A call at depth 0 from a name that is not a roster agent comes from outside any
        agent (a user, a script, the CLI, a gateway): the message server's permissions
        decide who may send those. A roster agent's call is checked whatever depth it
        claims.
        """
        meta = envelope.metadata
        source = envelope.source_agent_id
        if meta.depth == 0 and not self.is_agent(source):
            return
        self.check_call(source, agent)
        rules = self.rules(source)
        if meta.depth >= rules.max_depth:
            raise MaxDepthExceeded(
                f"depth {meta.depth} reaches {source}'s delegation limit of {rules.max_depth}",
                hop=meta.hop_count,
                details={"depth": meta.depth, "maxDepth": rules.max_depth},
            )
        if meta.fan_out is not None and meta.fan_out > rules.max_fan_out:
            raise FanOutExceeded(
                f"{source} had {meta.fan_out} delegates in flight; its limit is {rules.max_fan_out}",
                hop=meta.hop_count,
                details={"fanOut": meta.fan_out, "maxFanOut": rules.max_fan_out},
            )

    def authorize_tool(self, agent: str, tool: str, grants: Grants | None) -> None:
        """Where a tool is invoked: may ``agent`` use ``tool`` under this call's grants?"""
        rules = self.rules(agent)
        if rules.tools is not None and tool not in rules.tools:
            raise PermissionDenied(
                f"{agent} is not authorized to use tool {tool!r}",
                details={"tool": tool, "tools": list(rules.tools)},
            )
        rule = self.roster.tools.get(tool) if self.roster is not None else None
        if rule is not None and rule.mode == "write" and rules.mode == "read":
            raise PermissionDenied(f"{agent} works in read mode and may not use write tool {tool!r}")
        if grants is not None and grants.allowed_tools is not None and tool not in grants.allowed_tools:
            raise PermissionDenied(
                f"the caller limited this call to tools {grants.allowed_tools}; {tool!r} is not among them",
                details={"tool": tool, "allowedTools": grants.allowed_tools},
            )
