import logging
import re
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from annotated_types import Ge, Le
from pydantic import BaseModel

from brain.config import Settings
from brain.domain import Stage
from brain.optimizing import Changes, OptimizerRegistry, load_registry
from brain.optimizing.changes import ANYTHING, ContextInput, changes_of, default_position, reads_of
from brain.optimizing.pipeline import select_optimizers, stage_pipeline
from brain.optimizing.registry import ENTRY_POINT_GROUP, describe
from brain.reference import optimizers_reference

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


# The default pipelines as docs/optimizers.md lists them, in the order they run.
DOCUMENTED_DEFAULTS = {
    "create": ["startup", "gpu_cpu", "learned_margin"],
    "oom": ["oom_recovery"],
    "estimate": ["estimate"],
    "running": [
        "hot_ps",
        "ps_scaling",
        "oom_risk",
        "worker_tuning",
        "cluster_shortage",
        "slow_node",
    ],
}


class NoSettings(BaseModel):
    pass


class UndeclaredOptimizer:
    """Declares neither its changes nor a default place."""

    name = "undeclared"
    stages = frozenset({Stage.running})
    Settings = NoSettings

    def propose(self, context, settings):
        raise AssertionError("never called")


def placed(name, at):
    """An optimizer declaring a place ``at`` in the running stage's default pipeline."""
    return type(
        name,
        (UndeclaredOptimizer,),
        {"name": name, "default_order": {Stage.running: at}, "__doc__": "Placed."},
    )()


def test_the_default_pipelines_are_the_documented_ones():
    registry = load_registry()
    assert registry.default_pipelines() == DOCUMENTED_DEFAULTS
    # unset, the settings run them; `learned_peak` and `memory_release` only when asked
    for stage in Stage:
        chosen = select_optimizers(registry, stage, None, Settings())
        assert [o.name for o in chosen] == DOCUMENTED_DEFAULTS[stage.value]


def test_the_docs_table_lists_the_default_pipelines_in_order():
    page = (Path(__file__).resolve().parents[2] / "docs" / "optimizers.md").read_text()
    table = page.split("\n## ")[0]
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \| [^|]* \|$", table, re.MULTILINE)
    listed = {stage: re.findall(r"`(\w+)`", cell) for stage, cell in rows}
    assert listed == DOCUMENTED_DEFAULTS


def test_a_default_pipeline_runs_by_declared_place_then_name():
    registry = OptimizerRegistry([placed("b", 20), placed("c", 10), placed("a", 20)])
    registry.add(UndeclaredOptimizer())
    assert registry.default_pipeline(Stage.running) == ["c", "a", "b"]
    assert registry.default_pipeline(Stage.create) == []
    assert registry.default_pipelines() == {"running": ["c", "a", "b"]}


def test_configured_stages_replace_the_defaults_and_a_left_out_stage_runs_none():
    registry = load_registry()
    settings = Settings(stage_optimizers={"running": ["worker_tuning", "hot_ps"]})
    assert stage_pipeline(registry, settings, Stage.running) == ["worker_tuning", "hot_ps"]
    assert stage_pipeline(registry, settings, Stage.create) == []


def test_a_plugin_that_declares_nothing_may_change_anything_and_runs_only_when_asked():
    optimizer = UndeclaredOptimizer()
    assert changes_of(optimizer) == ANYTHING
    assert changes_of(optimizer).sets_group("any role") and changes_of(optimizer).migrates("ps")
    assert default_position(optimizer, Stage.running) is None
    info = describe(optimizer)
    assert info.changes == {"groups": ["*"], "nodes": ["*"]} and info.default_order == {}


def test_a_plugin_that_declares_no_reads_is_given_every_costly_input():
    assert reads_of(UndeclaredOptimizer()) == frozenset(ContextInput)
    assert reads_of(declaring("reads_none", reads=frozenset())()) == frozenset()


def test_only_memory_release_reads_the_memory_peaks():
    registry = load_registry()
    reading = [n for n in registry.names() if reads_of(registry.get(n))]
    assert reading == ["memory_release"]
    assert reads_of(registry.get("memory_release")) == {ContextInput.memory_peaks}


def test_the_declarations_are_described():
    info = {i.name: i for i in load_registry().info()}
    assert info["hot_ps"].changes == {"groups": [], "nodes": ["ps"]}
    assert info["hot_ps"].default_order == {"running": 10}
    assert info["learned_margin"].changes == {"groups": ["*"], "nodes": []}
    assert info["learned_peak"].default_order == {}


def test_the_docs_reference_states_each_optimizers_declarations():
    text = optimizers_reference(load_registry())
    hot_ps = text.split("### `hot_ps`")[1].split("###")[0]
    assert (
        "Stages: `running`. Runs by default at: `running` (position 10). "
        "Sets the groups of: none; migrates nodes of: `ps`." in hot_ps
    )
    peak = text.split("### `learned_peak`")[1].split("###")[0]
    assert "Runs by default at: none. Sets the groups of: every role;" in peak


def declaring(name, **declarations):
    """An optimizer class (running stage) with these declarations, for entry points."""
    return type(name, (UndeclaredOptimizer,), {"name": name, **declarations})


NO_ORDER = declaring("no_order", default_order=None)
ORDER_FOR_ANOTHER_STAGE = declaring("other_stage", default_order={Stage.create: 5})
ORDER_NOT_A_NUMBER = declaring("not_a_number", default_order={Stage.running: "5"})
CHANGES_AS_A_DICT = declaring("dict_changes", changes={"groups": ["ps"]})
READS_A_NAME = declaring("reads_a_name", reads=frozenset({"memory_peaks"}))
READS_A_STRING = declaring("reads_a_string", reads="memory_peaks")
WELL_DECLARED = declaring(
    "well_declared",
    default_order={Stage.running: 5},
    changes=Changes(groups=frozenset({"ps"})),
    reads=frozenset({ContextInput.memory_peaks}),
)


def test_a_plugin_with_a_malformed_declaration_is_skipped_and_the_stage_still_runs(caplog):
    caplog.set_level(logging.ERROR)
    names = [
        "NO_ORDER",
        "ORDER_FOR_ANOTHER_STAGE",
        "ORDER_NOT_A_NUMBER",
        "CHANGES_AS_A_DICT",
        "READS_A_NAME",
        "READS_A_STRING",
    ]
    registry = load_registry(
        [entry_point(name.lower(), f"{__name__}:{name}") for name in [*names, "WELL_DECLARED"]]
    )
    assert registry.names() == ["well_declared"]
    assert registry.default_pipeline(Stage.running) == ["well_declared"]
    for why in [
        "default_order is a NoneType, not a mapping",
        "default_order names <Stage.create: 'create'>, a stage it does not serve",
        "default_order's position for <Stage.running: 'running'> is not a whole number",
        "changes is a dict, not a Changes",
        "reads is a frozenset, not a set of ContextInput",
        "reads is a str, not a set of ContextInput",
    ]:
        assert why in caplog.text
