"""Loopback ports for servers the tests start (never beyond 127.0.0.1)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on right now (also usable as a closed port to fail against)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
