"""Commands that look at what runs and ran: the registry, conversation history, audit records, and
files generated from the project's own definitions (NATS permissions, JSON Schemas)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import time
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from discovery import AgentProfile, Registry
from transports import TransportError

from ..core.connect import connect_nats
from .common import CommandError, console, run_interruptibly, settings_from

__all__ = [
    "cmd_agents",
    "cmd_audit",
    "cmd_grant_key",
    "cmd_history",
    "cmd_nats_config",
    "cmd_redis_config",
    "cmd_schemas",
]


_SIGNATURE_MARKS = {"verified": " ✓", "unsigned": " ○", "invalid": " ✗"}
_TRUST_LEGEND = (
    "trust: of external agents, as their proxy publishes it (- an agent of the deployment, trusted as 1); "
    "card signature ✓ verified, ○ unsigned, ✗ failed to verify; red: under the routing floor {floor:g}"
)


def _trust_cell(profile: AgentProfile, floor: float) -> str:
    """``-`` for an agent of the deployment, else the trust score and the card signature state."""
    if profile.trust is None:
        return "-"
    text = f"{profile.trust:.2f}{_SIGNATURE_MARKS.get(profile.card_signature or '', '')}"
    return f"[red]{text}[/]" if profile.trust < floor else text


def cmd_agents(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not settings.redis_url:
        raise CommandError("needs a registry: set REDIS_URL or --redis-url", status=2)

    async def fetch() -> tuple[list[AgentProfile], float]:
        registry = Registry.from_url(
            settings.redis_url or "", namespace=settings.namespace, trust_floor=settings.trust_floor
        )
        try:
            return await registry.list_agents(), registry.trust_floor
        finally:
            await registry.aclose()

    profiles, floor = run_interruptibly(fetch)
    table = Table(title=f"Agents in namespace {settings.namespace!r}", title_justify="left")
    for column in ("name", "instance", "capabilities", "status", "load", "trust", "last heartbeat"):
        table.add_column(column)
    if any(p.trust is not None for p in profiles):
        table.caption = _TRUST_LEGEND.format(floor=floor)
        table.caption_justify = "left"
    now = time.time() * 1000
    for p in sorted(profiles, key=lambda p: (p.name, p.agent_id)):
        caps = ", ".join(f"{c.id}({c.proficiency:g})" for c in p.capabilities)
        style = {"available": "green", "busy": "yellow"}.get(p.status, "red")
        table.add_row(
            p.name,
            p.agent_id,
            caps,
            f"[{style}]{p.status}[/]",
            f"{p.load}/{p.capacity}",
            _trust_cell(p, floor),
            f"{(now - p.last_seen) / 1000:.1f} s ago",
        )
    console.print(table)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from ..stores.history import HistoryStore

    settings = settings_from(args)
    if not settings.redis_url:
        raise CommandError("needs the history store: set REDIS_URL or --redis-url", status=2)

    async def fetch() -> tuple[Any, ...]:
        registry = Registry.from_url(
            settings.redis_url or "", namespace=settings.namespace, trust_floor=settings.trust_floor
        )
        try:
            store = HistoryStore(registry.redis, settings.namespace)
            return (
                await store.owner(args.conversation),
                await store.interactions(args.conversation),
                await store.messages(args.conversation),
                await store.summary(args.conversation),
            )
        finally:
            await registry.aclose()

    owner, interactions, messages, summary = run_interruptibly(fetch)
    if owner is None and not interactions and not messages:
        raise CommandError(
            f"no history for conversation {args.conversation!r} in namespace {settings.namespace!r}"
        )
    console.print(f"conversation {args.conversation}  user {owner or '-'}  {len(messages)} message(s)")
    if summary:
        console.print(f"summary: {summary}", markup=False)
    shown = messages[-args.messages :] if args.messages else []
    if shown:
        said = Table(title=f"Messages (the last {len(shown)})", title_justify="left")
        for column in ("time", "role", "from", "text"):
            said.add_column(column)
        for m in shown:
            at = time.strftime("%H:%M:%S", time.localtime(m.created_at)) if m.created_at else ""
            text = m.content if len(m.content) <= 200 else m.content[:199] + "…"
            said.add_row(at, m.role, m.name or "", escape(text))
        console.print(said)
    if not interactions:
        return 0
    table = Table(title="Sub-agent interactions", title_justify="left")
    for column in (
        "time",
        "caller → target",
        "task",
        "output (preview)",
        "ok",
        "duration",
        "tokens",
        "thread",
    ):
        table.add_column(column)
    for i in interactions:
        table.add_row(
            time.strftime("%H:%M:%S", time.localtime(i.at)),
            f"{i.caller} → {i.target}",
            i.task,
            i.output_preview,
            "[green]yes[/]" if i.success else f"[red]no[/] {i.error_code or ''}",
            f"{i.duration_ms:.0f} ms",
            str(i.tokens_used),
            i.thread_id or "",
        )
    console.print(table)
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from ..stores.audit import AuditFilter, ensure_audit_stream, read_audit

    settings = settings_from(args)
    match = AuditFilter(
        agent=args.agent, user_id=args.user, conversation_id=args.conversation, outcome=args.outcome
    )

    async def fetch() -> list[Any]:
        transport = await connect_nats(settings, name="a2a-audit")
        try:
            # As a user who may (the auditor, the admin), create the stream if it is missing:
            # agents only look at it. Others read what exists.
            with contextlib.suppress(TransportError):
                await ensure_audit_stream(transport, settings.namespace)
            return await read_audit(transport, settings.namespace, match, limit=args.limit)
        finally:
            await transport.aclose()

    try:
        records = run_interruptibly(fetch)
    except TransportError as exc:  # no stream yet, or no server
        raise CommandError(f"cannot read the audit stream: {exc}") from exc
    if args.json:
        import msgspec

        for r in records:
            print(msgspec.json.encode(r).decode())
        return 0
    table = Table(
        title=f"Audit of namespace {settings.namespace!r} ({len(records)} records)", title_justify="left"
    )
    for column in ("time", "request", "origin → target", "action", "user", "outcome", "duration", "side"):
        table.add_column(column)
    for r in records:
        outcome = r.outcome + (f" {r.error_code}" if r.error_code else "")
        table.add_row(
            time.strftime("%H:%M:%S", time.localtime(r.started_at / 1000)),
            r.request_id[-8:],
            f"{r.origin} → {r.target}",
            r.action,
            r.user_id or "",
            outcome,
            f"{r.duration_ms:.1f} ms",
            r.side,
        )
    console.print(table)
    return 0


def cmd_nats_config(args: argparse.Namespace) -> int:
    from .nats_config import cmd_nats_config as run

    return run(args)


def cmd_grant_key(args: argparse.Namespace) -> int:
    from ..core.grants import new_signing_key

    seed, public = new_signing_key()
    print("# The entry point (CLI, gateway) signs user grants with the seed; keep it secret.")
    print(f"A2A_GRANT_SEED={seed}")
    print("# Every agent trusts grants signed by it (comma-separate several keys).")
    print(f"A2A_GRANT_KEYS={public}")
    return 0


def cmd_redis_config(args: argparse.Namespace) -> int:
    # Imported when used, like every command's heavier parts.
    name = f"{__package__}.redis_config"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        raise CommandError("Redis ACL generation is not part of this installation") from exc
    return int(module.cmd_redis_config(args))


def cmd_schemas(args: argparse.Namespace) -> int:
    from ..wire import wire_schemas

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in wire_schemas().items():
        (out / name).write_text(text)
        console.print(f"wrote {out / name}")
    return 0
