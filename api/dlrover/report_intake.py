"""``persist_metrics``: check a master's report and queue it; the writer stores it.

A report is answered once it is queued (``api.dlrover.writer`` says why). What is
answered, counted in ``brain_grpc_requests_total``: ``queued``; ``ok`` for a repeat of a
recent report (``api.dlrover.dedupe``); ``ignored`` for a kind Brain does not keep;
``invalid`` for one it must refuse (logged).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from api.dlrover.dedupe import SeenReports
from api.dlrover.report_checks import (
    REPORT_KINDS,
    namespace_hint,
    report_body,
    uid_problem,
    user_hint,
)
from api.dlrover.report_store import Report, ReportStore
from api.dlrover.writer import ReportWriter
from api.schemas.jobs import EXIT_REASON_CHARS
from brain.telemetry import Telemetry

log = logging.getLogger(__name__)


class ReportIntake:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        telemetry: Telemetry,
        max_bytes: int,
        summarize: Callable[[int], None],
    ) -> None:
        """``max_bytes``: the most a report may hold as sent (a reason is cut instead)."""
        self._max_bytes = max_bytes
        self.seen = SeenReports()
        self.store = ReportStore(
            session_factory, telemetry, max_bytes, summarize, not_stored=self.seen.forget
        )
        self._writer: ReportWriter[Report] = ReportWriter(
            self.store.write_batch, size=lambda report: report.size
        )

    def take(self, metrics) -> str:
        """Check and queue one ``JobMetrics`` report; returns the outcome."""
        uid = metrics.job_meta.uuid
        kind = metrics.WhichOneof("metrics")
        if not uid:
            log.warning("persist_metrics without job_meta.uuid (%s): ignored", kind)
            return "invalid"
        problem = uid_problem(uid)
        if problem is not None:
            log.warning("persist_metrics: %s: ignored", problem)
            return "invalid"
        if kind not in REPORT_KINDS:
            return "ignored"
        payload = getattr(metrics, kind)
        raw = payload.encode() if isinstance(payload, str) else payload.SerializeToString()
        limit = self._max_bytes
        if len(raw) > limit and kind != "job_exit_reason":  # a reason is cut, not dropped
            log.warning(
                "job %s: %s of %d bytes, over BRAIN_GRPC_REPORT_MAX_BYTES (%d): ignored",
                uid,
                kind,
                len(raw),
                limit,
            )
            return "invalid"
        namespace = namespace_hint(metrics.job_meta)
        # Per namespace: a uid is unique within one only.
        key = (uid, kind, hashlib.sha256(f"{namespace or ''}\x00".encode() + raw).digest())
        if self.seen.seen_before(key):
            return "ok"
        body = report_body(kind, payload, EXIT_REASON_CHARS)
        if body is None:
            log.warning("job %s: %s is not a JSON object of finite numbers: ignored", uid, kind)
            return "invalid"
        self.seen.remember(key)
        user = user_hint(metrics.job_meta)
        self._writer.submit(Report(key, user, body, min(len(raw), limit), namespace))
        return "queued"

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether every queued report is stored within ``timeout_s`` (tests, shutdown)."""
        return self._writer.wait_idle(timeout_s)

    def close(self) -> None:
        self._writer.close()
