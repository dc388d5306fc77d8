"""Which pods belong to a training job, of which kind, in which role: read from the pod
labels and owner that kube-state-metrics exports (``kube_pod_labels``, ``kube_pod_owner``).

kube-state-metrics renames a pod label ``a.b/c-d`` to ``label_a_b_c_d`` and exports only
the labels allowed by ``--metric-labels-allowlist``; ``ALLOWLIST`` lists, per kind, the
labels each needs. A pod whose owner is a ReplicaSet (a Deployment's), a StatefulSet, a
DaemonSet, a node (static pods) or nothing (a bare pod) is never part of a training job,
whatever its labels say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from brain.domain import ROLE_CHIEF, ROLE_EVALUATOR, ROLE_PS, ROLE_WORKER

ELASTIC_JOB = "ElasticJob"
KUBEFLOW_KINDS = ("TFJob", "PyTorchJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
VOLCANO_JOB = "VolcanoJob"
JOBSET = "JobSet"
BATCH_JOB = "Job"
KINDS = (ELASTIC_JOB, *KUBEFLOW_KINDS, VOLCANO_JOB, JOBSET, BATCH_JOB)

# Owners whose pods are never training pods. "<none>" is kube-state-metrics' owner of a
# bare pod.
NEVER_OWNERS = frozenset(
    {"ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "ReplicationController", "Node"}
)
NO_OWNER = "<none>"
# The owner kinds a training pod may have: the operators' own, and batch Jobs (Volcano's
# Job, JobSet's child Jobs, plain Jobs).
TRAINING_OWNERS = (ELASTIC_JOB, *KUBEFLOW_KINDS, BATCH_JOB)

# Pod labels (as Kubernetes names them) each kind needs exported.
ALLOWLIST: dict[str, tuple[str, ...]] = {
    ELASTIC_JOB: (
        "elasticjob.dlrover/name",
        "elasticjob.dlrover/replica-type",
        "elasticjob.dlrover/replica-index",
    ),
    "Kubeflow": (
        "training.kubeflow.org/job-name",
        "training.kubeflow.org/replica-type",
        "training.kubeflow.org/replica-index",
    ),
    VOLCANO_JOB: ("volcano.sh/job-name", "volcano.sh/task-spec", "volcano.sh/task-index"),
    JOBSET: (
        "jobset.sigs.k8s.io/jobset-name",
        "jobset.sigs.k8s.io/replicatedjob-name",
        "jobset.sigs.k8s.io/job-index",
        "batch.kubernetes.io/job-completion-index",
    ),
    BATCH_JOB: ("batch.kubernetes.io/job-completion-index",),
}

# Brain's role for a replica type, compared case-insensitively; others keep their name,
# lowercased.
ROLE_OF = {
    "ps": ROLE_PS,
    "worker": ROLE_WORKER,
    "chief": ROLE_CHIEF,
    "master": ROLE_CHIEF,
    "evaluator": ROLE_EVALUATOR,
}
# A JobSet pod's index: job-index × this + completion index (pods of one child Job).
JOBSET_INDEX_STRIDE = 1000

_TRAILING_NUMBER = re.compile(r"-(\d+)$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")


def ksm_label(name: str) -> str:
    """kube-state-metrics' name of the pod label ``name`` (``label_`` + sanitized); a
    name already starting with ``label_`` is taken as given."""
    if name.startswith("label_"):
        return name
    return "label_" + _UNSAFE.sub("_", name)


def brain_role(replica_type: str) -> str:
    lowered = replica_type.strip().lower()
    return ROLE_OF.get(lowered, lowered)


@dataclass(frozen=True, slots=True)
class PodClass:
    """What a pod is: a replica of the job ``name`` of ``kind``; ``index`` is ``None``
    when its labels and name give none (a plain Job without completion indexes)."""

    kind: str
    name: str
    role: str
    index: int | None


class SelectorError(ValueError):
    """A label selector that cannot be read."""


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes equality selector (``team=ml,tier!=test,training``) over
    kube-state-metrics' label names; empty selects nothing."""

    terms: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        terms = []
        for raw in filter(None, (part.strip() for part in text.split(","))):
            for op in ("!=", "==", "="):
                if op in raw:
                    key, value = (s.strip() for s in raw.split(op, 1))
                    terms.append((ksm_label(key), "!=" if op == "!=" else "=", value))
                    break
            else:
                terms.append((ksm_label(raw), "exists", ""))
            if not terms[-1][0] or terms[-1][0] == "label_":
                raise SelectorError(f"label selector term {raw!r} has no label name")
        return cls(tuple(terms))

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not self.terms:
            return False
        for key, op, value in self.terms:
            have = labels.get(key, "")
            if op == "exists" and not have:
                return False
            if op == "=" and have != value:
                return False
            if op == "!=" and have == value:
                return False
        return True


def classify(
    owner_kind: str,
    owner_name: str,
    pod: str,
    labels: Mapping[str, str],
    batch_selector: LabelSelector,
) -> PodClass | None:
    """The training job ``pod`` belongs to, or ``None`` (not a training pod)."""
    if not owner_kind or owner_kind == NO_OWNER or owner_kind in NEVER_OWNERS:
        return None

    def label(name: str) -> str:
        return (labels.get(name) or "").strip()

    if owner_kind == ELASTIC_JOB and label("label_elasticjob_dlrover_name"):
        return _replica(
            ELASTIC_JOB,
            label("label_elasticjob_dlrover_name"),
            label("label_elasticjob_dlrover_replica_type"),
            label("label_elasticjob_dlrover_replica_index"),
            pod,
        )
    if owner_kind in KUBEFLOW_KINDS and label("label_training_kubeflow_org_job_name"):
        return _replica(
            owner_kind,
            label("label_training_kubeflow_org_job_name"),
            label("label_training_kubeflow_org_replica_type"),
            label("label_training_kubeflow_org_replica_index"),
            pod,
        )
    if owner_kind != BATCH_JOB:
        return None
    if label("label_volcano_sh_job_name"):
        return _replica(
            VOLCANO_JOB,
            label("label_volcano_sh_job_name"),
            label("label_volcano_sh_task_spec"),
            label("label_volcano_sh_task_index"),
            pod,
        )
    if label("label_jobset_sigs_k8s_io_jobset_name"):
        job_index = _number(label("label_jobset_sigs_k8s_io_job_index"))
        completion = _number(label("label_batch_kubernetes_io_job_completion_index"))
        index = None
        if job_index is not None:
            index = job_index * JOBSET_INDEX_STRIDE + (completion or 0)
        return PodClass(
            JOBSET,
            label("label_jobset_sigs_k8s_io_jobset_name"),
            brain_role(label("label_jobset_sigs_k8s_io_replicatedjob_name") or ROLE_WORKER),
            index,
        )
    if owner_name and batch_selector.matches(labels):
        completion = _number(label("label_batch_kubernetes_io_job_completion_index"))
        return PodClass(BATCH_JOB, owner_name, ROLE_WORKER, completion)
    return None


def _replica(kind: str, name: str, replica_type: str, index: str, pod: str) -> PodClass | None:
    if not replica_type:
        return None
    number = _number(index)
    if number is None:
        trailing = _TRAILING_NUMBER.search(pod)
        number = int(trailing.group(1)) if trailing else None
    return PodClass(kind, name, brain_role(replica_type), number)


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() and len(text) <= 9 else None
