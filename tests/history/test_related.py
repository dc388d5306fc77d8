"""Related history: which jobs, in which order, built from summaries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brain.domain import utcnow
from brain.history.related import (
    MATCH_GROUP,
    MATCH_NAME,
    MATCH_USER_DATASET,
    RelatedQuery,
    find_related,
)
from brain.summaries import summarize_job
from brain.summaries.retention import delete_old_samples
from tests.builders import flat_job, recent_hour

WINDOW = {"window_days": 30, "limit": 10}


def find_related_by(session, **keys):
    return find_related(session, RelatedQuery(**keys))


def related_history(session, **keys):
    return find_related_by(session, **keys).jobs


def _job(session, uid, days_ago, **keys):
    job = flat_job(session, uid, start=recent_hour(days_ago), cpu_request=4, cpu_used=2, **keys)
    summarize_job(session, job)
    return job


def _uids(history):
    return [h.job.uid for h in history]


def test_same_user_and_dataset_most_recent_first(session):
    _job(session, "old", 5, user="alice", dataset="imagenet")
    _job(session, "new", 1, user="alice", dataset="imagenet")
    _job(session, "other-dataset", 2, user="alice", dataset="coco")
    _job(session, "other-user", 2, user="bob", dataset="imagenet")
    _job(session, "failed", 1, user="alice", dataset="imagenet", status="failed")
    _job(session, "too-old", 40, user="alice", dataset="imagenet")

    related = find_related_by(
        session, user="alice", dataset="imagenet", group_key=None, name=None, **WINDOW
    )

    assert related.match == MATCH_USER_DATASET
    assert _uids(related.jobs) == ["new", "old"]


def test_falls_back_to_group_then_name(session):
    _job(session, "group-run", 2, user="bob", name="bert", group_key="nlp/bert")
    _job(session, "name-run", 2, user="carol", name="bert", group_key="carol/bert")

    by_group = find_related_by(
        session, user="dave", dataset="wiki", group_key="nlp/bert", name="bert", **WINDOW
    )
    by_name = find_related_by(
        session, user="dave", dataset="wiki", group_key="dave/bert", name="bert", **WINDOW
    )
    nothing = find_related_by(
        session, user="dave", dataset="wiki", group_key="dave/gpt", name="gpt", **WINDOW
    )

    assert (by_group.match, _uids(by_group.jobs)) == (MATCH_GROUP, ["group-run"])
    assert by_name.match == MATCH_NAME
    assert sorted(_uids(by_name.jobs)) == ["group-run", "name-run"]
    assert (nothing.match, nothing.jobs) == (None, [])


def test_window_end_limit_and_gpu_type(session):
    _job(session, "a100-old", 3, gpu_type="A100")
    _job(session, "a100-new", 2, gpu_type="A100")
    _job(session, "v100", 1, gpu_type="V100")
    keys = {"user": "alice", "dataset": "imagenet", "group_key": None, "name": None}

    a100 = related_history(session, **keys, gpu_type="A100", window_days=30, limit=1)
    before = related_history(
        session, **keys, before=utcnow() - timedelta(days=2.5), window_days=30, limit=10
    )

    assert _uids(a100) == ["a100-new"]
    assert _uids(before) == ["a100-old"]


def test_nodes_come_from_summaries_and_survive_retention(session):
    # One node: 8 cores requested, 3 used throughout.
    job = flat_job(session, "r1", start=recent_hour(2), cpu_request=8, cpu_used=3)
    summarize_job(session, job)
    session.commit()
    delete_old_samples(session, older_than_days=1, now=utcnow() + timedelta(days=30))
    session.commit()

    [history] = related_history(
        session, user="alice", dataset="imagenet", group_key=None, name=None, **WINDOW
    )

    [node] = history.nodes
    assert (node.name, node.role, node.requested.cpu) == ("worker-0", "worker", 8)
    assert (node.cpu_mean, node.cpu_max, node.cpu_p95) == pytest.approx((3, 3, 3))
    assert node.memory_max_mib == 512
    assert history.job.duration_s == 3600


def test_only_the_namespaces_asked_for_and_no_namespace_is_one_of_its_own(session):
    _job(session, "a-run", 1, user="alice", dataset="imagenet", namespace="team-a")
    _job(session, "b-run", 2, user="alice", dataset="imagenet", namespace="team-b")
    _job(session, "bare-run", 3, user="alice", dataset="imagenet")
    # An unsummarized succeeded run of team-b must not be summarized for team-a either.
    flat_job(
        session,
        "b-fresh",
        start=recent_hour(1),
        cpu_request=4,
        cpu_used=2,
        user="alice",
        dataset="imagenet",
        namespace="team-b",
    )
    keys = {"user": "alice", "dataset": "imagenet", "group_key": None, "name": None, **WINDOW}

    def uids(namespaces):
        related = find_related_by(session, namespaces=namespaces, **keys)
        return _uids(related.jobs), sorted(j.uid for j in related.unsummarized)

    assert uids(frozenset({"team-a"})) == (["a-run"], [])
    assert uids(frozenset({None})) == (["bare-run"], [])
    assert uids(frozenset({"team-b", None})) == (["b-run", "bare-run"], ["b-fresh"])
    assert uids(frozenset()) == ([], [])
    assert uids(None) == (["a-run", "b-run", "bare-run"], ["b-fresh"])


def test_a_run_longer_than_believed_is_not_related_history(session):
    # 61 days of run, over the default 60: not believed; 59 days: believed
    for uid, days in (("too-long", 61), ("long", 59)):
        job = flat_job(
            session,
            uid,
            start=recent_hour(days + 1),
            hours=days * 24,
            cpu_request=4,
            cpu_used=2,
            user="alice",
            dataset="imagenet",
        )
        summarize_job(session, job)
    keys = {"user": "alice", "dataset": "imagenet", "group_key": None, "name": None}
    window = {"window_days": 90, "limit": 10}
    assert _uids(related_history(session, **keys, **window)) == ["long"]
    # with a setting of 70 days both are
    both = related_history(session, **keys, **window, max_run_s=70 * 86400)
    assert _uids(both) == ["long", "too-long"]  # both ended a day ago: newer id first
