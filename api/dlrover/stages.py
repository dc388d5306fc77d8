"""What a DLRover ``optimize`` request asks for, in Brain's terms.

The DLRover 0.6.1 master walks its own stages (``job_stage_create``, then
``job_stage_worker_initial`` / ``job_stage_ps_initial`` / ``job_stage_ps_running`` /
``job_stage_worker_running``, the worker phase in ``customized_config``); OOM-killed pods
come as ``state.pods[name].is_oom``. Each maps onto one Brain stage and the roles whose
answer the master reads there. Only the first job of a request matters; it is known by
its uid alone (the master sends no name or user here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from brain.domain import ROLE_PS, ROLE_WORKER, TRAINING_ROLES, Stage
from brain.errors import InvalidInput
from brain.optimizing.changes import Changes

WORKER_PHASE_KEY = "optimizer.worker.optimize-phase"
# DLRover names pods <job>-edljob-<role>-<id>; the master itself parses them this way.
POD_NAME = re.compile(r"^(?P<job>.+)-edljob-(?P<role>[a-z]+)-(?P<index>\d+)$")


class DLRoverStage(StrEnum):
    create = "job_stage_create"
    worker_initial = "job_stage_worker_initial"
    ps_initial = "job_stage_ps_initial"
    ps_running = "job_stage_ps_running"
    worker_running = "job_stage_worker_running"
    # The name older masters and DLRover's Go Brain use for every running stage.
    running = "job_stage_running"


class Reply(StrEnum):
    """What the master reads from the answer, hence what Brain sends."""

    create = "create"  # worker and ps groups, always both
    worker_oom = "worker_oom"  # the worker group's memory only
    pod_oom = "pod_oom"  # pod_resources[pod] memory only
    workers = "workers"  # the worker group
    ps = "ps"  # the ps group and migrations
    any = "any"  # worker and ps groups and migrations


@dataclass(frozen=True)
class OomPod:
    name: str
    role: str
    index: int


@dataclass(frozen=True)
class BrainCall:
    """One optimize request, translated: run ``stage`` and reply ``reply``. With
    ``only_what_reply_carries``, run only the optimizers of the stage's pipeline (configured,
    else the declared defaults) whose declared changes the reply carries (``carries``)."""

    stage: Stage
    reply: Reply
    only_what_reply_carries: bool = False
    oom_pod: OomPod | None = None


class UnknownRequest(InvalidInput):
    """A request Brain has no plan for (unknown stage, no job, unparseable pod); the
    message says why."""


def carries(reply: Reply, changes: Changes) -> bool:
    """Whether an optimizer with these declared changes runs for ``reply``: the running
    stage is split the way the master asks. Its worker stages apply the worker group
    only. Its PS stage applies the PS group and migrations, and runs the optimizers that
    change the PS tier (their other migrations, such as oom_risk's, are sent along), but
    not those that only move other nodes: the master answers that stage at most hourly
    and each non-empty answer restarts that wait, so a worker replacement there would
    both wait and hold back the next PS change."""
    match reply:
        case Reply.ps:
            return changes.sets_group(ROLE_PS) or changes.migrates(ROLE_PS)
        case Reply.workers:
            return changes.sets_group(ROLE_WORKER)
        case _:
            return True


def translate(stage: str, phase: str | None, oom_pods: list[str]) -> BrainCall:
    """The Brain call for one DLRover request; raises ``UnknownRequest``."""
    try:
        dlrover_stage = DLRoverStage(stage)
    except ValueError:
        raise UnknownRequest(f"unknown stage {stage!r}") from None
    if oom_pods:
        pod = parse_pod(oom_pods[0])
        if dlrover_stage == DLRoverStage.create and pod.role != ROLE_PS:
            return BrainCall(Stage.oom, Reply.worker_oom, oom_pod=pod)
        if dlrover_stage == DLRoverStage.ps_initial:
            return BrainCall(Stage.oom, Reply.pod_oom, oom_pod=pod)
        raise UnknownRequest(f"OOM pods in stage {stage!r}, which the master never sends")
    match dlrover_stage:
        case DLRoverStage.create:
            return BrainCall(Stage.create, Reply.create)
        case DLRoverStage.worker_initial if phase in (None, "", "initial"):
            return BrainCall(Stage.estimate, Reply.workers)
        case DLRoverStage.worker_initial | DLRoverStage.worker_running:
            return BrainCall(Stage.running, Reply.workers, only_what_reply_carries=True)
        case DLRoverStage.ps_initial:
            return BrainCall(Stage.estimate, Reply.ps)
        case DLRoverStage.ps_running:
            return BrainCall(Stage.running, Reply.ps, only_what_reply_carries=True)
        case _:
            return BrainCall(Stage.running, Reply.any)


def parse_pod(name: str) -> OomPod:
    match = POD_NAME.match(name)
    if match is None or match["role"] not in TRAINING_ROLES:
        raise UnknownRequest(f"pod {name!r} is not named <job>-edljob-<role>-<index>")
    return OomPod(name=name, role=match["role"], index=int(match["index"]))
