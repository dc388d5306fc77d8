"""The replay: earlier runs only, in the right order, and the same figures every time."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import pytest

from brain.lab.backtest.baselines import RequestAsGiven
from brain.lab.backtest.engine import replay
from brain.lab.backtest.runner import Options, backtest
from brain.optimizing import load_registry
from brain.replay.runs import Run, Submission
from tests.builders.traces import trace

# Input order deliberately not time order; workloads interleave; a and b each have two
# runs on one day, which must follow the input order. The request carries the input
# position, so a run can be recognised from its submission.
ROWS = [
    {"workload": w, "day": day, "mem_max": peak, "req_memory_mib": 1000 + i}
    for i, (w, day, peak) in enumerate(
        [
            ("a", "2024-01-03", 300),
            ("b", "2024-01-01", 900),
            ("a", "2024-01-01", 100),
            ("a", "2024-01-02", 200),
            ("b", "2024-01-01", 950),
            ("a", "2024-01-02", 250),
            ("b", "2024-01-05", 990),
        ]
    )
]


@dataclass
class Spy:
    """Records what it was shown; sizes every run at 1 MiB."""

    name: str = "spy"
    resources: frozenset[str] = frozenset({"memory"})
    seen: list[tuple[Submission, list[Run]]] = field(default_factory=list)

    def recommend(self, job: Submission, history: Sequence[Run]) -> Mapping[str, float | None]:
        self.seen.append((job, list(history)))
        return {"memory": 1.0}


def input_position(job: Submission) -> int:
    return int(job.req_memory_mib - 1000)


def test_each_run_sees_exactly_the_earlier_runs_of_its_workload():
    spy = Spy()
    replay(trace(ROWS), [spy])
    assert sorted(input_position(job) for job, _ in spy.seen) == list(range(len(ROWS)))
    for job, history in spy.seen:
        me = input_position(job)
        key = (ROWS[me]["day"], me)
        same_workload = [i for i, r in enumerate(ROWS) if r["workload"] == job.workload]
        expected = sorted(
            (i for i in same_workload if (ROWS[i]["day"], i) < key),
            key=lambda i: (ROWS[i]["day"], i),
        )
        assert [input_position(h.submission) for h in history] == expected


def test_ties_on_the_time_column_follow_input_order():
    spy = Spy()
    replay(trace(ROWS), [spy])
    a_histories = [[h.mem_max for h in hist] for job, hist in spy.seen if job.workload == "a"]
    # a: day 1 (100), day 2 in input order (200 then 250), day 3 (300)
    assert a_histories == [[], [100], [100, 200], [100, 200, 250]]


def test_the_recommender_is_not_shown_the_usage_of_the_run_it_sizes():
    spy = Spy()
    replay(trace(ROWS), [spy])
    job, _ = spy.seen[0]
    assert not any(name in asdict(job) for name in ("mem_max", "cpu_p95", "gpu_mem_mib_max"))


def test_recommender_names_must_be_unique():
    with pytest.raises(ValueError, match="unique"):
        replay(trace(ROWS), [RequestAsGiven(), RequestAsGiven()])


def test_two_backtests_of_the_same_input_give_the_same_figures():
    rows = [
        {
            "workload": f"w{w}",
            "day": f"2024-01-{d:02d}",
            "mem_max": 100 + 37 * ((w * d) % 7),
            "cpu_p95": 0.1 * ((w + d) % 5),
            "cpu_max": 0.2 * ((w + d) % 5) + 0.1,
        }
        for w in range(3)
        for d in range(1, 11)
    ]
    registry = load_registry()
    first = backtest(trace(rows), registry, Options(sweep=True))
    second = backtest(trace(rows), registry, Options(sweep=True))
    figures = [
        json.dumps([asdict(r) for r in o.rows]) + json.dumps([asdict(c) for c in o.curves])
        for o in (first, second)
    ]
    assert figures[0] == figures[1]
    assert {r.name for r in first.rows} >= {"request", "learned_margin", "gpu_cpu", "startup"}
