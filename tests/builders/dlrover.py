"""Jobs, histories and DLRover master objects for the drop-in tests (the DLRover adapter's,
under tests/api/dlrover)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from dlrover.proto import brain_pb2
from dlrover.python.common.constants import DistributionStrategy, NodeType, PlatformType
from dlrover.python.common.node import NodeGroupResource, NodeResource
from dlrover.python.master.main import update_context
from dlrover.python.master.monitor.perf_monitor import PerfMonitor
from dlrover.python.master.node.dist_job_manager import create_job_manager
from dlrover.python.scheduler.job import JobArgs, NodeArgs
from fastapi.testclient import TestClient

from tests.builders import record_run

MIB = 2**20
JOB_NAME = "dropin"
JOB_UID = "6d1f7c9e-0b1a-4d8e-9f3a-2c5e7a9b1d40"


def optimize(stub, stage: str, uid: str | None = JOB_UID, oom: str | None = None):
    """Ask ``stage`` as a master does, for job ``uid`` (None: no job), ``oom`` OOM-killed."""
    request = brain_pb2.OptimizeRequest(type=stage)
    if uid is not None:
        job = request.jobs.add()
        job.uid = uid
        if oom:
            job.state.pods[oom].name = oom
            job.state.pods[oom].is_oom = True
    return stub.optimize(request)


def pod(role: str, index: int, job: str = JOB_NAME) -> str:
    """DLRover's pod name for a node."""
    return f"{job}-edljob-{role}-{index}"


class ElasticJobArgs(JobArgs):
    """What the master parses from an ElasticJob on Kubernetes (``optimizeMode: cluster``):
    here ``worker`` replicas and size, and ``ps`` as given (count 0 / size 0 = unset)."""

    def __init__(
        self,
        worker: tuple[int, float, int] = (3, 2, 4096),
        ps: tuple[int, float, int] = (0, 0, 0),
        uid: str = JOB_UID,
    ):
        super().__init__(PlatformType.KUBERNETES, "default", JOB_NAME)
        self.worker, self.ps = worker, ps
        self.job_uuid = uid
        self.optimize_mode = "cluster"
        self.distribution_strategy = DistributionStrategy.PS

    def initilize(self):
        count, cpu, memory = self.worker
        self.node_args[NodeType.WORKER] = NodeArgs(
            NodeGroupResource(count, NodeResource(cpu, memory)), True, 3, 0, ""
        )
        count, cpu, memory = self.ps
        self.node_args[NodeType.PS] = NodeArgs(
            NodeGroupResource(count, NodeResource(cpu, memory)), True, 3, 0, "all"
        )


def start_master(args: ElasticJobArgs, context):
    """The real DistributedJobManager (k8s platform, optimizeMode cluster), started: it asks
    Brain for the create plan and posts its ScalePlan."""
    args.initilize()
    update_context(args)
    context.seconds_interval_to_change_ps = 0
    manager = create_job_manager(args, PerfMonitor())
    manager.start()
    return manager


def sized_scale_plan(fake_k8s) -> dict:
    """The ScalePlan CR that sizes the job (the pending-pod monitor also posts empty ones)."""
    sized = [p for p in fake_k8s.scale_plans() if p["spec"].get("replicaResourceSpecs")]
    assert len(sized) == 1
    return sized[0]


def job_body(name: str = "ctr-train", **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "user": "alice",
        "dataset": "clicks",
        "strategy": "ps",
        "roles": {
            "ps": {"count": 2, "cpu": 8, "memory_mib": 12288},
            "worker": {"count": 3, "cpu": 4, "memory_mib": 8192},
        },
    }
    body.update(overrides)
    return body


def ts(minutes_ago: float) -> str:
    moment = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return moment.isoformat().replace("+00:00", "Z")


def finished_run(
    rest: TestClient, uid: str, days_ago: int, ps_use: list[tuple[float, float]], worker_use
) -> None:
    """A succeeded ``ctr-train`` run of alice: per PS and worker node one (cpu, memory_mib)
    load held over ten one-minute samples; it is summarized when it finishes."""
    usage = {
        pod(role, index, uid): use
        for role, uses in (("ps", ps_use), ("worker", worker_use))
        for index, use in enumerate(uses)
    }
    start = datetime.now(UTC) - timedelta(days=days_ago)
    record_run(
        rest, uid, job_body(), usage, start=start, sample_minutes=range(10), finished_minutes=10
    )
