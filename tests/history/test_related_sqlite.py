"""Related history on the embedded SQLite default: the same rules as on PostgreSQL."""

from __future__ import annotations

from brain.db.engine import make_engine, make_session_factory
from brain.history.related import MATCH_NAME, MATCH_USER_DATASET, RelatedQuery, find_related
from brain.summaries import summarize_job
from tests.builders import flat_job, recent_hour


def test_related_history_on_sqlite_takes_the_first_rule_that_finds_runs(sqlite_url):
    # The related-jobs union (window over rules, unsummarized jobs beside them) is
    # plain SQL that SQLite runs too.
    engine = make_engine(sqlite_url)
    try:
        with make_session_factory(engine)() as session:
            for uid, user in (("mine", "alice"), ("bobs", "bob")):
                job = flat_job(
                    session, uid, start=recent_hour(2), cpu_request=4, cpu_used=2, user=user
                )
                summarize_job(session, job)
            flat_job(session, "fresh", start=recent_hour(1), cpu_request=4, cpu_used=1)
            session.commit()

            keys = {"group_key": None, "window_days": 30, "limit": 10}
            by_user = find_related(
                session, RelatedQuery(user="alice", dataset="imagenet", name="x", **keys)
            )
            by_name = find_related(
                session, RelatedQuery(user="carol", dataset="coco", name="resnet", **keys)
            )

            # alice+imagenet: her summarized run; "fresh" (alice's too) has no summary yet.
            assert (by_user.match, [h.job.uid for h in by_user.jobs]) == (
                MATCH_USER_DATASET,
                ["mine"],
            )
            assert [j.uid for j in by_user.unsummarized] == ["fresh"]
            # Nobody ran carol's dataset: the name rule finds every resnet run.
            assert by_name.match == MATCH_NAME
            assert sorted(h.job.uid for h in by_name.jobs) == ["bobs", "mine"]
    finally:
        engine.dispose()
