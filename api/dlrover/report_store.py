"""Store what the report writer takes from its queue (``api.dlrover.writer``).

Per job, in one transaction, the latest report of each kind (custom data merged in
arrival order, as storing them one by one would leave it). The master's ``Type`` report
names the distribution strategy; its exit reason finishes the job.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from api.dlrover.dedupe import ReportKey
from api.dlrover.transaction import transaction
from brain.db.models import JobRow
from brain.domain import Strategy
from brain.errors import BrainError
from brain.services import master_reports
from brain.telemetry import Telemetry

log = logging.getLogger(__name__)

STRATEGIES = {
    "ParameterServerStrategy": Strategy.ps,
    "CustomStrategy": Strategy.ps,
    "AllreduceStrategy": Strategy.allreduce,
}
EXIT_SUCCEEDED = "Completed"


@dataclass(frozen=True)
class Report:
    """A checked report waiting for the writer: its (uid, kind, digest) key, the user
    hint, its body as plain values, its size as sent (what the writer's queue holds) and
    the namespace hint."""

    key: ReportKey
    user: str | None
    body: dict
    size: int = 0
    namespace: str | None = None


class ReportStore:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        telemetry: Telemetry,
        max_bytes: int,
        summarize: Callable[[int], None],
        not_stored: Callable[[ReportKey], None],
    ) -> None:
        """``max_bytes``: what a job's merged custom data may hold; ``summarize`` is
        called with the id of a job a report finished; ``not_stored`` with the key of
        each report that failed."""
        self._sessions = session_factory
        self._telemetry = telemetry
        self._max_bytes = max_bytes
        self._summarize = summarize
        self._not_stored = not_stored

    def write_batch(self, reports: list[Report]) -> None:
        # Per uid and namespace hint: a uid is unique within a namespace only.
        by_job: dict[tuple[str, str | None], list[Report]] = {}
        for report in reports:
            by_job.setdefault((report.key[0], report.namespace), []).append(report)
        for (uid, _namespace), mine in by_job.items():
            self.write_job(uid, mine)

    def write_job(self, uid: str, reports: list[Report]) -> None:
        """Each kind in a savepoint of its own: a report the store refuses (too large once
        merged, a value the database will not take) costs only itself, never the job's
        other reports nor its registration."""
        user = next((r.user for r in reports if r.user), None)
        namespace = reports[0].namespace  # one per write (see write_batch)
        bodies: dict[str, dict] = {}
        by_kind: dict[str, list[Report]] = {}
        for report in reports:
            kind = report.key[1]
            cumulative = kind == "customized_data"
            bodies[kind] = {**bodies.get(kind, {}), **report.body} if cumulative else report.body
            by_kind.setdefault(kind, []).append(report)
        failed: list[Report] = []
        try:
            with transaction(self._sessions) as session:
                job = master_reports.ensure_running_job(session, uid, user, namespace)
                finished = False
                for kind, body in bodies.items():
                    try:
                        with session.begin_nested():
                            finished = self._store(session, job, kind, body) or finished
                    except BrainError as exc:
                        log.warning("job %s: %s report refused: %s", uid, kind, exc)
                        failed.extend(by_kind[kind])
                    except Exception:
                        log.exception("job %s: cannot store its master's %s report", uid, kind)
                        failed.extend(by_kind[kind])
        except Exception:
            log.exception("job %s: cannot store %d reports of its master", uid, len(reports))
            failed = reports
            finished = False
        for report in failed:
            self._not_stored(report.key)
        if failed:
            self._telemetry.grpc_report_write_errors.inc(len(failed))
        if finished:
            self._summarize(job.id)

    def _store(self, session: Session, job: JobRow, kind: str, body: dict) -> bool:
        """Store one report; returns whether it finished the job."""
        match kind:
            case "type":
                master_reports.record_report(session, job, kind, body)
                if body[kind] in STRATEGIES:
                    master_reports.set_strategy(session, job, STRATEGIES[body[kind]])
            case "customized_data":
                master_reports.record_report(
                    session, job, kind, body, cumulative=True, max_bytes=self._max_bytes
                )
            case "job_exit_reason":
                return master_reports.record_exit(session, job, job_exit(body[kind]))
            case _:
                master_reports.record_report(session, job, kind, body)
        return False


def job_exit(reason: str) -> master_reports.JobExit:
    """How a master's exit reason ends the job: ``Completed`` succeeded, ``...OOM`` was
    killed for memory, anything else failed."""
    return master_reports.JobExit(
        succeeded=reason == EXIT_SUCCEEDED, reason=reason, oom=reason.endswith("OOM")
    )
