import logging
from importlib.metadata import EntryPoint

import pytest
from annotated_types import Ge, Le

from brain.optimizing import load_registry
from brain.optimizing.registry import ENTRY_POINT_GROUP

OURS = {
    "startup",
    "oom_recovery",
    "estimate",
    "hot_ps",
    "oom_risk",
    "worker_tuning",
    "gpu_cpu",
    "slow_node",
    "memory_release",
}


class NoSettingsOptimizer:
    """Lacks Settings, so the registry must refuse it."""

    name = "no_settings"
    stages = frozenset()

    def propose(self, context, settings):
        raise AssertionError("never called")


def entry_point(name, value):
    return EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)


def test_installed_registry_has_all_our_optimizers():
    registry = load_registry()
    assert set(registry.names()) >= OURS


def test_broken_plugins_are_skipped_and_logged(caplog):
    caplog.set_level(logging.ERROR)
    registry = load_registry(
        [
            entry_point("missing", "optimizers.no_such_module:Nope"),
            entry_point("no_settings", f"{__name__}:NoSettingsOptimizer"),
            entry_point("hot_ps", "optimizers.hot_ps:HotPsOptimizer"),
        ]
    )
    assert registry.names() == ["hot_ps"]
    logged = caplog.text
    assert "missing" in logged and "no_settings" in logged


@pytest.mark.parametrize("name", sorted(OURS))
def test_settings_fields_are_described_and_bounded(name):
    optimizer = load_registry().get(name)
    assert (type(optimizer).__doc__ or "").strip()
    for field_name, field in optimizer.Settings.model_fields.items():
        assert field.description, field_name
        if field.annotation in (int, float):
            kinds = {type(m) for m in field.metadata}
            assert {Ge, Le} <= kinds, field_name
