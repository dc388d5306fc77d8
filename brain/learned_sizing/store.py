"""Versioned model files: ``brain train`` writes them, ``brain serve`` loads the newest.

A model is two files in the model directory (``BRAIN_MODEL_DIR``): ``peak-<version>.pkl``
(the fitted ``PeakModel``, pickled) and ``peak-<version>.json`` (what it is: version,
training period, runs, figures, scikit-learn version). The version is the training
time, ``YYYYMMDDTHHMMSSZ``, so the newest sorts last. Only files Brain wrote into its
own directory are unpickled: a pickle runs code when loaded. ``FORMAT`` changes when
the pickled classes do; files of another format are skipped (retrain to replace them).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain.learned_sizing.model import PeakModel

log = logging.getLogger(__name__)

PREFIX = "peak-"
# 2: the trees are stored as numpy arrays (trees.FlatTrees).
FORMAT = 2


@dataclass(frozen=True)
class StoredModel:
    version: str
    model_path: Path
    meta: dict[str, Any]


def describe(model: PeakModel) -> dict[str, Any]:
    """What the JSON beside a model says."""
    import sklearn

    return {
        "format": FORMAT,
        "version": model.version,
        "trained_at": model.trained_at,
        "period_start": model.period_start,
        "period_end": model.period_end,
        "runs": model.runs,
        "resources": {
            name: {"parts": resource.parts} for name, resource in model.resources.items()
        },
        "figures": model.figures,
        "sklearn": sklearn.__version__,
    }


def save(model: PeakModel, directory: Path) -> StoredModel:
    """Write ``model`` into ``directory`` (created if needed); atomic per file."""
    directory.mkdir(parents=True, exist_ok=True)
    meta = describe(model)
    model_path = directory / f"{PREFIX}{model.version}.pkl"
    _write(model_path, pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    _write(directory / f"{PREFIX}{model.version}.json", json.dumps(meta, indent=2).encode())
    return StoredModel(model.version, model_path, meta)


def newest(directory: Path) -> StoredModel | None:
    """The newest complete model of ``directory`` (both files present, this ``FORMAT``)."""
    if not directory.is_dir():
        return None
    for meta_path in sorted(directory.glob(f"{PREFIX}*.json"), reverse=True):
        model_path = meta_path.with_suffix(".pkl")
        if model_path.exists():
            meta = json.loads(meta_path.read_text())
            if meta.get("format") != FORMAT:
                log.warning(
                    "skipping %s: model format %s, not %s", meta_path, meta.get("format"), FORMAT
                )
                continue
            return StoredModel(meta["version"], model_path, meta)
    return None


def load(stored: StoredModel) -> PeakModel:
    with stored.model_path.open("rb") as f:
        model = pickle.load(f)  # our own file in our own directory (see the docstring)
    if not isinstance(model, PeakModel):
        raise TypeError(f"{stored.model_path} does not hold a PeakModel")
    return model


def load_newest(directory: Path) -> PeakModel | None:
    """The newest model of ``directory``; None when there is none or it cannot be read."""
    stored = newest(directory)
    if stored is None:
        return None
    try:
        return load(stored)
    except Exception:  # a broken file must not stop the service: it falls back
        log.exception("cannot load model %s; sizing falls back to learned_margin", stored)
        return None


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
