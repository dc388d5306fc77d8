"""Every stage's default pipeline on generated job shapes: the invariants a platform
relies on hold by construction, not only on the shapes a test or scenario chose.

Jobs are drawn with PS or all-reduce strategies, a chief or not, counts within
min/max bounds, CPU, memory and GPU limits or none, GPUs per node, histories of 0-12
runs with noisy usage, growing PS memory, node usage samples and speed samples.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from brain.config import Settings
from brain.domain import (
    ROLE_CHIEF,
    ROLE_PS,
    ROLE_WORKER,
    Limits,
    Resources,
    RoleBounds,
    RoleSpec,
    Stage,
    Strategy,
)
from brain.optimizing import (
    EventView,
    HistoricalJob,
    NodeSample,
    NodeUsage,
    NodeView,
    OptimizerContext,
    SpeedSample,
    load_registry,
)
from brain.optimizing.changes import changes_of, undeclared
from brain.optimizing.pipeline import run_stage
from brain.optimizing.roles import (
    EPSILON,
    SIZE_FIELDS,
    current_role,
    effective_roles,
    node_level_totals,
    role_resized,
)
from optimizers.learned_margin import MEMORY_BELOW_PEAK
from tests.builders.views import NOW, job

REGISTRY = load_registry()
SETTINGS = Settings()
NODE_MAX = Resources(cpu=32, memory_mib=131072, gpu=8)
CARD_MIB = 16384.0


@st.composite
def job_shapes(draw):
    strategy = draw(st.sampled_from([Strategy.ps, Strategy.allreduce]))
    gpu = draw(st.sampled_from([0, 0, 1, 2, 4, 8]))
    roles: dict[str, RoleSpec] = {}
    bounds: dict[str, RoleBounds] = {}
    if strategy == Strategy.ps:
        roles[ROLE_PS] = RoleSpec(
            count=draw(st.integers(1, 4)),
            cpu=draw(st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0])),
            memory_mib=draw(st.sampled_from([1024.0, 4096.0, 8192.0, 16384.0])),
        )
        if draw(st.booleans()):
            roles[ROLE_CHIEF] = RoleSpec(count=1, cpu=4.0, memory_mib=8192.0, gpu=gpu)
    workers = draw(st.integers(0 if ROLE_CHIEF in roles else 1, 8))
    if workers or ROLE_CHIEF not in roles:
        roles[ROLE_WORKER] = RoleSpec(
            count=workers,
            cpu=draw(st.sampled_from([1.0, 2.0, 4.0, 8.0])),
            memory_mib=draw(st.sampled_from([2048.0, 8192.0, 32768.0])),
            gpu=gpu,
        )
        if draw(st.booleans()):
            low = draw(st.integers(0, workers))
            bounds[ROLE_WORKER] = RoleBounds(low, draw(st.integers(max(workers, 1), 16)))
    gpu_nodes = sum(s.count or 0 for s in roles.values() if s.gpu)
    limits = Limits(
        cpu=draw(st.one_of(st.none(), st.floats(8, 256))),
        memory_mib=draw(st.one_of(st.none(), st.floats(64 * 1024, 1024 * 1024))),
        # at least one GPU per GPU node: below that no plan can fit
        gpu=draw(st.one_of(st.none(), st.integers(max(gpu_nodes, 1), 64).map(float))),
    )
    total_steps = draw(st.one_of(st.none(), st.sampled_from([100_000, 1_000_000])))
    the_job = job(
        strategy=strategy,
        roles=roles,
        limits=limits,
        bounds=bounds,
        gpu_type="A100" if gpu else None,
        total_steps=total_steps,
    )
    history = draw(st.lists(past_runs(roles, gpu), min_size=0, max_size=12))
    return the_job, history


@st.composite
def past_runs(draw, roles, gpu):
    usage = []
    for role, spec in roles.items():
        cpu_max = draw(st.floats(0.05, 1.5)) * spec.cpu
        memory_max = draw(st.floats(0.1, 1.2)) * spec.memory_mib
        busy = draw(st.floats(0.0, 1.0)) if spec.gpu else None
        filled = draw(st.floats(0.05, 1.0)) if spec.gpu else None
        usage.append(
            NodeUsage(
                name=f"{role}-0",
                role=role,
                requested=Resources(spec.cpu, spec.memory_mib, spec.gpu or 0.0),
                cpu_mean=cpu_max * 0.6,
                cpu_max=cpu_max,
                cpu_p95=cpu_max * 0.9,
                memory_mean_mib=memory_max * 0.8,
                memory_max_mib=memory_max,
                gpu_util_mean=busy,
                gpu_memory_max_mib=None if filled is None else filled * spec.gpu * CARD_MIB,
                gpu_memory_total_mib=None if filled is None else spec.gpu * CARD_MIB,
            )
        )
    seconds = draw(st.sampled_from([600.0, 3600.0, 7200.0]))
    past = job(uid=f"run-{draw(st.integers(0, 10**6))}", duration_s=seconds)
    past = replace(past, gpu_type="A100" if gpu else None)
    return HistoricalJob(job=past, nodes=tuple(usage), run_seconds=seconds)


@st.composite
def live_state(draw, the_job):
    """Nodes as registered (some at sizes of their own), ten samples each (a minute apart,
    PS memory possibly growing), and speed samples at the trainers' count."""
    nodes, samples = [], []
    for role, spec in the_job.roles.items():
        for index in range(spec.count or 0):
            name = f"{role}-{index}"
            # Some nodes run at sizes of their own: moved by an earlier plan (a hot PS, an
            # OOM fix), or registered so by the master.
            cpu = min(
                spec.cpu * draw(st.sampled_from([1.0, 1.0, 1.0, 0.5, 1.5, 2.0])), NODE_MAX.cpu
            )
            memory_mib = spec.memory_mib * draw(st.sampled_from([1.0, 1.0, 1.5]))
            nodes.append(NodeView(name, role, index, cpu, memory_mib, spec.gpu or 0.0))
            load = draw(st.floats(0.05, 1.0))
            memory = draw(st.floats(0.2, 0.95))
            growth = draw(st.floats(0.0, 0.05)) if role == ROLE_PS else 0.0
            for minute in range(10):
                samples.append(
                    NodeSample(
                        node=name,
                        ts=NOW - timedelta(minutes=9 - minute),
                        cpu=load * cpu,
                        memory_mib=min(memory * (1 + growth * minute), 1.2) * memory_mib,
                    )
                )
    trainers = sum(1 for n in nodes if n.role in (ROLE_WORKER, ROLE_CHIEF))
    pace = draw(st.floats(5, 100))
    speed = [
        SpeedSample(NOW - timedelta(minutes=9 - i), i * int(pace * 60), pace, trainers)
        for i in range(10)
    ]
    return nodes, samples, speed


def plan_for(stage, the_job, history=(), nodes=(), samples=(), speed=(), events=()):
    context = context_for(stage, the_job, history, nodes, samples, speed, events)
    return run_stage(REGISTRY, stage, context, SETTINGS).proposal


def context_for(stage, the_job, history=(), nodes=(), samples=(), speed=(), events=()):
    return OptimizerContext(
        stage=stage,
        now=NOW,
        job=the_job,
        nodes=tuple(nodes),
        samples=tuple(samples),
        speed=tuple(speed),
        events=tuple(events),
        history=tuple(history),
        node_max=NODE_MAX,
        node=events[0].node if events else None,
    )


def assert_trusted(proposal, the_job, nodes):
    """Within the limits, min/max and node maxima in every resource; no role at 0 that
    runs or was asked for; no CPU limit below its request."""
    running = {n.role for n in nodes} | {r for r, s in the_job.roles.items() if s.count}
    totals = node_level_totals(proposal.roles, the_job, nodes)
    sizes = {n.name: n for n in nodes}
    for change in proposal.launch:
        for f in SIZE_FIELDS:
            totals[f] += getattr(change, f) or 0.0
    # The whole plan applies at once: a migration moves its node from the size it has
    # once the roles apply (the role's, where the plan resizes the role) to its own, and
    # what a shrinking one frees is room for the plan's growths (hot_ps gives a hot PS
    # the cores the other PS give up).
    for change in proposal.migrate:
        node = sizes.get(change.name or "")
        if node is None:
            continue
        planned = proposal.roles.get(node.role, RoleSpec())
        now = current_role(node.role, the_job, nodes)
        before = now.overlay(planned) if role_resized(planned, now) else node
        for f in SIZE_FIELDS:
            if getattr(change, f) is not None:
                totals[f] += getattr(change, f) - (getattr(before, f) or 0.0)
    for f in SIZE_FIELDS:
        limit = getattr(the_job.limits, f)
        assert limit is None or totals[f] <= limit + 1e-6, (f, totals, proposal.reasons)
    for role, spec in effective_roles(proposal.roles, the_job, nodes).items():
        for f in SIZE_FIELDS:
            assert (getattr(spec, f) or 0.0) <= getattr(NODE_MAX, f) + EPSILON, (role, f, spec)
        planned = proposal.roles.get(role)
        if planned is not None:  # a planned role is a pod spec Kubernetes must accept
            assert spec.cpu_limit is None or spec.cpu_limit >= spec.cpu - EPSILON, (role, spec)
        if planned is not None and planned.count is not None:
            bounds = the_job.bounds_of(role)
            assert bounds.clip(planned.count) == planned.count, (role, planned, bounds)
            assert planned.count > 0 or role not in running, (role, proposal.reasons)
            assert planned.count > 0 or the_job.roles.get(role, RoleSpec()).count == 0, (
                role,
                proposal.reasons,
            )
    for change in [*proposal.launch, *proposal.migrate]:
        for f in SIZE_FIELDS:
            assert (getattr(change, f) or 0.0) <= getattr(NODE_MAX, f) + EPSILON


PROPERTY = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(job_shapes())
def test_create_plans_are_trusted_deterministic_and_stable(shape):
    the_job, history = shape
    first = plan_for(Stage.create, the_job, history)
    assert_trusted(first, the_job, ())
    if history:  # the newest run's peak per node; the PS tier's over its nodes
        newest = history[0]
        peaks = {
            role: max(n.memory_max_mib for n in newest.role_nodes(role))
            * ((the_job.roles[role].count or 0) if role == ROLE_PS else 1)
            for role in the_job.roles
            if newest.role_nodes(role)
        }
        assert_memory_kept(first, the_job, (), peaks)
    # the same input gives the same plan
    assert plan_for(Stage.create, the_job, history) == first
    for role, planned in first.roles.items():
        asked = the_job.roles.get(role, RoleSpec())
        if planned.gpu is None or not asked.gpu:
            continue
        # GPUs per node: whole, at most the request, at least what the newest runs kept
        # busy at the target utilization (but never above the request or the limit)
        assert planned.gpu == int(planned.gpu) and planned.gpu <= asked.gpu
        busy = [
            n.requested.gpu * n.gpu_util_mean
            for h in history[:2]
            for n in h.role_nodes(role)
            if n.gpu_util_mean is not None
        ]
        # the job's GPU limit, shared by every GPU role, may cut them further: said so
        cut = any(r.optimizer == "guard" and "of gpu" in r.message for r in first.reasons)
        cut = cut or any(r.optimizer == "guard" and "cut gpu" in r.message for r in first.reasons)
        if busy and len(busy) == len(history[:2]) and not cut:
            # the job's GPU limit shared over the role's nodes caps it too
            cap = asked.gpu
            if the_job.limits.gpu is not None:
                cap = min(cap, the_job.limits.gpu // (asked.count or 1))
            floor = min(sum(busy) / len(busy) / 0.9, cap)
            assert planned.gpu >= floor - 1e-6, (planned, busy, first.reasons)
    # asking again with the plan applied gives no change, or one with new evidence: the
    # same history (no new run) must not move what was just decided
    applied = replace(
        the_job, roles=effective_roles(first.roles, the_job, ()), status=the_job.status
    )
    again = plan_for(Stage.create, applied, history)
    note(f"job {the_job}\nhistory {history}\nfirst {first}\nagain {again}")
    assert effective_roles(again.roles, applied, ()) == effective_roles({}, applied, ()) or (
        again.roles == first.roles
    ), (first.roles, again.roles)


@PROPERTY
@given(st.data())
def test_estimate_running_and_oom_plans_are_trusted(data):
    the_job, _ = data.draw(job_shapes())
    nodes, samples, speed = data.draw(live_state(the_job))
    peaks = {}  # this run's peak per node; the PS tier's in total
    for n in nodes:
        peak = max(s.memory_mib for s in samples if s.node == n.name)
        peaks[n.role] = (
            peaks.get(n.role, 0.0) + peak
            if n.role == ROLE_PS
            else max(peaks.get(n.role, 0.0), peak)
        )
    for stage in (Stage.estimate, Stage.running):
        proposal = plan_for(stage, the_job, nodes=nodes, samples=samples, speed=speed)
        assert_trusted(proposal, the_job, nodes)
        assert_memory_kept(proposal, the_job, nodes, peaks)
        assert plan_for(stage, the_job, nodes=nodes, samples=samples, speed=speed) == proposal
    if nodes:
        victim = data.draw(st.sampled_from(nodes))
        oom = (EventView(id=1, ts=NOW, kind="oom", node=victim.name),)
        proposal = plan_for(Stage.oom, the_job, nodes=nodes, samples=samples, events=oom)
        assert_trusted(proposal, the_job, nodes)


def states_memory_risk(proposal, role):
    """A reason that says the plan gives ``role`` less memory than it used: an optimizer's
    (``MEMORY_BELOW_PEAK`` in the role's evidence) or the guard's cut to fit a limit."""
    return any(
        (r.evidence.get("role") == role and MEMORY_BELOW_PEAK in r.evidence)
        or (
            r.optimizer == "guard"
            and "cut" in r.message
            and "memory_mib" in r.message
            and f"{role} " in r.message
        )
        for r in proposal.reasons
    )


def assert_memory_kept(proposal, the_job, nodes, peaks):
    """Every role's planned memory at least ``peaks[role]`` (per node; the PS tier in
    total, as it shards), unless the plan states the risk."""
    for role, spec in effective_roles(proposal.roles, the_job, nodes).items():
        peak = peaks.get(role)
        if peak is None or (proposal.roles.get(role) or RoleSpec()).memory_mib is None:
            continue
        planned = (spec.memory_mib or 0.0) * ((spec.count or 0) if role == ROLE_PS else 1)
        assert planned >= peak - 1e-6 or states_memory_risk(proposal, role), (
            role,
            planned,
            peak,
            proposal.reasons,
        )


@PROPERTY
@given(st.data())
def test_every_optimizer_changes_only_what_it_declares(data):
    # DLRover's PS and worker stages run the optimizers by their declared changes, and
    # the pipeline ignores a proposal beyond them: each of ours must keep within its own
    the_job, history = data.draw(job_shapes())
    nodes, samples, speed = data.draw(live_state(the_job))
    for stage in Stage:
        events = ()
        if stage == Stage.oom and nodes:
            victim = data.draw(st.sampled_from(nodes))
            events = (EventView(id=1, ts=NOW, kind="oom", node=victim.name),)
        live = stage != Stage.create
        context = context_for(
            stage,
            the_job,
            history,
            nodes if live else (),
            samples if live else (),
            speed if live else (),
            events,
        )
        for name in REGISTRY.names():
            optimizer = REGISTRY.get(name)
            if stage in optimizer.stages:
                proposal = optimizer.propose(context, optimizer.Settings())
                assert undeclared(changes_of(optimizer), proposal) == [], (name, proposal)
