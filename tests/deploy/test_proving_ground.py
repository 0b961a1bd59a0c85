"""The proving ground: each preset deployed through the stand-in with authorization (real built-in roles) and the
zone's own Azure Policy assignments (real built-in definitions) enforced, then CycleCloud's actor starting the
cluster the deploy handed the CycleCloud server (tests/support/arm_standin/cyclecloud.py)."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from hpclz.catalog.versions import CURRENT
from hpclz.config.loader import load_config
from hpclz.render.build import build_plan
from tests.conftest import REPO, RunCli
from tests.deploy.outside import from_workstation
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.authz import Principal
from tests.support.arm_standin.cyclecloud import CycleCloud, Step
from tests.support.arm_standin.proving import assign_policies


def deployed(
    arm: ArmStandIn,
    tmp_path: Path,
    run_cli: RunCli,
    preset: str,
    monkeypatch: pytest.MonkeyPatch,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """The preset (with `edit` applied to its config, if given) deployed from outside any VNet as the deploying user
    (Owner), its own policy assignments in force from the start (as on a redeploy, or for anything created once Azure
    applied them)."""
    folder = tmp_path / preset
    folder.mkdir()
    config = folder / "lz.yaml"
    shutil.copy(REPO / "configs" / f"{preset}.yaml", config)
    if edit is not None:
        data = YAML(typ="safe").load(config.read_text())
        edit(data)
        config.write_text(json.dumps(data))  # JSON is YAML
    monkeypatch.setenv("PRICING_LICENCE_KEY", "finance-pricing-licence")  # finance's Key Vault secret, read at deploy
    assign_policies(arm.world, build_plan(load_config(config).config))
    # From a workstation outside every VNet with the locker's network enforced: the private locker refuses the
    # direct upload, so deploy stages the wheel through the CycleCloud VM, as on an empty subscription.
    with from_workstation(arm, config, monkeypatch, folder / "vm-var-tmp") as (front, _imds):
        result = run_cli("deploy", str(config), "--yes")
    assert result.exit_code == 0, result.stdout[-4000:] + result.stderr
    assert "staging through the CycleCloud VM" in result.stdout + result.stderr
    assert set(front.refused) == {"public network access is disabled"}
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
             # the locker identity's read of the locker (a compute node's read of a dataset is
             # tests/deploy/test_role_removals.py's blob_container_reads: not a step of cluster start)
             or "storage blob data reader for compute.cyclecloud" in r["properties"].get("description", "").lower())
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


def test_finance_deploys_under_its_own_regulated_baseline(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finance's regulated baseline denies every storage account with public network access on, except the VNet flow
    logs' own account, which its "no public network" assignment leaves out (notScopes): Network Watcher writes there
    as a trusted service, which Azure allows only with public network access enabled from selected networks. Every
    other account of the zone is judged, and the flow-log account still denies every network by default."""
    deployed(arm, tmp_path, run_cli, "finance", monkeypatch)
    assert arm.proving.policy_log.denials == []
    accounts = [r for r in arm.world.resources.values() if r["type"] == "Microsoft.Storage/storageAccounts"]
    flow = [r for r in accounts if r["properties"].get("publicNetworkAccess") != "Disabled"]
    assert len(flow) == 1 and "flow" in flow[0]["name"], [(r["name"], r["properties"]) for r in flow]
    assert flow[0]["properties"]["networkAcls"] == {
        "defaultAction": "Deny", "bypass": "AzureServices", "ipRules": [], "virtualNetworkRules": []
    }  # fmt: skip
    assert len(accounts) > 1


def test_cyclecloud_runs_as_the_identity_that_holds_its_roles(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CycleCloud orchestrates as the identity its account names (the scheduler identity, through the account's
    AzureRMApplicationId), which holds its roles: before the account named it, CycleCloud fell back to the VM's
    system-assigned identity and every call was refused (AuthorizationFailed)."""
    deployed(arm, tmp_path, run_cli, "energy", monkeypatch)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    assert refused(actor.start()) == []


def test_the_portal_reads_its_client_secret_and_not_the_slurm_database_password(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The portal VM's own identity holds Key Vault Secrets User on its OIDC client secret only: it reads that secret
    (what hpclz-portal-secret does at boot) and is refused the Slurm database password in the same vault, which a
    vault-wide grant would hand to anyone signed in to the portal."""

    def with_client_secret(data: dict[str, Any]) -> None:
        data["identity"]["key_vault"]["secrets"]["ood-client-secret"] = "${env:OOD_CLIENT_SECRET}"
        data["portal"]["oidc"]["client_secret_name"] = "ood-client-secret"

    monkeypatch.setenv("OOD_CLIENT_SECRET", "ood-client-secret-value")
    deployed(arm, tmp_path, run_cli, "energy", monkeypatch, with_client_secret)
    (vm,) = [
        r for r in arm.world.resources.values()
        if r["type"] == "Microsoft.Compute/virtualMachines" and "-ood" in r["name"]
    ]  # fmt: skip
    portal = Principal(vm["identity"]["principalId"], kind="ServicePrincipal", name=vm["id"])
    (vault,) = [r["id"] for r in arm.world.resources.values() if r["type"] == "Microsoft.KeyVault/vaults"]
    get_secret = "Microsoft.KeyVault/vaults/secrets/getSecret/action"
    authz, resources = arm.proving.authorization, arm.world.resources
    assert authz.check(portal, get_secret, f"{vault}/secrets/ood-client-secret", resources, data=True) is None
    refused = authz.check(portal, get_secret, f"{vault}/secrets/slurmdb-password", resources, data=True)
    assert refused is not None and refused.status == 403
    # And the grant is needed: without it the portal's boot-time read of its client secret is refused.
    (grant,) = [
        k for k, r in resources.items()
        if r["type"] == "Microsoft.Authorization/roleAssignments" and r["properties"]["principalId"] == portal.object_id
    ]  # fmt: skip
    del resources[grant]
    assert authz.check(portal, get_secret, f"{vault}/secrets/ood-client-secret", resources, data=True) is not None


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


def _with_user_data(arm: ArmStandIn, actor: CycleCloud, edit: Callable[[dict[str, Any]], None]) -> None:
    """The CycleCloud server's userData in the stand-in, edited as a changed deployment would leave it."""
    vm, document = actor.server()
    edit(document)
    vm["properties"]["userData"] = base64.b64encode(json.dumps(document).encode()).decode()


def test_nodes_run_the_slurm_project_only_from_the_locker_upload(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every node runs its slurm specs, which name the project hpclz-cluster-sync uploads without the cyclecloud/
    prefix, from the locker; a spec naming a release that was never uploaded, or a deployment that uploads nothing
    under the name the specs use, fails on the node as a Software Installation Failure
    (learn.microsoft.com/azure/cyclecloud/how-to/projects)."""
    deployed(arm, tmp_path, run_cli, "energy", monkeypatch)
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    cyclecloud = scheduler_identity(arm)
    steps = actor.start(as_identity=cyclecloud)
    assert refused(steps) == []
    ran = {(s.node, s.what.removeprefix("run cluster-init ")) for s in steps if s.what.startswith("run cluster-init")}
    arrays = {s.node for s in steps if s.what == "create the scale set"} - {"login"}
    assert arrays
    release = CURRENT.project
    for node in ("scheduler", "login", *arrays):
        role = node if node in ("scheduler", "login") else "execute"
        assert {spec for n, spec in ran if n == node} == {f"slurm:default:{release}", f"slurm:{role}:{release}"}

    array = sorted(arrays)[0]

    def older_release(document: dict[str, Any]) -> None:
        document["template"] = document["template"].replace(
            f"[[[cluster-init slurm:execute:{release}]]]", "[[[cluster-init slurm:execute:4.0.8]]]", 1
        )

    _with_user_data(arm, actor, older_release)
    assert refused(actor.start(as_identity=cyclecloud)) == [
        f"{array}: run cluster-init slurm:execute:4.0.8: SoftwareInstallationFailure: project slurm version 4.0.8 "
        "was never uploaded to the locker"
    ]

    _with_user_data(arm, actor, lambda document: document.update(project_name="cyclecloud-slurm"))
    failed = refused(actor.start(as_identity=cyclecloud))
    assert failed and all("SoftwareInstallationFailure: project slurm version" in line for line in failed)
    assert {line.split(":", 1)[0] for line in failed} == {"scheduler", "login", *arrays}
