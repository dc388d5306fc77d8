"""Give elastic workers back while the cluster is short (Volcano's elastic training).

The cluster is short when pending demand exceeds free capacity by more than the
configured margins (``BRAIN_CLUSTER_SHORT_*``; ``context.cluster.shortfall()``). The
running jobs with elastic workers (above their floor, see ``ElasticJob``) that are not
cooling down are ranked by the share of their speed their last worker brings, lowest
first (ties by uid), and walked in that order: each gives back enough workers to cover
what is still short in the resources its workers hold, at most ``max_return`` per plan
and never below its floor, until the shortfall is covered. This job gives back what the
walk assigns to it; every job computes the same walk, so the jobs that lose least give
back first. While the cluster is short the guard also stops every job from growing.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import ROLE_WORKER, RoleSpec, Stage
from brain.optimizing import Changes, ContextInput, OptimizerContext, PlanView, Proposal
from brain.optimizing.cluster import ElasticJob
from optimizers._common import cited_uid, cooling_down, no_change, reason

NAME = "cluster_shortage"
# Float noise such as 1.0000000001 workers must not cost one more worker.
_EPSILON = 1e-9


class ClusterShortageSettings(BaseModel):
    max_return: int = Field(
        2, ge=1, le=64, description="Most workers one job gives back in one plan."
    )
    cooldown_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="A job whose worker count an applied plan changed less than this many "
        "seconds ago gives nothing back (nor is counted on to).",
    )


class ClusterShortageOptimizer:
    """Returns elastic workers from the jobs that gain least from them while the
    cluster is short."""

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ROLE_WORKER}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    # After worker_tuning: while the cluster is short, its smaller worker count stands.
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 50}
    Settings: ClassVar[type[ClusterShortageSettings]] = ClusterShortageSettings

    def propose(self, context: OptimizerContext, settings: ClusterShortageSettings) -> Proposal:
        cluster = context.cluster
        if cluster is None:
            return no_change(NAME, "no fresh cluster state: nothing to give back")
        short = cluster.shortfall()
        if not short:
            return no_change(NAME, "the cluster is not short: nothing to give back")
        # A uid is unique within its namespace only: pooled peers may share this one.
        job = context.job
        me = next(
            (p for p in cluster.peers if (p.uid, p.namespace) == (job.uid, job.namespace)), None
        )
        if me is None or me.elastic == 0:
            return no_change(
                NAME,
                "the cluster is short, but this job has no elastic workers"
                + ("" if me is None else f" ({me.workers} workers, floor {me.floor})"),
                {"shortfall": short},
            )
        cooling = cooling_down(
            NAME, context, _sets_workers, settings.cooldown_s, "the worker count"
        )
        if cooling is not None:
            return cooling
        ranked = sorted(
            (
                p
                for p in cluster.peers
                if p.elastic > 0 and not _cooling(p, context.now, settings.cooldown_s)
            ),
            key=lambda p: (p.marginal_gain, p.uid),
        )
        remaining = dict(short)
        before: list[dict] = []
        for rank, peer in enumerate(ranked, start=1):
            holds = [r for r, v in remaining.items() if v > _EPSILON and getattr(peer.worker, r)]
            if not holds:
                continue
            needed = max(
                math.ceil(remaining[r] / getattr(peer.worker, r) - _EPSILON) for r in holds
            )
            given = min(peer.elastic, settings.max_return, needed)
            if peer is me:
                return _give_back(me, given, rank, len(ranked), short, before, settings)
            uid = cited_uid(context, peer.uid, peer.namespace)
            before.append({"uid": uid, "marginal_gain": peer.marginal_gain, "gives": given})
            for r in remaining:
                remaining[r] -= given * getattr(peer.worker, r)
            if all(v <= _EPSILON for v in remaining.values()):
                break
        return no_change(
            NAME,
            f"the cluster is short by {_amounts(short)}, covered by "
            f"{len(before)} job(s) whose last worker brings less "
            f"(this job's: {me.marginal_gain:.1%})",
            {"shortfall": short, "returned_before": before, "marginal_gain": me.marginal_gain},
            {"max_return": settings.max_return},
        )


def _give_back(
    me: ElasticJob,
    given: int,
    rank: int,
    ranked: int,
    short: dict[str, float],
    before: list[dict],
    settings: ClusterShortageSettings,
) -> Proposal:
    how = "measured across its last two worker counts" if me.gain_measured else "1 / workers"
    after = me.workers - given
    return Proposal(
        roles={ROLE_WORKER: RoleSpec(count=after)},
        reasons=[
            reason(
                NAME,
                f"the cluster is short by {_amounts(short)}: this job's last worker brings "
                f"{me.marginal_gain:.1%} of its speed ({how}), rank {rank} of {ranked} "
                f"elastic jobs, lowest first: workers {me.workers} -> {after} "
                f"(floor {me.floor})",
                {
                    "shortfall": short,
                    "marginal_gain": me.marginal_gain,
                    "gain_measured": me.gain_measured,
                    "rank": rank,
                    "elastic_jobs": ranked,
                    "returned_before": before,
                    "workers": me.workers,
                    "floor": me.floor,
                    "returned": given,
                },
                {"max_return": settings.max_return, "cooldown_s": settings.cooldown_s},
            )
        ],
    )


def _cooling(peer: ElasticJob, now: datetime, cooldown_s: float) -> bool:
    return peer.changed_at is not None and (now - peer.changed_at).total_seconds() < cooldown_s


def _sets_workers(plan: PlanView) -> bool:
    return ROLE_WORKER in plan.roles


def _amounts(values: dict[str, float]) -> str:
    units = {"cpu": "cores", "memory_mib": "MiB", "gpu": "GPUs"}
    return ", ".join(f"{v:g} {units[r]}" for r, v in values.items())
