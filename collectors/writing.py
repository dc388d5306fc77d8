"""Writing a job's scraped load through the path of pushed samples
(``brain.services.collector_store.store_collected``): one transaction per job, its points and
its OOM events, or nothing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from brain.domain import EventKind
from brain.services.collector_store import CollectedLoad, CollectedResult, store_collected
from brain.services.events import EventInput
from brain.services.nodes import NodeRef
from brain.services.samples import NodePoint
from collectors.loads import PodLoad

# A point needs both; the GPU signals are optional (not every pod has a GPU).
REQUIRED_SIGNALS = frozenset({"cpu", "memory_mib"})


@dataclass(frozen=True)
class PreparedLoad:
    load: CollectedLoad
    incomplete_points: int  # points missing CPU or memory, not stored


def prepare(pods: Iterable[PodLoad]) -> PreparedLoad:
    """Node points (time order per pod) and one ``oom`` event per kill time and pod."""
    load = CollectedLoad()
    incomplete = 0
    for pod in pods:
        ref = pod.ref
        for ts in sorted(pod.values):
            fields = pod.values[ts]
            if not fields.keys() >= REQUIRED_SIGNALS:
                incomplete += 1
                continue
            # Signal names are NodePoint's fields (tested), so they pass as they are.
            load.points.append(
                NodePoint(name=ref.pod, role=ref.role, index=ref.index, ts=ts, **fields)
            )
        for ts in sorted(pod.kills):
            containers = ", ".join(sorted(set(filter(None, pod.kills[ts])))) or "?"
            load.events.append(
                EventInput(
                    ts=ts,
                    kind=EventKind.oom,
                    node=ref.pod,
                    detail=f"OOMKilled (container {containers}); seen by Prometheus",
                )
            )
            load.event_nodes.append(NodeRef(ref.pod, ref.role, ref.index))
    return PreparedLoad(load, incomplete)


def write(
    session_factory: sessionmaker[Session],
    job_id: int,
    load: CollectedLoad,
    silent_after_s: float,
) -> CollectedResult | None:
    """Store ``load`` in one transaction (``store_collected``); ``None`` when the job no
    longer exists. Raises ``SQLAlchemyError`` with nothing stored."""
    with session_factory() as session, session.begin():
        return store_collected(session, job_id, load, silent_after_s)
