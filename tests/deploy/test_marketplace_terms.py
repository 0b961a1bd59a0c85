"""HPCLZ-CMP-110: preflight reads whether the subscription accepted the Marketplace terms of the CycleCloud server's
image (its purchase plan: Azure/cyclecloud-slurm-workspace@bc0fc1b bicep/vm.bicep:46-50) with MarketplaceAgreements_Get
(Microsoft.MarketplaceOrdering 2021-01-01), and stops before any write when they are not, saying how to accept them.

The stand-in answers with the REST spec's example shape (tests/fixtures/arm/marketplace_terms_get_specexample.json);
the adapter reads it through the real azure-mgmt-resource client's pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hpclz.azure.arm import Arm
from hpclz.azure.clients import AzureClients
from hpclz.catalog.versions import CYCLECLOUD_IMAGE
from hpclz.config import load_config
from hpclz.deploy.preflight import purchase_plans
from hpclz.rules.live import LIVE_RULES
from hpclz.rules.live.context import LiveContext
from hpclz.rules.live.marketplace import MarketplaceTermsNotAccepted
from tests.conftest import REPO, RunCli
from tests.render.conftest import preset_plan
from tests.support.arm_standin import ArmStandIn

SPEC_EXAMPLE = REPO / "tests" / "fixtures" / "arm" / "marketplace_terms_get_specexample.json"
PLAN = ":".join(CYCLECLOUD_IMAGE)  # azurecyclecloud:azure-cyclecloud:cyclecloud8-gen2
ACCEPT = "az vm image terms accept --publisher azurecyclecloud --offer azure-cyclecloud --plan cyclecloud8-gen2"


def _findings(terms: dict[str, bool]) -> list[Any]:
    ctx = LiveContext(loaded=load_config(REPO / "configs" / "energy.yaml"), location="southcentralus")
    ctx.marketplace_terms = terms
    return list(MarketplaceTermsNotAccepted().check(ctx))


def test_the_rule_is_registered() -> None:
    assert MarketplaceTermsNotAccepted in LIVE_RULES


def test_the_plan_read_is_the_cyclecloud_servers_purchase_plan() -> None:
    assert purchase_plans(preset_plan("energy")) == [CYCLECLOUD_IMAGE]


def test_terms_not_accepted_is_one_error_that_says_how_to_accept_them() -> None:
    (found,) = _findings({PLAN: False})
    assert found.severity.value == "error" and found.path == "compute.cyclecloud.version"
    assert f"the Marketplace terms of {PLAN} are not accepted in this subscription" in found.message
    assert ACCEPT in found.message


def test_accepted_or_unread_terms_say_nothing() -> None:
    assert _findings({PLAN: True}) == []
    assert _findings({}) == []  # never asked, or the read failed: HPCLZ-CMP-104 reports that


def test_the_adapter_reads_both_answers_through_the_sdk(arm: ArmStandIn) -> None:
    adapter = Arm(AzureClients(arm.subscription_id))
    body = adapter.marketplace_terms(*CYCLECLOUD_IMAGE)
    spec = json.loads(SPEC_EXAMPLE.read_text(encoding="utf-8"))["responses"]["200"]["body"]
    assert set(body) == set(spec) and set(body["properties"]) == set(spec["properties"])
    assert body["type"] == spec["type"] and body["name"] == CYCLECLOUD_IMAGE[2]
    assert body["properties"]["accepted"] is True
    arm.world.unaccepted_terms.add(PLAN)
    assert adapter.marketplace_terms(*CYCLECLOUD_IMAGE)["properties"]["accepted"] is False


def test_deploy_stops_before_any_write_when_the_terms_are_not_accepted(
    arm: ArmStandIn, zone: Path, run_cli: RunCli
) -> None:
    arm.world.unaccepted_terms.add(PLAN)
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 1, result.stdout
    assert "HPCLZ-CMP-110" in result.stdout and ACCEPT in " ".join(result.stdout.split())
    assert "nothing was deployed" in result.stdout
    assert [r.path for r in arm.log if r.method == "PUT"] == []
    assert any("microsoft.marketplaceordering/offertypes" in r.path.lower() for r in arm.log)
