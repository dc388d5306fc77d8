"""Discovery's part of a collector cycle: ask kube-state-metrics which training pods
lived in a window, turn them into jobs and register them (one transaction), and tell the
load collection which job and node each pod's series belong to."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session, sessionmaker

from brain.config import CollectorSettings
from brain.services.discovered_jobs import record_discovered, stop_vanished
from collectors.client import PrometheusClient
from collectors.discovery import pods, queries
from collectors.discovery.jobs import DiscoveryRules, discover_jobs
from collectors.discovery.kinds import LabelSelector, ksm_label
from collectors.mapping import PodRef

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PodPlace:
    """Where a discovered pod's load is stored: the job's id, the node's role and index."""

    job_id: int
    role: str
    index: int


@dataclass
class DiscoveryResult:
    """``places``: each discovered pod's job and node, by (namespace, pod); ``job_ids``:
    the jobs seen in the window; ``finished_ids``: those that finished now (to summarize
    once their last load is stored)."""

    places: dict[tuple[str, str], PodPlace] = field(default_factory=dict)
    job_ids: list[int] = field(default_factory=list)
    finished_ids: list[int] = field(default_factory=list)
    found: int = 0
    created: int = 0
    updated: int = 0
    registered: int = 0
    stopped: int = 0
    pods: int = 0


def rules_from_settings(settings: CollectorSettings) -> DiscoveryRules:
    def label(name: str) -> str:
        return ksm_label(name) if name.strip() else ""

    return DiscoveryRules(
        user_label=label(settings.discovery_user_label),
        group_label=label(settings.discovery_group_label),
        batch_selector=LabelSelector.parse(settings.discovery_batch_selector),
    )


def selector_of(settings: CollectorSettings) -> str:
    """The label matchers of discovery's queries: the cluster selector, or any pod."""
    extra = settings.prometheus_selector.strip().strip(",").strip()
    return extra or 'pod!=""'


class Discovery:
    def __init__(
        self,
        settings: CollectorSettings,
        session_factory: sessionmaker[Session],
        client: PrometheusClient,
    ) -> None:
        self.session_factory = session_factory
        self.client = client
        self.rules = rules_from_settings(settings)
        self.selector = selector_of(settings)
        self.sent = 0

    def read(self, start: datetime, end: datetime) -> dict[str, list]:
        """The answers of the discovery queries over ``(start, end]`` (raises
        ``PrometheusError``; nothing is written before all have answered)."""
        window_s = int((end - start).total_seconds())
        answers = {}
        for name in pods.ANSWERS:
            self.sent += 1
            query = queries.render(name, selector=self.selector, window_s=window_s)
            answers[name] = self.client.query(query, end)
        return answers

    def run(self, start: datetime, end: datetime) -> DiscoveryResult:
        """Discover the training jobs of ``(start, end]`` and register them; discovered
        jobs still running that did not show in the window are stopped (only when
        kube-state-metrics answered for some pod: its absence proves nothing)."""
        answers = self.read(start, end)
        facts = pods.gather(answers)
        jobs = discover_jobs(facts.values(), self.rules, end)
        result = DiscoveryResult(found=len(jobs))
        with self.session_factory() as session, session.begin():
            for job, recorded in zip(jobs, record_discovered(session, jobs), strict=True):
                result.job_ids.append(recorded.job_id)
                result.created += recorded.created
                result.updated += recorded.changed and not recorded.created
                result.registered += recorded.registered
                if recorded.finished and recorded.changed:
                    result.finished_ids.append(recorded.job_id)
                for pod in job.pods:
                    place = PodPlace(recorded.job_id, pod.role, pod.index)
                    result.places[(job.namespace, pod.pod)] = place
            if answers[pods.OWNERS]:
                gone = stop_vanished(session, set(result.job_ids), start)
                result.finished_ids.extend(gone)
                result.stopped = len(gone)
        result.pods = len(result.places)
        return result


class DiscoveredMapper:
    """A series' pod: discovery's place for it first, else the configured mapping."""

    def __init__(self, places: Mapping[tuple[str, str], PodPlace], fallback) -> None:
        self.places = places
        self.fallback = fallback

    def pod_ref(self, labels: Mapping[str, str]) -> PodRef | None:
        namespace, pod = labels.get("namespace") or "", labels.get("pod") or ""
        place = self.places.get((namespace, pod))
        if place is None:
            return self.fallback.pod_ref(labels)
        return PodRef(
            job_key=f"#{place.job_id}",
            namespace=namespace,
            pod=pod,
            role=place.role,
            index=place.index,
        )


class DiscoveredIndex:
    """Resolves discovery's pods by job id (uids are unique per namespace only), others
    through the registered jobs' index."""

    def __init__(self, places, known, fallback) -> None:
        self.places = places
        self.by_id = {job.id: job for job in known}
        self.fallback = fallback

    def resolve(self, ref: PodRef):
        place = self.places.get((ref.namespace or "", ref.pod))
        if place is not None:
            return self.by_id.get(place.job_id)
        return self.fallback.resolve(ref)
