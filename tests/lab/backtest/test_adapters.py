"""Registered optimizers seen through the backtest: what they are given, what is read back."""

from __future__ import annotations

from typing import ClassVar

import pandas as pd
import pytest
from pydantic import BaseModel

from brain.domain import RoleSpec, Stage
from brain.lab.backtest import lineup
from brain.lab.backtest.engine import replay
from brain.optimizing import OptimizerRegistry, Proposal, load_registry
from brain.replay import adapters
from brain.replay.adapters import OptimizerRecommender
from brain.replay.runs import runs_of
from brain.replay.trace import normalize
from tests.builders.traces import trace


class Recording:
    """Proposes fixed sizes for ``role`` and keeps every context it was given."""

    name: ClassVar[str] = "recording"
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.create})

    class Settings(BaseModel):
        pass

    def __init__(self, role: str = "worker") -> None:
        self.role = role
        self.contexts = []

    def propose(self, context, settings) -> Proposal:
        self.contexts.append(context)
        return Proposal(roles={self.role: RoleSpec(cpu=1.5, memory_mib=700, gpu=0.25)})


GPU_RUNS = normalize(
    pd.DataFrame(
        {
            "workload": ["g"] * 4,
            "hour": [0, 1, 2, 3],
            "samples": [60] * 4,
            "gpu_util_mean": [0.1] * 4,
            "gpu_mem_mib_max": [36_000.0, 27_000.0, 18_000.0, 41_000.0],
        }
    ),
    gpu_memory_mib=80_000,
)


def test_history_is_most_recent_first_with_one_node_of_the_role_per_run():
    optimizer = Recording()
    recommender = OptimizerRecommender(
        "rec", optimizer, {"memory": adapters.memory_mib}, role="worker"
    )
    runs = runs_of(
        trace([{"workload": "w", "day": f"2024-01-0{d}", "mem_max": 100 * d} for d in range(1, 4)])
    )
    recommender.recommend(runs[2].submission, runs[:2])
    context = optimizer.contexts[0]
    assert context.stage is Stage.create
    assert context.job.roles["worker"].memory_mib == 1000  # the request as given
    assert [h.nodes[0].memory_max_mib for h in context.history] == [200, 100]
    assert all(len(h.nodes) == 1 and h.nodes[0].role == "worker" for h in context.history)
    assert context.history[0].job.duration_s == 24 * 3600
    assert context.history[0].job.gpu_type is None


def test_sizes_are_read_back_from_the_role_and_gpu_shares_become_card_memory():
    runs = runs_of(GPU_RUNS)
    readers = {
        "memory": adapters.memory_mib,
        "cpu": adapters.cpu,
        "gpu_memory": adapters.gpu_memory_mib,
    }
    sizes = OptimizerRecommender("rec", Recording(), readers).recommend(
        runs[1].submission, runs[:1]
    )
    assert sizes == {"memory": 700, "cpu": 1.5, "gpu_memory": 0.25 * 80_000}
    elsewhere = OptimizerRecommender("rec", Recording(role="ps"), readers)
    assert elsewhere.recommend(runs[1].submission, runs[:1]) == {}


def test_the_seed_gpu_rule_is_measured_through_the_registry():
    recommender = next(r for r in lineup.standard(load_registry()) if r.name == "gpu_cpu")
    result = replay(GPU_RUNS, [recommender])
    sizes = result.sizes[("gpu_cpu", "gpu_memory")]
    # 3 earlier runs of an hour: 1 GPU x max(mean util 0.1, memory util 36000/80000) / 0.9
    # = 0.5 of the card; fewer than 3 runs: no opinion
    assert sizes[3] == pytest.approx(0.5 * 80_000)
    assert pd.isna(sizes[:3]).all()


def test_the_seed_startup_sizes_the_chief_from_the_largest_recent_peak():
    table = trace(
        [
            {"workload": "w", "day": f"2024-01-0{d}", "mem_max": m}
            for d, m in [(1, 300), (2, 500), (3, 200)]
        ]
    )
    recommender = next(r for r in lineup.standard(load_registry()) if r.name == "startup")
    sizes = replay(table, [recommender]).sizes[("startup", "memory")]
    assert sizes[2] == 500


def test_optimizers_that_are_not_registered_are_left_out():
    names = [r.name for r in lineup.standard(OptimizerRegistry(), k=3, margin=1.5)]
    assert names == ["request", "max_last3_x1.5", "p90_last3_x1.5"]
    assert [s.family for s in lineup.sweeps(OptimizerRegistry(), k=3)] == [
        "max_last3",
        "p90_last3",
    ]
