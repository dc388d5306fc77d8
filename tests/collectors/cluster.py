"""A synthetic Kubernetes cluster as Prometheus would have scraped it, and the exact load
Brain should store for it.

Every series has a point every 15 s from ``t0 - 3h`` to ``t0 + 20min`` (``t0`` a recent
minute): the collector can read a full hour before ``t0`` with complete rate() windows,
and a collector running at the real clock still finds fresh data. Values are chosen so
the expected numbers are exact: CPU counters grow at a constant rate (multiples of 1/4
core), memory is whole MiB, GPU utilization whole percent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

STEP = 15
HISTORY_S = 3 * 3600
FUTURE_S = 20 * 60
GPU_FB_TOTAL_MIB = 40960
MIB = 1024 * 1024


@dataclass(frozen=True)
class PodSpec:
    namespace: str
    pod: str
    # container -> cores used (constant rate)
    cpu: dict[str, float]
    memory_mib: int
    sidecar_mib: int = 0
    gpus: int = 0
    # a restart `restart_before_t0` seconds before t0, with this last-terminated reason
    restart_before_t0: int | None = None
    restart_reason: str | None = None
    # terminated by the OOM killer `terminated_oom_before_t0` seconds before t0, no restart
    terminated_oom_before_t0: int | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def role(self) -> str:
        return self.pod.rsplit("-", 2)[-2]

    @property
    def index(self) -> int:
        return int(self.pod.rsplit("-", 1)[-1])


def _dlrover_labels(job: str, role: str, index: int) -> dict[str, str]:
    return {
        "label_elasticjob_dlrover_name": job,
        "label_elasticjob_dlrover_replica_type": role,
        "label_elasticjob_dlrover_replica_index": str(index),
    }


OOM_BEFORE_T0 = 20 * 60
TERMINATED_OOM_BEFORE_T0 = 10 * 60
ERROR_RESTART_BEFORE_T0 = 40 * 60

PODS: list[PodSpec] = [
    PodSpec(
        "team-a",
        "alpha-edljob-ps-0",
        {"main": 1.5, "sidecar": 0.25},
        2048,
        sidecar_mib=128,
        labels=_dlrover_labels("alpha", "ps", 0),
    ),
    PodSpec(
        "team-a",
        "alpha-edljob-worker-0",
        {"main": 3.0},
        4096,
        gpus=2,
        labels=_dlrover_labels("alpha", "worker", 0),
    ),
    PodSpec(
        "team-a",
        "alpha-edljob-worker-1",
        {"main": 2.5},
        3072,
        restart_before_t0=ERROR_RESTART_BEFORE_T0,
        restart_reason="Error",
        labels=_dlrover_labels("alpha", "worker", 1),
    ),
    PodSpec(
        "team-b",
        "beta-edljob-ps-0",
        {"main": 0.75},
        1024,
        terminated_oom_before_t0=TERMINATED_OOM_BEFORE_T0,
        labels=_dlrover_labels("beta", "ps", 0),
    ),
    PodSpec(
        "team-b",
        "beta-edljob-worker-0",
        {"main": 4.0},
        8192,
        restart_before_t0=OOM_BEFORE_T0,
        restart_reason="OOMKilled",
        labels=_dlrover_labels("beta", "worker", 0),
    ),
    # A DLRover pod of a job Brain does not know: read, counted, not stored.
    PodSpec(
        "team-a",
        "ghost-edljob-worker-0",
        {"main": 1.0},
        512,
        labels=_dlrover_labels("ghost", "worker", 0),
    ),
    # Not a training pod at all: never even selected.
    PodSpec("kube-system", "coredns-7d9f-x2x", {"coredns": 0.25}, 64, labels={"label_app": "dns"}),
]

JOB_PODS = {
    "alpha": [p for p in PODS if p.pod.startswith("alpha-")],
    "beta": [p for p in PODS if p.pod.startswith("beta-")],
}
# Series of the ghost pod each query returns: cpu, memory, oom.
GHOST_SERIES = 3

# Training progress a job exports per worker pod (for BRAIN_PROMETHEUS_STEP_TIME): a gauge
# of the mean mini-batch seconds, 0 while the pod has not trained yet, and a step counter
# growing at 1 / step time. beta's worker starts training STEP_TIME_FROM_BEFORE_T0 before t0.
STEP_TIME_S = {
    "alpha-edljob-worker-0": 0.5,
    "alpha-edljob-worker-1": 0.75,
    "beta-edljob-worker-0": 1.25,
}
STEP_TIME_FROM_BEFORE_T0 = 30 * 60

NODES = {"node-a:9100": (2, 0.75, 64 * 1024), "node-b:9100": (2, 0.75, 32 * 1024)}


# kube-state-metrics' view of scheduling: the GPUs each node offers, and per pod its
# phase, node and requests (cores, MiB, GPUs; no series for a zero request). By hand:
# free GPUs = node-a 4 - 2 (alpha's running worker; the finished pod's GPU is free
# again) + node-b 2 - 1 (a pending pod already bound to node-b) = 3; pending: gamma's two
# pods, 4 + 2 cores, 8192 + 4096 MiB, 1 + 1 GPUs.
KSM_INSTANCE = "kube-state-metrics:8080"
ALLOCATABLE_GPUS = {"node-a": 4, "node-b": 2}
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


@dataclass(frozen=True)
class Scheduled:
    namespace: str
    pod: str
    phase: str
    node: str | None
    cpu: float
    memory_mib: int
    gpu: int = 0


SCHEDULED = [
    Scheduled("team-a", "alpha-edljob-ps-0", "Running", "node-a", 2, 4096),
    Scheduled("team-a", "alpha-edljob-worker-0", "Running", "node-a", 4, 8192, gpu=2),
    Scheduled("team-b", "done-edljob-worker-0", "Succeeded", "node-a", 1, 1024, gpu=1),
    Scheduled("team-c", "gamma-edljob-worker-0", "Pending", None, 4, 8192, gpu=1),
    Scheduled("team-c", "gamma-edljob-worker-1", "Pending", "node-b", 2, 4096, gpu=1),
]
EXPECTED_FREE_GPU = 3.0
EXPECTED_PENDING = {"pods": 2, "cpu": 6.0, "memory_mib": 12288.0, "gpu": 2.0}


class Cluster:
    def __init__(self, t0: int) -> None:
        assert t0 % 60 == 0
        self.t0 = t0
        self.start = t0 - HISTORY_S
        self.end = t0 + FUTURE_S

    @property
    def t0_dt(self) -> datetime:
        return datetime.fromtimestamp(self.t0, UTC)

    def times(self) -> range:
        return range(self.start, self.end + 1, STEP)

    def _k(self, t: int) -> int:
        return (t - self.start) // STEP

    def main_memory_mib(self, spec: PodSpec, t: int) -> int:
        return spec.memory_mib + (self._k(t) % 7) * 16

    def gpu_util(self, gpu: int, t: int) -> int:
        return 60 + (self._k(t) % 5) * 5 if gpu == 0 else 80 + (self._k(t) % 3) * 5

    def fb_used(self, gpu: int, t: int) -> int:
        return 10000 + ((self._k(t) + gpu) % 4) * 256

    def restarts(self, spec: PodSpec, t: int) -> int:
        if spec.restart_before_t0 is None:
            return 0
        return 1 if t >= self.t0 - spec.restart_before_t0 else 0

    def step_time(self, pod: str, t: int) -> float | None:
        """The gauge's value; ``None`` where Brain should store no step time (no series,
        or 0 before training starts)."""
        if pod not in STEP_TIME_S:
            return None
        if pod.startswith("beta-") and t < self.t0 - STEP_TIME_FROM_BEFORE_T0:
            return None
        return STEP_TIME_S[pod]

    def expected(self, spec: PodSpec, t: int) -> dict[str, float | None]:
        """The node sample Brain should store for ``spec`` at ``t`` (its units)."""
        gpu_util = gpu_memory = gpu_total = None
        if spec.gpus:
            utils = [self.gpu_util(g, t) for g in range(spec.gpus)]
            gpu_util = (sum(utils) / len(utils)) / 100
            gpu_memory = float(sum(self.fb_used(g, t) for g in range(spec.gpus)))
            gpu_total = float(GPU_FB_TOTAL_MIB * spec.gpus)
        return {
            "cpu": sum(spec.cpu.values()),
            "memory_mib": float(self.main_memory_mib(spec, t) + spec.sidecar_mib),
            "gpu_util": gpu_util,
            "gpu_memory_mib": gpu_memory,
            "gpu_memory_total_mib": gpu_total,
        }

    # --- OpenMetrics ----------------------------------------------------------------------

    def openmetrics(self) -> str:
        lines: list[str] = []
        times = list(self.times())

        def family(name: str, series: list[tuple[dict[str, str], callable]]) -> None:
            lines.append(f"# TYPE {name} gauge")
            for labels, value in series:
                rendered = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                for t in times:
                    v = value(t)
                    if v is not None:
                        lines.append(f"{name}{{{rendered}}} {_num(v)} {t}")

        cpu, memory, util, used, free, restarts, reasons, pod_labels = ([] for _ in range(8))
        terminated = []
        for spec in PODS:
            base = {"namespace": spec.namespace, "pod": spec.pod}
            kubelet = {**base, "job": "kubelet", "instance": "node-a"}
            total_rate = sum(spec.cpu.values())
            for container, rate in spec.cpu.items():
                cpu.append(({**kubelet, "container": container}, self._counter(rate)))
            # The pause container and the pod-level cgroup (container="") must not count.
            cpu.append(({**kubelet, "container": "POD"}, self._counter(0.125)))
            cpu.append(({**kubelet, "container": ""}, self._counter(total_rate + 0.125)))
            containers = {c: (lambda t, s=spec: self.main_memory_mib(s, t)) for c in spec.cpu}
            if "sidecar" in spec.cpu:
                containers["sidecar"] = lambda t, s=spec: s.sidecar_mib
            for container, mib in containers.items():
                memory.append(({**kubelet, "container": container}, _bytes(mib)))
            memory.append(({**kubelet, "container": "POD"}, _bytes(lambda t: 1)))
            memory.append(
                (
                    {**kubelet, "container": ""},
                    _bytes(lambda t, s=spec: self.main_memory_mib(s, t) + s.sidecar_mib + 1),
                )
            )
            for gpu in range(spec.gpus):
                dcgm = {
                    **base,
                    "container": "main",
                    "gpu": str(gpu),
                    "UUID": f"GPU-{spec.pod}-{gpu}",
                    "job": "dcgm-exporter",
                }
                util.append((dcgm, lambda t, g=gpu: self.gpu_util(g, t)))
                used.append((dcgm, lambda t, g=gpu: self.fb_used(g, t)))
                free.append((dcgm, lambda t, g=gpu: GPU_FB_TOTAL_MIB - self.fb_used(g, t)))
            ksm = {**base, "job": "kube-state-metrics"}
            for container in spec.cpu:
                restarts.append(
                    ({**ksm, "container": container}, lambda t, s=spec: self.restarts(s, t))
                )
            if spec.restart_reason:
                first = self.t0 - spec.restart_before_t0
                reasons.append(
                    (
                        {**ksm, "container": "main", "reason": spec.restart_reason},
                        lambda t, first=first: 1 if t >= first else None,
                    )
                )
            if spec.terminated_oom_before_t0:
                first = self.t0 - spec.terminated_oom_before_t0
                terminated.append(
                    (
                        {**ksm, "container": "main", "reason": "OOMKilled"},
                        lambda t, first=first: 1 if t >= first else None,
                    )
                )
            pod_labels.append(({**ksm, **spec.labels}, lambda t: 1))

        family("container_cpu_usage_seconds_total", cpu)
        family("container_memory_working_set_bytes", memory)
        family("DCGM_FI_DEV_GPU_UTIL", util)
        family("DCGM_FI_DEV_FB_USED", used)
        family("DCGM_FI_DEV_FB_FREE", free)
        family("kube_pod_container_status_restarts_total", restarts)
        family("kube_pod_container_status_last_terminated_reason", reasons)
        family("kube_pod_container_status_terminated_reason", terminated)
        family("kube_pod_labels", pod_labels)
        idle, available = [], []
        for instance, (cpus, idle_rate, mem_mib) in NODES.items():
            for n in range(cpus):
                labels = {"instance": instance, "cpu": str(n), "mode": "idle"}
                idle.append((labels, self._counter(idle_rate)))
            available.append(({"instance": instance}, lambda t, m=mem_mib: m * MIB))
        family("node_cpu_seconds_total", idle)
        family("node_memory_MemAvailable_bytes", available)
        progress = [
            ({"namespace": spec.namespace, "pod": spec.pod, "job": "trainer"}, spec.pod)
            for spec in PODS
            if spec.pod in STEP_TIME_S
        ]
        family(
            "training_step_time_seconds",
            [(labels, lambda t, p=pod: self.step_time(p, t) or 0) for labels, pod in progress],
        )
        family(
            "training_steps_total",
            [(labels, self._counter(1 / STEP_TIME_S[pod])) for labels, pod in progress],
        )
        self._scheduling(family)
        lines.append("# EOF")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _scheduling(family) -> None:
        ksm = {"job": "kube-state-metrics", "instance": KSM_INSTANCE}
        allocatable = [
            (
                {**ksm, "node": node, "resource": "nvidia_com_gpu", "unit": "integer"},
                lambda t, n=n: n,
            )
            for node, n in ALLOCATABLE_GPUS.items()
        ]
        phases, requests = [], []
        for spec in SCHEDULED:
            pod = {**ksm, "namespace": spec.namespace, "pod": spec.pod}
            for phase in PHASES:
                value = 1 if phase == spec.phase else 0
                phases.append(({**pod, "phase": phase}, lambda t, v=value: v))
            container = {**pod, "container": "main", **({"node": spec.node} if spec.node else {})}
            amounts = [("cpu", "core", spec.cpu), ("memory", "byte", spec.memory_mib * MIB)]
            if spec.gpu:
                amounts.append(("nvidia_com_gpu", "integer", spec.gpu))
            for resource, unit, amount in amounts:
                labels = {**container, "resource": resource, "unit": unit}
                requests.append((labels, lambda t, a=amount: a))
        family("kube_node_status_allocatable", allocatable)
        family("kube_pod_status_phase", phases)
        family("kube_pod_container_resource_requests", requests)

    def _counter(self, rate: float):
        return lambda t: 1000.0 + rate * (t - self.start)


def _bytes(mib_at):
    return lambda t: mib_at(t) * MIB


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))
