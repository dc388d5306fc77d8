"""Discovery and backfill against a real Prometheus holding the synthetic fleet
(``fleet.py``): every training job found with its kind, roles, requests, status and
times, nothing else; its history stored at the history step; a second run changes
nothing; live cycles and job masters' registrations make one job."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from statistics import mean

import pytest
from sqlalchemy import delete, func, select

from api.main import main as brain_main
from brain.config import CollectorSettings
from brain.db.models import EventRow, JobRow, JobSummaryRow, NodeSampleRow, RoleSummaryRow
from brain.domain import JobStatus, RoleSpec
from brain.progress import ProgressBar
from brain.services.cluster import latest_cluster_state
from brain.services.discovered_jobs import GONE_REASON
from brain.services.jobs import JobInput, upsert_job
from brain.services.master_reports import ensure_running_job
from brain.summaries import summarize_job
from brain.telemetry import Telemetry
from collectors.client import PrometheusClient
from collectors.discovery.backfill import backfill
from collectors.scrape import Collector
from collectors.service import CollectorService
from tests.collectors.fleet import Fleet, H

STEP_S = 300


@pytest.fixture
def discovery_settings(db, prometheus) -> CollectorSettings:
    return CollectorSettings(
        prometheus_url=prometheus.url,
        collect_delay_s=0,
        prometheus_timeout_s=10,
        prometheus_retries=2,
        prometheus_backoff_s=0.05,
        prometheus_step_s=60,
        discovery_batch_selector="team=ml",
        discovery_history_step_s=STEP_S,
        discovery_chunk_s=2 * H,
    )


def at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _backfill(settings, session_factory, fleet: Fleet, hours: int = 14):
    client = PrometheusClient.from_settings(settings)
    try:
        return backfill(
            settings, session_factory, client, timedelta(hours=hours), now=at(fleet.end)
        )
    finally:
        client.close()


def _jobs(session_factory) -> dict[tuple[str, str], JobRow]:
    with session_factory() as session:
        rows = session.scalars(select(JobRow)).all()
        session.expunge_all()
    return {(row.namespace, row.name): row for row in rows}


def _samples(session_factory, pod: str) -> list[NodeSampleRow]:
    from brain.db.models import NodeRow

    with session_factory() as session:
        rows = session.scalars(
            select(NodeSampleRow)
            .join(NodeRow, NodeRow.id == NodeSampleRow.node_id)
            .where(NodeRow.name == pod)
            .order_by(NodeSampleRow.ts)
        ).all()
        session.expunge_all()
    return rows


def _state(session_factory) -> tuple:
    """Everything a backfill writes, as plain values."""
    with session_factory() as session:
        jobs = sorted(
            (
                j.uid,
                j.namespace,
                j.name,
                j.kind,
                j.status,
                j.started_at,
                j.finished_at,
                j.exit_reason,
                j.user,
                j.group_key,
                j.discovered,
                j.updated_at,
                tuple(sorted((r, s.count, s.cpu, s.memory_mib, s.gpu) for r, s in j.roles.items())),
            )
            for j in session.scalars(select(JobRow))
        )
        samples = session.scalar(select(func.count()).select_from(NodeSampleRow))
        events = sorted((e.kind, e.node_name, e.ts) for e in session.scalars(select(EventRow)))
        summaries = sorted(
            (s.job_id, s.computed_at, s.samples) for s in session.scalars(select(JobSummaryRow))
        )
    return jobs, samples, events, summaries


def test_backfill_discovers_every_training_job_and_nothing_else(
    discovery_settings, session_factory, fleet
):
    f = fleet.end
    report = _backfill(discovery_settings, session_factory, fleet)

    assert report.ok, report.errors
    assert (report.windows, report.windows_done) == (7, 7)  # 14 h in 2-hour windows
    with session_factory() as session:
        assert latest_cluster_state(session) is None  # the past is no cluster state
    jobs = _jobs(session_factory)
    assert {key: row.kind for key, row in jobs.items()} == {
        ("ml-a", "ctr-train-20261120"): "ElasticJob",
        ("ml-a", "ctr-train-20261121"): "ElasticJob",
        ("ml-b", "bert-ft"): "PyTorchJob",
        ("ml-b", "wide-deep"): "TFJob",
        ("ml-b", "gone-job"): "PyTorchJob",
        ("research", "rec-sys"): "VolcanoJob",
        ("research", "llm-pre"): "JobSet",
        ("research", "nightly-eval"): "Job",
    }  # not serving (a Deployment's), redis, debug, nor the unselected etl-daily
    assert all(row.discovered for row in jobs.values())
    ctr = {"ps": RoleSpec(count=1, cpu=2, memory_mib=8192), "worker": RoleSpec(2, 4, 16384)}
    assert jobs[("ml-a", "ctr-train-20261120")].roles == ctr
    assert jobs[("ml-a", "ctr-train-20261121")].roles == ctr
    assert jobs[("ml-b", "bert-ft")].roles == {
        "chief": RoleSpec(count=1, cpu=4, memory_mib=8192, gpu=1),
        "worker": RoleSpec(count=2, cpu=8, memory_mib=16384, gpu=2, cpu_limit=12),
    }
    assert jobs[("ml-b", "wide-deep")].roles == {
        "ps": RoleSpec(count=1, cpu=2, memory_mib=4096),
        "worker": RoleSpec(count=2, cpu=4, memory_mib=8192),
    }
    assert jobs[("research", "rec-sys")].roles == {
        "ps": RoleSpec(count=1, cpu=2, memory_mib=8192),
        "worker": RoleSpec(count=2, cpu=4, memory_mib=8192),
    }
    assert jobs[("research", "llm-pre")].roles == {
        "trainers": RoleSpec(count=2, cpu=8, memory_mib=32768, gpu=4)
    }
    assert jobs[("research", "nightly-eval")].roles == {
        "worker": RoleSpec(count=1, cpu=2, memory_mib=4096)
    }
    states = {
        key: (row.status, row.started_at, row.finished_at, row.exit_reason)
        for key, row in jobs.items()
    }
    assert states == {
        ("ml-a", "ctr-train-20261120"): ("succeeded", at(f - 11 * H), at(f - 8 * H), None),
        ("ml-a", "ctr-train-20261121"): ("running", at(f - 3 * H), None, None),
        ("ml-b", "bert-ft"): ("succeeded", at(f - 10 * H), at(f - 7 * H), None),
        ("ml-b", "wide-deep"): ("failed", at(f - 6 * H), at(f - 4 * H), "OOMKilled"),
        # Deleted while running: stopped at its last point, once a window did not see it.
        ("ml-b", "gone-job"): ("stopped", at(f - 4 * H), at(f - 2 * H - 600), GONE_REASON),
        ("research", "rec-sys"): ("running", at(f - 5 * H), None, None),
        ("research", "llm-pre"): ("succeeded", at(f - 9 * H), at(f - 6 * H), None),
        ("research", "nightly-eval"): ("succeeded", at(f - 4 * H), at(f - 3 * H), None),
    }
    # Both daily runs are one recurring group; the user is the namespace.
    assert {jobs[("ml-a", n)].group_key for n in ("ctr-train-20261120", "ctr-train-20261121")} == {
        "ml-a/ctr-train"
    }
    assert jobs[("ml-b", "bert-ft")].user == "ml-b"

    # History at 5-minute points: each keeps the step's mean CPU and its peak memory.
    worker = _samples(session_factory, "ctr-train-20261120-edljob-worker-1")
    # From the first step after the start to the end: 3 h / 5 min.
    assert len(worker) == 36
    assert (worker[0].ts, worker[-1].ts) == (at(f - 11 * H + STEP_S), at(f - 8 * H))
    assert mean(s.cpu for s in worker) == pytest.approx(3.0, rel=0.01)
    assert {s.memory_mib for s in worker} == {6200 + 4 * 64}
    gpu = _samples(session_factory, "bert-ft-worker-1")
    assert mean(s.gpu_util for s in gpu) == pytest.approx((70 + 90) / 2 / 100, rel=0.01)
    assert max(s.gpu_memory_mib for s in gpu) == 20000 + 24000
    assert mean(s.cpu for s in gpu) == pytest.approx(6.0, rel=0.01)
    assert _samples(session_factory, "serving-7d9f-x2x") == []

    # One OOM kill, when the OOM killer ended wide-deep's worker 0.
    with session_factory() as session:
        events = [(e.kind, e.node_name, e.ts) for e in session.scalars(select(EventRow))]
        summarized = set(session.scalars(select(JobSummaryRow.job_id)))
    assert events == [("oom", "wide-deep-worker-0", at(f - 4 * H))]
    finished = {row.id for row in jobs.values() if JobStatus(row.status).finished}
    assert summarized == finished and len(finished) == 6

    # A second backfill changes nothing at all.
    before = _state(session_factory)
    again = _backfill(discovery_settings, session_factory, fleet)
    assert again.ok and (again.stored, again.discovered_new, again.events) == (0, 0, 0)
    assert _state(session_factory) == before

    # Live cycles go on from there; the running jobs stay running, nothing is stopped.
    client = PrometheusClient.from_settings(discovery_settings)
    live = Collector(discovery_settings, session_factory, client).run_cycle(now=at(f))
    client.close()
    assert live.ok and (live.discovered_jobs, live.discovered_stopped) == (2, 0)
    running = {k for k, row in _jobs(session_factory).items() if row.status == "running"}
    assert running == {("ml-a", "ctr-train-20261121"), ("research", "rec-sys")}


def test_a_kill_read_after_the_job_was_summarized_counts_in_its_summary(
    discovery_settings, session_factory, fleet
):
    """wide-deep ended OOMKilled (worker 0, at f - 4 h). As if Prometheus had shown the
    kill only after discovery had finished and summarized the job (no event, a summary
    counting none), the next pass over the window stores the kill, the job's status
    unchanged, and summarizes the job again."""
    assert _backfill(discovery_settings, session_factory, fleet).ok
    with session_factory() as session:
        job = session.scalars(select(JobRow).where(JobRow.name == "wide-deep")).one()
        session.execute(delete(EventRow).where(EventRow.job_id == job.id))
        summarize_job(session, job)
        session.commit()
        assert session.get(JobSummaryRow, job.id).oom_count == 0

    again = _backfill(discovery_settings, session_factory, fleet)

    assert again.ok and (again.stored, again.discovered_new, again.events) == (0, 0, 1)
    with session_factory() as session:
        assert session.get(JobSummaryRow, job.id).oom_count == 1
        roles = session.scalars(select(RoleSummaryRow).where(RoleSummaryRow.job_id == job.id))
        assert {r.role: r.oom_count for r in roles} == {"ps": 0, "worker": 1}


def test_a_cluster_selector_narrows_every_query(discovery_settings, session_factory, fleet):
    elsewhere = discovery_settings.model_copy(update={"prometheus_selector": 'cluster="b"'})
    report = _backfill(elsewhere, session_factory, fleet)
    assert report.ok and report.jobs == set() and _jobs(session_factory) == {}

    ours = discovery_settings.model_copy(update={"prometheus_selector": 'cluster="fleet-1"'})
    report = _backfill(ours, session_factory, fleet)
    assert report.ok and len(_jobs(session_factory)) == 8 and report.stored > 0


def test_without_kube_state_metrics_nothing_is_stopped(discovery_settings, session_factory, fleet):
    f = fleet.end
    assert _backfill(discovery_settings, session_factory, fleet).ok
    # Two hours after the fleet's end kube-state-metrics answers for no pod at all: its
    # silence proves nothing, so the jobs last seen running stay running.
    client = PrometheusClient.from_settings(discovery_settings)
    report = Collector(discovery_settings, session_factory, client).run_cycle(now=at(f + 2 * H))
    client.close()
    assert report.ok and (report.discovered_jobs, report.discovered_stopped) == (0, 0)
    running = {k for k, row in _jobs(session_factory).items() if row.status == "running"}
    assert running == {("ml-a", "ctr-train-20261121"), ("research", "rec-sys")}


def test_a_live_cycle_discovers_running_jobs_and_reads_their_load(
    discovery_settings, session_factory, fleet
):
    f = fleet.end
    client = PrometheusClient.from_settings(discovery_settings)
    collector = Collector(discovery_settings, session_factory, client, telemetry=Telemetry())
    report = collector.run_cycle(now=at(f))
    client.close()

    assert report.ok, report.errors
    # The default lookback (1 h) sees the two running jobs only.
    assert report.discovered_jobs == 2 and report.discovered_new == 2
    jobs = _jobs(session_factory)
    assert set(jobs) == {("ml-a", "ctr-train-20261121"), ("research", "rec-sys")}
    assert jobs[("ml-a", "ctr-train-20261121")].status == "running"
    # Live points at the collector step (60 s) over the last hour, CPU from rate().
    ps = _samples(session_factory, "rec-sys-ps-0")
    assert ps[-1].ts == at(f)
    assert mean(s.cpu for s in ps) == pytest.approx(1.5, rel=0.01)
    assert len(ps) == 61


def test_a_job_registered_first_stays_the_one_job(discovery_settings, session_factory, fleet):
    f = fleet.end
    with session_factory() as session, session.begin():
        upsert_job(
            session,
            "k8s-uid-42",
            JobInput(
                name="rec-sys",
                user="carol",
                namespace="research",
                status=JobStatus.running,
                started_at=at(f - 5 * H),
                roles={"worker": RoleSpec(count=2, cpu=4)},
            ),
        )
    client = PrometheusClient.from_settings(discovery_settings)
    report = Collector(discovery_settings, session_factory, client).run_cycle(now=at(f))
    client.close()

    assert report.ok, report.errors
    jobs = _jobs(session_factory)
    rec = jobs[("research", "rec-sys")]
    # The registration wins: its uid, user and roles; the pods' load is stored under it.
    assert (rec.uid, rec.user, rec.discovered, rec.kind) == ("k8s-uid-42", "carol", False, None)
    assert rec.roles == {"worker": RoleSpec(count=2, cpu=4)}
    assert len([key for key in jobs if key[1] == "rec-sys"]) == 1
    assert len(_samples(session_factory, "rec-sys-worker-1")) == 61


def test_a_registration_takes_over_the_discovered_job(discovery_settings, session_factory, fleet):
    f = fleet.end
    client = PrometheusClient.from_settings(discovery_settings)
    collector = Collector(discovery_settings, session_factory, client)
    assert collector.run_cycle(now=at(f - 600)).ok
    discovered = _jobs(session_factory)[("research", "rec-sys")]
    assert (discovered.uid, discovered.discovered) == ("rec-sys", True)

    with session_factory() as session, session.begin():
        job, created = upsert_job(
            session,
            "k8s-uid-42",
            JobInput(
                name="rec-sys",
                user="carol",
                namespace="research",
                status=JobStatus.running,
                started_at=at(f - 5 * H),
            ),
        )
    assert not created and job.id == discovered.id

    report = collector.run_cycle(now=at(f))
    client.close()
    assert report.ok, report.errors
    jobs = _jobs(session_factory)
    rec = jobs[("research", "rec-sys")]
    assert (rec.id, rec.uid, rec.user, rec.discovered) == (
        discovered.id,
        "k8s-uid-42",
        "carol",
        False,
    )
    assert len([key for key in jobs if key[1] == "rec-sys"]) == 1
    # The samples of both cycles under the one job, none twice: the first cycle's hour
    # (f - 70 min .. f - 10 min, 61 points), then the ten minutes after it.
    samples = _samples(session_factory, "rec-sys-worker-0")
    assert len(samples) == len({s.ts for s in samples}) == 61 + 10
    assert (samples[0].ts, samples[-1].ts) == (at(f - 70 * 60), at(f))


def test_a_master_that_calls_first_is_a_second_job_until_named(
    discovery_settings, session_factory, fleet
):
    """A DLRover master names its job by the ElasticJob's uid only: Brain cannot tell it
    is the discovered job until a registration gives that uid the job's name."""
    f = fleet.end
    client = PrometheusClient.from_settings(discovery_settings)
    collector = Collector(discovery_settings, session_factory, client)
    assert collector.run_cycle(now=at(f - 1200)).ok
    with session_factory() as session, session.begin():
        master = ensure_running_job(session, "0f3a-uid", None, "research").id
    assert collector.run_cycle(now=at(f - 600)).ok
    jobs = _jobs(session_factory)
    discovered = jobs[("research", "rec-sys")]
    assert jobs[("research", "0f3a-uid")].id == master != discovered.id
    # The pods' load went to the discovered job only: f - 80 min .. f - 10 min.
    assert {s.job_id for s in _samples(session_factory, "rec-sys-worker-0")} == {discovered.id}

    with session_factory() as session, session.begin():
        upsert_job(
            session,
            "0f3a-uid",
            JobInput(name="rec-sys", user="carol", namespace="research", started_at=at(f - 5 * H)),
        )
    report = collector.run_cycle(now=at(f))
    client.close()

    assert report.ok, report.errors
    with session_factory() as session:
        named = session.scalars(select(JobRow).where(JobRow.name == "rec-sys")).all()
        session.expunge_all()
    assert sorted((job.id, job.uid, job.discovered) for job in named) == sorted(
        [(discovered.id, "rec-sys", True), (master, "0f3a-uid", False)]
    )
    stopped = next(job for job in named if job.id == discovered.id)
    assert (stopped.status, stopped.exit_reason) == ("stopped", GONE_REASON)
    # From then on the load goes to the master's job: its first collection reads the
    # lookback (f - 60 min .. f), so the two jobs' points overlap by 50 minutes.
    samples = _samples(session_factory, "rec-sys-worker-0")
    ours = [s.ts for s in samples if s.job_id == master]
    assert (len(ours), ours[0], ours[-1]) == (61, at(f - 3600), at(f))
    assert [s.ts for s in samples if s.job_id == discovered.id][-1] == at(f - 600)


def test_after_a_backfill_portraits_savings_and_suggestions_cover_the_past(
    discovery_settings, session_factory, fleet, client
):
    assert _backfill(discovery_settings, session_factory, fleet).ok
    # Points from 5 min after the start to the end: 35 steps of 5 min = 35/12 h sampled.
    sampled_h = 35 * STEP_S / 3600

    portrait = client.get("/api/v1/portraits/jobs/ctr-train-20261120", params={"namespace": "ml-a"})
    assert portrait.status_code == 200, portrait.text
    summary = portrait.json()["summary"]
    assert (summary["status"], summary["samples"], summary["group_key"]) == (
        "succeeded",
        3 * 36,
        "ml-a/ctr-train",
    )
    worker = next(r for r in portrait.json()["roles"] if r["role"] == "worker")
    assert worker["used"]["cpu_cores"]["mean"] == pytest.approx((2.5 + 3.0) / 2, rel=0.01)
    assert worker["used"]["memory_mib"]["max"] == 6200 + 4 * 64
    assert worker["hours"]["cpu"]["efficiency"] == pytest.approx(2.75 / 4, rel=0.01)

    savings = client.get("/api/v1/savings", params={"days": 30})
    assert savings.status_code == 200, savings.text
    rows = {row["key"]: row for row in savings.json()["rows"]}
    assert {key: (r["jobs"], r["replayed_jobs"]) for key, r in rows.items()} == {
        "ml-a": (1, 1),  # the run still going is not counted
        "ml-b": (3, 3),  # bert-ft, wide-deep, and gone-job (stopped)
        "research": (2, 2),
    }
    # The main role (workers): 2 x 4 cores requested, 2.5 + 3.0 used.
    assert rows["ml-a"]["requested_core_h"] == pytest.approx(8 * sampled_h, rel=0.01)
    assert rows["ml-a"]["used_core_h"] == pytest.approx(5.5 * sampled_h, rel=0.01)
    # bert-ft's workers: 2 x 2 GPUs at a mean 80 % (the DCGM series); Brain keeps both
    # cards: 2 x max(0.8, 44,000 / 81,920 MiB) / 0.9 = 1.78 -> 2.
    assert rows["ml-b"]["requested_gpu_h"] == pytest.approx(4 * sampled_h, rel=0.01)
    assert rows["ml-b"]["used_gpu_h"] == pytest.approx(4 * 0.8 * sampled_h, rel=0.01)
    assert rows["ml-b"]["brain_gpu_h"] == pytest.approx(4 * sampled_h, rel=0.01)
    # llm-pre's 2 trainers x 4 cards at 30 %: 4 x max(0.3, 32,000 / 163,840) / 0.9 = 1.33
    # -> 2 cards each, half the GPU-hours.
    assert rows["research"]["requested_gpu_h"] == pytest.approx(8 * sampled_h, rel=0.01)
    assert rows["research"]["brain_gpu_h"] == pytest.approx(4 * sampled_h, rel=0.01)

    suggestion = client.get("/api/v1/suggestions", params={"group": "ml-a/ctr-train"})
    assert suggestion.status_code == 200, suggestion.text
    basis = suggestion.json()["basis"]
    assert basis["match"] == "group"
    assert [run["uid"] for run in basis["runs"]] == ["ctr-train-20261120"]
    assert basis["runs"][0]["run_seconds"] == 3 * H


def test_cli_backfill_discovers_the_past(
    monkeypatch, discovery_settings, pg_url, session_factory, capsys
):
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)
    monkeypatch.setenv("BRAIN_PROMETHEUS_URL", discovery_settings.prometheus_url)
    monkeypatch.setenv("BRAIN_DISCOVERY_BATCH_SELECTOR", "team=ml")

    # A day back from now covers the whole fleet (it ended a few hours ago).
    assert brain_main(["collect", "--backfill", "1d"]) == 0
    out = capsys.readouterr().out
    assert "8 job(s) (8 new)" in out and "4/4 window(s)" in out
    assert len(_jobs(session_factory)) == 8
    assert brain_main(["collect", "--backfill", "1d"]) == 0
    assert "(0 new), 0 point(s) stored" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        brain_main(["collect", "--backfill", "soon"])
    assert refused.value.code == 2
    assert "invalid duration 'soon'" in capsys.readouterr().err


def test_serve_backfills_on_its_first_start_only(discovery_settings, session_factory, fleet):
    def service():
        return CollectorService(
            discovery_settings, session_factory, Telemetry(), start_backfill=timedelta(hours=14)
        )

    first = service()
    try:
        report = first.first_start_backfill(now=at(fleet.end))
        assert report is not None and report.ok and len(report.jobs) == 8
        # /readyz tells how the backfill went (14 h in 2-hour windows).
        shown = first.health()["detail"]["backfill"]
        assert (shown["windows"], shown["windows_done"], shown["jobs"]) == (7, 7, 8)
        assert shown["finished"] and shown["stored"] == report.stored > 0
        assert first.first_start_backfill(now=at(fleet.end)) is None  # once
    finally:
        first.close()
    # A restart finds discovered jobs: no second backfill.
    again = service()
    try:
        assert again.first_start_backfill(now=at(fleet.end)) is None
    finally:
        again.close()


def test_the_progress_bar_counts_windows():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    bar = ProgressBar(4, "backfill", stream=stream, unit="windows")
    bar(1)
    bar(4)
    assert stream.getvalue().endswith("100% 4/4 windows\n")
    assert " 25% 1/4 windows" in stream.getvalue()
