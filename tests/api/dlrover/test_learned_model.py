"""The learned sizing model reaches the gRPC path: with a model loaded, the DLRover
master's create ScalePlan has the sizes of Brain's REST plan for the same job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from api.state import server_state
from brain.config import Settings
from brain.optimizing import load_registry
from brain.optimizing.sizing_model import ResourceHistory
from brain.retraining.service import ModelHolder
from tests.builders.dlrover import (
    JOB_UID,
    ElasticJobArgs,
    finished_run,
    job_body,
    sized_scale_plan,
    start_master,
)

GROWTH = 1.05


@dataclass(frozen=True)
class LastPeakForecast:
    """The next peak: the last run's, grown by 5 %, exceeded with probability 0.004."""

    last_peak: float

    def size_at_risk(self, risk: float) -> float | None:
        return self.last_peak * GROWTH

    def risk_of(self, size: float) -> float:
        return 0.004


class LastPeakModel:
    """A sizing model with hand-checkable forecasts (the trained trees' are not)."""

    version = "last-peak-test"

    def forecast(self, resource: str, history: ResourceHistory) -> LastPeakForecast | None:
        return LastPeakForecast(history.peaks[-1]) if history.peaks else None

    def forecasts(self, resource: str, histories: Sequence[ResourceHistory]):
        return [self.forecast(resource, history) for history in histories]


@pytest.fixture
def settings(pg_url, db, tmp_path) -> Settings:
    """learned_peak sizes at create (it uses the model; without one it is learned_margin)."""
    create = ["startup", "gpu_cpu", "learned_peak"]
    stages = {**load_registry().default_pipelines(), "create": create}
    return Settings(database_url=pg_url, stage_optimizers=stages, model_dir=str(tmp_path / "m"))


def test_grpc_create_uses_the_loaded_model_as_rest_does(brain, fake_k8s, dlrover_context):
    rest = brain.rest
    server_state(rest.app).sizing_models = ModelHolder(LastPeakModel())
    # Three succeeded runs; per run the largest node's peak: PS memory 6000, 6500, 7000 MiB
    # and CPU 3.0, 3.5, 4.0; worker memory 8000, 8400, 9000 MiB and CPU 4.1, 5.2, 4.8.
    finished_run(rest, "run-1", 3, [(3.0, 6000), (3.0, 6000)], [(4.1, 8000), (3.9, 7600)])
    finished_run(rest, "run-2", 2, [(3.5, 6500), (2.5, 6100)], [(5.2, 8400), (4.4, 8100)])
    finished_run(rest, "run-3", 1, [(4.0, 7000), (3.2, 6000)], [(4.8, 9000), (4.0, 8800)])
    roles = {
        "ps": {"count": 2, "cpu": 8, "memory_mib": 16384},
        "worker": {"count": 3, "cpu": 8, "memory_mib": 16384},
    }
    assert rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body(roles=roles)).status_code == 201
    rest_plan = rest.post(f"/api/v1/jobs/{JOB_UID}/optimize", json={"stage": "create"}).json()
    # The model: the last run's peak x 1.05, under the requests: PS 7000 -> 7350 MiB,
    # 4.0 -> 4.2 cores; workers 9000 -> 9450 MiB, 4.8 -> 5.04 cores. startup's 2 PS stay.
    ps, worker = rest_plan["roles"]["ps"], rest_plan["roles"]["worker"]
    assert (ps["count"], ps["cpu"], ps["memory_mib"]) == (2, 4.2, 7350.0)
    assert (worker["cpu"], worker["memory_mib"]) == (5.04, 9450.0)

    start_master(ElasticJobArgs(worker=(3, 2, 4096), ps=(0, 0, 0)), dlrover_context)

    # The master's ScalePlan: the same sizes, CPU rounded up to whole cores; the chief is
    # folded out of the workers (no chief replica) with the worker size.
    specs = sized_scale_plan(fake_k8s)["spec"]["replicaResourceSpecs"]
    assert specs["ps"] == {"replicas": 2, "resource": {"cpu": "5", "memory": "7350Mi"}}
    assert specs["worker"] == {"replicas": 2, "resource": {"cpu": "6", "memory": "9450Mi"}}
    assert specs["chief"] == {"replicas": 1, "resource": {"cpu": "6", "memory": "9450Mi"}}
    served = rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()[0]
    assert served["roles"] == rest_plan["roles"]
    assert any("last-peak-test" in str(r["evidence"]) for r in served["reasons"])
