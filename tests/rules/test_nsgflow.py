"""NSG flow evaluation (hpclz.rules.nsgflow) on the portal NSG hpclz renders: srun's range gets in from the
cluster's subnets, nothing else does, and a range is judged on every port, not only its ends."""

from __future__ import annotations

from typing import Any

import pytest

from hpclz.config import load_config
from hpclz.render.portal import security_rules
from hpclz.render.zone import Zone
from hpclz.rules.nsgflow import refusal
from tests.conftest import REPO
from tests.render.conftest import preset_plan, resources_of

NSG = "Microsoft.Network/networkSecurityGroups"

ADMIN, COMPUTE, BASTION, HUB = "10.40.0.0/24", "10.40.8.0/21", "10.40.1.0/26", "10.8.0.0/16"  # configs/ai-training.yaml


def _portal_rules() -> list[dict[str, Any]]:
    return security_rules(Zone(load_config(REPO / "configs" / "ai-training.yaml").config))


def test_srun_range_is_let_in_from_the_cluster_subnets_only() -> None:
    rules = _portal_rules()
    for source in (ADMIN, COMPUTE):
        assert refusal(rules, "Inbound", source, ADMIN, (60001, 63000)) is None
    # Not from the hub or Bastion, and no port beside the range from the cluster either.
    for source in (HUB, BASTION):
        found = refusal(rules, "Inbound", source, ADMIN, (60001, 63000))
        assert found is not None and found[1]["name"] == "DenyAllInbound"
    for ports in ((60000, 60000), (63001, 63001), (6818, 6818)):
        found = refusal(rules, "Inbound", COMPUTE, ADMIN, ports)
        assert found is not None and found[0] == ports[0] and found[1]["name"] == "DenyAllInbound"


def test_without_the_srun_rule_the_portals_deny_all_refuses_slurm() -> None:
    """What the portal's NSG did before it opened srun's range: srun and salloc hung, waiting for calls back."""
    rules = [r for r in _portal_rules() if r["name"] != "AllowSlurmToSrun"]
    found = refusal(rules, "Inbound", COMPUTE, ADMIN, (60001, 63000))
    assert found == (60001, next(r for r in rules if r["name"] == "DenyAllInbound"))


def test_a_deny_inside_a_range_is_found_and_azures_defaults_decide_the_rest() -> None:
    middle = {
        "name": "hole",
        "properties": {
            "priority": 200,
            "direction": "Inbound",
            "access": "Deny",
            "protocol": "Tcp",
            "sourceAddressPrefix": "VirtualNetwork",
            "destinationAddressPrefix": "*",
            "destinationPortRange": "40000-40009",
        },
    }
    # No rule of its own: Azure's default AllowVNetInBound lets one subnet of the VNet reach another.
    assert refusal([], "Inbound", COMPUTE, ADMIN, (2000, 65535)) is None
    found = refusal([middle], "Inbound", COMPUTE, ADMIN, (2000, 65535))
    assert found == (40000, middle)
    assert refusal([middle], "Inbound", COMPUTE, ADMIN, (40010, 65535)) is None


@pytest.mark.parametrize("preset", ["ai-training", "energy"])
def test_the_rendered_nsgs_let_every_portal_flow_through(preset: str) -> None:
    """The NSGs as they stand in the rendered ARM templates (the admin and compute subnets' and the portal NIC's),
    with Azure's defaults after them: srun's range into the portal from both subnets, slurmctld and the login node's
    SSH inside the admin subnet, slurmd and the interactive apps' ports (ood_core find_port, 2000-65535) from the
    admin subnet into the compute subnet. Nothing but srun's range reaches the portal from the compute subnet."""
    plan = preset_plan(preset)
    config = load_config(REPO / "configs" / f"{preset}.yaml").config
    subnets = config.network.vnet.subnets
    admin, compute = str(subnets.admin.cidr), str(subnets.compute.cidr)
    nsgs = {r["name"]: r["properties"]["securityRules"] for r in resources_of(plan, NSG)}
    admin_nsg = next(v for k, v in nsgs.items() if "-admin-" in k)
    compute_nsg = next(v for k, v in nsgs.items() if "-compute-" in k)
    portal_nsg = next(v for k, v in nsgs.items() if "-ood-" in k)
    for source in (admin, compute):
        for rules in (admin_nsg, portal_nsg):
            assert refusal(rules, "Inbound", source, admin, (60001, 63000)) is None
    for port in (6817, 22):
        assert refusal(admin_nsg, "Inbound", admin, admin, (port, port)) is None
    for ports in ((6818, 6818), (2000, 65535)):
        assert refusal(compute_nsg, "Inbound", admin, compute, ports) is None
    for rules in (admin_nsg, compute_nsg, portal_nsg):
        assert refusal(rules, "Outbound", admin, compute, (1, 65535)) is None
    refused = refusal(portal_nsg, "Inbound", compute, admin, (1, 65535))
    assert refused is not None and refused[0] == 1 and refused[1]["name"] == "DenyAllInbound"
    assert refusal(portal_nsg, "Inbound", compute, admin, (63001, 65535)) is not None
