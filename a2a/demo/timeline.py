"""Rendering audit records as a readable timeline of hops."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text

from ..stores.audit import AuditRecord

__all__ = ["timeline_table"]

_STYLE = {"ok": "green", "refused": "yellow", "error": "red", "cancelled": "magenta"}


def _ordered(records: Iterable[AuditRecord]) -> list[AuditRecord]:
    """Parents before children, siblings by start time (a depth-first walk of the call tree)."""
    records = sorted(records, key=lambda r: (r.started_at, r.depth))
    children: dict[str | None, list[AuditRecord]] = {}
    ids = {r.request_id for r in records}
    for r in records:
        parent = r.parent_id if r.parent_id in ids else None
        children.setdefault(parent, []).append(r)
    out: list[AuditRecord] = []

    def walk(parent: str | None) -> None:
        for r in children.get(parent, []):
            out.append(r)
            walk(r.request_id)

    walk(None)
    return out


def timeline_table(records: Iterable[AuditRecord], *, title: str = "Timeline") -> Table:
    """One row per hop: when, who called whom, action, hop/depth, duration, outcome."""
    rows = _ordered(records)
    t0 = min((r.started_at for r in rows), default=0)
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    table.add_column("t+ms", justify="right")
    table.add_column("call", no_wrap=True)
    table.add_column("action")
    table.add_column("hop", justify="right")
    table.add_column("depth", justify="right")
    table.add_column("duration", justify="right")
    table.add_column("outcome")
    for r in rows:
        call = Text("  " * r.depth + f"{r.origin} → {r.target}")
        if r.routed_by:
            call.append(f"  [by capability {r.routed_by}]", style="cyan")
        outcome = Text(r.outcome, style=_STYLE.get(r.outcome, ""))
        if r.error_code:
            outcome.append(f" {r.error_code}", style="bold")
            if r.error_message:
                outcome.append(f": {r.error_message}", style="dim")
        table.add_row(
            str(r.started_at - t0),
            call,
            r.action,
            str(r.hop),
            str(r.depth),
            f"{r.duration_ms:.1f} ms",
            outcome,
        )
    return table
