"""How large a stored plan may be, whatever the job it was made for.

A job's roles are bounded (``brain.bounds.MAX_ROLES``) but its node counts reach the
plausible bound (100,000), and every optimizer may explain itself at length: without a
bound a single plan could hold megabytes, which every plan listing would then answer
ten at a time. So a plan names at most ``MAX_NAMED_NODES`` node changes and PS hosts,
keeps ``MAX_REASONS`` reasons, and a reason's evidence over ``MAX_EVIDENCE_BYTES`` is
replaced by its size; each cut is a reason of its own. Role counts are never cut, so a
job master scaling by count still reaches the plan's sizes.
"""

from __future__ import annotations

import json
from dataclasses import replace

from brain.optimizing.proposal import PlanBody, Reason

MAX_NAMED_NODES = 500
MAX_REASONS = 100
MAX_EVIDENCE_BYTES = 4096
MAX_MESSAGE_CHARS = 2000
CUT = " [cut by Brain]"


def bounded(body: PlanBody) -> PlanBody:
    """``body`` within the bounds above (the same object when it already is)."""
    cuts: list[str] = []
    lists = {}
    room = MAX_NAMED_NODES
    for name in ("migrate", "remove", "launch"):
        changes = getattr(body, name)
        kept = changes[: max(room, 0)]
        room -= len(kept)
        if len(kept) < len(changes):
            cuts.append(f"{name}: {len(kept)} of {len(changes)} nodes named")
        lists[name] = kept
    ps_hosts = body.ps_hosts[:MAX_NAMED_NODES]
    if len(ps_hosts) < len(body.ps_hosts):
        cuts.append(f"ps_hosts: {len(ps_hosts)} of {len(body.ps_hosts)}")
    reasons = [_bounded_reason(r) for r in body.reasons[: MAX_REASONS - 1]]
    if len(body.reasons) > len(reasons) + 1:
        cuts.append(f"reasons: {len(reasons)} of {len(body.reasons)} kept")
    elif len(body.reasons) == len(reasons) + 1:
        reasons.append(_bounded_reason(body.reasons[-1]))
    if cuts:
        reasons.append(
            Reason(
                "guard",
                f"the plan was cut to what Brain stores ({'; '.join(cuts)}); role counts "
                "stand in full",
                {"cuts": cuts},
                {"max_named_nodes": MAX_NAMED_NODES, "max_reasons": MAX_REASONS},
            )
        )
    changed = cuts or any(a is not b for a, b in zip(reasons, body.reasons, strict=False))
    if not changed:
        return body
    return body.model_copy(update={**lists, "ps_hosts": ps_hosts, "reasons": reasons})


def _bounded_reason(reason: Reason) -> Reason:
    message = reason.message
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - len(CUT)] + CUT
    evidence = reason.evidence
    size = len(json.dumps(evidence, default=str, separators=(",", ":")))
    if size > MAX_EVIDENCE_BYTES:
        evidence = {"omitted": f"{size} bytes of evidence, over the {MAX_EVIDENCE_BYTES} kept"}
    if message is reason.message and evidence is reason.evidence:
        return reason
    return replace(reason, message=message, evidence=evidence)
