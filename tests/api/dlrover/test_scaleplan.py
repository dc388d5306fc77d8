"""The DLRover ScalePlan rendering: PS hosts after a plan, CPU limits, CRD conformance."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from api.dlrover.ps_hosts import ps_hosts
from api.dlrover.scaleplan import CPU_LIMITS_ANNOTATION, to_k8s
from brain.domain import RoleSpec
from brain.optimizing.proposal import NodeChange, PlanBody
from brain.services.ps_tier import PsNode

# DLRover's ScalePlan CRD (Apache-2.0; provenance in tests/fixtures/README.md).
CRD = Path(__file__).resolve().parents[2] / "fixtures" / "scaleplan-crd.yaml"
# ps-0 and ps-2 run; ps-1 failed earlier (its id stays used).
NODES = [PsNode("dropin-edljob-ps-0", 0, True), PsNode("dropin-edljob-ps-1", 1, False)]
NODES.append(PsNode("dropin-edljob-ps-2", 2, True))


def _hosts(*names: str) -> list[str]:
    return [f"dropin-edljob-ps-{n}.ns.svc:2222" for n in names]


def test_ps_hosts_follow_migrations_launches_and_counts():
    # Nothing about PS: the live PS in rank order.
    assert ps_hosts("dropin", "ns", NODES, PlanBody()) == _hosts(0, 2)
    # A migration replaces ps-0 in its rank with the next id after the largest (2): 3.
    migrate = PlanBody(migrate=[NodeChange("ps", "dropin-edljob-ps-0", cpu=12)])
    assert ps_hosts("dropin", "ns", NODES, migrate) == _hosts(3, 2)
    # Count 4: two new PS, ids 3 and 4, after the live ones.
    grow = PlanBody(roles={"ps": RoleSpec(count=4)})
    assert ps_hosts("dropin", "ns", NODES, grow) == _hosts(0, 2, 3, 4)
    # A launch without a count adds one; a removal drops that PS.
    launch = PlanBody(launch=[NodeChange("ps")], remove=[NodeChange("ps", "dropin-edljob-ps-0")])
    assert ps_hosts("dropin", "ns", NODES, launch) == _hosts(2, 3)
    # Count 1: the surplus is taken from the end.
    assert ps_hosts("dropin", "ns", NODES, PlanBody(roles={"ps": RoleSpec(count=1)})) == _hosts(0)


def test_ps_hosts_before_any_pod_and_without_ps():
    # The contract's create example: 2 PS, no pod yet, the job's namespace unknown.
    two = PlanBody(roles={"ps": RoleSpec(count=2)})
    assert ps_hosts("dropin", None, [], two) == [
        "dropin-edljob-ps-0.default.svc:2222",
        "dropin-edljob-ps-1.default.svc:2222",
    ]
    # No plan for PS, none running: the declared count.
    assert ps_hosts("dropin", None, [], PlanBody(), declared_count=1) == [
        "dropin-edljob-ps-0.default.svc:2222"
    ]
    assert ps_hosts("dropin", None, [], PlanBody(roles={"worker": RoleSpec(count=4)})) == []


def test_cpu_limits_travel_in_an_annotation_and_the_object_stays_valid():
    body = PlanBody(
        roles={
            "worker": RoleSpec(count=2, cpu=10, cpu_limit=16, memory_mib=8192),
            "ps": RoleSpec(count=1, cpu=4, cpu_limit=6.5, memory_mib=4096),
            "chief": RoleSpec(count=1, cpu=2, memory_mib=2048),
        },
        ps_hosts=_hosts(0),
    )
    manifest = to_k8s(7, body, "dropin", "ns", {})
    # 16 cores and 6.5 cores = 6500m; the chief has no limit.
    assert json.loads(manifest["metadata"]["annotations"][CPU_LIMITS_ANNOTATION]) == {
        "ps": "6500m",
        "worker": "16",
    }
    # The request stays the resource the operator reads.
    assert manifest["spec"]["replicaResourceSpecs"]["worker"]["resource"]["cpu"] == "10"
    assert manifest["spec"]["psHosts"] == _hosts(0)
    schema = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    jsonschema.validate(manifest, schema)
    # Without a limit, no annotation.
    plain = to_k8s(8, PlanBody(roles={"chief": body.roles["chief"]}), "dropin", "ns", {})
    assert "annotations" not in plain["metadata"]
