"""The collector's pieces one by one, with numbers worked out by hand (no Prometheus,
no database): window planning, cluster state sums, series mapping, point preparation."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta

import pytest

from brain.config import CollectorSettings
from brain.domain import ClusterState, EventKind
from brain.services.collector_store import CollectableJob
from brain.services.nodes import NodeRef
from brain.services.samples import NodePoint
from collectors.client import Series
from collectors.loads import map_group
from collectors.mapping import JobIndex, SeriesMapper
from collectors.queries import (
    SAMPLE_SIGNALS,
    STEP_TIME_SIGNAL,
    QueryConfigError,
    queries_from_settings,
)
from collectors.reading import ClusterAnswers, GroupAnswers, cluster_state_of
from collectors.windows import Window, WindowPlanner
from collectors.writing import REQUIRED_SIGNALS, prepare

MIB = 1024 * 1024


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def job(id_: int, name: str, start: str) -> CollectableJob:
    return CollectableJob(id=id_, uid=f"uid-{name}", name=name, namespace=None, start=at(start))


# --- planning the window ----------------------------------------------------------------

PLANNER = WindowPlanner(step_s=15, lookback_s=3600, delay_s=30, interval_s=60)
NOW = at("2024-01-01T00:10:07")


def test_the_cycle_ends_on_the_last_grid_point_before_now_minus_the_delay():
    # 00:10:07 - 30 s = 00:09:37, floored to the 15 s grid.
    assert PLANNER.end(NOW) == at("2024-01-01T00:09:30")
    assert PLANNER.floor(at("2024-01-01T00:00:15")) == at("2024-01-01T00:00:15")
    assert PLANNER.ceil(at("2024-01-01T00:00:15.5")) == at("2024-01-01T00:00:30")


def test_windows_start_after_the_stored_load_else_at_the_start_within_the_lookback():
    fresh = job(1, "fresh", "2024-01-01T00:00:07")
    stored = job(2, "stored", "2024-01-01T00:00:00")
    old = job(3, "old", "2023-12-31T20:00:00")
    complete = job(4, "complete", "2024-01-01T00:00:00")
    cursor = job(5, "cursor", "2024-01-01T00:00:07")
    windows = PLANNER.windows(
        [fresh, stored, old, complete, cursor],
        NOW,
        PLANNER.end(NOW),
        last_stored={2: at("2024-01-01T00:05:03"), 4: at("2024-01-01T00:09:30")},
        cursors={5: at("2024-01-01T00:08:00")},
    )
    assert {w.job.name: w.first for w in windows} == {
        "fresh": at("2024-01-01T00:00:15"),  # its start, rounded up to the grid
        "stored": at("2024-01-01T00:05:15"),  # the grid point after 00:05:03
        "old": at("2023-12-31T23:10:15"),  # 00:10:07 - 1 h, rounded up
        # "complete": its next point, 00:09:45, lies after the end 00:09:30
        "cursor": at("2024-01-01T00:08:15"),  # after this collector's cursor
    }


def test_a_backfill_reads_from_now_minus_since_but_never_before_the_start():
    early = job(1, "early", "2024-01-01T00:00:07")
    late = job(2, "late", "2024-01-01T00:07:00")
    windows = PLANNER.windows(
        [early, late],
        NOW,
        PLANNER.end(NOW),
        last_stored={1: at("2024-01-01T00:09:00")},
        cursors={1: at("2024-01-01T00:09:30")},
        since=timedelta(minutes=5),
    )
    assert [(w.job.name, w.first) for w in windows] == [
        ("early", at("2024-01-01T00:05:15")),  # 00:05:07 rounded up; stored and cursor ignored
        ("late", at("2024-01-01T00:07:00")),
    ]


def test_windows_starting_within_five_minutes_of_a_group_share_its_queries():
    # Slack: max(interval 60 s, 20 steps x 15 s) = 300 s, from the group's first window.
    def window(name: str, first: str) -> Window:
        return Window(job(0, name, "2024-01-01T00:00:00"), at(first))

    windows = [
        window("b", "2024-01-01T00:05:15"),
        window("e", "2024-01-01T00:08:15"),
        window("a", "2024-01-01T00:00:15"),
        window("c", "2023-12-31T23:10:15"),
    ]
    groups = PLANNER.groups(windows)
    assert [[w.job.name for w in g] for g in groups] == [["c"], ["a", "b"], ["e"]]
    settings = CollectorSettings(prometheus_step_s=30, collect_interval_s=900)
    assert WindowPlanner.from_settings(settings).group_slack == timedelta(seconds=900)


# --- the cluster state ----------------------------------------------------------------------


def test_cluster_state_sums_the_answers_in_brain_units():
    t = at("2024-01-01T00:00:00")

    def one(value: float, **labels: str) -> Series:
        return Series(labels, [(t, value)])

    answers = ClusterAnswers(
        free_cpu=[
            one(1.5, instance="node-a"),
            one(1 / 3, instance="node-b"),
            Series({"instance": "node-c"}, []),  # no answer: not a node
        ],
        free_memory=[one(2048 * MIB, instance="node-a"), one(512 * MIB, instance="node-b")],
        free_gpu=[one(2, node="node-a"), one(0, node="node-b")],
        pending_pods=[one(3)],
        pending_cpu=[one(2.5)],
        pending_memory=[one(3 * 1024 * MIB)],
        pending_gpu=[one(0)],
    )
    # 1.5 + 0.333 cores (rounded to 3 places); 2048 + 512 MiB; 2 + 0 GPUs.
    assert cluster_state_of(answers, t) == ClusterState(
        source="prometheus",
        ts=t,
        nodes=2,
        free_cpu=1.833,
        free_memory_mib=2560.0,
        free_gpu=2.0,
        pending_pods=3,
        pending_cpu=2.5,
        pending_memory_mib=3072.0,
        pending_gpu=0.0,
    )
    # Nothing answered (no exporters): unknown, not zero.
    assert cluster_state_of(ClusterAnswers([], [], [], [], [], [], []), t) == ClusterState(
        source="prometheus", ts=t, nodes=0
    )


# --- mapping series to jobs and pods ----------------------------------------------------

T0 = at("2024-01-01T00:00:00")


def t(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pod_series(pod: str, points: list[tuple[int, float]], **labels: str) -> Series:
    return Series({"namespace": "ml", "pod": pod, **labels}, [(t(s), v) for s, v in points])


ALPHA = job(1, "alpha", "2024-01-01T00:00:00")
BETA = job(2, "beta", "2024-01-01T00:00:00")
WORKER = "alpha-edljob-worker-0"


def mapped_alpha():
    """alpha is collected from t0+15 to t0+45; beta is known but in another group."""
    answers = GroupAnswers(
        samples={
            "cpu": [
                pod_series(WORKER, [(0, 1.0), (15, 2.0), (30, 2.5), (45, 3.0), (60, 9.0)]),
                pod_series("ghost-edljob-worker-0", [(15, 1.0)]),
                pod_series("beta-edljob-ps-0", [(15, 1.0)]),
            ],
            "memory_mib": [pod_series(WORKER, [(15, 1024 * MIB)])],
            "gpu_util": [pod_series(WORKER, [(15, 40)])],
            "gpu_memory_mib": [],
            "gpu_memory_total_mib": [],
        },
        oom=[
            # 0 -> 1 at t0+30: one kill of "main".
            pod_series(WORKER, [(0, 0), (15, 0), (30, 1), (45, 1)], container="main"),
            # The rise at t0 is before the window (t0+15): already seen by the last cycle.
            pod_series(WORKER, [(-15, 0), (0, 1), (15, 1)], container="sidecar"),
        ],
    )
    window = Window(ALPHA, t(15))
    return map_group(answers, [window], t(45), SeriesMapper(), JobIndex([ALPHA, BETA]))


def test_series_are_tied_to_pods_of_the_group_and_kept_inside_the_window():
    load = mapped_alpha()
    # alpha's cpu, memory, gpu_util and two OOM series; the ghost pod maps to no job;
    # beta's series belong to a known job outside the group and count as neither.
    assert (load.matched, load.unmatched) == (5, 1)
    pod = load.pods[ALPHA.id][WORKER]
    assert (pod.ref.role, pod.ref.index) == ("worker", 0)
    assert pod.values == {
        t(15): {"cpu": 2.0, "memory_mib": 1024.0, "gpu_util": 0.4},
        t(30): {"cpu": 2.5},
        t(45): {"cpu": 3.0},
    }
    assert pod.kills == {t(30): ["main"]}


def test_prepare_stores_complete_points_and_one_event_per_kill():
    prepared = prepare(mapped_alpha().pods[ALPHA.id].values())
    assert prepared.incomplete_points == 2  # t0+30 and t0+45 have no memory
    assert prepared.load.points == [
        NodePoint(name=WORKER, role="worker", index=0, ts=t(15), cpu=2.0, memory_mib=1024.0,
                  gpu_util=0.4)
    ]  # fmt: skip
    [event] = prepared.load.events
    assert (event.ts, event.kind, event.node) == (t(30), EventKind.oom, WORKER)
    assert event.detail == "OOMKilled (container main); seen by Prometheus"
    assert prepared.load.event_nodes == [NodeRef(WORKER, "worker", 0)]


def test_sample_signals_are_named_like_the_stored_fields():
    point_fields = {f.name for f in fields(NodePoint)}
    assert {*SAMPLE_SIGNALS, STEP_TIME_SIGNAL} <= point_fields
    assert set(SAMPLE_SIGNALS) >= REQUIRED_SIGNALS
    assert {"memory_mib", "gpu_memory_mib", "gpu_memory_total_mib"} <= set(SAMPLE_SIGNALS)


def test_an_override_under_a_name_from_before_the_units_says_the_new_name():
    settings = CollectorSettings(prometheus_queries={"memory": "x", "node_cpu_free": "y"})
    with pytest.raises(QueryConfigError, match="memory is now memory_mib; node_cpu_free is now"):
        queries_from_settings(settings)


def test_collector_settings_come_from_the_flat_environment(monkeypatch):
    from brain.config import Settings

    monkeypatch.setenv("BRAIN_PROMETHEUS_URL", "http://prom:9090")
    monkeypatch.setenv("BRAIN_COLLECT_DELAY_S", "45")
    monkeypatch.setenv("BRAIN_PROMETHEUS_TOKEN", "tok")
    settings = Settings()
    assert settings.collector.prometheus_url == "http://prom:9090"
    assert settings.collector.collect_delay_s == 45
    masked = settings.masked()
    assert masked["prometheus_url"] == "http://prom:9090" and masked["collect_delay_s"] == 45
    assert masked["prometheus_token"] == "***" and "collector" not in masked
