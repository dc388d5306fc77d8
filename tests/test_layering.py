"""Imports flow one way: api, collectors and optimizers use brain; brain uses none of them."""

from __future__ import annotations

import ast
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE_BRAIN = {"api", "collectors", "optimizers"}


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _imported_packages(path: Path) -> set[str]:
    return {module.split(".")[0] for module in _imported_modules(path)}


def test_brain_never_imports_api_collectors_or_optimizers():
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & OUTSIDE_BRAIN)
        for path in (ROOT / "brain").rglob("*.py")
        if _imported_packages(path) & OUTSIDE_BRAIN
    }
    assert offenders == {}


# Optimizers are pure: no database, no global settings, no network.
IMPURE_PACKAGES = {"api", "collectors", "sqlalchemy", "psycopg", "httpx", "prometheus_api_client"}
IMPURE_BRAIN_MODULES = (
    "brain.config",
    "brain.db",
    "brain.history",
    "brain.services",
    "brain.summaries",
)


def test_optimizers_are_pure():
    for path in (ROOT / "optimizers").rglob("*.py"):
        modules = _imported_modules(path)
        assert not _imported_packages(path) & IMPURE_PACKAGES, path
        assert not [m for m in modules if m.startswith(IMPURE_BRAIN_MODULES)], path


def _brain_part(path: Path) -> str:
    """The subpackage (or top-level module) of ``brain`` that a file belongs to."""
    return path.relative_to(ROOT / "brain").parts[0].removesuffix(".py")


def brain_dependencies() -> dict[str, dict[str, set[str]]]:
    """``{part: {imported part: files importing it}}`` between parts of ``brain``,
    counting every import (also inside functions) except those of a part's own modules."""
    graph: dict[str, dict[str, set[str]]] = {}
    for path in (ROOT / "brain").rglob("*.py"):
        if path.parent == ROOT / "brain" and path.name == "__init__.py":
            continue
        source = _brain_part(path)
        graph.setdefault(source, {})
        for module in _imported_modules(path):
            parts = module.split(".")
            if parts[0] == "brain" and len(parts) > 1 and parts[1] != source:
                graph[source].setdefault(parts[1], set()).add(str(path.relative_to(ROOT)))
    return graph


def find_cycle(graph: dict[str, dict[str, set[str]]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or ``None`` if the graph has none."""
    done: set[str] = set()
    path: list[str] = []

    def visit(part: str) -> list[str] | None:
        if part in path:
            return [*path[path.index(part) :], part]
        if part in done:
            return None
        path.append(part)
        for imported in sorted(graph.get(part, {})):
            cycle = visit(imported)
            if cycle:
                return cycle
        path.pop()
        done.add(part)
        return None

    for part in sorted(graph):
        cycle = visit(part)
        if cycle:
            return cycle
    return None


def test_no_import_cycle_between_brain_subpackages():
    graph = brain_dependencies()
    cycle = find_cycle(graph)
    if cycle:
        steps = [f"{a} -> {b} ({', '.join(sorted(graph[a][b]))})" for a, b in pairwise(cycle)]
        raise AssertionError("import cycle inside brain:\n" + "\n".join(steps))


def test_the_cycle_finder_finds_a_cycle_and_only_a_cycle():
    chain = {"a": {"b": {"f"}}, "b": {"c": {"f"}}, "c": {}}
    assert find_cycle(chain) is None
    chain["c"] = {"a": {"f"}}
    assert find_cycle(chain) == ["a", "b", "c", "a"]
