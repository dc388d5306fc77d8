"""The ``brain`` program: ``brain.cli``'s commands plus ``serve`` (``api.cli``) and
``collect`` (``collectors.cli``), which live above ``brain``.

Kept light: the worker processes of ``brain serve --workers`` are spawned and import
the program's main module again before they build their app, and a worker that starts
too slowly is taken for dead and restarted. The app (``api.server``) is imported only
by the command that runs it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from api import cli as serve_command
from brain import cli as brain_command
from collectors import cli as collect_command

# The commands that live above ``brain``, in the order ``brain --help`` lists them.
COMMANDS = (serve_command.register, collect_command.register)


def create_app(*args: Any, **kwargs: Any) -> Any:
    """The HTTP app alone (``api.app.create_app``), for ``brain simulate``'s in-process
    Brain."""
    from api.app import create_app

    return create_app(*args, **kwargs)


def build_parser():
    """The ``brain`` program's parser: every command."""
    return brain_command.build_parser(COMMANDS, app_factory=create_app)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``brain`` program."""
    return brain_command.main(argv, COMMANDS, app_factory=create_app)


if __name__ == "__main__":
    sys.exit(main())
