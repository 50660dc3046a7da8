"""A local agent for the session tests: drafts from each request frame it gets on stdin.

What the objective says makes it misbehave on purpose (words anywhere in it):
  ``secret``   the draft holds an API key (semi-auto mode asks the person to review it)
  ``tools:N``  it reports N tool rounds in ``metrics.tool_rounds``
  ``slow``     it never answers (the turn times out)
  ``delay:MS`` it answers after MS milliseconds
  ``crash:K``  it exits at turn K
  ``done:K``   an empty draft at turn K: nothing more to send
  ``pad:N``    N more characters in every draft
Every request frame is appended to the file ``$SESSION_FRAMES`` (when set), one JSON per line.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time


def number(objective: str, word: str) -> int | None:
    m = re.search(rf"\b{word}:(\d+)", objective)
    return int(m.group(1)) if m else None


def main() -> None:
    frames = os.environ.get("SESSION_FRAMES")
    for line in sys.stdin:
        frame = json.loads(line)
        if frames:
            with open(frames, "a") as f:
                f.write(json.dumps(frame) + "\n")
        objective = frame.get("objective", "")
        turn = frame.get("turn_index", 0)
        if number(objective, "crash") == turn:
            sys.stderr.write("drafter: crashing on purpose\n")
            sys.exit(3)
        if "slow" in objective.split():
            time.sleep(3600)
        time.sleep((number(objective, "delay") or 0) / 1000)
        metrics = {"tool_rounds": number(objective, "tools") or 0}
        draft = f"draft {turn} on {objective!r}; the remote said: {frame.get('remote_message', '')[:60]}"
        if "secret" in objective.split():
            draft += " use key sk-proj-abcdefghijklmnop1234567890"
        draft += "x" * (number(objective, "pad") or 0)
        if number(objective, "done") == turn:
            draft = ""
        answer = {
            "type": "desktop.local_prompt.response",
            "request_id": frame["request_id"],
            "status": "ok",
            "draft_message": draft,
            "metrics": metrics,
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
