"""Prose written for Python readers (docstrings, setting descriptions) shown as HTML."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

# Code literals as reStructuredText writes them (``name``) or Markdown (`name`).
LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")


def format_prose(text: str | None) -> Markup:
    """Plain text with its code literals as <code> and its paragraphs (split at blank
    lines, lines joined) as <p>; everything else escaped."""
    paragraphs = [" ".join(p.split()) for p in (text or "").split("\n\n") if p.strip()]

    def literal(match: re.Match) -> str:
        return f"<code>{match.group(1) or match.group(2)}</code>"

    # Escaped first: a literal's text is escaped too and cannot open a tag.
    return Markup("".join(f"<p>{LITERAL.sub(literal, str(escape(p)))}</p>" for p in paragraphs))


def first_paragraph(text: str | None) -> str:
    """The text up to its first blank line (a docstring's summary)."""
    return (text or "").split("\n\n", 1)[0]


def rest_paragraphs(text: str | None) -> str:
    """The text after its first paragraph ("" when it has one only)."""
    parts = (text or "").split("\n\n", 1)
    return parts[1] if len(parts) > 1 else ""
