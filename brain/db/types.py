"""Column types that behave the same on PostgreSQL and SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import JSON, DateTime, Enum
from sqlalchemy.types import TypeDecorator

from brain.domain import as_utc


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out; SQLite, which drops the zone, reads back as UTC."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; Brain stores aware UTC times only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        return None if value is None else as_utc(value)


class TypedJSON(TypeDecorator[Any]):
    """JSON stored from, and read back as, a typed value (a pydantic model, a dataclass or
    a container of them), so no reader picks a stored document apart by string keys.

    Values are validated on the way in as well: a malformed document is never stored.
    """

    impl = JSON
    cache_ok = True

    def __init__(self, value_type: Any) -> None:
        super().__init__()
        self.value_type = value_type
        self._adapter = TypeAdapter(value_type)

    def process_bind_param(self, value: Any, dialect) -> Any:
        if value is None:
            return None
        return self._adapter.dump_python(self._adapter.validate_python(value), mode="json")

    def process_result_value(self, value: Any, dialect) -> Any:
        return None if value is None else self._adapter.validate_python(value)


def enum_column(enum: type[StrEnum], length: int) -> Enum:
    """A column of ``enum``'s values, read back as its members. Stored as VARCHAR(length)
    (no database enum type or check), so adding a member needs no migration."""
    return Enum(
        enum,
        native_enum=False,
        create_constraint=False,
        length=length,
        values_callable=lambda members: [m.value for m in members],
        validate_strings=True,
    )
