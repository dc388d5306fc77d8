"""Worker processes that do not retrain load the version the leader stored
(brain.retraining.service.ModelWatch)."""

from __future__ import annotations

from datetime import UTC, datetime

from brain.learned_sizing import store
from brain.learned_sizing.training import train
from brain.retraining.service import ModelHolder, ModelWatch
from tests.builders.traces import random_memory_runs


def test_a_newer_model_in_the_directory_is_loaded_once(tmp_path):
    runs = random_memory_runs(40, 10, seed=3)
    first = train(runs, now=datetime(2026, 1, 1, tzinfo=UTC))
    second = train(runs, now=datetime(2026, 1, 2, tzinfo=UTC))
    holder = ModelHolder(None)
    watch = ModelWatch(tmp_path / "models", holder)
    watch.check()  # no directory yet
    assert holder.current is None

    store.save(first, tmp_path / "models")
    watch.check()
    loaded = holder.current
    assert loaded.version == "20260101T000000Z"
    watch.check()  # nothing changed: the same object, not loaded again
    assert holder.current is loaded

    # The leader swaps its own model in and stores it: nothing to load.
    holder.current = second
    store.save(second, tmp_path / "models")
    watch.check()
    assert holder.current is second

    # Another process's holder, still on the first version, loads the second.
    follower = ModelHolder(loaded)
    ModelWatch(tmp_path / "models", follower).check()
    assert follower.current.version == "20260102T000000Z"
