"""The collector against a real Prometheus holding a synthetic cluster's history."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text

from api.app import create_app
from api.main import main as brain_main
from api.server import prometheus_collector
from api.state import server_state
from brain.config import CollectorSettings
from brain.db.models import EventRow, JobSummaryRow, NodeRow, NodeSampleRow, RoleSummaryRow
from brain.domain import ClusterState, JobStatus
from brain.services.cluster import latest_cluster_state
from brain.services.jobs import get_job
from brain.services.samples import SampleQuery, node_samples
from brain.summaries import summarize_job
from brain.telemetry import Telemetry
from collectors.client import PrometheusClient
from collectors.lock import AdvisoryLock
from collectors.scrape import Collector
from collectors.service import CollectorService
from tests.collectors.cluster import (
    EXPECTED_FREE_GPU,
    EXPECTED_PENDING,
    GHOST_SERIES,
    JOB_PODS,
    OOM_BEFORE_T0,
    STEP,
    STEP_TIME_FROM_BEFORE_T0,
    STEP_TIME_S,
    TERMINATED_OOM_BEFORE_T0,
    Cluster,
)
from tests.collectors.conftest import app_settings, register_job
from tests.ports import free_port

GPU_FIELDS = ("gpu_util", "gpu_memory_mib", "gpu_memory_total_mib")
# Jobs start 7 s past a grid point, so their first point is the next one.
JOB_AGE_S = 3600 - 7
FIRST_BEFORE_T0 = 3585  # the first grid point after the start
POINTS_PER_POD = FIRST_BEFORE_T0 // STEP + 1
ALL_POINTS = 5 * POINTS_PER_POD


def EXPECTED_STATE(cluster: Cluster) -> ClusterState:  # noqa: N802 - reads as a constant
    """Node-exporter: 2 nodes x 2 idle cores at 0.75, 64 + 32 GiB available; GPUs and
    pending demand from kube-state-metrics (worked out in cluster.py)."""
    return ClusterState(
        source="prometheus",
        ts=cluster.t0_dt,
        nodes=2,
        free_cpu=3.0,
        free_memory_mib=96 * 1024.0,
        free_gpu=EXPECTED_FREE_GPU,
        pending_pods=EXPECTED_PENDING["pods"],
        pending_cpu=EXPECTED_PENDING["cpu"],
        pending_memory_mib=EXPECTED_PENDING["memory_mib"],
        pending_gpu=EXPECTED_PENDING["gpu"],
    )


def _collector(settings, session_factory, telemetry: Telemetry | None = None) -> Collector:
    client = PrometheusClient.from_settings(settings)
    return Collector(settings, session_factory, client, telemetry=telemetry or Telemetry())


def _register_both(session_factory, cluster: Cluster) -> None:
    started = cluster.t0_dt - timedelta(seconds=JOB_AGE_S)
    register_job(session_factory, "alpha", "team-a", started)
    register_job(session_factory, "beta", "team-b", started)


def _samples(session_factory, uid: str) -> dict[tuple[str, int], tuple]:
    with session_factory() as session:
        rows = node_samples(session, get_job(session, uid), SampleQuery(limit=100_000))
    # A NodePoint carries both the node (role, index) and the sample (ts, measurements).
    return {(p.name, int(p.ts.timestamp())): (p, p) for p in rows}


def _assert_exact(cluster: Cluster, samples: dict, job: str, first: int, last: int) -> None:
    """Every pod of ``job`` has exactly the expected point at every grid time, no other."""
    remaining = dict(samples)
    for spec in JOB_PODS[job]:
        for t in range(first, last + 1, STEP):
            assert (spec.pod, t) in remaining, f"missing {spec.pod} at t0{t - cluster.t0:+d}s"
            node, sample = remaining.pop((spec.pod, t))
            expected = cluster.expected(spec, t)
            assert (node.role, node.index) == (spec.role, spec.index)
            assert sample.cpu == pytest.approx(expected["cpu"], rel=1e-12, abs=1e-12)
            assert sample.memory_mib == expected["memory_mib"]
            for name in GPU_FIELDS:
                if expected[name] is None:
                    assert getattr(sample, name) is None, (spec.pod, name)
                else:
                    assert getattr(sample, name) == pytest.approx(expected[name], rel=1e-12)
    assert not remaining, f"unexpected points: {sorted(remaining)[:5]}"


def _expected_kills(cluster: Cluster) -> list[tuple[str, str, int]]:
    return [
        ("oom", "beta-edljob-worker-0", cluster.t0 - OOM_BEFORE_T0),
        ("oom", "beta-edljob-ps-0", cluster.t0 - TERMINATED_OOM_BEFORE_T0),
    ]


def _counter(telemetry: Telemetry, name: str, **labels: str) -> float:
    return telemetry.registry.get_sample_value(name, labels) or 0.0


def _count(engine, model) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(model)).scalar_one()


def _oom_events(session_factory) -> list[tuple[str, str, int]]:
    with session_factory() as session:
        rows = session.scalars(select(EventRow).order_by(EventRow.ts)).all()
        return [(e.kind, e.node_name, int(e.ts.timestamp())) for e in rows]


# --- a cycle, value by value ------------------------------------------------------------


def test_cycle_stores_every_point_converted_and_one_oom_event(
    collector_settings, session_factory, cluster, db
):
    _register_both(session_factory, cluster)
    telemetry = Telemetry()
    report = _collector(collector_settings, session_factory, telemetry).run_cycle(now=cluster.t0_dt)

    assert report.ok, report.errors
    assert (report.jobs, report.jobs_written) == (2, 2)
    assert (report.stored, report.duplicates) == (ALL_POINTS, 0)
    first, last = cluster.t0 - FIRST_BEFORE_T0, cluster.t0
    _assert_exact(cluster, _samples(session_factory, "uid-alpha"), "alpha", first, last)
    _assert_exact(cluster, _samples(session_factory, "uid-beta"), "beta", first, last)
    # Each OOM kill once (a restarted container, a terminated one); alpha-worker-1's
    # restart was not an OOM kill.
    assert _oom_events(session_factory) == _expected_kills(cluster)
    assert report.events == 2
    # The ghost job's series were read, counted and dropped; nothing else was stored.
    assert report.unmatched_series == GHOST_SERIES
    assert _count(db, NodeRow) == 5
    assert _counter(telemetry, "brain_collector_series_total", outcome="unmatched") == 3
    assert _counter(telemetry, "brain_collector_series_total", outcome="matched") > 0
    stored = _counter(
        telemetry, "brain_ingested_points_total", source="prometheus", outcome="stored"
    )
    assert stored == ALL_POINTS
    assert report.cluster == EXPECTED_STATE(cluster)


def test_cluster_state_is_stored_and_served(collector_settings, pg_url, session_factory, cluster):
    app = create_app(app_settings(pg_url, collector_settings))
    with TestClient(app) as client:
        missing = client.get("/api/v1/cluster/state")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"

        report = _collector(collector_settings, session_factory).run_cycle(now=cluster.t0_dt)
        assert report.ok, report.errors
        with session_factory() as session:
            assert latest_cluster_state(session) == EXPECTED_STATE(cluster)
        body = client.get("/api/v1/cluster/state").json()
        assert body == {
            "source": "prometheus",
            "ts": cluster.t0_dt.isoformat().replace("+00:00", "Z"),
            "nodes": 2,
            "free_cpu": 3.0,
            "free_memory_mib": 98304.0,
            "free_gpu": 3.0,
            "pending_pods": 2,
            "pending_cpu": 6.0,
            "pending_memory_mib": 12288.0,
            "pending_gpu": 2.0,
            "queued_jobs": None,
        }

        # The next cycle replaces the state (one row per source), it does not add one.
        later = cluster.t0_dt + timedelta(minutes=1)
        _collector(collector_settings, session_factory).run_cycle(now=later)
        latest = client.get("/api/v1/cluster/state").json()
        assert latest["ts"] == later.isoformat().replace("+00:00", "Z")
    assert _count_rows(session_factory) == 1


def _count_rows(session_factory) -> int:
    from brain.db.models import ClusterStateRow

    with session_factory() as session:
        return session.scalar(select(func.count()).select_from(ClusterStateRow))


def _step_times(session_factory, uid: str) -> dict[tuple[str, int], float | None]:
    return {key: sample.step_time_s for key, (_, sample) in _samples(session_factory, uid).items()}


def test_step_time_is_off_by_default(collector_settings, session_factory, cluster):
    _register_both(session_factory, cluster)
    report = _collector(collector_settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert report.ok and report.stored == ALL_POINTS
    assert set(_step_times(session_factory, "uid-alpha").values()) == {None}


def test_a_step_time_metric_name_maps_to_node_samples(collector_settings, session_factory, cluster):
    """The gauge per worker pod becomes its samples' step_time_s; pods without the series
    (the PS) have none, and 0 (beta's worker before it trained) is not a step time."""
    _register_both(session_factory, cluster)
    settings = collector_settings.model_copy(
        update={"prometheus_step_time": "training_step_time_seconds"}
    )
    report = _collector(settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert report.ok, report.errors
    assert report.stored == ALL_POINTS  # the same points, one more column
    stored = {
        **_step_times(session_factory, "uid-alpha"),
        **_step_times(session_factory, "uid-beta"),
    }
    assert len(stored) == ALL_POINTS
    for (pod, t), step_time in stored.items():
        assert step_time == cluster.step_time(pod, t), (pod, t - cluster.t0)
    beta = [v for (pod, t), v in stored.items() if pod == "beta-edljob-worker-0"]
    # 15 s points from 30 min before t0 to t0 carry 1.25 s; the earlier ones none
    assert beta.count(1.25) == STEP_TIME_FROM_BEFORE_T0 // STEP + 1
    assert beta.count(None) == POINTS_PER_POD - beta.count(1.25)


def test_a_step_time_promql_template_maps_to_node_samples(
    collector_settings, session_factory, cluster
):
    """A full template, here 1 / the rate of a step counter, with the usual placeholders."""
    _register_both(session_factory, cluster)
    query = "1 / sum by (namespace, pod) (rate(training_steps_total{$selector}[$rate_window]))"
    settings = collector_settings.model_copy(
        update={"prometheus_step_time": query, "collect_mapping": "labels"}
    )
    report = _collector(settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert report.ok, report.errors
    for uid in ("uid-alpha", "uid-beta"):
        for (pod, _), step_time in _step_times(session_factory, uid).items():
            if pod in STEP_TIME_S:
                assert step_time == pytest.approx(STEP_TIME_S[pod], rel=1e-9)
            else:
                assert step_time is None


def test_second_run_and_backfill_store_nothing_new(collector_settings, session_factory, cluster):
    _register_both(session_factory, cluster)
    collector = _collector(collector_settings, session_factory)
    assert collector.run_cycle(now=cluster.t0_dt).stored == ALL_POINTS

    again = collector.run_cycle(now=cluster.t0_dt)
    assert again.ok and (again.jobs, again.stored, again.events) == (0, 0, 0)

    # A backfill re-reads everything (clamped to the jobs' start): all duplicates.
    fresh = _collector(collector_settings, session_factory)
    backfill = fresh.run_cycle(now=cluster.t0_dt, since=timedelta(hours=2))
    assert backfill.ok, backfill.errors
    assert (backfill.stored, backfill.duplicates, backfill.events) == (0, ALL_POINTS, 0)
    assert _oom_events(session_factory) == _expected_kills(cluster)


def test_consecutive_cycles_meet_without_gap_or_double(
    collector_settings, session_factory, cluster
):
    """The cycle boundary falls just before the OOM kill: the rise is still seen once."""
    _register_both(session_factory, cluster)
    collector = _collector(collector_settings, session_factory)
    oom_at = cluster.t0 - OOM_BEFORE_T0
    first = collector.run_cycle(now=datetime.fromtimestamp(oom_at - STEP, UTC))
    assert first.ok and first.events == 0
    second = collector.run_cycle(now=cluster.t0_dt)
    assert second.ok and second.events == 2
    assert first.stored + second.stored == ALL_POINTS
    start = cluster.t0 - FIRST_BEFORE_T0
    _assert_exact(cluster, _samples(session_factory, "uid-beta"), "beta", start, cluster.t0)
    assert _oom_events(session_factory) == _expected_kills(cluster)


def test_label_mapping_reads_the_same_load(collector_settings, session_factory, cluster):
    _register_both(session_factory, cluster)
    settings = collector_settings.model_copy(update={"collect_mapping": "labels"})
    report = _collector(settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert report.ok, report.errors
    assert report.stored == ALL_POINTS
    assert report.unmatched_series == GHOST_SERIES
    first = cluster.t0 - FIRST_BEFORE_T0
    _assert_exact(cluster, _samples(session_factory, "uid-alpha"), "alpha", first, cluster.t0)
    assert _oom_events(session_factory) == _expected_kills(cluster)


def test_extra_selector_narrows_every_query(collector_settings, session_factory, cluster):
    _register_both(session_factory, cluster)
    settings = collector_settings.model_copy(update={"prometheus_selector": 'namespace="team-b"'})
    report = _collector(settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert report.ok, report.errors
    assert report.stored == 2 * POINTS_PER_POD  # beta's two pods only
    assert report.unmatched_series == 0  # the ghost pod lives in team-a
    assert _samples(session_factory, "uid-alpha") == {}


def test_sqlite_store_works_without_a_lock(sqlite_url, prometheus, cluster):
    from brain.db.engine import make_engine, make_session_factory

    engine = make_engine(sqlite_url)
    try:
        factory = make_session_factory(engine)
        _register_both(factory, cluster)
        settings = CollectorSettings(prometheus_url=prometheus.url, collect_delay_s=0)
        service = CollectorService(settings, factory, engine=engine)
        try:
            report = service.tick(now=cluster.t0_dt)
            assert report is not None and report.ok, report and report.errors
            assert (report.stored, report.events) == (ALL_POINTS, 2)
            assert service.tick(now=cluster.t0_dt).stored == 0
        finally:
            service.close()
        with factory() as session:
            assert latest_cluster_state(session) == EXPECTED_STATE(cluster)
        first = cluster.t0 - FIRST_BEFORE_T0
        _assert_exact(cluster, _samples(factory, "uid-beta"), "beta", first, cluster.t0)
    finally:
        engine.dispose()


def test_jobs_not_running_are_not_collected(collector_settings, session_factory, cluster, db):
    started = cluster.t0_dt - timedelta(seconds=JOB_AGE_S)
    register_job(session_factory, "alpha", "team-a", started, status=JobStatus.succeeded)
    report = _collector(collector_settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert report.ok and report.jobs == 0
    assert _count(db, NodeSampleRow) == 0


def test_kills_scraped_after_the_finish_count_in_the_summary(
    collector_settings, session_factory, cluster
):
    """beta finished (its exit came first) and was summarized with nothing measured; a
    collection of its last hour then stores its points and two OOM kills (a worker, a
    PS): the cycle summarizes it again, and every page reads the two kills."""
    started = cluster.t0_dt - timedelta(seconds=JOB_AGE_S)
    register_job(session_factory, "beta", "team-b", started, status=JobStatus.failed)
    with session_factory() as session:
        job_id = get_job(session, "uid-beta").id
        summarize_job(session, get_job(session, "uid-beta"))
        session.commit()
        assert session.get(JobSummaryRow, job_id).oom_count == 0

    report = _collector(collector_settings, session_factory).run_cycle(
        now=cluster.t0_dt, job_uids=["uid-beta"]
    )

    assert report.ok and report.events == 2
    assert report.stale_summaries == [job_id]
    with session_factory() as session:
        summary = session.get(JobSummaryRow, job_id)
        pods = len(JOB_PODS["beta"])
        assert (summary.oom_count, summary.samples) == (2, pods * POINTS_PER_POD)
        roles = session.scalars(select(RoleSummaryRow).where(RoleSummaryRow.job_id == job_id))
        assert {r.role: r.oom_count for r in roles} == {"ps": 1, "worker": 1}
        assert get_job(session, "uid-beta").summarized_at is not None  # current again


def test_long_ranges_are_split_and_merged(prometheus, cluster, monkeypatch):
    from collectors import client as client_module

    client = PrometheusClient(prometheus.url)
    query = 'container_memory_working_set_bytes{pod="alpha-edljob-ps-0", container="main"}'
    start, end = cluster.t0_dt - timedelta(minutes=25), cluster.t0_dt
    whole = client.query_range(query, start, end, STEP)
    monkeypatch.setattr(client_module, "MAX_POINTS_PER_QUERY", 7)
    split = client.query_range(query, start, end, STEP)
    assert len(whole) == len(split) == 1
    assert len(whole[0].points) == 25 * 60 // STEP + 1
    assert split[0].points == whole[0].points
    client.close()


def test_a_failed_write_rolls_back_that_job_only(
    collector_settings, session_factory, cluster, db, monkeypatch
):
    from sqlalchemy.exc import OperationalError

    from brain.services import collector_store

    _register_both(session_factory, cluster)
    real_ingest = collector_store.ingest

    def ingest_then_fail_for_beta(session, job, nodes, speed):
        result = real_ingest(session, job, nodes, speed)  # rows are in the transaction...
        if job.name == "beta":
            raise OperationalError("INSERT", {}, Exception("connection lost"))  # ...then not
        return result

    monkeypatch.setattr(collector_store, "ingest", ingest_then_fail_for_beta)
    telemetry = Telemetry()
    report = _collector(collector_settings, session_factory, telemetry).run_cycle(now=cluster.t0_dt)
    assert not report.ok and "uid-beta" in report.errors[0]
    assert _counter(telemetry, "brain_collector_errors_total", kind="database") == 1
    first = cluster.t0 - FIRST_BEFORE_T0
    _assert_exact(cluster, _samples(session_factory, "uid-alpha"), "alpha", first, cluster.t0)
    assert _samples(session_factory, "uid-beta") == {}
    assert _oom_events(session_factory) == []  # both kills were beta's
    with session_factory() as session:
        names = session.scalars(select(NodeRow.name).order_by(NodeRow.name)).all()
    assert all(name.startswith("alpha-") for name in names)

    # The next cycle starts again from beta's (absent) stored points and completes it.
    monkeypatch.setattr(collector_store, "ingest", real_ingest)
    retry = _collector(collector_settings, session_factory).run_cycle(now=cluster.t0_dt)
    assert retry.ok and retry.stored == 2 * POINTS_PER_POD and retry.events == 2


# --- Prometheus failing -----------------------------------------------------------------


def test_closed_port_fails_fast_with_bounded_retries(collector_settings, session_factory, cluster):
    _register_both(session_factory, cluster)
    settings = collector_settings.model_copy(
        update={"prometheus_url": f"http://127.0.0.1:{free_port()}", "prometheus_retries": 2}
    )
    telemetry = Telemetry()
    started = time.monotonic()
    report = _collector(settings, session_factory, telemetry).run_cycle(now=cluster.t0_dt)
    assert time.monotonic() - started < 3
    assert not report.ok and "connection" in report.errors[0]
    assert report.queries == 1  # the first query failed 3 times; the cycle ended there
    assert _counter(telemetry, "brain_collector_errors_total", kind="connection") == 3
    assert report.stored == 0


class _FakePrometheus:
    """An HTTP server answering every request the same (bad) way; counts requests."""

    def __init__(self, mode: str, delay_s: float = 0.0) -> None:
        fake = self
        self.mode = mode
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake.requests += 1
                if delay_s:
                    time.sleep(delay_s)
                status, body, kind = fake.answer()
                payload = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def answer(self) -> tuple[int, str, str]:
        error = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"})
        return {
            "html": (200, "<html>please log in</html>", "text/html"),
            "shape": (200, json.dumps({"status": "success", "data": {"result": "x"}}), "json"),
            "values": (
                200,
                json.dumps(
                    {
                        "status": "success",
                        "data": {"result": [{"metric": {}, "values": [["a", "b", "c"]]}]},
                    }
                ),
                "application/json",
            ),
            "http500": (500, "internal error", "text/plain"),
            "http400": (400, error, "application/json"),
            "http401": (401, "unauthorized", "text/plain"),
            "slow": (200, json.dumps({"status": "success", "data": {"result": []}}), "json"),
        }[self.mode]

    def __enter__(self) -> _FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.mark.parametrize(
    ("mode", "kind", "attempts"),
    [
        ("html", "garbage", 2),
        ("shape", "garbage", 2),
        ("values", "garbage", 2),
        ("http500", "http", 2),
        ("http400", "query", 1),
        ("http401", "auth", 1),
        ("slow", "timeout", 2),
    ],
)
def test_bad_answers_are_errors_not_data(
    collector_settings, session_factory, cluster, db, mode, kind, attempts
):
    _register_both(session_factory, cluster)
    # A timeout far from what a loaded machine takes to answer, and a slow answer far
    # beyond the timeout, so that each kind of failure is the one the mode means.
    slow = mode == "slow"
    timeout_s = 1.0 if slow else 5.0
    with _FakePrometheus(mode, delay_s=3.0 if slow else 0.0) as fake:
        settings = collector_settings.model_copy(
            update={
                "prometheus_url": fake.url,
                "prometheus_retries": 1,
                "prometheus_timeout_s": timeout_s,
            }
        )
        telemetry = Telemetry()
        started = time.monotonic()
        report = _collector(settings, session_factory, telemetry).run_cycle(now=cluster.t0_dt)
        elapsed = time.monotonic() - started
    assert not report.ok
    assert kind in report.errors[0]
    assert fake.requests == attempts
    assert _counter(telemetry, "brain_collector_errors_total", kind=kind) == attempts
    assert elapsed < attempts * timeout_s + 2  # slow: not waiting 2 x 3 s for the answers
    assert _count(db, NodeSampleRow) == 0 and _count(db, EventRow) == 0


def test_server_stopped_mid_cycle_leaves_nothing_half_written(
    prometheus_factory, collector_settings, session_factory, cluster, db
):
    server = prometheus_factory()
    _register_both(session_factory, cluster)
    settings = collector_settings.model_copy(update={"prometheus_url": server.url})
    telemetry = Telemetry()
    service = CollectorService(settings, session_factory, telemetry)
    real_query_range = service.client.query_range
    calls: list[str] = []

    def stopping_after_two(query, start, end, step_s):
        calls.append(query)
        if len(calls) == 3:
            server.stop()  # Prometheus goes away between the 2nd and the 3rd query
        return real_query_range(query, start, end, step_s)

    service.client.query_range = stopping_after_two
    try:
        report = service.run_once(now=cluster.t0_dt)
        assert not report.ok and report.stored == 0
        assert len(calls) == 3
        assert _counter(telemetry, "brain_collector_errors_total", kind="connection") == 3
        assert (
            _count(db, NodeSampleRow) == 0
            and _count(db, NodeRow) == 0
            and _count(db, EventRow) == 0
        )
        health = service.health()
        assert health["status"] == "degraded"
        assert "connection" in health["detail"]["error"]

        server.start()  # back on the same port: the next cycle reads everything
        report = service.run_once(now=cluster.t0_dt)
        assert report.ok, report.errors
        assert report.stored == ALL_POINTS and report.events == 2
        assert service.health()["status"] == "ok"
    finally:
        service.close()


# --- in the app (its part) and on the command line ---------------------------------------


def test_app_serves_scraped_load_through_the_samples_api(
    collector_settings, pg_url, session_factory, cluster
):
    started = datetime.now(UTC) - timedelta(minutes=10)
    register_job(session_factory, "alpha", "team-a", started)
    specs = {spec.pod: spec for spec in JOB_PODS["alpha"]}
    app = create_app(app_settings(pg_url, collector_settings), parts=[prometheus_collector])
    with TestClient(app) as client:
        deadline = time.monotonic() + 20
        nodes: list[dict] = []
        while time.monotonic() < deadline:
            body = client.get("/api/v1/jobs/uid-alpha/samples").json()
            nodes = body["nodes"]
            if {p["name"] for p in nodes} == set(specs):
                break
            time.sleep(0.2)
        assert {p["name"] for p in nodes} == set(specs), "no scraped load within 20 s"
        for point in nodes:
            t = int(datetime.fromisoformat(point["ts"].replace("Z", "+00:00")).timestamp())
            expected = cluster.expected(specs[point["name"]], t)
            assert point["cpu"] == pytest.approx(expected["cpu"], rel=1e-12)
            assert point["memory_mib"] == expected["memory_mib"]
            assert point["gpu_util"] == (
                None if expected["gpu_util"] is None else pytest.approx(expected["gpu_util"])
            )
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"]["collector"]["status"] == "ok"
        metrics = client.get("/metrics").text
        assert 'brain_ingested_points_total{outcome="stored",source="prometheus"}' in metrics
        thread = server_state(app).collector._thread
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 6
    assert not thread.is_alive()


def test_readiness_stays_200_with_prometheus_down(collector_settings, pg_url, cluster):
    settings = collector_settings.model_copy(
        update={
            "prometheus_url": f"http://127.0.0.1:{free_port()}",
            "collect_interval_s": 0.2,
            "prometheus_retries": 1,
        }
    )
    with TestClient(
        create_app(app_settings(pg_url, settings), parts=[prometheus_collector])
    ) as client:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            response = client.get("/readyz")
            if response.json()["checks"]["collector"]["status"] == "degraded":
                break
            time.sleep(0.1)
        assert response.status_code == 200
        body = response.json()
        assert body["status"] == "ready"
        assert body["checks"]["database"]["status"] == "ok"
        assert body["checks"]["collector"]["status"] == "degraded"
        assert "connection" in body["checks"]["collector"]["detail"]["error"]
        assert client.get("/api/v1/jobs").status_code == 200
        assert 'brain_collector_errors_total{kind="connection"}' in client.get("/metrics").text


def test_stop_interrupts_retry_backoff_promptly(collector_settings, session_factory):
    settings = collector_settings.model_copy(
        update={
            "prometheus_url": f"http://127.0.0.1:{free_port()}",
            "prometheus_retries": 5,
            "prometheus_backoff_s": 30,
        }
    )
    telemetry = Telemetry()
    service = CollectorService(settings, session_factory, telemetry)
    service.start()
    deadline = time.monotonic() + 5
    while _counter(telemetry, "brain_collector_errors_total", kind="connection") < 1:
        assert time.monotonic() < deadline, "the collector never tried"
        time.sleep(0.02)
    stopping = time.monotonic()
    service.stop()  # the thread sits in a 30 s backoff now
    assert time.monotonic() - stopping < 1
    assert not service._thread.is_alive()


def test_the_collector_part_does_nothing_without_prometheus_url(settings):
    app = create_app(settings, parts=[prometheus_collector])
    with TestClient(app) as client:
        assert "collector" not in client.get("/readyz").json()["checks"]
        assert server_state(app).collector is None


def test_cli_once_backfills_one_job(
    monkeypatch, collector_settings, pg_url, session_factory, cluster, capsys
):
    started = datetime.now(UTC) - timedelta(minutes=30)
    register_job(session_factory, "alpha", "team-a", started)
    register_job(session_factory, "beta", "team-b", started)
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)
    monkeypatch.setenv("BRAIN_PROMETHEUS_URL", collector_settings.prometheus_url)
    monkeypatch.setenv("BRAIN_COLLECT_DELAY_S", "0")

    code = brain_main(["collect", "--once", "--job", "uid-alpha", "--since", "5m"])

    assert code == 0
    assert "point(s) stored" in capsys.readouterr().out
    samples = _samples(session_factory, "uid-alpha")
    times = sorted({t for _, t in samples})
    assert 20 <= len(times) <= 21 and times == list(range(times[0], times[-1] + 1, STEP))
    _assert_exact(cluster, samples, "alpha", times[0], times[-1])
    assert _samples(session_factory, "uid-beta") == {}


def test_cli_help_and_configuration_errors(monkeypatch, capsys):
    with pytest.raises(SystemExit) as exit_info:
        brain_main(["collect", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for option in ("--once", "--job UID", "--since DURATION", "--interval"):
        assert option in help_text
    monkeypatch.delenv("BRAIN_PROMETHEUS_URL", raising=False)
    assert brain_main(["collect", "--once"]) == 2
    assert "BRAIN_PROMETHEUS_URL" in capsys.readouterr().err


# --- one collector per database -------------------------------------------------------


def test_one_replica_collects_and_another_takes_over(db, collector_settings, session_factory):
    first, second = AdvisoryLock(db), AdvisoryLock(db)
    try:
        assert first.acquire()
        assert first.acquire()  # still the holder
        assert not second.acquire()
        # The holder dies (its session ends): the other replica takes over.
        pid = first._conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        deadline = time.monotonic() + 5
        while not second.acquire() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert second.holding
        assert not first.acquire()  # notices the lost session, cannot take it back
        second.release()
        assert first.acquire()
    finally:
        first.release()
        second.release()

    leader = CollectorService(collector_settings, session_factory, engine=db)
    standby = CollectorService(collector_settings, session_factory, engine=db)
    try:
        assert leader.tick() is not None
        assert standby.tick() is None
        assert standby.health()["status"] == "ok"
        assert standby.health()["detail"]["role"] == "standby"
        assert leader.health()["detail"]["role"] == "leader"
    finally:
        leader.close()
        standby.close()
