"""Stand-in optimizers for pipeline tests, and a registry of them: ``worker_size``
proposes workers of a configurable size, ``broken`` always fails, ``ps_mover`` declares
that it migrates PS nodes and also proposes a PS group."""

from __future__ import annotations

from pydantic import BaseModel, Field

from brain.domain import RoleSpec, Stage
from brain.optimizing import Changes, NodeChange, OptimizerRegistry, Proposal, Reason


class WorkerSize:
    """Proposes workers of ``cpu`` cores (and 1000 MiB)."""

    name = "worker_size"
    stages = frozenset({Stage.create, Stage.running})

    class Settings(BaseModel):
        cpu: float = Field(4, ge=0, le=1000, description="Cores per worker.")

    def propose(self, context, settings):
        return Proposal(
            roles={"worker": RoleSpec(cpu=settings.cpu, memory_mib=1000)},
            reasons=[Reason(self.name, f"workers get {settings.cpu} cores")],
        )


class Broken:
    """Always fails."""

    name = "broken"
    stages = frozenset({Stage.create})

    class Settings(BaseModel):
        pass

    def propose(self, context, settings):
        raise RuntimeError("boom")


class PsMover:
    """Migrates ps-0 to 8 cores, and (beyond what it declares) asks for 3 PS."""

    name = "ps_mover"
    stages = frozenset({Stage.create, Stage.running})
    changes = Changes(nodes=frozenset({"ps"}))

    class Settings(BaseModel):
        pass

    def propose(self, context, settings):
        return Proposal(
            roles={"ps": RoleSpec(count=3)},
            migrate=[NodeChange(role="ps", name="ps-0", cpu=8)],
            reasons=[Reason(self.name, "ps-0 is hot")],
        )


def registry() -> OptimizerRegistry:
    return OptimizerRegistry([WorkerSize(), Broken(), PsMover()])
