"""What to run for a stdio agent, checked before anything starts, and how its exits read."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessSpec", "exit_reason"]


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """A program to run: its arguments, working directory and full environment (None: inherited)."""

    command: tuple[str, ...]
    cwd: str | None = None
    env: Mapping[str, str] | None = None

    @classmethod
    def build(
        cls,
        command: Sequence[str],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ProcessSpec:
        """Check ``command`` can run: ``env`` is added to this process's environment.

        The program is looked up as the child will look it up: a name without ``/`` on the
        ``PATH`` of its environment, a path relative to ``cwd``.

        Raises:
            ValueError: no command, a ``cwd`` that is not a directory, a program that is
                not found or not executable.
        """
        if isinstance(command, str):
            raise ValueError("the command is a sequence of arguments, not one string")
        args = tuple(str(a) for a in command)
        if not args or not args[0]:
            raise ValueError("a stdio agent needs a command to run")
        where = None if cwd is None else Path(cwd)
        if where is not None and not where.is_dir():
            raise ValueError(f"the working directory {str(where)!r} is not a directory")
        full_env = None if env is None else {**os.environ, **env}
        program = args[0]
        if os.sep in program:
            path = Path(program) if where is None else where / program
            found = path.is_file() and os.access(path, os.X_OK)
        else:
            found = shutil.which(program, path=(full_env or os.environ).get("PATH", os.defpath)) is not None
        if not found:
            raise ValueError(f"command not found or not executable: {program!r}")
        return cls(args, None if where is None else str(where), full_env)


def exit_reason(returncode: int | None) -> str:
    """``exited with code 3``, ``was killed by SIGKILL``, ``was lost`` (no exit status)."""
    if returncode is None:
        return "was lost"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with code {returncode}"
