"""Deploy with the locker's network enforced (tests/support/arm_standin/reach.py): hpclz's wheel upload goes to the
locker's Blob endpoint through a BlobFront that is the deploying machine's route there.

From a workstation outside the VNet the upload is refused, as Azure Storage refuses it, before the compute
deployment is submitted. From a machine in the zone's own VNet it passes through the private endpoint, the
privatelink.blob zone record and the zone's VNet link that the zone's templates themselves create: the stand-in
finds that route only in what the deployments made."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import BlobServiceClient

from hpclz.azure.locker import CONNECTION_STRING_ENV
from hpclz.config.loader import load_config
from hpclz.deploy.wheel import hpclz_wheel
from hpclz.render.build import build_plan
from hpclz.render.roles import WHEEL_CONTAINER
from hpclz.render.zone import Zone
from tests.conftest import REPO, RunCli
from tests.support.arm_standin import ArmStandIn, policy
from tests.support.arm_standin.cyclecloud import CycleCloud, Step
from tests.support.arm_standin.data_planes import BlobFront
from tests.support.arm_standin.proving import assign_policies
from tests.support.arm_standin.reach import WORKSTATION, Origin, private_route
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, shared_azurite


def _ids(arm: ArmStandIn, config: Path) -> tuple[str, str]:
    """The locker account's ID and the zone's compute subnet's ID, as the zone's templates name them."""
    zone = Zone(load_config(config).config)
    sub = f"/subscriptions/{arm.subscription_id}/resourceGroups"
    locker = f"{sub}/{zone.rg['storage']}/providers/Microsoft.Storage/storageAccounts/{zone.locker_account_name}"
    vnet = f"{sub}/{zone.rg['network']}/providers/Microsoft.Network/virtualNetworks/{zone.vnet_name}"
    return locker, f"{vnet}/subnets/{zone.subnet('compute').name}"


@contextmanager
def _locker_route(arm: ArmStandIn, locker: str, origin: Origin, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlobFront]:
    front = BlobFront(arm, locker, shared_azurite().account_url, origin).start()
    monkeypatch.setenv(CONNECTION_STRING_ENV, front.connection_string(ACCOUNT, ACCOUNT_KEY))
    try:
        yield front
    finally:
        front.stop()


@pytest.mark.timeout(240)
def test_from_a_workstation_the_private_locker_refuses_the_wheel_before_compute_is_submitted(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    locker, _ = _ids(arm, manufacturing)
    with _locker_route(arm, locker, WORKSTATION, monkeypatch) as front:
        result = run_cli("deploy", str(manufacturing), "--yes")
    assert result.exit_code != 0
    assert "AuthorizationFailure; the locker accepts its private endpoint only" in result.stdout + result.stderr
    assert front.refused == ["public network access is disabled"]
    # The locker is as the zone made it (no opening), and nothing took the wheel to the CycleCloud VM.
    assert arm.world.resources[locker.lower()]["properties"]["publicNetworkAccess"] == "Disabled"
    submitted = [r.name for r in arm.world.deployments.values()]
    assert any(name.endswith("-storage") for name in submitted), submitted
    assert not [name for name in submitted if name.endswith("-compute")], submitted
    # The same deploy run again from a VM in the zone's VNet goes on from there.
    locker, compute_subnet = _ids(arm, manufacturing)
    with _locker_route(arm, locker, Origin(subnet=compute_subnet), monkeypatch) as inside:
        again = run_cli("deploy", str(manufacturing), "--yes")
    assert again.exit_code == 0, again.stdout[-3000:] + again.stderr
    assert inside.refused == []
    assert [r.name for r in arm.world.deployments.values() if r.name.endswith("-compute")]


@pytest.mark.timeout(240)
def test_from_inside_the_zones_vnet_the_rendered_private_endpoint_and_dns_carry_the_upload(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # energy: its cluster reads a Key Vault secret (the Slurm database password) as well as the locker.
    energy = tmp_path / "energy" / "lz.yaml"
    energy.parent.mkdir()
    shutil.copy(REPO / "configs" / "energy.yaml", energy)
    locker, compute_subnet = _ids(arm, energy)
    jump_host = Origin(subnet=compute_subnet, name="a VM in the zone's compute subnet")
    with _locker_route(arm, locker, jump_host, monkeypatch) as front:
        result = run_cli("deploy", str(energy), "--yes")
    assert result.exit_code == 0, result.stdout[-3000:] + result.stderr
    assert front.refused == []
    # It went by the private route the deployments built (not by a public one), and the wheel is there.
    assert private_route(locker, "blob", jump_host, arm.world.resources)
    assert not private_route(
        locker, "blob", Origin(subnet=compute_subnet.replace("vnet-", "vnet-elsewhere-")), arm.world.resources
    )
    wheel = hpclz_wheel()
    service = BlobServiceClient.from_connection_string(shared_azurite().connection_string)
    assert service.get_blob_client(WHEEL_CONTAINER, wheel.blob).download_blob().readall() == wheel.path.read_bytes()
    _cyclecloud_reaches_the_locker_and_vault_only_by_the_rendered_dns(arm)


def _data_steps(steps: list[Step]) -> dict[tuple[str, str], str]:
    data = ("upload projects to the locker", "read the locker", "read secret")
    return {(s.node, s.what): s.code for s in steps if s.what.startswith(data)}


def _cyclecloud_reaches_the_locker_and_vault_only_by_the_rendered_dns(arm: ArmStandIn) -> None:
    """CycleCloud (from its server's subnet) and each node (from its nodearray's subnet) read and write the locker and
    read the vault through the zone's private endpoints; without the privatelink zones' links to the VNet their
    names resolve to the public endpoints, which refuse them as Azure does."""
    actor = CycleCloud(arm.world, arm.proving.authorization, arm.proving.policy_log)
    steps = _data_steps(actor.start())
    assert ("cyclecloud", "upload projects to the locker") in steps
    assert [node for node, what in steps if what == "read the locker"], steps
    assert [what for _node, what in steps if what.startswith("read secret")], steps
    assert set(steps.values()) == {""}, steps
    zones = ("privatelink.blob.core.windows.net", "privatelink.vaultcore.azure.net")
    links = [
        k
        for k in arm.world.resources
        if "/virtualnetworklinks/" in k and k.split("/privatednszones/")[-1].startswith(zones)
    ]
    assert len(links) == 2, links  # each zone linked to the zone's VNet by the network template
    for key in links:
        del arm.world.resources[key]
    unlinked = _data_steps(actor.start())
    assert unlinked.keys() == steps.keys()
    for (_node, what), code in unlinked.items():
        assert code == ("ForbiddenByFirewall" if what.startswith("read secret") else "AuthorizationFailure"), unlinked


def test_a_temporary_opening_of_the_locker_is_refused_by_the_zones_own_policy_where_it_assigns_one(
    arm: ArmStandIn,
) -> None:
    """Why deploy does not open the locker's firewall to the workstation for the upload: IP rules apply only with
    public network access enabled (reach.py; Learn storage-network-security), and finance's regulated baseline
    assigns "Storage accounts should disable public network access" with Deny at the storage group, so that very
    write is refused (the built-in definition, judged by the stand-in's policy engine)."""
    finance = load_config(REPO / "configs" / "finance.yaml").config
    assign_policies(arm.world, build_plan(finance))
    locker, _ = _ids(arm, REPO / "configs" / "finance.yaml")
    network: dict[str, Any] = {
        "publicNetworkAccess": "Enabled",
        "networkAcls": {"defaultAction": "Deny", "ipRules": [{"value": "198.51.100.7", "action": "Allow"}]},
    }
    opened: dict[str, Any] = {
        "id": locker,
        "name": locker.rsplit("/", 1)[-1],
        "type": "Microsoft.Storage/storageAccounts",
        "location": finance.metadata.location,
        "tags": {},
        "properties": network,
    }
    refusal = policy.judge(opened, arm.world.resources, policy.PolicyLog())
    assert refusal is not None and refusal.code == "RequestDisallowedByPolicy", refusal
    assert "hpclz-storage-no-public-network" in refusal.message
    # Public network access off, as the locker is rendered: that assignment no longer refuses it.
    closed = {**opened, "properties": {**network, "publicNetworkAccess": "Disabled"}}
    still = policy.judge(closed, arm.world.resources, policy.PolicyLog())
    assert still is None or "hpclz-storage-no-public-network" not in still.message
