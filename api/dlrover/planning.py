"""``optimize``: a DLRover request, answered with a stored Brain plan within its deadline.

The request is translated into a Brain call (``api.dlrover.stages``), the stage's
optimizers run and store a plan as REST's ``optimize`` does, and the plan is written the
way the master reads it (``api.dlrover.replies``). A request Brain cannot serve raises a
domain error (``api.dlrover.errors`` says how it is answered).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from sqlalchemy.orm import Session, sessionmaker

from api.dlrover.covered_oom import with_covering_fix
from api.dlrover.elasticjob_request import learn_request
from api.dlrover.elasticjobs import ElasticJobLookup
from api.dlrover.estimate_reuse import reusable_estimate
from api.dlrover.messages import OptimizeAsk, PlanAnswer
from api.dlrover.no_history import body_to_send
from api.dlrover.ps_hosts import ps_hosts_of
from api.dlrover.replies import to_dlrover
from api.dlrover.report_checks import check_namespace, check_pod_names, check_uid
from api.dlrover.stages import BrainCall, Reply, carries, translate
from api.dlrover.transaction import transaction
from brain.config import Settings
from brain.db.models import JobRow, ScalePlanRow
from brain.domain import PLAN_NOT_SERVED, Stage
from brain.errors import NotFound
from brain.optimizing import OptimizerRegistry
from brain.optimizing.changes import changes_of
from brain.optimizing.pipeline import stage_pipeline
from brain.optimizing.sizing_model import SizingModel
from brain.services import master_reports, plans
from brain.services.nodes import NodeRef
from brain.services.optimizer_context import current_roles, roles_in

log = logging.getLogger(__name__)


class Planner:
    def __init__(
        self,
        session_factory: sessionmaker[Session],
        registry: OptimizerRegistry,
        settings: Settings,
        sizing_model: Callable[[], SizingModel | None],
        elastic_jobs: ElasticJobLookup | None,
        summarize: Callable[[int], None],
    ) -> None:
        """``summarize`` summarizes a job after the answer (a finished job's late OOM)."""
        self._sessions = session_factory
        self._summarize = summarize
        self._registry = registry
        self._settings = settings
        self._sizing_model = sizing_model
        self._elastic_jobs = elastic_jobs
        # Plans are made here so that the handler can stop waiting at the deadline.
        self._workers = ThreadPoolExecutor(
            settings.grpc_optimize_workers, thread_name_prefix="brain-grpc-optimize"
        )

    def close(self) -> None:
        self._workers.shutdown(wait=True)

    def answer_in_time(self, ask: OptimizeAsk) -> PlanAnswer:
        """The answer to ``ask``, or an empty one after ``BRAIN_GRPC_OPTIMIZE_TIMEOUT_S``."""
        expired = threading.Event()
        future = self._workers.submit(self._answer, ask, expired)
        timeout_s = self._settings.grpc_optimize_timeout_s
        try:
            answer = future.result(timeout=timeout_s)
        except FutureTimeout:
            # Not started yet (all optimize workers busy): never started, so the queue
            # behind it is not kept waiting for an answer nobody reads. Started: it stores
            # its plan and marks it as computed too late.
            future.cancel()
            expired.set()
            log.warning(
                "optimize %s for %s took over %.1f s: answered with no plan",
                ask.stage,
                ask.uid or "?",
                timeout_s,
            )
            return PlanAnswer(None, "Brain did not answer in time; no plan", outcome="timeout")
        if answer.plan is None or answer.plan.is_empty:
            answer.outcome = "no_plan" if answer.plan_id is not None else "invalid"
        return answer

    def _answer(self, ask: OptimizeAsk, expired: threading.Event) -> PlanAnswer:
        if not ask.uid:
            log.warning("optimize %r without a job uid: no plan", ask.stage)
            return PlanAnswer(None, "no job uid in the request")
        check_uid(ask.uid)
        check_namespace(ask.namespace)
        check_pod_names(ask.oom_pods)
        call = translate(ask.stage, ask.phase, ask.oom_pods)
        with transaction(self._sessions) as session:
            answer, plan, stale = self._plan(session, ask.uid, ask.namespace, call)
            if expired.is_set() and plan is not None:
                plan.status_message = PLAN_NOT_SERVED
        if stale is not None:
            # Committed: the summary, computed after the answer, counts the kill.
            self._summarize(stale)
        return answer

    def _plan(
        self, session: Session, uid: str, namespace: str | None, call: BrainCall
    ) -> tuple[PlanAnswer, ScalePlanRow | None, int | None]:
        """The answer, the stored plan it is made of (None: no plan was made), and the
        id of a finished job whose summary the OOM recorded now made stale (else None)."""
        if call.stage == Stage.create:
            job = master_reports.ensure_running_job(session, uid, None, namespace)
            learn_request(session, job, self._elastic_jobs)
        else:
            job = master_reports.job_of_master(session, uid, namespace)
            if job is None:
                raise NotFound(f"Brain has never seen job {uid}")
        node = stale = None
        if call.oom_pod is not None:
            # Recorded before asking: the oom stage refuses (409 over REST) a node with no
            # recorded OOM; were it ever refused here, the answer is empty and names the
            # reason, as for any domain error.
            pod = call.oom_pod
            killed = NodeRef(pod.name, pod.role, pod.index)
            if master_reports.record_node_oom(session, job, killed):
                stale = job.id
            node = pod.name
        reused = reusable_estimate(session, job, call)
        optimized = (
            plans.Optimized(reused, None) if reused else self._optimize(session, job, call, node)
        )
        if optimized is None:
            reason = f"no optimizer of the {call.stage.value} stage's pipeline answers this request"
            return PlanAnswer(None, reason), None, stale
        plan, context = optimized.plan, optimized.context
        body = with_covering_fix(session, job, call, body_to_send(plan, call, context))
        roles = current_roles(session, job) if context is None else roles_in(context)
        dlrover_plan = to_dlrover(body, call.reply, roles, call.oom_pod)
        reasons = [f"{r.optimizer}: {r.message}" for r in plan.body.reasons]
        log.info("job %s: plan %d (%s) for DLRover: %s", uid, plan.id, call.stage, dlrover_plan)
        answer = PlanAnswer(dlrover_plan, f"Brain plan {plan.id}", plan.id, reasons)
        return answer, plan, stale

    def _optimize(
        self, session: Session, job: JobRow, call: BrainCall, node: str | None
    ) -> plans.Optimized | None:
        names = None
        if call.only_what_reply_carries:
            pipeline = stage_pipeline(self._registry, self._settings, call.stage)
            names = [name for name in pipeline if self._carried(name, call.reply)]
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

    def _carried(self, name: str, reply: Reply) -> bool:
        optimizer = self._registry.get(name)
        return optimizer is not None and carries(reply, changes_of(optimizer))
