"""The ``brain.Brain`` servicer: DLRover's three calls on Brain's services.

Each handler reads the request (``api.dlrover.messages``), calls one service of the
adapter and writes its answer, as a REST router does: ``persist_metrics`` queues a report
(``api.dlrover.report_intake``), ``optimize`` stores and answers a plan
(``api.dlrover.planning``), ``get_job_metrics`` reads a job (``api.dlrover.job_metrics``).
Every call is counted in ``/metrics`` by method and outcome. Nothing raises out of a
handler: a request Brain cannot serve gets an empty, successful answer whose ``reason``
says why, and a log line (the master treats any error as "no plan" anyway, and has no
deadline on its calls); ``api.dlrover.errors`` maps the errors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from dlrover.proto import brain_pb2_grpc
from google.protobuf import empty_pb2
from sqlalchemy.orm import Session, sessionmaker

from api.dlrover import messages
from api.dlrover.elasticjobs import ElasticJobLookup
from api.dlrover.errors import outcome_of
from api.dlrover.job_metrics import job_metrics
from api.dlrover.planning import Planner
from api.dlrover.report_intake import ReportIntake
from brain.config import Settings
from brain.errors import BrainError
from brain.optimizing import OptimizerRegistry
from brain.optimizing.sizing_model import SizingModel
from brain.telemetry import Telemetry

log = logging.getLogger(__name__)
FAILED = "Brain failed"


@dataclass
class CallOutcome:
    """The label a gRPC call is counted under (``ok``, ``timeout``, an error's), which
    its handler may set."""

    value: str = "ok"


class BrainServicer(brain_pb2_grpc.BrainServicer):
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        registry: OptimizerRegistry,
        settings: Settings,
        telemetry: Telemetry,
        summarize: Callable[[int], None],
        sizing_model: Callable[[], SizingModel | None] = lambda: None,
        elastic_jobs: ElasticJobLookup | None = None,
    ) -> None:
        self._sessions = session_factory
        self._telemetry = telemetry
        self.reports = ReportIntake(
            session_factory, telemetry, settings.grpc_report_max_bytes, summarize
        )
        self._planner = Planner(
            session_factory, registry, settings, sizing_model, elastic_jobs, summarize
        )

    def close(self) -> None:
        self.reports.close()
        self._planner.close()

    def wait_for_reports(self, timeout_s: float) -> bool:
        """Whether every queued report is stored within ``timeout_s`` (tests, shutdown)."""
        return self.reports.wait_idle(timeout_s)

    def persist_metrics(self, request, context):
        def handle(outcome: CallOutcome):
            outcome.value = self.reports.take(request)
            return empty_pb2.Empty()

        return self._run_counted("persist_metrics", request.job_meta.uuid, handle, _empty)

    def optimize(self, request, context):
        ask = messages.optimize_ask(request)

        def handle(outcome: CallOutcome):
            answer = self._planner.answer_in_time(ask)
            outcome.value = answer.outcome
            return messages.optimize_response(ask.uid, answer)

        return self._run_counted("optimize", ask.uid, handle, messages.no_plan)

    def get_job_metrics(self, request, context):
        def handle(_outcome: CallOutcome):
            return messages.job_metrics_response(job_metrics(self._sessions, request.job_uuid))

        return self._run_counted(
            "get_job_metrics", request.job_uuid, handle, messages.metrics_failure
        )

    def _run_counted(
        self,
        method: str,
        uid: str,
        handle: Callable[[CallOutcome], object],
        empty: Callable[[str], object],
    ):
        """Run ``handle``, count the call by outcome and time it; an error is logged and
        answered with ``empty(reason)``, never raised."""
        outcome = CallOutcome()
        started = time.perf_counter()
        try:
            return handle(outcome)
        except BrainError as exc:
            outcome.value = outcome_of(exc)
            log.warning("%s for job %.300r: %s; answered empty", method, uid, exc)
            return empty(exc.message)
        except Exception as exc:
            outcome.value = outcome_of(exc)
            log.exception("gRPC %s failed; answered empty", method)
            return empty(FAILED)
        finally:
            self._telemetry.grpc_requests.labels(method, outcome.value).inc()
            self._telemetry.grpc_latency.labels(method).observe(time.perf_counter() - started)


def _empty(_reason: str):
    return empty_pb2.Empty()
