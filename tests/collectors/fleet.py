"""A synthetic training fleet as kube-state-metrics, cAdvisor and DCGM would have shown
it to Prometheus, for discovery and backfill; the same generator drives the benchmark
at cluster scale (``scripts/bench_discovery.py``).

Every series has a point every ``scrape_s`` while its pod lives. Values are chosen so
what Brain should store is exact: CPU counters grow at a constant rate, memory is whole
MiB and repeats every five scrapes (so every five-minute window holds its peak).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

MIB = 1024 * 1024
GIB = 1024 * MIB
GPU_FB_TOTAL_MIB = 40960
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
# Memory of a pod: its base plus (scrape number mod 5) x this.
MEMORY_WAVE_MIB = 64
MEMORY_WAVE = 5


@dataclass(frozen=True)
class FleetPod:
    namespace: str
    pod: str
    owner_kind: str
    owner_name: str
    labels: dict[str, str]
    start: int  # epoch seconds
    end: int  # the last scrape that sees the pod
    phase: str  # its final phase ("Running": still running at the fleet's end)
    cpu_request: float
    memory_request_mib: int
    cpu_used: float
    memory_base_mib: int
    gpu_request: int = 0
    cpu_limit: float | None = None
    oom_killed: bool = False
    completed: bool = True  # a completion time once finished
    gpu_util: tuple[int, ...] = ()  # per GPU, percent (constant)
    gpu_memory_mib: tuple[int, ...] = ()  # per GPU, peak of its wave

    def alive(self, t: int) -> bool:
        return self.start <= t <= self.end

    def running(self, t: int) -> bool:
        """Whether its containers run (and cAdvisor reports them) at ``t``."""
        return self.alive(t) and (self.phase == "Running" or t < self.end)

    def memory_mib(self, t: int, scrape_s: int) -> int:
        return self.memory_base_mib + ((t // scrape_s) % MEMORY_WAVE) * MEMORY_WAVE_MIB

    @property
    def memory_peak_mib(self) -> int:
        return self.memory_base_mib + (MEMORY_WAVE - 1) * MEMORY_WAVE_MIB


@dataclass
class Fleet:
    """Pods of every kind between ``start`` and ``end`` (epoch seconds, on the scrape
    grid); ``render`` writes them as OpenMetrics."""

    start: int
    end: int
    scrape_s: int = 60
    pods: list[FleetPod] = field(default_factory=list)
    # Every series carries it, as on a Thanos or Mimir that holds several clusters.
    cluster: str = "fleet-1"

    def times(self, pod: FleetPod) -> range:
        first = max(self.start, pod.start - pod.start % self.scrape_s)
        if first < pod.start:
            first += self.scrape_s
        return range(first, min(pod.end, self.end) + 1, self.scrape_s)

    def families(self) -> Iterator[tuple[str, str, list[tuple[dict[str, str], Callable]]]]:
        """(metric name, type, [(labels, t -> value or None) per series])."""
        owner, labels, requests, limits, started, phase, completion = ([] for _ in range(7))
        terminated, restarts, cpu, memory, util, used, free = ([] for _ in range(7))
        ksm = {"job": "kube-state-metrics", "instance": "ksm:8080"}
        for p in self.pods:
            base = {"namespace": p.namespace, "pod": p.pod, "cluster": self.cluster}
            k = {**ksm, **base, "uid": f"uid-{p.pod}"}
            alive = p.alive
            owner.append(
                (
                    {
                        **k,
                        "owner_kind": p.owner_kind,
                        "owner_name": p.owner_name,
                        "owner_is_controller": "true",
                    },
                    lambda t, a=alive: 1 if a(t) else None,
                )
            )
            labels.append(({**k, **p.labels}, lambda t, a=alive: 1 if a(t) else None))
            container = {**k, "container": "main", "node": "node-1"}
            amounts = [
                ("cpu", "core", p.cpu_request),
                ("memory", "byte", p.memory_request_mib * MIB),
            ]
            if p.gpu_request:
                amounts.append(("nvidia_com_gpu", "integer", p.gpu_request))
            for resource, unit, amount in amounts:
                requests.append(
                    (
                        {**container, "resource": resource, "unit": unit},
                        lambda t, a=alive, v=amount: v if a(t) else None,
                    )
                )
            if p.cpu_limit is not None:
                limits.append(
                    (
                        {**container, "resource": "cpu", "unit": "core"},
                        lambda t, a=alive, v=p.cpu_limit: v if a(t) else None,
                    )
                )
            started.append(({**k}, lambda t, a=alive, s=p.start: s if a(t) else None))
            done_at = p.end
            for name in PHASES:
                phase.append(
                    (
                        {**k, "phase": name},
                        lambda t, a=alive, name=name, p=p: (
                            self._phase(p, name, t) if a(t) else None
                        ),
                    )
                )
            if p.phase in ("Succeeded", "Failed") and p.completed:
                completion.append(
                    ({**k}, lambda t, a=alive, e=done_at: e if a(t) and t >= e else None)
                )
            restarts.append((container, lambda t, a=alive: 0 if a(t) else None))
            if p.oom_killed:
                terminated.append(
                    (
                        {**container, "reason": "OOMKilled"},
                        lambda t, a=alive, e=done_at: 1 if a(t) and t >= e else None,
                    )
                )
            running = p.running
            kubelet = {**base, "container": "main", "job": "kubelet", "instance": "node-1"}
            cpu.append(
                (
                    kubelet,
                    lambda t, p=p, r=running: 1000 + p.cpu_used * (t - p.start) if r(t) else None,
                )
            )
            memory.append(
                (
                    kubelet,
                    lambda t, p=p, r=running: (
                        p.memory_mib(t, self.scrape_s) * MIB if r(t) else None
                    ),
                )
            )
            for gpu, percent in enumerate(p.gpu_util):
                dcgm = {
                    **base,
                    "container": "main",
                    "gpu": str(gpu),
                    "job": "dcgm-exporter",
                    "UUID": f"GPU-{p.pod}-{gpu}",
                }
                peak = p.gpu_memory_mib[gpu]
                util.append((dcgm, lambda t, r=running, v=percent: v if r(t) else None))
                used.append((dcgm, lambda t, r=running, v=peak: self._wave(v, t) if r(t) else None))
                free.append(
                    (
                        dcgm,
                        lambda t, r=running, v=peak: (
                            GPU_FB_TOTAL_MIB - self._wave(v, t) if r(t) else None
                        ),
                    )
                )
        yield "kube_pod_owner", "gauge", owner
        yield "kube_pod_labels", "gauge", labels
        yield "kube_pod_container_resource_requests", "gauge", requests
        yield "kube_pod_container_resource_limits", "gauge", limits
        yield "kube_pod_start_time", "gauge", started
        yield "kube_pod_status_phase", "gauge", phase
        yield "kube_pod_completion_time", "gauge", completion
        yield "kube_pod_container_status_terminated_reason", "gauge", terminated
        yield "kube_pod_container_status_restarts_total", "gauge", restarts
        yield "container_cpu_usage_seconds_total", "gauge", cpu
        yield "container_memory_working_set_bytes", "gauge", memory
        yield "DCGM_FI_DEV_GPU_UTIL", "gauge", util
        yield "DCGM_FI_DEV_FB_USED", "gauge", used
        yield "DCGM_FI_DEV_FB_FREE", "gauge", free

    def _wave(self, peak: int, t: int) -> int:
        return peak - (MEMORY_WAVE - 1 - (t // self.scrape_s) % MEMORY_WAVE) * MEMORY_WAVE_MIB

    @staticmethod
    def _phase(pod: FleetPod, name: str, t: int) -> int:
        if pod.phase == "Running" or t < pod.end:
            return 1 if name == "Running" else 0
        return 1 if name == pod.phase else 0

    def render(self) -> Iterator[str]:
        """OpenMetrics lines (no ``# EOF``), series by series in time order; each series
        only over its pod's life, so a large fleet costs its pods' points, not more."""
        by_pod = {(p.namespace, p.pod): p for p in self.pods}
        for name, kind, series in self.families():
            yield f"# TYPE {name} {kind}"
            for labels, value in series:
                rendered = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                for t in self.times(by_pod[(labels["namespace"], labels["pod"])]):
                    v = value(t)
                    if v is not None:
                        yield f"{name}{{{rendered}}} {_num(v)} {t}"


def _num(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


# --- the fleet of the tests ---------------------------------------------------------------

H = 3600


def _kubeflow(job: str, replica: str, index: int) -> dict[str, str]:
    return {
        "label_training_kubeflow_org_job_name": job,
        "label_training_kubeflow_org_replica_type": replica,
        "label_training_kubeflow_org_replica_index": str(index),
    }


def _elastic(job: str, replica: str, index: int) -> dict[str, str]:
    return {
        "label_elasticjob_dlrover_name": job,
        "label_elasticjob_dlrover_replica_type": replica,
        "label_elasticjob_dlrover_replica_index": str(index),
    }


def small_fleet(end: int) -> Fleet:
    """Twelve hours of a small fleet ending at ``end`` (a whole hour): every kind, three
    namespaces; finished, failed, running and deleted jobs; an OOM-killed pod; a GPU job with DCGM
    series; and pods of a Deployment, a StatefulSet, a bare pod and an unselected batch
    Job, none of which is a training job."""
    assert end % H == 0
    f = end
    pods: list[FleetPod] = []

    def add(namespace, pod, kind, owner, labels, start, stop, phase, cpu, mem, used, base, **kw):
        pods.append(
            FleetPod(
                namespace, pod, kind, owner, labels, start, stop, phase, cpu, mem, used, base, **kw
            )
        )

    # ml-a: two daily runs of one ElasticJob pipeline; yesterday's succeeded (its PS was
    # deleted while running, as DLRover does), today's runs.
    for job, start, stop, phase in (
        ("ctr-train-20261120", f - 11 * H, f - 8 * H, "Succeeded"),
        ("ctr-train-20261121", f - 3 * H, f, "Running"),
    ):
        add(
            "ml-a",
            f"{job}-edljob-ps-0",
            "ElasticJob",
            job,
            _elastic(job, "ps", 0),
            start,
            stop,
            "Running",
            2,
            8192,
            0.5,
            3000,
        )
        for i, used in enumerate((2.5, 3.0)):
            add(
                "ml-a",
                f"{job}-edljob-worker-{i}",
                "ElasticJob",
                job,
                _elastic(job, "worker", i),
                start,
                stop,
                phase,
                4,
                16384,
                used,
                6000 + 200 * i,
            )
    # ml-b: a PyTorchJob on GPUs that succeeded, and a TFJob whose worker the OOM killer ended.
    bert = ("bert-ft", f - 10 * H, f - 7 * H)
    add(
        "ml-b",
        "bert-ft-master-0",
        "PyTorchJob",
        "bert-ft",
        _kubeflow("bert-ft", "Master", 0),
        bert[1],
        bert[2],
        "Succeeded",
        4,
        8192,
        1.0,
        4000,
        gpu_request=1,
        gpu_util=(50,),
        gpu_memory_mib=(12000,),
    )
    for i in range(2):
        add(
            "ml-b",
            f"bert-ft-worker-{i}",
            "PyTorchJob",
            "bert-ft",
            _kubeflow("bert-ft", "Worker", i),
            bert[1],
            bert[2],
            "Succeeded",
            8,
            16384,
            6.0,
            10000,
            gpu_request=2,
            cpu_limit=12,
            gpu_util=(70, 90),
            gpu_memory_mib=(20000, 24000),
        )
    wide = (f - 6 * H, f - 4 * H)
    add(
        "ml-b",
        "wide-deep-ps-0",
        "TFJob",
        "wide-deep",
        _kubeflow("wide-deep", "PS", 0),
        *wide,
        "Running",
        2,
        4096,
        1.0,
        2000,
    )
    add(
        "ml-b",
        "wide-deep-worker-0",
        "TFJob",
        "wide-deep",
        _kubeflow("wide-deep", "Worker", 0),
        *wide,
        "Failed",
        4,
        8192,
        3.5,
        8000,
        oom_killed=True,
    )
    add(
        "ml-b",
        "wide-deep-worker-1",
        "TFJob",
        "wide-deep",
        _kubeflow("wide-deep", "Worker", 1),
        *wide,
        "Succeeded",
        4,
        8192,
        3.0,
        5000,
    )
    # A PyTorchJob deleted while it ran: its pods vanish without a final phase.
    for i in range(2):
        add(
            "ml-b",
            f"gone-job-worker-{i}",
            "PyTorchJob",
            "gone-job",
            _kubeflow("gone-job", "Worker", i),
            f - 4 * H,
            f - 2 * H - 600,  # deleted ten minutes before a window begins
            "Running",
            2,
            4096,
            1.0,
            1500,
        )
    # research: a Volcano job running, a JobSet and a selected batch Job that succeeded.
    for task, index, used in (("ps", 0, 1.5), ("worker", 0, 3.5), ("worker", 1, 3.5)):
        add(
            "research",
            f"rec-sys-{task}-{index}",
            "Job",
            "rec-sys",
            {"label_volcano_sh_job_name": "rec-sys", "label_volcano_sh_task_spec": task},
            f - 5 * H,
            f,
            "Running",
            4 if task == "worker" else 2,
            8192,
            used,
            4000,
        )
    for index in range(2):
        add(
            "research",
            f"llm-pre-trainers-{index}-0-abcde",
            "Job",
            f"llm-pre-trainers-{index}",
            {
                "label_jobset_sigs_k8s_io_jobset_name": "llm-pre",
                "label_jobset_sigs_k8s_io_replicatedjob_name": "trainers",
                "label_jobset_sigs_k8s_io_job_index": str(index),
                "label_batch_kubernetes_io_job_completion_index": "0",
            },
            f - 9 * H,
            f - 6 * H,
            "Succeeded",
            8,
            32768,
            7.0,
            20000,
            gpu_request=4,
            # A GPU job that needs two of its four cards: 30 % busy, 8,000 MiB each.
            gpu_util=(30, 30, 30, 30),
            gpu_memory_mib=(8000, 8000, 8000, 8000),
        )
    add(
        "research",
        "nightly-eval-x7k2p",
        "Job",
        "nightly-eval",
        {"label_team": "ml"},
        f - 4 * H,
        f - 3 * H,
        "Succeeded",
        2,
        4096,
        1.5,
        2500,
    )
    # Not training jobs.
    add(
        "research",
        "etl-daily-q2w4e",
        "Job",
        "etl-daily",
        {"label_team": "data"},
        f - 4 * H,
        f - 3 * H,
        "Succeeded",
        2,
        4096,
        1.0,
        1000,
    )
    add(
        "ml-a",
        "serving-7d9f-x2x",
        "ReplicaSet",
        "serving-7d9f",
        {**_kubeflow("serving", "Worker", 0), "label_app": "serving"},
        f - 12 * H,
        f,
        "Running",
        8,
        8192,
        6.0,
        7000,
    )
    add(
        "ml-b",
        "redis-0",
        "StatefulSet",
        "redis",
        {"label_app": "redis"},
        f - 12 * H,
        f,
        "Running",
        1,
        2048,
        0.5,
        1000,
    )
    add("ml-b", "debug", "<none>", "<none>", {}, f - 2 * H, f, "Running", 1, 512, 0.25, 100)
    return Fleet(start=f - 12 * H, end=f, pods=pods)
