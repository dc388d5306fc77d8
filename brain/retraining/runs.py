"""Training runs from Brain's own database: every role of every succeeded job vouched for.

Each (namespace, group key, role) is one workload, so a model learns from parameter
servers, chiefs and workers alike; each job is one run of it, read from the stored
summaries as ``brain backtest --from-db --role ROLE`` reads it (largest node's peaks,
request per node).

The model is shared by every namespace, so it learns only from jobs vouched for
(``JobRow.vouched_at``): registered by a token for every namespace, or reached by a job
master. A namespace-limited token's runs never train it, so no namespace can steer the
sizes the model gives another.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.engine import make_engine
from brain.db.models import RoleSummaryRow
from brain.replay.db_source import DatabaseRuns
from brain.replay.resources import DEFAULT_GPU_MEMORY_MIB
from brain.replay.trace import TraceError, check_normalized


def role_runs(database_url: str, gpu_memory_mib: float = DEFAULT_GPU_MEMORY_MIB) -> pd.DataFrame:
    """The normalized run table of every role of the succeeded, summarized jobs vouched
    for."""
    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            roles = sorted(set(session.scalars(select(RoleSummaryRow.role).distinct())))
            tables = []
            for role in roles:
                source = DatabaseRuns(
                    database_url, role=role, gpu_memory_mib=gpu_memory_mib, vouched_only=True
                )
                try:
                    table = source.read(session)
                except TraceError:
                    continue  # no succeeded job with this role
                tables.append(table.assign(workload=table["workload"] + "/" + role))
    finally:
        engine.dispose()
    if not tables:
        raise TraceError("no succeeded job with a summary in the database")
    return check_normalized(
        pd.concat(tables, ignore_index=True).assign(seq=lambda t: range(len(t)))
    )
