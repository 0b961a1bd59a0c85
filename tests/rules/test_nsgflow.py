"""NSG flow evaluation (hpclz.rules.nsgflow) on the portal NSG hpclz renders: srun's range gets in from the
cluster's subnets, nothing else does, and a range is judged on every port, not only its ends."""

from __future__ import annotations

from typing import Any

from hpclz.config import load_config
from hpclz.render.portal import security_rules
from hpclz.render.zone import Zone
from hpclz.rules.nsgflow import refusal
from tests.conftest import REPO

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
