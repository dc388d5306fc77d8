"""``brain`` commands run in-process by their handlers, parsed as the program parses
them (without its logging set-up or its check that the database is there)."""

from __future__ import annotations

from brain.cli import build_parser


def run_command(command: str, argv: list[str]) -> int:
    """The exit status of ``brain <command> <argv...>``."""
    args = build_parser().parse_args([command, *argv])
    return args.handler(args)
