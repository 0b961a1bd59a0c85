"""State records from a finished deployment, and what destroy keeps."""

from __future__ import annotations

from hpclz.azure.destroy import kept_set
from hpclz.azure.records import outputs_of, resource_records
from hpclz.render.plan import Deployment
from hpclz.state.model import ResourceRecord

RG = "/subscriptions/s/resourceGroups/rg"
VNET = f"{RG}/providers/Microsoft.Network/virtualNetworks/vnet1"
FS = f"{RG}/providers/Microsoft.StorageCache/amlFilesystems/fs1"
NSG = f"{RG}/providers/Microsoft.Network/networkSecurityGroups/nsg1"


def test_records_carry_api_version_data_flag_and_rendered_properties() -> None:
    d = Deployment(
        name="st",
        component="storage",
        scope="resourceGroup",
        resource_group="rg",
        location="eastus2",
        template={
            "resources": [
                {
                    "type": "Microsoft.StorageCache/amlFilesystems",
                    "apiVersion": "2024-03-01",
                    "name": "fs1",
                    "properties": {"filesystemSubnet": "x"},
                },
                {
                    "type": "Microsoft.Network/virtualNetworks",
                    "apiVersion": "2023-09-01",
                    "name": "vnet1",
                    "tags": {"hpclz-data": "false"},
                },
            ]
        },
    )
    remote = {"properties": {"outputResources": [{"id": FS}], "outputs": {}}}
    ops = [
        {"properties": {"provisioningState": "Succeeded", "targetResource": {"id": VNET}}},
        {"properties": {"provisioningState": "Failed", "targetResource": {"id": NSG}}},
    ]
    records = {r.name: r for r in resource_records(d, remote, ops)}
    assert set(records) == {"fs1", "vnet1"}
    assert records["fs1"].data_bearing and not records["vnet1"].data_bearing
    assert records["fs1"].api_version == "2024-03-01" and records["fs1"].properties == {"filesystemSubnet": "x"}


def test_secure_outputs_never_reach_state() -> None:
    remote = {
        "properties": {
            "outputs": {
                "ip": {"type": "String", "value": "10.0.0.4"},
                "key": {"type": "SecureString", "value": "s3cret"},
            }
        }
    }
    assert outputs_of(remote) == {"ip": "10.0.0.4"}


def _record(rid: str, rtype: str, props: dict | None = None, data: bool = False) -> ResourceRecord:
    return ResourceRecord(
        id=rid,
        type=rtype,
        name=rid.rsplit("/", 1)[-1],
        api_version="1",
        deployment="d",
        data_bearing=data,
        properties=props or {},
    )


def test_kept_data_keeps_what_it_uses_and_its_group() -> None:
    resources = [
        _record(RG, "Microsoft.Resources/resourceGroups"),
        _record(NSG, "Microsoft.Network/networkSecurityGroups"),
        _record(VNET, "Microsoft.Network/virtualNetworks"),
        _record(
            FS,
            "Microsoft.StorageCache/amlFilesystems",
            {"filesystemSubnet": "[resourceId('Microsoft.Network/virtualNetworks/subnets', 'vnet1', 'lustre')]"},
            data=True,
        ),
    ]
    kept = kept_set(resources, include_data=False)
    assert set(kept) == {FS.lower(), VNET.lower(), RG.lower()}
    assert kept[VNET.lower()] == "used by kept fs1"
    assert kept_set(resources, include_data=True) == {}
