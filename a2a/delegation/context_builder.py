"""Filtered context for a sub-agent (seed 000): only what it needs, never over its token limit."""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bus.handoff import ChatMessage, ContextFilter, FilteredContext

from .project import project_info

__all__ = ["ContextBuilder", "TokenCounter", "estimate_tokens", "workspace_context"]

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text; plug in a model's tokenizer (e.g. ``lambda t: len(enc.encode(t))``)."""

_PIECES = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` as BPE tokenizers roughly count them, with no model download.

    Each punctuation mark is a token and each word costs one token per four
    characters, which tracks GPT-style tokenizers within about 15% on English prose
    and code.
    """
    return sum(math.ceil(len(p) / 4) if p[0].isalnum() or p[0] == "_" else 1 for p in _PIECES.findall(text))


def _message_text(message: ChatMessage) -> str:
    return f"{message.role}: {message.content}"


def workspace_context(
    root: str | os.PathLike[str], files: Sequence[str] | None = None, *, limit: int = 20
) -> str:
    """Working directory, either the named files that exist or the top-level entries, then
    the project's name and tech stack when its manifests give them (seed 000's project info)."""
    root_path = Path(root)
    lines = [f"Working directory: {root_path}"]
    if files is not None:
        lines.append("Relevant files:")
        real_root = os.path.realpath(root_path)
        for name in files:
            full = os.path.realpath(root_path / name)
            if os.path.commonpath([real_root, full]) == real_root and os.path.exists(full):
                lines.append(f"  - {name}")
    else:
        lines.append("Workspace structure:")
        try:
            entries = sorted(root_path.iterdir())[:limit]
        except OSError:
            entries = []
        for entry in entries:
            lines.append(f"  [{'DIR' if entry.is_dir() else 'FILE'}] {entry.name}")
    text = "\n".join(lines) + "\n"
    project = project_info(root_path)
    return text + "\n" + project.text() if project is not None else text


class ContextBuilder:
    """Selects messages by the filter and fits everything into ``max_tokens``.

    Order of operations (seed 000): age, roles, keywords, last N; then the summary and
    workspace are added and the newest messages are kept while they fit. Unlike the
    seed, a summary or workspace text that alone would overflow is cut to fit, so the
    total never exceeds ``max_tokens``.
    """

    def __init__(self, counter: TokenCounter = estimate_tokens) -> None:
        self.count = counter

    def build(
        self,
        messages: Sequence[ChatMessage],
        flt: ContextFilter,
        max_tokens: int,
        *,
        summary: str | None = None,
        workspace_root: str | os.PathLike[str] | None = None,
        now: float | None = None,
    ) -> FilteredContext:
        selected = list(messages)
        if flt.max_age_seconds is not None:
            cutoff = (time.time() if now is None else now) - flt.max_age_seconds
            selected = [m for m in selected if m.created_at > cutoff]
        if flt.roles is not None:
            roles = set(flt.roles)
            selected = [m for m in selected if m.role in roles]
        if flt.keywords is not None:
            keywords = [k.lower() for k in flt.keywords]
            selected = [m for m in selected if any(k in m.content.lower() for k in keywords)]
        if flt.last_messages is not None:
            # All of them when there are fewer than N (a negative start would count from the end).
            selected = selected[max(0, len(selected) - flt.last_messages) :] if flt.last_messages else []

        budget = max(0, max_tokens)
        summary_text = self._fit(summary, budget) if flt.include_summary and summary else None
        budget -= self._cost(summary_text)
        workspace_text = None
        if flt.include_workspace and workspace_root is not None:
            workspace_text = self._fit(workspace_context(workspace_root, flt.workspace_files), budget)
        budget -= self._cost(workspace_text)

        kept: list[ChatMessage] = []
        used = 0
        for message in reversed(selected):
            cost = self.count(_message_text(message))
            if used + cost > budget:
                break
            kept.append(message)
            used += cost
        kept.reverse()
        total = used + self._cost(summary_text) + self._cost(workspace_text)
        return FilteredContext(
            messages=kept, summary=summary_text, workspace=workspace_text, total_tokens=total
        )

    def cost(self, context: FilteredContext) -> int:
        """Tokens of a filtered context, counted the way :meth:`build` counts them."""
        return (
            sum(self.count(_message_text(m)) for m in context.messages)
            + self._cost(context.summary)
            + self._cost(context.workspace)
        )

    def full_history_cost(self, messages: Sequence[ChatMessage]) -> int:
        """Tokens of handing over the whole history unfiltered."""
        return sum(self.count(_message_text(m)) for m in messages)

    def _cost(self, text: str | None) -> int:
        return self.count(text) if text else 0

    def _fit(self, text: str | None, budget: int) -> str | None:
        """The longest prefix of ``text`` that costs at most ``budget`` tokens, or None."""
        if not text or budget <= 0:
            return None
        if self.count(text) <= budget:
            return text
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(text[:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        cut = text[:lo]
        return cut if cut and self.count(cut) <= budget else None
