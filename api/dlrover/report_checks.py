"""What of a master's ``persist_metrics`` report Brain keeps, checked before it is queued.

Bounds are the REST schema's: a uid the jobs table can store and names as brain.names
allows (the user hint, the namespace, OOM-killed pods), free text without NUL
(PostgreSQL refuses it) and cut to the column, JSON numbers finite (PostgreSQL's json
refuses NaN and infinities, and so does REST).
"""

from __future__ import annotations

import json
import math

from api.dlrover.messages import as_dict
from brain.domain import K8S_NAME_MAX, USER_NAME_MAX, is_k8s_namespace
from brain.errors import InvalidInput
from brain.names import check_name, name_problem

# The report kinds Brain stores; runtime samples and dataset features never arrive from
# 0.6.1 (client bugs), and node load comes from the Prometheus collector instead.
REPORT_KINDS = frozenset(
    {"type", "training_hyper_params", "model_feature", "customized_data", "job_exit_reason"}
)
# What the jobs table stores (as the REST schema bounds them).
UID_CHARS = K8S_NAME_MAX
TRUNCATED = " [truncated by Brain]"


def uid_problem(uid: str) -> str | None:
    """Why the jobs table may not store ``uid`` (as REST bounds the path), or None."""
    if len(uid) > UID_CHARS:
        return f"the job uid is over {UID_CHARS} characters"
    problem = name_problem(uid)
    return None if problem is None else f"the job uid {problem}"


def check_uid(uid: str) -> None:
    """Refuse (InvalidInput, field ``uid``) a uid the jobs table may not store: one line,
    never the store's traceback per call."""
    problem = uid_problem(uid)
    if problem is not None:
        raise InvalidInput(problem, field="uid")


def check_namespace(namespace: str | None) -> None:
    """Refuse (InvalidInput, field ``namespace``) a namespace that is no Kubernetes one:
    an ``optimize`` request's namespace names the job it is about."""
    if namespace is not None and not is_k8s_namespace(namespace):
        raise InvalidInput(
            f"namespace {namespace!r:.80} is not a Kubernetes namespace", field="namespace"
        )


def check_pod_names(pods: list[str]) -> None:
    """Refuse (InvalidInput, field ``pods``) pod names no node may be stored under (an
    ``optimize`` request's OOM-killed pods become the job's nodes)."""
    for pod in pods:
        check_name(pod, "pods")
        if len(pod) > K8S_NAME_MAX:
            raise InvalidInput(f"pod name over {K8S_NAME_MAX} characters", field="pods")


def storable_text(text: str, limit: int) -> str:
    """A master's free text as the store keeps it: no NUL (PostgreSQL refuses it), at most
    ``limit`` characters (a reason is still worth keeping when it is too long)."""
    text = text.replace("\x00", "")
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


def user_hint(job_meta) -> str | None:
    """The user a report names, if the store can keep it (a hint only: the job keeps the
    user it has otherwise)."""
    # 0.6.1 masters send the container's $USER as "cluster" and no user (argument order
    # bug); a fixed master would send the user.
    user = job_meta.user or job_meta.cluster or None
    if user is not None and (len(user) > USER_NAME_MAX or name_problem(user) is not None):
        return None
    return user


def namespace_hint(job_meta) -> str | None:
    """The Kubernetes namespace a report names, if any. 0.6.1 masters send it as "name"
    (the same argument-order bug), and the cluster, "" on Kubernetes, as "namespace"; a
    fixed master would send it as "namespace". A hint only, as the user: anything that is
    no namespace is ignored."""
    namespace = job_meta.namespace or job_meta.name or None
    return namespace if namespace is not None and is_k8s_namespace(namespace) else None


def report_body(kind: str, payload, reason_chars: int) -> dict | None:
    """The report as plain values, or None when it holds what the store must refuse."""
    if kind == "customized_data":
        return json_object(payload)
    if kind in ("training_hyper_params", "model_feature"):
        body = as_dict(payload)
        return body if finite(body) else None
    return {kind: storable_text(payload, reason_chars)}


def json_object(text: str) -> dict | None:
    """The JSON object ``text`` holds, or None: not JSON, not an object, or holding NaN
    or an infinity (Python's parser takes them)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
        return value if isinstance(value, dict) and finite(value) else None
    except (ValueError, RecursionError):
        return None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def finite(value) -> bool:
    """Whether every number in a JSON-like value is finite (1e999 parses as inf)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(finite(v) for v in value)
    return True
