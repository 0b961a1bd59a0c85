"""The CycleCloud server's cloud-init and the Slurm cluster it imports, rendered deterministically.

Two payloads, because Azure can update only one of them after the VM exists:
- customData (cloud-init, read once at first boot, never updatable): installs CycleCloud and the Slurm project at
  their pinned versions and the hpclz-cluster-sync service;
- userData (updated in place by ARM, read from the instance metadata service): the cluster definition, its
  parameters and the CycleCloud account, as one JSON document. hpclz-cluster-sync re-imports the cluster whenever
  it changes, so partition edits reach CycleCloud without recreating the VM.
Node scripts are rendered once per partition and embedded in the cluster template. Both payloads are always
gzip-compressed (fixed mtime, so still byte-identical across runs; hpclz.render.payload); cloud-init and the sync
script both unpack them.
"""

from __future__ import annotations

import base64
import json
import posixpath
import re
from typing import TYPE_CHECKING, Any

from hpclz.catalog import load_catalog
from hpclz.config.compute import ExistingAccounting, NewAccounting, Partition
from hpclz.config.storage import ExistingLustre, ExistingShared
from hpclz.errors import ExitCode, HpclzError
from hpclz.render.arm import API_VERSIONS, resource_path
from hpclz.render.engine import PLAIN_NAME, Safe, render_text
from hpclz.render.health_gate import GATE_SCRIPT, GATE_STAMP, health_gate
from hpclz.render.job_storage import ENROOT_FSTAB, ENROOT_MOUNTS, RENEW, RENEW_EVERY, RENEW_UNIT, job_storage
from hpclz.render.job_storage import SCRIPT as JOB_STORAGE_SCRIPT
from hpclz.render.nccl import container_files
from hpclz.render.payload import pack
from hpclz.render.prometheus import node_metrics
from hpclz.render.roles import LOCKER_CONTAINER, WHEEL_CONTAINER, node_identities
from hpclz.render.server_programs import server_programs
from hpclz.render.shipped import shipped_template
from hpclz.render.writer import dumps
from hpclz.render.zone import LOCKER_IDENTITY, Zone

if TYPE_CHECKING:
    from jinja2 import Environment

CUSTOM_DATA_LIMIT = 65535  # bytes before base64 (Microsoft.Compute osProfile.customData)
USER_DATA_LIMIT = 65536  # base64 characters: "the size can't exceed 64 KB" (learn.microsoft.com, VM user data)
CREDENTIALS = "hpclz"
# The CycleCloud VM's tag that carries "<sha256>/<file name>" of the hpclz wheel in the locker (hpclz-cluster-sync).
WHEEL_TAG = "hpclz-wheel"
WHEEL_PARAMETER = "hpclzWheel"
# A scale set in one placement group holds at most 100 VMs
# (learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-placement-groups); the stock
# cyclecloud-slurm template defaults HPCMaxScalesetSize to the same (Azure/cyclecloud-slurm@b26ab06:templates/slurm.txt).
MAX_SCALESET = 100


def suspend_minutes(partitions: list[Partition]) -> int | None:
    """The one idle time Slurm can apply: the shortest partition's idle_shutdown_minutes, as a cluster-wide
    SuspendTime, rack-scale partitions left out (kept out of auto-suspend: HPCLZ-CMP-073). cyclecloud-slurm 4.0.9 writes every partition line itself with no SuspendTime= option
    (Azure/cyclecloud-slurm@50e6739:azure-slurm/slurmcc/cli.py l.862-864: "PartitionName=... Nodes=... Default=...
    DefMemPerCPU=... MaxTime=INFINITE State=UP"), so a per-partition idle time cannot be expressed through it; and it
    reads no `cyclecloud.cluster.autoscale.idle_time_after_jobs` (no occurrence in that tree). None: no partition
    sets one, and cyclecloud-slurm's own SuspendTime=300 stands (azure-slurm-install/templates/slurm.conf.template
    l.47)."""
    catalog = load_catalog()
    return min(
        (
            p.idle_shutdown_minutes
            for p in partitions
            if p.idle_shutdown_minutes and not getattr(catalog.sku(p.vm_size), "nvlink_domain_vms", None)
        ),
        default=None,
    )


def scaleset_size(partition: Partition) -> int:
    """Nodes per scale set. For a rack-scale size (ND GB200/GB300 v6: 18 VMs to an NVLink domain) a whole number of
    racks, so no scale set, and no placement group, ends in part of a rack: 90 of the 100 a placement group holds."""
    sku = load_catalog().sku(partition.vm_size)
    rack = sku.nvlink_domain_vms if sku is not None else None
    limit = MAX_SCALESET - MAX_SCALESET % rack if rack else MAX_SCALESET
    return min(partition.max_nodes, limit)


def racks(partition: Partition) -> int | None:
    """Whole NVLink domains (racks) in a rack-scale partition; None for other sizes."""
    sku = load_catalog().sku(partition.vm_size)
    rack = sku.nvlink_domain_vms if sku is not None else None
    return -(-partition.max_nodes // rack) if rack else None


def accelerated(zone: Zone, vm_size: str) -> bool:
    """The config switch, unless the SKU catalog knows the size cannot do it."""
    sku = load_catalog().sku(vm_size)
    return zone.config.network.accelerated_networking and (sku is None or sku.accelerated_networking)


def schedules_vcpus(p: Partition) -> bool:
    """A partition shaped like the stock template's htc array (no InfiniBand, no GPU), whose nodes Slurm should count
    in vCPUs, not cores: stock sets `slurm.use_pcpu = false` there, "for all hyperthreaded VMs"
    (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt l.243-247, dynamic array l.285-286), and leaves its hpc and
    gpu arrays at the default, true. With true, azslurm writes ThreadsPerCore=vCPUs/cores and Slurm hands out whole
    cores, two vCPUs per one-CPU task on a hyperthreaded size (azure-slurm/slurmcc/cli.py l.843-852). A size the
    catalog does not know keeps the default."""
    sku = load_catalog().sku(p.vm_size)
    return sku is not None and not sku.is_gpu and not p.infiniband


def _relative_id(zone: Zone, type_: str, *names: str, area: str = "storage") -> str:
    return f"resourceGroups/{zone.rg[area]}/providers/{resource_path(type_, *names)}"


def _mounts(zone: Zone) -> list[dict[str, Any]]:
    """What the nodes mount. The address of a file system hpclz creates exists only after deployment: nodes
    look it up in ARM with the compute identity, so without that identity they cannot mount it."""
    storage = zone.config.storage
    lookup = zone.config.identity.managed_identities.compute
    mounts: list[dict[str, Any]] = []
    if zone.lustre_new and lookup:
        mounts.append(
            {
                "kind": "lustre",
                "path": "storage.lustre",
                "mount_point": zone.lustre_new.mount_point,
                "address": None,
                "resource": _relative_id(zone, "Microsoft.StorageCache/amlFilesystems", zone.lustre_name),
                "api": API_VERSIONS["Microsoft.StorageCache/amlFilesystems"],
                "nfs4": False,
            }
        )
    elif isinstance(storage.lustre, ExistingLustre):
        lustre = storage.lustre
        mounts.append(
            {
                "kind": "lustre",
                "path": "storage.lustre",
                "mount_point": lustre.mount_point,
                "address": lustre.mgs_address,
                "nfs4": False,
            }
        )
    if zone.netapp_new and lookup:
        type_ = "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"
        for volume in zone.netapp_new.volumes:
            version = "4.1" if volume.protocol == "NFSv4.1" else "3"
            mounts.append(
                {
                    "kind": "netapp",
                    "path": f"storage.netapp.volumes[{volume.name}]",
                    "mount_point": volume.mount_point,
                    "export": volume.name,
                    "options": f"rw,hard,rsize=262144,wsize=262144,vers={version},tcp",
                    "nfs4": version == "4.1",  # the node sets the NFSv4 ID domain first (_mounts.sh.j2)
                    "resource": _relative_id(
                        zone, type_, zone.netapp_account, zone.netapp_pool, zone.netapp_volume(volume)
                    ),
                    "api": API_VERSIONS[type_],
                }
            )
    return mounts


def nfs4_idmap(zone: Zone, mounts: list[dict[str, Any]]) -> bool:
    """Does a node mount an Azure NetApp Files volume over NFSv4.1, hpclz's own or storage.shared on NetApp (which
    CycleCloud mounts)? It then sets ANF's NFSv4 ID domain (templates/cloud-init/_mounts.sh.j2)."""
    shared = zone.shared_netapp
    return any(m["nfs4"] for m in mounts) or (shared is not None and shared.protocol == "NFSv4.1")


# The mount the Azure Files NFS docs give, nconnect included:
# https://learn.microsoft.com/en-us/azure/storage/files/storage-files-how-to-mount-nfs-shares
AZURE_FILES_NFS_OPTIONS = "vers=4,minorversion=1,sec=sys,nconnect=4"


def shared_mounts(zone: Zone) -> dict[str, str] | None:
    """Where every node (scheduler, login, compute) mounts shared home and /sched, as CycleCloud mount
    settings: an NFS address and export paths, none of which needs the deployment to have run."""
    shared = zone.config.storage.shared
    if isinstance(shared, ExistingShared):
        return {
            "address": shared.address,
            "home_export": shared.home_export,
            "sched_export": shared.sched_export,
            "options": shared.options,
            "mount_point": shared.mount_point,
        }
    if zone.shared_netapp is not None:
        return _netapp_shared_mounts(zone)
    files = zone.shared_files
    if files is None:
        return None
    account = zone.shared_account_name
    return {
        # The private endpoint's record in privatelink.file.core.windows.net answers for this name inside the VNet.
        "address": f"{account}.file.core.windows.net",
        "home_export": f"/{account}/home",
        "sched_export": f"/{account}/sched",
        "options": AZURE_FILES_NFS_OPTIONS,
        "mount_point": files.mount_point,
    }


# ANF's NFS mount options as CCWS mounts its ANF shared file system (Azure/cyclecloud-slurm-workspace@bc0fc1b:
# bicep/ccw.bicep, the same options storage.shared existing defaults to), with the NFS version of the volume.
def _anf_options(protocol: str) -> str:
    version = "vers=4.1" if protocol == "NFSv4.1" else "vers=3"
    return f"rw,hard,rsize=262144,wsize=262144,{version},tcp,_netdev,nconnect=8"


def _netapp_shared_mounts(zone: Zone) -> dict[str, str]:
    """A NetApp volume's address exists only once ANF has placed it in the delegated subnet: the mounts name
    cluster parameters that hpclz-cluster-sync fills from ARM at import time (arm_parameters)."""
    shared = zone.shared_netapp
    assert shared is not None
    return {
        "address": "",
        "home_parameter": "SharedHomeAddress",
        "sched_parameter": "SharedSchedAddress",
        "home_export": "/hpclz-home",
        "sched_export": "/hpclz-sched",
        "options": _anf_options(shared.protocol),
        "mount_point": shared.mount_point,
    }


def arm_parameters(zone: Zone) -> dict[str, dict[str, str]]:
    """Cluster parameters hpclz-cluster-sync reads from ARM when it imports the cluster: the shared NetApp volumes'
    mount addresses (a volume's properties.mountTargets[0].ipAddress, as CCWS's bicep/anf.bicep outputs it), read
    with the scheduler identity, which holds Reader on the subscription for CycleCloud."""
    if zone.shared_netapp is None or not zone.config.identity.managed_identities.scheduler:
        return {}
    identity = _relative_id(
        zone, "Microsoft.ManagedIdentity/userAssignedIdentities", zone.identity_name("scheduler"), area="management"
    )
    type_ = "Microsoft.NetApp/netAppAccounts/capacityPools/volumes"
    out = {}
    for role, volume in zone.shared_netapp_volumes():
        resource = _relative_id(zone, type_, zone.netapp_account, zone.netapp_pool, zone.netapp_volume(volume))
        out[f"Shared{role.capitalize()}Address"] = {
            "identity": identity,
            "resource": resource,
            "api": API_VERSIONS[type_],
            "field": "properties.mountTargets.0.ipAddress",
            "path": f"storage.shared.{role}_gib",
        }
    return out


def accounting_secrets(zone: Zone) -> dict[str, dict[str, str]]:
    """Cluster parameters hpclz-cluster-sync reads from Key Vault at import time, so that no rendered file,
    template or state holds them: parameter name -> vault, secret name and the identity that may read it."""
    accounting = zone.config.compute.accounting
    if not isinstance(accounting, ExistingAccounting | NewAccounting) or zone.key_vault_new is None:
        return {}
    identity = _relative_id(
        zone, "Microsoft.ManagedIdentity/userAssignedIdentities", zone.identity_name("scheduler"), area="management"
    )
    return {
        "AccountingPassword": {
            "vault": zone.key_vault_name,
            "name": accounting.password_secret_name,
            "identity": identity,
            "path": "compute.accounting.password_secret_name",
        }
    }


def accounting_settings(zone: Zone) -> dict[str, str] | None:
    """cyclecloud-slurm's slurm.accounting.url and user (Azure/cyclecloud-slurm templates/slurm.txt): the server
    hpclz creates is reached by its FQDN, which its private DNS zone answers inside the VNet, as an administrator
    login (slurmdbd's user in CCWS too: Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/mysql.bicep)."""
    if not accounting_secrets(zone):
        return None
    accounting = zone.config.compute.accounting
    if isinstance(accounting, NewAccounting):
        return {"mode": "new", "url": zone.mysql_fqdn, "user": accounting.admin_user}
    assert isinstance(accounting, ExistingAccounting)
    return {"mode": "existing", "url": accounting.url, "user": accounting.user}


def _scratch(zone: Zone, partition: Partition) -> dict[str, str] | None:
    scratch = zone.config.storage.scratch
    nvme = partition.active_nvme_scratch
    if scratch.source == "nvme" and nvme:
        return {"source": "nvme", "path": scratch.path, "target": f"{nvme.mount_point}/scratch"}
    if scratch.source == "lustre" and zone.lustre_new:
        return {"source": "lustre", "path": scratch.path, "target": f"{zone.lustre_new.mount_point}/scratch"}
    return None


def _node_identity(zone: Zone, role: str) -> str:
    """A node identity, relative to the subscription: the machines read their subscription from IMDS."""
    return _relative_id(
        zone, "Microsoft.ManagedIdentity/userAssignedIdentities", zone.identity_name(role), area="management"
    )


def _compute_identity(zone: Zone) -> str:
    return _node_identity(zone, "compute")


def _identity_list(zone: Zone, roles: list[str]) -> str:
    """CycleCloud's Azure.Identities: "a comma-separated list of Managed Identity Resource ID strings"
    (learn.microsoft.com/azure/cyclecloud/how-to/managed-identities, "Assigning Roles to Cluster VMs")."""
    return ",".join("/subscriptions/@SUBSCRIPTION_ID@/" + _node_identity(zone, role) for role in roles)


def node_script(zone: Zone, partition: Partition, mounts: list[dict[str, Any]]) -> Safe:
    events = zone.config.maintenance.scheduled_events
    topology = rack_topology(zone)
    gate = health_gate(cluster_name(zone))
    # The Scheduled Events watcher asks the boot tier of hpclz's gate (from the bundle the scheduler installs under
    # /sched) before it resumes a node it drained for a reboot or redeploy, and unmounts the Lustre file systems this
    # script mounts before it lets Azure delete the VM (templates/cloud-init/scheduled_events.py).
    watcher = {
        "drain_on": sorted(events.drain_on),
        "requeue_jobs": events.requeue_jobs,
        "gate": ["python3", gate.bundle, "gate", "boot"],
        "gate_ready": gate.bundle,
        "unmount": [m["mount_point"] for m in mounts if m["kind"] == "lustre"],
    }
    return render_text(
        "cloud-init/node.sh.j2",
        p=partition,
        gate=gate,
        mounts=mounts,
        idmap=nfs4_idmap(zone, mounts),
        identity=_compute_identity(zone),
        metrics=node_metrics(zone, _compute_identity(zone), partition.vm_size),
        scratch=_scratch(zone, partition),
        events=watcher if events.enabled else None,
        job_env=(
            {
                "enroot_mounts": ENROOT_MOUNTS,
                "enroot_fstab": Safe(ENROOT_FSTAB),
                "renew": RENEW,
                "unit": RENEW_UNIT,
                "every": RENEW_EVERY,
            }
            if job_storage(zone, gate, _compute_identity(zone))
            else None
        ),
        fabric_reports=topology["reports"] if topology and partition.name in topology["partitions"] else None,
        ib_reports=topology["reports"] if topology and partition.name in topology["tree_partitions"] else None,
        topology_link=topology_link(zone),
        nccl={path: Safe(text) for path, text in container_files(partition.vm_size, partition.image).items()},
    )


def _subnet_for_cyclecloud(zone: Zone, role: str) -> str:
    """CycleCloud names a subnet `<resource group>/<vnet>/<subnet>`, not by resource ID."""
    existing = zone.existing_vnet
    group = existing.resource_id.split("/")[4] if existing else zone.rg["network"]
    return f"{group}/{zone.vnet_name}/{zone.subnet(role).name}"


def cluster_files(zone: Zone) -> dict[str, str]:
    config = zone.config
    partitions = config.compute.partitions
    has_default = any(p.default for p in partitions)
    mounts = _mounts(zone)
    arrays = []
    # The default partition follows the config's order (the first one when none says default: true), but the
    # nodearrays are written in name order: "The specific order of the sections is not important" to CycleCloud
    # (learn.microsoft.com/azure/cyclecloud/cluster-references/cluster-template-reference), so moving a partition
    # in the YAML renders the same cluster and plans no change.
    first = partitions[0].name if partitions else ""
    for p in sorted(partitions, key=lambda part: part.name):
        script = node_script(zone, p, mounts)
        if "'''" in script:
            raise HpclzError(f"compute.partitions[{p.name}]: node script contains ''' which CycleCloud cannot quote")
        arrays.append(
            {
                "p": p,
                "script": script,
                "accelerated": accelerated(zone, p.vm_size),
                "default": p.default or (not has_default and p.name == first),
                "shutdown": "Deallocate" if p.eviction_policy == "deallocate" else "Terminate",
                "scaleset": scaleset_size(p),
                "racks": racks(p),
                "vcpus": schedules_vcpus(p),
            }
        )
    gate = health_gate(cluster_name(zone))
    storage = job_storage(zone, gate, _compute_identity(zone))
    template = render_text(
        "cyclecloud/slurm-cluster.txt.j2",
        config=config,
        cc=config.compute.cyclecloud,
        slurm_project=SLURM_PROJECT,
        cluster_name=cluster_name(zone),
        login_prefix=login_prefix(zone),
        # Every node CycleCloud creates carries the zone's tags, those the zone's own "Require a tag on resources"
        # assignments demand included: that deny policy (Azure/azure-policy built-in-policies/policyDefinitions/Tags/
        # RequireTag_Deny.json, mode Indexed) judges every VM, scale set, NIC and disk written into the compute
        # group, CycleCloud's as much as ARM deployments' (tests/deploy/test_proving_ground.py plays it). A tag name
        # CycleCloud's `Tags.<name>` attribute cannot spell is left out, and HPCLZ-TPL-052 then refuses the plan
        # when the zone's policy requires it.
        node_tags={k: v for k, v in zone.tags().items() if PLAIN_NAME.fullmatch(k)},
        arrays=arrays,
        scheduler_script=render_text(
            "cloud-init/scheduler.sh.j2",
            gate=gate,
            gate_stamp=GATE_STAMP,
            budgets=gate.budgets(),
            script=GATE_SCRIPT,
            job_storage=storage,
            job_storage_config=Safe(storage.config_text()) if storage else None,
            job_storage_script=JOB_STORAGE_SCRIPT,
            mounts=mounts,
            idmap=nfs4_idmap(zone, mounts),
            identity=_compute_identity(zone),
            metrics=node_metrics(zone, _compute_identity(zone)),
            topology=rack_topology(zone),
            # Only where hpclz-cluster-sync publishes the locker's `current` wheel (user_data_document).
            follow_wheel=zone.config.identity.managed_identities.scheduler,
            locker={
                "identity": _node_identity(zone, LOCKER_IDENTITY),
                "account": zone.locker_account_name,
                "container": WHEEL_CONTAINER,
            },
        ),
        # Login nodes, where any user logs in, carry only the locker identity: no data role, no secret to read. It
        # also signs their metrics in, as CCWS's locker identity does (Monitoring Metrics Publisher on the rule).
        login_script=render_text(
            "cloud-init/login.sh.j2",
            mounts=mounts,
            idmap=nfs4_idmap(zone, mounts),
            identity=_node_identity(zone, LOCKER_IDENTITY),
            metrics=node_metrics(zone, _node_identity(zone, LOCKER_IDENTITY)),
            topology_link=topology_link(zone),
            pyxis_publish=pyxis_publish(zone),
        ),
        scheduler_an=accelerated(zone, config.compute.scheduler.vm_size),
        login_an=accelerated(zone, config.compute.login.vm_size),
        shared=shared_mounts(zone),
        accounting=accounting_settings(zone),
        terminate=any(m["kind"] == "lustre" for m in mounts) or zone.config.maintenance.scheduled_events.enabled,
        suspend_minutes=suspend_minutes(config.compute.partitions),
    )
    parameters = {
        "HpclzSlurmConfig": gate.slurm_conf(suspend_minutes(config.compute.partitions)),
        "Credentials": CREDENTIALS,
        "Region": zone.location,
        "ComputeSubnetId": _subnet_for_cyclecloud(zone, "compute"),
        "AdminSubnetId": _subnet_for_cyclecloud(zone, "admin"),
        "NodeIdentities": _identity_list(zone, node_identities(zone)),
        "LoginIdentities": _identity_list(zone, [LOCKER_IDENTITY]),
    }
    account = {
        "Name": CREDENTIALS,
        "Provider": "azure",
        "Environment": "public",
        "AzureRMUseManagedIdentity": True,
        "AzureRMSubscriptionId": "@SUBSCRIPTION_ID@",
        "ProviderId": "@SUBSCRIPTION_ID@",
        "AzureResourceGroup": zone.rg["compute"],
        "Location": zone.location,
        "DefaultAccount": True,
        "AcceptMarketplaceTerms": True,
        "RMStorageAccount": zone.locker_account_name,
        "RMStorageContainer": LOCKER_CONTAINER,
        # The locker account refuses shared keys, so the nodes reach it with a managed identity, as CCWS's
        # installer sets it (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/files-to-load/cyclecloud_install.py):
        # the locker identity, which reads the locker and holds no data role.
        "LockerAuthMode": "ManagedIdentity",
        "LockerIdentity": _identity_list(zone, [LOCKER_IDENTITY]),
    }
    lookups = account_lookups(zone)
    files = {
        "slurm-cluster.txt": template,
        "slurm-params.json": json.dumps(parameters, indent=2, sort_keys=True) + "\n",
        "azure-account.json": json.dumps(account, indent=2, sort_keys=True) + "\n",
    }
    secrets = accounting_secrets(zone)
    if secrets:
        files["secret-parameters.json"] = json.dumps(secrets, indent=2, sort_keys=True) + "\n"
    if lookups:
        files["account-lookups.json"] = json.dumps(lookups, indent=2, sort_keys=True) + "\n"
    parameter_lookups = arm_parameters(zone)
    if parameter_lookups:
        files["arm-parameters.json"] = json.dumps(parameter_lookups, indent=2, sort_keys=True) + "\n"
    return files


def account_lookups(zone: Zone) -> dict[str, dict[str, str]]:
    """Account fields hpclz-cluster-sync reads from ARM before it creates the account: the client ID of the identity
    that holds CycleCloud's roles (the scheduler identity, hpclz.render.roles), so that CycleCloud orchestrates with
    that identity and not with another one the VM carries. "When you use a System Assigned Managed Identity, leave
    the ClientID field blank. But when you use CycleCloud with a User-Assigned Managed Identity, set the ClientID to
    the ClientID of the specific Managed Identity you want for cluster orchestration"
    (learn.microsoft.com/azure/cyclecloud/how-to/managed-identities, "CycleCloud VM permissions with managed
    identity"); the account record's ClientID field is AzureRMApplicationId, next to AzureRMUseManagedIdentity
    (Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/files-to-load/cyclecloud_install.py:155-171). Without a
    scheduler identity no role is granted to any identity of the server, and the field stays out."""
    if not zone.config.identity.managed_identities.scheduler:
        return {}
    type_ = "Microsoft.ManagedIdentity/userAssignedIdentities"
    identity = _node_identity(zone, "scheduler")
    return {
        "AzureRMApplicationId": {
            "identity": identity,
            "resource": identity,
            "api": API_VERSIONS[type_],
            "field": "properties.clientId",
            "path": "identity.managed_identities.scheduler",
        }
    }


# cyclecloud-slurm's released project: CycleCloud fetches a project from its GitHub release page
# (`cyclecloud project fetch <url> <dir>`, as CCWS's create_cc_param.py does for each cluster-init spec,
# Azure/cyclecloud-slurm-workspace@bc0fc1b:bicep/files-to-load/create_cc_param.py) and uploads it to the locker.
SLURM_RELEASES = "https://github.com/Azure/cyclecloud-slurm/releases/"
# The project's name in the release's project.ini (`[project] name = slurm`, Azure/cyclecloud-slurm@50e6739:project.ini
# l.1-2, the same at every tag 3.0.0-4.0.9), under which `cyclecloud project upload` stores it in the locker. The
# cluster's slurm specs name it without the `cyclecloud/` prefix, so the nodes run that upload ("Without cyclecloud/
# in the cluster-init reference, CycleCloud expects you to upload the project manually":
# learn.microsoft.com/azure/cyclecloud/cluster-references/cluster-init-reference); hpclz-cluster-sync refuses a fetch
# whose project.ini names another project or version.
SLURM_PROJECT = "slurm"


# The blob in the hpclz container holding CycleCloud's user records: name, UID, node and Entra ID names only.
USER_RECORDS_BLOB = "cyclecloud-users.json"


def project_record_blob(version: str) -> str:
    """The blob in the hpclz container where hpclz-cluster-sync records the SHA-256 of each file of a cyclecloud-slurm
    release the first time a server fetches it, and against which every later fetch is checked."""
    return f"cyclecloud-slurm-{version}.sha256.json"


def project_source(zone: Zone) -> str:
    """The release hpclz-cluster-sync fetches and uploads. In userData, so a new cyclecloud-slurm release reaches
    the server without recreating it."""
    return SLURM_RELEASES + zone.config.compute.cyclecloud.slurm_project_version


def cluster_name(zone: Zone) -> str:
    return f"{zone.config.metadata.name}-{zone.config.metadata.environment.value}"


def slurm_cluster_name(zone: Zone) -> str:
    """cyclecloud-slurm's "safe" cluster name, the directory under /sched (install.py `_escape`: lowercase,
    anything but letters, digits and '-' becomes '-')."""
    return re.sub(r"[^a-z0-9-]", "-", cluster_name(zone).lower())


def login_prefix(zone: Zone) -> str:
    """`slurm.node_prefix` of the login nodearray: the stock template's default, `StrJoin("-", ClusterName, "")`
    (Azure/cyclecloud-slurm@50e6739:templates/slurm.txt l.198), made safe for a host name as cyclecloud-slurm
    makes it (azure-slurm-install/install.py l.107-111). A login node needs one: with use_nodename_as_hostname and
    no prefix, install.py l.1035 calls `str.startswith(None)` and the node's install stops with a TypeError."""
    return f"{slurm_cluster_name(zone)}-"


# Where each rack-scale node leaves its `nvidia-smi -q` for the scheduler, beside cyclecloud-slurm's own files in
# /sched/<cluster> (its config_dir: Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.139), where its
# topology.conf and site_specific.conf live too (install.py l.579-585, l.639-645).
FABRIC_REPORTS = "hpclz-fabric"
SHARP_TOPOLOGY = "sharp-topology.txt"
# Slurm reads topology.yaml from the directory of the slurm.conf path it is given, /etc/slurm/slurm.conf on every
# cyclecloud-slurm node (Azure/cyclecloud-slurm@50e6739 azure-slurm-install/install.py l.656-659).
TOPOLOGY_YAML_LINK = "/etc/slurm/topology.yaml"


def rack_topology(zone: Zone) -> dict[str, Any] | None:
    """What the scheduler needs to keep Slurm's topology true (hpclz.slurm.topology, hpclz.slurm.topology_yaml): the
    rack-scale partitions and their block size (VMs per NVLink domain), from Slurm 25.05 the other InfiniBand
    partitions (a tree of switches), and the /sched paths; None where there is no partition to place."""
    catalog = load_catalog()
    partitions = zone.config.compute.partitions
    sizes = {p.name: getattr(catalog.sku(p.vm_size), "nvlink_domain_vms", None) for p in partitions}
    racked = {name: size for name, size in sizes.items() if size}
    yaml = zone.config.compute.cyclecloud.slurm_reads_topology_yaml
    # Only topology.yaml gives each partition its own topology; topology.conf's one plugin is the racks' blocks.
    tree = sorted(p.name for p in partitions if p.infiniband and p.name not in racked) if yaml else []
    if not racked and not tree:
        return None
    folder = f"/sched/{slurm_cluster_name(zone)}"
    return {
        # From Slurm 25.05 the scheduler writes topology.yaml (hpclz.slurm.topology_yaml), before it topology.conf
        # with the cluster-wide block plugin (hpclz.slurm.topology).
        "yaml": yaml,
        "partitions": sorted(racked),
        "tree_partitions": tree,
        # One BlockSizes for the cluster: the smallest domain, so no rack is below it (topology.conf(5)).
        "block_size": min(racked.values()) if racked else None,
        "folder": folder,
        "reports": f"{folder}/{FABRIC_REPORTS}",
        # Where the scheduler keeps SHARP's switch grouping (hpclz.slurm.sharp).
        "switches": f"{folder}/{FABRIC_REPORTS}/{SHARP_TOPOLOGY}",
        # Where Slurm looks for topology.yaml: beside /etc/slurm/slurm.conf, cyclecloud-slurm's link into the folder,
        # never beside the link's target (hpclz.slurm.topology_yaml.link_yaml).
        "link": TOPOLOGY_YAML_LINK if yaml else None,
        # What the link holds: relative, as hpclz.slurm.topology_yaml.link_yaml makes it on the scheduler.
        "link_target": posixpath.relpath(f"{folder}/topology.yaml", posixpath.dirname(TOPOLOGY_YAML_LINK)),
    }


# cyclecloud-slurm builds pyxis into /opt/pyxis/spank_pyxis.so on every Ubuntu node (Azure/cyclecloud-slurm@50e6739
# azure-slurm-install/ubuntu.sh l.155-163) and loads it from there (install.py l.990-998). A login node publishes its
# copy under /sched/<cluster>/ at PYXIS_PUBLISHED (templates/cloud-init/_pyxis_publish.sh.j2), where the portal's
# sbatch loads it (hpclz.render.portal).
PYXIS_BUILT = "/opt/pyxis/spank_pyxis.so"
PYXIS_PUBLISHED = "hpclz/pyxis/spank_pyxis.so"


def pyxis_publish(zone: Zone) -> dict[str, str]:
    """Where a login node copies its pyxis plugin from and to, for the portal. Published with or without a portal
    (a file on /sched), so that turning the portal on or off never changes the cluster's template."""
    return {"source": PYXIS_BUILT, "target": f"/sched/{slurm_cluster_name(zone)}/{PYXIS_PUBLISHED}"}


def topology_link(zone: Zone) -> dict[str, Any] | None:
    """Where a node links topology.yaml from (templates/cloud-init/_topology_link.sh.j2): only where the scheduler
    writes one (Slurm 25.05+, a rack or tree partition)."""
    topology = rack_topology(zone)
    return topology if topology and topology["yaml"] else None


def server_cloud_config(zone: Zone, env: Environment | None = None) -> str:
    """The one-time install: nothing in it may follow a config field that can change after the VM exists, nor a
    program a newer hpclz changes. hpclz-cluster-sync and hpclz-cc-users reach the server from the hpclz wheel in the
    locker (templates/cloud-init/server_programs.py), read with CycleCloud's identity; a server without that identity
    cannot read the locker, so there they stay in customData, as before. Embedding them instead would not fit userData:
    ai-training's would grow from 24,128 to 38,336 base64 characters (xz), past the half of 65,536 that
    tests/render/test_limits.py keeps free. `env`: another template folder (hpclz.render.engine.environment)."""
    bootstrap = render_text(
        "cloud-init/cyclecloud-bootstrap.sh.j2",
        env,
        config=zone.config,
        cc=zone.config.compute.cyclecloud,
        entra=zone.config.identity.cyclecloud_entra,
    )
    programs = None if zone.config.identity.managed_identities.scheduler else server_programs(env)
    return render_text(
        "cloud-init/cyclecloud-server.yaml.j2",
        env,
        config=zone.config,
        bootstrap=bootstrap,
        loader_script=render_text("cloud-init/server_programs.py", env),
        programs=programs,
        await_script=render_text("cloud-init/cc_await.sh", env),
        sync_service=render_text("cloud-init/cluster-sync.service.j2", env),
        sync_timer=render_text("cloud-init/cluster-sync.timer.j2", env),
    )


def user_data_document(zone: Zone, files: dict[str, str]) -> str:
    """What hpclz-cluster-sync applies. JSON, not a cloud-config: cloud-init leaves a payload it cannot classify alone."""
    document = {
        "kind": "hpclz-cyclecloud-cluster",
        "cluster": cluster_name(zone),
        # Less the comments removing which cannot change what runs: userData's 64 KB (hpclz.render.shipped).
        "template": shipped_template(files["slurm-cluster.txt"]),
        "parameters": files["slurm-params.json"],
        "account": files["azure-account.json"],
    }
    if "secret-parameters.json" in files:
        document["secret_parameters"] = files["secret-parameters.json"]
    if "arm-parameters.json" in files:
        document["arm_parameters"] = files["arm-parameters.json"]
    if "account-lookups.json" in files:
        document["account_lookups"] = files["account-lookups.json"]
    if zone.config.identity.managed_identities.scheduler:
        # Where hpclz-cluster-sync publishes the wheel the VM's hpclz-wheel tag names, for a running scheduler to
        # follow (hpclz-install-wheel --follow): the wheel container, written with CycleCloud's identity, the only
        # identity with a data role on the whole locker (hpclz.render.roles.locker_assignments).
        document["wheel_locker"] = dumps(
            {
                "account": zone.locker_account_name,
                "container": WHEEL_CONTAINER,
                "identity": _node_identity(zone, "scheduler"),
            }
        )
        # Where the server keeps its users' names and UIDs (hpclz-cc-users) for a server that replaces it: the same
        # hpclz container, written with the same identity; a new server reads it back at its first boot.
        document["user_records"] = dumps(
            {
                "account": zone.locker_account_name,
                "container": WHEEL_CONTAINER,
                "blob": USER_RECORDS_BLOB,
                "identity": _node_identity(zone, "scheduler"),
            }
        )
        # Where the first fetch of the cyclecloud-slurm release records its files' SHA-256 (trust on first use): the
        # same hpclz container and identity; a rebuilt server's fetch is checked against it (docs/locker.md).
        document["project_record"] = dumps(
            {
                "account": zone.locker_account_name,
                "container": WHEEL_CONTAINER,
                "blob": project_record_blob(zone.config.compute.cyclecloud.slurm_project_version),
                "identity": _node_identity(zone, "scheduler"),
            }
        )
    # The CycleCloud release the server runs: hpclz-cluster-sync upgrades the cyclecloud8 package to it in place, so the
    # server and its database stay (compute.cyclecloud.image_release keeps the image it was created from).
    document["cyclecloud_version"] = zone.config.compute.cyclecloud.version
    document["project"] = project_source(zone)
    document["project_name"] = SLURM_PROJECT  # the name the cluster's slurm specs use: the sync checks project.ini
    digests = zone.config.compute.cyclecloud.slurm_project_sha256
    if digests:  # hpclz-cluster-sync uploads the fetched release only when every file matches (HPCLZ-CMP-018)
        document["project_sha256"] = dumps(dict(sorted(digests.items())))
    return dumps(document)


def user_data(document: str) -> str:
    """Always xz-compressed (byte-identical across runs): the cluster definition grows with every partition, and plain
    it came within 15 % of the limit in a preset; gzip stopped helping once each partition's nodearray outgrew its 32 KB
    window (hpclz.render.payload says why xz, and who reads it); compressed, each keeps most of its 64 KB free
    (`hpclz render` reports the headroom, hpclz.render.limits)."""
    encoded = pack(document, xz=True)
    if len(encoded) > USER_DATA_LIMIT:
        raise HpclzError(
            f"compute.partitions: the CycleCloud cluster definition is {len(encoded)} base64 characters compressed, "
            f"over Azure's {USER_DATA_LIMIT}-character userData limit; use fewer partitions",
            exit_code=ExitCode.CONFIG_INVALID,
        )
    return encoded


def custom_data(cloud_config: str, what: str = "compute.cyclecloud: the CycleCloud server's cloud-init") -> str:
    """Always gzip-compressed, as userData is (hpclz.render.payload cites cloud-init unpacking it): plain, the
    CycleCloud server's cloud-config used half of the 65,535 bytes, and it embeds hpclz-cluster-sync, which grows with
    each feature; compressed, it keeps most of them free. The rendered artifacts/ copy stays the plain cloud-config.
    `what` names the config field and payload in the one-line error (the portal's boot script goes through here too)."""
    encoded = pack(cloud_config)
    sent = len(base64.b64decode(encoded))
    if sent > CUSTOM_DATA_LIMIT:
        raise HpclzError(
            f"{what} is {sent} bytes compressed, over Azure's {CUSTOM_DATA_LIMIT}-byte customData limit",
            exit_code=ExitCode.CONFIG_INVALID,
        )
    return encoded
