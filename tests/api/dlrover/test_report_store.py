"""What a master's exit reason does to its job, over DLRover 0.6.1's own reasons."""

from __future__ import annotations

from dlrover.python.common.constants import JobExitReason

from api.dlrover.report_store import job_exit

REASONS = {
    name: value
    for name, value in vars(JobExitReason).items()
    if not name.startswith("_") and isinstance(value, str)
}


def test_completed_succeeds_the_oom_reasons_fail_for_memory_the_rest_fail():
    assert len(REASONS) == 14
    ends = {value: (job_exit(value).succeeded, job_exit(value).oom) for value in REASONS.values()}
    assert ends.pop("Completed") == (True, False)
    assert {ends.pop(r) for r in ("WorkerOOM", "PSOOM", "EvaluatorOOM")} == {(False, True)}
    assert set(ends.values()) == {(False, False)} and len(ends) == 10
    assert job_exit("HangError").reason == "HangError"
