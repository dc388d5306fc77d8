"""memory_release: a node whose memory peak stayed far below its size for long is migrated
to less, never soon after a kill or a growth, and at most by max_change_factor."""

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from brain.config import Settings
from brain.domain import RoleSpec, Stage
from brain.optimizing import MemoryPeak, NodeChange, Reason, load_registry
from brain.optimizing.pipeline import run_stage
from optimizers.memory_release import MemoryReleaseOptimizer, MemoryReleaseSettings
from tests.builders.views import NOW, context, node, oom, plan

SETTINGS = MemoryReleaseSettings(hold_s=21600, margin=1.5, below_share=0.6, after_oom_s=43200)
WORKER = node("worker-0", "worker", cpu=4, memory_mib=10000)
HOURS = 3600


def peak(mib: float, hours: float = 6.0, name: str = "worker-0") -> MemoryPeak:
    return MemoryPeak(name, mib, NOW - timedelta(hours=hours))


def release(peaks, settings=SETTINGS, nodes=(WORKER,), **kwargs):
    ctx = context(Stage.running, nodes=list(nodes), memory_peaks=list(peaks), **kwargs)
    return MemoryReleaseOptimizer().propose(ctx, settings)


def test_a_node_that_peaked_far_below_its_size_for_long_is_migrated_to_peak_times_margin():
    # 2000 MiB peak over 6 h: 2000 x 1.5 = 3000 <= 60 % of 10000
    proposal = release([peak(2000)])
    assert proposal.migrate == [NodeChange(role="worker", name="worker-0", cpu=4, memory_mib=3000)]
    assert proposal.reasons[0].evidence["peak_covers_s"] == 6 * HOURS


def test_not_before_the_peak_covers_the_hold_nor_for_a_small_saving():
    assert release([peak(2000, hours=5.9)]).is_empty  # covers less than 6 h
    # 4001 x 1.5 = 6001.5 -> 6002 MiB > 6000: the saving does not pay a restart
    assert release([peak(4001)]).is_empty
    assert release([peak(4000)]).migrate[0].memory_mib == 6000
    assert release([]).is_empty  # no peak handed over


def test_no_lowering_soon_after_an_oom_kill_of_the_node():
    proposal = release([peak(2000)], events=[oom(1, "worker-0", minutes_ago=11 * 60)])
    assert proposal.migrate == []
    assert "OOM-killed or grown" in proposal.reasons[0].message
    # another node's kill does not hold this one; a kill 12 h ago no longer does
    assert release([peak(2000)], events=[oom(1, "worker-1", minutes_ago=60)]).migrate
    assert release([peak(2000)], events=[oom(1, "worker-0", minutes_ago=12 * 60)]).migrate


def test_no_lowering_soon_after_a_growth_nor_within_the_hold_of_any_migration():
    moved = (NodeChange(role="worker", name="worker-0", memory_mib=10000),)
    grown = plan(
        seconds_ago=7 * HOURS,
        migrate=moved,
        reasons=(Reason("oom_risk", "at risk", {"node": "worker-0"}),),
    )
    assert release([peak(2000)], plans=[grown]).migrate == []
    fix = plan(seconds_ago=7 * HOURS, migrate=moved, source_event_id=4)
    assert release([peak(2000)], plans=[fix]).migrate == []
    # its own lowering 7 h ago holds nothing (older than 6 h); 5 h ago it does
    lowered = plan(
        seconds_ago=7 * HOURS,
        migrate=moved,
        reasons=(Reason("memory_release", "low", {"node": "worker-0"}),),
    )
    assert release([peak(2000)], plans=[lowered]).migrate
    recent = plan(seconds_ago=5 * HOURS, migrate=moved)
    assert "migrated 18000 s ago" in release([peak(2000)], plans=[recent]).reasons[0].message


def test_no_lowering_soon_after_an_oom_fix_of_the_whole_role():
    # worker-1 was killed and the fix gave every worker 10000 MiB 7 h ago: worker-0, never
    # killed nor named, was grown against that kill all the same
    fix = plan(
        seconds_ago=7 * HOURS, roles={"worker": RoleSpec(memory_mib=10000)}, source_event_id=4
    )
    assert release([peak(2000)], plans=[fix]).migrate == []
    # an elective role resize (no OOM event) holds nothing
    resize = plan(seconds_ago=7 * HOURS, roles={"worker": RoleSpec(memory_mib=10000)})
    assert release([peak(2000)], plans=[resize]).migrate


def test_the_pipeline_bounds_the_step_by_the_max_change_factor():
    # 80000 MiB peaking at 1000: 1500 wanted, at most /8 in one plan: 10000.
    big = node("worker-0", "worker", cpu=4, memory_mib=80000)
    ctx = context(Stage.running, nodes=[big], memory_peaks=[peak(1000)])
    chosen = {"memory_release": SETTINGS.model_dump()}
    settings = Settings(optimizer_settings=chosen)
    proposal = run_stage(
        load_registry(), Stage.running, ctx, settings, requested=["oom_risk", "memory_release"]
    ).proposal
    assert [c.memory_mib for c in proposal.migrate] == [10000]


@given(
    memory=st.floats(100, 500_000),
    used=st.floats(0, 500_000),
    margin=st.floats(1.05, 10),
    below=st.floats(0.05, 0.95),
)
def test_a_lowering_keeps_the_peak_plus_margin_and_saves_at_least_the_share(
    memory, used, margin, below
):
    settings = SETTINGS.model_copy(update={"margin": margin, "below_share": below})
    size = node("worker-0", "worker", cpu=4, memory_mib=memory)
    proposal = release([peak(used)], settings, nodes=(size,))
    for change in proposal.migrate:
        assert used * margin <= change.memory_mib <= below * memory


def test_a_nodes_peak_is_looked_up_by_name_the_first_one_listed_winning():
    first, second, other = peak(2000), peak(3000), peak(100, name="worker-1")
    ctx = context(Stage.running, nodes=[WORKER], memory_peaks=[first, second, other])
    assert ctx.memory_peak_of("worker-0") is first
    assert ctx.memory_peak_of("worker-1") is other
    assert ctx.memory_peak_of("worker-2") is None
