"""Each job's own storage credential: one user delegation SAS per blob container, minted by a root-run Slurm prolog,
and the Key Vault secrets the compute identity is granted (hpclz.render.roles.job_secrets), read by the same prolog
into the job's secrets/ folder (docs/checkpoints.md, "The job's Key Vault secrets").

Every node keeps CycleCloud's rule that closes the instance metadata service to every user but root
(`cyclecloud.node.prevent_metadata_access = true`, HPCLZ-TPL-060) and hpclz's own (hpclz-imds-close,
templates/cloud-init/_imds.sh.j2), so no job takes the node identities' tokens. Where
the compute identity holds blob data roles (storage.blob.containers, hpclz.render.roles.jobs_use_compute_identity) or
secrets, hpclz-job-storage (templates/cloud-init/job_storage.py) runs as root from cyclecloud-slurm's
`Prolog=/etc/slurm/prolog.d/*` and `Epilog=/etc/slurm/epilog.d/*` (Azure/cyclecloud-slurm@50e6739:
azure-slurm-install/templates/slurm.conf.template l.36-37, install.py l.540-541; /etc/slurm/prolog.d is
/sched/<cluster>/prolog.d, install.py l.506-507, 706-707) and writes the job's tokens under /run/hpclz/jobs/<job>/.
hpclz-gate-install puts the program, its configuration and the two scripts under /sched beside the health gate's
(hpclz.render.health_gate); the program it copies from the scheduler's installed wheel (hpclz/_data/templates), so
it never weighs on the scheduler's CloudInit and a new wheel brings its own. The scripts run in reverse alphabetical
order (install.py l.551-553): 40- runs after hpclz's gate (50-), so a node the gate fails mints nothing, and before
healthagent's 10-.

A job finds its folder at the fixed path /run/hpclz/jobs/$SLURM_JOB_ID (slurmd puts SLURM_JOB_ID in every task's
environment, sbatch(1) and srun(1) "OUTPUT ENVIRONMENT VARIABLES"). No TaskProlog names it: slurmstepd runs the SPANK
plugins' task_init hook before the TaskProlog and ends the task when the TaskProlog fails (SchedMD/slurm
slurm-25-11-5-1 src/slurmd/slurmstepd/task.c l.437-441 spank_user_task, then l.456-462 "TaskProlog failed
status=%d" and _exit), and pyxis enters the job's container in that hook (NVIDIA/pyxis v0.21.0, the release
cyclecloud-slurm 4.0.9 installs, pyxis_slurmstepd.c slurm_spank_task_init l.1308, setns into the container's mount
namespace l.1372), so a TaskProlog is looked up inside the image, where it is not, and every --container-image task
fails (NVIDIA/pyxis issues #83, #163). A node created before a TaskProlog existed fails every task the same way (127).
Inside a pyxis/enroot container the jobs' folder is bound read-only by enroot's system mount configuration,
/etc/enroot/mounts.d/*.fstab (NVIDIA/enroot v4.0.1 doc/configuration.md "Mount configuration files", the release
cyclecloud-slurm 4.0.9 installs: Azure/cyclecloud-slurm@50e6739 azure-slurm-install/package.py l.11), which each
execute node's script writes (ENROOT_MOUNTS, ENROOT_FSTAB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hpclz.render.health_gate import HealthGate
from hpclz.render.roles import job_secrets, jobs_use_compute_identity
from hpclz.render.zone import Zone

SCRIPT = "40-hpclz-job-storage.sh"
JOBS = "/run/hpclz/jobs"
# Root's alone, in /run: "flushed on boot" (file-hierarchy(7)), so a key never outlives the VM that fetched it.
KEY_CACHE = "/run/hpclz/key/user-delegation-key.json"
# `hpclz-job-storage renew` on each execute node, started by a root systemd timer every RENEW_EVERY: the program
# re-signs a SAS that expires within the hour (job_storage.py, RENEW_MARGIN), so about six tries before it does.
RENEW = "/opt/hpclz/bin/hpclz-job-storage-renew"
RENEW_UNIT = "hpclz-job-storage-renew"
RENEW_EVERY = "10min"  # systemd.time(7) time span
# enroot reads every *.fstab under ENROOT_SYSCONF_PATH/mounts.d (default /etc/enroot, doc/configuration.md) in name
# order (src/runtime.sh l.73-79 at v4.0.1), after its own 10-system.fstab, whose tmpfs on /var/run would otherwise
# hide a bind under /run in images where /var/run links to /run. The package makes the folder (Makefile l.141
# `install -d ... mounts.d`) and owns only its own files in it, so the node's script may write this before or after
# cyclecloud-slurm's cluster-init installs enroot (as hpclz.render.nccl's files).
ENROOT_MOUNTS = "/etc/enroot/mounts.d/50-hpclz-jobs.fstab"
# One fstab(5) line in enroot's reading (doc/image-format.md "/etc/fstab": x-create=dir makes the mount point in the
# image; fs_passno -1 mounts it with enroot's own system mounts, before the hooks). bind without r: the folder alone;
# ro: nothing of it is the job's to write (renew replaces tokens on the host, and a bind of the folder shows them);
# nosuid,nodev,noexec: nothing there runs; private as enroot's own /etc/hosts bind. Each job's folder stays its user's
# 0700 inside as outside, so no job reads another's. nofail: a node whose prolog minted nothing yet has no
# /run/hpclz/jobs, and a failed entry without nofail ends the container's start (bin/enroot-mount.c l.507, 555-557).
ENROOT_FSTAB = f"{JOBS} {JOBS} none x-create=dir,bind,ro,nosuid,nodev,noexec,private,nofail 0 -1\n"
# Container SAS permissions (learn.microsoft.com/rest/api/storageservices/create-service-sas, "Permissions for a
# directory, container, or blob"), in the order azure-storage-blob writes them (ContainerSasPermissions).
READ = "rl"  # read, list: what Storage Blob Data Reader allows a job on a datasets container
# Read, add, create, write, list: what a job saving checkpoints needs of Storage Blob Data Contributor. Delete only
# where the container keeps versions: deleting a blob then keeps its current version as a previous version ("When
# you delete a blob with versioning enabled, the current version becomes a previous version",
# learn.microsoft.com/azure/storage/blobs/versioning-overview), and "x" (delete a version) is never granted, so what
# a job deletes can be restored; soft delete keeps it too where it is on.
WRITE = "racwl"
WRITE_DELETE = "racwdl"


@dataclass(frozen=True)
class JobStorage:
    gate: HealthGate
    settings: dict[str, object]

    @property
    def program(self) -> str:
        return f"{self.gate.home}/job_storage.py"

    @property
    def config(self) -> str:
        return f"{self.gate.home}/job-storage.json"

    def config_text(self) -> str:
        return json.dumps(self.settings, indent=2, sort_keys=True) + "\n"


def vault_url(zone: Zone) -> str:
    """The vault's data-plane URL, as Get Secret names it (https://{vault}.vault.azure.net:
    learn.microsoft.com/rest/api/keyvault/secrets/get-secret/get-secret). Where the zone makes the vault's private
    endpoint, a node resolves that name to it through the privatelink.vaultcore.azure.net private DNS zone
    (Zone.dns_zones; hpclz.render.egress's Key Vault destination)."""
    return f"https://{zone.key_vault_name}.vault.azure.net"


def job_storage(zone: Zone, gate: HealthGate, identity: str) -> JobStorage | None:
    """The job credential where the compute identity (`identity`, its resource ID relative to the subscription, as
    the node's scripts take it) holds blob data roles or Key Vault Secrets User on secrets (hpclz.render.roles.
    job_secrets); None elsewhere, and then nothing of it is rendered. The settings name only what the zone grants:
    `account` and `containers` with the blob roles, `vault_url` and `secrets` (names, never values) with the secrets."""
    blob = zone.blob_new
    secrets = job_secrets(zone)
    uses_blob = blob is not None and jobs_use_compute_identity(zone)
    if not uses_blob and not secrets:
        return None
    containers = [
        {
            "name": c.name,
            "permissions": READ if c.purpose == "datasets" else WRITE_DELETE if c.versioning else WRITE,
        }
        for c in sorted(blob.containers if blob is not None and uses_blob else [], key=lambda c: c.name)
    ]
    settings: dict[str, object] = {
        "identity": identity,
        "containers": containers,
        "jobs": JOBS,
        "key_cache": KEY_CACHE,
    }
    if containers:
        settings["account"] = zone.storage_account_name
    if secrets:
        settings["vault_url"] = vault_url(zone)
        settings["secrets"] = secrets
    return JobStorage(gate=gate, settings=settings)
