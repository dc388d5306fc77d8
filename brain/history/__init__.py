"""Stored jobs as optimizers see them, below both ``services`` and ``summaries``.

``views`` turns stored rows into the optimizer's read-only views; ``related`` finds a
job's related finished runs and builds their history from summaries.
"""

from brain.history.related import RelatedQuery, find_related

__all__ = ["RelatedQuery", "find_related"]
