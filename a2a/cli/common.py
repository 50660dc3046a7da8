"""What the commands share: consoles, settings from arguments, loading agents."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from ..core.agent import Agent
from ..core.settings import Settings

__all__ = ["console", "err_console", "load_agents", "settings_from"]

# Piped output (CI logs, `| less`) gets a width that fits the timeline instead of rich's 80.
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 140
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)


def settings_from(args: argparse.Namespace, **extra: Any) -> Settings:
    return Settings.from_env(
        nats_url=getattr(args, "nats_url", None),
        redis_url=getattr(args, "redis_url", None),
        namespace=getattr(args, "namespace", None),
        **extra,
    )


def load_agents(targets: Sequence[str]) -> list[Agent]:
    agents: list[Agent] = []
    for target in targets:
        module_name, _, attr = target.partition(":")
        if not attr:
            raise SystemExit(f"a2a serve: expected module:attribute, got {target!r}")
        obj = getattr(importlib.import_module(module_name), attr)
        found = [obj] if isinstance(obj, Agent) else list(obj)
        if not all(isinstance(a, Agent) for a in found):
            raise SystemExit(f"a2a serve: {target} is neither an Agent nor a list of Agents")
        agents.extend(found)
    return agents
