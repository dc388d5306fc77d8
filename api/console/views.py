"""What the console's pages show, built from the API's own answer models so the numbers
on a page are the numbers the JSON API gives for the same job, user or group."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml

from api.schemas.plans import PlanOut
from api.schemas.portraits import JobPortraitOut, PlanEffect, RoleOut
from api.schemas.suggestions import SuggestionOut
from brain.db.models import EventRow
from brain.domain import EventKind, RoleSpec

# Events marked on the usage charts.
MARKED_EVENTS = (EventKind.oom, EventKind.evicted, EventKind.relaunched)
MIB_PER_GIB = 1024.0


def epoch(ts: datetime) -> float:
    return ts.timestamp()


def chart_data(portrait: JobPortraitOut, events: list[EventRow], node_roles: dict[str, str]):
    """Per role, the series uPlot draws (x in epoch seconds) with the request as a flat
    line, and the events to mark; plus the speed series. JSON-ready."""
    series = portrait.series
    requests = {role.role: role for role in portrait.roles}
    marks = [
        {
            "ts": epoch(e.ts),
            "kind": str(e.kind),
            "node": e.node_name or None,
            "role": node_roles.get(e.node_name),
        }
        for e in events
        if e.kind in MARKED_EVENTS
    ]
    roles: dict[str, Any] = {}
    for name, usage in series.roles.items():
        role: RoleOut | None = requests.get(name)
        x = [epoch(t) for t in usage.ts]
        flat = len(x)
        roles[name] = {
            "x": x,
            "cpu": {
                "used_mean": usage.cpu_mean_cores,
                "used_max": usage.cpu_max_cores,
                "requested": [role.cpu_request_cores if role else None] * flat,
            },
            "memory": {
                "used_mean": [_gib(v) for v in usage.memory_mean_mib],
                "used_max": [_gib(v) for v in usage.memory_max_mib],
                "requested": [_gib(role.memory_request_mib) if role else None] * flat,
            },
            "gpu_util": {"used_mean": [_percent(v) for v in usage.gpu_util_mean]},
            "gpu_memory": {
                "used_max": [_gib(v) for v in usage.gpu_memory_max_mib],
                "device": [_gib(role.used.gpu_memory_total_mib) if role else None] * flat,
            },
            "has_gpu": bool(role and role.gpu_request > 0)
            or any(v is not None for v in usage.gpu_util_mean),
            "events": [m for m in marks if m["role"] in (None, name)],
        }
    speed = None
    if series.speed is not None:
        speed = {
            "x": [epoch(t) for t in series.speed.ts],
            "steps_per_s": series.speed.steps_per_sec_mean,
        }
    return {"roles": roles, "speed": speed}


def _gib(mib: float | None) -> float | None:
    return None if mib is None else mib / MIB_PER_GIB


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100.0


@dataclass(frozen=True)
class RoleChange:
    role: str
    before: RoleSpec | None
    after: RoleSpec


@dataclass(frozen=True)
class TimelineEntry:
    plan: PlanOut
    changes: list[RoleChange]
    effect: PlanEffect | None
    scaleplan_yaml: str


def plan_timeline(
    plans: list[PlanOut], effects: list[PlanEffect], manifests: dict[int, dict]
) -> list[TimelineEntry]:
    """Plans oldest first, each with the role sizes that differ from the plan before it
    (for the first, every role it sets), the speed before and after it was applied and
    its ScalePlan YAML."""
    by_plan = {e.plan_id: e for e in effects}
    entries = []
    previous: dict[str, RoleSpec] = {}
    for plan in sorted(plans, key=lambda p: p.id):
        changes = [
            RoleChange(role, previous.get(role), spec)
            for role, spec in sorted(plan.roles.items())
            if previous.get(role) != spec
        ]
        entries.append(
            TimelineEntry(
                plan=plan,
                changes=changes,
                effect=by_plan.get(plan.id),
                scaleplan_yaml=yaml.safe_dump(manifests[plan.id], sort_keys=False),
            )
        )
        if plan.roles:
            previous = {**previous, **plan.roles}
    return entries


@dataclass(frozen=True)
class ResourcesBlock:
    role: str
    count: int | None
    yaml: str


def resources_blocks(suggestion: SuggestionOut) -> list[ResourcesBlock]:
    """Per role, the container's ``resources:`` block to paste into the job's replica
    spec (Kubernetes quantities: cores as decimals, memory in Mi; memory's limit equals
    its request, since a container above its request is the first to be OOM-killed)."""
    blocks = []
    for role in suggestion.roles:
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        if role.cpu_request is not None:
            requests["cpu"] = _quantity(role.cpu_request)
        if role.cpu_limit is not None:
            limits["cpu"] = _quantity(role.cpu_limit)
        if role.memory_mib is not None:
            requests["memory"] = limits["memory"] = f"{round(role.memory_mib)}Mi"
        if role.gpu:
            requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = _quantity(role.gpu)
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = requests
        if limits:
            resources["limits"] = limits
        text = yaml.safe_dump({"resources": resources}, sort_keys=False)
        blocks.append(ResourcesBlock(role.role, role.count, text))
    return blocks


def _quantity(value: float) -> str:
    return f"{value:g}"
