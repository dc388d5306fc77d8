"""The learned model is shared by every namespace, so no namespace may steer it: it
trains only on runs vouched for (registered by a token for every namespace, or reached
by a job master), and each (namespace, group, role) is a workload of its own. The model
is a function of the run table ``role_runs`` reads, so an unchanged table is an
unchanged model.
"""

from __future__ import annotations

import pandas as pd

from brain.retraining.runs import role_runs
from tests.builders import bearer, token_secret
from tests.builders.tenancy import A, B, finished_run


def test_a_namespace_tokens_runs_under_another_teams_group_leave_the_training_runs(
    teams, db, settings
):
    client, tokens = teams
    platform = bearer(token_secret(db, "platform", "write"))
    for i in range(3):
        finished_run(client, platform, f"b-run-{i}", B, cpu=12, memory_mib=50_000, days_ago=3 + i)
    before = role_runs(settings.database_url)
    # B's three runs, per role (ps and worker), as workloads of team-b's group.
    assert sorted(before["workload"].unique()) == [f"{B}:bob/ctr/ps", f"{B}:bob/ctr/worker"]
    assert len(before) == 6

    # Team A registers ten tiny runs under B's user, dataset and group: not one trains.
    for i in range(10):
        finished_run(client, tokens[A], f"a-fake-{i}", A, cpu=0.1, memory_mib=100, days_ago=1)
    pd.testing.assert_frame_equal(role_runs(settings.database_url), before)

    # The same runs vouched for would train, as team-a's workloads, not as B's history.
    for i in range(2):
        finished_run(client, platform, f"a-real-{i}", A, cpu=0.1, memory_mib=100, days_ago=1)
    after = role_runs(settings.database_url)
    mine = after[after["workload"].str.startswith(f"{B}:")].drop(columns="seq")
    mine = mine.sort_values(["workload", "start"]).reset_index(drop=True)
    theirs = before.drop(columns="seq").sort_values(["workload", "start"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, theirs)
    assert sorted(after["workload"].unique()) == sorted(
        [f"{B}:bob/ctr/ps", f"{B}:bob/ctr/worker", f"{A}:bob/ctr/ps", f"{A}:bob/ctr/worker"]
    )
