"""Loopback ports for servers the tests start (never beyond 127.0.0.1)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Ports below the kernel's ephemeral range: outgoing connections (to PostgreSQL, from
# Chromium, Prometheus's scrapes) take their local ports from that range, and could take
# a port chosen there between the moment it is chosen and the moment a server binds it.
LOWEST = 20000
EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A port nothing listens on right now (also usable as a closed port to fail against)."""
    try:
        below = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        below = 0
    picker = random.Random()  # seeded by the system: parallel runs pick apart
    for _ in range(100 if below > LOWEST else 0):
        port = picker.randrange(LOWEST, below)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # no such range here: any port the kernel gives
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
