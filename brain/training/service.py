"""The learned recommender inside ``brain serve``: load the newest model, retrain on a
schedule.

``ModelHolder`` holds the model the API hands to optimizers (through the optimizer
context) and swaps it atomically. At start the newest model of ``BRAIN_MODEL_DIR`` is
loaded; with ``BRAIN_TRAIN_INTERVAL_S`` a thread retrains from the database (every role
of the succeeded jobs' summaries) that often, stores the new version and swaps it in.
Without any model, ``learned_peak`` falls back to ``learned_margin``. Several replicas
retraining at once each store a version; the newest wins, as on a restart.
"""

from __future__ import annotations

import logging
from pathlib import Path

from brain.optimizing.sizing import SizingModel
from brain.periodic import Periodic

log = logging.getLogger(__name__)


class ModelHolder:
    """The current sizing model (None: none trained yet)."""

    def __init__(self, model: SizingModel | None = None) -> None:
        self.current = model  # one reference assignment: readers never see half a model


def load(directory: Path) -> ModelHolder:
    from brain.recommending import store

    model = store.load_newest(directory)
    if model is None:
        log.info("no learned model in %s: learned_peak sizes with learned_margin", directory)
    else:
        log.info("loaded learned model %s from %s", model.version, directory)
    return ModelHolder(model)


def retrain_once(database_url: str, directory: Path, holder: ModelHolder) -> str | None:
    """Train on every succeeded job of the database, store it, swap it in; its version."""
    from brain.backtest.trace import TraceError
    from brain.recommending import store
    from brain.recommending.training import train
    from brain.training.runs import role_runs

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


def attach(app) -> None:
    """App hook (``brain.app_hooks``): the model for the app's lifetime, retrained when
    ``BRAIN_TRAIN_INTERVAL_S`` is set."""
    settings = app.state.settings
    directory = Path(settings.model_dir)
    app.state.sizing_models = load(directory)
    if settings.train_interval_s:
        models = app.state.sizing_models
        trainer = Periodic(
            "model retraining",
            settings.train_interval_s,
            lambda: retrain_once(settings.database_url, directory, models),
        )
        trainer.start()
        app.state.shutdown_hooks.append(trainer.stop)
