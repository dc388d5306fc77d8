"""What a proposal changes beyond its optimizer's declaration (``undeclared``), and the
costly context inputs an optimizer declares it reads (``reads_of``)."""

from __future__ import annotations

import pytest

from brain.domain import RoleSpec, Stage
from brain.optimizing import ANY_ROLE, Changes, ContextInput, NodeChange, Proposal, reads_of
from brain.optimizing.changes import check_declarations, undeclared

WORKER_GROUP = Changes(groups=frozenset({"worker"}))


def test_within_the_declaration_nothing_is_undeclared():
    proposal = Proposal(
        roles={"worker": RoleSpec(count=3)},
        launch=[NodeChange(role="worker")],
        remove=[NodeChange(role="worker", name="w-2")],
    )
    assert undeclared(WORKER_GROUP, proposal) == []
    anything = Changes(groups=frozenset({ANY_ROLE}), nodes=frozenset({ANY_ROLE}))
    assert undeclared(anything, Proposal(migrate=[NodeChange(role="chief", name="c-0")])) == []


def test_each_kind_beyond_it_is_named_once():
    proposal = Proposal(
        roles={"worker": RoleSpec(count=3), "ps": RoleSpec(cpu=4)},
        launch=[NodeChange(role="ps"), NodeChange(role="ps")],
        migrate=[NodeChange(role="worker", name="w-0", cpu=8)],
    )
    assert undeclared(WORKER_GROUP, proposal) == ["ps group", "worker node w-0"]


def test_the_ps_tiers_addresses_are_a_ps_group_change():
    proposal = Proposal(roles={"worker": RoleSpec(count=3)}, ps_hosts=["ps-0:2222"])
    assert undeclared(WORKER_GROUP, proposal) == ["ps group"]
    assert undeclared(Changes(groups=frozenset({"ps", "worker"})), proposal) == []


class Reading:
    name = "reading"
    stages = frozenset({Stage.running})


def test_the_costly_inputs_an_optimizer_reads_default_to_every_one():
    assert reads_of(Reading()) == frozenset(ContextInput)
    declared = type("Declared", (Reading,), {"reads": frozenset({ContextInput.memory_peaks})})
    check_declarations(declared())
    assert reads_of(declared()) == {ContextInput.memory_peaks}
    for bad in ({"memory_peaks"}, "memory_peaks", [ContextInput.memory_peaks]):
        with pytest.raises(TypeError, match="not a set of ContextInput"):
            check_declarations(type("Bad", (Reading,), {"reads": bad})())
