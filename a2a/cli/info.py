"""Commands that look at what ran (audit records) and write files generated from the project's own
definitions (NATS permissions, Redis ACLs, JSON Schemas, grant keys)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from transports import TransportError

from ..core.connect import connect_nats
from .common import CommandError, console, run_interruptibly, settings_from

__all__ = [
    "cmd_audit",
    "cmd_grant_key",
    "cmd_nats_config",
    "cmd_redis_config",
    "cmd_schemas",
]


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
