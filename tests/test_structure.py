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


RANKS = {
    # foundations: they import no other sub-package
    "delegation": 0,  # rosters, policy, redaction, the views of a delegation
    "processes": 0,  # child processes that die with their parent
    "prompt": 0,  # the local prompt channel's frames and turn timeouts (seed 001)
    "web": 0,  # serving an ASGI app with bounded request reads
    # what the runtime keeps and reports; the development servers
    "stores": 1,
    "observability": 1,
    "dev": 1,
    # the runtime
    "core": 2,
    # agents and services built on the runtime
    "adapters": 3,
    "external": 3,
    "stdio": 3,
    "sessions": 3,
    "loop": 3,  # an agent loop that drives a model through seed 003's JSON actions
    # servers of people and other systems
    "gateway": 4,
    "console": 4,
    # tests, measurement, the demo
    "testing": 5,
    "bench": 5,
    "demo": 5,
    # the command line
    "cli": 6,
}
"""A sub-package of ``a2a`` imports only sub-packages of a lower rank: never one of its own rank
(sideways) nor a higher one."""

TOOLS = ("dev", "demo", "bench")
ENTRY_POINTS = ("cli",)


def _sub_packages() -> set[str]:
    return {init.parent.name for init in (ROOT / "a2a").glob("*/__init__.py")}


def _sub_package(name: str, sub_packages: set[str]) -> str | None:
    """The ``a2a`` sub-package of a module; None for the rest (``a2a``, ``a2a.errors``, ``a2a.wire``, ...)."""
    parts = name.split(".")
    return parts[1] if parts[0] == "a2a" and len(parts) > 1 and parts[1] in sub_packages else None


def _cross_imports() -> list[tuple[str, str, str, str]]:
    """(module, its sub-package, imported module, that one's sub-package) for every import
    from one ``a2a`` sub-package into another, the sub-packages' own ``__init__`` included."""
    modules = _modules()
    sub_packages = _sub_packages()
    found = []
    for name, path in modules.items():
        home = _sub_package(name, sub_packages)
        if home is None:
            continue
        for target in _imports(name, path, modules):
            there = _sub_package(target, sub_packages)
            if there is not None and there != home:
                found.append((name, home, target, there))
    return found


def test_every_a2a_sub_package_has_a_rank() -> None:
    assert _sub_packages() == set(RANKS)


def test_a2a_sub_packages_are_layered() -> None:
    """delegation, processes, prompt, web <- stores, observability, dev <- core <- adapters,
    external, stdio, sessions, loop <- gateway, console <- testing, bench, demo <- cli."""
    assert ("a2a.core.runtime", "core", "a2a.delegation.policy", "delegation") in _cross_imports()
    upward = [
        f"{name} imports {target}"
        for name, home, target, there in _cross_imports()
        if RANKS[there] >= RANKS[home]
    ]
    assert upward == []


def test_product_code_never_imports_the_tools() -> None:
    """a2a.dev (development servers), a2a.demo and a2a.bench are tools, never product code.

    The tools may use one another (bench and demo start dev servers). The command line,
    a2a.cli, is the one product package that imports them: ``a2a up``, ``a2a demo``,
    ``a2a bench`` and ``a2a console --demo`` are their entry points, and import them only
    when such a command runs. Everything else imports none of them: a2a.testing and the
    console's demo agents are shipped to users, and transports, bus and discovery sit
    below a2a altogether.
    """
    modules = _modules()
    sub_packages = _sub_packages()
    found = []
    for name, path in modules.items():
        home = _sub_package(name, sub_packages)
        if home in TOOLS or home in ENTRY_POINTS:
            continue
        found += [
            f"{name} imports {target}"
            for target in _imports(name, path, modules)
            if _sub_package(target, sub_packages) in TOOLS
        ]
    assert found == []


def test_the_wire_and_errors_facades_import_nothing_of_a2a() -> None:
    """a2a.wire and a2a.errors re-export types that transports, bus and discovery define: a
    wire type or an error lives below a2a, and naming it loads no store, runtime or server."""
    modules = _modules()
    found = [
        f"{name} imports {target}"
        for name in ("a2a.wire", "a2a.errors")
        for target in _imports(name, modules[name], modules)
        if target.split(".")[0] == "a2a"
    ]
    assert found == []


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
