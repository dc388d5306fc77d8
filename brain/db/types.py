"""Column types that behave the same on PostgreSQL and SQLite."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime
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
