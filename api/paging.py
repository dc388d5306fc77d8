"""Pages that stay small whatever was stored: a list answer stops before it would pass
``MAX_PAGE_BYTES``, and the caller pages on from the last item it got."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from brain.bounds import MAX_PAGE_BYTES

Item = TypeVar("Item", bound=BaseModel)


def within_page_bytes(items: list[Item], max_bytes: int = MAX_PAGE_BYTES) -> list[Item]:
    """The longest head of ``items`` whose JSON array fits ``max_bytes``; at least one
    item, which every stored item's own bound keeps far below it."""
    size = 2  # the brackets
    for count, item in enumerate(items):
        size += len(item.model_dump_json()) + (1 if count else 0)
        if count and size > max_bytes:
            return items[:count]
    return items
