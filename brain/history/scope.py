"""Which namespaces' jobs a job's plans may learn from or be ranked against.

By default a job sees only its own namespace (jobs registered without one form a
namespace of their own): one tenant's runs can neither be read through another's plan
evidence nor move another's plans. ``BRAIN_HISTORY_ACROSS_NAMESPACES`` pools every
namespace the caller may read, for sites whose namespaces trust each other.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, false, or_, true
from sqlalchemy.orm import InstrumentedAttribute


def history_namespaces(
    namespace: str | None, across_namespaces: bool, readable: frozenset[str] | None
) -> frozenset[str | None] | None:
    """The namespaces whose jobs a job in ``namespace`` learns from: its own only, or
    with ``across_namespaces`` every namespace the caller may read (``readable``;
    ``None``: every namespace, which is also the answer then)."""
    if not across_namespaces:
        return frozenset({namespace})
    return None if readable is None else frozenset(readable)


def in_namespaces(
    column: InstrumentedAttribute, namespaces: frozenset[str | None] | None
) -> ColumnElement[bool]:
    """A filter on a namespace column (``None`` in the set matches jobs without one)."""
    if namespaces is None:
        return true()
    named = sorted(ns for ns in namespaces if ns is not None)
    conditions = [column.in_(named)] if named else []
    if None in namespaces:
        conditions.append(column.is_(None))
    return or_(*conditions) if conditions else false()
