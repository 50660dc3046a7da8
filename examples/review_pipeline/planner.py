"""The planner: a LangGraph graph served on the bus with :func:`a2a.adapters.langgraph.from_langgraph`.

Its nodes call other bus agents through bus tools: the coder by capability (whichever
live instance writes code best: here a pydantic-ai agent) and the reviewer by name
(here a local program on stdio). Every call is a child of the planner's own call, so
the caller's deadline, depth and cycle limits, budget and trace hold across all three
frameworks. The loop is: write, review, write again with the review's notes, until the
reviewer approves or three rounds have passed.
"""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from a2a import by_capability
from a2a.adapters import call_tool, delegate_tool
from a2a.adapters.langgraph import from_langgraph

MAX_ROUNDS = 3

write_code = delegate_tool(by_capability("code.write"), name="write_code")
review_code = call_tool("reviewer", "run", name="review_code")


class State(TypedDict, total=False):
    text: str
    code: str
    review: str
    rounds: int


async def write(state: State) -> State:
    task = state["text"]
    if state.get("review"):
        task += f". The reviewer said: {state['review']}"
    code = await write_code.run({"task": task})
    return {"code": str(code), "rounds": state.get("rounds", 0) + 1}


async def review(state: State) -> State:
    return {"review": str(await review_code.run({"text": state["code"]}))}


def next_step(state: State) -> str:
    if state["review"].startswith("APPROVED") or state.get("rounds", 0) >= MAX_ROUNDS:
        return END
    return "write"


graph = StateGraph(State)
graph.add_node("write", write)
graph.add_node("review", review)
graph.add_edge(START, "write")
graph.add_edge("write", "review")
graph.add_conditional_edges("review", next_step)

agent = from_langgraph(
    graph.compile(),
    name="planner",
    capabilities=["plan"],
    description="Has code written and reviewed until the reviewer approves",
    input_of=lambda text: {"text": text},
    output_of=lambda state: {"code": state["code"], "review": state["review"], "rounds": state["rounds"]},
)
