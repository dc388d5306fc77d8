"""Which job a request on ``/jobs/{uid}`` means.

Uids are unique per namespace, so the path's uid may name jobs of several namespaces.
The caller reads only its token's namespaces; among those, the uid is enough unless
jobs of several hold it and none or several of them are vouched for (registered by a
token for every namespace, or reached by name by a job master: ``brain.job_ref``), and
then ``?namespace=`` says which (409 naming the field until it does). A token limited
to one namespace never needs it. Nothing here tells a
caller anything about namespaces it cannot read.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from api.auth import CurrentPrincipal
from api.params import JobUid
from brain.domain import K8S_LABEL, NAMESPACE_MAX
from brain.errors import Forbidden
from brain.job_ref import JobRef

JobNamespace = Annotated[
    str | None,
    Query(
        max_length=NAMESPACE_MAX,
        pattern=f"^$|{K8S_LABEL}",
        description="The job's namespace, needed only when jobs of several namespaces you "
        "may read have this uid and not exactly one of them was registered by a token for "
        "every namespace (409 `conflict`, field `namespace`, otherwise); empty: the job "
        "registered without one.",
    ),
]


async def job_ref(
    uid: JobUid, principal: CurrentPrincipal, namespace: JobNamespace = None
) -> JobRef:
    """The job the caller means, within the namespaces it may read (async: no I/O, so
    no trip to the thread pool)."""
    if namespace is None:
        return JobRef(uid, readable=principal.namespaces)
    named = namespace or None
    if not principal.sees(named):
        raise Forbidden(
            f"token {principal.name!r} may not read jobs in namespace {namespace!r}",
            field="namespace",
        )
    return JobRef(uid, named, named=True, readable=principal.namespaces)


JobRefDep = Annotated[JobRef, Depends(job_ref)]

AMBIGUOUS = (
    "Jobs of several namespaces you may read have this uid (`conflict`, `field: namespace`): "
    "name one with `?namespace=`."
)


def job_responses(responses: dict[int | str, dict] | None = None) -> dict[int | str, dict]:
    """A route's answers on ``/jobs/{uid}``, with the 409 of an ambiguous uid (said
    beside a 409 of the route's own)."""
    merged = dict(responses or {})
    own = merged.get(409, {}).get("description")
    merged[409] = {"description": AMBIGUOUS if own is None else f"{own} Or: {AMBIGUOUS}"}
    return merged
