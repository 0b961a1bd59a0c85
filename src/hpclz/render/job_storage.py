"""Each job's own storage credential: one user delegation SAS per blob container, minted by a root-run Slurm prolog.

Every node keeps CycleCloud's rule that closes the instance metadata service to every user but root
(`cyclecloud.node.prevent_metadata_access = true`, HPCLZ-TPL-060), so no job takes the node identities' tokens. Where
the compute identity holds blob data roles (storage.blob.containers, hpclz.render.roles.jobs_use_compute_identity),
hpclz-job-storage (templates/cloud-init/job_storage.py) runs as root from cyclecloud-slurm's
`Prolog=/etc/slurm/prolog.d/*` and `Epilog=/etc/slurm/epilog.d/*` (Azure/cyclecloud-slurm@50e6739:
azure-slurm-install/templates/slurm.conf.template l.36-37, install.py l.540-541; /etc/slurm/prolog.d is
/sched/<cluster>/prolog.d, install.py l.506-507, 706-707) and writes the job's tokens under /run/hpclz/jobs/<job>/.
hpclz-gate-install puts the program, its configuration and the two scripts under /sched beside the health gate's
(hpclz.render.health_gate). The scripts run in reverse alphabetical order (install.py l.551-553): 40- runs after
hpclz's gate (50-), so a node the gate fails mints nothing, and before healthagent's 10-.

A TaskProlog, on each execute node's own disk so that it always exists, tells each task where the tokens are:
"Standard output from this program can be used to control the environment variables ... export NAME=value"
(slurm.conf(5), TaskProlog, Slurm 22.05). cyclecloud-slurm 4.0.9 sets no TaskProlog (slurm.conf.template @50e6739
names Prolog, Epilog and PrologSlurmctld only), so `slurm.additional.config` sets it without replacing one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hpclz.render.health_gate import HealthGate
from hpclz.render.roles import jobs_use_compute_identity
from hpclz.render.zone import Zone

SCRIPT = "40-hpclz-job-storage.sh"
JOBS = "/run/hpclz/jobs"
# Root's alone, in /run: "flushed on boot" (file-hierarchy(7)), so a key never outlives the VM that fetched it.
KEY_CACHE = "/run/hpclz/key/user-delegation-key.json"
TASK_PROLOG = "/opt/hpclz/bin/hpclz-job-storage-env"
# `hpclz-job-storage renew` on each execute node, started by a root systemd timer every RENEW_EVERY: the program
# re-signs a SAS that expires within the hour (job_storage.py, RENEW_MARGIN), so about six tries before it does.
RENEW = "/opt/hpclz/bin/hpclz-job-storage-renew"
RENEW_UNIT = "hpclz-job-storage-renew"
RENEW_EVERY = "10min"  # systemd.time(7) time span
VARIABLE = "HPCLZ_JOB_STORAGE"
# Container SAS permissions (learn.microsoft.com/rest/api/storageservices/create-service-sas, "Permissions for a
# directory, container, or blob"), in the order azure-storage-blob writes them (ContainerSasPermissions).
READ = "rl"  # read, list: what Storage Blob Data Reader allows a job on a datasets container
# Read, add, create, write, list: what a job saving checkpoints needs of Storage Blob Data Contributor. Delete only
# where the container keeps versions: deleting a blob then keeps its current version as a previous version ("When
# you delete a blob with versioning enabled, the current version becomes a previous version",
# learn.microsoft.com/azure/storage/blobs/versioning-overview), and "x" (delete a version) is never granted, so what
# a job deletes can be restored; soft delete keeps it too where it is on.
WRITE = "racwl"
# Appended to slurm.additional.config after the health gate's lines.
SLURM_CONF = (
    f"# hpclz: each task learns where its job's storage tokens are ({VARIABLE}); a TaskProlog of its own.\n"
    f"TaskProlog={TASK_PROLOG}\n"
)
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

    def slurm_conf(self) -> str:
        return SLURM_CONF


def job_storage(zone: Zone, gate: HealthGate, identity: str) -> JobStorage | None:
    """The job credential where the compute identity (`identity`, its resource ID relative to the subscription, as
    the node's scripts take it) holds blob data roles; None elsewhere, and then nothing of it is rendered."""
    blob = zone.blob_new
    if blob is None or not jobs_use_compute_identity(zone):
        return None
    containers = [
        {
            "name": c.name,
            "permissions": READ if c.purpose == "datasets" else WRITE_DELETE if c.versioning else WRITE,
        }
        for c in sorted(blob.containers, key=lambda c: c.name)
    ]
    settings: dict[str, object] = {
        "identity": identity,
        "account": zone.storage_account_name,
        "containers": containers,
        "jobs": JOBS,
        "key_cache": KEY_CACHE,
    }
    return JobStorage(gate=gate, settings=settings)
