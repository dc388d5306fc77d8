from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from brain.db.engine import make_session_factory


@pytest.fixture
def session(db) -> Iterator[Session]:
    """A session on the emptied, migrated PostgreSQL database."""
    with make_session_factory(db)() as session:
        yield session
