"""Registered optimizers as recommenders: the backtest measures the code the service runs.

Each run becomes a single-node job of one role (``worker``, or ``chief`` for the
startup sizing); the earlier runs become its ``context.history`` as
``HistoricalJob`` objects with one ``NodeUsage`` each, most recent first. What the
optimizer proposes for the role is read back per resource; a role or size it leaves
out is no opinion. Usage a trace does not have is passed as 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta

from pydantic import BaseModel

from brain.domain import JobStatus, Limits, Resources, RoleSpec, Stage, Strategy, gpu_cards
from brain.optimizing import (
    HistoricalJob,
    JobView,
    NodeUsage,
    Optimizer,
    OptimizerContext,
    Proposal,
)
from brain.optimizing.sizing_model import SizingModel
from brain.replay.runs import Run, Submission

# Reads one resource's size (in the backtest's unit) from the proposed role.
Reader = Callable[[RoleSpec, Submission], float | None]
# Every GPU run of a trace is on the same kind of card; the optimizers only compare types.
GPU_TYPE = "trace-gpu"


def memory_mib(spec: RoleSpec, job: Submission) -> float | None:
    return spec.memory_mib


def cpu(spec: RoleSpec, job: Submission) -> float | None:
    return spec.cpu


def gpu_memory_mib(spec: RoleSpec, job: Submission) -> float | None:
    """A GPU share (fraction of cards) as memory of the run's card."""
    if spec.gpu is None or not job.gpu_mem_total_mib:
        return None
    return spec.gpu * job.gpu_mem_total_mib


class OptimizerRecommender:
    """One registered optimizer, with fixed settings, asked at the create stage."""

    def __init__(
        self,
        name: str,
        optimizer: Optimizer,
        readers: Mapping[str, Reader],
        *,
        role: str = "worker",
        settings: BaseModel | None = None,
        sizing_model: SizingModel | None = None,
    ) -> None:
        self.name = name
        self.resources = frozenset(readers)
        self._optimizer = optimizer
        self._readers = dict(readers)
        self._role = role
        self._settings = settings if settings is not None else optimizer.Settings()
        self._sizing_model = sizing_model
        # One HistoricalJob per run, built once: every later run of the workload reuses it.
        # Keyed by identity (cheap); the run is kept beside it so the id cannot be reused.
        self._jobs: dict[int, tuple[Run, HistoricalJob]] = {}

    def recommend(self, job: Submission, history: Sequence[Run]) -> Mapping[str, float | None]:
        proposal = self.propose(self.context(job, history))
        spec = proposal.roles.get(self._role)
        if spec is None:
            return {}
        return {resource: read(spec, job) for resource, read in self._readers.items()}

    def context(self, job: Submission, history: Sequence[Run]) -> OptimizerContext:
        """The create-stage context of ``job`` with ``history`` (oldest first)."""
        return OptimizerContext(
            stage=Stage.create,
            now=job.start,
            job=self._job_view(job, uid=f"{job.workload}/next"),
            history=[self._historical(run) for run in reversed(history)],
            sizing_model=self._sizing_model,
        )

    def propose(self, context: OptimizerContext) -> Proposal:
        return self._optimizer.propose(context, self._settings)

    def _historical(self, run: Run) -> HistoricalJob:
        cached = self._jobs.get(id(run))
        if cached is not None and cached[0] is run:
            return cached[1]
        uid = f"{run.submission.workload}/{run.index}"
        built = HistoricalJob(
            job=self._job_view(run.submission, uid=uid, duration_h=run.duration_h),
            nodes=(self._node_usage(run),),
        )
        self._jobs[id(run)] = (run, built)
        return built

    def _job_view(self, job: Submission, *, uid: str, duration_h: float | None = None) -> JobView:
        finished = None if duration_h is None else job.start + timedelta(hours=duration_h)
        return JobView(
            uid=uid,
            name=job.workload,
            user="backtest",
            dataset=None,
            group_key=job.workload,
            strategy=Strategy.allreduce,
            status=JobStatus.pending if duration_h is None else JobStatus.succeeded,
            limits=Limits(),
            roles={
                self._role: RoleSpec(
                    count=1, cpu=job.req_cpu, memory_mib=job.req_memory_mib, gpu=job.req_gpu
                )
            },
            gpu_type=GPU_TYPE if job.gpu_mem_total_mib else None,
            created_at=job.start,
            started_at=job.start,
            finished_at=finished,
        )

    def _node_usage(self, run: Run) -> NodeUsage:
        job = run.submission
        return NodeUsage(
            name=f"{self._role}-0",
            role=self._role,
            requested=Resources(
                cpu=job.req_cpu or 0.0, memory_mib=job.req_memory_mib or 0.0, gpu=job.req_gpu or 0.0
            ),
            cpu_mean=run.cpu_mean or 0.0,
            cpu_max=run.cpu_max or 0.0,
            cpu_p95=run.cpu_p95 or 0.0,
            memory_mean_mib=run.mem_mean or 0.0,
            memory_max_mib=run.mem_max or 0.0,
            gpu_util_mean=run.gpu_util_mean,
            gpu_memory_max_mib=run.gpu_mem_mib_max,
            # The trace names one card's memory; a pod reports all its cards'.
            gpu_memory_total_mib=None
            if job.gpu_mem_total_mib is None
            else job.gpu_mem_total_mib * gpu_cards(job.req_gpu or 0.0),
        )
