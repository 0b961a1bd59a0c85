"""Deploying from a workstation outside the zone's VNet with the locker's network enforced: the deploying
machine's route to the locker's Blob endpoint (a BlobFront from the workstation, which the private locker refuses,
as Azure Storage refuses it) and what a VM's scripts see (the locker by the VM's own network, the instance metadata
service for the identities the VM carries), so that deploy stages its wheel through the CycleCloud VM
(hpclz.deploy.wheel_staging) exactly as it must on an empty subscription."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hpclz.azure.locker import CONNECTION_STRING_ENV
from hpclz.config.loader import load_config
from hpclz.render.zone import Zone
from tests.support.arm_standin import ArmStandIn
from tests.support.arm_standin.data_planes import BlobFront, VmBlobRoutes
from tests.support.arm_standin.imds import Imds
from tests.support.arm_standin.reach import WORKSTATION, Origin
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, shared_azurite


def ids(arm: ArmStandIn, config: Path) -> tuple[str, str]:
    """The locker account's ID and the zone's compute subnet's ID, as the zone's templates name them."""
    zone = Zone(load_config(config).config)
    sub = f"/subscriptions/{arm.subscription_id}/resourceGroups"
    locker = f"{sub}/{zone.rg['storage']}/providers/Microsoft.Storage/storageAccounts/{zone.locker_account_name}"
    vnet = f"{sub}/{zone.rg['network']}/providers/Microsoft.Network/virtualNetworks/{zone.vnet_name}"
    return locker, f"{vnet}/subnets/{zone.subnet('compute').name}"


@contextmanager
def locker_route(arm: ArmStandIn, locker: str, origin: Origin, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlobFront]:
    front = BlobFront(arm, locker, shared_azurite().account_url, origin).start()
    monkeypatch.setenv(CONNECTION_STRING_ENV, front.connection_string(ACCOUNT, ACCOUNT_KEY))
    try:
        yield front
    finally:
        front.stop()


@contextmanager
def vm_side(arm: ArmStandIn, front: BlobFront, folder: Path) -> Iterator[Imds]:
    """What a VM's scripts see: the locker by the VM's own network (its NIC's subnet, reach.py), the instance metadata
    service for the identities the VM carries, and `folder` in place of the VM's /var/tmp."""
    routes = VmBlobRoutes(arm, [front])
    imds = Imds(arm).start()
    arm.compute.from_vm += [routes.route, imds.route]
    arm.compute.vm_env.update(
        HPCLZ_BLOB_URL=front.account_url,
        HPCLZ_IMDS_URL=imds.url,
        HPCLZ_STAGE_DIR=str(folder),
        HPCLZ_LOCKER_ATTEMPTS="1",
    )
    try:
        yield imds
    finally:
        imds.stop()
        routes.stop()


@contextmanager
def from_workstation(
    arm: ArmStandIn, config: Path, monkeypatch: pytest.MonkeyPatch, vm_tmp: Path
) -> Iterator[tuple[BlobFront, Imds]]:
    """Everything a deploy of `config` from a workstation outside every VNet meets at the locker."""
    locker, _ = ids(arm, config)
    vm_tmp.mkdir(parents=True, exist_ok=True)
    with locker_route(arm, locker, WORKSTATION, monkeypatch) as front, vm_side(arm, front, vm_tmp) as imds:
        yield front, imds
