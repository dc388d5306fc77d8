"""Entry-point lookups for third-party plugins: optimizers (``brain.optimizing``), extra
``brain`` commands and hooks run inside ``brain serve``'s lifespan. Brain's own parts are
not found this way: ``api.server`` names them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

log = logging.getLogger(__name__)

# Each entry is called with the ``brain`` program's subparsers to add a command.
COMMANDS_GROUP = "brain.commands"
# Each entry is called with the FastAPI app inside its lifespan, after Brain's own parts.
APP_HOOKS_GROUP = "brain.app_hooks"


def load_callables(group: str) -> dict[str, Callable[..., Any]]:
    """Every loadable callable of a group by name; one that fails to load is logged."""
    found: dict[str, Callable[..., Any]] = {}
    for ep in entry_points(group=group):
        try:
            found[ep.name] = ep.load()
        except Exception as exc:
            log.error("cannot load %s plugin %s (%s): %s", group, ep.name, ep.value, exc)
    return found
