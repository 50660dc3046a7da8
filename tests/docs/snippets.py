"""The fenced code of README.md and docs/**/*.md, found and run.

Every ``python`` and ``bash`` fence is run, or says why not with an HTML comment on the
line before it (blank lines may come between):

    <!-- illustrative: needs a Jaeger server -->   not run; the reason is required
    <!-- file: agents.py -->                       written into the page's folder (any language):
                                                   later fences import or read it
    <!-- cwd: repo -->                             run in the repository's root, not the page's folder
    <!-- output -->                                on a text fence: the stdout of the fence run just
                                                   before it, exactly
    <!-- fails: PERMISSION_DENIED -->              the fence must exit non-zero, saying this on stderr

How a fence runs, in a folder of its own for each page, fence after fence in page order:

- python: as ``python snippet.py``; a fence that defines ``async def main`` and never runs it
  gets ``anyio.run(main)`` appended. A fence that defines ``test_`` functions is a test file,
  run by pytest in that folder (its own ``conftest.py`` comes from a ``file:`` fence).
- bash: with ``bash -eu``, each line in the folder with the exports and working directory the
  page's earlier fences left. A line that starts a command that runs until stopped
  (``a2a serve``, ``a2a gateway``, ...) is started in the background, and the next line
  waits until that command says it is ready: what a reader does in a second terminal. Every
  background command is stopped when the page ends.

Every process gets ``NATS_URL``, ``REDIS_URL`` (the test session's servers) and a fresh
``A2A_NAMESPACE`` per page; ports 8080, 8081 and 8470 in bash fences become free ports.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = ("python", "bash")
"""Languages whose fences must run or say why not."""
PORTS = ("8080", "8081", "8470")
"""Well-known ports in the pages, replaced by free ones when run."""
SNIPPET_TIMEOUT = 60.0

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_DIRECTIVE = re.compile(
    r"^\s*<!--\s*(?P<name>illustrative|file|cwd|output|fails)\b\s*:?\s*(?P<value>.*?)\s*-->\s*$"
)
_MAIN = re.compile(r"^async def main\(", re.M)
_RUNS_MAIN = re.compile(r"(anyio|asyncio)\.run\(\s*main")
_TEST = re.compile(r"^(async )?def test_", re.M)

# Commands that run until stopped, and what each prints once it is ready.
_BACKGROUND = {
    "serve": "serving ",
    "serve-stdio": "serving ",
    "gateway": "A2A gateway on ",
    "console": "A2A console on ",
    "attach": "attached ",
    "up": "export REDIS_URL",
    "watch": "",
}
_BACKGROUND_LINE = re.compile(
    r"^(?P<env>(?:[A-Z_][A-Z0-9_]*=\S*\s+)*)(?:\S*/)?a2a\s+(?:-v+\s+)?(?P<cmd>"
    + "|".join(_BACKGROUND)
    + r")\b"
)


@dataclass
class Snippet:
    """One fenced block of a page."""

    page: str
    line: int
    lang: str
    code: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN and "illustrative" not in self.directives and "file" not in self.directives


def pages() -> list[Path]:
    """README.md and every page of the documentation site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _lang(name: str) -> str:
    return {"py": "python", "sh": "bash", "shell": "bash", "console": "bash"}.get(name, name)


def parse(path: Path) -> list[Snippet]:
    """The fenced blocks of ``path`` with the directives written before each."""
    page = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    snippets: list[Snippet] = []
    pending: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _DIRECTIVE.match(line)
        if directive:
            pending[directive["name"]] = directive["value"]
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            indent, marker = len(fence["indent"]), fence["fence"]
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            code = textwrap.dedent("\n".join(body)) + "\n"
            start = i - len(body)
            snippets.append(Snippet(page, start, _lang(fence["lang"].lower()), code, pending))
            pending = {}
        elif line.strip():
            pending = {}  # a directive applies to the very next fence only
        i += 1
    return snippets


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _logical_lines(code: str) -> list[str]:
    """Shell lines with backslash continuations joined; blank lines and comments dropped."""
    out: list[str] = []
    current = ""
    for raw in code.splitlines():
        if current:
            current += "\n" + raw
        elif raw.strip() and not raw.strip().startswith("#"):
            current = raw
        else:
            continue
        if not current.endswith("\\"):
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return out


class PageRun:
    """Runs one page's fences in order, in a folder of its own; :meth:`close` stops what they left."""

    def __init__(self, page: str, folder: Path, nats_url: str, redis_url: str) -> None:
        self.page = page
        self.folder = folder
        self.state = folder / ".shell-state"
        self.ports = {port: str(free_port()) for port in PORTS}
        self.background: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.last_stdout = ""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("A2A_", "NATS_", "REDIS_", "OTEL_", "PYTEST_", "COV_"))
        }
        bindir = str(Path(sys.executable).parent)
        env.update(
            NATS_URL=nats_url,
            REDIS_URL=redis_url,
            A2A_NAMESPACE="docs" + uuid.uuid4().hex[:10],
            PATH=os.pathsep.join([bindir, env.get("PATH", "")]),
            PYTHONPATH=str(folder),
            COLUMNS="100",
            NO_COLOR="1",
            CREWAI_DISABLE_TELEMETRY="true",
            CREWAI_TRACING_ENABLED="false",
            CREWAI_DISABLE_VERSION_CHECK="true",
        )
        self.env = env
        (folder / "pytest.ini").write_text("[pytest]\n")  # the page's folder is its own test root

    # -- one fence -------------------------------------------------------------------------

    def run(self, snippet: Snippet) -> None:
        if snippet.directives.get("output") is not None and snippet.lang not in RUN:
            want, got = snippet.code.strip(), self.last_stdout.strip()
            assert got == want, f"{snippet.where}: the fence before printed\n{got}\nnot\n{want}"
            return
        if "file" in snippet.directives:
            self._write(snippet)
            return
        if not snippet.runs:
            return
        cwd = ROOT if snippet.directives.get("cwd") == "repo" else self.folder
        if snippet.lang == "python":
            self.last_stdout = self._python(snippet, cwd)
        else:
            self.last_stdout = self._bash(snippet, cwd)

    def _write(self, snippet: Snippet) -> None:
        target = self.folder / snippet.directives["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(snippet.code)
        if snippet.lang == "python":
            compile(snippet.code, str(target), "exec")

    def _python(self, snippet: Snippet, cwd: Path) -> str:
        code = snippet.code
        name = f"snippet_{snippet.line}.py"
        if _TEST.search(code):
            path = self.folder / f"test_snippet_{snippet.line}.py"
            path.write_text(code)
            argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
        else:
            if _MAIN.search(code) and not _RUNS_MAIN.search(code):
                code += "\n\nimport anyio\n\nanyio.run(main)\n"
            path = self.folder / name
            path.write_text(code)
            argv = [sys.executable, str(path)]
        return self._check(snippet, self._exec(snippet, argv, cwd))

    def _bash(self, snippet: Snippet, cwd: Path) -> str:
        code = snippet.code
        for port, free in self.ports.items():
            code = code.replace(port, free)
        if "<<" in code:  # a here-document: one script, nothing in the background
            return self._shell(snippet, code, cwd)
        out = []
        batch: list[str] = []
        for line in _logical_lines(code):
            match = _BACKGROUND_LINE.match(line.strip())
            if match and "--help" not in line:
                if batch:
                    out.append(self._shell(snippet, "\n".join(batch), cwd))
                    batch = []
                self._start(snippet, line.strip(), match["cmd"], bool(match["env"]), cwd)
            else:
                batch.append(line)
        if batch:
            out.append(self._shell(snippet, "\n".join(batch), cwd))
        return "".join(out)

    def _prelude(self, cwd: Path) -> str:
        restore = f"[ -f {self.state} ] && source {self.state}\n"
        return f"set -eu\n{restore}cd {shlex.quote(str(cwd))}\n"

    def _shell(self, snippet: Snippet, code: str, cwd: Path) -> str:
        script = self._prelude(cwd) + code + f"\nexport -p > {self.state}\n"
        return self._check(snippet, self._exec(snippet, ["bash", "-c", script], cwd), code)

    def _exec(self, snippet: Snippet, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(argv, cwd=cwd, env=self.env, capture_output=True, timeout=SNIPPET_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
            raise AssertionError(
                f"{snippet.where}: still running after {SNIPPET_TIMEOUT:g} s\n{out}"
            ) from None

    def _start(self, snippet: Snippet, line: str, command: str, assigns: bool, cwd: Path) -> None:
        """``line`` in the background, until the page ends; returns once it says it is ready."""
        log = self.folder / f"background-{len(self.background)}.log"
        script = self._prelude(cwd) + ("exec env " if assigns else "exec ") + line
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", script],
                cwd=cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.background.append((proc, log))
        ready = _BACKGROUND[command]
        deadline = time.monotonic() + SNIPPET_TIMEOUT
        while ready and ready not in log.read_text(errors="replace"):
            status = proc.poll()
            if status is not None:
                assert status == 0, f"{snippet.where}: `{line}` exited {status}:\n{log.read_text()}"
                return  # it did its work and finished (`a2a up` with servers already given)
            assert time.monotonic() < deadline, f"{snippet.where}: `{line}` not ready:\n{log.read_text()}"
            time.sleep(0.05)

    def _check(self, snippet: Snippet, done: subprocess.CompletedProcess[bytes], code: str = "") -> str:
        stdout = done.stdout.decode(errors="replace")
        expected = snippet.directives.get("fails")
        if expected is not None:
            stderr = done.stderr.decode(errors="replace")
            assert done.returncode != 0, f"{snippet.where}: should have failed\n{stdout}{stderr}"
            assert expected in stderr, f"{snippet.where}: failed without saying {expected!r}:\n{stderr}"
            return stdout
        if done.returncode != 0:
            logs = "\n".join(
                f"--- {log.name}:\n{log.read_text(errors='replace')}" for _, log in self.background
            )
            raise AssertionError(
                f"{snippet.where}: exit status {done.returncode}\n{code or snippet.code}\n"
                f"--- stdout:\n{stdout}\n--- stderr:\n{done.stderr.decode(errors='replace')}\n{logs}"
            )
        return stdout

    # -- the end of the page ---------------------------------------------------------------

    def close(self) -> None:
        """Stop every background command (its whole process group): SIGTERM, then SIGKILL."""
        for proc, _ in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc, _ in self.background:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
            with contextlib.suppress(ProcessLookupError):  # what it started in its group and left
                os.killpg(proc.pid, signal.SIGKILL)


def summary() -> str:
    """How many fences run, are written as files, or are illustrative (and why), page by page."""
    lines = []
    totals = {"run": 0, "file": 0, "illustrative": 0}
    for page in pages():
        for s in parse(page):
            if s.lang not in RUN and "file" not in s.directives:
                continue
            kind = (
                "illustrative"
                if "illustrative" in s.directives
                else "file"
                if "file" in s.directives
                else "run"
            )
            totals[kind] += 1
            if kind == "illustrative":
                lines.append(f"  {s.where}: {s.directives['illustrative']}")
    head = ", ".join(f"{n} {kind}" for kind, n in totals.items())
    return "\n".join([head, *lines])


if __name__ == "__main__":
    print(summary())
