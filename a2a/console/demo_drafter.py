"""The console demo's local agent: a program on the prompt channel (stdin/stdout NDJSON).

It drafts the next message about the objective from the remote agent's last reply, and
has nothing more to send once the reviewer approves. Run by ``a2a console --demo`` as
``python -m a2a.console.demo_drafter``; a starting point for a local agent of your own.
"""

from __future__ import annotations

import json
import sys

STEPS = [
    "Here is my plan for {objective!r}: list the endpoints, check authentication on each,"
    " then input validation.",
    "Endpoints: POST /login, GET /users/{{id}}, DELETE /users/{{id}}."
    " /users/{{id}} trusts the id in the path.",
    "Fix proposed: /users/{{id}} checks that the caller owns the id or is an admin; inputs are validated.",
]


def draft(frame: dict[str, object]) -> str:
    remote = str(frame.get("remote_message") or "")
    if remote.startswith("APPROVED"):
        return ""  # nothing more to send: the session completes
    turn = int(str(frame.get("turn_index") or 0))
    step = STEPS[min(turn, len(STEPS) - 1)].format(objective=frame.get("objective", ""))
    return step if not remote else f"{step} (You said: {remote[:80]})"


def main() -> None:
    for line in sys.stdin:
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        answer = {
            "type": "desktop.local_prompt.response",
            "request_id": frame.get("request_id", ""),
            "status": "ok",
            "draft_message": draft(frame),
            "metrics": {"confidence": 0.9},
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
