"""``a2a history``: the recent conversations of the history store, or one of them in full."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import msgspec

from .common import CommandError, run_interruptibly, settings_from

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from ..core.settings import Settings

__all__ = ["Conversation", "cmd_history", "recent_conversations"]

MAX_SCANNED = 100_000
"""Conversations looked at, at most, to find the most recent: a bound on one listing's cost."""
_TEXT = 80  # characters of a goal or summary in the listing


class Conversation(msgspec.Struct, frozen=True):
    """One conversation of the history store, as the listing shows it."""

    id: str
    user: str | None
    created_at: float | None
    last_at: float | None
    """When its last message was written (else its creation)."""
    messages: int
    calls: int
    goal: str | None
    summary: str | None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


async def recent_conversations(redis: aioredis.Redis, namespace: str, limit: int) -> list[Conversation]:
    """The ``limit`` conversations of ``namespace`` with the latest activity, latest first."""
    from bus.handoff import ChatMessage
    from discovery.errors import redis_errors
    from discovery.registry import RegistryKeys

    prefix = f"{RegistryKeys(namespace).prefix}conv:"
    ids: list[str] = []
    with redis_errors("list conversations"):
        async for key in redis.scan_iter(match=f"{prefix}*:meta", count=1000):
            ids.append(_text(key)[len(prefix) : -len(":meta")])  # type: ignore[index]
            if len(ids) >= MAX_SCANNED:
                break
        async with redis.pipeline(transaction=False) as pipe:
            for conversation in ids:
                pipe.hgetall(f"{prefix}{conversation}:meta")
                pipe.lindex(f"{prefix}{conversation}:messages", -1)
                pipe.llen(f"{prefix}{conversation}:messages")
                pipe.llen(f"{prefix}{conversation}:calls")
            replies = await pipe.execute()
    found = []
    for n, conversation in enumerate(ids):
        meta, last, messages, calls = replies[4 * n : 4 * n + 4]
        meta = {_text(k): _text(v) for k, v in (meta or {}).items()}
        try:
            last_at = msgspec.json.decode(last, type=ChatMessage).created_at if last else None
        except msgspec.MsgspecError:
            last_at = None
        created = _number(meta.get("createdAt"))
        found.append(
            Conversation(
                id=conversation,
                user=meta.get("userId"),
                created_at=created,
                last_at=last_at or created,
                messages=int(messages),
                calls=int(calls),
                goal=meta.get("goal"),
                summary=meta.get("summary"),
            )
        )
    found.sort(key=lambda c: c.last_at or 0.0, reverse=True)
    return found[:limit]


def _clip(text: str | None, limit: int = _TEXT) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _at(seconds: float | None, form: str = "%Y-%m-%d %H:%M:%S") -> str:
    return time.strftime(form, time.localtime(seconds)) if seconds else "-"


def _list(settings: Settings, limit: int) -> int:
    from rich.markup import escape
    from rich.table import Table

    from discovery import Registry

    from .common import console
    from .servers import using_redis

    url = settings.redis_url or ""

    async def fetch() -> list[Conversation]:
        registry = Registry.from_url(url, namespace=settings.namespace)
        try:
            return await using_redis(
                url, lambda: recent_conversations(registry.redis, settings.namespace, limit)
            )
        finally:
            await registry.aclose()

    conversations = run_interruptibly(fetch)
    if not conversations:
        console.print(f"no conversation in the history of namespace {settings.namespace!r}")
        return 0
    table = Table(
        title=f"Conversations in namespace {settings.namespace!r}, latest first (a2a history ID shows one)",
        title_justify="left",
    )
    for column in ("conversation", "user", "started", "last activity", "messages", "calls", "goal / summary"):
        table.add_column(column)
    for c in conversations:
        table.add_row(
            c.id, escape(c.user or "-"), _at(c.created_at), _at(c.last_at), str(c.messages), str(c.calls),
            escape(_clip(c.summary or c.goal)),
        )  # fmt: skip
    console.print(table)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not settings.redis_url:
        raise CommandError("needs the history store: set REDIS_URL or --redis-url", status=2)
    if not args.conversation:
        return _list(settings, args.limit)
    return _show(args, settings)


def _show(args: argparse.Namespace, settings: Settings) -> int:
    from rich.markup import escape
    from rich.table import Table

    from discovery import Registry

    from ..stores.history import HistoryStore
    from .common import console
    from .servers import using_redis

    url = settings.redis_url or ""

    async def read(store: HistoryStore) -> tuple[Any, ...]:
        return (
            await store.owner(args.conversation),
            await store.interactions(args.conversation),
            await store.messages(args.conversation),
            await store.summary(args.conversation),
        )

    async def fetch() -> tuple[Any, ...]:
        registry = Registry.from_url(url, namespace=settings.namespace, trust_floor=settings.trust_floor)
        try:
            return await using_redis(url, lambda: read(HistoryStore(registry.redis, settings.namespace)))
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
            text = m.content if len(m.content) <= 200 else m.content[:199] + "…"
            said.add_row(_at(m.created_at, "%H:%M:%S"), m.role, escape(m.name or ""), escape(text))
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
            _at(i.at, "%H:%M:%S"),
            escape(f"{i.caller} → {i.target}"),
            escape(i.task),
            escape(i.output_preview),
            "[green]yes[/]" if i.success else f"[red]no[/] {escape(i.error_code or '')}",
            f"{i.duration_ms:.0f} ms",
            str(i.tokens_used),
            i.thread_id or "",
        )
    console.print(table)
    return 0
