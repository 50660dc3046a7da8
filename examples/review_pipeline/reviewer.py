"""A code reviewer that is just a local program: seed 001's NDJSON frames on stdin/stdout.

It reads one ``desktop.local_prompt.request`` per line and answers each with exactly one
``desktop.local_prompt.response``. It knows nothing of NATS or Redis; ``a2a serve-stdio``
(or :func:`a2a.stdio.stdio_agent`) makes it a bus agent. Anything it wants to say that
is not a frame goes to stderr, which the bridge keeps apart from the protocol.

The review is rule-based so the example runs without a model: swap ``review`` for a call
to your model of choice.
"""

from __future__ import annotations

import json
import re
import sys
import time


def review(code: str) -> str:
    findings = []
    if "def " not in code:
        findings.append("no function found")
    if '"""' not in code:
        findings.append("public functions need docstrings")
    if re.search(r"except\s*:", code):
        findings.append("bare except hides errors")
    if "eval(" in code:
        findings.append("eval() on input is unsafe")
    if not findings:
        return "APPROVED: the change is small, documented and safe."
    return "CHANGES REQUESTED: " + "; ".join(findings) + "."


def main() -> None:
    print("reviewer ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        start = time.monotonic()
        try:
            frame = json.loads(line)
        except json.JSONDecodeError:
            print(f"not a frame: {line[:80]!r}", file=sys.stderr, flush=True)
            continue
        if frame.get("type") != "desktop.local_prompt.request":
            continue
        code = frame.get("remote_message") or frame.get("objective") or ""
        response = {
            "type": "desktop.local_prompt.response",
            "request_id": frame.get("request_id", ""),
            "status": "ok",
            "draft_message": review(code),
            "reason": "",
            "metrics": {"latency_ms": int((time.monotonic() - start) * 1000)},
        }
        print(json.dumps(response), flush=True)


if __name__ == "__main__":
    main()
