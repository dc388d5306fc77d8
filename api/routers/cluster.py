"""The cluster's state: as the Prometheus collector last saw it, or as a platform pushed it."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Depends

from api.auth import every_namespace
from api.deps import ReadSessionDep, SessionDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.routing import InputRoute
from api.schemas.cluster import ClusterStateIn, ClusterStateOut
from brain.domain import utcnow
from brain.errors import NotFound
from brain.services.clock import reject_future
from brain.services.cluster import latest_cluster_state, record_cluster_state

router = APIRouter(
    prefix="/api/v1/cluster", tags=["cluster"], responses=ERROR_RESPONSES, route_class=InputRoute
)


@router.get("/state", response_model=ClusterStateOut, summary="Free capacity and pending demand")
def get_cluster_state(session: ReadSessionDep) -> ClusterStateOut:
    """The freshest cluster state of any source: free CPU, memory and GPUs, and what
    pending pods request. 404 until the collector (``BRAIN_PROMETHEUS_URL``) or a push
    has recorded one."""
    state = latest_cluster_state(session)
    if state is None:
        raise NotFound(
            "no cluster state recorded yet: the Prometheus collector records one each cycle, "
            "or POST one to /api/v1/cluster/state"
        )
    return ClusterStateOut(**asdict(state))


@router.post(
    "/state",
    response_model=ClusterStateOut,
    summary="Push the cluster's free capacity and pending demand",
    dependencies=[Depends(every_namespace)],
)
def post_cluster_state(
    body: ClusterStateIn, session: SessionDep, settings: SettingsDep
) -> ClusterStateOut:
    """For platforms without Prometheus: replaces the state of ``source`` (default
    `push`). The running stage uses the freshest state of any source. Needs a write token
    not limited to namespaces (the state concerns every job)."""
    now = utcnow()
    reject_future([("ts", body.ts)], now, settings.clock_skew_s)
    state = body.to_state(body.ts or now)
    record_cluster_state(session, state)
    return ClusterStateOut(**asdict(state))
