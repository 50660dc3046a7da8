"""A LangGraph graph that plans, then asks before it goes on; each node's run is appended
to the file ``TURN_COUNT_FILE`` names, so a test counts them across agent processes."""

from __future__ import annotations

import os
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from a2a.adapters.langgraph import from_langgraph


class Plan(TypedDict, total=False):
    text: str
    plan: str
    answer: str


def _ran(node: str) -> None:
    with open(os.environ["TURN_COUNT_FILE"], "a") as f:
        f.write(node + "\n")


def prepare(state: Plan) -> Plan:
    _ran("prepare")
    return {"plan": f"plan for {state['text']}"}


def ask(state: Plan) -> Plan:
    answer = interrupt(f"go ahead with the {state['plan']}?")
    _ran("answered")
    return {"answer": str(answer)}


_builder = StateGraph(Plan)
_builder.add_node("prepare", prepare)
_builder.add_node("ask", ask)
_builder.add_edge(START, "prepare")
_builder.add_edge("prepare", "ask")
_builder.add_edge("ask", END)

planner = from_langgraph(
    _builder.compile(), name="planner", input_of=lambda text: {"text": text}, output_of=lambda s: s
)
