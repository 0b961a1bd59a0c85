"""Deploy with the locker's network enforced (tests/support/arm_standin/reach.py): hpclz's wheel upload goes to the
locker's Blob endpoint through a BlobFront that is the deploying machine's route there.

From a workstation outside the VNet the upload is refused, as Azure Storage refuses it; deploy then stages the wheel
through the CycleCloud VM by managed Run Command (hpclz.deploy.wheel_staging), the VM's scripts reaching the locker
by the VM's own network and identity (VmBlobRoutes, imds.Imds). From a machine in the zone's own VNet it passes through the private endpoint, the
privatelink.blob zone record and the zone's VNet link that the zone's templates themselves create: the stand-in
finds that route only in what the deployments made."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from azure.core.exceptions import ResourceNotFoundError
from azure.storage.blob import BlobServiceClient

from hpclz.config.loader import load_config
from hpclz.deploy.wheel import hpclz_wheel
from hpclz.deploy.wheel_staging import SCRIPT_LIMIT
from hpclz.render.build import build_plan
from hpclz.render.roles import WHEEL_CONTAINER
from hpclz.render.zone import Zone
from tests.conftest import REPO, RunCli
from tests.deploy.conftest import HPCLZ
from tests.deploy.outside import ids, locker_route, vm_side
from tests.support.arm_standin import ArmStandIn, policy
from tests.support.arm_standin.cyclecloud import CycleCloud, Step
from tests.support.arm_standin.proving import assign_policies
from tests.support.arm_standin.reach import WORKSTATION, Origin, private_route
from tests.support.azurite import shared_azurite
from tests.support.signals import interruptible


def _damage_second_piece(script: str) -> str:
    """One base64 line of piece 2 changed on its way to the VM (its length and alphabet kept)."""
    if "piece 2 of" not in script:
        return script
    head, body = script.split("<<'HPCLZ_PIECE'\n", 1)
    first, rest = body.split("\n", 1)
    return f"{head}<<'HPCLZ_PIECE'\n{first[::-1]}\n{rest}"


@pytest.mark.timeout(300)
def test_from_a_workstation_deploy_stages_the_wheel_through_the_cyclecloud_vm(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The locker refuses the workstation (publicNetworkAccess Disabled); deploy goes on, and once the compute
    deployment made the CycleCloud VM it sends the wheel there in pieces by managed Run Command; the VM checks each,
    joins them, checks the whole against hpclz's SHA-256 and puts it in the locker with CycleCloud's identity, through
    the zone's private endpoint. A piece damaged on the way stops deploy with one line; run again, it completes."""
    locker, _ = ids(arm, manufacturing)
    wheel = hpclz_wheel()
    service = BlobServiceClient.from_connection_string(shared_azurite().connection_string)
    with contextlib.suppress(ResourceNotFoundError):  # the shared emulator may hold it from another test
        service.get_blob_client(WHEEL_CONTAINER, wheel.blob).delete_blob()
    folder = tmp_path / "vm-var-tmp"
    folder.mkdir()
    with locker_route(arm, locker, WORKSTATION, monkeypatch) as front, vm_side(arm, front, folder) as imds:
        arm.compute.in_transit = _damage_second_piece
        damaged = run_cli("deploy", str(manufacturing), "--yes")
        assert damaged.exit_code != 0
        errors = [line for line in damaged.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and damaged.stderr.rstrip().endswith(errors[0]), damaged.stderr[-2000:]
        assert "piece 2 of" in errors[0] and "refused: its SHA-256 is" in errors[0], errors
        assert "Traceback" not in damaged.stdout + damaged.stderr
        assert [r.name for r in arm.world.deployments.values() if r.name.endswith("-compute")]
        assert arm.compute.commands == {}  # the failed piece's run command is deleted too
        arm.compute.in_transit = None
        again = run_cli("deploy", str(manufacturing), "--yes")
    assert again.exit_code == 0, again.stdout[-3000:] + again.stderr
    out = again.stdout + again.stderr
    assert "locker's network refuses this machine (AuthorizationFailure): staging through the CycleCloud VM" in out
    assert f"{wheel.blob} is in the locker" in out
    # The direct upload was refused at the network, and nothing else from the workstation reached the locker.
    assert set(front.refused) == {"public network access is disabled"}
    assert service.get_blob_client(WHEEL_CONTAINER, wheel.blob).download_blob().readall() == wheel.path.read_bytes()
    # The VM's token was for CycleCloud's identity (the one that holds the locker's write role).
    assert {identity.rsplit("/", 1)[-1] for _vm, identity in imds.issued} == {
        Zone(load_config(manufacturing).config).identity_name("scheduler")
    }
    # Nothing left behind: no run command, no staging folder; each script within the bound hpclz keeps.
    assert arm.compute.commands == {} and list(folder.iterdir()) == []
    assert arm.compute.most == 1
    sent = [s for s in arm.compute.scripts if "hpclz deploy: " in s]
    assert sent and max(len(s.encode()) for s in sent) <= SCRIPT_LIMIT
    assert sum("HPCLZ_UPLOAD" in s for s in sent) == 1  # the damaged run stopped before its upload step
    # A third deploy from the workstation has nothing to stage: state records the wheel in the locker.
    scripts = len(arm.compute.scripts)
    with locker_route(arm, locker, WORKSTATION, monkeypatch):
        third = run_cli("deploy", str(manufacturing), "--yes")
    assert third.exit_code == 0, third.stdout[-3000:] + third.stderr
    assert len(arm.compute.scripts) == scripts


@pytest.mark.timeout(240)
def test_from_inside_the_zones_vnet_the_rendered_private_endpoint_and_dns_carry_the_upload(
    arm: ArmStandIn, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    # energy: its cluster reads a Key Vault secret (the Slurm database password) as well as the locker.
    energy = tmp_path / "energy" / "lz.yaml"
    energy.parent.mkdir()
    shutil.copy(REPO / "configs" / "energy.yaml", energy)
    locker, compute_subnet = ids(arm, energy)
    jump_host = Origin(subnet=compute_subnet, name="a VM in the zone's compute subnet")
    with locker_route(arm, locker, jump_host, monkeypatch) as front:
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
    locker, _ = ids(arm, REPO / "configs" / "finance.yaml")
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


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_deploy_killed_while_staging_stages_again_on_the_next_run_and_leaves_nothing(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """kill -9 while the VM runs piece 3: that run command and the pieces written so far stay behind; the next deploy
    sends every piece again under the same names (replacing the leftover command), uploads, and removes it all."""
    locker, _ = ids(arm, manufacturing)
    wheel = hpclz_wheel()
    service = BlobServiceClient.from_connection_string(shared_azurite().connection_string)
    with contextlib.suppress(ResourceNotFoundError):  # the shared emulator may hold it from another test
        service.get_blob_client(WHEEL_CONTAINER, wheel.blob).delete_blob()
    folder = tmp_path / "vm-var-tmp"
    folder.mkdir()
    arrived, release = threading.Event(), threading.Event()

    def hold_third_piece(script: str) -> str:
        if "piece 3 of" in script and not release.is_set():
            arrived.set()
            release.wait(timeout=300)
        return script

    with locker_route(arm, locker, WORKSTATION, monkeypatch) as front, vm_side(arm, front, folder):
        arm.compute.in_transit = hold_third_piece
        proc = subprocess.Popen(
            [*HPCLZ, "deploy", str(manufacturing), "--yes"],
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=interruptible,
        )
        try:
            assert arrived.wait(timeout=300), "piece 3 never reached the VM"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            release.set()
        left = [c for c in arm.compute.commands.values() if c.done.wait(timeout=60)]
        assert [c.name for c in left] == [f"hpclz-wheel-{wheel.sha256[:12]}-2"]  # piece 3's, never deleted
        assert len(list(folder.glob("hpclz-wheel-*/*"))) == 3  # pieces 1 to 3 written
        sent = len(arm.compute.scripts)
        resumed = run_cli("deploy", str(manufacturing), "--yes")
    assert resumed.exit_code == 0, resumed.stdout[-3000:] + resumed.stderr
    again = arm.compute.scripts[sent:]
    assert sum("piece 1 of" in s for s in again) == 1 and sum("HPCLZ_UPLOAD" in s for s in again) == 1
    assert arm.compute.commands == {} and list(folder.iterdir()) == []
    assert service.get_blob_client(WHEEL_CONTAINER, wheel.blob).download_blob().readall() == wheel.path.read_bytes()
