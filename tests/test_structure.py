"""The architecture, checked from the source: layers without cycles, small modules, a small public API.

Nothing is imported to build the graph: every ``import`` statement counts, those under
``if TYPE_CHECKING:`` included (a cycle hidden there is still a cycle in the design).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

PACKAGES = ("transports", "bus", "discovery", "a2a")
MAX_LINES = 400
MAX_PUBLIC_NAMES = 35


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules that ``name`` imports (a package re-exporting its own modules excepted)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not (is_package and target.startswith(name + ".")):
                out.add(target)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "a2a.core.runtime" in graph["a2a.cli.run"]  # the graph is really built
    assert _cycles(graph) == []


def test_a_cycle_would_be_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_lower_layers_never_import_higher_ones() -> None:
    order = ["transports", "bus", "discovery", "a2a"]
    modules = _modules()
    for name, path in modules.items():
        layer = order.index(name.split(".")[0])
        for target in _imports(name, path, modules):
            assert order.index(target.split(".")[0]) <= layer, f"{name} imports {target}"


def test_no_module_reaches_into_another_objects_private_members() -> None:
    reaches = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and not (
                    isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name)
                    and node.value.func.id == "super"
                )
            ):
                reaches.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert reaches == []


def test_modules_stay_small() -> None:
    big = {
        name: lines
        for name, path in _modules().items()
        if (lines := path.read_text().count("\n")) > MAX_LINES
    }
    assert big == {}


def test_the_public_api_fits_one_screen() -> None:
    import a2a

    assert len(a2a.__all__) <= MAX_PUBLIC_NAMES
    assert all(hasattr(a2a, name) for name in a2a.__all__)
    for module in ("a2a.errors", "a2a.wire", "a2a.delegation", "a2a.stores", "a2a.testing"):
        imported = __import__(module, fromlist=["__all__"])
        assert all(hasattr(imported, name) for name in imported.__all__), module


def test_a2a_sub_packages_are_layered() -> None:
    """delegation <- stores, observability <- core <- testing, bench, demo <- cli; dev stands alone."""
    rank = {
        "dev": 0,
        "delegation": 1,
        "stores": 2,
        "observability": 2,
        "core": 3,
        "testing": 4,
        "bench": 4,
        "demo": 4,
        "cli": 5,
    }
    modules = _modules()
    for name, path in modules.items():
        parts = name.split(".")
        if parts[0] != "a2a" or len(parts) < 3 or parts[1] not in rank:
            continue  # the facade modules (a2a, a2a.errors, a2a.wire) sit on top
        for target in _imports(name, path, modules):
            tparts = target.split(".")
            if tparts[0] == "a2a" and len(tparts) > 1 and tparts[1] in rank and tparts[1] != parts[1]:
                assert rank[tparts[1]] < rank[parts[1]], f"{name} imports {target}"


REDIS_EDGE = {"discovery.errors", "discovery.cluster"}
"""The modules that may name redis-py's exceptions: the one that translates them to A2A
errors, and the redis-py connection class beneath it (which speaks redis-py's terms)."""


def _redis_exception_names() -> set[str]:
    import redis.exceptions

    return {
        name
        for name, value in vars(redis.exceptions).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }


def _names_redis_exceptions(tree: ast.AST, exceptions: set[str]) -> list[int]:
    """Lines that import or reach redis-py's exception classes (through any redis module)."""
    aliases: set[str] = set()
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "redis":
                    aliases.add(alias.asname or "redis")
                    if alias.name.startswith("redis.exceptions"):
                        lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "redis":
            if node.module == "redis.exceptions" or any(a.name in exceptions for a in node.names):
                lines.append(node.lineno)
            aliases.update(a.asname or a.name for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in exceptions | {"exceptions"}:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                lines.append(node.lineno)
    return sorted(set(lines))


def test_only_the_redis_edge_names_redis_exceptions() -> None:
    exceptions = _redis_exception_names()
    outside = {
        name: lines
        for name, path in _modules().items()
        if name not in REDIS_EDGE
        and (lines := _names_redis_exceptions(ast.parse(path.read_text()), exceptions))
    }
    assert outside == {}, "catch redis-py errors through discovery.errors (redis_errors and its classes)"
    edge = (ROOT / "discovery" / "errors.py").read_text()
    assert _names_redis_exceptions(ast.parse(edge), exceptions)  # the check really finds them


def test_a_redis_exception_named_anywhere_would_be_found() -> None:
    exceptions = _redis_exception_names()
    for source in (
        "import redis.exceptions",
        "from redis.exceptions import WatchError",
        "from redis import RedisError",
        "import redis.asyncio as aioredis\ntry:\n    pass\nexcept aioredis.ConnectionError:\n    pass",
        "import redis\nx = redis.exceptions.ResponseError",
    ):
        assert _names_redis_exceptions(ast.parse(source), exceptions), source
    assert not _names_redis_exceptions(
        ast.parse("import redis.asyncio as r\nx = r.Redis\nConnectionError"), exceptions
    )
