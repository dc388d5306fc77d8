"""Path and query parameters shared by the routers, with the bounds the store imposes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import AfterValidator

from api.schemas.common import NO_NUL, storable_name
from brain.bounds import INT32_MAX
from brain.domain import K8S_NAME_MAX
from brain.names import NAME_PATTERN, NAME_RULE


def _path_name(description: str) -> Any:
    """A name in the path: what the store keeps under it, checked as every stored name."""
    return Annotated[
        str,
        Path(
            min_length=1,
            max_length=K8S_NAME_MAX,
            description=f"{description} {NAME_RULE}",
            json_schema_extra={"pattern": NAME_PATTERN},
        ),
        AfterValidator(storable_name),
    ]


JobUid = _path_name("The job's uid.")
NodeName = _path_name("The node's name.")
PlanId = Annotated[int, Path(ge=1, le=INT32_MAX, description="The plan's id.")]
# Offsets of paged lists; a larger one is past any page.
Offset = Annotated[
    int,
    Query(ge=0, le=INT32_MAX, description="Items to skip: `next_offset` of the previous page."),
]


def name_filter(description: str, max_length: int = K8S_NAME_MAX):
    """An exact-match filter on a stored name: ``Annotated[str | None, name_filter(...)]``."""
    return Query(max_length=max_length, pattern=NO_NUL, description=description)
