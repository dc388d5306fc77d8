"""The running stage's context carries each node's memory peak over the peak window."""

from datetime import timedelta

from brain.config import Settings
from brain.domain import RoleSpec, Stage
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
