"""Portraits as Prometheus metrics: requested, used and wasted resource-hours,
efficiency and OOM kills per namespace, per user and per group, and plans by optimizer
and status, over the jobs that ended in a rolling window.

Read from the database when scraped (and kept for a few seconds), not counted in the
process: with several worker processes every scrape shows the whole service, whichever
worker answers. Users and groups are many; only the ones wasting most get series of
their own (a bounded number, a setting) and the rest add up in one ``(other)`` series,
so the totals stay right and the series count stays bounded.

Every per-tenant series carries the ``namespace`` label, and a user or group is one per
namespace, bounded within its namespace: one namespace's runs never change another's
series (not even by pushing its owners into ``(other)``), and ``scoped`` can show a
caller only its namespaces' series (``BRAIN_METRICS_TENANT_SERIES``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from brain.domain import utcnow
from brain.portraits.jobs import SORT_ORDERS, Totals, owner_totals, totals_by
from brain.summaries.hours import RESOURCES

log = logging.getLogger(__name__)
OTHER = "(other)"
NONE = "(none)"
# (metric name part, Hours field) per resource, in the units of the names.
HOUR_FIELDS = {
    "cpu": ("core_hours", "requested_core_hours", "used_core_hours"),
    "memory": ("memory_gib_hours", "requested_gib_hours", "used_gib_hours"),
    "gpu": ("gpu_hours", "requested_gpu_hours", "used_gpu_hours"),
}
# Owner kind -> its label name.
KINDS = {"namespace": "namespace", "user": "user", "group": "group"}
# The families whose series belong to a tenant (each carries the ``namespace`` label).
TENANT_PREFIXES = tuple(f"brain_{kind}_" for kind in KINDS)

# (namespace label, owner label, totals); the namespace series' owner is the namespace.
Row = tuple[str, str, Totals]


@dataclass(frozen=True)
class Snapshot:
    window_days: int
    by_kind: dict[str, list[Row]]
    plans: list[tuple[str, str, int]]  # optimizer, status, plans


def snapshot(session: Session, since: datetime, window_days: int, owner_series: int) -> Snapshot:
    """What one scrape shows: every namespace; per namespace, its ``owner_series`` users
    and groups wasting most (GPU, then CPU, then memory) and the rest as (other)."""
    by_kind: dict[str, list[Row]] = {
        "namespace": [
            (_label(ns), _label(ns), t) for ns, t in totals_by(session, "namespace", since)
        ]
    }
    for kind in ("user", "group"):
        per_namespace: dict[str, list[tuple[str, Totals]]] = {}
        for namespace, key, totals in owner_totals(session, kind, since):
            per_namespace.setdefault(_label(namespace), []).append((key, totals))
        by_kind[kind] = [
            (namespace, key, totals)
            for namespace, rows in per_namespace.items()
            for key, totals in bounded(rows, owner_series)
        ]
    return Snapshot(window_days, by_kind, plans_by_optimizer(session, since))


def _label(namespace: str | None) -> str:
    return NONE if namespace is None else namespace


def bounded(rows: list[tuple[str, Totals]], keep: int) -> list[tuple[str, Totals]]:
    """The ``keep`` keys wasting most, and one (other) summing the rest."""
    if len(rows) <= keep:
        return rows
    order = SORT_ORDERS["gpu"]
    ranked = sorted(rows, key=lambda r: tuple(-r[1].hours.waste(res) for res in order) + (r[0],))
    kept, rest = ranked[:keep], [totals for _, totals in ranked[keep:]]
    hours = rest[0].hours
    for totals in rest[1:]:
        hours = hours + totals.hours
    other = Totals(
        jobs=sum(t.jobs for t in rest),
        succeeded=sum(t.succeeded for t in rest),
        failed=sum(t.failed for t in rest),
        stopped=sum(t.stopped for t in rest),
        running=sum(t.running for t in rest),
        run_seconds=sum(t.run_seconds for t in rest),
        hours=hours,
    )
    return [*kept, (OTHER, other)]


def plans_by_optimizer(session: Session, since: datetime) -> list[tuple[str, str, int]]:
    """Plans created since ``since``, counted once per optimizer that ran for them."""
    if session.bind.dialect.name == "postgresql":
        statement = text(
            "SELECT o.value AS optimizer, p.status, count(*) AS plans FROM scale_plans p,"
            " json_array_elements_text(p.body -> 'optimizers') AS o(value)"
            " WHERE p.created_at >= :since GROUP BY 1, 2 ORDER BY 1, 2"
        )
    else:
        statement = text(
            "SELECT o.value AS optimizer, p.status, count(*) AS plans FROM scale_plans p,"
            " json_each(p.body, '$.optimizers') AS o"
            " WHERE p.created_at >= :since GROUP BY 1, 2 ORDER BY 1, 2"
        )
    return [(r.optimizer, r.status, r.plans) for r in session.execute(statement, {"since": since})]


class PortraitMetrics(Collector):
    """A collector for the app's registry: a fresh snapshot at most every ``cache_s``."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        window_days: int,
        owner_series: int,
        cache_s: float,
    ) -> None:
        self._factory = session_factory
        self._window_days = window_days
        self._owner_series = owner_series
        self._cache_s = cache_s
        self._lock = threading.Lock()
        self._taken: tuple[float, Snapshot] | None = None

    def current(self) -> Snapshot:
        with self._lock:
            now = time.monotonic()
            if self._taken is None or now - self._taken[0] > self._cache_s:
                since = utcnow() - timedelta(days=self._window_days)
                with self._factory() as session:
                    taken = snapshot(session, since, self._window_days, self._owner_series)
                self._taken = (now, taken)
            return self._taken[1]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        # A database that does not answer must not take Brain's other metrics down.
        try:
            snap = self.current()
        except SQLAlchemyError:
            log.warning("portrait metrics: the database did not answer", exc_info=True)
            snap = None
        yield GaugeMetricFamily(
            "brain_portrait_metrics_up",
            "1 when the portrait metrics below were read from the database, 0 when it failed.",
            value=0 if snap is None else 1,
        )
        if snap is not None:
            yield from families(snap)


def families(snap: Snapshot) -> Iterator[GaugeMetricFamily]:
    window = f"jobs that ended in the last {snap.window_days} days"
    yield GaugeMetricFamily(
        "brain_portrait_window_days",
        "Days of ended jobs the brain_namespace_*, brain_user_* and brain_group_* metrics cover.",
        value=snap.window_days,
    )
    for kind, label in KINDS.items():
        rows = snap.by_kind[kind]
        prefix = f"brain_{kind}"

        owners = (label,) if kind == "namespace" else ("namespace", label)
        per = kind if kind == "namespace" else f"{kind} of a namespace"

        def family(name, doc, value_of, extra=(), rows=rows, prefix=prefix, owners=owners, per=per):
            metric = GaugeMetricFamily(
                f"{prefix}_{name}", f"{doc}, per {per}; {window}.", labels=[*owners, *extra]
            )
            for namespace, key, totals in rows:
                own = (namespace, key)[: len(owners)]
                for more, value in value_of(totals):
                    if value is not None:
                        metric.add_metric([*own, *more], value)
            return metric

        yield family("jobs", "Jobs", lambda t: [((), t.jobs)])
        yield family("oom_kills", "OOM kills", lambda t: [((), t.hours.oom_count)])
        for resource, (unit, requested, used) in HOUR_FIELDS.items():
            yield family(
                f"requested_{unit}",
                f"Requested {unit.replace('_', ' ')}",
                lambda t, f=requested: [((), getattr(t.hours, f))],
            )
            yield family(
                f"used_{unit}",
                f"Used {unit.replace('_', ' ')}",
                lambda t, f=used: [((), getattr(t.hours, f))],
            )
            yield family(
                f"waste_{unit}",
                f"Requested minus used {unit.replace('_', ' ')}",
                lambda t, r=resource: [((), t.hours.waste(r))],
            )
        yield family(
            "efficiency",
            "Used / requested resource-hours by resource (cpu, memory, gpu), and `score` "
            "the mean over the resources requested, each capped at 1",
            lambda t: (
                [((r,), t.hours.efficiency(r)) for r, *_ in RESOURCES]
                + [(("score",), t.hours.efficiency_score())]
            ),
            extra=("resource",),
        )
    plans = GaugeMetricFamily(
        "brain_plans",
        f"Plans created in the last {snap.window_days} days, by optimizer that ran for "
        "them and status.",
        labels=["optimizer", "status"],
    )
    for optimizer, status, count in snap.plans:
        plans.add_metric([optimizer, status], count)
    yield plans


class Scoped:
    """``registry``'s families as one caller may read them (``generate_latest`` takes
    it): the per-tenant families (``TENANT_PREFIXES``) keep only the series of
    ``namespaces`` (None: every one; empty: none, and then no tenant family at all)."""

    def __init__(self, registry, namespaces: frozenset[str] | None) -> None:
        self._registry = registry
        self._namespaces = namespaces

    def collect(self) -> Iterator:
        for family in self._registry.collect():
            if self._namespaces is None or not family.name.startswith(TENANT_PREFIXES):
                yield family
            elif self._namespaces:
                kept = [s for s in family.samples if s.labels["namespace"] in self._namespaces]
                mine = Metric(family.name, family.documentation, family.type, family.unit)
                mine.samples = kept
                yield mine
