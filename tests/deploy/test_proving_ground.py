"""The proving ground: each preset deployed through the stand-in with authorization (real built-in roles) and the
zone's own Azure Policy assignments (real built-in definitions) enforced, then CycleCloud's actor starting the
cluster the deploy handed the CycleCloud server (tests/support/arm_standin/cyclecloud.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hpclz.config.loader import load_config
from hpclz.render.build import build_plan
from tests.conftest import REPO, RunCli
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.authz import Principal
from tests.support.arm_standin.cyclecloud import CycleCloud, Step
from tests.support.arm_standin.proving import assign_policies


def deployed(arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, preset: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The preset deployed from outside any VNet as the deploying user (Owner), its own policy assignments in force
    from the start (as on a redeploy, or for anything created once Azure applied them)."""
    folder = tmp_path / preset
    folder.mkdir()
    config = folder / "lz.yaml"
    shutil.copy(REPO / "configs" / f"{preset}.yaml", config)
    monkeypatch.setenv("PRICING_LICENCE_KEY", "finance-pricing-licence")  # finance's Key Vault secret, read at deploy
    assign_policies(arm.world, build_plan(load_config(config).config))
    result = run_cli("deploy", str(config), "--yes")
    assert result.exit_code == 0, result.stdout[-4000:] + result.stderr
    return config


def refused(steps: list[Step]) -> list[str]:
    return [f"{s.node}: {s.what}: {s.code}: {s.message[:300]}" for s in steps if s.refused]


def scheduler_identity(arm: ArmStandIn) -> Principal:
    """The user-assigned identity hpclz grants CycleCloud's roles to, as a principal."""
    found = [
        r for r in arm.world.resources.values()
        if r["type"] == "Microsoft.ManagedIdentity/userAssignedIdentities" and "-scheduler-" in r["name"]
    ]  # fmt: skip
    assert len(found) == 1, [r["name"] for r in found]
    return Principal(found[0]["properties"]["principalId"], kind="ServicePrincipal", name=found[0]["id"])


NON_FINANCE = ["energy", "ai-training", "manufacturing"]
# Each test deploys a whole preset through the stand-in (about a minute on an idle core).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("preset", NON_FINANCE)
def test_cyclecloud_creates_every_node_and_needs_every_role_it_holds(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preset deploys under its own policy assignments; then CycleCloud, with only the roles hpclz grants its
    identity, creates every node of the rendered cluster (scheduler, login, each partition: each carrying the tags
    the zone's policies require); and, least privilege by removal, taking away any one role assignment hpclz
    rendered for CycleCloud's identity (or the locker identity's read of the locker) makes a named step of cluster
    start fail: an assignment whose removal breaks nothing is reported."""
    deployed(arm, tmp_path, run_cli, preset, monkeypatch)
    assert arm.proving.policy_log.denials == []
    cyclecloud = scheduler_identity(arm)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    steps = actor.start(as_identity=cyclecloud)
    assert refused(steps) == []
    config = load_config(tmp_path / preset / "lz.yaml").config
    created = {s.node for s in steps if s.what in ("create the VM", "create the scale set")}
    assert created == {"scheduler", "login", *(p.name for p in config.compute.partitions)}
    unneeded, broken = removal_analysis(arm, actor, cyclecloud)
    assert unneeded == [], f"role assignments whose removal breaks no step: {unneeded}"
    assert len(broken) >= 6 and all(broken.values()), broken


def removal_analysis(
    arm: ArmStandIn, actor: CycleCloud, cyclecloud: Principal
) -> tuple[list[str], dict[str, set[str]]]:
    """Each role assignment of CycleCloud's identity, and the locker identity's Storage Blob Data Reader, removed in
    turn: the steps of cluster start it breaks (by label), and those whose removal breaks nothing."""
    grants = {
        key: r for key, r in arm.world.resources.items()
        if r["type"] == "Microsoft.Authorization/roleAssignments"
        and (r["properties"]["principalId"] == cyclecloud.object_id
             or "storage blob data reader" in r["properties"].get("description", "").lower())
    }  # fmt: skip
    unneeded: list[str] = []
    broken: dict[str, set[str]] = {}
    for key, grant in grants.items():
        del arm.world.resources[key]
        try:
            failed = {f"{s.node}: {s.what}" for s in actor.start(as_identity=cyclecloud) if s.refused}
        finally:
            arm.world.resources[key] = grant
        label = f"{grant['properties'].get('description')} at {grant['properties']['scope']}"
        if failed:
            broken[label] = failed
        else:
            unneeded.append(label)
    return unneeded, broken


@pytest.mark.xfail(
    strict=True,
    reason="finance's flow-log storage account keeps public network access on (Network Watcher writes to it as a "
    "trusted service), which the zone's own regulated baseline (Storage accounts should disable public network "
    "access, Deny) refuses: not fixed yet",
)
def test_finance_deploys_under_its_own_regulated_baseline(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployed(arm, tmp_path, run_cli, "finance", monkeypatch)


def test_cyclecloud_runs_as_the_identity_that_holds_its_roles(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CycleCloud orchestrates as the identity its account names (the scheduler identity, through the account's
    AzureRMApplicationId), which holds its roles: before the account named it, CycleCloud fell back to the VM's
    system-assigned identity and every call was refused (AuthorizationFailed)."""
    deployed(arm, tmp_path, run_cli, "energy", monkeypatch)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    assert refused(actor.start()) == []


def test_the_gb300_partition_deploys_in_rack_aligned_scale_sets_of_a_size_the_subscription_offers(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ai-training's GB300 partition (two NVL72 racks) through the stand-in: CycleCloud, as hpclz's identity for it,
    creates its scale set of ND GB300 v6 VMs holding both racks whole, in one placement group; and where the
    subscription's resource SKUs do not offer the size, that node is refused as Azure refuses it."""
    from tests.support.arm_standin.catalog import default_skus

    deployed(arm, tmp_path, run_cli, "ai-training", monkeypatch)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    assert refused(actor.start(as_identity=scheduler_identity(arm))) == []
    sets = [
        r for r in arm.world.resources.values()
        if r["type"] == "Microsoft.Compute/virtualMachineScaleSets" and r["name"].startswith("cc-gb300")
    ]  # fmt: skip
    assert [(s["sku"]["name"], s["sku"]["capacity"]) for s in sets] == [("Standard_ND128isr_GB300_v6", 36)]
    assert sets[0]["properties"]["singlePlacementGroup"] is True

    location = sets[0]["location"]
    arm.world.skus = [s for s in default_skus(location) if s["name"] != "Standard_ND128isr_GB300_v6"]
    assert refused(actor.start(as_identity=scheduler_identity(arm))) == [
        f"gb300: choose the machine type: SkuNotAvailable: The requested size Standard_ND128isr_GB300_v6 is not "
        f"available in location {location}"
    ]
