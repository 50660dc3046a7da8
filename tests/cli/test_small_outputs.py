"""How `a2a task events` prints each kind of journal entry; `a2a console` options checked
before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2a.cli.tasks import _print_event
from bus.durable.wire import TaskEvent

from .conftest import a2a, clean_env


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (TaskEvent(kind="attempt", attempt=1, instance="w-1", n=1), "attempt 1 started on w-1"),
        (TaskEvent(kind="progress", data={"step": 2}, n=2), '{"step": 2}'),
        (
            TaskEvent(kind="child", attempt=1, data={"taskId": "t2", "agent": "coder"}, n=3),
            "attempt 1 submitted task t2 to coder",
        ),
        (TaskEvent(kind="child", attempt=2, data="odd", n=4), "attempt 2 submitted task ? to ?"),
        (TaskEvent(kind="handed-back", attempt=1, message="stopping", n=5), "attempt 1: stopping"),
        (TaskEvent(kind="ended", state="completed", data=7, n=6), "completed: 7"),
    ],
)
def test_each_kind_of_event_reads_as_a_line(
    event: TaskEvent, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _print_event(event, as_json=False)
    line = capsys.readouterr().out.rstrip("\n")
    assert line.startswith(f"{event.n:>4}  --:--:--  ") and line.endswith(text), line


@pytest.mark.parametrize(
    "url", ["ftp://jaeger:16686", "http://user:pw@jaeger:16686", "http://jaeger:16686/?q=1", "nonsense"]
)
def test_the_console_refuses_a_jaeger_url_it_could_not_link_to(url: str, tmp_path: Path) -> None:
    done = a2a("console", "--jaeger-url", url, env=clean_env(tmp_path), timeout=30)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("a2a console: --jaeger-url: "), line
