"""Entry-point lookups for the parts of Brain that live outside the ``brain`` package."""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

log = logging.getLogger(__name__)

COMMANDS_GROUP = "brain.commands"
APP_HOOKS_GROUP = "brain.app_hooks"
# The API app's factory (``api.app:create_app``), for an in-process Brain.
APP_FACTORY_GROUP = "brain.app_factory"


def load_callables(group: str) -> dict[str, Callable[..., Any]]:
    """Every loadable callable of a group by name; one that fails to load is logged."""
    found: dict[str, Callable[..., Any]] = {}
    for ep in entry_points(group=group):
        try:
            found[ep.name] = ep.load()
        except Exception as exc:
            log.error("cannot load %s plugin %s (%s): %s", group, ep.name, ep.value, exc)
    return found
