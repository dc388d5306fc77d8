"""Imports flow one way: api, collectors and optimizers use brain; brain uses none of them."""

from __future__ import annotations

import ast
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
IMPURE_BRAIN_MODULES = ("brain.config", "brain.db", "brain.services", "brain.summaries")


def test_optimizers_are_pure():
    for path in (ROOT / "optimizers").rglob("*.py"):
        modules = _imported_modules(path)
        assert not _imported_packages(path) & IMPURE_PACKAGES, path
        assert not [m for m in modules if m.startswith(IMPURE_BRAIN_MODULES)], path
