"""Discovery's pure mapping: kube-state-metrics series of hand-made pods → jobs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brain.domain import JobStatus, RoleSpec
from collectors.client import Series
from collectors.discovery import pods as answers
from collectors.discovery.jobs import DiscoveryRules, discover_jobs
from collectors.discovery.kinds import LabelSelector, SelectorError, brain_role, ksm_label
from collectors.discovery.naming import run_group
from collectors.discovery.pods import PodFacts, gather

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
SEEN = T0 + timedelta(hours=3)
GIB = 1024**3


def kubeflow(pod, job, replica, index, *, kind="PyTorchJob", **facts) -> PodFacts:
    labels = {
        "label_training_kubeflow_org_job_name": job,
        "label_training_kubeflow_org_replica_type": replica,
        "label_training_kubeflow_org_replica_index": str(index),
    }
    return pod_facts(pod, kind, job, labels, **facts)


def elastic(pod, job, replica, index, **facts) -> PodFacts:
    labels = {
        "label_elasticjob_dlrover_name": job,
        "label_elasticjob_dlrover_replica_type": replica,
        "label_elasticjob_dlrover_replica_index": str(index),
    }
    return pod_facts(pod, "ElasticJob", job, labels, **facts)


def pod_facts(
    pod,
    owner_kind,
    owner_name,
    labels,
    *,
    namespace="ml",
    cpu=None,
    memory_gib=None,
    gpu=None,
    cpu_limit=None,
    started_min=0,
    phase="Running",
    completed_min=None,
    oom=False,
) -> PodFacts:
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory_gib is not None:
        requests["memory"] = memory_gib * GIB
    if gpu is not None:
        requests["nvidia_com_gpu"] = gpu
    return PodFacts(
        namespace=namespace,
        pod=pod,
        owner_kind=owner_kind,
        owner_name=owner_name,
        labels=dict(labels),
        requests=requests,
        limits={"cpu": cpu_limit} if cpu_limit is not None else {},
        started_at=None if started_min is None else T0 + timedelta(minutes=started_min),
        phase=phase,
        completed_at=None if completed_min is None else T0 + timedelta(minutes=completed_min),
        oom_killed=oom,
    )


def discover(pods, rules=None):
    rules = rules or DiscoveryRules()
    return {(j.namespace, j.name): j for j in discover_jobs(pods, rules, SEEN)}


def test_a_pytorchjob_gets_its_roles_counts_and_largest_requests():
    jobs = discover(
        [
            kubeflow("bert-master-0", "bert", "Master", 0, cpu=4, memory_gib=16, gpu=1),
            kubeflow(
                "bert-worker-0",
                "bert",
                "Worker",
                0,
                cpu=8,
                memory_gib=32,
                gpu=2,
                cpu_limit=12,
                started_min=2,
            ),
            kubeflow(
                "bert-worker-1",
                "bert",
                "Worker",
                1,
                cpu=8,
                memory_gib=30,
                gpu=2,
                cpu_limit=12,
                started_min=1,
            ),
        ]
    )
    job = jobs[("ml", "bert")]
    assert job.kind == "PyTorchJob"
    assert job.roles == {
        "chief": RoleSpec(count=1, cpu=4, memory_mib=16384.0, gpu=1),
        "worker": RoleSpec(count=2, cpu=8, memory_mib=32768.0, gpu=2, cpu_limit=12),
    }
    assert (job.status, job.started_at, job.finished_at) == (JobStatus.running, T0, None)
    assert [(p.pod, p.role, p.index) for p in job.pods] == [
        ("bert-master-0", "chief", 0),
        ("bert-worker-0", "worker", 0),
        ("bert-worker-1", "worker", 1),
    ]
    # No user or group label configured: the namespace, and the name without run suffix.
    assert (job.user, job.group_key) == ("ml", "ml/bert")


def test_every_kubeflow_kind_is_known_by_its_owner():
    for kind in ("TFJob", "PyTorchJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"):
        jobs = discover([kubeflow("j-worker-0", "j", "Worker", 0, kind=kind)])
        assert jobs[("ml", "j")].kind == kind


def test_roles_map_case_insensitively_and_others_keep_their_name():
    assert [brain_role(r) for r in ("PS", "Worker", "Chief", "Master", "Evaluator")] == [
        "ps",
        "worker",
        "chief",
        "chief",
        "evaluator",
    ]
    assert brain_role("Launcher") == "launcher"
    assert brain_role("worker") == "worker"


def test_a_relaunched_replica_counts_once_and_its_newest_pod_speaks_for_it():
    jobs = discover(
        [
            elastic("ctr-edljob-ps-0", "ctr", "ps", 0, cpu=2, memory_gib=8),
            # worker 1 failed and was relaunched under a new pod name
            elastic(
                "ctr-edljob-worker-1",
                "ctr",
                "worker",
                1,
                cpu=4,
                started_min=0,
                phase="Failed",
                completed_min=30,
            ),
            elastic(
                "ctr-edljob-worker-1-r1",
                "ctr",
                "worker",
                1,
                cpu=4,
                started_min=31,
                phase="Succeeded",
                completed_min=90,
            ),
            elastic(
                "ctr-edljob-worker-0",
                "ctr",
                "worker",
                0,
                cpu=4,
                phase="Succeeded",
                completed_min=95,
            ),
        ]
    )
    job = jobs[("ml", "ctr")]
    assert job.kind == "ElasticJob"
    assert job.roles["worker"].count == 2 and job.roles["ps"].count == 1
    # The PS still runs (it is stopped after the workers), yet the job has succeeded,
    # at its last worker's completion.
    assert job.status == JobStatus.succeeded
    assert job.finished_at == T0 + timedelta(minutes=95)
    assert job.exit_reason is None


def test_an_oom_killed_worker_fails_the_job_with_that_reason():
    jobs = discover(
        [
            kubeflow(
                "big-worker-0",
                "big",
                "Worker",
                0,
                kind="TFJob",
                phase="Failed",
                completed_min=40,
                oom=True,
            ),
            kubeflow(
                "big-worker-1",
                "big",
                "Worker",
                1,
                kind="TFJob",
                phase="Succeeded",
                completed_min=30,
            ),
        ]
    )
    job = jobs[("ml", "big")]
    assert (job.status, job.exit_reason) == (JobStatus.failed, "OOMKilled")
    assert job.finished_at == T0 + timedelta(minutes=40)
    assert job.oom_killed == ("big-worker-0",)


def test_pods_gone_without_a_final_phase_leave_the_job_stopped_when_seen():
    jobs = discover([kubeflow("x-worker-0", "x", "Worker", 0, phase=None)])
    job = jobs[("ml", "x")]
    assert (job.status, job.finished_at) == (JobStatus.stopped, SEEN)


def test_pending_until_a_pod_starts():
    jobs = discover([kubeflow("p-worker-0", "p", "Worker", 0, phase="Pending", started_min=None)])
    assert jobs[("ml", "p")].status == JobStatus.pending
    assert jobs[("ml", "p")].started_at is None


def test_a_volcano_job_takes_roles_from_task_spec_and_index_from_the_pod_name():
    labels = {"label_volcano_sh_job_name": "rec"}
    jobs = discover(
        [
            pod_facts(
                "rec-ps-0", "Job", "rec", {**labels, "label_volcano_sh_task_spec": "ps"}, cpu=2
            ),
            pod_facts(
                "rec-worker-0",
                "Job",
                "rec",
                {**labels, "label_volcano_sh_task_spec": "worker"},
                cpu=4,
            ),
            pod_facts(
                "rec-worker-1",
                "Job",
                "rec",
                {**labels, "label_volcano_sh_task_spec": "worker"},
                cpu=4,
            ),
        ]
    )
    job = jobs[("ml", "rec")]
    assert job.kind == "VolcanoJob"
    assert {r: s.count for r, s in job.roles.items()} == {"ps": 1, "worker": 2}
    assert [(p.role, p.index) for p in job.pods] == [("ps", 0), ("worker", 0), ("worker", 1)]


def test_a_jobset_indexes_its_pods_by_child_job_and_completion_index():
    def member(pod, job_index, completion):
        return pod_facts(
            pod,
            "Job",
            f"llm-trainers-{job_index}",
            {
                "label_jobset_sigs_k8s_io_jobset_name": "llm",
                "label_jobset_sigs_k8s_io_replicatedjob_name": "trainers",
                "label_jobset_sigs_k8s_io_job_index": str(job_index),
                "label_batch_kubernetes_io_job_completion_index": str(completion),
            },
            gpu=8,
        )

    jobs = discover([member("a", 0, 0), member("b", 0, 1), member("c", 1, 0)])
    job = jobs[("ml", "llm")]
    assert job.kind == "JobSet"
    assert job.roles == {"trainers": RoleSpec(count=3, gpu=8)}
    assert sorted(p.index for p in job.pods) == [0, 1, 1000]


def test_plain_batch_jobs_are_training_jobs_only_when_the_selector_says_so():
    pods = [
        pod_facts("etl-x7k2p", "Job", "etl", {"label_team": "data"}),
        pod_facts("train-abcde", "Job", "train", {"label_team": "ml"}),
        pod_facts("train-fghij", "Job", "train", {"label_team": "ml"}),
    ]
    assert discover(pods) == {}
    rules = DiscoveryRules(batch_selector=LabelSelector.parse("team=ml"))
    jobs = discover(pods, rules)
    assert list(jobs) == [("ml", "train")]
    # No completion index: pods take the next free indexes in name order.
    assert [(p.pod, p.index) for p in jobs[("ml", "train")].pods] == [
        ("train-abcde", 0),
        ("train-fghij", 1),
    ]


@pytest.mark.parametrize("owner", ["ReplicaSet", "StatefulSet", "DaemonSet", "Node", "<none>", ""])
def test_deployments_statefulsets_daemonsets_and_bare_pods_are_never_jobs(owner):
    # Even with a training operator's labels (copied into a serving Deployment, say).
    trap = kubeflow("serve-7d9f-x2x", "serve", "Worker", 0)
    trap.owner_kind, trap.owner_name = owner, "serve-7d9f"
    everything = LabelSelector.parse("label_training_kubeflow_org_job_name")
    assert discover([trap], DiscoveryRules(batch_selector=everything)) == {}


def test_a_kubeflow_label_on_a_pod_of_another_owner_kind_is_not_enough():
    trap = kubeflow("odd-0", "odd", "Worker", 0)
    trap.owner_kind = "ElasticJob"
    assert discover([trap]) == {}


def test_user_and_group_come_from_configured_labels_else_namespace_and_run_name():
    labels = {"label_owner": "alice", "label_pipeline": "ctr"}
    pod = kubeflow("ctr-train-20261121-worker-0", "ctr-train-20261121", "Worker", 0)
    pod.labels.update(labels)
    rules = DiscoveryRules(user_label="label_owner", group_label="label_pipeline")
    job = discover([pod], rules)[("ml", "ctr-train-20261121")]
    assert (job.user, job.group_key) == ("alice", "ctr")
    job = discover([pod])[("ml", "ctr-train-20261121")]
    assert (job.user, job.group_key) == ("ml", "ml/ctr-train")


@pytest.mark.parametrize(
    ("name", "group"),
    [
        ("ctr-train-20261120", "ctr-train"),
        ("ctr-train-20261121", "ctr-train"),
        ("ctr-train-20261121-0830", "ctr-train"),
        ("bert-ft-run3", "bert-ft"),
        ("bert_ft.r12", "bert_ft"),
        ("mnist-x7k2p", "mnist"),
        ("resnet50", "resnet50"),
        ("llama-70b", "llama-70b"),
        ("gpt2-v2", "gpt2-v2"),
        ("train-bcdfg", "train-bcdfg"),  # five generated letters, but no digit
        ("20261120", "20261120"),  # the first part always stays
    ],
)
def test_the_run_suffix_rule(name, group):
    assert run_group(name) == group


@given(st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,9}){0,4}", fullmatch=True))
def test_run_group_is_a_prefix_and_stable(name):
    group = run_group(name)
    assert name.startswith(group) and group
    assert run_group(group) == group
    assert run_group(f"{group}-20261120") == group


def test_label_selectors_read_kubernetes_names():
    selector = LabelSelector.parse("app.kubernetes.io/part-of=training, tier!=test, gpu")
    assert selector.terms == (
        ("label_app_kubernetes_io_part_of", "=", "training"),
        ("label_tier", "!=", "test"),
        ("label_gpu", "exists", ""),
    )
    base = {"label_app_kubernetes_io_part_of": "training", "label_gpu": "a100"}
    assert selector.matches(base)
    assert not selector.matches({**base, "label_tier": "test"})
    assert not selector.matches({"label_app_kubernetes_io_part_of": "training"})
    assert not LabelSelector.parse("").matches(base)
    assert ksm_label("elasticjob.dlrover/replica-type") == "label_elasticjob_dlrover_replica_type"
    with pytest.raises(SelectorError):
        LabelSelector.parse("=x")


def test_gather_builds_pod_facts_from_the_answers():
    def s(value, **labels):
        return Series({"namespace": "ml", **labels}, [(SEEN, value)])

    facts = gather(
        {
            answers.OWNERS: [
                s(1, pod="a", owner_kind="PyTorchJob", owner_name="bert"),
                s(1, pod="b", owner_kind="PyTorchJob", owner_name="bert"),
            ],
            answers.LABELS: [s(1, pod="a", label_team="ml", uid="123")],
            answers.REQUESTS: [
                s(2, pod="a", resource="cpu"),
                s(1.5, pod="a", resource="cpu"),  # a second container
                s(4 * GIB, pod="a", resource="memory"),
                s(9, pod="ghost", resource="cpu"),  # no owner: ignored
            ],
            answers.LIMITS: [s(4, pod="a", resource="cpu")],
            answers.STARTED: [s(T0.timestamp(), pod="a")],
            answers.PHASE: [s(0, pod="a", phase="Running"), s(1, pod="a", phase="Failed")],
            answers.COMPLETED: [s((T0 + timedelta(hours=1)).timestamp(), pod="a")],
            answers.OOM_KILLED: [s(1, pod="a")],
        }
    )
    assert set(facts) == {("ml", "a"), ("ml", "b")}
    a = facts[("ml", "a")]
    assert (a.owner_kind, a.owner_name, a.labels) == ("PyTorchJob", "bert", {"label_team": "ml"})
    assert a.requests == {"cpu": 3.5, "memory": 4 * GIB}
    assert a.limits == {"cpu": 4}
    assert (a.started_at, a.phase, a.completed_at, a.oom_killed) == (
        T0,
        "Failed",
        T0 + timedelta(hours=1),
        True,
    )
    b = facts[("ml", "b")]
    assert (b.phase, b.started_at, b.requests) == (None, None, {})
