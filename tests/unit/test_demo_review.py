"""The demo reviewer's check and its review procedure, the "model" of its agent loop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from a2a.demo.checks import MISSING, NONE_UNSAID, amend_docstring, problems_in
from a2a.demo.review import MAX_FIXES, review_procedure
from a2a.demo.workspace import INVENTORY
from a2a.loop import Message, decode_action

pytestmark = pytest.mark.anyio

FIRST_VERSION = INVENTORY.replace(
    "def restock(items, name, qty):\n", 'def restock(items, name, qty):\n    """Restock from items."""\n'
).replace("def total_price(items):\n", 'def total_price(items):\n    """Total price from items."""\n')


def test_the_check_finds_missing_docstrings_and_an_unsaid_none() -> None:
    assert [(p["function"], p["kind"]) for p in problems_in(INVENTORY)] == [
        ("total_price", MISSING),
        ("restock", MISSING),
    ]
    assert [(p["function"], p["kind"]) for p in problems_in(FIRST_VERSION)] == [("restock", NONE_UNSAID)]
    fixed = amend_docstring(FIRST_VERSION, "restock", "None when nothing matches.")
    assert '    """Restock from items; None when nothing matches."""\n' in fixed
    assert problems_in(fixed) == []


@pytest.mark.parametrize(
    ("body", "flagged"),
    [
        ("    if x:\n        return 1\n", True),  # runs off its end: None
        ("    if x:\n        return 1\n    return\n", True),
        ("    if x:\n        return 1\n    raise ValueError(x)\n", False),
        ("    print(x)\n", False),  # a procedure
        (
            "    def inner():\n        return None\n    return inner\n",
            False,
        ),  # nested returns are not its own
    ],
)
def test_what_counts_as_returning_none_sometimes(body: str, flagged: bool) -> None:
    source = f'def f(x):\n    """Does f."""\n{body}'
    assert bool(problems_in(source)) is flagged


def observation(
    name: str, ok: bool, result: Any = None, error: Any = None, kind: str = "tool_call"
) -> Message:
    body = {"observation": kind, "ok": ok, "name": name, "result": result}
    if error is not None:
        body["error"] = error
    return {"role": "user", "content": json.dumps(body)}


FAIL = {
    "verdict": "FAIL",
    "problems": [{"function": "restock", "line": 9, "kind": NONE_UNSAID, "problem": "p"}],
}
PASS = {"verdict": "PASS", "problems": []}
FIXED = {"status": "success", "summary": "fixed 1 problem(s)", "result": ""}
START: list[Message] = [{"role": "system", "content": "..."}, {"role": "user", "content": "Review a.py."}]


async def next_action(*seen: Message) -> dict[str, Any]:
    reply = await review_procedure("a.py")([*START, *seen])
    decode_action(reply)  # always a valid action
    return json.loads(reply)  # type: ignore[no-any-return]


async def test_the_procedure_lints_asks_the_writer_and_passes() -> None:
    assert await next_action() == {"action": "tool_call", "tool": "lint", "args": {"path": "a.py"}}
    ask = await next_action(observation("lint", True, FAIL))
    assert ask["action"] == "call_agent" and ask["target"] == "writer" and ask["thread_mode"] == "reuse"
    assert (
        ask["task"].startswith("FAIL: restock (line 9) p") and ask["context"]["problems"] == FAIL["problems"]
    )
    again = await next_action(
        observation("lint", True, FAIL), observation("writer", True, FIXED, kind="call_agent")
    )
    assert again["tool"] == "lint"
    done = await next_action(
        observation("lint", True, FAIL),
        observation("writer", True, FIXED, kind="call_agent"),
        observation("lint", True, PASS),
    )
    assert done["action"] == "done" and done["result"]["verdict"] == "PASS"
    assert [r.get("check") or r["fix"] for r in done["result"]["rounds"]] == ["FAIL", "writer", "PASS"]


async def test_the_procedure_never_claims_a_pass_it_did_not_see() -> None:
    fix = observation("writer", True, FIXED, kind="call_agent")
    rounds = [observation("lint", True, FAIL), fix] * MAX_FIXES
    gave_up = await next_action(*rounds, observation("lint", True, FAIL))
    assert gave_up["action"] == "respond" and gave_up["text"].startswith(f"FAIL after {MAX_FIXES} fix(es)")
    refused = await next_action(
        observation("lint", True, FAIL),
        observation("writer", False, error={"code": "PERMISSION_DENIED", "message": "no"}, kind="call_agent"),
    )
    assert refused == {"action": "respond", "text": "writer failed: PERMISSION_DENIED: no"}
