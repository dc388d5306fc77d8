"""A job registered without roles, or never (first seen over gRPC), learns its request
from its ElasticJob when the Kubernetes lookup is configured (``BRAIN_K8S_LOOKUP``).

Stored as the job's roles, so later stages size from it too; a REST registration always
wins.
"""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from api.dlrover.elasticjobs import ElasticJobLookup
from brain.db.models import JobRow
from brain.services import master_reports

log = logging.getLogger(__name__)


def learn_request(session: Session, job: JobRow, lookup: ElasticJobLookup | None) -> None:
    if job.roles or lookup is None:
        return
    roles = lookup.requested_roles(job.uid)
    if roles:
        log.info("job %s: request read from its ElasticJob: %s", job.uid, roles)
        master_reports.adopt_requested_roles(session, job, roles)
