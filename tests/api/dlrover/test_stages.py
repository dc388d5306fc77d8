"""Which of the running stage's optimizers each DLRover stage runs: those whose declared
changes the master applies from that stage's answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from api.dlrover.stages import Reply, carries, translate
from brain.config import Settings
from brain.domain import Stage
from brain.optimizing import ANY_ROLE, Changes, load_registry
from brain.optimizing.changes import ANYTHING, changes_of
from brain.optimizing.pipeline import stage_pipeline

REGISTRY = load_registry()


def chosen(reply: Reply, settings: Settings | None = None) -> list[str]:
    configured = stage_pipeline(REGISTRY, settings or Settings(), Stage.running)
    return [name for name in configured if carries(reply, changes_of(REGISTRY.get(name)))]


def test_the_ps_stage_runs_what_changes_or_moves_ps_and_the_worker_stages_the_worker_group():
    # hot_ps moves PS, ps_scaling sets the PS count, oom_risk moves any node; worker_tuning
    # and cluster_shortage set the worker group; slow_node only moves workers, which the
    # master never applies at its worker stages
    assert chosen(Reply.ps) == ["hot_ps", "ps_scaling", "oom_risk"]
    assert chosen(Reply.workers) == ["worker_tuning", "cluster_shortage"]
    assert chosen(Reply.any) == REGISTRY.default_pipeline(Stage.running)


def test_the_docs_stage_table_names_what_each_running_stage_runs():
    page = (Path(__file__).resolve().parents[3] / "docs" / "dlrover.md").read_text()

    def listed(dlrover_stage: str) -> list[str]:
        row = next(r for r in page.splitlines() if f"`{dlrover_stage}`" in r.split(" | ")[0])
        return re.findall(r"`(\w+)`", row.split(" | ")[1])[1:]  # after the Brain stage

    assert listed("job_stage_ps_running") == chosen(Reply.ps)
    assert listed("job_stage_worker_running") == chosen(Reply.workers)


def test_a_configured_release_joins_the_ps_stage_in_its_configured_place():
    running = ["worker_tuning", "memory_release", "hot_ps"]
    settings = Settings(stage_optimizers={"running": running})
    assert chosen(Reply.ps, settings) == ["memory_release", "hot_ps"]
    assert chosen(Reply.workers, settings) == ["worker_tuning"]


@pytest.mark.parametrize(
    ("changes", "ps", "workers"),
    [
        (Changes(groups=frozenset({"ps"})), True, False),
        (Changes(nodes=frozenset({"ps"})), True, False),
        (Changes(groups=frozenset({"worker"})), False, True),
        (Changes(nodes=frozenset({"worker"})), False, False),
        (Changes(groups=frozenset({"chief", "evaluator"})), False, False),
        (Changes(nodes=frozenset({ANY_ROLE})), True, False),
        (ANYTHING, True, True),  # a plugin that declares nothing
    ],
)
def test_what_each_reply_carries(changes, ps, workers):
    assert carries(Reply.ps, changes) is ps
    assert carries(Reply.workers, changes) is workers
    assert carries(Reply.any, changes)


@pytest.mark.parametrize(
    ("stage", "phase", "reply", "filtered"),
    [
        ("job_stage_ps_running", None, Reply.ps, True),
        ("job_stage_worker_initial", "sample", Reply.workers, True),
        ("job_stage_worker_running", "stable", Reply.workers, True),
        ("job_stage_worker_initial", "initial", Reply.workers, False),
        ("job_stage_running", None, Reply.any, False),
    ],
)
def test_the_running_stages_are_filtered_by_what_the_reply_carries(stage, phase, reply, filtered):
    call = translate(stage, phase, [])
    assert (call.reply, call.only_what_reply_carries) == (reply, filtered)
