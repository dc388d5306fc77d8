"""Runs from the database: summarized jobs as the normalized run table."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from brain.domain import JobStatus, RoleSpec
from brain.replay.db_source import DatabaseRuns
from brain.replay.trace import RUN_COLUMNS, TraceError
from brain.services.jobs import JobFilters
from tests.builders import make_job
from tests.builders.db_runs import T0, add_job, database_url, ps_job


def test_a_ps_job_is_one_run_of_its_worker_role_with_per_node_peaks(db):
    ps_job(db, "ctr-1", hours=1.5)
    table = DatabaseRuns(database_url(db)).load()
    assert list(table.columns) == list(RUN_COLUMNS)
    run = table.iloc[0].to_dict()
    assert len(table) == 1 and run["workload"] == "alice/ctr"
    assert run["start"] == T0 and run["duration_h"] == 1.5
    # the worker role holds most requested core-hours; its request is per node
    assert (run["req_cpu"], run["req_memory_mib"]) == (8.0, 16384.0)
    # peaks: the largest node's; means: over all samples of the role
    assert run["cpu_p95"] == pytest.approx(7.4)
    assert run["cpu_max"] == 9.0 and run["mem_max"] == 500.0
    assert run["cpu_mean"] == pytest.approx(2.3) and run["mem_mean"] == pytest.approx(220.0)
    for column in ("req_gpu", "req_gpu_memory_mib", "gpu_util_mean", "gpu_mem_mib_max"):
        assert math.isnan(run[column])


def test_role_can_be_fixed_and_start_falls_back_to_creation(db):
    ps_job(db, "ctr-1", started=False)
    table = DatabaseRuns(database_url(db), role="ps").load()
    run = table.iloc[0]
    assert run["start"] == T0 - timedelta(minutes=5)  # created_at
    assert (run["req_cpu"], run["cpu_p95"], run["mem_max"]) == (4.0, 0.5, 50.0)
    with pytest.raises(TraceError, match="role 'chief'"):
        DatabaseRuns(database_url(db), role="chief").load()


def test_filters_and_only_final_summaries(db):
    for day, (user, group, status) in enumerate(
        [
            ("alice", "alice/ctr", "succeeded"),
            ("alice", "alice/ctr", "failed"),
            ("bob", "bob/rank", "succeeded"),
            ("bob", "bob/rank", "running"),  # a snapshot summary: not a run
        ]
    ):
        ps_job(
            db, f"job-{day}", user=user, group=group, status=status, start=T0 + timedelta(days=day)
        )
    url = database_url(db)

    def workloads(**filters) -> list[str]:
        status = filters.pop("status", JobStatus.succeeded)
        return DatabaseRuns(url, JobFilters(status=status, **filters)).load()["workload"].tolist()

    assert workloads() == ["alice/ctr", "bob/rank"]
    assert workloads(status=None) == ["alice/ctr", "alice/ctr", "bob/rank"]
    assert workloads(status=JobStatus.failed) == ["alice/ctr"]
    assert workloads(user="bob") == ["bob/rank"]
    assert workloads(group_key="alice/ctr", status=None) == ["alice/ctr", "alice/ctr"]
    with pytest.raises(TraceError, match="no summarized finished job"):
        workloads(dataset="nope")
    with pytest.raises(TraceError, match="not finished"):
        workloads(status=JobStatus.running)


def test_a_gpu_role_is_chosen_over_a_bigger_cpu_role_and_brings_its_card(db):
    roles = {
        "chief": RoleSpec(count=1, cpu=32, memory_mib=65536),
        "worker": RoleSpec(count=1, cpu=4, memory_mib=8192, gpu=2),
    }
    gpu = {"worker-0": [(0.5, 10000.0, 40960.0), (0.7, 30000.0, 40960.0)]}
    usage = {"chief-0": [(20, 9000), (24, 9000)], "worker-0": [(3, 6000), (3, 7000)]}
    add_job(db, "gpu-1", usage, roles=roles, gpu=gpu)
    # no GPU samples: the card is --gpu-memory-mib's
    add_job(db, "gpu-2", usage, roles=roles, start=T0 + timedelta(days=1))
    table = DatabaseRuns(database_url(db), gpu_memory_mib=81920.0).load()
    first, second = table.iloc[0], table.iloc[1]
    assert (first["req_cpu"], first["req_gpu"]) == (4.0, 2.0)
    # the pod's 2 cards report 40960 MiB together: one card holds 20480
    assert first["gpu_mem_total_mib"] == 20480.0
    assert first["req_gpu_memory_mib"] == 2 * 20480.0
    assert first["gpu_mem_mib_max"] == 30000.0
    assert first["gpu_util_mean"] == pytest.approx(0.6)
    assert second["gpu_mem_total_mib"] == 81920.0 and math.isnan(second["gpu_mem_mib_max"])


def test_a_request_of_zero_is_not_given(db):
    add_job(db, "bare-1", {"worker-0": [(1, 100)]}, roles={})  # nodes known from samples only
    run = DatabaseRuns(database_url(db)).load().iloc[0]
    assert math.isnan(run["req_cpu"]) and math.isnan(run["req_memory_mib"])
    assert run["mem_max"] == 100.0


def test_unsummarized_jobs_are_pointed_out(db):
    with Session(db) as session:
        make_job(session, "late-1", name="late", dataset=None, start=T0, hours=0)
        session.commit()
    with pytest.raises(TraceError, match="1 of them have no summary yet: run `brain summarize`"):
        DatabaseRuns(database_url(db)).load()


def test_an_unreachable_database_is_a_trace_error():
    source = DatabaseRuns("postgresql+psycopg://nobody:secret@127.0.0.1:1/none")
    with pytest.raises(TraceError, match="cannot read the database"):
        source.load()
    assert "secret" not in source.name and "status=succeeded" in source.name


def test_the_main_role_is_chosen_per_workload(db, caplog):
    ps_job(db, "ctr-1")
    ps_job(db, "ctr-2", start=T0 + timedelta(days=1))
    only_ps = {"ps": RoleSpec(count=1, cpu=4, memory_mib=8192)}
    # a run of the same workload without workers is left out, not judged on its PS
    add_job(db, "ctr-3", {"ps-0": [(1, 10)]}, roles=only_ps, start=T0 + timedelta(days=2))
    add_job(db, "feed-1", {"ps-0": [(1, 10)]}, roles=only_ps, group="alice/feed")
    table = DatabaseRuns(database_url(db)).load()
    assert table["workload"].tolist() == ["alice/ctr", "alice/ctr", "alice/feed"]
    assert table["req_cpu"].tolist() == [8.0, 8.0, 4.0]
    assert "1 of 4 runs left out" in caplog.text
