"""``BrainClient``: every call a job master makes to Brain, over one ``httpx.Client``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import httpx
from pydantic import ValidationError

from .models import (
    ClusterStatePush,
    ErrorBody,
    ErrorEnvelope,
    Event,
    EventKind,
    Ingested,
    JobRegistration,
    JobUpdate,
    NodeRegistration,
    NodeUsage,
    Plan,
    PlanStatus,
    SpeedPoint,
    Stage,
)

API = "/api/v1"


class BrainError(RuntimeError):
    """Brain answered with an error envelope: ``status``, ``code``, ``field``, ``message``."""

    def __init__(self, status: int, code: str, message: str, field: str | None) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" ({field})" if field else ""))
        self.status, self.code, self.field = status, code, field


class BrainClient:
    """A job master's side of the conversation with Brain.

    Give it a base URL (``BrainClient("http://brain:8080", token=secret)``; the token is
    sent as ``Authorization: Bearer``) or an ``httpx.Client`` of your own (headers,
    timeouts, or an in-process transport such as Starlette's ``TestClient``). Every
    method raises ``BrainError`` on a 4xx/5xx.

    The loop a job master runs: ``register_job`` once, ``push_samples`` as load and
    speed arrive, ``optimize`` at each stage (``create`` before start, ``estimate`` a
    few minutes in, ``running`` periodically, ``oom`` with the node after each OOM
    kill), then ``pending_plans`` / ``wait_for_plan`` to read what to do, apply it,
    and ``report`` ``applied``, ``rejected`` or ``failed``.

    Uids are unique per namespace: ``namespace`` (the namespace of the jobs this client
    addresses) is sent as ``?namespace=`` on every job call, which a caller reading
    several namespaces needs when more than one of them holds a uid (a 409 ``BrainError``
    with field ``namespace`` otherwise). A token limited to one namespace never needs it.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        http: httpx.Client | None = None,
        timeout: float = 10,
        namespace: str | None = None,
    ) -> None:
        if http is None:
            if base_url is None:
                raise ValueError("give base_url or http")
            http = httpx.Client(base_url=base_url, timeout=timeout)
        if token is not None:
            http.headers["authorization"] = f"Bearer {token}"
        self._http = http
        self._namespace = namespace

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BrainClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # Jobs -------------------------------------------------------------------------

    def register_job(self, uid: str, job: JobRegistration) -> None:
        """Create or update the job (idempotent)."""
        self._call("PUT", f"{API}/jobs/{uid}", json=_dump(job))

    def update_job(self, uid: str, **fields: Any) -> None:
        """PATCH the fields given: ``status``, ``exit_reason``, ``started_at``,
        ``finished_at`` (any other name raises ``pydantic.ValidationError``)."""
        update = JobUpdate(**fields)
        body = update.model_dump(mode="json", exclude_unset=True)
        self._call("PATCH", f"{API}/jobs/{uid}", json=body)

    def register_node(
        self,
        uid: str,
        name: str,
        *,
        role: str,
        index: int = 0,
        cpu: float = 0,
        memory_mib: float = 0,
        gpu: float = 0,
        status: str = "running",
        created_at: datetime | None = None,
        finished_at: datetime | None = None,
    ) -> None:
        """Register a node (or re-register it after a relaunch) with what it requests."""
        node = NodeRegistration(
            role=role,
            index=index,
            cpu=cpu,
            memory_mib=memory_mib,
            gpu=gpu,
            status=status,
            created_at=created_at,
            finished_at=finished_at,
        )
        self._call("PUT", f"{API}/jobs/{uid}/nodes/{name}", json=_dump(node))

    # Telemetry --------------------------------------------------------------------

    def push_samples(
        self, uid: str, nodes: Sequence[NodeUsage] = (), speed: Sequence[SpeedPoint] = ()
    ) -> Ingested:
        """Node usage and training speed; a retried batch stores nothing twice."""
        body = {"nodes": [_dump(n) for n in nodes], "speed": [_dump(s) for s in speed]}
        return Ingested.model_validate(self._call("POST", f"{API}/jobs/{uid}/samples", json=body))

    def report_event(
        self,
        uid: str,
        kind: EventKind | str,
        ts: datetime,
        node: str | None = None,
        detail: str | None = None,
    ) -> Ingested:
        """An event such as ``oom`` (then ask for the ``oom`` stage with the node)."""
        return self.report_events(uid, [Event(ts=ts, kind=kind, node=node, detail=detail)])

    def report_events(self, uid: str, events: Sequence[Event]) -> Ingested:
        """Several events at once; an event already stored is counted as a duplicate."""
        found = self._call("POST", f"{API}/jobs/{uid}/events", json=[_dump(e) for e in events])
        return Ingested.model_validate(found)

    def push_cluster_state(self, state: ClusterStatePush) -> None:
        """Replace ``state.source``'s cluster state (needs a token for every namespace)."""
        self._call("POST", f"{API}/cluster/state", json=_dump(state))

    # Plans ------------------------------------------------------------------------

    def optimize(
        self,
        uid: str,
        stage: Stage | str,
        *,
        node: str | None = None,
        optimizers: list[str] | None = None,
        settings: dict[str, dict[str, Any]] | None = None,
    ) -> Plan:
        """Run a stage's optimizers; the answer is the stored plan (maybe empty, with reasons)."""
        body: dict[str, Any] = {"stage": str(Stage(stage))}
        if node is not None:
            body["node"] = node
        if optimizers is not None:
            body["optimizers"] = optimizers
        if settings:
            body["settings"] = settings
        return Plan.model_validate(self._call("POST", f"{API}/jobs/{uid}/optimize", json=body))

    def plans(self, uid: str, limit: int = 50) -> list[Plan]:
        """The job's plans, newest first."""
        found = self._call("GET", f"{API}/jobs/{uid}/plans", params={"limit": limit})
        return [Plan.model_validate(p) for p in found]

    def pending_plans(self, uid: str) -> list[Plan]:
        """Every plan still ``proposed``, oldest first: apply them in this order."""
        return sorted(
            (p for p in self.plans(uid, limit=500) if p.status == PlanStatus.proposed),
            key=lambda p: p.id,
        )

    def wait_for_plan(self, uid: str, after: int, wait_s: float = 30) -> Plan | None:
        """Long-poll: the oldest plan with an id above ``after`` that was neither
        superseded nor ``no_change``, or None after ``wait_s``. Pass the returned id as
        ``after`` to walk them all."""
        response = self._request(
            "GET", f"{API}/jobs/{uid}/plans/latest", params={"after": after, "wait": wait_s}
        )
        return None if response.status_code == 204 else Plan.model_validate(response.json())

    def report(
        self,
        uid: str,
        plan_id: int,
        status: PlanStatus | str,
        message: str | None = None,
        applied_at: datetime | None = None,
    ) -> Plan:
        """What became of a plan: ``applied``, ``rejected`` or ``failed``.

        ``applied_at`` (default: Brain's now) is when the change took effect; Brain's
        cooldowns count from it, on the job's clock (its sample timestamps).
        """
        body: dict[str, Any] = {"status": str(PlanStatus(status)), "message": message}
        if applied_at is not None:
            body["applied_at"] = applied_at.isoformat()
        found = self._call("POST", f"{API}/jobs/{uid}/plans/{plan_id}/status", json=body)
        return Plan.model_validate(found)

    # Plumbing ---------------------------------------------------------------------

    def _request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        if self._namespace is not None and url.startswith(f"{API}/jobs/"):
            kwargs["params"] = {**kwargs.get("params", {}), "namespace": self._namespace}
        response = self._http.request(method, url, **kwargs)
        if response.status_code >= 400:
            try:
                error = ErrorEnvelope.model_validate_json(response.content).error
            except ValidationError:
                error = ErrorBody(code="http_error", message=response.text[:500])
            raise BrainError(response.status_code, error.code, error.message, error.field)
        return response

    def _call(self, method: str, url: str, **kwargs: Any) -> Any:
        response = self._request(method, url, **kwargs)
        return response.json() if response.content else None


def _dump(model) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)
