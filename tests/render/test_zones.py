"""Availability zones in what render writes: the CycleCloud VM's and Lustre's ARM `zones`, and
the CycleCloud cluster's `Zone` attributes on the scheduler, the login nodearray and each zonal partition."""

from __future__ import annotations

import re
from typing import Any

from hpclz.plan.changeset import Policy
from hpclz.plan.policies import property_verdict
from hpclz.render.model import DeploymentPlan
from tests.arm.test_schema_gate import schema_findings
from tests.render.conftest import cyclecloud_vms, preset_plan, resources_of, variant

VM = "Microsoft.Compute/virtualMachines"
AMLFS = "Microsoft.StorageCache/amlFilesystems"


def _cluster(plan: DeploymentPlan) -> str:
    (compute,) = [d for d in plan.deployments if d.component == "compute"]
    return compute.artifacts["cyclecloud/slurm-cluster.txt"]


def _block(cluster: str, header: str) -> str:
    """One [[node ...]] / [[nodearray ...]] section, up to the next section of that rank."""
    start = cluster.index(header)
    following = re.search(r"^    \[\[(node|nodearray) ", cluster[start + len(header) :], re.M)
    return cluster[start : start + len(header) + following.start()] if following else cluster[start:]


def _zone_lines(block: str) -> list[str]:
    return re.findall(r"^    Zone = (.*)$", block, re.M)


def test_ai_training_puts_the_service_vms_partitions_and_lustre_in_zone_1() -> None:
    plan = preset_plan("ai-training")
    [vm] = cyclecloud_vms(plan)  # the CycleCloud server; the Open OnDemand portal is ai-training's other VM
    assert vm["zones"] == ["1"]
    [lustre] = resources_of(plan, AMLFS)
    assert lustre["zones"] == ["1"]
    cluster = _cluster(plan)
    assert _zone_lines(_block(cluster, "[[node scheduler]]")) == ['"1"']
    assert _zone_lines(_block(cluster, "[[nodearray login]]")) == ['"1"']
    assert _zone_lines(_block(cluster, "[[nodearray h100]]")) == ['"1"']
    assert _zone_lines(_block(cluster, "[[nodearray h200]]")) == ['"1"']


def test_without_zones_nothing_is_zonal_but_lustre_which_always_takes_one() -> None:
    plan = preset_plan("manufacturing")
    [vm] = resources_of(plan, VM)
    assert "zones" not in vm
    assert _zone_lines(_cluster(plan)) == [] and "Zone =" not in _cluster(plan)


def test_each_partition_keeps_its_own_zone_and_lustre_follows_its_key() -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["compute"]["partitions"][1]["zone"] = 2
        doc["storage"]["lustre"]["zone"] = "3"

    plan = variant("ai-training", edit)
    cluster = _cluster(plan)
    assert _zone_lines(_block(cluster, "[[nodearray h100]]")) == ['"1"']
    assert _zone_lines(_block(cluster, "[[nodearray h200]]")) == ['"2"']
    [lustre] = resources_of(plan, AMLFS)
    assert lustre["zones"] == ["3"]


def test_zonal_templates_pass_the_official_schemas() -> None:
    for deployment in preset_plan("ai-training").deployments:
        if deployment.component in ("compute", "storage"):
            assert schema_findings(deployment.template) == [], deployment.component


def test_moving_a_zone_is_a_replacement_never_an_in_place_update() -> None:
    vm = property_verdict(VM, "zones[0]", "1", "2", False)
    assert vm.policy is Policy.REPLACE and "new VM" in vm.reason
    lustre = property_verdict(AMLFS, "zones", ["1"], ["2"], True)
    assert lustre.policy is Policy.REPLACE_DATA and lustre.action_needed
