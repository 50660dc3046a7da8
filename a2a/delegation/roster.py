"""The roster: per-agent delegation rights, from one YAML or TOML file.

::

    defaults:                     # what listed agents' entries leave out; agents not listed
                                  # get them without the right to call anyone
      allow_sub_agent_calls: false
      max_depth: 5
      max_fan_out: 3
    tools:
      read_file:  {mode: read}
      write_file: {mode: write}
    agents:
      planner:
        mode: read                # read agents may only use read tools
        allow_sub_agent_calls: true
        can_invoke: [reader, writer, reviewer]   # "*" for any agent
        tools: [read_file]
        max_depth: 2              # seed 002's limit, for calls this agent makes
      writer:
        mode: write
        allow_sub_agent_calls: true
        can_invoke: [reader]
        tools: [read_file, write_file]
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from bus.wire import DEFAULT_MAX_DEPTH

__all__ = ["DENIED", "UNRESTRICTED", "AgentRules", "Mode", "Roster", "RosterError", "ToolRule"]

Mode = Literal["read", "write"]
DEFAULT_MAX_FAN_OUT = 3


class RosterError(ValueError):
    """The roster file is malformed or inconsistent."""


class ToolRule(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    mode: Mode = "read"


class AgentRules(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one agent may do. Field defaults are the seeds' safe ones: read mode, no sub-agent calls.

    Without a roster every agent gets :data:`UNRESTRICTED`.
    """

    mode: Mode = "read"
    allow_sub_agent_calls: bool = False
    can_invoke: tuple[str, ...] = ()
    """Agents this one may call; ``"*"`` for any."""
    tools: tuple[str, ...] | None = None
    """Tools the agent may use; None means any tool its mode allows."""
    max_depth: int = DEFAULT_MAX_DEPTH
    """Delegation depth limit for calls this agent makes (seed 000: 5, seed 002: 2)."""
    max_fan_out: int = DEFAULT_MAX_FAN_OUT
    """Concurrent delegates one handling of a request may have in flight."""

    def may_invoke(self, target: str) -> bool:
        return "*" in self.can_invoke or target in self.can_invoke


UNRESTRICTED = AgentRules(mode="write", allow_sub_agent_calls=True, can_invoke=("*",))
DENIED = AgentRules()
"""Rights of an agent nobody granted any: read mode, no calls to other agents."""


class Roster(msgspec.Struct, frozen=True, kw_only=True):
    """Per-agent rules. ``defaults`` fill in what a listed agent's entry leaves out; an agent
    the roster does not list gets ``defaults`` without the right to call anyone (deny by
    default: seed 000's ``allow_sub_agent_calls`` is false unless granted)."""

    defaults: AgentRules = AgentRules()
    agents: dict[str, AgentRules] = {}
    tools: dict[str, ToolRule] = {}

    def rules(self, agent: str) -> AgentRules:
        rules = self.agents.get(agent)
        if rules is not None:
            return rules
        return msgspec.structs.replace(self.defaults, allow_sub_agent_calls=False, can_invoke=())

    @classmethod
    def load(cls, path: str | Path) -> Roster:
        """Read a roster from ``.yaml``/``.yml`` or ``.toml``.

        Raises:
            RosterError: unreadable, unknown keys, wrong types, or an inconsistent rule.
        """
        path = Path(path)
        try:
            text = path.read_text()
            raw = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
        except (OSError, yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
            raise RosterError(f"cannot read roster {path}: {exc}") from None
        return cls.from_dict(raw or {}, source=str(path))

    @classmethod
    def from_dict(cls, raw: dict[str, Any], *, source: str = "roster") -> Roster:
        if not isinstance(raw, dict) or set(raw) - {"defaults", "agents", "tools"}:
            raise RosterError(f"{source}: expected a mapping with defaults, agents and tools")
        defaults_raw = raw.get("defaults") or {}
        try:
            defaults = msgspec.convert(defaults_raw, AgentRules)
            agents = {
                name: msgspec.convert({**defaults_raw, **(rules or {})}, AgentRules)
                for name, rules in (raw.get("agents") or {}).items()
            }
            tools = msgspec.convert(raw.get("tools") or {}, dict[str, ToolRule])
        except msgspec.ValidationError as exc:
            raise RosterError(f"{source}: {exc}") from None
        roster = cls(defaults=defaults, agents=agents, tools=tools)
        roster.check(source)
        return roster

    def check(self, source: str) -> None:
        """Raise RosterError when a rule is inconsistent (a tool not declared, a write tool in read mode)."""
        for name, rules in [("defaults", self.defaults), *self.agents.items()]:
            for tool in rules.tools or ():
                rule = self.tools.get(tool)
                if rule is None:
                    raise RosterError(
                        f"{source}: {name} lists tool {tool!r}, which is not declared under tools"
                    )
                if rule.mode == "write" and rules.mode == "read":
                    raise RosterError(f"{source}: {name} is a read agent but lists write tool {tool!r}")
            if rules.max_depth < 1 or rules.max_fan_out < 1:
                raise RosterError(f"{source}: {name}: max_depth and max_fan_out must be at least 1")
