"""A LangGraph graph of five plain nodes that counts its node runs in files, for durable-task tests.

``python -m a2a serve tests.adapters.langgraph_durable_agents:agent`` serves it as ``five``.
The call's text names a folder. Each node ``n1`` ... ``n5`` appends a line to
``<folder>/<node>`` when it starts and adds its name to the state's ``trail``; the result
is the trail. The first time ``n3`` runs in a folder it leaves ``<folder>/n3.waiting`` and
sleeps for an hour instead of finishing: the test stops or kills the instance running it.
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import anyio
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from a2a import Agent
from a2a.adapters.langgraph import from_langgraph

NODES = ["n1", "n2", "n3", "n4", "n5"]


class Trail(TypedDict):
    folder: str
    trail: Annotated[list[str], operator.add]


def runs(folder: Path, node: str) -> int:
    """How many times ``node`` has started in ``folder``."""
    path = folder / node
    return len(path.read_text().splitlines()) if path.exists() else 0


def _note(folder: Path, node: str) -> int:
    """Count a start of ``node`` in ``folder``; how many there were before."""
    before = runs(folder, node)
    with open(folder / node, "a") as f:
        f.write("ran\n")
    return before


def _node(name: str) -> Callable[[Trail], Awaitable[dict[str, Any]]]:
    async def run(state: Trail) -> dict[str, Any]:
        folder = Path(state["folder"])
        if _note(folder, name) == 0 and name == "n3":
            (folder / "n3.waiting").touch()
            await anyio.sleep(3600)
        return {"trail": [name]}

    return run


def graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> CompiledStateGraph[Any, Any, Any, Any]:
    """``START -> n1 -> n2 -> n3 -> n4 -> n5 -> END``."""
    builder = StateGraph(Trail)
    for name in NODES:
        builder.add_node(name, _node(name))
    for a, b in zip([START, *NODES], [*NODES, END], strict=True):
        builder.add_edge(a, b)
    return builder.compile(checkpointer=checkpointer)


def build(name: str = "five", checkpointer: BaseCheckpointSaver[Any] | None = None) -> Agent:
    return from_langgraph(
        graph(checkpointer),
        name=name,
        input_of=lambda folder: {"folder": folder, "trail": []},
        output_of=lambda state: {"trail": state["trail"]},
    )


agent = build()
