"""``get_job_metrics``: what Brain knows of a job, as the JSON text DLRover's client reads:
the job as REST shows it, and the reports its master sent."""

from __future__ import annotations

import json

from sqlalchemy.orm import Session, sessionmaker

from api.dlrover.report_checks import check_uid
from api.dlrover.transaction import transaction
from api.schemas.jobs import JobOut
from brain.errors import job_not_found
from brain.services import master_reports


def job_metrics(session_factory: sessionmaker[Session], uid: str) -> str:
    check_uid(uid)
    with transaction(session_factory) as session:
        job = master_reports.job_of_master(session, uid, None)
        if job is None:
            raise job_not_found(uid)
        body = {
            "job": JobOut.of(job).model_dump(mode="json"),
            "reports": master_reports.reports(session, job),
        }
    return json.dumps(body)
