"""Small builders for API tests."""

from __future__ import annotations

from typing import Any


def job_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "ctr-train",
        "user": "alice",
        "dataset": "clicks-2026",
        "strategy": "ps",
        "limits": {"cpu": 64, "memory_mib": 262144},
        "roles": {
            "ps": {"count": 2, "cpu": 8, "memory_mib": 16384},
            "worker": {"count": 4, "cpu": 4, "memory_mib": 8192},
        },
        "total_steps": 100000,
    }
    body.update(overrides)
    return body


def node_point(name: str, ts: str, cpu: float, memory_mib: float, **extra: Any) -> dict[str, Any]:
    role, index = name.rsplit("-", 2)[-2:]
    return {
        "name": name,
        "role": role,
        "index": int(index),
        "ts": ts,
        "cpu": cpu,
        "memory_mib": memory_mib,
        **extra,
    }
