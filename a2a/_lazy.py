"""Public names imported on first use (PEP 562), so that importing a package costs nothing
until one of its names is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, str], namespace: dict[str, Any], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: a name in ``where`` is imported from the
    module given there (relative to ``package`` when it starts with a dot), any other from the
    sub-module of that name; each is kept in ``namespace`` once found."""

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
        else:
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        namespace[name] = value  # found once: later lookups do not come here
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(public))

    return getattr_, dir_
