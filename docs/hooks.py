"""MkDocs hooks: the generated reference tables, and a nav that never names a missing
page nor leaves a page out.

``<!-- brain:settings -->`` becomes the table of every ``BRAIN_*`` setting,
``<!-- brain:optimizers -->`` a section per registered optimizer,
``<!-- brain:cli -->`` the ``--help`` of every ``brain`` command and
``<!-- brain:optimizer-settings NAME -->`` the table of optimizer NAME's settings, all
read from the code's own descriptions (``brain.reference``).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import PurePosixPath

SETTINGS = "<!-- brain:settings -->"
OPTIMIZERS = "<!-- brain:optimizers -->"
CLI = "<!-- brain:cli -->"
OPTIMIZER = re.compile(r"<!-- brain:optimizer-settings (\w+) -->")


@cache
def _registry():
    from brain.optimizing.registry import load_registry

    return load_registry()


def on_page_markdown(markdown, page, config, files):
    from brain.reference import optimizer_settings_table, optimizers_reference, settings_table

    if SETTINGS in markdown:
        markdown = markdown.replace(SETTINGS, settings_table())
    if CLI in markdown:
        markdown = markdown.replace(CLI, _cli_reference())
    if OPTIMIZERS in markdown:
        markdown = markdown.replace(OPTIMIZERS, optimizers_reference(_registry()))
    return OPTIMIZER.sub(lambda m: optimizer_settings_table(_registry(), m.group(1)), markdown)


def on_files(files, config):
    pages = {PurePosixPath(f.src_uri).as_posix() for f in files.documentation_pages()}
    named: set[str] = set()
    config["nav"] = _present(config.get("nav") or [], pages, named)
    rest = sorted(pages - named)
    if rest:
        config["nav"].append({"More": rest})
    return files


def _present(items, pages, named):
    """The nav entries whose page exists (sections kept while they hold any), each page once."""
    kept = []
    for item in items:
        title, target = next(iter(item.items())) if isinstance(item, dict) else (None, item)
        if isinstance(target, list):
            inner = _present(target, pages, named)
            if inner:
                kept.append({title: inner})
        elif target in pages and target not in named:
            named.add(target)
            kept.append({title: target} if title else target)
    return kept


def _cli_reference() -> str:
    """Each command's ``--help``, as ``brain`` prints it (80 columns)."""
    import argparse
    import os

    from api.main import build_parser

    os.environ["COLUMNS"] = "80"
    sections = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        title = " ".join(words)
        sections.append(f"### `{title}`\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])

    walk(build_parser(), ["brain"])
    return "\n".join(sections)
