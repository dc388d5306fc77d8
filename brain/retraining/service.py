"""The learned recommender inside ``brain serve``: load the newest model, retrain on a
schedule.

``ModelHolder`` holds the model the API hands to optimizers (through the optimizer
context) and swaps it atomically. At start the newest model of ``BRAIN_MODEL_DIR`` is
loaded; with ``BRAIN_TRAIN_INTERVAL_S`` a thread retrains from the database (every role
of the succeeded jobs' summaries) that often, stores the new version and swaps it in.
Only the process leading the background work (brain.leadership) retrains; every other
worker process and replica of the database sees the new version appear in the model
directory (``ModelWatch``, every ``MODEL_CHECK_S``) and loads it. Without any model,
``learned_peak`` falls back to ``learned_margin``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from brain.config import Settings
from brain.optimizing.sizing_model import SizingModel
from brain.periodic import Periodic

log = logging.getLogger(__name__)

# How often a process that does not retrain looks for a newer model: one stat() call.
MODEL_CHECK_S = 10.0


class ModelHolder:
    """The current sizing model (None: none trained yet)."""

    def __init__(self, model: SizingModel | None = None) -> None:
        self.current = model  # one reference assignment: readers never see half a model


def load(directory: Path) -> ModelHolder:
    from brain.learned_sizing import store

    model = store.load_newest(directory)
    if model is None:
        log.info("no learned model in %s: learned_peak sizes with learned_margin", directory)
    else:
        log.info("loaded learned model %s from %s", model.version, directory)
    return ModelHolder(model)


def retrain_once(database_url: str, directory: Path, holder: ModelHolder) -> str | None:
    """Train on every succeeded job of the database, store it, swap it in; its version."""
    from brain.learned_sizing import store
    from brain.learned_sizing.training import train
    from brain.replay.trace import TraceError
    from brain.retraining.runs import role_runs

    try:
        table = role_runs(database_url)
    except TraceError as exc:
        log.info("no model trained: %s", exc)
        return None
    model = train(table)
    if not model.resources:
        log.info("no model trained: too few runs (%d)", len(table))
        return None
    store.save(model, directory)
    holder.current = model
    log.info("trained learned model %s on %d runs", model.version, model.runs)
    return model.version


class ModelWatch:
    """Loads the newest model of ``directory`` into ``holder`` when the directory
    changed (its mtime moves when ``store.save`` renames a file into it) and the newest
    version is not the one held."""

    def __init__(self, directory: Path, holder: ModelHolder) -> None:
        self._directory = directory
        self._holder = holder
        # Not a real mtime: the first check compares versions, so a model saved between
        # the start's load and this watch is not missed.
        self._seen: int | None = -1

    def check(self) -> None:
        from brain.learned_sizing import store

        mtime_ns = self._mtime_ns()
        if mtime_ns == self._seen:
            return
        self._seen = mtime_ns
        stored = store.newest(self._directory)
        held = self._holder.current
        if stored is None or (held is not None and held.version == stored.version):
            return
        model = store.load_newest(self._directory)
        if model is not None:
            self._holder.current = model
            log.info("loaded learned model %s, trained by another process", model.version)

    def _mtime_ns(self) -> int | None:
        try:
            return self._directory.stat().st_mtime_ns
        except FileNotFoundError:
            return None


def start_learned_models(
    settings: Settings, leading: Callable[[], bool]
) -> tuple[ModelHolder, list[Periodic]]:
    """For ``brain serve`` (``api.server``): the model for the process's lifetime and,
    when ``BRAIN_TRAIN_INTERVAL_S`` is set, the started threads that retrain it (while
    ``leading()``) and reload what another process trained."""
    directory = Path(settings.model_dir)
    models = load(directory)
    if not settings.train_interval_s:
        return models, []
    watch = ModelWatch(directory, models)
    trainer = Periodic(
        "model retraining",
        settings.train_interval_s,
        lambda: retrain_once(settings.database_url, directory, models),
        only_if=leading,
    )
    reloader = Periodic("model reload", MODEL_CHECK_S, watch.check)
    for periodic in (trainer, reloader):
        periodic.start()
    return models, [trainer, reloader]
