"""``a2a agents``: the registry's instances, as a table or (``--json``) with their actions' input schemas.

Trust is the figure routing by capability multiplies an instance's match score by
(``discovery.scoring.trust_weight``): 1.00 for an agent of the deployment, which publishes
none, and the published score of an external agent; the console shows the same.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING, Any

from .common import CommandError, run_interruptibly, settings_from

if TYPE_CHECKING:
    from discovery import AgentProfile

__all__ = ["agent_actions", "agent_json", "cmd_agents"]

_SIGNATURE_MARKS = {"verified": " ✓", "unsigned": " ○", "invalid": " ✗"}
_TRUST_LEGEND = (
    "trust: what routing by capability weighs an instance by (1.00: an agent of the deployment; an external"
    " agent's as its proxy publishes it); card signature ✓ verified, ○ unsigned, ✗ failed to verify;"
    " red: under the routing floor {floor:g}, never chosen by capability"
)


def agent_actions(profile: AgentProfile) -> list[dict[str, Any]]:
    """The actions an instance registered (``metadata.actions``), each with the description and
    input schema it declared (``metadata.actionSpecs``); what is not of the expected shape is left out."""
    metadata = profile.metadata or {}
    names = metadata.get("actions")
    specs = metadata.get("actionSpecs")
    specs = specs if isinstance(specs, dict) else {}
    actions = []
    for name in names if isinstance(names, list) else []:
        if not isinstance(name, str):
            continue
        action: dict[str, Any] = {"name": name}
        spec = specs.get(name)
        if isinstance(spec, dict):
            if isinstance(spec.get("description"), str):
                action["description"] = spec["description"]
            if isinstance(spec.get("inputSchema"), dict):
                action["inputSchema"] = spec["inputSchema"]
        actions.append(action)
    return actions


def agent_json(profile: AgentProfile, floor: float, now: float) -> dict[str, Any]:
    """One instance as ``a2a agents --json`` prints it."""
    from discovery.scoring import routable, trust_weight

    return {
        "name": profile.name,
        "instance": profile.agent_id,
        "version": profile.version,
        "description": profile.description,
        "status": profile.status,
        "load": profile.load,
        "capacity": profile.capacity,
        "trust": trust_weight(profile.trust),
        "routable": routable(profile.trust, floor),
        "cardSignature": profile.card_signature,
        "lastSeenSecondsAgo": round(max(0.0, now - profile.last_seen / 1000), 1),
        "capabilities": [
            {"id": c.id, "name": c.name, "description": c.description, "category": c.category}
            | {"proficiency": c.proficiency}
            for c in profile.capabilities
        ],
        "actions": agent_actions(profile),
    }


def _trust_cell(profile: AgentProfile, floor: float) -> str:
    """The trust routing uses, with the card signature state; red when routing skips the instance."""
    from discovery.scoring import routable, trust_weight

    text = f"{trust_weight(profile.trust):.2f}{_SIGNATURE_MARKS.get(profile.card_signature or '', '')}"
    return text if routable(profile.trust, floor) else f"[red]{text}[/]"


def cmd_agents(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from discovery import Registry

    from .common import console
    from .servers import using_redis

    settings = settings_from(args)
    if not settings.redis_url:
        raise CommandError("needs a registry: set REDIS_URL or --redis-url", status=2)
    url = settings.redis_url

    async def fetch() -> tuple[list[AgentProfile], float]:
        registry = Registry.from_url(url, namespace=settings.namespace, trust_floor=settings.trust_floor)
        try:
            return await using_redis(url, registry.list_agents), registry.trust_floor
        finally:
            await registry.aclose()

    profiles, floor = run_interruptibly(fetch)
    profiles.sort(key=lambda p: (p.name, p.agent_id))
    now = time.time()
    if args.json:
        print(json.dumps([agent_json(p, floor, now) for p in profiles], indent=2))
        return 0
    table = Table(title=f"Agents in namespace {settings.namespace!r}", title_justify="left")
    for column in (
        "name",
        "instance",
        "capabilities",
        "actions",
        "status",
        "load",
        "trust",
        "last heartbeat",
    ):
        table.add_column(column)
    if any(p.trust is not None for p in profiles):
        table.caption = _TRUST_LEGEND.format(floor=floor)
        table.caption_justify = "left"
    for p in profiles:
        caps = ", ".join(f"{c.id}({c.proficiency:g})" for c in p.capabilities)
        style = {"available": "green", "busy": "yellow"}.get(p.status, "red")
        table.add_row(
            escape(p.name),
            escape(p.agent_id),
            escape(caps),
            escape(", ".join(a["name"] for a in agent_actions(p))),
            f"[{style}]{p.status}[/]",
            f"{p.load}/{p.capacity}",
            _trust_cell(p, floor),
            f"{max(0.0, now - p.last_seen / 1000):.1f} s ago",
        )
    console.print(table)
    if not profiles:
        console.print(f"no agent instance in namespace {settings.namespace!r}", style="dim")
    return 0
