"""DLRover's protobuf messages in and out: what a request asks, and how Brain's answer is
written into the reply the master reads."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from dlrover.proto import brain_pb2

from api.dlrover.replies import DLRoverPlan
from api.dlrover.stages import WORKER_PHASE_KEY


@dataclass(frozen=True)
class OptimizeAsk:
    """An ``OptimizeRequest`` as far as Brain reads it: its first job's uid (empty when
    it names none), the master's stage, the worker phase, the OOM-killed pods (sorted),
    and the job's namespace (0.6.1 never sets it)."""

    uid: str
    stage: str
    phase: str | None
    oom_pods: list[str]
    namespace: str | None = None


def optimize_ask(request) -> OptimizeAsk:
    first = request.jobs[0] if request.jobs else None
    oom_pods = [] if first is None else [n for n, pod in first.state.pods.items() if pod.is_oom]
    return OptimizeAsk(
        uid=first.uid if first is not None else "",
        stage=request.type,
        phase=request.config.customized_config.get(WORKER_PHASE_KEY),
        oom_pods=sorted(oom_pods),
        namespace=(first.namespace or None) if first is not None else None,
    )


@dataclass
class PlanAnswer:
    """What ``optimize`` answers: a plan for the master (None: none, ``reason`` says why),
    the stored plan's id and reasons, and the outcome it is counted under."""

    plan: DLRoverPlan | None
    reason: str
    plan_id: int | None = None
    reasons: list[str] = field(default_factory=list)
    outcome: str = "ok"


def optimize_response(uid: str, answer: PlanAnswer):
    response = brain_pb2.OptimizeResponse(
        response=brain_pb2.Response(success=answer.plan is not None, reason=answer.reason)
    )
    if answer.plan is None or answer.plan.is_empty:
        return response
    message = response.job_optimize_plans.add()
    message.timestamp = int(time.time())
    message.job.uid = uid
    # The master prints the whole plan message in its log: say where it came from.
    message.job.state.customized_data["brain_plan_id"] = str(answer.plan_id)
    message.job.state.customized_data["reasons"] = " | ".join(answer.reasons)
    resource = message.resource
    for role, group in answer.plan.groups.items():
        entry = resource.task_group_resources[role]
        entry.count = group.count
        entry.resource.cpu = group.cpu
        entry.resource.memory = group.memory_bytes
    for name, size in answer.plan.pods.items():
        resource.pod_resources[name].cpu = size.cpu
        resource.pod_resources[name].memory = size.memory_bytes
    return response


def no_plan(reason: str):
    """The empty ``optimize`` answer to a request Brain cannot serve."""
    return brain_pb2.OptimizeResponse(
        response=brain_pb2.Response(success=False, reason=f"{reason}; no plan")
    )


def job_metrics_response(job_metrics: str):
    return brain_pb2.JobMetricsResponse(
        response=brain_pb2.Response(success=True), job_metrics=job_metrics
    )


def metrics_failure(reason: str):
    return brain_pb2.JobMetricsResponse(response=brain_pb2.Response(success=False, reason=reason))


def as_dict(message) -> dict:
    """The fields a message sets, as plain JSON values (int64 stays a number)."""
    values = {}
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            values[descriptor.name] = dict(value)
        elif descriptor.is_repeated:
            values[descriptor.name] = list(value)
        else:
            values[descriptor.name] = value
    return values
