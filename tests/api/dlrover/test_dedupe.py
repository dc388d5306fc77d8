"""The recent-report cache: bounded by count, oldest out first, a repeat kept fresh."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from api.dlrover.dedupe import SeenReports


def _key(n: int) -> tuple[str, str, bytes]:
    return ("job", "customized_data", n.to_bytes(32, "big"))


def test_the_oldest_key_goes_first_and_a_repeat_stays():
    seen = SeenReports(capacity=2)
    seen.remember(_key(1))
    seen.remember(_key(2))
    assert seen.seen_before(_key(1))  # 1 is now the newest, 2 the oldest
    seen.remember(_key(3))
    assert [seen.seen_before(_key(n)) for n in (1, 2, 3)] == [True, False, True]


def test_a_forgotten_report_is_written_again():
    seen = SeenReports(capacity=2)
    seen.remember(_key(1))
    seen.forget(_key(1))
    seen.forget(_key(9))  # never seen: nothing to do
    assert not seen.seen_before(_key(1))
    assert list(seen) == []


@given(st.lists(st.integers(0, 50), max_size=200), st.integers(1, 10))
def test_it_keeps_the_most_recently_seen_keys_up_to_its_capacity(keys, capacity):
    """Used as the intake uses it (a key not seen before is remembered), it holds the
    ``capacity`` keys seen last, least recent first."""
    seen = SeenReports(capacity)
    recent: list[int] = []
    for n in keys:
        if not seen.seen_before(_key(n)):
            seen.remember(_key(n))
        recent = [*[m for m in recent if m != n], n][-capacity:]
    assert list(seen) == [_key(n) for n in recent]
