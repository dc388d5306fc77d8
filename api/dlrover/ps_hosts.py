"""Where a job's parameter servers will be once a plan is applied, as DLRover names them.

DLRover's master writes the PS addresses (``psHosts``) as ``<pod>.<namespace>.svc:2222``
and names its PS pods ``<job>-edljob-ps-<id>``; a plan stores the addresses it leaves
(``ps_hosts``), which the ScalePlan rendering (``api.dlrover.scaleplan``) carries.
"""

from __future__ import annotations

from collections.abc import Sequence

from brain.domain import ROLE_PS
from brain.optimizing.proposal import PlanBody
from brain.services.ps_tier import PsNode, PsTier

# The PS service port and address form of DLRover's masters (the psHosts they write).
PS_PORT = 2222
DEFAULT_NAMESPACE = "default"


def ps_hosts(
    job_name: str,
    namespace: str | None,
    nodes: Sequence[PsNode],
    body: PlanBody,
    declared_count: int | None = None,
) -> list[str]:
    """The PS addresses the job has once ``body`` is applied, in rank order, as DLRover's
    ``psHosts`` lists them (``<pod>.<namespace>.svc:2222``); empty for a job without PS.

    Live PS keep their place; a migrated PS is replaced in place by a new pod; the PS
    count is the plan's, else the live count (the job's ``declared_count`` before any PS
    runs) plus launches, less removals: missing PS
    are appended, surplus ones taken from the end. A new pod is named as DLRover's master
    names it, ``<job>-edljob-ps-<id>``, ids continuing after the largest the job ever
    had (the master picks the names: the list holds as long as it follows that rule).
    """
    removed = {c.name for c in body.remove if c.role == ROLE_PS}
    migrated = {c.name for c in body.migrate if c.role == ROLE_PS}
    kept = sorted((n for n in nodes if n.live and n.name not in removed), key=lambda n: n.index)
    planned = body.roles.get(ROLE_PS)
    if planned is not None and planned.count is not None:
        count = int(planned.count)
    else:
        running = len(kept) if any(n.live for n in nodes) else (declared_count or 0)
        count = running + sum(1 for c in body.launch if c.role == ROLE_PS)
    prefix = nodes[0].name.rsplit("-", 1)[0] if nodes else f"{job_name}-edljob-{ROLE_PS}"
    next_id = max((n.index for n in nodes), default=-1) + 1
    names = []
    for node in kept[:count]:
        if node.name in migrated:
            names.append(f"{prefix}-{next_id}")
            next_id += 1
        else:
            names.append(node.name)
    while len(names) < count:
        names.append(f"{prefix}-{next_id}")
        next_id += 1
    return [f"{name}.{namespace or DEFAULT_NAMESPACE}.svc:{PS_PORT}" for name in names]


def ps_hosts_of(tier: PsTier, body: PlanBody) -> list[str]:
    """``ps_hosts`` for the job ``tier`` describes (``brain.services.plans.optimize``'s hook)."""
    return ps_hosts(tier.job_name, tier.namespace, tier.nodes, body, tier.declared_count)
