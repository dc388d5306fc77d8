"""The ``brain.Brain`` servicer: DLRover's three calls on Brain's services.

Every call is stored like REST traffic (jobs, events, plans with ids and reasons) and
counted in ``/metrics`` by method and outcome. Nothing raises out of a handler: bad or
unknown input gets an empty, successful answer whose ``reason`` says why, and a log line
(the master treats any error as "no plan" anyway, and has no deadline on its calls).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field

from dlrover.proto import brain_pb2, brain_pb2_grpc
from google.protobuf import empty_pb2
from sqlalchemy.orm import Session, sessionmaker

from api.dlrover.elasticjobs import ElasticJobLookup
from api.dlrover.ps_hosts import ps_hosts_of
from api.dlrover.replies import DLRoverPlan, to_dlrover
from api.dlrover.stages import WORKER_PHASE_KEY, BrainCall, Reply, UnknownRequest, translate
from api.dlrover.writer import ReportWriter
from api.schemas.jobs import EXIT_REASON_CHARS, JobOut
from brain.config import Settings
from brain.db.models import JobRow, ScalePlanRow
from brain.domain import K8S_NAME_MAX, Stage, Strategy, as_utc, utcnow
from brain.errors import BrainError
from brain.optimizing import OptimizerRegistry
from brain.optimizing.proposal import PlanBody
from brain.optimizing.sizing import SizingModel
from brain.services import jobs, master_reports, plans
from brain.services.nodes import NodeRef
from brain.services.optimizer_context import current_roles, roles_in
from brain.telemetry import Telemetry

log = logging.getLogger(__name__)

# DLRover's ``Type`` report names the distribution strategy.
STRATEGIES = {
    "ParameterServerStrategy": Strategy.ps,
    "CustomStrategy": Strategy.ps,
    "AllreduceStrategy": Strategy.allreduce,
}
EXIT_SUCCEEDED = "Completed"
# The master asks for the PS plan right after the worker one, both from the estimate
# stage: one estimate answers both if it is this recent.
ESTIMATE_REUSE_S = 600
DEFAULTS_NOT_SENT = (
    "no related history: DLRover was told the job's registered request (0 = keep the "
    "ElasticJob's), not these defaults"
)
# Recently seen (uid, kind, payload digest): repeats are answered without touching the
# store. Digests, not payloads, so the memory this takes is bounded by the count alone.
SEEN_REPORTS = 10_000


# What the jobs table stores (as the REST schema bounds them).
UID_CHARS = K8S_NAME_MAX
USER_CHARS = 128
TRUNCATED = " [truncated by Brain]"


def _storable_uid(uid: str) -> bool:
    return len(uid) <= UID_CHARS and "\x00" not in uid


def _storable_text(text: str, limit: int) -> str:
    """A master's free text as the store keeps it: no NUL (PostgreSQL refuses it), at most
    ``limit`` characters (a reason is still worth keeping when it is too long)."""
    text = text.replace("\x00", "")
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


REPORT_KINDS = frozenset(
    {"type", "training_hyper_params", "model_feature", "customized_data", "job_exit_reason"}
)


@dataclass(frozen=True)
class Report:
    """A checked report waiting for the writer: its (uid, kind, digest) key, the user
    hint, its body as plain values and its size as sent (what the writer's queue holds)."""

    key: tuple[str, str, bytes]
    user: str | None
    body: dict
    size: int = 0


@dataclass
class Outcome:
    value: str = "ok"


@dataclass
class Answer:
    plan: DLRoverPlan | None
    reason: str
    plan_id: int | None = None
    reasons: list[str] = field(default_factory=list)


class BrainServicer(brain_pb2_grpc.BrainServicer):
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        registry: OptimizerRegistry,
        settings: Settings,
        telemetry: Telemetry,
        summarize: Callable[[str], None],
        sizing_model: Callable[[], SizingModel | None] = lambda: None,
        elastic_jobs: ElasticJobLookup | None = None,
    ) -> None:
        self._sessions = session_factory
        self._registry = registry
        self._settings = settings
        self._telemetry = telemetry
        self._summarize = summarize
        self._sizing_model = sizing_model
        self._elastic_jobs = elastic_jobs
        # optimize runs here so that the handler can stop waiting at the deadline.
        self._optimizers = ThreadPoolExecutor(
            settings.grpc_optimize_workers, thread_name_prefix="brain-grpc-optimize"
        )
        self._writer: ReportWriter[Report] = ReportWriter(
            self._write_batch, size=lambda report: report.size
        )
        self._seen: OrderedDict[tuple[str, str, bytes], None] = OrderedDict()
        self._seen_lock = threading.Lock()

    def close(self) -> None:
        self._writer.close()
        self._optimizers.shutdown(wait=True)

    # --- persist_metrics -------------------------------------------------------------

    def persist_metrics(self, request, context):
        def handle(outcome: Outcome):
            outcome.value = self._persist(request)
            return empty_pb2.Empty()

        return self._served("persist_metrics", handle, empty_pb2.Empty())

    def _persist(self, metrics) -> str:
        """Check and queue one report; the writer stores it (see api.dlrover.writer)."""
        uid = metrics.job_meta.uuid
        kind = metrics.WhichOneof("metrics")
        if not uid:
            log.warning("persist_metrics without job_meta.uuid (%s): ignored", kind)
            return "invalid"
        if not _storable_uid(uid):
            log.warning("persist_metrics with an unstorable uuid (%d chars): ignored", len(uid))
            return "invalid"
        if kind not in REPORT_KINDS:
            # Runtime samples and dataset features never arrive from 0.6.1 (client bugs);
            # node load comes from the Prometheus collector instead.
            return "ignored"
        payload = getattr(metrics, kind)
        raw = payload.encode() if isinstance(payload, str) else payload.SerializeToString()
        limit = self._settings.grpc_report_max_bytes
        if len(raw) > limit and kind != "job_exit_reason":  # a reason is cut, not dropped
            log.warning(
                "job %s: %s of %d bytes, over BRAIN_GRPC_REPORT_MAX_BYTES (%d): ignored",
                uid,
                kind,
                len(raw),
                limit,
            )
            return "invalid"
        key = (uid, kind, hashlib.sha256(raw).digest())
        if self._seen_before(key):
            return "ok"
        if kind == "customized_data":
            body = _json_object(payload)
            if body is None:
                log.warning("job %s: customized_data is not a finite JSON object: ignored", uid)
                return "invalid"
        elif kind in ("training_hyper_params", "model_feature"):
            body = _as_dict(payload)
            if not _finite(body):
                log.warning("job %s: %s holds a NaN or infinite number: ignored", uid, kind)
                return "invalid"
        else:
            body = {kind: _storable_text(payload, EXIT_REASON_CHARS)}
        # 0.6.1 masters send the container's $USER as "cluster" and no user (argument order
        # bug); a fixed master would send the user.
        user = metrics.job_meta.user or metrics.job_meta.cluster or None
        if user is not None and (len(user) > USER_CHARS or "\x00" in user):
            user = None  # a hint only: the job keeps the user it has
        self._remember(key)
        self._writer.submit(Report(key, user, body, min(len(raw), limit)))
        return "queued"

    def _write_batch(self, reports: list[Report]) -> None:
        """Store what the writer took from its queue: per job, in one transaction, the
        latest report of each kind (custom data merged in arrival order, as storing them
        one by one would leave it)."""
        by_job: dict[str, list[Report]] = {}
        for report in reports:
            by_job.setdefault(report.key[0], []).append(report)
        for uid, mine in by_job.items():
            self._write_job(uid, mine)

    def _write_job(self, uid: str, reports: list[Report]) -> None:
        """Each kind in a savepoint of its own: a report the store refuses (too large once
        merged, a value the database will not take) costs only itself, never the job's
        other reports nor its registration."""
        user = next((r.user for r in reports if r.user), None)
        bodies: dict[str, dict] = {}
        by_kind: dict[str, list[Report]] = {}
        for report in reports:
            kind = report.key[1]
            cumulative = kind == "customized_data"
            bodies[kind] = {**bodies.get(kind, {}), **report.body} if cumulative else report.body
            by_kind.setdefault(kind, []).append(report)
        failed: list[Report] = []
        try:
            with self._transaction() as session:
                job = master_reports.ensure_running_job(session, uid, user)
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
            self._forget(report.key)  # a retry of these reports must be written again
        if failed:
            self._telemetry.grpc_report_write_errors.inc(len(failed))
        if finished:
            self._summarize(uid)

    def _store(self, session: Session, job: JobRow, kind: str, body: dict) -> bool:
        """Store one report; returns whether it finished the job."""
        match kind:
            case "type":
                master_reports.record_report(session, job, kind, body)
                if body[kind] in STRATEGIES:
                    master_reports.set_strategy(session, job, STRATEGIES[body[kind]])
            case "customized_data":
                master_reports.record_report(
                    session,
                    job,
                    kind,
                    body,
                    cumulative=True,
                    max_bytes=self._settings.grpc_report_max_bytes,
                )
            case "job_exit_reason":
                reason = body[kind]
                exit = master_reports.JobExit(
                    succeeded=reason == EXIT_SUCCEEDED, reason=reason, oom=reason.endswith("OOM")
                )
                return master_reports.record_exit(session, job, exit)
            case _:
                master_reports.record_report(session, job, kind, body)
        return False

    def wait_for_reports(self, timeout_s: float) -> bool:
        """Whether every queued report is stored within ``timeout_s`` (tests, shutdown)."""
        return self._writer.wait_idle(timeout_s)

    def _forget(self, key: tuple[str, str, bytes]) -> None:
        with self._seen_lock:
            self._seen.pop(key, None)

    def _seen_before(self, key: tuple[str, str, bytes]) -> bool:
        with self._seen_lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return True
            return False

    def _remember(self, key: tuple[str, str, bytes]) -> None:
        with self._seen_lock:
            self._seen[key] = None
            while len(self._seen) > SEEN_REPORTS:
                self._seen.popitem(last=False)

    # --- optimize --------------------------------------------------------------------

    def optimize(self, request, context):
        def handle(outcome: Outcome):
            return _response(request, self._answer_in_time(request, outcome))

        fallback = brain_pb2.OptimizeResponse(
            response=brain_pb2.Response(success=False, reason="Brain failed; no plan")
        )
        return self._served("optimize", handle, fallback)

    def _answer_in_time(self, request, outcome: Outcome) -> Answer:
        expired = threading.Event()
        future = self._optimizers.submit(self._answer, request, expired)
        try:
            answer = future.result(timeout=self._settings.grpc_optimize_timeout_s)
        except FutureTimeout:
            # Not started yet (all optimize workers busy): never started, so the queue
            # behind it is not kept waiting for an answer nobody reads. Started: it stores
            # its plan and marks it as computed too late.
            future.cancel()
            expired.set()
            outcome.value = "timeout"
            log.warning(
                "optimize %s for %s took over %.1f s: answered with no plan",
                request.type,
                request.jobs[0].uid if request.jobs else "?",
                self._settings.grpc_optimize_timeout_s,
            )
            return Answer(None, "Brain did not answer in time; no plan")
        if answer.plan is None or answer.plan.is_empty:
            outcome.value = "no_plan" if answer.plan_id is not None else "invalid"
        return answer

    def _answer(self, request, expired: threading.Event) -> Answer:
        uid = request.jobs[0].uid if request.jobs else ""
        if not uid:
            log.warning("optimize %r without a job uid: no plan", request.type)
            return Answer(None, "no job uid in the request")
        if not _storable_uid(uid):
            # As REST bounds the path: one line, never the store's traceback per call.
            log.warning(
                "optimize %r with an unstorable uid (%d chars): no plan", request.type, len(uid)
            )
            return Answer(None, f"the job uid is over {UID_CHARS} characters or holds NUL; no plan")
        phase = request.config.customized_config.get(WORKER_PHASE_KEY)
        oom_pods = [name for name, pod in request.jobs[0].state.pods.items() if pod.is_oom]
        try:
            call = translate(request.type, phase, sorted(oom_pods))
        except UnknownRequest as exc:
            log.warning("optimize for job %s: %s; no plan", uid, exc)
            return Answer(None, f"{exc}; no plan")
        try:
            with self._transaction() as session:
                answer = self._plan(session, uid, call)
                if expired.is_set() and answer.plan_id is not None:
                    plan = session.get(ScalePlanRow, answer.plan_id)
                    plan.status_message = "computed after the gRPC deadline; the master got no plan"
                return answer
        except BrainError as exc:
            log.warning("optimize %s for job %s: %s; no plan", request.type, uid, exc)
            return Answer(None, f"{exc}; no plan")

    def _plan(self, session: Session, uid: str, call: BrainCall) -> Answer:
        if call.stage == Stage.create:
            job = master_reports.ensure_running_job(session, uid, None)
            self._learn_request(session, job)
        else:
            job = jobs.find_job(session, uid)
            if job is None:
                log.warning("optimize for job %s, which Brain never saw: no plan", uid)
                return Answer(None, f"Brain has never seen job {uid}; no plan")
        node = None
        if call.oom_pod is not None:
            # Recorded before asking: the oom stage refuses (409 over REST) a node with no
            # recorded OOM; were it ever refused here, _answer turns the error into an
            # empty answer naming the reason, as for any BrainError.
            pod = call.oom_pod
            master_reports.record_node_oom(session, job, NodeRef(pod.name, pod.role, pod.index))
            node = pod.name
        reused = self._reusable_estimate(session, job, call)
        optimized = (
            plans.Optimized(reused, None) if reused else self._optimize(session, job, call, node)
        )
        if optimized is None:
            return Answer(None, f"no {call.stage.value} optimizer configured for this request")
        plan, context = optimized.plan, optimized.context
        body = plan.body
        # The create context holds the job's related history (Reply.create is the create
        # stage's, never a replayed OOM's): without any, the plan holds the optimizers'
        # defaults, which would replace the user's worker size: tell the master the job's
        # own request instead.
        if call.reply == Reply.create and context is not None and not context.history:
            body = PlanBody()
            plan.status_message = DEFAULTS_NOT_SENT
        roles = current_roles(session, job) if context is None else roles_in(context)
        dlrover_plan = to_dlrover(body, call.reply, roles, call.oom_pod)
        reasons = [f"{r.optimizer}: {r.message}" for r in plan.body.reasons]
        log.info("job %s: plan %d (%s) for DLRover: %s", uid, plan.id, call.stage, dlrover_plan)
        return Answer(dlrover_plan, f"Brain plan {plan.id}", plan.id, reasons)

    def _learn_request(self, session: Session, job: JobRow) -> None:
        """A job registered without roles, or never (first seen over gRPC): its request
        from its ElasticJob, when the Kubernetes lookup is configured. Stored as the job's
        roles, so later stages size from it too; a REST registration always wins."""
        if job.roles or self._elastic_jobs is None:
            return
        roles = self._elastic_jobs.requested_roles(job.uid)
        if roles:
            log.info("job %s: request read from its ElasticJob: %s", job.uid, roles)
            master_reports.adopt_requested_roles(session, job, roles)

    def _optimize(
        self, session: Session, job: JobRow, call: BrainCall, node: str | None
    ) -> plans.Optimized | None:
        names = None
        if call.optimizers is not None:
            configured = self._settings.stage_optimizers.get(call.stage.value, [])
            names = [name for name in configured if name in call.optimizers]
            if not names:
                return None
        return plans.optimize(
            session,
            job,
            self._registry,
            self._settings,
            call.stage,
            optimizer_names=names,
            node=node,
            sizing_model=self._sizing_model(),
            ps_hosts=ps_hosts_of,
        )

    def _reusable_estimate(
        self, session: Session, job: JobRow, call: BrainCall
    ) -> ScalePlanRow | None:
        if call.stage != Stage.estimate or call.reply != Reply.ps:
            return None
        for plan in plans.list_plans(session, job, limit=5):
            recent = (utcnow() - as_utc(plan.created_at)).total_seconds() < ESTIMATE_REUSE_S
            if plan.stage == Stage.estimate.value and recent:
                return plan
        return None

    # --- get_job_metrics -------------------------------------------------------------

    def get_job_metrics(self, request, context):
        def handle(outcome: Outcome):
            if not _storable_uid(request.job_uuid):
                outcome.value = "invalid"
                return _metrics_failure(f"the job uid is over {UID_CHARS} characters or holds NUL")
            with self._transaction() as session:
                job = jobs.find_job(session, request.job_uuid)
                if job is None:
                    outcome.value = "invalid"
                    return _metrics_failure(f"no job with uid {request.job_uuid!r}")
                body = {
                    "job": JobOut.of(job).model_dump(mode="json"),
                    "reports": master_reports.reports(session, job),
                }
            return brain_pb2.JobMetricsResponse(
                response=brain_pb2.Response(success=True), job_metrics=json.dumps(body)
            )

        return self._served("get_job_metrics", handle, _metrics_failure("Brain failed"))

    # --- plumbing --------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        with self._sessions() as session:
            yield session
            session.commit()

    def _served(self, method: str, handle: Callable[[Outcome], object], fallback):
        """Run ``handle``, count the call by outcome and time it; an unexpected error is
        logged and answered with ``fallback`` (an empty answer), never raised."""
        outcome = Outcome()
        started = time.perf_counter()
        try:
            return handle(outcome)
        except Exception:
            outcome.value = "error"
            log.exception("gRPC %s failed; answered empty", method)
            return fallback
        finally:
            self._telemetry.grpc_requests.labels(method, outcome.value).inc()
            self._telemetry.grpc_latency.labels(method).observe(time.perf_counter() - started)


def _response(request, answer: Answer):
    response = brain_pb2.OptimizeResponse(
        response=brain_pb2.Response(success=answer.plan is not None, reason=answer.reason)
    )
    if answer.plan is None or answer.plan.is_empty:
        return response
    message = response.job_optimize_plans.add()
    message.timestamp = int(time.time())
    message.job.uid = request.jobs[0].uid
    # The master prints the whole plan message in its log: say where it came from.
    message.job.state.customized_data["brain_plan_id"] = str(answer.plan_id)
    message.job.state.customized_data["reasons"] = " | ".join(answer.reasons)
    resource = message.resource
    for role, group in answer.plan.groups.items():
        entry = resource.task_group_resources[role]
        entry.count = group.count
        entry.resource.cpu = group.cpu
        entry.resource.memory = group.memory_bytes
    for name, size in answer.plan.pods.items():
        resource.pod_resources[name].cpu = size.cpu
        resource.pod_resources[name].memory = size.memory_bytes
    return response


def _metrics_failure(reason: str):
    return brain_pb2.JobMetricsResponse(response=brain_pb2.Response(success=False, reason=reason))


def _as_dict(message) -> dict:
    """The fields a message sets, as plain JSON values (int64 stays a number)."""
    values = {}
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry:
            values[descriptor.name] = dict(value)
        elif descriptor.is_repeated:
            values[descriptor.name] = list(value)
        else:
            values[descriptor.name] = value
    return values


def _json_object(text: str) -> dict | None:
    """The JSON object ``text`` holds, or None: not JSON, not an object, or holding NaN
    or an infinity (Python's parser takes them; PostgreSQL's json refuses them, and so
    does REST)."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
        return value if isinstance(value, dict) and _finite(value) else None
    except (ValueError, RecursionError):
        return None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(value) -> bool:
    """Whether every number in a JSON-like value is finite (1e999 parses as inf)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True
