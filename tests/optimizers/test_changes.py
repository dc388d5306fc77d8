"""What a proposal changes beyond its optimizer's declaration (``undeclared``)."""

from __future__ import annotations

from brain.domain import RoleSpec
from brain.optimizing import ANY_ROLE, Changes, NodeChange, Proposal
from brain.optimizing.changes import undeclared

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
