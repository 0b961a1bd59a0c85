"""The Open OnDemand portal on the ARM stand-in through the real SDK clients: deploy, next steps, destroy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import RunCli
from tests.support.arm_standin import ArmStandIn

VM = "Microsoft.Compute/virtualMachines"


def _portal_vm(arm: ArmStandIn) -> dict[str, Any]:
    return next(r for r in arm.world.resources.values() if r["type"] == VM and r["name"] == "vm-aitrain-ood-prod-eus2")


def test_the_portal_deploys_privately_and_next_steps_tunnel_to_it(arm: ArmStandIn, zone: Path, run_cli: RunCli) -> None:
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout
    portal = _portal_vm(arm)
    nics = [r for r in arm.world.resources.values() if r["type"] == "Microsoft.Network/networkInterfaces"]
    assert all("publicIPAddress" not in c["properties"] for n in nics for c in n["properties"]["ipConfigurations"])
    assert not [
        r
        for r in arm.world.resources.values()
        if r["type"] == "Microsoft.Network/publicIPAddresses" and "ood" in r["name"]
    ]
    steps = result.stdout.split("Next steps", 1)[1]
    where = f"--name bas-aitrain-prod-eus2 --resource-group rg-aitrain-network-prod-eus2 --target-resource-id {portal['id']}"
    # The same way as the CycleCloud UI's, a tunnel to port 22 and ssh's forward to the portal's 443 (Bastion's tunnel
    # carries SSH or RDP: MicrosoftDocs/azure-docs@b8db86a includes/bastion-native-connect-tunnel.md l.11), on other
    # local ports, so both can run at once; the browser still opens localhost:9443, the portal's alias.
    flat = " ".join(steps.split())
    assert f"az network bastion tunnel {where} --resource-port 22 --port 9822" in flat
    assert "ssh -N -p 9822 -L 9443:localhost:443 -i <your private key> hpcadmin@127.0.0.1" in flat
    assert "--resource-port 443" not in flat
    assert "https://localhost:9443/oidc" in steps and "3c1f9a52-7d4e-4b8a-9e21-5f6d0c8b2a17" in steps


def test_plain_destroy_removes_the_portal_it_holds_no_data(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(zone)
    kept = run_cli("destroy", str(zone), "--yes")
    assert kept.exit_code == 0, kept.stderr
    names = {r["name"] for r in arm.world.resources.values()}
    assert not {"vm-aitrain-ood-prod-eus2", "nic-aitrain-ood-prod-eus2", "nsg-aitrain-ood-prod-eus2"} & names


def test_the_client_secret_reader_role_lands_on_the_vault(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    yaml = YAML()
    data = yaml.load(zone.read_text(encoding="utf-8"))
    data["identity"]["key_vault"].setdefault("secrets", {})["ood-client-secret"] = "${env:OOD_CLIENT_SECRET}"
    data["portal"]["oidc"]["client_secret_name"] = "ood-client-secret"
    with zone.open("w", encoding="utf-8") as handle:
        yaml.dump(data, handle)
    monkeypatch.setenv("OOD_CLIENT_SECRET", "Xy7~portal.client-secret")
    result = run_cli("deploy", str(zone), "--yes")
    assert result.exit_code == 0, result.stderr + result.stdout
    portal = _portal_vm(arm)
    assert portal["identity"]["type"] == "SystemAssigned"
    roles = [
        r
        for r in arm.world.resources.values()
        if r["type"] == "Microsoft.Authorization/roleAssignments"
        and "/providers/Microsoft.KeyVault/vaults/kv-aitrain-prod-eus2-a1/" in r["id"]
        and "4633458b-17de-408a-b874-0445c86b69e6" in r["properties"]["roleDefinitionId"]
    ]
    descriptions = [r["properties"]["description"] for r in roles]
    assert "hpclz: Key Vault Secrets User for portal.oidc.client_secret_name" in descriptions
    state_text = "".join(p.read_text() for p in (zone.parent / ".hpclz").rglob("*.json"))
    assert "Xy7~portal.client-secret" not in state_text


def test_new_sign_in_settings_recreate_the_portal_once_consented(
    arm: ArmStandIn, zone: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    """A new boot script cannot reach a VM in place (customData): deploy says so, then recreates the portal when
    the engineer consents; the CycleCloud server is untouched."""
    predeployed(zone)
    before = _portal_vm(arm)["properties"]["osProfile"]["customData"]
    server = next(r for r in arm.world.resources.values() if r["type"] == VM and "-cc-" in r["name"])
    zone.write_text(
        zone.read_text(encoding="utf-8").replace(
            "3c1f9a52-7d4e-4b8a-9e21-5f6d0c8b2a17", "9d3e6b1a-2c4f-4a8e-b7d5-1f0e2a3c4b5d"
        ),
        encoding="utf-8",
    )
    refused = run_cli("deploy", str(zone), "--yes")
    assert refused.exit_code != 0
    assert "portal.oidc.client_id" in refused.stderr and "nothing was changed" in refused.stderr
    assert _portal_vm(arm)["properties"]["osProfile"]["customData"] == before
    mark = len(arm.log)
    done = run_cli(
        "deploy",
        str(zone),
        "--yes",
        "--allow-data-loss",
        "--replace",
        "Microsoft.Compute/virtualMachines/vm-aitrain-ood-prod-eus2",
    )
    assert done.exit_code == 0, done.stderr + done.stdout
    deleted = [r.path for r in arm.log[mark:] if r.method == "DELETE"]
    assert [p.rsplit("/", 1)[1] for p in deleted] == ["vm-aitrain-ood-prod-eus2"]  # deleted, then created again
    after = _portal_vm(arm)["properties"]["osProfile"]["customData"]
    assert after != before
    assert next(r for r in arm.world.resources.values() if r["id"] == server["id"]) == server
