"""The running stage's context carries each node's memory peak over the peak window."""

from datetime import timedelta

from sqlalchemy import event

from brain.config import Settings
from brain.domain import RoleSpec, Stage
from brain.optimizing import load_registry
from brain.services import plans
from brain.services.optimizer_context import build_context
from tests.builders import add_node, add_points, at, make_job, recent_hour

SETTINGS = Settings(memory_peak_window_s=3600)


def test_each_node_has_its_peak_over_the_window_from_its_first_sample_in_it(session):
    t0 = recent_hour(1)
    job = make_job(
        session, "peaks", start=t0, status="running", roles={"worker": RoleSpec(count=2)}
    )
    add_node(session, job, "worker-0", "worker", created_at=t0, cpu=4, memory_mib=8192)
    add_node(session, job, "worker-1", "worker", created_at=t0, cpu=4, memory_mib=8192)
    # worker-0 every 30 min for 2 h: 5000 before the window, 900, 1000, 700 in it
    # (the window is the hour up to the job's latest sample, at 120 min).
    add_points(
        session,
        job,
        "worker-0",
        "worker",
        [
            {"ts": at(t0, m), "cpu": 1.0, "memory_mib": mib}
            for m, mib in ((30, 5000), (60, 900), (90, 1000), (120, 700))
        ],
    )
    # worker-1 started 20 minutes before the end
    add_points(
        session, job, "worker-1", "worker", [{"ts": at(t0, 100), "cpu": 1.0, "memory_mib": 300}]
    )
    session.flush()

    context = build_context(session, job, Stage.running, SETTINGS)

    assert [(p.node, p.peak_mib, p.since) for p in context.memory_peaks] == [
        ("worker-0", 1000.0, at(t0, 60)),
        ("worker-1", 300.0, at(t0, 100)),
    ]
    assert context.now - context.memory_peaks[0].since == timedelta(hours=1)
    # Other stages do not need them.
    assert build_context(session, job, Stage.oom, SETTINGS, node="worker-0").memory_peaks == ()


def peak_queries():
    """A list and a ``before_cursor_execute`` listener that adds each memory-peak
    statement (the grouped max of node_samples' memory) to it."""
    found: list[str] = []

    def note(conn, cursor, statement, parameters, context, executemany):
        text = " ".join(statement.lower().split())
        if "group by" in text and "node_samples" in text and "max(node_samples.memory_mib)" in text:
            found.append(statement)

    return found, note


def low_peaked_job(session):
    """A running job whose worker peaked at 500 MiB of 8192 for 13 h (memory_release
    lowers it with its defaults)."""
    t0 = recent_hour(1)
    job = make_job(session, "low-peak", start=t0, status="running", roles={"worker": RoleSpec()})
    add_node(session, job, "worker-0", "worker", created_at=t0, cpu=4, memory_mib=8192)
    add_points(
        session,
        job,
        "worker-0",
        "worker",
        [{"ts": at(t0, m), "cpu": 1.0, "memory_mib": 500} for m in range(0, 14 * 60, 60)],
    )
    session.flush()
    return job


def test_a_running_plan_queries_the_peaks_only_when_an_optimizer_that_runs_reads_them(session):
    job = low_peaked_job(session)
    registry = load_registry()
    found, note = peak_queries()
    engine = session.get_bind()
    event.listen(engine, "before_cursor_execute", note)
    try:
        default = plans.optimize(session, job, registry, Settings(), Stage.running)
        assert found == []  # the default pipeline does not read them
        assert "memory_release" not in default.plan.body.optimizers
        asked = plans.optimize(
            session, job, registry, Settings(), Stage.running, optimizer_names=["memory_release"]
        )
        assert len(found) == 1
        configured = Settings(stage_optimizers={"running": ["hot_ps", "memory_release"]})
        plans.optimize(session, job, registry, configured, Stage.running)
        assert len(found) == 2
    finally:
        event.remove(engine, "before_cursor_execute", note)
    # memory_release saw the peak: 500 MiB x 4 -> 2000 MiB
    assert [(c.name, c.memory_mib) for c in asked.plan.body.migrate] == [("worker-0", 2000)]
    assert asked.context.memory_peak_of("worker-0").peak_mib == 500
