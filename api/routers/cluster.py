"""The cluster's state, as the Prometheus collector last saw it (read-only)."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from api.deps import SessionDep
from api.errors import ERROR_RESPONSES
from api.schemas.cluster import ClusterStateOut
from brain.errors import NotFound
from brain.services.cluster import latest_cluster_state

router = APIRouter(prefix="/api/v1/cluster", tags=["cluster"], responses=ERROR_RESPONSES)


@router.get("/state", response_model=ClusterStateOut, summary="Free capacity and pending demand")
def get_cluster_state(session: SessionDep) -> ClusterStateOut:
    """The freshest cluster state: free CPU, memory and GPUs, and what pending pods
    request. 404 until the collector (``BRAIN_PROMETHEUS_URL``) has recorded one."""
    state = latest_cluster_state(session)
    if state is None:
        raise NotFound(
            "no cluster state recorded yet: the Prometheus collector records one each cycle"
        )
    return ClusterStateOut(**asdict(state))
