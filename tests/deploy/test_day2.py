"""The day-2 table, end to end: the energy preset deployed to the ARM stand-in, then one edit at a time
(plan, deploy, plan again), as a terraform user would try it.

Each row says what Azure does with the edit (and where that is documented), the verdict plan must give,
and what deploy must do: apply it (after which plan is clean and the stand-in holds exactly what state
records), or refuse it before its first write.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from hpclz.errors import HpclzError
from tests.conftest import RunCli
from tests.deploy.conftest import HPCLZ, azure_made, our_groups, state_of
from tests.support.arm_standin import ArmStandIn

pytestmark = pytest.mark.slow

PIN = "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026082801"  # the presets' node image (docs/patching.md)
PARTITION_HBV3 = (
    f"    - name: hbv3\n      vm_size: Standard_HB120rs_v3\n      image: {PIN}\n      max_nodes: 64\n"
    "      infiniband: true\n      nvme_scratch: {enabled: true}   # 2 local NVMe disks: /scratch on this partition too\n"
    "      zone: 1\n      idle_shutdown_minutes: 15\n"
)

PARTITION_HBV4 = (
    "    - name: hbv4               # 176 AMD Genoa-X cores, 200 Gb/s NDR InfiniBand: wave-equation kernels\n"
    f"      vm_size: Standard_HB176rs_v4\n      image: {PIN}\n      max_nodes: 100"
    "           # one scale set in one placement group (100 VMs at most): one InfiniBand fabric (HPCLZ-CMP-019)\n"
    "      infiniband: true\n"
    "      zone: 1\n      nvme_scratch: {enabled: true, mount_point: /mnt/nvme}\n      idle_shutdown_minutes: 15\n"
    "      default: true\n"
)
# monitoring: {mode: disabled} takes no other setting: the preset's are removed with it.
MONITORING_SETTINGS = (
    ("  retention_days: 90\n", ""),
    ("  action_group: {short_name: energyops, emails: [hpc-oncall@example.com]}\n", ""),
    ("  prometheus: {mode: new}\n", ""),
)
SCHEDULER = f"scheduler: {{vm_size: Standard_D8as_v5, image: {PIN}}}"


DISRUPTION = "--allow-disruption"
DATA_LOSS = "--allow-data-loss"
NOT_ALLOWED = "NOT ALLOWED"


@dataclass(frozen=True)
class Row:
    """One day-2 edit. `edits`: (old, new) text replacements in the energy preset.

    Deploy applies it, with `consent` where it needs one (refused without it, the refusal naming it), or, where
    `refusal` is set, refuses it before any write whatever flags it is given, saying `refusal`.
    """

    name: str
    edits: tuple[tuple[str, str], ...]
    azure: str  # what Azure does with it, and the source
    plan_says: str  # a phrase plan must print
    consent: str = ""  # the deploy flag the row needs to be applied (DISRUPTION or DATA_LOSS)
    refusal: str = ""  # deploy never applies the row: what its refusal says
    refused_code: int = 1
    writes: tuple[str, ...] = ("PUT",)  # write methods deploy makes where it applies the row, in order of first use
    before: tuple[tuple[str, str], ...] = ()  # edits made before the first deploy (the zone the row starts from)

    @property
    def applied(self) -> bool:
        return not self.refusal

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.consent,) if self.consent else ()

    @property
    def refused_without(self) -> str:
        """What deploy's refusal says: without `flags` where it applies the row, whatever the flags where it never does."""
        return self.consent or self.refusal


ROWS = [
    Row(
        "add a partition",
        # A prod partition pins its image like the preset's (HPCLZ-CMP-050).
        (("  quotas:", f"    - {{name: small, vm_size: Standard_HB176rs_v4, max_nodes: 2, image: {PIN}}}\n  quotas:"),),
        "the cluster definition travels in the CycleCloud VM's userData, which ARM updates in place "
        "(https://learn.microsoft.com/azure/virtual-machines/user-data)",
        "compute.partitions[small]",
    ),
    Row(
        "grow a partition",
        (("max_nodes: 100", "max_nodes: 130"),),
        "CycleCloud changes a nodearray's limit in place; running nodes stay",
        "compute.partitions[hbv4].max_nodes: 100 -> 130",
    ),
    Row(
        "resize a partition",
        (("vm_size: Standard_ND96isr_H100_v5", "vm_size: Standard_ND96isr_H200_v5"),),
        "a nodearray's VM size applies to nodes started after the change: running nodes must be drained",
        "compute.partitions[gpu].vm_size",
        consent=DISRUPTION,
    ),
    Row(
        "remove a partition",
        ((PARTITION_HBV3, ""),),
        "the nodearray and its nodes go: jobs on it must finish first",
        "drain partition hbv3",
        consent=DISRUPTION,
    ),
    Row(
        "add an NSG rule",
        (
            (
                "  bastion: {enabled: true",
                "  nsg_rules:\n    - {name: flexlm, subnet: compute, priority: 300, destination_port_range: "
                '"27000-27010"}\n  bastion: {enabled: true',
            ),
        ),
        "security rules are updated in place on the NSG "
        "(https://learn.microsoft.com/azure/virtual-network/manage-network-security-group)",
        "network.nsg_rules[flexlm]",
    ),
    Row(
        "add an address range",
        (("address_space: [10.20.0.0/16]", "address_space: [10.20.0.0/16, 10.21.0.0/16]"),),
        "a VNet's address space grows in place "
        "(https://learn.microsoft.com/azure/virtual-network/manage-virtual-network#add-or-remove-an-address-range)",
        "network.vnet.address_space",
    ),
    Row(
        "renumber a subnet in use",
        (("admin: {cidr: 10.20.0.0/24}", "admin: {cidr: 10.20.3.0/24}"),),
        "a subnet's range cannot change while it holds resources: InUseSubnetCannotBeUpdated "
        "(https://learn.microsoft.com/azure/virtual-network/virtual-network-manage-subnet#change-subnet-settings)",
        "NOT ALLOWED",
        refusal=NOT_ALLOWED,
    ),
    Row(
        "renumber the address space and its subnets",
        (
            ("address_space: [10.20.0.0/16]", "address_space: [10.30.0.0/16]"),
            ("admin: {cidr: 10.20.0.0/24}", "admin: {cidr: 10.30.0.0/24}"),
            ("cidr: 10.20.1.0/26}", "cidr: 10.30.1.0/26}"),
            ("private_endpoints: {cidr: 10.20.1.64/26}", "private_endpoints: {cidr: 10.30.1.64/26}"),
            ("lustre: {cidr: 10.20.2.0/24}", "lustre: {cidr: 10.30.2.0/24}"),
            ("database: {cidr: 10.20.1.128/28", "database: {cidr: 10.30.1.128/28"),
            ("compute: {cidr: 10.20.16.0/20}", "compute: {cidr: 10.30.16.0/20}"),
        ),
        "subnets in use cannot change range (InUseSubnetCannotBeUpdated), nor can a range in use go "
        "(NetcfgSubnetRangeOutsideVnet): a new network is a new landing zone",
        "NOT ALLOWED",
        refusal=NOT_ALLOWED,
    ),
    Row(
        "rename the storage resource group",
        (
            (
                "  required_tags: [owner, costCenter]",
                "  resource_groups: {storage: rg-seismic-data}\n  required_tags: [owner, costCenter]",
            ),
        ),
        "a resource cannot be renamed into another group in place; moving one is a separate operation "
        "(https://learn.microsoft.com/azure/azure-resource-manager/management/move-resource-group-and-subscription)",
        "NOT ALLOWED",
        refusal=NOT_ALLOWED,
    ),
    Row(
        "change the region",
        (
            ("location: southcentralus     #", "location: eastus     #"),
            ("allowed_locations: [southcentralus]", "allowed_locations: [southcentralus, eastus]"),
        ),
        "a resource's location is fixed at creation; a region change is a new landing zone "
        "(https://learn.microsoft.com/azure/azure-resource-manager/management/move-support-resources)",
        "NOT ALLOWED",
        refusal="a region cannot change in place",
        refused_code=64,  # the state's recorded region names another zone: refused as a foreign state
    ),
    # Slurm accounting's MySQL flexible server (learn.microsoft.com/azure/mysql/flexible-server/
    # concepts-service-tiers-storage#scale-resources and concepts-backup-restore#backup-retention).
    Row(
        "grow the accounting database's storage",
        (("storage_gib: 32", "storage_gib: 64"),),
        "storage grows online without a restart; it can only be increased",
        "compute.accounting.storage_gib: 32 -> 64",
    ),
    Row(
        "shrink the accounting database's storage",
        (("storage_gib: 32", "storage_gib: 20"),),
        '"The storage size can only be increased. You cannot go back to a smaller storage size after the increase."',
        "storage can't be scaled down",
        refusal=NOT_ALLOWED,
    ),
    Row(
        "shorten the accounting backup retention",
        (("backup_retention_days: 35", "backup_retention_days: 14"),),
        "the backup retention period can be scaled up or down from 1 to 35 days, online",
        "compute.accounting.backup_retention_days: 35 -> 14",
    ),
    Row(
        "resize the accounting server",
        (("sku: Standard_D2ads_v5", "sku: Standard_D4ads_v5"),),
        "a new compute size restarts the server (60-120 s)",
        "compute.accounting.sku",
        consent=DISRUPTION,
    ),
    Row(
        "resize the CycleCloud server",
        (("    slurm_version: 25.11.5\n", "    slurm_version: 25.11.5\n    vm_size: Standard_D8as_v5\n"),),
        "Azure resizes a VM in place with a restart (https://learn.microsoft.com/azure/virtual-machines/sizes/"
        "resize-vm): no data-loss flag, only consent to the restart",
        "compute.cyclecloud.vm_size",
        consent=DISRUPTION,
    ),
    Row(
        "move a partition to the end of the list",
        ((PARTITION_HBV4, ""), ("  quotas:", PARTITION_HBV4 + "  quotas:")),
        "partitions are matched by name, and CycleCloud reads a cluster's sections in any order (\"The specific order "
        'of the sections is not important", learn.microsoft.com/azure/cyclecloud/cluster-references/'
        "cluster-template-reference); hbv4 stays the default partition (default: true)",
        "No changes.",
        writes=(),
    ),
    Row(
        "resize the scheduler",
        ((SCHEDULER, SCHEDULER.replace("Standard_D8as_v5", "Standard_D16as_v5")),),
        "the scheduler is CycleCloud's node, defined in the cluster the CycleCloud VM's userData carries (updated in "
        "place); its new size applies when CycleCloud next starts it, and its persistent volumes are re-attached "
        "(hpclz.config.compute.NodeRole cites both): a restart, no data-loss flag",
        "the scheduler node picks it up when CycleCloud next starts it",
        consent=DISRUPTION,
    ),
    Row(
        "bump the scheduler's image",
        # A later version string of the same image (made up: CycleCloud, not ARM, resolves the scheduler's image).
        ((SCHEDULER, SCHEDULER.replace("22.04.2026082801", "22.04.2026091501")),),
        "as a new size: the node boots the new image when CycleCloud next starts it, its persistent volumes kept",
        "compute.scheduler.image",
        consent=DISRUPTION,
    ),
    Row(
        "move the accounting server to a new subnet",
        (
            (
                "database: {cidr: 10.20.1.128/28, delegation",
                "database: {name: snet-db2, cidr: 10.20.1.128/28, delegation",
            ),
        ),
        "a VNet-integrated server cannot move to another subnet (concepts-networking-vnet, unsupported scenarios)",
        "a VNet-integrated server cannot move to another subnet",
        refusal=NOT_ALLOWED,
    ),
    Row(
        "grow Lustre",
        (("capacity_tib: 48", "capacity_tib: 96"),),
        "Managed Lustre grows in place only through an expansion job (az amlfs expansion create, "
        "https://learn.microsoft.com/cli/azure/amlfs/expansion), not a new storageCapacityTiB in its own PUT; "
        "hpclz creates no expansion jobs, so it refuses rather than replace a file system Azure can grow",
        "az amlfs expansion create",
        refusal=NOT_ALLOWED,
    ),
    Row(
        "shrink Lustre",
        (("capacity_tib: 48", "capacity_tib: 32"),),
        "Managed Lustre cannot shrink (an expansion job's new capacity must exceed the current one, "
        "https://learn.microsoft.com/javascript/api/@azure/arm-storagecache/expansionjob); the stand-in refuses "
        "the in-place PUT with PropertyChangeNotAllowed, so only delete-then-create works",
        "DATA LOSS",
        consent=DATA_LOSS,
        writes=("DELETE", "PUT"),
    ),
    Row(
        "turn the blob private endpoint off",
        (("private_endpoint: true", "private_endpoint: false"),),
        "ARM's incremental mode leaves resources a template omits in place "
        "(https://learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes#incremental-mode): "
        "hpclz deletes them itself",
        # The endpoint and its zone group; the privatelink.blob zone and its VNet link stay for CycleCloud's locker.
        "2 to destroy",
        writes=("PUT", "DELETE"),
    ),
    Row(
        "change a tag",
        (("workload: seismic", "workload: seismic-v2"),),
        "tags update in place (https://learn.microsoft.com/azure/azure-resource-manager/management/tag-resources)",
        "metadata.tags.workload",
    ),
    Row(
        "turn the portal off",
        (("portal:\n  enabled: true", "portal:\n  enabled: false"),),
        "ARM's incremental mode leaves the portal's VM, NIC, NSG and extensions in place "
        "(https://learn.microsoft.com/azure/azure-resource-manager/templates/deployment-modes#incremental-mode): "
        "hpclz deletes them itself, dependants first; the portal holds no data",
        "portal.enabled: true -> false",
        writes=("DELETE",),
    ),
    Row(
        "turn monitoring off",
        (("monitoring:\n  mode: new", "monitoring:\n  mode: disabled"), *MONITORING_SETTINGS),
        "the Log Analytics workspace goes with the logs it holds (a data-loss consent); the VMs' data collection "
        "rule associations and agents go with it (https://learn.microsoft.com/azure/azure-monitor/agents/"
        "data-collection-rule-azure-monitor-agent): deleted by hpclz, not left behind",
        "DATA LOSS: new -> disabled: the Log Analytics workspace is deleted",
        consent=DATA_LOSS,
        writes=("PUT", "DELETE"),
        # Production refuses monitoring off (HPCLZ-MON-001): the row starts from the same zone as `test`.
        before=(("environment: prod ", "environment: test "),),
    ),
    Row(
        "upgrade CycleCloud",
        (("    version: 8.9.1", "    version: 8.9.2"),),
        "the CycleCloud version is installed once by the server VM's customData, which cannot change after "
        "the VM is created (https://learn.microsoft.com/azure/virtual-machines/custom-data); 8.9.2 is also outside "
        "the supported CycleCloud/cyclecloud-slurm/Slurm triples, so validation refuses it first",
        "HPCLZ-CMP-017",
        refusal="HPCLZ-CMP-017",
    ),
]


def edit(config: Path, edits: tuple[tuple[str, str], ...]) -> None:
    text = config.read_text()
    for old, new in edits:
        assert old in text, f"the preset no longer holds {old!r}"
        text = text.replace(old, new)
    config.write_text(text)


def writes_since(arm: ArmStandIn, start: int) -> list[str]:
    """Write calls to ARM, without POST validate/what-if (they change nothing)."""
    return [r.method for r in arm.log[start:] if r.method in ("PUT", "DELETE", "PATCH")]


def assert_inventory_is_state(arm: ArmStandIn, config: Path) -> None:
    recorded = {r["id"].lower() for r in state_of(config)["resources"]}
    present = (set(arm.world.resources) | {g["id"].lower() for g in arm.world.groups.values()}) - azure_made(arm)
    assert present == recorded, (
        f"in Azure, not in state: {sorted(present - recorded)}; in state, not in Azure: {sorted(recorded - present)}"
    )


def assert_plan_clean(run_cli: RunCli, config: Path) -> None:
    again = run_cli("plan", str(config), "--detailed-exitcode")
    assert again.exit_code == 0, again.stdout + again.stderr
    assert "No changes." in again.stdout


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_day2_row(
    row: Row, arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    edit(energy, row.before)
    predeployed(energy)
    edit(energy, row.edits)

    plan = run_cli("plan", str(energy))
    assert row.plan_says in plan.stdout, plan.stdout + plan.stderr
    assert plan.exit_code == (0 if row.applied else 1), plan.stdout

    serial = state_of(energy)["serial"]
    if row.refused_without:
        start = len(arm.log)
        refused = run_cli("deploy", str(energy), "--yes")
        assert refused.exit_code == row.refused_code, refused.stdout + refused.stderr
        assert row.refused_without in refused.stderr + refused.stdout  # validation findings print on stdout
        assert writes_since(arm, start) == []
        assert state_of(energy)["serial"] == serial
    if not row.applied:
        # Neither flag gets a NOT ALLOWED change through.
        start = len(arm.log)
        forced = run_cli("deploy", str(energy), "--yes", "--allow-data-loss", "--allow-disruption")
        assert forced.exit_code == row.refused_code, forced.stderr
        assert row.refused_without in forced.stderr + forced.stdout, forced.stderr
        assert writes_since(arm, start) == []
        assert_inventory_is_state(arm, energy)
        return

    start = len(arm.log)
    applied = run_cli("deploy", str(energy), "--yes", *row.flags)
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    made = writes_since(arm, start)
    assert list(dict.fromkeys(made)) == list(row.writes), made
    if row.writes:
        assert "hpclz will perform the following actions" in applied.stderr  # the plan shown before applying
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)


def test_private_endpoint_off_deletes_dependants_first_then_on_again(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    edit(energy, (("private_endpoint: true", "private_endpoint: false"),))
    start = len(arm.log)
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    deleted = [r.path.lower() for r in arm.log[start:] if r.method == "DELETE"]
    endpoint = next(i for i, p in enumerate(deleted) if p.endswith("/privateendpoints/pep-energy-blob-prod-scus"))
    group = next(
        i for i, p in enumerate(deleted) if p.endswith("/pep-energy-blob-prod-scus/privatednszonegroups/default")
    )
    assert group < endpoint, deleted  # the endpoint's DNS registration depends on the endpoint: it goes first
    assert not any("pep-energy-blob" in k for k in arm.world.resources)
    # The privatelink.blob zone stays: CycleCloud's locker account still answers through its own endpoint there.
    assert not any(p.endswith("/privatednszones/privatelink.blob.core.windows.net") for p in deleted)
    assert any(k.endswith("/privateendpoints/pep-energy-locker-prod-scus") for k in arm.world.resources)

    edit(energy, (("private_endpoint: false", "private_endpoint: true"),))
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    assert any(k.endswith("/privateendpoints/pep-energy-blob-prod-scus") for k in arm.world.resources)
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)


def test_another_zones_state_is_refused_before_any_write(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    state_file = next((energy.parent / ".hpclz").rglob("state.json"))
    other = energy.parent / "other.yaml"
    other.write_text(energy.read_text().replace("name: energy ", "name: seismic "))
    # Point the other zone's local state at the energy zone's file, as a copied `state:` block would.
    (energy.parent / ".hpclz" / "seismic-prod").mkdir()
    shutil.copy(state_file, energy.parent / ".hpclz" / "seismic-prod" / "state.json")
    start = len(arm.log)
    for command in (("plan",), ("deploy", "--yes"), ("destroy", "--yes")):
        refused = run_cli(*command[:1], str(other), *command[1:])
        # The local backend refuses a document outside its zone's folder when it reads it (exit 1); the
        # identity check (hpclz.state.identity, exit 64) refuses it wherever it is stored (a Blob name).
        assert refused.exit_code in (1, 64), (command, refused.stdout, refused.stderr)
        assert "energy" in refused.stderr and "seismic" in refused.stderr and "landing zone" in refused.stderr
    assert writes_since(arm, start) == []


def test_secret_in_a_tag_is_refused_before_any_write(arm: ArmStandIn, energy: Path, run_cli: RunCli) -> None:
    # A storage connection string pasted into a tag: the shape of a real one, with a made-up key.
    key = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG8="
    edit(energy, (("workload: seismic", f'workload: "AccountName=st1;AccountKey={key}"'),))
    refused = run_cli("deploy", str(energy), "--yes")
    assert refused.exit_code == 3, refused.stdout + refused.stderr
    assert "storage account key in a connection string" in refused.stderr and key not in refused.stderr
    assert writes_since(arm, 0) == [] and our_groups(arm) == {}


def test_saved_plan_with_a_not_allowed_change_is_not_saved(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    edit(energy, (("admin: {cidr: 10.20.0.0/24}", "admin: {cidr: 10.20.3.0/24}"),))
    saved = energy.parent / "plan.json"
    result = run_cli("plan", str(energy), "--out", str(saved), "-o", "json")
    assert result.exit_code == 1
    body = json.loads(result.stdout)["result"]
    assert body["saved_to"] is None and "not allowed" in body["not_saved"]
    assert not saved.exists()


def test_saved_plan_is_held_to_the_same_contract(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    edit(energy, (("capacity_tib: 48", "capacity_tib: 32"),))
    saved = energy.parent / "plan.json"
    assert run_cli("plan", str(energy), "--out", str(saved)).exit_code == 0
    start = len(arm.log)
    refused = run_cli("deploy", str(energy), "--plan", str(saved), "--yes")
    assert refused.exit_code == 1 and "--allow-data-loss" in refused.stderr
    assert writes_since(arm, start) == []
    applied = run_cli("deploy", str(energy), "--plan", str(saved), "--yes", "--allow-data-loss")
    assert applied.exit_code == 0, applied.stderr
    assert (
        arm.world.resources[
            next(k for k in arm.world.resources if k.endswith("amlfilesystems/amlfs-energy-prod-scus"))
        ]["properties"]["storageCapacityTiB"]
        == 32
    )


def test_no_op_deploy_leaves_state_untouched(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    before = state_of(energy)
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    after = state_of(energy)
    # The same serial: plans saved before the no-op deploy stay current.
    assert {k: v for k, v in after.items() if after.get(k) != before.get(k)} == {}


SECRETS = (
    "      slurmdb-password: ${env:SLURMDB_PASSWORD}   # resolved at deploy time\n",
    "      slurmdb-password: ${env:SLURMDB_PASSWORD}   # resolved at deploy time\n"
    "      licence-key: ${env:LICENCE_KEY}\n      api-token: ${env:API_TOKEN}\n",
)


LICENCE_V1, TOKEN_V1 = "licence-v1-0a9f3c", "token-v1-77b2e1"  # made up


@pytest.fixture
def with_secrets(arm: ArmStandIn, energy: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The energy zone deployed with two more Key Vault secrets (SECRETS), each read from the environment."""
    monkeypatch.setenv("LICENCE_KEY", LICENCE_V1)
    monkeypatch.setenv("API_TOKEN", TOKEN_V1)
    edit(energy, (SECRETS,))
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    return energy


def test_secret_rotated_is_planned_and_applied_without_reaching_state(
    arm: ArmStandIn, with_secrets: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    energy = with_secrets
    assert_plan_clean(run_cli, energy)

    monkeypatch.setenv("LICENCE_KEY", "licence-v2-5d1e08")  # rotated outside the config, as a vault would be
    plan = run_cli("plan", str(energy), "--detailed-exitcode")
    assert plan.exit_code == 2, plan.stdout
    assert "identity.key_vault.secrets.licence-key" in plan.stdout and "(sensitive, rotated)" in plan.stdout
    assert "api-token" not in plan.stdout  # unchanged secrets are not listed

    start = len(arm.log)
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    assert [r.path.rsplit("/", 1)[-1] for r in arm.log[start:] if r.method == "PUT"] == ["hpclz-energy-prod-identity"]
    sent = next(r for k, r in arm.world.deployments.items() if k.endswith("-identity")).body
    assert "licence-v2-5d1e08" in {v["value"] for v in sent["properties"]["parameters"].values()}
    assert_plan_clean(run_cli, energy)
    files = [p for p in energy.parent.rglob("*") if p.is_file() and p != energy]
    for value in (LICENCE_V1, "licence-v2-5d1e08", TOKEN_V1):
        assert not any(value.encode() in p.read_bytes() for p in files), value


def test_secret_removed_is_deleted_from_the_vault(arm: ArmStandIn, with_secrets: Path, run_cli: RunCli) -> None:
    energy = with_secrets
    edit(energy, (("      api-token: ${env:API_TOKEN}\n", ""),))
    plan = run_cli("plan", str(energy))
    # The secret and the compute identity's Key Vault Secrets User on it (roles are granted per secret).
    assert "2 to destroy" in plan.stdout, plan.stdout
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    assert not any(k.endswith("/secrets/api-token") for k in arm.world.resources)
    assert any(k.endswith("/secrets/licence-key") for k in arm.world.resources)
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)


def _drift(arm: ArmStandIn) -> tuple[str, str]:
    """What an operator does in the portal: opens the storage account to the Internet, deletes Bastion."""
    account = next(k for k, r in arm.world.resources.items() if r["type"] == "Microsoft.Storage/storageAccounts")
    arm.world.resources[account]["properties"]["publicNetworkAccess"] = "Enabled"
    bastion = next(k for k, r in arm.world.resources.items() if r["type"] == "Microsoft.Network/bastionHosts")
    del arm.world.resources[bastion]
    return account, bastion


def test_out_of_band_drift_is_shown_by_refresh_and_put_back_by_deploy(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    account, bastion = _drift(arm)

    offline = run_cli("plan", str(energy), "--detailed-exitcode", "--refresh=false")
    assert offline.exit_code == 0 and "Azure was not read" in offline.stdout  # it says it did not look

    refreshed = run_cli("plan", str(energy), "--detailed-exitcode")  # refresh is the default, as in terraform
    assert refreshed.exit_code == 2, refreshed.stdout + refreshed.stderr
    assert run_cli("plan", str(energy), "--refresh", "--detailed-exitcode").stdout == refreshed.stdout
    assert "Changed outside hpclz" in refreshed.stdout
    assert 'properties.publicNetworkAccess: "Enabled" -> "Disabled"' in refreshed.stdout
    assert "+ Microsoft.Network/bastionHosts bas-energy-prod-scus" in refreshed.stdout
    only = run_cli("plan", str(energy), "--refresh-only")
    assert "Changed outside hpclz" in only.stdout and "Plan: 0 to add, 0 to change" in only.stdout

    trusting = run_cli("deploy", str(energy), "--yes", "--refresh=false")  # trusts the state: nothing to do
    assert trusting.exit_code == 0 and arm.world.resources[account]["properties"]["publicNetworkAccess"] == "Enabled"
    start = len(arm.log)
    fixed = run_cli("deploy", str(energy), "--yes")  # deploy refreshes by default too
    assert fixed.exit_code == 0, fixed.stdout + fixed.stderr
    assert sorted(r.path.rsplit("/", 1)[-1] for r in arm.log[start:] if r.method == "PUT") == [
        "hpclz-energy-prod-network",
        "hpclz-energy-prod-storage",
    ]
    assert arm.world.resources[account]["properties"]["publicNetworkAccess"] == "Disabled"
    assert bastion in arm.world.resources
    clean = run_cli("plan", str(energy), "--detailed-exitcode")
    assert clean.exit_code == 0, clean.stdout
    assert_inventory_is_state(arm, energy)


def test_plan_destroy_shows_what_destroy_deletes(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    keeping = run_cli("plan", str(energy), "--destroy", "-o", "json")
    body = json.loads(keeping.stdout)["result"]
    deleted = {r["type"] for r in body["resources"] if r["action"] == "delete"}
    assert "Microsoft.Network/bastionHosts" in deleted
    assert "Microsoft.StorageCache/amlFilesystems" not in deleted  # destroy keeps data unless --include-data
    everything = json.loads(run_cli("plan", str(energy), "--destroy", "--include-data", "-o", "json").stdout)["result"]
    assert everything["summary"]["destroy"] == len(state_of(energy)["resources"])
    destroyed = run_cli("destroy", str(energy), "--yes")
    assert destroyed.exit_code == 0
    left = {r["id"].lower() for r in state_of(energy)["resources"]}
    assert {r["id"].lower() for r in body["resources"] if r["action"] == "delete"}.isdisjoint(left)


def test_replace_deletes_and_recreates_one_resource(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    address = "Microsoft.Network/bastionHosts/bas-energy-prod-scus"
    plan = run_cli("plan", str(energy), "--replace", address)
    assert "-/+ Microsoft.Network/bastionHosts bas-energy-prod-scus" in plan.stdout, plan.stdout
    start = len(arm.log)
    done = run_cli("deploy", str(energy), "--yes", "--replace", address)  # asked for by name: no extra flag
    assert done.exit_code == 0, done.stdout + done.stderr
    made = [(r.method, r.path.rsplit("/", 1)[-1]) for r in arm.log[start:] if r.method in ("PUT", "DELETE")]
    assert made == [("DELETE", "bas-energy-prod-scus"), ("PUT", "hpclz-energy-prod-network")]
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)

    lustre = "Microsoft.StorageCache/amlFilesystems/amlfs-energy-prod-scus"
    refused = run_cli("deploy", str(energy), "--yes", "--replace", lustre)
    assert refused.exit_code == 1 and "--allow-data-loss" in refused.stderr  # data still needs its own consent


def test_target_applies_one_deployment_and_leaves_the_rest_planned(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    edit(energy, (("workload: seismic", "workload: seismic-v2"),))
    start = len(arm.log)
    done = run_cli("deploy", str(energy), "--yes", "--target", "Microsoft.Network/bastionHosts/bas-energy-prod-scus")
    assert done.exit_code == 0, done.stdout + done.stderr
    applied = {r.path.rsplit("/", 1)[-1] for r in arm.log[start:] if r.method == "PUT"}
    assert "hpclz-energy-prod-network" in applied and "hpclz-energy-prod-storage" not in applied
    rest = run_cli("plan", str(energy), "--detailed-exitcode")
    assert rest.exit_code == 2 and "metadata.tags.workload" in rest.stdout  # the baseline stayed
    assert "Microsoft.Network/bastionHosts" not in rest.stdout.split("hpclz will perform")[-1]
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    assert_plan_clean(run_cli, energy)


def test_typing_the_zone_name_is_consent_but_never_for_not_allowed(arm: ArmStandIn, energy: Path) -> None:
    """The prompt's alternative to --allow-data-loss (what `hpclz deploy` asks at a terminal without --yes)."""
    from hpclz.deploy.contract import Contract
    from hpclz.services.deploy import DeployOptions, deploy

    assert deploy(DeployOptions(energy)).exit_code == 0
    edit(energy, (("capacity_tib: 48", "capacity_tib: 32"),))
    asked: list[tuple[list[str], str]] = []

    def wrong_name(reasons: list[str], zone: str) -> bool:
        asked.append((reasons, zone))
        return False

    start = len(arm.log)
    with pytest.raises(HpclzError, match="--allow-data-loss"):
        deploy(DeployOptions(energy, contract=Contract(ask=wrong_name)))
    assert writes_since(arm, start) == [] and asked[0][1] == "energy-prod"
    assert "replaces or deletes data" in asked[0][0][0]
    assert len(asked) == 1  # asked once, under the lock, not again before preflight

    assert (
        deploy(DeployOptions(energy, contract=Contract(ask=lambda _reasons, zone: zone == "energy-prod"))).exit_code
        == 0
    )
    assert writes_since(arm, start) == ["DELETE", "PUT"]

    edit(energy, (("admin: {cidr: 10.20.0.0/24}", "admin: {cidr: 10.20.3.0/24}"),))
    never: list[str] = []

    def agree(reasons: list[str], _zone: str) -> bool:
        never.extend(reasons)
        return True

    with pytest.raises(HpclzError, match="NOT ALLOWED"):
        deploy(DeployOptions(energy, contract=Contract(ask=agree)))
    assert never == []


def test_a_missing_secret_value_is_refused_before_any_write(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LICENCE_KEY", raising=False)
    monkeypatch.setenv("API_TOKEN", TOKEN_V1)
    edit(energy, (SECRETS,))
    refused = run_cli("deploy", str(energy), "--yes")
    assert refused.exit_code == 3, refused.stdout + refused.stderr
    assert "identity.key_vault.secrets.licence-key: environment variable LICENCE_KEY is not set" in refused.stderr
    assert writes_since(arm, 0) == [] and our_groups(arm) == {}


def test_security_rules_changed_or_added_in_the_portal_are_drift(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    nsg = next(
        r
        for r in arm.world.resources.values()
        if r["type"] == "Microsoft.Network/networkSecurityGroups" and r["properties"].get("securityRules")
    )
    rule = nsg["properties"]["securityRules"][0]
    was = rule["properties"]["access"]
    rule["properties"]["access"] = "Allow" if was == "Deny" else "Deny"
    opened = {"name": "portal-ssh", "properties": {"priority": 100, "access": "Allow", "destinationPortRange": "22"}}
    nsg["properties"]["securityRules"].append(opened)

    plan = run_cli("plan", str(energy), "--refresh", "--detailed-exitcode")
    assert plan.exit_code == 2, plan.stdout + plan.stderr
    assert f"properties.securityRules[{rule['name']}].properties.access" in plan.stdout
    assert "properties.securityRules[portal-ssh]" in plan.stdout

    assert run_cli("deploy", str(energy), "--yes", "--refresh").exit_code == 0
    rules = {r["name"]: r for r in arm.world.resources[nsg["id"].lower()]["properties"]["securityRules"]}
    assert "portal-ssh" not in rules and rules[rule["name"]]["properties"]["access"] == was
    assert run_cli("plan", str(energy), "--refresh", "--detailed-exitcode").exit_code == 0


def test_a_state_of_another_zone_under_a_shared_blob_name_is_refused_by_identity() -> None:
    """Where no folder tells zones apart (a Blob state whose blob_name two configs share), the document's
    own identity does: zone, environment, subscription and region are compared before anything is used."""
    from hpclz.state.identity import ZoneIdentity, identity_mismatches, refuse_foreign_state
    from hpclz.state.model import StateDocument

    doc = StateDocument(landing_zone="energy", environment="prod", subscription_id="sub-a", location="southcentralus")
    wanted = ZoneIdentity("seismic", "prod", "sub-b", "eastus")
    assert identity_mismatches(doc, wanted) == [
        "it belongs to landing zone 'energy', not 'seismic'",
        "it was deployed to subscription sub-a, not sub-b",
        "it was deployed to southcentralus, not eastus (a region cannot change in place)",
    ]
    assert identity_mismatches(doc, ZoneIdentity("energy", "prod", None, None)) == []  # unknown: not compared
    with pytest.raises(HpclzError, match="refusing the state at blob") as refused:
        refuse_foreign_state(doc, wanted, "blob", "lz.yaml")
    assert refused.value.exit_code == 64


DEFENDER = ("# defender: {plans: [VirtualMachines, StorageAccounts, KeyVaults, Arm]}", "defender: {plans: [KeyVaults]}")


def test_defender_plan_removed_is_left_on_forgotten_and_later_deploys_are_clean(
    arm: ArmStandIn, energy: Path, run_cli: RunCli
) -> None:
    """A Defender plan is the subscription's pricing tier, not a resource of the zone: turning it off would change
    it for every workload there (https://learn.microsoft.com/azure/defender-for-cloud/tutorial-enable-servers-plan),
    so hpclz leaves it on and forgets it (docs/defender.md); no deploy after that may fail over it."""
    edit(energy, (DEFENDER,))
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    pricing = next(k for k, r in arm.world.resources.items() if r["type"] == "Microsoft.Security/pricings")
    assert pricing in {r["id"].lower() for r in state_of(energy)["resources"]}

    edit(energy, ((DEFENDER[1], DEFENDER[0]),))
    plan = run_cli("plan", str(energy))
    assert plan.exit_code == 0 and "defender" in plan.stdout, plan.stdout + plan.stderr
    start = len(arm.log)
    removed = run_cli("deploy", str(energy), "--yes")
    assert removed.exit_code == 0, removed.stdout + removed.stderr
    assert not [r for r in arm.log[start:] if r.method == "DELETE" and "pricings" in r.path.lower()]
    assert pricing in arm.world.resources  # left on in Azure
    assert pricing not in {r["id"].lower() for r in state_of(energy)["resources"]}
    assert_plan_clean(run_cli, energy)

    edit(energy, (("workload: seismic", "workload: seismic-v2"),))  # an unrelated change afterwards
    unrelated = run_cli("deploy", str(energy), "--yes")
    assert unrelated.exit_code == 0, unrelated.stdout + unrelated.stderr
    assert_plan_clean(run_cli, energy)


def test_portal_off_then_on_again_converges_each_time(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    portal_vm = "/virtualmachines/vm-energy-ood-prod-scus"
    edit(energy, (("portal:\n  enabled: true", "portal:\n  enabled: false"),))
    start = len(arm.log)
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    deleted = [r.path.lower().rsplit("/", 1)[-1] for r in arm.log[start:] if r.method == "DELETE"]
    # Dependants first: the VM before the NIC it holds, the NIC before the NSG it names (Azure refuses that NSG
    # with InUseNetworkSecurityGroupCannotBeDeleted while the NIC names it: tests/support/arm_standin/in_use.py).
    assert deleted.index("vm-energy-ood-prod-scus") < deleted.index("nic-energy-ood-prod-scus")
    assert deleted.index("nic-energy-ood-prod-scus") < deleted.index("nsg-energy-ood-prod-scus")
    assert not any(k.endswith(portal_vm) or "-ood-" in k for k in arm.world.resources)
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)

    edit(energy, (("portal:\n  enabled: false", "portal:\n  enabled: true"),))
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0
    assert any(k.endswith(portal_vm) for k in arm.world.resources)
    assert_plan_clean(run_cli, energy)
    assert_inventory_is_state(arm, energy)


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("metadata.name", "name: energy ", "name: energy2 "),
        ("metadata.environment", "environment: prod ", "environment: test "),
    ],
)
def test_renaming_the_zone_or_environment_is_not_allowed(
    field: str, old: str, new: str, arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    """Every resource and group name derives from the zone's name and environment (hpclz.naming): under a new one
    the same config would build a second zone on the same address space and leave the first running, unmanaged."""
    predeployed(energy)
    before = sorted(p.relative_to(energy.parent) for p in (energy.parent / ".hpclz").rglob("*"))
    serial = state_of(energy)["serial"]
    edit(energy, ((old, new),))
    start = len(arm.log)
    for command in (("plan",), ("deploy", "--yes"), ("deploy", "--yes", "--allow-data-loss", "--allow-disruption")):
        refused = run_cli(*command[:1], str(energy), *command[1:])
        assert refused.exit_code == 1, (command, refused.stdout, refused.stderr)
        line = next(x for x in refused.stderr.splitlines() if x.startswith("error:"))
        assert f"{field}: " in line and "NOT ALLOWED" in line and "energy-prod" in line, line
        assert "nothing was changed" in line
    assert writes_since(arm, start) == []
    assert sorted(p.relative_to(energy.parent) for p in (energy.parent / ".hpclz").rglob("*")) == before
    assert state_of(energy)["serial"] == serial

    # Back under its own name the zone is as it was; a copy of the config in its own file may be a second zone.
    edit(energy, ((new, old),))
    assert_plan_clean(run_cli, energy)


def _file_size_limit(limit: int) -> Callable[[], None]:
    """In the child only: files may grow to `limit` bytes, and a bigger write fails with EFBIG instead of killing the
    process ("If the file size limit is exceeded ... SIGXFSZ ... If the signal is ignored, the write fails with
    EFBIG": setrlimit(2), RLIMIT_FSIZE). What a full disk does to the lock record, without root or a loop device."""

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return limited


def test_a_full_disk_at_lock_time_is_one_line_and_writes_nothing(
    arm: ArmStandIn, energy: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    predeployed(energy)
    edit(energy, (("workload: seismic", "workload: seismic-v2"),))
    folder = energy.parent / ".hpclz"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    start = len(arm.log)
    from hpclz.deploy.wheel import WHEEL_ENV, hpclz_wheel

    wheel = str(hpclz_wheel().path)  # built by the deploy above: the child only reads it
    full = subprocess.run(
        [*HPCLZ, "deploy", str(energy), "--yes"],
        env={**os.environ, WHEEL_ENV: wheel},
        capture_output=True,
        text=True,
        timeout=110,
        preexec_fn=_file_size_limit(64),  # the lock record is a few hundred bytes
    )
    assert full.returncode != 0
    lines = full.stderr.strip().splitlines()
    assert lines[-1].startswith("error: cannot lock state ") and "File too large" in lines[-1], full.stderr
    assert "Traceback" not in full.stderr and "internal error" not in full.stderr
    assert writes_since(arm, start) == []
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before  # no temp file, no lock record
    assert run_cli("deploy", str(energy), "--yes").exit_code == 0  # the lock was released


def test_netapp_volume_converted_between_nfsv3_and_nfsv41_in_place(
    arm: ArmStandIn, manufacturing: Path, run_cli: RunCli, predeployed: Callable[[Path], None]
) -> None:
    """Azure NetApp Files converts a volume's NFS version in place, data kept, once its clients have unmounted it
    (https://learn.microsoft.com/azure/azure-netapp-files/convert-nfsv3-nfsv41; hpclz.plan.policies NFS_CONVERSION):
    no data-loss flag, no delete; consent to the disruption instead."""
    predeployed(manufacturing)
    volume = next(k for k in arm.world.resources if k.endswith("/volumes/vol-cae-results-test-weu"))
    edit(
        manufacturing, (("protocol: NFSv3, mount_point: /anf/results", "protocol: NFSv4.1, mount_point: /anf/results"),)
    )

    plan = run_cli("plan", str(manufacturing))
    assert plan.exit_code == 0, plan.stdout + plan.stderr
    assert "storage.netapp.volumes[results].protocol" in plan.stdout and "converted" in plan.stdout, plan.stdout
    assert "unmount the volume on every node first" in plan.stdout
    assert "DATA LOSS" not in plan.stdout and "-/+" not in plan.stdout.split("hpclz will perform")[-1]

    start = len(arm.log)
    refused = run_cli("deploy", str(manufacturing), "--yes")
    assert refused.exit_code == 1 and "--allow-disruption" in refused.stderr, refused.stderr
    assert writes_since(arm, start) == []

    applied = run_cli("deploy", str(manufacturing), "--yes", "--allow-disruption")
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    assert "DELETE" not in writes_since(arm, start)
    assert arm.world.resources[volume]["properties"]["protocolTypes"] == ["NFSv4.1"]
    assert_plan_clean(run_cli, manufacturing)
    assert_inventory_is_state(arm, manufacturing)
