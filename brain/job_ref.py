"""Which job a caller means by a uid.

Uids are unique per namespace (jobs without a namespace form one of their own), so a
uid alone may name jobs of several namespaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from brain.errors import Conflict


@dataclass(frozen=True)
class JobRef:
    """A uid, with ``named`` when the caller named the namespace (``namespace``; None
    for the jobs registered without one), and ``readable``, the namespaces the caller
    may read (None: every one): only their jobs are found."""

    uid: str
    namespace: str | None = None
    named: bool = False
    readable: frozenset[str] | None = None

    @classmethod
    def exact(cls, uid: str, namespace: str | None) -> JobRef:
        return cls(uid, namespace, named=True)

    @classmethod
    def of(cls, ref: JobRef | str) -> JobRef:
        """A bare uid means the one job with that uid, in any namespace."""
        return cls(ref) if isinstance(ref, str) else ref


def ambiguous_uid(uid: str, namespaces: Iterable[str | None]) -> Conflict:
    """The answer when jobs of several namespaces the caller may read hold ``uid``
    (``namespaces``: theirs, never one the caller cannot read)."""
    ordered = sorted(namespaces, key=lambda n: (n is not None, n or ""))
    names = ", ".join("(none)" if n is None else n for n in ordered)
    return Conflict(
        f"jobs of namespaces {names} have uid {uid!r}: name one with ?namespace= "
        "(empty: the job without one)",
        field="namespace",
    )


class StoredJob(Protocol):
    """What ``one_job`` reads of a stored job."""

    @property
    def namespace(self) -> str | None: ...

    @property
    def vouched_at(self) -> datetime | None: ...


Job = TypeVar("Job", bound=StoredJob)


def one_job(uid: str, found: Sequence[Job]) -> Job | None:
    """The job a bare ``uid`` means among ``found`` (the jobs with it the caller may
    read): the only one; else the only one vouched for (``vouched_at``: registered or
    reached by name by a caller that may write every namespace), so a uid a
    namespace-limited token registered too never takes anyone's job away; else a
    Conflict naming ``namespace``."""
    if len(found) <= 1:
        return found[0] if found else None
    vouched = [job for job in found if job.vouched_at is not None]
    if len(vouched) == 1:
        return vouched[0]
    raise ambiguous_uid(uid, [job.namespace for job in found])
