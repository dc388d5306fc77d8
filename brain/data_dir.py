"""Where the embedded SQLite default lives: one per-user directory, whatever the current
directory, so every ``brain`` command run by the same user finds the same database.

``$XDG_DATA_HOME/brain`` (the XDG base-directory rule), else ``~/.local/share/brain``.
"""

from __future__ import annotations

import os
from pathlib import Path

DATABASE_FILE = "brain.db"
# How the docs and --help state the default without a particular machine's home.
SHOWN_DEFAULT_URL = "sqlite:///$XDG_DATA_HOME/brain/brain.db (else ~/.local/share/brain/brain.db)"


def user_data_dir() -> Path:
    """The per-user data directory (not created here)."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    # The XDG rule: a relative value is invalid and ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "brain"


def default_database_url() -> str:
    return f"sqlite:///{user_data_dir() / DATABASE_FILE}"
