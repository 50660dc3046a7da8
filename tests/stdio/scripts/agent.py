"""A local agent for the stdio bridge's tests: it answers each request as its remote_message says.

    <text>          "<AGENT_NAME> says <text>"
    show            the request frame itself, as JSON, in draft_message
    pid             its process id
    progress        three progress frames, then the answer
    error           status "error" with a reason
    tools:A,B       "used A,B", reporting the tools A and B in tools_used
    tokens:P,C      "spent", reporting P prompt and C completion tokens in metrics (as given)
    garbage         lines that are no frames first (text, bad JSON, an array, an unknown type)
    wrongid         a response for another request first
    twice           two terminal frames
    malformed       a response frame with this request_id and an invalid status
    huge:N          a line of N bytes first
    flood:N         N bytes of stderr first
    floodwait:N     N bytes of stderr, then answers two seconds later
    sleep:S         answers after S seconds
    silent          never answers (keeps reading nothing)
    crash           writes to stderr and exits with code 3
    spawn           starts a grandchild that sleeps, answers with its pid
    spawn-setsid    the same, the grandchild in a session of its own
    badbytes        lines that are not UTF-8 first (bare, and inside a progress frame)
    badanswer       a response frame with this request_id and a draft that is not UTF-8
    halfpair        a response frame with this request_id and half a surrogate pair escaped
    hugeanswer:N    a response frame with this request_id and a draft of N bytes
    barrier:DIR:N   creates DIR/<pid> and answers once N such files exist (at most 10 s)

With STUBBORN=1 it ignores SIGTERM and keeps running after stdin closes.
"""

import json
import os
import signal
import subprocess
import sys
import time

NAME = os.environ.get("AGENT_NAME", "local")


def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def answer(rid, draft, status="ok", reason=""):
    send(
        {
            "type": "desktop.local_prompt.response",
            "request_id": rid,
            "status": status,
            "draft_message": draft,
            "reason": reason,
            "metrics": {"latency_ms": 1},
        }
    )


def handle(frame):
    rid = frame["request_id"]
    text = frame["remote_message"].split("\n", 1)[0]  # a delegated task: its first line
    command, _, arg = text.partition(":")
    if text == "show":
        answer(rid, json.dumps(frame))
    elif text == "pid":
        answer(rid, str(os.getpid()))
    elif text == "progress":
        for i in range(3):
            send({"type": "desktop.local_prompt.progress", "request_id": rid, "text": f"step {i}"})
        answer(rid, "done")
    elif command == "tools":
        send(
            {
                "type": "desktop.local_prompt.response",
                "request_id": rid,
                "status": "ok",
                "draft_message": f"used {arg}",
                "tools_used": arg.split(","),
            }
        )
    elif command == "tokens":
        prompt, completion = (json.loads(v) for v in arg.split(","))
        send(
            {
                "type": "desktop.local_prompt.response",
                "request_id": rid,
                "status": "ok",
                "draft_message": "spent",
                "metrics": {"prompt_tokens": prompt, "completion_tokens": completion},
            }
        )
    elif text == "error":
        answer(rid, "", status="error", reason="cannot do that")
    elif text == "garbage":
        sys.stdout.write('hello\n{"type": \n[1, 2]\n{"type": "something.else", "request_id": "x"}\n\n')
        answer(rid, "after garbage")
    elif text == "wrongid":
        answer("req_not_yours", "wrong")
        answer(rid, "right")
    elif text == "twice":
        answer(rid, "first")
        answer(rid, "second")
    elif text == "malformed":
        send({"type": "desktop.local_prompt.response", "request_id": rid, "status": "maybe"})
    elif text == "halfpair":  # half an emoji, as JSON.stringify writes a string cut in two
        frame = '{"type": "desktop.local_prompt.response", "request_id": "%s", "status": "ok", '
        sys.stdout.write(frame % rid + '"draft_message": "cut \\ud83d"}\n')
        sys.stdout.flush()
    elif command == "huge":
        sys.stdout.write("x" * int(arg) + "\n")
        answer(rid, "after huge")
    elif command in ("flood", "floodwait"):
        line = "e" * 99 + "\n"
        for _ in range(int(arg) // 100):
            sys.stderr.write(line)
        sys.stderr.flush()
        if command == "floodwait":
            time.sleep(2.0)  # the stderr lines are read before the answer comes
        answer(rid, "after flood")
    elif command == "sleep":
        time.sleep(float(arg))
        answer(rid, f"slept {arg}")
    elif text == "silent":
        time.sleep(3600)
    elif text == "crash":
        sys.stderr.write("boom: something broke\n")
        sys.stderr.flush()
        os._exit(3)
    elif text in ("spawn", "spawn-setsid"):
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=text == "spawn-setsid"
        )
        answer(rid, str(child.pid))
    elif text == "badbytes":
        progress = b'{"type": "desktop.local_prompt.progress", "request_id": "%s", "text": "\xff"}\n'
        sys.stdout.buffer.write(b"\xff\xfe\x80 not utf-8\n" + progress % rid.encode())
        sys.stdout.flush()
        answer(rid, "after bad bytes")
    elif text == "badanswer":
        frame = b'{"type": "desktop.local_prompt.response", "request_id": "%s", "status": "ok", '
        sys.stdout.buffer.write(frame % rid.encode() + b'"draft_message": "caf\xe9"}\n')
        sys.stdout.flush()
    elif command == "hugeanswer":
        answer(rid, "x" * int(arg))
    elif command == "barrier":
        where, _, count = arg.rpartition(":")
        open(os.path.join(where, str(os.getpid())), "w").close()
        deadline = time.monotonic() + 10
        while len(os.listdir(where)) < int(count) and time.monotonic() < deadline:
            time.sleep(0.02)
        answer(rid, str(os.getpid()))
    else:
        answer(rid, f"{NAME} says {text}")


def main():
    if os.environ.get("STUBBORN"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for line in sys.stdin:
        handle(json.loads(line))
    if os.environ.get("STUBBORN"):
        time.sleep(3600)


main()
