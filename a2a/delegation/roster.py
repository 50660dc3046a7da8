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
        capabilities: [code.edit]   # what it may advertise in the registry (default: what its
                                    # code declares, pinned by `a2a nats-config`/`redis-config`)
        max_instances: 8            # live registry instances at once (default 32)
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec
import yaml

from bus.wire import DEFAULT_MAX_DEPTH
from discovery.limits import MAX_CAPABILITIES
from discovery.profile import validate_capability_id

__all__ = ["DENIED", "UNRESTRICTED", "AgentRules", "Mode", "Roster", "RosterError", "ToolRule"]

Mode = Literal["read", "write"]
DEFAULT_MAX_FAN_OUT = 3
DEFAULT_MAX_INSTANCES = 32
MAX_MAX_INSTANCES = 1_000_000


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
    capabilities: tuple[str, ...] | None = None
    """Capability ids the agent may advertise in the registry of a closed deployment; None
    leaves them to its code, whose declared capabilities ``a2a nats-config`` and ``a2a
    redis-config`` pin (``--agents module:attr``)."""
    max_instances: int = DEFAULT_MAX_INSTANCES
    """Live registry instances the agent may have at once in a closed deployment."""

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

    def unpinned(self) -> list[str]:
        """Listed agents whose capabilities the roster leaves to their code, sorted."""
        return sorted(name for name, rules in self.agents.items() if rules.capabilities is None)

    def pinned(self, declared: Mapping[str, Iterable[str]]) -> Roster:
        """This roster with ``declared`` (agent -> capability ids its code declares) filling in
        the capabilities of listed agents that leave them out; explicit lists stay as they are.

        Raises:
            RosterError: a declared capability id is invalid.
        """
        agents = dict(self.agents)
        for name, rules in self.agents.items():
            if rules.capabilities is None and name in declared:
                caps = tuple(dict.fromkeys(declared[name]))
                agents[name] = msgspec.structs.replace(rules, capabilities=caps)
        roster = msgspec.structs.replace(self, agents=agents)
        roster.check("declared capabilities")
        return roster

    def check(self, source: str) -> None:
        """Raise RosterError when a rule is inconsistent (a tool not declared, a write tool in
        read mode, an invalid capability id, a limit out of range)."""
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
            if not 1 <= rules.max_instances <= MAX_MAX_INSTANCES:
                raise RosterError(f"{source}: {name}: max_instances must be from 1 to {MAX_MAX_INSTANCES}")
            _check_capabilities(source, name, rules.capabilities or ())


def _check_capabilities(source: str, name: str, capabilities: tuple[str, ...]) -> None:
    if len(capabilities) > MAX_CAPABILITIES:
        raise RosterError(f"{source}: {name}: at most {MAX_CAPABILITIES} capabilities")
    for cap in capabilities:
        try:
            validate_capability_id(cap)
        except ValueError as exc:
            raise RosterError(f"{source}: {name}: {exc}") from None
