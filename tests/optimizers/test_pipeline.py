"""One pipeline for plans and suggestions: select, configure, propose, combine, bound."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from brain.config import Settings
from brain.domain import Limits, Resources, RoleSpec, Stage
from brain.errors import InvalidInput
from brain.optimizing import OptimizerContext, OptimizerRegistry, Proposal, Reason
from brain.optimizing.pipeline import run_stage
from brain.optimizing.roles import overlay_roles
from tests.builders.optimizers import registry
from tests.builders.views import NOW, job

NODE_MAX = Resources(cpu=16, memory_mib=65536, gpu=8)


def context(stage: Stage = Stage.create, limits: Limits | None = None) -> OptimizerContext:
    roles = {"worker": RoleSpec(count=4, cpu=2, memory_mib=800)}
    return OptimizerContext(
        stage=stage, now=NOW, job=job(roles=roles, limits=limits), node_max=NODE_MAX
    )


def test_settings_layer_defaults_configuration_request_and_bounds_apply():
    settings = Settings(
        stage_optimizers={"create": ["worker_size"]},
        optimizer_settings={"worker_size": {"cpu": 6}},
    )
    configured = run_stage(registry(), Stage.create, context(), settings)
    assert configured.optimizers == ["worker_size"]
    assert configured.proposal.roles["worker"].cpu == 6  # configuration over the default 4
    requested = run_stage(
        registry(), Stage.create, context(), settings, overrides={"worker_size": {"cpu": 40}}
    )
    # The request (40) wins over the configuration, then the node maximum (16) caps it.
    assert requested.proposal.roles["worker"].cpu == 16
    assert "capped worker.cpu from 40.0 to the largest node's 16" in [
        r.message for r in requested.proposal.reasons
    ]


def test_job_limits_cost_workers_in_the_pipeline():
    # 4 workers x 6 cores = 24 > 20: the guard keeps 3 (18 cores).
    settings = Settings(stage_optimizers={"create": ["worker_size"]})
    result = run_stage(
        registry(),
        Stage.create,
        context(limits=Limits(cpu=20)),
        settings,
        overrides={"worker_size": {"cpu": 6}},
    )
    assert result.proposal.roles["worker"].count == 3


def test_a_failing_optimizer_is_a_reason_and_the_others_still_count():
    settings = Settings(stage_optimizers={"create": ["broken", "worker_size"]})
    result = run_stage(registry(), Stage.create, context(), settings)
    assert result.optimizers == ["broken", "worker_size"]
    assert result.proposal.reasons[0] == Reason(
        "broken", "optimizer failed: RuntimeError('boom'); ignored"
    )
    assert result.proposal.roles["worker"].cpu == 4


def test_a_proposal_beyond_the_optimizers_declared_changes_is_ignored_and_said_so():
    # ps_mover declares PS migrations only; it also asks for a PS group, so the whole
    # proposal is dropped (a master applying part of a plan chooses by the declarations)
    settings = Settings(stage_optimizers={"running": ["ps_mover", "worker_size"]})
    result = run_stage(registry(), Stage.running, context(Stage.running), settings)
    assert result.proposal.migrate == [] and "ps" not in result.proposal.roles
    assert result.proposal.reasons[0] == Reason(
        "ps_mover", "proposed changes it does not declare (ps group); ignored"
    )
    assert result.proposal.roles["worker"].cpu == 4  # the declared-nothing one stands


@pytest.mark.parametrize(
    ("requested", "overrides", "field"),
    [
        (["nope"], {}, "optimizers.0"),
        (["broken"], {}, None),  # broken serves create only
        (["worker_size"], {"worker_size": {"gpu": 1}}, "settings.worker_size.gpu"),
        (["worker_size"], {"worker_size": {"cpu": -1}}, "settings.worker_size.cpu"),
        (["worker_size"], {"broken": {}}, "settings.broken"),
    ],
)
def test_bad_selections_and_settings_name_their_field(requested, overrides, field):
    stage = Stage.running if requested == ["broken"] else Stage.create
    with pytest.raises(InvalidInput) as raised:
        run_stage(registry(), stage, context(stage), Settings(), requested, overrides)
    assert raised.value.field == (field or "optimizers.0")


def test_overlay_takes_proposed_values_else_current_over_both_sides_roles():
    current = {"ps": RoleSpec(count=2, cpu=8), "worker": RoleSpec(count=4, cpu=2, gpu=1)}
    proposed = {"worker": RoleSpec(cpu=3, gpu=0), "chief": RoleSpec(cpu=1)}
    assert overlay_roles(current, proposed) == {
        "ps": RoleSpec(count=2, cpu=8),
        "worker": RoleSpec(count=4, cpu=3, gpu=0),  # a proposed 0 is a value, not "open"
        "chief": RoleSpec(cpu=1),
    }


class SeesLimit:
    """Proposes workers of the job's CPU limit over 4 (what it was shown)."""

    name = "sees_limit"
    stages = frozenset({Stage.create})

    class Settings(BaseModel):
        pass

    def propose(self, context, settings):
        cpu = context.job.limits.cpu
        return Proposal(
            roles={"worker": RoleSpec(cpu=cpu / 4)},
            reasons=[Reason(self.name, f"the job's CPU limit is {cpu}")],
        )


def test_the_site_budget_stands_in_for_a_missing_limit_for_the_optimizers_too():
    # No CPU limit, a 24-core site budget: the optimizer sizes within 24 cores (4 workers
    # of 24 / 4 = 6), and the guard still says the budget stood in.
    settings = Settings(default_job_cpu=24, stage_optimizers={"create": ["sees_limit"]})
    result = run_stage(OptimizerRegistry([SeesLimit()]), Stage.create, context(), settings)
    assert result.proposal.roles["worker"].cpu == 6
    messages = [r.message for r in result.proposal.reasons]
    assert "the job's CPU limit is 24.0" in messages
    assert any("the site's budget of 24 cores per job stands in" in m for m in messages)
    # with a limit of its own, the budget plays no part
    limited = run_stage(
        OptimizerRegistry([SeesLimit()]), Stage.create, context(limits=Limits(cpu=20)), settings
    )
    assert limited.proposal.roles["worker"].cpu == 5
